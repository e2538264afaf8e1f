"""Settings every protocol offers (issue 41): free-text fields, special answers, background
questions, the adaptive criterion and the document context shown with a segment. `Protocol.__init_subclass__` appends them to each protocol's
own `options`, so the set-up form, the API, `create_campaign --option`, campaign.json, the JSON
Schema and the card pick them up as they pick up a protocol's own (annotations.protocols.options).
Defaults leave a campaign as it was: no field, no special answer, no question, the first criterion,
no context.
"""

from __future__ import annotations

from annotations.protocols.options import INTEGER, JSON, NUMBER, STRING, STRINGS, Option, OptionError

# Kinds of a background question.
CHOICE, NUMBER_Q, TEXT = "choice", "number", "text"
QUESTION_KINDS = (CHOICE, NUMBER_Q, TEXT)
MAX_QUESTIONS = 20
# A free-text answer to a background question is kept short: it is shown in aggregate.
BACKGROUND_TEXT_MAX = 300
# Context shown with a judged segment (items' `doc` and `doc_pos`): none (the segment alone), window
# (the `context_size` previous and next segments of its document, same system, not judged) or document
# (the unit is a whole document, or a part of at most `doc_max_segments` segments, every segment judged).
CONTEXT_NONE, CONTEXT_WINDOW, CONTEXT_DOCUMENT = "none", "window", "document"
CONTEXTS = (CONTEXT_NONE, CONTEXT_WINDOW, CONTEXT_DOCUMENT)
CONTEXT_SIZE_MAX = 10
DOC_MAX_SEGMENTS_MAX = 100
# In document mode a control unit is a whole document unit (annotations.quality.services.controls):
# degraded copies, repeats and relative checks copy a regular document unit, and a gold unit is a
# whole document (every segment's outputs of the chosen systems, each with the gold answer); a gold
# unit of one segment would stand out among whole documents: refused with this reason.
DOCUMENT_GOLD_REFUSAL = (
    "with context=document a gold unit is a whole document: the item must belong to a document (doc), "
    "and every segment of it is shown and checked (a single segment would stand out among whole documents)"
)
DOCUMENT_REFUSAL = (
    "context=document needs a protocol that scores each output on its own ({protocol} does not; "
    "protocols that offer it: {offered})"
)
SPECIAL_MAX = 10
SPECIAL_LENGTH = 40


def _name_ok(name) -> bool:
    return isinstance(name, str) and 0 < len(name) <= 40 and name.replace("_", "").isalnum() and name.isascii()


def _question(index: int, q) -> dict:
    where = f"question {index + 1}"
    if not isinstance(q, dict):
        raise OptionError(f"{where}: must be an object with name, label and type")
    unknown = sorted(set(q) - {"name", "label", "type", "choices", "min", "max", "required"})
    if unknown:
        raise OptionError(f"{where}: unknown key {', '.join(unknown)}")
    name, label, kind = q.get("name"), q.get("label"), q.get("type", TEXT)
    if not _name_ok(name):
        raise OptionError(f"{where}: name must be 1-40 letters, digits or _")
    if not isinstance(label, str) or not label.strip() or len(label) > 300:
        raise OptionError(f"{where}: label must be text of 1-300 characters")
    if kind not in QUESTION_KINDS:
        raise OptionError(f"{where}: type must be one of {', '.join(QUESTION_KINDS)}")
    out = {"name": name, "label": label.strip(), "type": kind, "required": bool(q.get("required", True))}
    if kind == CHOICE:
        choices = q.get("choices")
        if (
            not isinstance(choices, list)
            or len(choices) < 2
            or len(choices) > 50
            or not all(isinstance(c, str) and c.strip() and len(c) <= 100 for c in choices)
            or len(set(choices)) != len(choices)
        ):
            raise OptionError(f"{where}: choices must be 2-50 distinct texts of at most 100 characters")
        out["choices"] = [c.strip() for c in choices]
    elif "choices" in q:
        raise OptionError(f"{where}: only a choice question has choices")
    if kind == NUMBER_Q:
        for bound in ("min", "max"):
            value = q.get(bound)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise OptionError(f"{where}: {bound} must be a number")
            out[bound] = value
        if out["min"] is not None and out["max"] is not None and out["min"] > out["max"]:
            raise OptionError(f"{where}: min must not be above max")
    elif "min" in q or "max" in q:
        raise OptionError(f"{where}: only a number question has min and max")
    return out


def background_check(value) -> list[dict]:
    if not isinstance(value, list):
        raise OptionError("must be a list of questions")
    if len(value) > MAX_QUESTIONS:
        raise OptionError(f"at most {MAX_QUESTIONS} questions")
    questions = [_question(i, q) for i, q in enumerate(value)]
    names = [q["name"] for q in questions]
    if len(set(names)) != len(names):
        raise OptionError("question names must be distinct")
    return questions


def special_check(value: list) -> list:
    if len(value) > SPECIAL_MAX:
        raise OptionError(f"at most {SPECIAL_MAX} special answers")
    value = [v.strip() for v in value]
    if any(not v or len(v) > SPECIAL_LENGTH for v in value):
        raise OptionError(f"each special answer is 1-{SPECIAL_LENGTH} characters")
    return list(dict.fromkeys(value))


def context_summary(options: dict) -> str:
    """The campaign page's and the card's line on the context ("": none), from the options."""
    context = options.get("context", CONTEXT_NONE)
    if context == CONTEXT_DOCUMENT:
        most = options.get("doc_max_segments") or 12
        return (
            f"document: every segment of a document judged on one screen, in document order (documents of "
            f"more than {most} segments split into consecutive parts)"
        )
    if context != CONTEXT_WINDOW:
        return ""
    size = options.get("context_size") or 2
    return (
        f"window: up to {size} segment(s) before and after the judged one, of the same document and "
        "system, shown but not judged"
    )


def _summary_questions(value) -> str:
    return "; ".join(f"{q['label']} ({q['type']})" for q in value or [])


def _text_field(value) -> str:
    return value.strip()[:100] if isinstance(value, str) else value


COMMON = (
    Option(
        common=True,
        name="unit_text",
        type=STRING,
        default="",
        label="Free-text field per unit",
        help="The prompt of a free-text field shown with every unit (e.g. Comment); empty: none.",
        check=_text_field,
        title="Free-text field per unit",
    ),
    Option(
        common=True,
        name="text_max_length",
        type=INTEGER,
        default=500,
        label="Longest free text",
        help="Characters a free-text answer (per unit or per span) may have.",
        minimum=1,
        maximum=5000,
        # Shown only beside a field that uses it (card_design skips it otherwise).
        summary=lambda value: "",
    ),
    Option(
        common=True,
        name="special_answers",
        type=STRINGS,
        default=[],
        label="Special answers",
        help="Answers offered instead of a judgement, e.g. [missing], [instructions fault], cannot judge; "
        "stored as such and left out of scores and agreement.",
        check=special_check,
        allow_empty=True,
    ),
    Option(
        common=True,
        name="background",
        type=JSON,
        default=[],
        label="Background questions",
        help='Asked once before the first unit: a JSON list of {"name", "label", "type": choice|number|text, '
        '"choices" (choice), "min"/"max" (number)}.',
        check=background_check,
        summary=_summary_questions,
    ),
    Option(
        common=True,
        name="context",
        type=STRING,
        choices=CONTEXTS,
        default=CONTEXT_NONE,
        flag="context",
        label="Document context",
        help="none: the segment alone; window: the context_size previous and next segments of the same "
        "document (items' doc and doc_pos) and system, shown beside it but not judged; document: the whole "
        "document (of one system, or of the screen's systems side by side) on one screen, every segment judged.",
        # One line with the size: context_summary.
        summary=lambda value: "",
    ),
    Option(
        common=True,
        name="context_size",
        type=INTEGER,
        default=2,
        flag="context-size",
        label="Context segments before and after",
        help="With context window: how many segments of the document are shown before and after.",
        minimum=1,
        maximum=CONTEXT_SIZE_MAX,
        summary=lambda value: "",
    ),
    Option(
        common=True,
        name="doc_max_segments",
        type=INTEGER,
        default=12,
        flag="doc-max-segments",
        label="Most segments per document unit",
        help="With context document: longer documents are split into consecutive parts of at most this many "
        "segments (at segment boundaries, in document order).",
        minimum=1,
        maximum=DOC_MAX_SEGMENTS_MAX,
        summary=lambda value: "",
    ),
    Option(
        common=True,
        name="adaptive_criterion",
        type=STRING,
        default="",
        label="Criterion adaptive allocation ranks by",
        help="One of the campaign's criteria; empty: the first.",
        check=_text_field,
        title="Adaptive criterion",
    ),
)
# Only protocols with error spans offer a field per span.
SPAN_TEXT = Option(
    common=True,
    name="span_text",
    type=STRING,
    default="",
    label="Free-text field per span",
    help="The prompt of a free-text field for each error span (e.g. Rationale); empty: none.",
    check=_text_field,
    title="Free-text field per span",
)

# Relative attention checks (issue 41 part 5, WMT 2026): only protocols that show several outputs
# on a screen declare them (`Protocol.relative_checks`); the others refuse the options with
# RELATIVE_REFUSAL. The damage kinds are annotations.quality.degrade.KINDS (a test keeps them equal:
# this layer may not import that module).
RELATIVE_DAMAGE_KINDS = ("shuffle5", "drop", "shuffle", "invert", "fact")
RELATIVE = (
    Option(
        name="relative_checks",
        type=NUMBER,
        private=True,
        default=0.0,
        label="Relative attention checks",
        help="Share of each annotator's batch (0-0.5) given to screens where one output is a degraded copy "
        "of another output of the same source; the check passes when it scores below every clean output "
        "(pairwise: the clean one preferred; best-worst: the copy chosen as worst). In document mode the "
        "screen is a whole document: one system's copy is degraded in its segments, and the check passes "
        "when, in every degraded segment, the copy scores below every clean output.",
        minimum=0,
        maximum=0.5,
        summary=lambda value: f"{value:.0%} of each batch" if value else "",
    ),
    Option(
        name="relative_damage",
        type=STRINGS,
        private=True,
        default=["shuffle5"],
        label="Damage of a relative check",
        help="Kinds drawn from for the degraded copy: shuffle5 (five words shuffled, the default), drop, "
        "shuffle, invert, fact (data-to-text).",
        choices=RELATIVE_DAMAGE_KINDS,
        # In campaign.json; the card's line is `relative_checks`'.
        summary=lambda value: "",
    ),
)
RELATIVE_NAMES = tuple(o.name for o in RELATIVE)
RELATIVE_REFUSAL = (
    "relative attention checks need several outputs on a screen; {protocol} campaigns show one "
    "(protocols that offer them: {offered})"
)
