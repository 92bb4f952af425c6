"""Verified bindings per token, for the enforcement points that see the same binding on
every call of a turn (the gateway and the LiteLLM hook): an EdDSA check costs more than the
rest of a call's authorisation, and a client re-sends one token for the whole turn.

A hit is served only where :func:`~reasonwire.govern.binding.verify` would accept the token
too: the expiry is checked against the clock on every call (refused from the exact second
of ``exp``, cached or not), and the key the token was verified with must still be the ring's
key for its id (a revoked, retired, deleted or replaced key misses, and the uncached path
then refuses with its reason). Everything else about the call (its conversation, route,
policy) is checked by the caller on every call, hit or not.
"""

from __future__ import annotations

import threading
import time

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from reasonwire.govern.binding import Binding, KeyRing, verify

__all__ = ["VerifiedBindings"]


class VerifiedBindings:
    """:func:`verify` with a per-token cache of what verified (see the module); thread-safe.
    ``limit`` bounds the tokens kept (past it the cache starts again empty)."""

    def __init__(self, ring: KeyRing, limit: int = 50_000) -> None:
        self.ring = ring
        self.limit = limit
        self.hits = 0
        self._seen: dict[str, tuple[Binding, Ed25519PublicKey]] = {}
        self._lock = threading.Lock()

    def verify(self, token: str) -> Binding:
        """The token's binding, or :class:`~reasonwire.errors.PolicyRefusal` with the reason
        :func:`verify` gives."""
        hit = self._seen.get(token)
        if hit is not None:
            binding, key = hit
            if self.ring.public.get(binding.key_id) is key and binding.expires_at > time.time():
                with self._lock:
                    self.hits += 1
                return binding
        public = self.ring.public
        binding = verify(self.ring, token)  # raises with the reason (expired, bad key...)
        used = public.get(binding.key_id)
        if used is not None and self.ring.public is public:  # the ring was not re-read between
            with self._lock:
                if len(self._seen) >= self.limit:
                    self._seen.clear()
                self._seen[token] = (binding, used)
        return binding
