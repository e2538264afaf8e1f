"""An LLM judge's run against the campaign's humans: bias probes and the alternative annotator test.

A judge is a done run of the metric `llm-judge` (any run whose metric is in JUDGE_METRICS). Its
per-output JSON (`OutputScore.extra`, written by metrics/scorers/llm_judge.py) adds
`probabilities` (score mode), `preference` / `swapped` / `pairs` (pairwise mode: per opponent, the
probability that this output is better when shown first and when shown second) and `spans` (spans
mode). The probes read only what the run stored and the campaign's counted
judgements (through `report.load`, the one reader), so `correlate --json` and the meta-evaluation
page show the same figures.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from pathlib import Path

from annotations.analysis import alt_test as at, report
from annotations.analysis.metric_scores import latest_done_runs, scores_by_output
from annotations.models import Item, Output
from annotations.selectors.outputs import output_index
from metrics.models import MetricRun, OutputScore
from workbench.lazy import lazy_module

# numpy is imported on first use, not by every web worker at start-up (workbench.lazy, issue 45).
np = lazy_module("numpy")

# scipy is imported when an analysis first needs it, not by every web worker at start-up (workbench.lazy).
stats = lazy_module("scipy.stats")

JUDGE_METRICS = frozenset({"llm-judge"})
# Options that change neither the scores' meaning nor which run is compared with which.
SPEED_OPTIONS = frozenset({"batch_size", "device", "seed"})


def is_judge(run: MetricRun) -> bool:
    return run.metric in JUDGE_METRICS


def _num(x) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def _corr(x: list[float], y: list[float]) -> dict:
    """Pearson and Spearman with their n (None below 3 points or on a constant side)."""
    out = {"n": len(x), "pearson": None, "spearman": None}
    if len(x) >= 3 and np.ptp(x) > 0 and np.ptp(y) > 0:
        out["pearson"] = float(stats.pearsonr(x, y).statistic)
        out["spearman"] = float(stats.spearmanr(x, y).statistic)
    return out


def words(text: str) -> int:
    return len(text.split())


# ---- position consistency ----------------------------------------------------------------


def judged_pairs(*, run: MetricRun, outputs) -> list[tuple[int, int, float, float]]:
    """Pairwise mode: (output, opponent, preference, swapped) of every pair of two of `outputs` the judge compared,
    each pair once, read from the entry of its output that comes first in the judge's plan order.
    The judge stores per output `pairs` [{opponent, preference, swapped}]: `opponent` is the other
    output's index among the item's outputs in plan order (item position, system name, output id),
    `preference` P(this output is better | shown first), `swapped` the same shown second."""
    by_item: dict[int, list[tuple[int, dict]]] = defaultdict(list)
    # The database orders as the judge's plan did (metrics.services.inputs: same keys, same collation).
    for o, item, extra in (
        OutputScore.objects.filter(run=run)
        .order_by("output__item__position", "output__item_id", "output__system__name", "output_id")
        .values_list("output_id", "output__item_id", "extra")
    ):
        by_item[item].append((o, extra))
    out = []
    for members in by_item.values():
        ids = [o for o, _ in members]
        for k, (o, extra) in enumerate(members):
            if o not in outputs or not isinstance(extra, dict) or not isinstance(extra.get("pairs"), list):
                continue
            for e in extra["pairs"]:
                other = e.get("opponent") if isinstance(e, dict) else None
                if (
                    isinstance(other, bool)
                    or not isinstance(other, int)
                    or not k < other < len(ids)
                    or ids[other] not in outputs
                ):
                    continue
                preference, swapped = _num(e.get("preference")), _num(e.get("swapped"))
                if preference is not None and swapped is not None:
                    out.append((o, ids[other], preference, swapped))
    return out


def pair_preferences(*, run: MetricRun, outputs) -> dict[tuple[int, int], float]:
    """Pairwise mode: P(x is better than y), both orders averaged, keyed (x, y) and (y, x): the
    judge's own verdict on that pair (its per-output score averages over all the item's opponents)."""
    out = {}
    for o, other, preference, swapped in judged_pairs(run=run, outputs=outputs):
        out[(o, other)] = (preference + swapped) / 2
        out[(other, o)] = 1 - out[(o, other)]
    return out


def position_consistency(*, run: MetricRun, outputs) -> dict | None:
    """Pairwise mode: the share of pairs whose preference flips when the order is swapped: as the
    judge defines it, a pair flips when (preference > .5) != (swapped > .5) (the same answer from
    either output's entry). The first position's share of wins tells which way an inconsistent
    judge leans. None for runs of other modes (no `pairs`)."""
    if (run.options or {}).get("mode") != "pairwise":
        return None
    pairs = judged_pairs(run=run, outputs=outputs)
    if not pairs:
        return None
    flips = sum((s > 0.5) != (w > 0.5) for _, _, s, w in pairs)
    # As shown first the output wins when s > 0.5; as shown second the first (the other) wins when w < 0.5.
    first_wins = sum((s > 0.5) + (w < 0.5) for _, _, s, w in pairs)
    return {
        "pairs": len(pairs),
        "flipped": flips,
        "flip_rate": flips / len(pairs),
        "consistency": 1 - flips / len(pairs),
        "first_position_wins": first_wins / (2 * len(pairs)),
        "definition": "share of pairs whose preference (probability > 0.5) flips when the two outputs "
        "are shown in the other order",
    }


# ---- length bias -----------------------------------------------------------------------------


def length_bias(*, texts: dict[int, str], judge: dict[int, float | None], human: dict[int, float]) -> dict:
    """Correlation of the judge's score with the output's length in words, next to the same
    correlation for the humans' scores, over the outputs both scored."""
    used = sorted(o for o in human if _num(judge.get(o)) is not None and o in texts)
    lengths = [words(texts[o]) for o in used]
    return {
        "unit": "words (white-space separated)",
        "outputs": len(used),
        "judge": _corr(lengths, [judge[o] for o in used]),
        "humans": _corr(lengths, [human[o] for o in used]),
    }


# ---- self-preference --------------------------------------------------------------------------


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def judge_model_names(run: MetricRun) -> list[str]:
    """What names the judge's model: the basename of its `model` directory and the
    `_name_or_path` / `name_or_path` its config.json records (read when the directory is here)."""
    model = str((run.options or {}).get("model") or "").rstrip("/\\")
    names = []
    if model:
        names.append(Path(model).name)
        config = Path(model) / "config.json"
        try:
            data = json.loads(config.read_text()) if config.is_file() else {}
        except (OSError, ValueError):
            data = {}
        for key in ("_name_or_path", "name_or_path"):
            value = data.get(key) if isinstance(data, dict) else None
            if isinstance(value, str) and value.strip():
                names.append(Path(value.rstrip("/")).name)
    return sorted({n for n in names if len(_norm(n)) >= 3})


def system_metadata(*, dataset) -> dict[str, list[str]]:
    """A system's metadata: its name and every string in the items' `meta.systems.<system>`
    (e.g. `{"model": "Llama-3.1-8B-Instruct"}`) in the dataset JSONL."""
    found: dict[str, set[str]] = defaultdict(set)
    for meta in Item.objects.filter(dataset=dataset, meta__has_key="systems").values_list("meta", flat=True):
        for system, info in (meta.get("systems") or {}).items() if isinstance(meta.get("systems"), dict) else ():
            stack = [info]
            while stack:
                v = stack.pop()
                if isinstance(v, str):
                    found[system].add(v)
                elif isinstance(v, dict):
                    stack.extend(v.values())
                elif isinstance(v, list):
                    stack.extend(v)
    return {s: sorted(v) for s, v in found.items()}


def self_preference(
    *, run: MetricRun, systems: list[str], judge_ranks: dict[str, int], human_ranks: dict[str, int]
) -> dict:
    """Systems whose metadata (or name) names the judge's model: a judge tends to prefer its own
    outputs, so their ranks by the judge and by the humans are shown side by side."""
    names = judge_model_names(run)
    meta = system_metadata(dataset=run.dataset)
    warnings = []
    for s in systems:
        for value in [s, *meta.get(s, [])]:
            hit = next(
                (n for n in names if _norm(n) in _norm(value) or (len(_norm(value)) >= 3 and _norm(value) in _norm(n))),
                None,
            )
            if hit:
                warnings.append(
                    {
                        "system": s,
                        "matched": value,
                        "judge_model": hit,
                        "judge_rank": judge_ranks.get(s),
                        "human_rank": human_ranks.get(s),
                    }
                )
                break
    return {"judge_model": names, "warnings": warnings}


def _ranks(values: dict[str, list[float]], higher_is_better: bool = True) -> dict[str, int]:
    means = {s: float(np.mean(v)) for s, v in values.items() if v}
    order = sorted(means, key=lambda s: (-means[s] if higher_is_better else means[s], s))
    return {s: k + 1 for k, s in enumerate(order)}


# ---- stability across seeds ------------------------------------------------------------------


def _sampling(options: dict) -> bool:
    """The judge samples only in spans mode with `temperature` > 0 (score and pairwise read
    probabilities: their seed changes nothing)."""
    try:
        return options.get("mode") == "spans" and float(options.get("temperature") or 0) > 0
    except (TypeError, ValueError):
        return False


def seed_stability(run: MetricRun) -> dict | None:
    """Another done judge run on the dataset that differs only in `seed`: the two runs'
    correlation over the outputs both scored (None when there is none)."""
    mine = {k: v for k, v in (run.options or {}).items() if k not in SPEED_OPTIONS}
    for other in latest_done_runs(dataset=run.dataset).filter(metric=run.metric).exclude(pk=run.pk).order_by("pk"):
        options = other.options or {}
        if {k: v for k, v in options.items() if k not in SPEED_OPTIONS} != mine:
            continue
        if options.get("seed") == (run.options or {}).get("seed"):
            continue
        a, b = scores_by_output(run=run), scores_by_output(run=other)
        used = sorted(o for o in a if _num(a[o]) is not None and _num(b.get(o)) is not None)
        return {
            "other_run": other.pk,
            "seeds": [(run.options or {}).get("seed"), options.get("seed")],
            "sampling": _sampling(run.options or {}),
            **_corr([a[o] for o in used], [b[o] for o in used]),
        }
    return None


# ---- all probes of one run --------------------------------------------------------------------


def judge_probes(*, campaign, run: MetricRun, j: report.Loaded, criterion: str, normalize: str = "none") -> dict:
    outputs = output_index(campaign=campaign)
    judge = {o: v for o, v in scores_by_output(run=run).items() if o in outputs}
    human = {o: v for o, v in report.human_output_scores(j, criterion, normalize=normalize).items() if o in outputs}
    texts = dict(Output.objects.filter(pk__in=list(human)).values_list("pk", "text"))
    by_system_judge, by_system_human = defaultdict(list), defaultdict(list)
    for o, v in judge.items():
        if _num(v) is not None:
            by_system_judge[outputs[o]["system"]].append(v)
    for o, v in human.items():
        by_system_human[outputs[o]["system"]].append(v)
    systems = sorted({info["system"] for info in outputs.values()})
    return {
        "run": run.pk,
        "criterion": criterion,
        "position": position_consistency(run=run, outputs=outputs),
        "length": length_bias(texts=texts, judge=judge, human=human),
        "self_preference": self_preference(
            run=run,
            systems=systems,
            judge_ranks=_ranks(by_system_judge, run.higher_is_better),
            human_ranks=_ranks(by_system_human),
        ),
        "seeds": seed_stability(run),
    }


# ---- the alternative annotator test ----------------------------------------------------------


def parse_scale(value) -> tuple[float, float] | None:
    """A judge's `scale` option ("0-100", "1-5") as (low, high); None when absent or unreadable."""
    m = re.fullmatch(r"\s*(-?\d+(?:\.\d+)?)\s*-\s*(-?\d+(?:\.\d+)?)\s*", str(value or ""))
    if not m or float(m.group(1)) >= float(m.group(2)):
        return None
    return float(m.group(1)), float(m.group(2))


def alt_test_report(
    *,
    campaign,
    run: MetricRun,
    j: report.Loaded,
    criterion: str,
    epsilon: float = 0.2,
    scoring: str | None = None,
    q_fdr: float = 0.05,
    min_instances: int = 30,
    min_humans: int = 2,
) -> dict:
    """The alt-test of one run on one criterion. Scored protocols: an instance is an output, the
    human annotation an annotator's score, the judge's its score mapped linearly from its own
    `scale` option to the criterion's scale (rounded to the scale's points for accuracy);
    default scoring negative RMSE. Pair protocols: an instance is a pair, the annotation
    the winner (a, b or tie), the judge's its verdict on that pair (pairwise mode: P(a better),
    both orders averaged, above / below / at 0.5) or else the output it scores better; scoring
    accuracy."""
    protocol = j.protocol
    rows = j.rows.get(criterion, [])
    raw = j.names()
    # Two annotators may share a name (an account and an imported worker): keep them apart.
    taken = defaultdict(int)
    for n in raw.values():
        taken[n] += 1
    names = {a: n if taken[n] == 1 else f"{n} (#{a})" for a, n in raw.items()}
    metric = scores_by_output(run=run)
    sign = 1.0 if run.higher_is_better else -1.0
    humans: dict[str, dict] = defaultdict(dict)
    judge: dict = {}
    if protocol.per_output and protocol.scored:
        if (run.options or {}).get("mode") == "pairwise":
            raise report.AnalysisError(
                "a pairwise-mode judge gives preferences, not scores on the criterion's "
                "scale: run the alt-test with a score-mode run"
            )
        scoring = scoring or "neg_rmse"
        low, high = campaign.criterion_scale(criterion)
        own = parse_scale((run.options or {}).get("scale"))
        if own and (low is None or high is None):
            # MQM's score has no fixed range (minus the weighted errors): a judge's own scale cannot
            # be mapped onto it. A spans-mode judge scores as minus weighted errors, comparable as is.
            raise report.AnalysisError(
                f"the criterion {criterion!r} has no fixed scale ({protocol.label}: the score is computed "
                f"from the errors), so the judge's {own[0]:g}-{own[1]:g} scores cannot be mapped onto the "
                "annotators'; run the alt-test with a spans-mode judge, whose score is minus its weighted errors"
            )
        for r in rows:
            if r.score is not None:
                humans[names.get(r.annotator_id, str(r.annotator_id))][r.output_id] = float(r.score)
        for o, v in metric.items():
            if _num(v) is None:
                continue
            if own and (own != (low, high)) and low is not None and high is not None:
                v = low + (v - own[0]) * (high - low) / (own[1] - own[0])
            judge[o] = float(round(v)) if scoring == "accuracy" else float(v)
        mapped = f"{own[0]:g}-{own[1]:g} mapped linearly to {low:g}-{high:g}" if own and own != (low, high) else None
    elif protocol.correlate_as_pair_agreement:
        scoring = scoring or "accuracy"
        for r in rows:
            humans[names.get(r.annotator_id, str(r.annotator_id))][(r.item_id, r.a_id, r.b_id)] = r.winner
        # A pairwise-mode judge's verdict on the pair itself; other judges: their two outputs' scores.
        direct = (
            pair_preferences(run=run, outputs=output_index(campaign=campaign))
            if (run.options or {}).get("mode") == "pairwise"
            else {}
        )
        for _i, a, b in {k for answers in humans.values() for k in answers}:
            ma, mb = _num(metric.get(a)), _num(metric.get(b))
            if (a, b) in direct:
                p = direct[(a, b)]
                judge[(_i, a, b)] = "a" if p > 0.5 else "b" if p < 0.5 else "tie"
            elif ma is not None and mb is not None:
                judge[(_i, a, b)] = "a" if sign * ma > sign * mb else "b" if sign * ma < sign * mb else "tie"
        mapped = None
    else:
        raise report.AnalysisError(
            f"the alt-test needs per-output scores or pairs; the {protocol.label} protocol has neither"
        )
    if scoring not in at.SCORINGS:
        raise report.AnalysisError(f"--alt-scoring must be one of {', '.join(at.SCORINGS)}")
    if scoring == "neg_rmse" and not protocol.scored:
        raise report.AnalysisError("--alt-scoring neg_rmse needs scores; pairs are labels (use accuracy)")
    result = at.alt_test(
        judge, humans, scoring=scoring, epsilon=epsilon, q_fdr=q_fdr, min_humans=min_humans, min_instances=min_instances
    )
    result["judge_scale"] = mapped
    result["annotators"] = dict(sorted(result["annotators"].items()))
    return result
