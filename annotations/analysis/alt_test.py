"""The alternative annotator test (Calderon, Reichart and Dror, ACL 2025, "The Alternative
Annotator Test for LLM-as-a-Judge: How to Statistically Justify Replacing Human Annotators
with LLMs"): may a judge replace the human annotators?

Leave one annotator out at a time. On each instance that annotator judged, score how well the
judge and how well the held-out annotator agree with the remaining annotators (accuracy for
labels, negative RMSE for scores). The judge "wins" an instance when it agrees at least as
well. A one-sided one-sample t-test asks whether the held-out annotator's advantage
(human wins - judge wins, per instance) is below epsilon, the cost-benefit allowance the
judge gets for being cheaper (0.2 for crowd workers, 0.1 for experts, as the paper
suggests); the Benjamini-Yekutieli procedure controls the false discovery rate over the
annotators. The winning rate is the share of annotators the judge beats; the judge passes
when it is at least 0.5. The advantage probability is the mean share of instances the judge
wins.

Pure: plain dicts in, a dict out (no Django). Annotators with fewer than
`min_instances` instances are skipped, instances with fewer than `min_humans` annotators
are dropped, as in the authors' reference implementation (nitaytech/AltTest).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping

from workbench.lazy import lazy_module

# numpy is imported on first use, not by every web worker at start-up (workbench.lazy, issue 45).
np = lazy_module("numpy")

SCORINGS = ("accuracy", "neg_rmse")


def _accuracy(value, others: list) -> float:
    return float(np.mean([value == o for o in others]))


def _neg_rmse(value, others: list) -> float:
    return -float(np.sqrt(np.mean([(value - o) ** 2 for o in others])))


def benjamini_yekutieli(p_values: list[float], q: float) -> list[int]:
    """Indices of the hypotheses rejected at false discovery rate q under any dependence
    (Benjamini and Yekutieli 2001: step-up with thresholds k/m * q / H_m). NaN p-values
    (a t-test on constant differences) are never rejected."""
    m = len(p_values)
    if m == 0:
        return []
    harmonic = sum(1.0 / k for k in range(1, m + 1))
    order = sorted(range(m), key=lambda k: (math.isnan(p_values[k]), p_values[k]))
    largest = -1
    for rank, k in enumerate(order, start=1):
        if not math.isnan(p_values[k]) and p_values[k] <= rank / m * q / harmonic:
            largest = rank
    return sorted(order[:largest]) if largest > 0 else []


def alt_test(
    judge: Mapping[Hashable, object],
    humans: Mapping[Hashable, Mapping[Hashable, object]],
    *,
    scoring: str | Callable = "accuracy",
    epsilon: float = 0.2,
    q_fdr: float = 0.05,
    min_humans: int = 2,
    min_instances: int = 30,
) -> dict:
    """`judge`: {instance: annotation}; `humans`: {annotator: {instance: annotation}}.

    >>> humans = {"h1": {1: "a", 2: "b"}, "h2": {1: "a", 2: "a"}, "h3": {1: "b", 2: "b"}}
    >>> alt_test({1: "a", 2: "b"}, humans, min_instances=2)["advantage_probability"]
    1.0
    """
    from scipy.stats import ttest_1samp  # lazy: scipy costs each web worker ~0.5 s and ~40 MB

    if scoring not in SCORINGS and not callable(scoring):
        raise ValueError(f"scoring must be one of {', '.join(SCORINGS)}")
    score = {"accuracy": _accuracy, "neg_rmse": _neg_rmse}.get(scoring, scoring)
    judged_by: dict[Hashable, list] = defaultdict(list)
    for h, answers in humans.items():
        for i in answers:
            judged_by[i].append(h)
    kept = {i for i, hs in judged_by.items() if len(hs) >= min_humans and i in judge}
    per_annotator: dict[Hashable, dict] = {}
    p_values, tested = [], []
    for h, answers in humans.items():
        instances = [i for i in answers if i in kept]
        if len(instances) < min_instances:
            per_annotator[h] = {"instances": len(instances), "skipped": True}
            continue
        judge_wins, human_wins = [], []
        for i in instances:
            others = [humans[o][i] for o in judged_by[i] if o != h]
            human_score, judge_score = score(answers[i], others), score(judge[i], others)
            judge_wins.append(1 if judge_score >= human_score else 0)
            human_wins.append(1 if human_score >= judge_score else 0)
        diff = np.array(human_wins, dtype=float) - np.array(judge_wins, dtype=float)
        p = float(ttest_1samp(diff, epsilon, alternative="less").pvalue)
        p_values.append(p)
        tested.append(h)
        per_annotator[h] = {
            "instances": len(instances),
            "skipped": False,
            "p_value": None if math.isnan(p) else p,
            "advantage_probability": float(np.mean(judge_wins)),
        }
    rejected = set(benjamini_yekutieli(p_values, q_fdr))
    for k, h in enumerate(tested):
        per_annotator[h]["judge_wins"] = k in rejected
    winning_rate = len(rejected) / len(tested) if tested else None
    advantage = float(np.mean([per_annotator[h]["advantage_probability"] for h in tested])) if tested else None
    return {
        "winning_rate": winning_rate,
        "advantage_probability": advantage,
        "passed": None if winning_rate is None else winning_rate >= 0.5,
        "annotators_tested": len(tested),
        "instances": len(kept),
        "epsilon": epsilon,
        "q_fdr": q_fdr,
        "scoring": scoring if isinstance(scoring, str) else getattr(scoring, "__name__", "custom"),
        "min_humans": min_humans,
        "min_instances": min_instances,
        "annotators": per_annotator,
    }
