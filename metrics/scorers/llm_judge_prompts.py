"""Built-in prompt templates of the `llm-judge` metric, versioned by name.

A template is plain text with placeholders in braces: `{output}` (score and
spans modes), `{output_a}` and `{output_b}` (pairwise), `{source}`,
`{reference}` (every reference, one per line), `{data}` (input triples,
`subject | predicate | object`, separated by `; `), `{low}` and `{high}` (the scale),
`{categories}` (MQM categories). Any other brace is literal text, so JSON
examples need no escaping. A line whose placeholders are all empty for a
segment (no source, no reference, no data) is left out for that segment.

A line `[answer]` splits the template: above it the user's message (wrapped in
the tokenizer's chat template where it has one), below it the beginning of the
judge's answer, which the model continues (e.g. `Score:`).

Never edit a template in place: a changed template is a new name (`.v2`), so
that a signature naming `score-da.v1` always means the same prompt (the
signature also carries the text's hash).
"""

from __future__ import annotations

BUILTIN: dict[str, str] = {
    "score-da.v1": """\
You are an expert judge of automatically generated text. Rate the quality of the output below on a scale \
from {low} (worst) to {high} (best), considering its adequacy to the input and its fluency.
Source: {source}
Input data: {data}
Reference: {reference}
Output: {output}
Answer with the score only.
[answer]
Score:""",
    "pairwise.v1": """\
You are an expert judge of automatically generated text. Two outputs were produced for the same input. \
Which one is better, considering adequacy to the input and fluency?
Source: {source}
Input data: {data}
Reference: {reference}
Output A: {output_a}
Output B: {output_b}
Answer with A or B only.
[answer]
Better output:""",
    "spans-esa.v1": """\
You are an expert annotator of automatically generated text (Error Span Annotation). Mark every error in \
the output below. For each error, quote the erroneous part exactly as it is written in the output, give the \
occurrence index of that quote among its occurrences in the output (0 for the first), and its severity: \
minor (style, grammar, word choice that does not mislead) or major (wrong meaning, missing or invented \
content). Answer with JSON only, in the form \
{"errors": [{"text": "...", "occurrence": 0, "severity": "minor"}]}; use {"errors": []} when there is none.
Source: {source}
Input data: {data}
Reference: {reference}
Output: {output}
[answer]
""",
    "spans-mqm.v1": """\
You are an expert annotator of automatically generated text (MQM). Mark every error in the output below. \
For each error, quote the erroneous part exactly as it is written in the output, give the occurrence index \
of that quote among its occurrences in the output (0 for the first), its severity (minor or major) and its \
category, one of: {categories}. Answer with JSON only, in the form \
{"errors": [{"text": "...", "occurrence": 0, "severity": "major", "category": "accuracy"}]}; use \
{"errors": []} when there is none.
Source: {source}
Input data: {data}
Reference: {reference}
Output: {output}
[answer]
""",
}

# The default template of each mode and protocol.
DEFAULTS: dict[tuple[str, str], str] = {
    ("score", "da"): "score-da.v1",
    ("pairwise", "pairwise"): "pairwise.v1",
    ("spans", "esa"): "spans-esa.v1",
    ("spans", "mqm"): "spans-mqm.v1",
}

# MQM error categories offered by the spans-mqm template (Freitag et al. 2021, top level).
MQM_CATEGORIES = ("accuracy", "fluency", "terminology", "style", "locale", "other")
