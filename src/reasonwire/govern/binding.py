"""Signed per-turn bindings: a compact JWS (EdDSA / Ed25519) issued by control.

Control signs conversation id, task id, runtime id and version, route id, requested effort,
ceiling, expiry and a nonce. The runtime carries the token to the gateway in a header on the
first model call of a turn and on every resumed turn; nothing about it is process-global, so
two conversations in one process never see each other's binding. Keys rotate by key id: the
verifier holds every published public key, the signer one active private key. A verifier
loaded from a keys directory follows it: deleting ``<kid>.pub.pem`` or listing the key id in
``revoked.txt`` there takes effect on the next verification, without a restart.
"""

from __future__ import annotations

import os
import secrets
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict, Unpack

import jwt
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from reasonwire.errors import ConfigError, PolicyRefusal
from reasonwire.govern.levels import LEVELS, Level, Requested
from reasonwire.wire.model import JSON

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


REVOCATION_FILE = "revoked.txt"
"""In a keys directory: key ids no longer trusted, one a line (``#`` starts a comment). A file
named ``revoked`` (no suffix) is read the same way, so a misnamed list still revokes."""
_REVOCATION_FILES = (REVOCATION_FILE, "revoked")
_KEY_SUFFIXES = (".pub.pem", ".key.pem")
# A file stamp this close to the time it was read may change again within the filesystem's
# timestamp granularity without the stamp changing: until it is older, contents are compared.
_RACY_NS = 2_000_000_000


class KeyRing:
    """Signing keys by key id. ``active`` signs; every key in ``public`` verifies, except a
    key id in ``revoked`` (refused as revoked, not as unknown).

    A ring from :meth:`load_dir` follows its directory: reading ``public`` first checks, by a
    few ``stat`` calls, whether the directory, a key file or the revocation list changed, and
    re-reads it if so; a deleted public key or a newly revoked key id stops verifying on the
    next request, without a restart. :meth:`reload_soon` (the gateway's ``SIGHUP``) forces a
    re-read on the next use.
    """

    def __init__(
        self,
        private: Mapping[str, Ed25519PrivateKey] | None = None,
        public: Mapping[str, Ed25519PublicKey] | None = None,
        active: str = "",
    ) -> None:
        self.private: dict[str, Ed25519PrivateKey] = dict(private or {})
        self._public: dict[str, Ed25519PublicKey] = dict(public or {})
        self.active = active
        self._revoked_here: set[str] = set()  # by revoke(): kept across re-reads
        self._retired: set[str] = set()  # by retire(): kept across re-reads
        self._dir: _KeyDir | None = None

    @property
    def public(self) -> dict[str, Ed25519PublicKey]:
        if self._dir is not None:
            self._dir.refresh(self)
        return self._public

    @public.setter
    def public(self, keys: dict[str, Ed25519PublicKey]) -> None:
        self._public = keys

    @property
    def revoked(self) -> frozenset[str]:
        """Key ids refused as revoked (by :meth:`revoke` or the directory's revocation list)."""
        listed = self._dir.revoked if self._dir is not None else frozenset()
        return listed | self._revoked_here

    @classmethod
    def generate(cls, key_id: str = "k1") -> KeyRing:
        ring = cls()
        ring.rotate(key_id)
        return ring

    def rotate(self, key_id: str) -> None:
        """Add a new key and make it the signer; old public keys keep verifying."""
        if key_id in self._public:
            raise ValueError(f"key id {key_id!r} already used")
        key = Ed25519PrivateKey.generate()
        self.private[key_id] = key
        self._public[key_id] = key.public_key()
        self.active = key_id

    @classmethod
    def load_dir(cls, path: Path, *, recheck_seconds: float = 0.0) -> KeyRing:
        """Keys from PEM files: ``<kid>.pub.pem`` verify, ``<kid>.key.pem`` also sign (the
        newest private key is active). A verifier (the gateway) needs public files only. Key
        ids listed in :data:`REVOCATION_FILE` are not loaded and are refused as revoked.

        The ring follows the directory (see the class); ``recheck_seconds`` spaces the
        change checks (0: on every use). Raises :class:`ConfigError` naming the file when a
        key file or the revocation list cannot be read, or when no key is left.
        """
        ring = cls()
        keys = _KeyDir(Path(path), recheck_seconds)
        keys.load(ring, strict=True)
        ring._dir = keys
        return ring

    def reload_soon(self) -> None:
        """Re-read the keys directory on the next use (safe to call from a signal handler)."""
        if self._dir is not None:
            self._dir.dirty = True

    def untrusted_reason(self, key_id: str) -> str:
        """Why ``key_id`` does not verify, for a refusal message ("" when nothing is known)."""
        return self._dir.reason(key_id) if self._dir is not None else ""

    def save_dir(self, path: Path) -> None:
        """Write every key as PEM (private keys with mode 0600)."""
        path.mkdir(parents=True, exist_ok=True)
        for kid, pub in self._public.items():
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
        """Stop accepting tokens signed with ``key_id`` (refused as an unknown key)."""
        self._retired.add(key_id)
        self._drop(key_id)

    def revoke(self, key_id: str) -> None:
        """Stop accepting tokens signed with ``key_id`` (refused as a revoked key)."""
        self._revoked_here.add(key_id)
        self._drop(key_id)

    def _drop(self, key_id: str) -> None:
        self._public = {k: v for k, v in self._public.items() if k != key_id}
        self.private.pop(key_id, None)
        if self.active == key_id:
            self.active = ""

    def _install(
        self,
        public: dict[str, Ed25519PublicKey],
        private: dict[str, Ed25519PrivateKey],
        active: str,
    ) -> None:
        drop = self._retired | self._revoked_here
        self._public = {k: v for k, v in public.items() if k not in drop}
        self.private = {k: v for k, v in private.items() if k not in drop}
        self.active = active if active in self.private else ""


# (inode, size, mtime_ns, ctime_ns), or the name of the error stat raised
_Stat = tuple[int, int, int, int] | str


def _stat(path: str) -> _Stat:
    try:
        st = os.stat(path)
    except OSError as exc:
        return type(exc).__name__
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class _KeyDir:
    """The directory behind a :class:`KeyRing`: when to re-read it, and reading it.

    The cheap check stats the directory (its mtime changes when a file is added, removed or
    renamed) and every file read last time (a few microseconds). Contents are compared
    instead while any stamp is younger than the filesystem's timestamp granularity could
    hide (see ``_RACY_NS``), or after :meth:`KeyRing.reload_soon`.
    """

    def __init__(self, path: Path, recheck_seconds: float) -> None:
        self.path = path
        self.recheck = recheck_seconds
        self.dirty = False
        self.revoked: frozenset[str] = frozenset()
        self._lock = threading.Lock()
        self._checked = float("-inf")
        self._names: tuple[str, ...] = ()  # key files read last time
        self._watched: tuple[str, ...] = (str(path),)  # the directory and the files read
        self._stamp: tuple[_Stat, ...] = ()
        self._contents: dict[str, bytes | str] | None = None
        self._racy = True
        self._seen: set[str] = set()  # every key id trusted at some point
        self._broken: dict[str, str] = {}  # key id -> why its file was not loaded
        self._problem = ""  # why nothing is trusted (directory or list unreadable)

    def _stamp_now(self) -> tuple[_Stat, ...]:
        return tuple(map(_stat, self._watched))  # on every call: no generator frame

    def refresh(self, ring: KeyRing) -> None:
        now = time.monotonic()
        if not self.dirty and now - self._checked < self.recheck:
            return
        with self._lock:
            self._checked = now
            if self.dirty or self._racy or self._stamp_now() != self._stamp:
                self.dirty = False
                self.load(ring, strict=False)

    def reason(self, key_id: str) -> str:
        if self._problem:
            return f": {self._problem}"
        if key_id in self._broken:
            return f": {self._broken[key_id]}"
        if key_id in self._seen:
            return f": its public key was removed from {self.path}"
        return ""

    def _read(self) -> dict[str, bytes | str] | str:
        """Every key file and revocation list, name -> bytes (or why it cannot be read);
        or why the directory cannot be listed."""
        try:
            with os.scandir(self.path) as it:
                names = sorted(
                    e.name
                    for e in it
                    if e.name in _REVOCATION_FILES or e.name.endswith(_KEY_SUFFIXES)
                )
        except OSError as exc:
            return f"the keys directory {self.path} cannot be read ({type(exc).__name__})"
        out: dict[str, bytes | str] = {}
        for name in names:
            try:
                out[name] = (self.path / name).read_bytes()
            except OSError as exc:
                out[name] = f"cannot be read ({type(exc).__name__})"
        return out

    def load(self, ring: KeyRing, *, strict: bool) -> None:
        """Read the directory into ``ring``. ``strict`` (the first load) raises
        :class:`ConfigError` naming the file for anything unreadable; later loads fail closed
        instead: an unreadable key file is not trusted, an unreadable list or directory
        trusts nothing."""
        wall = time.time_ns()
        contents = self._read()
        if isinstance(contents, str):
            self._fail(ring, contents, strict)
            return
        self._names = tuple(n for n in contents if n not in _REVOCATION_FILES)
        self._watched = (str(self.path), *(str(self.path / n) for n in contents))
        # Stamped after reading: a change made while reading differs from it next time, and
        # one made after it is either stamped later or, within the racy window, compared.
        self._stamp = self._stamp_now()
        self._racy = any(
            not isinstance(t, str) and max(t[2], t[3]) >= wall - _RACY_NS for t in self._stamp
        )
        if contents == self._contents and not self._problem:
            return
        revoked: set[str] = set()
        for name in _REVOCATION_FILES:
            listed = contents.get(name)
            if isinstance(listed, str):
                self._fail(ring, f"the revocation list {self.path / name} {listed}", strict)
                return
            if listed is not None:
                for line in listed.decode("utf-8", "replace").splitlines():
                    kid = line.partition("#")[0].strip()
                    if kid:
                        revoked.add(kid)
        public: dict[str, Ed25519PublicKey] = {}
        private: dict[str, Ed25519PrivateKey] = {}
        broken: dict[str, str] = {}
        newest: tuple[int, str] | None = None
        for name in self._names:
            kid, kind = name[:-8], name[-7:-4]  # "<kid>.pub.pem" / "<kid>.key.pem"
            if not kid or kid in revoked:
                continue
            why = _parse_key(contents[name], kind, kid, public, private)
            if why:
                msg = f"key file {self.path / name} {why}"
                if strict:
                    raise ConfigError(msg)
                broken[kid] = msg
            elif kind == "key":
                t = _stat(str(self.path / name))
                when = (t[2] if not isinstance(t, str) else 0, kid)
                newest = when if newest is None or when > newest else newest
        for kid in broken:  # a key with one unreadable file is not trusted at all
            public.pop(kid, None)
            private.pop(kid, None)
        if strict and not public:
            raise ConfigError(f"no Ed25519 keys (*.pub.pem / *.key.pem) in {self.path}")
        self._contents = contents
        self.revoked = frozenset(revoked)
        self._broken = broken
        self._problem = ""
        self._seen |= set(public)
        ring._install(public, private, newest[1] if newest else "")

    def _fail(self, ring: KeyRing, problem: str, strict: bool) -> None:
        if strict:
            raise ConfigError(problem)
        self._problem = problem
        self._contents = None
        self._racy = True  # keep looking: the next use re-reads
        ring._install({}, {}, "")


def _parse_key(
    data: bytes | str,
    kind: str,
    kid: str,
    public: dict[str, Ed25519PublicKey],
    private: dict[str, Ed25519PrivateKey],
) -> str:
    """Add the key in ``data`` to ``public`` (and ``private``); return why not, or ""."""
    if isinstance(data, str):
        return data  # why the file could not be read
    try:
        if kind == "pub":
            pub = serialization.load_pem_public_key(data)
            if not isinstance(pub, Ed25519PublicKey):
                return "is not an Ed25519 public key"
            public.setdefault(kid, pub)
        else:
            priv = serialization.load_pem_private_key(data, password=None)
            if not isinstance(priv, Ed25519PrivateKey):
                return "is not an Ed25519 private key"
            private[kid] = priv
            public[kid] = priv.public_key()
    except (ValueError, TypeError, UnsupportedAlgorithm):
        return "is not a readable PEM key"
    return ""


class Subject(TypedDict):
    """What a binding is about, as the keywords of :func:`issue` and of
    :func:`reasonwire.govern.control.project` / :func:`~reasonwire.govern.control.minter`
    (one declaration for the three): the conversation and task, the runtime asking, the route
    and the effort it asks for."""

    conversation_id: str
    task_id: str
    runtime_id: str
    runtime_version: str
    route_id: str
    requested: Requested


def issue(
    ring: KeyRing,
    *,
    ceiling: Level,
    ttl_seconds: int = 900,
    now: float | None = None,
    **subject: Unpack[Subject],
) -> str:
    """Sign a binding for ``subject`` and return the compact JWS."""
    issued = int(now if now is not None else time.time())
    claims = {
        "conv": subject["conversation_id"],
        "task": subject["task_id"],
        "rt": subject["runtime_id"],
        "rtv": subject["runtime_version"],
        "route": subject["route_id"],
        "req": subject["requested"],
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
    public = ring.public  # a ring that follows a keys directory checks it for changes here
    if isinstance(kid, str) and kid in ring.revoked:
        raise PolicyRefusal("binding-revoked-key", f"key id {kid!r} is revoked")
    key = public.get(kid) if isinstance(kid, str) else None
    if key is None:
        why = ring.untrusted_reason(kid) if isinstance(kid, str) else ""
        raise PolicyRefusal("binding-unknown-key", f"key id {kid!r} is not trusted{why}")
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


def _decode_at(token: str, key: Ed25519PublicKey, now: float) -> Mapping[str, JSON]:
    """Decode and check expiry against ``now`` (an explicit clock for tests and replays)."""
    claims: Mapping[str, JSON] = jwt.decode(
        token, key, algorithms=[ALGORITHM], options={"require": list(_CLAIMS), "verify_exp": False}
    )
    exp = claims["exp"]
    # A signed claim of the wrong type (a string, a bool, null) is the signer's fault, not a
    # server error: refuse it by name, as RFC 7519 4.1.4 requires a NumericDate.
    if isinstance(exp, bool) or not isinstance(exp, (int, float)):
        raise PolicyRefusal("binding-invalid", f"exp is {type(exp).__name__}, not a NumericDate")
    if exp <= now:
        raise jwt.ExpiredSignatureError("expired")
    return claims
