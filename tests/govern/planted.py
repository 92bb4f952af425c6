"""Credential-shaped values for tests, built at run time: no key-shaped literal is tracked
(``test_no_key_shaped_literal_is_tracked`` scans these files with the detector itself)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Planted:
    label: str
    kind: str  # the kind the detector names
    value: str  # the credential itself
    text: str  # how it is written in a document ("Bearer <value>", a PEM block)

    def fragments(self) -> list[str]:
        """The value and pieces of it: none may appear in any output."""
        v = self.value
        return [v, v[:16], v[-12:]] if len(v) > 24 else [v]


def _mix(n: int, alphabet: str = "aB3xQ9kZ7mW2") -> str:
    return "".join(alphabet[(i * 7 + i // 3) % len(alphabet)] for i in range(n))


def _p(label: str, kind: str, value: str, text: str | None = None) -> Planted:
    return Planted(label, kind, value, value if text is None else text)


def planted() -> list[Planted]:
    """One value per shape the detector knows."""
    pem_body = "MC4CAQAwBQYDK2VwBCIEI" + _mix(40, "PqRsTuVw0123")
    pem = "-----" + "BEGIN PRIVATE KEY-----\n" + pem_body + "\n-----" + "END PRIVATE KEY-----"
    jws = "ey" + "JhbGciOiJFZERTQSJ9." + "ey" + "JzdWIiOiJ4In0." + _mix(30)
    bearer = "tok" + _mix(24) + "/+x="
    return [
        _p("sk-proj", "sk- key", "sk" + "-proj-" + _mix(48)),
        _p("sk-ant", "sk- key", "sk" + "-ant-api03-" + _mix(60)),
        _p("sk-or-v1", "sk- key", "sk" + "-or-v1-" + "0a1b2c3d" * 8),
        _p("sk", "sk- key", "sk" + "-" + _mix(48)),
        _p("xai", "xai- key", "xai" + "-" + _mix(60)),
        _p("google", "Google API key", "AI" + "za" + "Sy" + _mix(33)),
        _p("ghp", "GitHub token", "gh" + "p_" + _mix(36)),
        _p("gho", "GitHub token", "gh" + "o_" + _mix(36)),
        _p("github_pat", "GitHub token", "github" + "_pat_" + _mix(22) + "_" + _mix(59)),
        _p("hf", "Hugging Face token", "hf" + "_" + _mix(34)),
        _p("akia", "AWS access key id", "AK" + "IA" + "QX7Z3ABCDEFG1234"),
        _p("asia", "AWS access key id", "AS" + "IA" + "QX7Z3ABCDEFG5678"),
        _p("jws", "JWS-shaped token", jws),
        _p("bearer", "bearer token", bearer, "Authorization: Bear" + "er " + bearer),
        _p("pem", "PEM private key", pem_body, pem),
    ]


def by_label(label: str) -> Planted:
    return next(p for p in planted() if p.label == label)
