"""MQM's typology and weighted score, as WMT's MQM evaluations and mt-metrics-eval define them.

No Django here: the protocol class (annotations/protocols/mqm.py), the campaign service, the TSV
import and export all call these functions.

The score follows mt-metrics-eval's `converters/score_mqm.py`:

- weights are "severity[/category[/subcategory]]:weight" entries separated by white space,
  case-insensitive (`weights_parse`);
- an error's weight is that of the most specific entry matching [severity] + its category split
  on "/", dropping the last part until an entry matches; 0 when none does (`error_weight`). A "!"
  is no operator there: it is part of WMT's category name "Non-translation!", so
  "Major/Non-translation!:25" matches that category only;
- a rater's score of a segment is the sum of its errors' weights (a "No-error" row counts 0);
  the segment's score is minus the mean of its raters' scores: higher (nearer 0) is better.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable

DEFAULT_WEIGHTS = "Major:5 Minor:1 Neutral:0 Major/Non-translation!:25 Minor/Fluency/Punctuation:0.1"
# Every severity an MQM span may have; a campaign offers some of them (`Campaign.severities`).
SEVERITIES = ("neutral", "minor", "major", "critical")
# Why not critical by default: the default weights (score_mqm.py's) give it no entry, so it would
# weigh 0; a campaign that offers it must weigh it (`settings_check`).
DEFAULT_SEVERITIES = ("neutral", "minor", "major")
NO_ERROR = "no-error"  # WMT's category and severity of a row that marks a segment without errors
MAX_NODES = 500
MAX_CHILDREN = 9  # subcategories are chosen with the keys 1-9
NAME_MAX_CHARS = 100
DESCRIPTION_MAX_CHARS = 500
RESERVED_KEYS = frozenset("m")  # M adds a missing-content marker on the page

# The MQM core typology of WMT's MQM evaluations (Freitag et al. 2021, "Experts, errors, and
# context", table 10), with every category name google/wmt-mqm-human-evaluation's files use, so
# that any of them imports with the default: newstest2020/2021 and TED (2020-21: "Terminology/
# Inconsistent use of terminology", "Fluency/Display", "Source error"), and the Anthea template of
# generalMT2022-24 (google-research anthea/template-mqm.js: "Source language fragment",
# "Creative Reinterpretation", "Gender Mismatch", "Unnatural or awkward", "Bad sentence structure",
# "Inconsistent", "Source issue"). Names that mean the same thing in different years are kept
# apart, as the files spell them: the error breakdown must show a file's own categories.
DEFAULT_TYPOLOGY = [
    {
        "name": "Accuracy",
        "key": "a",
        "description": "The target does not represent the source accurately.",
        "children": [
            {"name": "Addition", "description": "Includes information not present in the source."},
            {"name": "Omission", "description": "Is missing content from the source."},
            {"name": "Mistranslation", "description": "Does not accurately represent the source."},
            {"name": "Untranslated text", "description": "Source text left untranslated."},
            {"name": "Source language fragment", "description": "Source text left untranslated (WMT 2022- name)."},
            {
                "name": "Creative Reinterpretation",
                "description": "Reinterprets the source but keeps its intent in context.",
            },
            {"name": "Gender Mismatch", "description": "Wrong gender (pronouns, noun or adjective endings)."},
        ],
    },
    {
        "name": "Fluency",
        "key": "f",
        "description": "Issues of the target text as text, whatever the source.",
        "children": [
            {"name": "Punctuation", "description": "Incorrect punctuation (for locale or style)."},
            {"name": "Spelling", "description": "Incorrect spelling or capitalisation."},
            {"name": "Grammar", "description": "Problems with grammar, other than orthography."},
            {"name": "Register", "description": "Wrong grammatical register (e.g. informal pronouns)."},
            {"name": "Inconsistency", "description": "Internal inconsistency (not terminology)."},
            {"name": "Character encoding", "description": "Characters garbled by a wrong encoding."},
            {"name": "Display", "description": "Characters garbled or displayed wrongly (WMT 2020-21 name)."},
        ],
    },
    {
        "name": "Terminology",
        "key": "t",
        "description": "A term is translated wrongly.",
        "children": [
            {"name": "Inappropriate for context", "description": "Not the term of this domain or context."},
            {"name": "Inconsistent use of terminology", "description": "A term translated inconsistently."},
            {"name": "Inconsistent", "description": "A term translated inconsistently (WMT 2022- name)."},
        ],
    },
    {
        "name": "Style",
        "key": "s",
        "description": "Poor style.",
        "children": [
            {"name": "Awkward", "description": "Grammatical but awkward or unnatural."},
            {"name": "Unnatural or awkward", "description": "Literal, awkward or unidiomatic (WMT 2022- name)."},
            {
                "name": "Bad sentence structure",
                "description": "Needless repetition, or a sentence made needlessly long.",
            },
        ],
    },
    {
        "name": "Locale convention",
        "key": "l",
        "description": "Wrong format for the target locale.",
        "children": [
            {"name": "Address format"},
            {"name": "Currency format"},
            {"name": "Date format"},
            {"name": "Name format"},
            {"name": "Telephone format"},
            {"name": "Time format"},
        ],
    },
    {
        "name": "Non-translation!",
        "key": "n",
        "description": "Impossible to reliably characterise the errors (mark the whole output).",
    },
    {"name": "Source error", "key": "e", "description": "An error in the source, not the translation."},
    {"name": "Source issue", "key": "i", "description": "An issue in the source (WMT 2022- name)."},
    {"name": "Other", "key": "o", "description": "Any other issue."},
]

# WMT's "no subcategory" mark: newstest2020's source-errors files say "Source error/-". score_mqm.py
# weighs "X/-" as "X" (no weight entry names "-"), so dropping it keeps every score.
NO_SUBCATEGORY = "-"


def category_key(category: str) -> str:
    """A category as typed or read from a file -> the lower-cased path the typology is looked up by:
    parts stripped, a trailing "-" part (WMT's "no subcategory") dropped."""
    parts = [part.strip() for part in category.split("/")]
    while len(parts) > 1 and parts[-1] == NO_SUBCATEGORY:
        parts.pop()
    return "/".join(parts).lower()


class TypologyError(ValueError):
    """A typology or weights text that cannot be used, with where and why."""


# ---- weights ------------------------------------------------------------------------------------

_ENTRY = re.compile(r"^(?P<key>[^:]+):(?P<weight>[^:]+)$")


def weights_parse(text: str | None) -> dict[str, float]:
    """ "Major:5 Minor/Fluency/Punctuation:0.1" -> {"major": 5.0, "minor/fluency/punctuation": 0.1}.

    Stricter than score_mqm.py on what it would crash on or silently ignore: each entry must
    start with a severity (or "No-error"), hold one ":" and a finite weight, and appear once."""
    text = DEFAULT_WEIGHTS if text is None or not text.strip() else text
    weights: dict[str, float] = {}
    for entry in text.split():
        match = _ENTRY.match(entry)
        if not match:
            raise TypologyError(f"{entry!r} is not SEVERITY[/CATEGORY[/SUBCATEGORY]]:WEIGHT, e.g. Major:5")
        key, raw = match.group("key").lower(), match.group("weight")
        try:
            weight = float(raw)
        except ValueError:
            raise TypologyError(f"{entry!r}: the weight {raw!r} is not a number") from None
        if not math.isfinite(weight):
            raise TypologyError(f"{entry!r}: the weight must be a finite number")
        severity = key.split("/")[0]
        if severity not in SEVERITIES and severity != NO_ERROR:
            raise TypologyError(f"{entry!r}: {severity!r} is not a severity ({', '.join(SEVERITIES)})")
        if key in weights:
            raise TypologyError(f"{entry!r}: {key!r} is weighted twice")
        weights[key] = weight
    if not weights:
        raise TypologyError("no weights given")
    return weights


def weights_text(text: str | None) -> str:
    """The weights as stored and shown: the entries as given, one space apart (defaults when empty)."""
    weights_parse(text)
    return " ".join((text or DEFAULT_WEIGHTS).split())


def error_weight(weights: dict[str, float], severity: str, category: str) -> float:
    """The most specific weight matching one error (score_mqm.py's `Score`)."""
    items = [part.lower() for part in [severity, *(category.split("/") if category else [])]]
    while items:
        found = weights.get("/".join(items))
        if found is not None:
            return found
        items.pop()
    return 0.0


def rater_penalty(weights: dict[str, float], errors: Iterable[tuple[str, str]]) -> float:
    """One rater's sum of weights over their (severity, category) errors of a segment."""
    return sum(error_weight(weights, severity, category) for severity, category in errors)


def judgement_score(weights: dict[str, float], errors: Iterable[tuple[str, str]]) -> float:
    """One rater's MQM score of a segment: minus their penalty (0.0, not -0.0, without errors).
    The mean of these over the segment's raters is score_mqm.py's segment score."""
    penalty = rater_penalty(weights, errors)
    return -penalty if penalty else 0.0


def needs_weight(weights: dict[str, float], severity: str) -> bool:
    """Whether no weight entry starts with this severity (it would weigh 0 in every category)."""
    return not any(key == severity or key.startswith(severity + "/") for key in weights)


# ---- typology ------------------------------------------------------------------------------------


def typology_parse(text: str) -> list[dict]:
    """A typology file's text (JSON: a list of categories) -> the checked tree; TypologyError says
    where: "line L column C" for JSON syntax, the path (e.g. "[2].children[0].name") otherwise."""
    try:
        tree = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TypologyError(f"line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    return typology_check(tree)


def typology_check(tree) -> list[dict]:
    """The typology cleaned (names stripped, a shortcut letter for every top-level category), or
    TypologyError naming the path of the first problem."""
    if tree is None or tree == []:
        return [dict(node) for node in DEFAULT_TYPOLOGY]
    if not isinstance(tree, list):
        raise TypologyError(
            "the typology must be a JSON list of categories, e.g. "
            '[{"name": "Accuracy", "children": [{"name": "Omission"}]}]'
        )
    count = [0]
    cleaned = _nodes(tree, "", count, depth=0)
    used: set[str] = set()
    for index, node in enumerate(cleaned):
        if node.get("key"):
            if node["key"] in used:
                raise TypologyError(f"[{index}].key: {node['key']!r} is the key of another category")
            used.add(node["key"])
    for node in cleaned:
        if not node.get("key"):
            letters = [
                c
                for c in node["name"].lower() + "abcdefghijklnopqrstuvwxyz"
                if "a" <= c <= "z" and c not in used and c not in RESERVED_KEYS
            ]
            if not letters:
                raise TypologyError("more top-level categories than shortcut letters")
            node["key"] = letters[0]
            used.add(letters[0])
    return cleaned


def _nodes(nodes, path: str, count: list, *, depth: int) -> list[dict]:
    if not isinstance(nodes, list) or not nodes:
        raise TypologyError(f"{path or 'the typology'}: must be a non-empty list of categories")
    if depth > 0 and len(nodes) > MAX_CHILDREN:
        raise TypologyError(f"{path}: at most {MAX_CHILDREN} subcategories (chosen with the keys 1-9)")
    if depth > 2:
        raise TypologyError(f"{path}: at most three levels of categories")
    out, seen = [], set()
    for index, node in enumerate(nodes):
        here = f"{path}[{index}]"
        count[0] += 1
        if count[0] > MAX_NODES:
            raise TypologyError(f"{here}: more than {MAX_NODES} categories")
        if not isinstance(node, dict):
            raise TypologyError(f'{here}: a category must be an object with a "name"')
        unknown = set(node) - {"name", "key", "description", "children"}
        if unknown:
            raise TypologyError(
                f"{here}: unknown keys {', '.join(sorted(map(str, unknown)))} "
                "(a category has name, key, description, children)"
            )
        name = node.get("name")
        if not isinstance(name, str) or not name.strip():
            raise TypologyError(f"{here}.name: must be a non-empty string")
        name = " ".join(name.split())
        if "/" in name or len(name) > NAME_MAX_CHARS:
            raise TypologyError(f'{here}.name: {name[:40]!r} must hold no "/" and at most {NAME_MAX_CHARS} characters')
        if name.lower() == NO_ERROR:
            raise TypologyError(f'{here}.name: "No-error" is not a category (a segment without spans has none)')
        if name.lower() in seen:
            raise TypologyError(f"{here}.name: {name!r} appears twice here")
        seen.add(name.lower())
        clean: dict = {"name": name}
        if node.get("key") is not None:
            key = node["key"]
            if depth > 0:
                raise TypologyError(
                    f"{here}.key: only top-level categories have a key (subcategories are chosen with 1-9)"
                )
            if not (isinstance(key, str) and len(key) == 1 and "a" <= key.lower() <= "z"):
                raise TypologyError(f"{here}.key: must be one letter, got {key!r}")
            if key.lower() in RESERVED_KEYS:
                raise TypologyError(f"{here}.key: {key!r} is taken (M adds a missing-content marker)")
            clean["key"] = key.lower()
        if node.get("description") is not None:
            description = node["description"]
            if not isinstance(description, str) or len(description) > DESCRIPTION_MAX_CHARS:
                raise TypologyError(
                    f"{here}.description: must be a string of at most {DESCRIPTION_MAX_CHARS} characters"
                )
            clean["description"] = description
        if node.get("children") is not None:
            clean["children"] = _nodes(node["children"], f"{here}.children", count, depth=depth + 1)
        out.append(clean)
    return out


def category_paths(tree: list[dict], prefix: str = "") -> list[str]:
    """Every category of the tree as a path ("Accuracy", "Accuracy/Omission", ...), in order."""
    paths = []
    for node in tree:
        path = f"{prefix}{node['name']}"
        paths.append(path)
        paths.extend(category_paths(node.get("children") or [], path + "/"))
    return paths


def leaf_paths(tree: list[dict], prefix: str = "") -> list[str]:
    """The categories an annotator picks on the page: those without subcategories."""
    paths = []
    for node in tree:
        path = f"{prefix}{node['name']}"
        paths.extend(leaf_paths(node["children"], path + "/") if node.get("children") else [path])
    return paths


def category_lookup(tree: list[dict]) -> dict[str, str]:
    """Lower-cased path -> the typology's spelling (WMT's files vary in case, e.g.
    "Fluency/Character Encoding"; score_mqm.py compares lower-cased)."""
    return {path.lower(): path for path in category_paths(tree)}


def flat(text: str) -> str:
    """A text as one TSV field: tabs and line breaks become spaces, one for one, so character
    offsets stay those of the stored text (the TSV export writes this; its import compares with it)."""
    return text.replace("\t", " ").replace("\r", " ").replace("\n", " ")
