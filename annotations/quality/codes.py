"""Completion codes for crowd platforms.

At the end of a batch the annotator gets a code to paste into the crowd
platform. Pass and fail codes are both HMAC-SHA256 digests keyed with the
server's secret, of the campaign, annotator, batch and verdict: to the
annotator they look alike (random letters), while the researcher, who holds
the key, recomputes both and tells which one a code is. A code cannot be
guessed or moved to another annotator or batch without the key.

Alphabet: Crockford's base 32 (no I, L, O, U), 10 characters (50 bits) shown
as two groups of five; verification ignores case, dashes and spaces and
reads I/L as 1 and O as 0.
"""

from __future__ import annotations

import hashlib
import hmac

ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
LENGTH = 10
PASS, FAIL = "pass", "fail"


def _digest(key: bytes | str, campaign: int, annotator: int, batch: int, verdict: str) -> str:
    key = key.encode() if isinstance(key, str) else key
    message = f"workbench-completion-code:{campaign}:{annotator}:{batch}:{verdict}".encode()
    number = int.from_bytes(hmac.new(key, message, hashlib.sha256).digest()[:8], "big") >> (64 - 5 * LENGTH)
    chars = []
    for _ in range(LENGTH):
        number, rest = divmod(number, 32)
        chars.append(ALPHABET[rest])
    code = "".join(reversed(chars))
    return f"{code[:5]}-{code[5:]}"


def completion_code(*, key: bytes | str, campaign: int, annotator: int, batch: int, passed: bool) -> str:
    """The code shown to the annotator at the end of `batch` (0-based)."""
    return _digest(key, campaign, annotator, batch, PASS if passed else FAIL)


def normalise(code: str) -> str:
    text = "".join(ch for ch in str(code).upper() if ch not in "- \t")
    text = text.translate(str.maketrans({"I": "1", "L": "1", "O": "0"}))
    return f"{text[:5]}-{text[5:]}" if len(text) == LENGTH else text


def code_verdict(*, key: bytes | str, code: str, campaign: int, annotator: int, batch: int) -> str | None:
    """ "pass" or "fail" when `code` was issued to this annotator for this batch, else None."""
    code = normalise(code)
    for verdict in (PASS, FAIL):
        if hmac.compare_digest(code, _digest(key, campaign, annotator, batch, verdict)):
            return verdict
    return None
