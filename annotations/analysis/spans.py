"""Agreement on error spans (ESA, MQM): character labels per annotator.

Each annotator's spans on an output become one label per character (0 no
error, 1 minor, 2 major, 3 critical; overlapping spans keep the worst; an MQM
neutral error is 0.5: marked, and less than minor).
Span F1 between two annotators is the character-level F1 of their error
characters (symmetric: 2|A and B| / (|A| + |B|)); Krippendorff's alpha
treats every (output, character) as a unit.
"""

from __future__ import annotations

from itertools import combinations

from workbench.lazy import lazy_module

# numpy is imported on first use, not by every web worker at start-up (workbench.lazy, issue 45).
np = lazy_module("numpy")

SEVERITY_CODE = {"neutral": 0.5, "minor": 1, "major": 2, "critical": 3}


def char_labels(length: int, spans: list[tuple[int, int, str]]) -> np.ndarray:
    labels = np.zeros(length, dtype=np.float32)
    for start, end, severity in spans:
        code = SEVERITY_CODE.get(severity, 1)
        s, e = max(0, start), min(length, end)
        if s < e:
            labels[s:e] = np.maximum(labels[s:e], code)
    return labels


def span_f1(a: np.ndarray, b: np.ndarray) -> float | None:
    x, y = a > 0, b > 0
    total = x.sum() + y.sum()
    if total == 0:
        return None  # neither marked anything: agreement on "no error" is not span F1
    return float(2 * (x & y).sum() / total)


def pair_f1s(labels: dict):
    """One output's {annotator: labels} -> (F1 or None, shared, marked) for every annotator pair."""
    for a, b in combinations(sorted(labels), 2):
        x, y = labels[a] > 0, labels[b] > 0
        yield span_f1(labels[a], labels[b]), int((x & y).sum()), int(x.sum() + y.sum())


def pairwise_f1(per_output: dict) -> dict:
    """per_output: {output: {annotator: labels}} -> mean F1 over annotator pairs, and micro F1."""
    values, inter, total = [], 0, 0
    for labels in per_output.values():
        for f, shared, marked in pair_f1s(labels):
            inter += shared
            total += marked
            if f is not None:
                values.append(f)
    return {
        "mean_f1": float(np.mean(values)) if values else None,
        "micro_f1": 2 * inter / total if total else None,
        "pairs": len(values),
    }


def char_table(per_output: dict):
    """(unit, annotator, value) triples: one unit per character of each output."""
    for output, labels in per_output.items():
        for annotator, lab in labels.items():
            for i, v in enumerate(lab.tolist()):
                yield (f"{output}:{i}", annotator, float(v))


def overlap(metric_chars: np.ndarray, human_chars: np.ndarray) -> float | None:
    """Character F1 between characters a metric marks as errors and a human's error characters."""
    return span_f1(metric_chars, human_chars)


def char_categories(length: int, spans: list[tuple[int, int, str]], codes: dict[str, int]) -> np.ndarray:
    """MQM: one label per character, the code of the top-level category of the span covering it
    (0: no error; overlapping spans: the later one)."""
    labels = np.zeros(length, dtype=np.int16)
    for start, end, category in spans:
        top = (category or "").split("/")[0]
        code = codes.setdefault(top, len(codes) + 1)
        s, e = max(0, start), min(length, end)
        if s < e:
            labels[s:e] = code
    return labels


def pair_category_f1s(labels: dict):
    """One output's {annotator: category labels} -> (F1 or None, shared, marked) for every annotator
    pair, a character shared only when both marked it with the same top-level category."""
    for a, b in combinations(sorted(labels), 2):
        x, y = labels[a], labels[b]
        both = int(((x > 0) & (x == y)).sum())
        marked = int((x > 0).sum() + (y > 0).sum())
        yield (2 * both / marked if marked else None), both, marked


def pairwise_category_f1(per_output: dict) -> dict:
    """per_output: {output: {annotator: category labels}} -> mean and micro F1 over annotator pairs
    where a character counts as shared only when both marked it with the same top-level category."""
    values, inter, total = [], 0, 0
    for labels in per_output.values():
        for f, both, marked in pair_category_f1s(labels):
            inter += both
            total += marked
            if f is not None:
                values.append(f)
    return {
        "mean_f1": float(np.mean(values)) if values else None,
        "micro_f1": 2 * inter / total if total else None,
        "pairs": len(values),
    }


def char_coincidences(labels: dict) -> tuple[int, dict]:
    """One output's {annotator: labels} as Krippendorff's coincidences of its characters (each a
    unit with one value per annotator): (annotators, {(value, value'): pairs of the two values
    within a character, summed over characters}); divided by annotators - 1, these are what the
    output adds to the coincidence matrix of `char_table`'s units, without a triple per character."""
    rows = np.stack([labels[a] for a in sorted(labels)])
    if rows.shape[1] == 0:
        return len(labels), {}
    domain = np.unique(rows)
    counts = (rows[None, :, :] == domain[:, None, None]).sum(axis=1).astype(np.int64)  # values x characters
    pairs = counts @ counts.T - np.diag(counts.sum(axis=1))
    values = domain.tolist()
    return len(labels), {
        (values[i], values[j]): int(pairs[i, j]) for i in range(len(values)) for j in range(len(values)) if pairs[i, j]
    }
