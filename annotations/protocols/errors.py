"""The rules an answer can break, one message each, and the error that carries one."""

from __future__ import annotations

from django.core.exceptions import ValidationError

MESSAGES = {
    "criterion": "unknown criterion {criterion!r}; campaign {campaign!r} has {choices}",
    "output": "output {value!r} is not part of this unit",
    "score_type": "score must be a number, got {value!r}",
    "score_finite": "score must be a finite number",
    "score_scale": "score {score:g} is outside the scale {scale}",
    "magnitude": "RankME magnitudes must be above 0, got {score:g}",
    "rank": "rank must be a whole number from 1, got {value!r}",
    "winner": "winner must be 'a', 'b' or 'tie', got {value!r}",
    "pair_same": "a and b must be two different outputs",
    "pair_outputs": "a and b must be the outputs of this unit",
    "tuple_size": "a best-worst tuple holds at least 2 outputs",
    "tuple_twice": "the tuple lists an output twice",
    "tuple_long": "too many outputs in one tuple",
    "best_worst_in_tuple": "best and worst must be outputs of the tuple",
    "best_worst_differ": "best and worst must be different outputs",
    "spans_list": "spans must be a list",
    "spans_many": "at most {limit} spans per judgement",
    "span_object": "span {index} must be an object",
    "span_keys": "span {index} has unknown keys: {keys}",
    "span_suggestion": "span {index}: suggestion must name one of this output's suggested spans",
    "span_suggestion_twice": "span {index}: names a suggestion another span already names",
    "span_category_missing": "span {index}: an MQM error needs a category",
    "span_category": "span {index}: category {value!r} is not in the campaign's typology",
    "span_note_off": "span {index}: this campaign has no free-text field per span",
    "span_note": "span {index}: note must be text of at most {limit} characters",
    "span_severity": "span {index}: severity must be one of {allowed}, got {value!r}",
    "span_missing_flag": "span {index}: missing must be true or false",
    "span_missing_offsets": "span {index}: a missing-content marker has no start or end",
    "span_offset_type": "span {index}: {name} must be a whole number",
    "span_order": "span {index}: need 0 <= start < end, got {start}-{end}",
    "span_range": "span {index}: need 0 <= start < end <= {length} (the output's length), got {start}-{end}",
    "post_edit_type": "post_edit must be a string, got {value!r}",
    "post_edit_empty": "post_edit is empty: edit the output into an acceptable one (at least one word)",
    "post_edit_long": "post_edit is longer than {limit} characters",
    "rating_missing": "rating is required: criterion {criterion!r} has the scale {scale}",
    "rating_none": "criterion {criterion!r} has no scale: send no rating",
    "rating_type": "rating must be a number, got {value!r}",
    "rating_scale": "rating {rating:g} is outside the scale {scale}",
}


class AnswerError(ValidationError):
    """One rule an answer breaks: `rule` (a key of MESSAGES), the one message for it, and
    `field`, the answer's key at fault (the REST endpoints key their errors by it)."""

    def __init__(self, rule: str, field: str | None = None, **values):
        # The refused value is echoed back: a long string only by its start.
        for key in ("value", "criterion"):
            if isinstance(values.get(key), str) and len(values[key]) > 100:
                values[key] = values[key][:100] + "..."
        super().__init__(MESSAGES[rule].format(**values), code=rule)
        self.rule = rule
        self.field = field
