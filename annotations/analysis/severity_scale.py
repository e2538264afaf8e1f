"""The one scale of minED error severities: bins of the legend and the tokens errors point at.

Pure (no Django), so that the severity page and ESA^AI's span suggestions
(`annotations.services.prefill`) bin a severity the same way without the services importing
the page.
"""

from __future__ import annotations

# Fixed bins on the embedded metric's [0, 1] scale; a bin holds its lower bound.
# Why these stops: the seed's severities (its table 1: SemDist gains 0.051,
# 0.077, 0.376; BERTScore 0.001 to 0.067) and WER's 1 / reference length span
# orders of magnitude, so the stops grow roughly geometrically; 0.1 is every
# embedded metric's default acceptability threshold (METRICS.md), so bins 4
# and 5 hold errors that alone are worth the whole margin to "acceptable".
# Bin 0 holds errors whose correction alone does not lower the metric (a
# non-coherent metric such as SemDist can even rise).
STOPS = (0.02, 0.05, 0.1, 0.2)
LEGEND = [
    {"bin": 0, "label": "≤ 0", "text": "no gain when corrected alone"},
    {"bin": 1, "label": "under 0.02", "text": "negligible"},
    {"bin": 2, "label": "0.02 to under 0.05", "text": "small"},
    {"bin": 3, "label": "0.05 to under 0.1", "text": "notable"},
    {"bin": 4, "label": "0.1 to under 0.2", "text": "large: at least the default θ (0.1)"},
    {"bin": 5, "label": "0.2 or more", "text": "very large"},
]


def severity_bin(severity: float | None) -> int:
    """The legend bin of a severity (a function of the severity alone)."""
    # A difference of two rates carries float noise (0.3 - 0.2 = 0.0999...): round
    # before binning so that an error worth exactly a stop lands in the stop's bin.
    value = round(float(severity or 0.0), 9)
    if value <= 0:
        return 0
    return 1 + sum(value >= stop for stop in STOPS)


def word_offsets(text: str) -> list[tuple[int, int]]:
    offsets, pos = [], 0
    for word in text.split():
        start = text.index(word, pos)
        offsets.append((start, start + len(word)))
        pos = start + len(word)
    return offsets


def char_offsets(text: str) -> list[tuple[int, int]]:
    lead = len(text) - len(text.lstrip())
    return [(lead + k, lead + k + 1) for k in range(len(text.strip()))]
