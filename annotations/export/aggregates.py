"""Aggregated human scores of each output, from the judgements an export keeps (pure).

Per criterion, with the same keys for every output of a campaign (so tables have fixed columns):

- ratings: n, mean, sd (sample standard deviation, n >= 2), consensus;
- ESA: the same, plus how many minor / major / critical spans and missing-content markers the
  annotators marked in total;
- pairwise: n (comparisons the output took part in), wins, losses, ties, win_rate = (wins + ties / 2) / n;
- best-worst: n (tuples it appeared in), best, worst, score = (best - worst) / n (Orme's counting score).
"""
from __future__ import annotations

from collections import defaultdict

from annotations.export.consensus import stdev, unit_consensus
from annotations.export.judgements import Judgement

STAT_KEYS = {
    "rating": ("n", "mean", "sd", "consensus"),
    "esa": ("n", "mean", "sd", "consensus", "minor", "major", "critical", "missing"),
    "pairwise": ("n", "wins", "losses", "ties", "win_rate"),
    "bws": ("n", "best", "worst", "score"),
}


def empty_stats(kind: str) -> dict:
    return {key: (0 if key in ("n", "wins", "losses", "ties", "best", "worst", "minor", "major", "critical",
                               "missing") else None) for key in STAT_KEYS[kind]}


def output_stats(kind: str, judgements: list[Judgement], *, output_ids: list[int], criteria: list[str],
                 scales: dict[str, tuple]) -> dict[int, dict[str, dict]]:
    """output id -> criterion -> stats, for the outputs of one item."""
    stats = {o: {c: empty_stats(kind) for c in criteria} for o in output_ids}
    if kind in ("rating", "esa"):
        scores: dict[tuple, list] = defaultdict(list)
        for j in judgements:
            scores[(j.output_id, j.criterion)].append(j.score)
            if kind == "esa" and j.criterion in stats.get(j.output_id, {}):
                entry = stats[j.output_id][j.criterion]
                for span in j.spans:
                    entry["missing" if span.get("missing") else span["severity"]] += 1
        for (output, criterion), values in scores.items():
            if output not in stats or criterion not in stats[output]:
                continue
            entry = stats[output][criterion]
            entry["n"] = len(values)
            entry["mean"] = sum(values) / len(values)
            entry["sd"] = stdev(values) if len(values) > 1 else None
            entry["consensus"] = unit_consensus(kind, values, scales.get(criterion, (None, None)))
    elif kind == "pairwise":
        for j in judgements:
            for output, side in ((j.a_id, "a"), (j.b_id, "b")):
                entry = stats.get(output, {}).get(j.criterion)
                if entry is None:
                    continue
                entry["n"] += 1
                if j.winner == "tie":
                    entry["ties"] += 1
                elif j.winner == side:
                    entry["wins"] += 1
                else:
                    entry["losses"] += 1
        for per_criterion in stats.values():
            for entry in per_criterion.values():
                entry["win_rate"] = (entry["wins"] + entry["ties"] / 2) / entry["n"] if entry["n"] else None
    else:
        for j in judgements:
            for output in j.outputs:
                entry = stats.get(output, {}).get(j.criterion)
                if entry is None:
                    continue
                entry["n"] += 1
                entry["best"] += output == j.best_id
                entry["worst"] += output == j.worst_id
        for per_criterion in stats.values():
            for entry in per_criterion.values():
                entry["score"] = (entry["best"] - entry["worst"]) / entry["n"] if entry["n"] else None
    return stats

