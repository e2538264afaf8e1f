"""Names people choose (projects, datasets, campaigns, systems, users): one spelling each.

A probe created "Démo" twice (NFC and NFD), "Demo" with a zero-width space, "Dеmo" with a
Cyrillic е and a fullwidth "Ｄｅｍｏ", all accepted as names distinct from "Demo" and looking
the same on every page. So a name is:

- NFC-normalised (the composed spelling; NFD input becomes the same string);
- refused with invisible characters (format characters such as zero-width spaces and joiners,
  bidirectional controls, soft hyphens; control characters; blank fillers) and with any space
  other than the plain one;
- refused when its letters mix scripts (Latin with Cyrillic or Greek ...; Latin with the CJK
  scripts is allowed, as Japanese and Chinese names do), after Unicode's "highly restrictive"
  level (UTS #39, section 5.2), with scripts read from the character names;
- compared with others after NFKC folding and case folding (`fold`, `fold_sql`), so the
  fullwidth "Ｄｅｍｏ" and "DEMO" are taken when "Demo" exists.
"""

from __future__ import annotations

import unicodedata

from django.db.models import F, Func, Value
from django.db.models.functions import Lower

# Letters that render as nothing although Unicode files them as letters or symbols.
_BLANK_LETTERS = {"\u115f", "\u1160", "\u3164", "\uffa0", "\u2800", "\u180e"}
# Scripts that may appear together with Latin in one name (UTS #39 "highly restrictive").
_CJK = {"CJK", "HIRAGANA", "KATAKANA", "HANGUL", "BOPOMOFO", "IDEOGRAPHIC"}


def _script(ch: str) -> str:
    name = unicodedata.name(ch, "")
    first = name.split(" ", 1)[0] if name else "UNKNOWN"
    if first in _CJK or name.startswith(("HALFWIDTH KATAKANA", "HALFWIDTH HANGUL")):
        return "CJK"
    if first in ("FULLWIDTH", "MODIFIER", "SMALL", "MATHEMATICAL", "SCRIPT", "BLACK-LETTER", "DOUBLE-STRUCK"):
        # Compatibility forms: judged by what they fold to.
        folded = unicodedata.normalize("NFKC", ch)
        return _script(folded[0]) if folded and folded != ch else first
    return first


def name_problem(value: str) -> str | None:
    """Why `value` (already NFC and stripped) is not an acceptable name, or None."""
    for ch in value:
        category = unicodedata.category(ch)
        if (
            ch in _BLANK_LETTERS
            or category in ("Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp")
            or (category == "Zs" and ch != " ")
        ):
            return (
                f"contains an invisible or special character (U+{ord(ch):04X} "
                f"{unicodedata.name(ch, 'unnamed')}); type the name with visible characters only"
            )
    scripts = {_script(ch) for ch in value if unicodedata.category(ch).startswith("L")}
    if len(scripts - {"CJK", "LATIN"}) > 1 or (scripts - {"CJK", "LATIN"} and "LATIN" in scripts):
        shown = ", ".join(sorted(s.title() for s in scripts))
        return f"mixes letters of several scripts ({shown}), which can look alike; use one script"
    return None


def name_clean(value: object, what: str = "name") -> str:
    """The NFC, stripped form of a name; ValueError with a one-line message if it is not acceptable."""
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a string")
    text = unicodedata.normalize("NFC", value).strip()
    problem = name_problem(text)
    if problem:
        raise ValueError(f"{what} {ascii(text[:60])} {problem}")
    return text


def fold(value: str) -> str:
    """The spelling names are compared in (in Python)."""
    return unicodedata.normalize("NFKC", value).casefold()


def fold_sql(expression) -> Func:
    """The same comparison key computed by PostgreSQL (normalize(..., NFKC), lower)."""
    if isinstance(expression, str):
        expression = Value(expression)
    return Lower(Func(expression, function="normalize", template="normalize(%(expressions)s, NFKC)"))


def taken(queryset, field: str, value: str) -> bool:
    """Whether a row of `queryset` has `field` equal to `value` once both are folded."""
    return queryset.alias(_name_key=fold_sql(F(field))).filter(_name_key=fold_sql(value)).exists()
