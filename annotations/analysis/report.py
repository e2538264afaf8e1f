"""Agreement, rankings and metric-human figures for one campaign: the commands, API and pages call these."""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from annotations.analysis import agreement as ag
from annotations.analysis import correlation as co
from annotations.analysis import spans as sp
from annotations.analysis import systems as sy
from annotations.analysis.metric_scores import latest_done_runs, run_for_metric, scores_by_output, system_scores
from annotations.analysis.selectors import INCLUDED, Judgements, campaign_judgements, output_index
from annotations.models import Campaign, Output
from workbench.exceptions import DomainError

GROUP_BY = {"none": "none", "item": "item", "system": "sys"}


class AnalysisError(DomainError, ValueError):
    """Bad input for an analysis (unknown criterion, no metric run...): one clear line."""


def _criteria(j: Judgements, criterion: str | None) -> list[str]:
    rows = j.ratings or j.pairs or j.tuples
    col = {"ratings": 4, "pairs": 4, "tuples": 5}["ratings" if j.ratings else "pairs" if j.pairs else "tuples"]
    present = sorted({r[col] for r in rows})
    if criterion:
        if criterion not in j.campaign.criteria and criterion not in present:
            raise AnalysisError(f"criterion {criterion!r} is not one of the campaign's: "
                                f"{', '.join(j.campaign.criteria) or 'none'}")
        return [criterion]
    return [c for c in j.campaign.criteria if c in present] + [c for c in present if c not in j.campaign.criteria]


def _rating_values(j: Judgements, criterion: str) -> list[tuple]:
    """(output, item, system, annotator, value); RankME magnitudes z-scored per annotator first."""
    rows = [r for r in j.ratings if r[4] == criterion]
    if j.protocol == Campaign.Protocol.RANKME and rows:
        annotators = np.array([r[3] for r in rows])
        z = co.zscore_by_annotator(annotators, np.array([r[5] for r in rows], dtype=float))
        return [(r[0], r[1], r[2], r[3], float(v)) for r, v in zip(rows, z)]
    return [(r[0], r[1], r[2], r[3], float(r[5])) for r in rows]


def _agreement_table(j: Judgements, criterion: str) -> tuple[ag.Table, dict[int, str]]:
    if j.ratings:
        triples = [(o, a, v) for o, _i, _s, a, v in _rating_values(j, criterion)]
    elif j.pairs:
        code = {"a": 1.0, "tie": 0.0, "b": -1.0}
        triples = [(f"{oa}-{ob}", a, code[w]) for _i, oa, ob, a, c, w in j.pairs if c == criterion]
    else:
        triples = []
        for _i, outputs, best, worst, a, c in j.tuples:
            if c != criterion:
                continue
            key = "-".join(map(str, sorted(outputs)))
            for o in outputs:
                triples.append((f"{key}:{o}", a, 1.0 if o == best else -1.0 if o == worst else 0.0))
    if not triples:
        return ag.Table.from_triples([]), {}
    units, annotators, values = zip(*triples)
    _, uidx = np.unique(np.asarray([str(u) for u in units]), return_inverse=True)
    ids = np.asarray(annotators, dtype=np.int64)
    return ag.Table(uidx.astype(np.int64), ids, np.asarray(values, dtype=float)), j.annotator_names


def agreement_report(*, campaign: Campaign, criterion: str | None = None, annotators: str = INCLUDED,
                     bootstrap: int = 200, seed: int = 0, per_annotator: bool = True,
                     cohen: bool = True) -> dict:
    if criterion and criterion not in campaign.criteria:
        raise AnalysisError(f"criterion {criterion!r} is not one of the campaign's: "
                            f"{', '.join(campaign.criteria) or 'none'}")
    j = campaign_judgements(campaign=campaign, annotators=annotators)
    out: dict = {"campaign": campaign.name, "protocol": campaign.protocol, "judgements_used": j.describe(),
                 "criteria": {}}
    if not (j.ratings or j.pairs or j.tuples):
        return out
    for c in _criteria(j, criterion):
        table, names = _agreement_table(j, c)
        figures = ag.agreement_figures(table, bootstrap=bootstrap, seed=seed)
        if cohen:
            figures["cohen_kappa"] = ag.cohen_kappas(table, names)
        if per_annotator:
            figures["per_annotator"] = ag.alpha_without_each(table, names)
        if j.ratings:
            figures["per_system"] = _per_system(j, c, seed)
        if j.protocol == Campaign.Protocol.RANKME:
            figures["normalisation"] = "magnitudes z-scored per annotator"
        if j.protocol == Campaign.Protocol.ESA:
            figures["spans"] = span_agreement(j, c)
        out["criteria"][c] = figures
    return out


def _per_system(j: Judgements, criterion: str, seed: int) -> dict:
    rows = _rating_values(j, criterion)
    by_system: dict[str, list] = defaultdict(list)
    for o, _i, s, a, v in rows:
        by_system[s].append((o, a, v))
    out = {}
    for s, triples in sorted(by_system.items()):
        counts = ag.value_counts(ag.Table.from_triples(triples))
        out[s] = {"krippendorff_alpha_interval": ag._clean(ag.krippendorff_alpha(counts, "interval")),
                  "n_units": counts.n_units}
    return out


def span_agreement(j: Judgements, criterion: str) -> dict:
    texts = dict(Output.objects.filter(pk__in={v[0] for v in j.spans.values()}).values_list("pk", "text"))
    per_output: dict[int, dict] = defaultdict(dict)
    for out_id, ann, crit, spans, _missing in j.spans.values():
        if crit == criterion:
            per_output[out_id][ann] = sp.char_labels(len(texts.get(out_id, "")), spans)
    shared = {o: labels for o, labels in per_output.items() if len(labels) >= 2}
    f1 = sp.pairwise_f1(shared)
    counts = ag.value_counts(ag.Table.from_triples(sp.char_table(shared)))
    return {**f1, "outputs": len(shared),
            "krippendorff_alpha_chars": {lv: ag._clean(ag.krippendorff_alpha(counts, lv))
                                         for lv in ("nominal", "ordinal")}}


# ---- human scores per output and per system ----------------------------------

def human_output_scores(j: Judgements, criterion: str, *, normalize: str = "none") -> dict[int, float]:
    """Segment-level human score of each output (see systems.py for the protocols)."""
    if j.ratings:
        rows = _rating_values(j, criterion)
        values = np.array([r[4] for r in rows], dtype=float)
        if normalize == "z" and j.protocol != Campaign.Protocol.RANKME:
            values = co.zscore_by_annotator(np.array([r[3] for r in rows]), values)
        sums: dict[int, list] = defaultdict(list)
        for r, v in zip(rows, values):
            sums[r[0]].append(v)
        return {o: float(np.mean(v)) for o, v in sums.items()}
    if j.pairs:
        return sy.win_rates([(i, oa, ob, w) for i, oa, ob, _a, c, w in j.pairs if c == criterion])
    return sy.best_worst_scores([(o, b, w) for _i, o, b, w, _a, c in j.tuples if c == criterion])


def ranking_report(*, campaign: Campaign, criterion: str | None = None, annotators: str = INCLUDED,
                   normalize: str = "none", bootstrap: int = 100, seed: int = 0) -> dict:
    """Human rankings with clusters, and each done metric run's ranking, side by side."""
    j = campaign_judgements(campaign=campaign, annotators=annotators)
    outputs = output_index(campaign=campaign)
    result: dict = {"campaign": campaign.name, "judgements_used": j.describe(), "criteria": {}, "metrics": {},
                    "test": "one-sided Mann-Whitney U (Wilcoxon rank-sum) on per-output scores, p < 0.05; "
                            "a cluster boundary where every system above beats every system below"}
    if not (j.ratings or j.pairs or j.tuples):
        return result
    for c in _criteria(j, criterion):
        scores = human_output_scores(j, c, normalize=normalize)
        samples: dict[str, list] = defaultdict(list)
        for o, v in scores.items():
            if o in outputs:
                samples[outputs[o]["system"]].append(v)
        rows = sy.clusters({s: np.array(v) for s, v in samples.items()})
        if j.pairs or j.tuples:
            bt = _bradley_terry(j, c, outputs, list(samples), bootstrap=bootstrap, seed=seed)
            for r in rows:
                r["bradley_terry"], r["bradley_terry_ci95"] = bt.get(r["system"], (None, [None, None]))
        result["criteria"][c] = rows
    for run in latest_done_runs(dataset=campaign.dataset):
        seg = scores_by_output(run=run)
        samples = defaultdict(list)
        for o, v in seg.items():
            if o in outputs and v is not None:
                samples[outputs[o]["system"]].append(v)
        rows = sy.clusters({s: np.array(v) for s, v in samples.items()}, higher_is_better=run.higher_is_better)
        corpus = system_scores(run=run)
        for r in rows:
            r["corpus_score"] = corpus.get(r["system"])
        result["metrics"][f"{run.metric}#{run.pk}"] = {"metric": run.metric, "run": run.pk,
                                                       "signature": run.signature,
                                                       "higher_is_better": run.higher_is_better, "ranking": rows}
    return result


def _wins(j: Judgements, criterion: str, outputs: dict, items: set | None = None) -> list[tuple[str, str]]:
    wins = []
    if j.pairs:
        for i, oa, ob, _a, c, w in j.pairs:
            if c != criterion or (items is not None and i not in items) or w == "tie":
                continue
            if oa in outputs and ob in outputs:
                win, lose = (oa, ob) if w == "a" else (ob, oa)
                wins.append((outputs[win]["system"], outputs[lose]["system"]))
    else:
        for i, outs, best, worst, _a, c in j.tuples:
            if c != criterion or (items is not None and i not in items):
                continue
            names = {o: outputs[o]["system"] for o in outs if o in outputs}
            for o in names:
                if o != best:
                    wins.append((names.get(best), names[o]))
                if o != worst:
                    wins.append((names[o], names.get(worst)))
    return [(a, b) for a, b in wins if a and b]


def _bradley_terry(j, criterion, outputs, systems, *, bootstrap: int, seed: int) -> dict:
    point = sy.bradley_terry(_wins(j, criterion, outputs), systems)
    items = sorted({r[0] for r in (j.pairs or j.tuples)})
    rng = np.random.default_rng(seed)
    samples = defaultdict(list)
    if len(items) >= 2:
        # Resample items; repeated items count once more each (expand the wins).
        by_item = defaultdict(list)
        for it in items:
            by_item[it] = _wins(j, criterion, outputs, {it})
        for _ in range(bootstrap):
            pick = rng.integers(0, len(items), len(items))
            wins = [w for k in pick for w in by_item[items[k]]]
            for s, v in sy.bradley_terry(wins, systems).items():
                samples[s].append(v)
    out = {}
    for s in systems:
        ci = [float(x) for x in np.percentile(samples[s], [2.5, 97.5])] if len(samples[s]) > 1 else [None, None]
        out[s] = (point.get(s), ci)
    return out


# ---- metric vs human ----------------------------------------------------------

def _matrices(outputs: dict, human: dict[int, float], metric: dict[int, float | None], sign: float):
    """systems x items matrices over the items with a human score (NaN where missing)."""
    used = [o for o in human if o in outputs]
    systems = sorted({outputs[o]["system"] for o in outputs})
    items = sorted({outputs[o]["item"] for o in used})
    si = {s: k for k, s in enumerate(systems)}
    ii = {i: k for k, i in enumerate(items)}
    H = np.full((len(systems), len(items)), np.nan)
    M = np.full((len(systems), len(items)), np.nan)
    for o, info in outputs.items():
        if info["item"] not in ii:
            continue
        r, c = si[info["system"]], ii[info["item"]]
        if o in human:
            H[r, c] = human[o]
        v = metric.get(o)
        if v is not None and np.isfinite(v):
            M[r, c] = sign * v
    return systems, items, H, M


def correlate_report(*, campaign: Campaign, metric: str, criterion: str, level: str = "segment",
                     method: str = "pearson", group_by: str = "none", normalize: str = "none",
                     min_votes: int = 1, min_consensus: float = 0.0, compare: str | None = None,
                     annotators: str = INCLUDED, bootstrap: int = 200, seed: int = 0) -> dict:
    if method not in co.METHODS:
        raise AnalysisError(f"--method must be one of {', '.join(co.METHODS)}")
    if group_by not in GROUP_BY:
        raise AnalysisError("--group-by must be none, item or system")
    if level not in ("segment", "system"):
        raise AnalysisError("--level must be segment or system")
    run = run_for_metric(dataset=campaign.dataset, metric=metric)
    if run is None:
        raise AnalysisError(f"no done run of metric {metric!r} on dataset {campaign.dataset.name!r} "
                            f"(run `run_metric --dataset {campaign.dataset.name} --metric {metric} --sync` first)")
    if criterion not in campaign.criteria:
        raise AnalysisError(f"criterion {criterion!r} is not one of the campaign's: {', '.join(campaign.criteria)}")
    j = campaign_judgements(campaign=campaign, annotators=annotators, criterion=criterion)
    base = {"campaign": campaign.name, "metric": run.metric, "run": run.pk, "signature": run.signature,
            "higher_is_better": run.higher_is_better, "criterion": criterion, "judgements_used": j.describe()}
    outputs = output_index(campaign=campaign)
    if campaign.protocol == Campaign.Protocol.PAIRWISE:
        return {**base, **pairwise_agreement(j, criterion, scores_by_output(run=run), run.higher_is_better,
                                             min_votes=min_votes, min_consensus=min_consensus)}
    human = human_output_scores(j, criterion, normalize=normalize)
    sign = 1.0 if run.higher_is_better else -1.0
    systems, items, H, M = _matrices(outputs, human, scores_by_output(run=run), sign)
    base.update({"level": level, "method": method, "group_by": group_by, "normalize": normalize})
    if level == "system":
        H_sys, M_sys, source = _system_level(run, systems, H, M, sign)
        res = co.correlate(H_sys, M_sys, method, "none")
        ci = _system_ci(H, M, method, bootstrap, seed)
        base["system_metric_scores"] = source
        Hc, Mc, avg = H_sys, M_sys, "none"
    else:
        avg = GROUP_BY[group_by]
        res = co.correlate(H, M, method, avg)
        ci = co.bootstrap_ci(H, M, method, avg, reps=bootstrap, seed=seed)
        Hc, Mc = H, M
    out = {**base, "n": res["n"], method: _num(res["value"]), "ci95": [_num(x) for x in ci],
           "groups": res["groups"], "bootstrap": {"reps": bootstrap, "seed": seed, "resampled": "items"}}
    if method == "acc23":
        out["epsilon"] = res["epsilon"]
        if "sample_rate" in res:
            out["sample_rate"] = res["sample_rate"]
    if compare:
        run2 = run_for_metric(dataset=campaign.dataset, metric=compare)
        if run2 is None:
            raise AnalysisError(f"no done run of metric {compare!r} on dataset {campaign.dataset.name!r}")
        sign2 = 1.0 if run2.higher_is_better else -1.0
        _, _, _, M2 = _matrices(outputs, human, scores_by_output(run=run2), sign2)
        if level == "system":
            M2c = _system_level(run2, systems, H, M2, sign2)[1]
        else:
            M2c = M2
        # PermutationSigDiff(corr(METRIC2), corr(METRIC)): p that METRIC correlates better than METRIC2.
        test = co.perm_both(Hc, M2c, Mc, method, avg, seed=seed)
        out.update({"compare": run2.metric, "compare_run": run2.pk, "p_value": test["p_value"],
                    "delta": test["delta"], "resamples": test["resamples"],
                    "test": "PERM-BOTH (mt-metrics-eval PermutationSigDiff); p_value: METRIC better than METRIC2"})
    return out


def _num(x):
    return None if x is None or not np.isfinite(x) else float(x)


def _system_level(run, systems, H, M, sign):
    human = np.nanmean(np.where(np.isnan(H), np.nan, H), axis=1)
    corpus = system_scores(run=run)
    if corpus and all(s in corpus for s in systems):
        metric = np.array([sign * corpus[s] for s in systems])
        return human.reshape(1, -1), metric.reshape(1, -1), "corpus score of each system"
    with np.errstate(all="ignore"):
        metric = np.nanmean(np.where(np.isnan(H), np.nan, M), axis=1)
    return human.reshape(1, -1), metric.reshape(1, -1), "mean of segment scores over the judged outputs"


def _system_ci(H, M, method, reps, seed):
    n = H.shape[1]
    if n < 3 or H.shape[0] < 3:
        return [None, None]
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(reps):
        pick = rng.integers(0, n, n)
        h, m = H[:, pick], M[:, pick]
        with np.errstate(all="ignore"), __import__("warnings").catch_warnings():
            __import__("warnings").simplefilter("ignore")
            hs = np.nanmean(h, axis=1)
            ms = np.nanmean(np.where(np.isnan(h), np.nan, m), axis=1)
        v = co.correlate(hs, ms, method, "none")["value"]
        if np.isfinite(v):
            values.append(v)
    if len(values) < 2:
        return [None, None]
    return [float(x) for x in np.percentile(values, [2.5, 97.5])]


def pairwise_agreement(j: Judgements, criterion: str, metric: dict[int, float | None], higher_is_better: bool,
                       *, min_votes: int = 1, min_consensus: float = 0.0) -> dict:
    """Share of compared pairs where the metric prefers the output most humans preferred.

    A pair is (item, output a, output b). A tie on either side (equal votes for
    a and b, equal metric scores) counts as disagreement. `min_votes` drops
    pairs with fewer votes (tie votes included); `min_consensus` keeps pairs
    whose majority share (votes for the preferred side / all votes) is at least X.
    """
    votes: dict[tuple, list[int]] = defaultdict(lambda: [0, 0, 0])
    for i, oa, ob, _a, c, w in j.pairs:
        if c == criterion:
            votes[(i, oa, ob)][{"a": 0, "b": 1, "tie": 2}[w]] += 1
    sign = 1.0 if higher_is_better else -1.0
    agree = compared = skipped_no_score = 0
    for (_i, oa, ob), (va, vb, vt) in votes.items():
        total = va + vb + vt
        if total < min_votes or max(va, vb) / total < min_consensus:
            continue
        ma, mb = metric.get(oa), metric.get(ob)
        if ma is None or mb is None:
            skipped_no_score += 1
            continue
        compared += 1
        human = (va > vb) - (va < vb)
        machine = (sign * ma > sign * mb) - (sign * ma < sign * mb)
        if human != 0 and human == machine:
            agree += 1
    return {"n": compared, "agreement": agree / compared if compared else None, "min_votes": min_votes,
            "min_consensus": min_consensus, "pairs": len(votes), "skipped_without_metric_score": skipped_no_score}
