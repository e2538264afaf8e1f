"""A protocol's own campaign settings, declared once: `Campaign.options` holds them.

Each protocol class lists its options (`Protocol.options`, a tuple of `Option`); everything else
derives from that list: the check of a campaign's options (`options_clean`, errors
"options.NAME: reason"), their JSON Schema (`Option.schema`, the published campaign.schema.json),
the set-up form's fields, `create_campaign`'s flags and `--option KEY=VALUE`, campaign.json and
the dataset card's lines. No Django models here: the protocol classes and services import it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field


class OptionError(ValueError):
    """An option value that cannot be used; the message says why (without the option's name)."""


# JSON types of an option's value.
INTEGER, NUMBER, STRING, STRINGS, JSON = "integer", "number", "string", "strings", "json"


@dataclass(frozen=True)
class Option:
    """One setting of a protocol: its name in `Campaign.options`, type, default and bounds.

    `type`: INTEGER, NUMBER, STRING (one of `choices` when there are choices), STRINGS (a list of
    distinct strings from `choices`) or JSON
    (any JSON value, checked by `check`). `minimum`/`maximum` bound numbers (inclusive; with
    `exclusive_minimum` the minimum itself is refused). `check` cleans a value of the right type
    further (raising OptionError). `flag`: an older `create_campaign` flag that sets it, kept
    working beside `--option NAME=VALUE`. `summary` formats the value for the campaign page and
    the dataset card ("" leaves the option out of both)."""

    name: str
    type: str
    default: object
    label: str
    help: str = ""
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    choices: tuple[str, ...] = ()
    check: Callable[[object], object] | None = None
    flag: str = ""
    schema_extra: Mapping = field(default_factory=dict)
    summary: Callable[[object], str] | None = None
    # The name on the campaign page and card; the label when empty.
    title: str = ""
    # A STRINGS option that may be an empty list (special answers: none offered).
    allow_empty: bool = False
    # One of the options every protocol has (annotations.protocols.common_options): error messages
    # list a protocol's own options and mention these together.
    common: bool = False
    # Never sent to the annotation pages and clients (quality control's settings: an annotator must
    # not learn that a campaign mixes checks into their screens).
    private: bool = False

    # ---- values --------------------------------------------------------------------------------

    def clean(self, value):
        """The value, checked and normalised; OptionError says why not."""
        if self.type == INTEGER:
            if isinstance(value, bool) or not isinstance(value, int):
                if isinstance(value, float) and value.is_integer():
                    value = int(value)
                else:
                    raise OptionError("must be a whole number")
            self._bounds(value)
        elif self.type == NUMBER:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise OptionError("must be a number")
            value = float(value)
            if not math.isfinite(value):
                raise OptionError("must be a finite number")
            self._bounds(value)
        elif self.type == STRING:
            if not isinstance(value, str):
                raise OptionError("must be text")
            if self.choices and value not in self.choices:
                raise OptionError(f"must be one of {', '.join(self.choices)}, got {value[:80]!r}")
        elif self.type == STRINGS:
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise OptionError("must be a list of strings")
            value = list(dict.fromkeys(value))
            unknown = [v for v in value if self.choices and v not in self.choices]
            if unknown:
                raise OptionError(f"{', '.join(map(repr, unknown))} not among {', '.join(self.choices)}")
            if not value and not self.allow_empty:
                raise OptionError(f"give at least one of {', '.join(self.choices)}")
        if self.check is not None:
            value = self.check(value)
        return value

    def _bounds(self, value) -> None:
        low, high = self.minimum, self.maximum
        if (
            low is not None
            and high is not None
            and not (low < value <= high if self.exclusive_minimum else low <= value <= high)
        ):
            raise OptionError(
                f"must be between {low:g} and {high:g}" + (f" (above {low:g})" if self.exclusive_minimum else "")
            )
        if low is not None and (value <= low if self.exclusive_minimum else value < low):
            raise OptionError(f"must be above {low:g}" if self.exclusive_minimum else f"must be at least {low:g}")
        if high is not None and value > high:
            raise OptionError(f"must be at most {high:g}")

    def parse_text(self, text: str):
        """A value typed as text (`--option NAME=VALUE`, a flag, a form field): numbers as numbers,
        lists comma-separated, JSON as JSON; then `clean`."""
        text = text.strip()
        try:
            if self.type == INTEGER:
                value = int(text)
            elif self.type == NUMBER:
                value = float(text)
            elif self.type == STRINGS:
                value = [v.strip() for v in text.split(",") if v.strip()]
            elif self.type == JSON:
                value = json.loads(text)
            else:
                value = text
        except ValueError as exc:
            kind = {INTEGER: "a whole number", NUMBER: "a number", JSON: "JSON"}.get(self.type, "text")
            detail = (
                f" ({exc.msg}, line {exc.lineno} column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
            )
            raise OptionError(f"must be {kind}, got {text[:80]!r}{detail}") from None
        return self.clean(value)

    def format(self, value) -> str:
        """The value in one line, for the campaign page and the dataset card."""
        if self.summary is not None:
            return self.summary(value)
        if isinstance(value, list):
            return ", ".join(map(str, value))
        if isinstance(value, float):
            return f"{value:g}"
        return str(value)

    # ---- schema --------------------------------------------------------------------------------

    def schema(self) -> dict:
        """This option's JSON Schema (draft 2020-12)."""
        out: dict = {"title": self.label, "description": self.help}
        if self.type in (INTEGER, NUMBER):
            out["type"] = self.type
            if self.minimum is not None:
                out["exclusiveMinimum" if self.exclusive_minimum else "minimum"] = self.minimum
            if self.maximum is not None:
                out["maximum"] = self.maximum
        elif self.type == STRING:
            out["type"] = "string"
            if self.choices:
                out["enum"] = list(self.choices)
        elif self.type == STRINGS:
            out.update(
                type="array",
                items={"type": "string", **({"enum": list(self.choices)} if self.choices else {})},
                minItems=0 if self.allow_empty else 1,
                uniqueItems=True,
            )
        out["default"] = self.default
        out.update(self.schema_extra)
        return out


def options_clean(declared: Sequence[Option], given: Mapping | None, *, protocol: str) -> dict:
    """Every declared option of a campaign, given or default, checked: {name: value}.

    Raises OptionsInvalid with one "options.NAME: reason" per problem (unknown names included)."""
    if given is None:
        given = {}
    if not isinstance(given, Mapping):
        raise OptionsInvalid(["options: must be an object of the protocol's settings"])
    by_name = {o.name: o for o in declared}
    problems = [
        f"options.{key}: not a setting of {protocol} campaigns ({options_it_has(declared)})"
        for key in given
        if key not in by_name
    ]
    cleaned = {}
    for option in declared:
        value = given.get(option.name)
        if value is None:
            value = option.default
        try:
            cleaned[option.name] = option.clean(value)
        except OptionError as exc:
            problems.append(f"options.{option.name}: {exc}")
    if problems:
        raise OptionsInvalid(problems)
    return cleaned


def options_it_has(declared: Sequence[Option]) -> str:
    """What a protocol offers, for a message refusing an unknown option: its own options by name,
    and those of every protocol together."""
    own = [o.name for o in declared if not o.common]
    shared = any(o.common for o in declared)
    if not own:
        return "it has only the options of every protocol" if shared else "it has none"
    return f"it has {', '.join(own)}" + (" and the options of every protocol" if shared else "")


class OptionsInvalid(ValueError):
    """Options refused: `problems` holds one "options.NAME: reason" line each."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems
