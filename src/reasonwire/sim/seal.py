"""Opaque carriers the simulator issues and verifies, keyed per server (by seed).

- Responses ``encrypted_content``, OpenRouter ``reasoning.encrypted`` data, Anthropic
  ``redacted_thinking`` data and Gemini ``thoughtSignature`` are AES-GCM sealed reasoning: the
  server can unseal a replayed carrier and put its text in the prompt, as the real providers do
  (WIRE.md: opaque carriers "must return byte-for-byte"). Nonces are derived from the plaintext
  (HMAC) so the same answer is sealed to the same string: generation stays deterministic.
- Anthropic thinking ``signature`` is an HMAC over (model, thinking text): any change to the
  block or a replay to another model fails verification ("Invalid signature in thinking block").
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM


class Sealer:
    """Seals, unseals, signs and verifies with keys derived from ``seed``."""

    def __init__(self, seed: int | str = 0) -> None:
        root = hashlib.sha256(f"reasonwire-sim:{seed}".encode()).digest()
        self._aead = AESGCM(hashlib.sha256(root + b"aead").digest())
        self._nonce_key = hashlib.sha256(root + b"nonce").digest()
        self._mac_key = hashlib.sha256(root + b"mac").digest()

    def seal(self, plaintext: str, aad: str = "") -> str:
        """Standard base64 of nonce + ciphertext; ``aad`` binds it to a context (model, kind)."""
        data = plaintext.encode()
        nonce = hmac.new(self._nonce_key, aad.encode() + b"\0" + data, "sha256").digest()[:12]
        return base64.b64encode(nonce + self._aead.encrypt(nonce, data, aad.encode())).decode()

    def unseal(self, token: str, aad: str = "") -> str | None:
        """The plaintext, or None when ``token`` was altered, truncated or sealed elsewhere.

        Accepts standard and urlsafe base64 (one SDK re-encodes signatures urlsafe)."""
        raw = b64decode_any(token)
        if raw is None or len(raw) < 13:
            return None
        try:
            return self._aead.decrypt(raw[:12], raw[12:], aad.encode()).decode()
        except (InvalidTag, UnicodeDecodeError):
            return None

    def sign(self, *parts: str) -> str:
        mac = hmac.new(self._mac_key, "\0".join(parts).encode(), "sha256").digest()
        return base64.b64encode(b"\x12\x20" + mac).decode()

    def verify(self, signature: object, *parts: str) -> bool:
        return isinstance(signature, str) and hmac.compare_digest(signature, self.sign(*parts))


def b64decode_any(token: object) -> bytes | None:
    """Decode standard or urlsafe base64 (padding optional); None when it is not base64."""
    if not isinstance(token, str):
        return None
    s = token.strip().replace("-", "+").replace("_", "/")
    s += "=" * (-len(s) % 4)
    try:
        return base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        return None
