"""Signed per-turn bindings: a compact JWS (EdDSA / Ed25519) issued by control.

Control signs conversation id, task id, runtime id and version, route id, requested effort,
ceiling, expiry and a nonce. The runtime carries the token to the gateway in a header on the
first model call of a turn and on every resumed turn; nothing about it is process-global, so
two conversations in one process never see each other's binding. Keys rotate by key id: the
verifier holds every published public key, the signer one active private key.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from reasonwire.errors import ConfigError, PolicyRefusal
from reasonwire.govern.levels import LEVELS, Level, Requested

HEADER = "x-reasonwire-binding"
ALGORITHM = "EdDSA"
_CLAIMS = ("conv", "task", "rt", "rtv", "route", "req", "ceil", "exp", "nonce")


@dataclass(frozen=True)
class Binding:
    conversation_id: str
    task_id: str
    runtime_id: str
    runtime_version: str
    route_id: str
    requested: Requested
    ceiling: Level
    expires_at: int
    nonce: str
    key_id: str = ""


@dataclass
class KeyRing:
    """Signing keys by key id. ``active`` signs; every key in ``public`` verifies."""

    private: dict[str, Ed25519PrivateKey] = field(default_factory=dict)
    public: dict[str, Ed25519PublicKey] = field(default_factory=dict)
    active: str = ""

    @classmethod
    def generate(cls, key_id: str = "k1") -> KeyRing:
        ring = cls()
        ring.rotate(key_id)
        return ring

    def rotate(self, key_id: str) -> None:
        """Add a new key and make it the signer; old public keys keep verifying."""
        if key_id in self.public:
            raise ValueError(f"key id {key_id!r} already used")
        key = Ed25519PrivateKey.generate()
        self.private[key_id] = key
        self.public[key_id] = key.public_key()
        self.active = key_id

    @classmethod
    def load_dir(cls, path: Path) -> KeyRing:
        """Keys from PEM files: ``<kid>.pub.pem`` verify, ``<kid>.key.pem`` also sign (the
        newest private key is active). A verifier (the gateway) needs public files only."""
        ring = cls()
        files = sorted(path.glob("*.pem"), key=lambda f: f.stat().st_mtime)
        for f in files:
            kid, _, kind = f.name.removesuffix(".pem").rpartition(".")
            data = f.read_bytes()
            if kind == "pub":
                pub = serialization.load_pem_public_key(data)
                if isinstance(pub, Ed25519PublicKey):
                    ring.public[kid] = pub
            elif kind == "key":
                priv = serialization.load_pem_private_key(data, password=None)
                if isinstance(priv, Ed25519PrivateKey):
                    ring.private[kid] = priv
                    ring.public[kid] = priv.public_key()
                    ring.active = kid
        if not ring.public:
            raise ConfigError(f"no Ed25519 keys (*.pub.pem / *.key.pem) in {path}")
        return ring

    def save_dir(self, path: Path) -> None:
        """Write every key as PEM (private keys with mode 0600)."""
        path.mkdir(parents=True, exist_ok=True)
        for kid, pub in self.public.items():
            (path / f"{kid}.pub.pem").write_bytes(
                pub.public_bytes(
                    serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
                )
            )
        for kid, priv in self.private.items():
            f = path / f"{kid}.key.pem"
            f.touch(mode=0o600)
            f.write_bytes(
                priv.private_bytes(
                    serialization.Encoding.PEM,
                    serialization.PrivateFormat.PKCS8,
                    serialization.NoEncryption(),
                )
            )

    def retire(self, key_id: str) -> None:
        """Stop accepting tokens signed with ``key_id``."""
        self.public.pop(key_id, None)
        self.private.pop(key_id, None)


def issue(
    ring: KeyRing,
    *,
    conversation_id: str,
    task_id: str,
    runtime_id: str,
    runtime_version: str,
    route_id: str,
    requested: Requested,
    ceiling: Level,
    ttl_seconds: int = 900,
    now: float | None = None,
) -> str:
    """Sign a binding and return the compact JWS."""
    issued = int(now if now is not None else time.time())
    claims = {
        "conv": conversation_id,
        "task": task_id,
        "rt": runtime_id,
        "rtv": runtime_version,
        "route": route_id,
        "req": requested,
        "ceil": ceiling,
        "iat": issued,
        "exp": issued + ttl_seconds,
        "nonce": secrets.token_urlsafe(16),
    }
    return jwt.encode(
        claims, ring.private[ring.active], algorithm=ALGORITHM, headers={"kid": ring.active}
    )


def verify(ring: KeyRing, token: str, *, now: float | None = None) -> Binding:
    """Verify signature, algorithm, key id and expiry; refuse anything else with a reason."""
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        raise PolicyRefusal("binding-malformed", "not a compact JWS") from None
    if header.get("alg") != ALGORITHM:
        raise PolicyRefusal("binding-bad-alg", f"algorithm {header.get('alg')!r} not accepted")
    kid = header.get("kid")
    key = ring.public.get(kid) if isinstance(kid, str) else None
    if key is None:
        raise PolicyRefusal("binding-unknown-key", f"key id {kid!r} is not trusted")
    try:
        claims = _decode_at(token, key, time.time() if now is None else now)
    except jwt.ExpiredSignatureError:
        raise PolicyRefusal("binding-expired", "the binding has expired") from None
    except jwt.InvalidSignatureError:
        raise PolicyRefusal("binding-bad-signature", "signature does not verify") from None
    except jwt.PyJWTError as exc:
        raise PolicyRefusal("binding-invalid", type(exc).__name__) from None
    if claims["req"] not in ("auto", *LEVELS) or claims["ceil"] not in LEVELS:
        raise PolicyRefusal("binding-invalid", "unknown effort level in claims")
    return Binding(
        conversation_id=str(claims["conv"]),
        task_id=str(claims["task"]),
        runtime_id=str(claims["rt"]),
        runtime_version=str(claims["rtv"]),
        route_id=str(claims["route"]),
        requested=claims["req"],
        ceiling=claims["ceil"],
        expires_at=int(claims["exp"]),
        nonce=str(claims["nonce"]),
        key_id=str(kid),
    )


def _decode_at(token: str, key: Ed25519PublicKey, now: float) -> Mapping[str, Any]:
    """Decode and check expiry against ``now`` (an explicit clock for tests and replays)."""
    claims: Mapping[str, Any] = jwt.decode(
        token, key, algorithms=[ALGORITHM], options={"require": list(_CLAIMS), "verify_exp": False}
    )
    if int(claims["exp"]) <= now:
        raise jwt.ExpiredSignatureError("expired")
    return claims
