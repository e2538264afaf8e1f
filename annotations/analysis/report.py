"""Agreement, rankings and metric-human figures for one campaign: the commands, API and pages call these."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from annotations.analysis import agreement as ag
from annotations.analysis import correlation as co
from annotations.analysis import spans as sp
from annotations.analysis import systems as sy
from annotations.analysis.metric_scores import latest_done_runs, run_for_metric, scores_by_output, system_scores
from annotations.analysis.selectors import output_identities, output_index
from annotations.models import Campaign, Output
from annotations.protocols.rows import JudgementRow
from annotations.selectors.judgements import INCLUDED, JudgementSet, campaign_judgements
from workbench.exceptions import DomainError

GROUP_BY = {"none": "none", "item": "item", "system": "sys"}


class AnalysisError(DomainError, ValueError):
    """Bad input for an analysis (unknown criterion, no metric run...): one clear line."""


@dataclass
class Loaded:
    """A campaign's counted judgements, read once by the one reader and grouped by criterion."""

    judgements: JudgementSet
    rows: dict[str, list[JudgementRow]]

    @property
    def protocol(self):
        return self.judgements.protocol

    @property
    def campaign(self) -> Campaign:
        return self.judgements.campaign

    def describe(self) -> dict:
        return self.judgements.describe(sum(len(r) for r in self.rows.values()))

    def names(self) -> dict[int, str]:
        return self.judgements.annotator_names({r.annotator_id for rows in self.rows.values() for r in rows})


def load(*, campaign: Campaign, annotators: str = INCLUDED, criterion: str | None = None,
         systems: list[str] | None = None) -> Loaded:
    found = campaign_judgements(campaign=campaign, annotators=annotators, criterion=criterion, systems=systems)
    return Loaded(judgements=found, rows=found.by_criterion())


def _criteria(j: Loaded, criterion: str | None) -> list[str]:
    if criterion:
        if criterion not in j.campaign.criteria and criterion not in j.rows:
            raise AnalysisError(f"criterion {criterion!r} is not one of the campaign's: "
                                f"{', '.join(j.campaign.criteria) or 'none'}")
        return [criterion]
    return list(j.rows)


def agreement_report(*, campaign: Campaign, criterion: str | None = None, annotators: str = INCLUDED,
                     bootstrap: int = 200, seed: int = 0, per_annotator: bool = True,
                     cohen: bool = True) -> dict:
    """Agreement per criterion: the protocol's headline alpha with its label, every level, kappas."""
    if criterion and criterion not in campaign.criteria:
        raise AnalysisError(f"criterion {criterion!r} is not one of the campaign's: "
                            f"{', '.join(campaign.criteria) or 'none'}")
    j = load(campaign=campaign, annotators=annotators, criterion=criterion)
    protocol = j.protocol
    out: dict = {"campaign": campaign.name, "protocol": campaign.protocol, "judgements_used": j.describe(),
                 "definition": {"unit": protocol.agreement.unit, "value": protocol.agreement.value,
                                "variant": protocol.agreement.variant, "level": protocol.agreement.level,
                                "label": protocol.agreement.label()},
                 "criteria": {}}
    names = j.names() if (cohen or per_annotator) else {}
    identity = output_identities(dataset=campaign.dataset)
    for c in _criteria(j, criterion):
        rows = j.rows.get(c, [])
        figures = ag.criterion_agreement(protocol, rows, scale=campaign.criterion_scale(c),
                                         annotators=j.judgements.used, bootstrap=bootstrap, seed=seed,
                                         names=names, cohen=cohen, per_annotator=per_annotator, identity=identity)
        if protocol.per_output:
            figures["per_system"] = _per_system(j, rows, identity)
        if protocol.agreement.variant == "z":
            figures["normalisation"] = f"{protocol.agreement.value}s z-scored per annotator"
        if protocol.has_spans:
            figures["spans"] = span_agreement(rows)
        out["criteria"][c] = figures
    return out


def _per_system(j: Loaded, rows: list[JudgementRow], identity: dict[int, tuple]) -> dict:
    """The headline level of alpha within each system's outputs (same units and values)."""
    systems = dict(Output.objects.filter(pk__in={r.output_id for r in rows}).values_list("pk", "system__name"))
    by_system: dict[str, list] = defaultdict(list)
    for r in rows:
        by_system[systems.get(r.output_id)].append(r)
    level = j.protocol.agreement.level
    out = {}
    for s, mine in sorted(by_system.items(), key=lambda kv: str(kv[0])):
        counts = ag.value_counts(ag.protocol_table(j.protocol, mine, identity))
        out[s] = {f"krippendorff_alpha_{level}": ag._clean(ag.krippendorff_alpha(counts, level)),
                  "n_units": counts.n_units}
    return out


def span_agreement(rows: list[JudgementRow]) -> dict:
    """Character-level span agreement over every output of the campaign judged at least twice."""
    texts = dict(Output.objects.filter(pk__in={r.output_id for r in rows}).values_list("pk", "text"))
    per_output: dict[int, dict] = defaultdict(dict)
    for r in rows:
        spans = [(s["start"], s["end"], s["severity"]) for s in r.spans if not s.get("missing")]
        per_output[r.output_id][r.annotator_id] = sp.char_labels(len(texts.get(r.output_id, "")), spans)
    shared = {o: labels for o, labels in per_output.items() if len(labels) >= 2}
    f1 = sp.pairwise_f1(shared)
    counts = ag.value_counts(ag.Table.from_triples(sp.char_table(shared)))
    out = {**f1, "outputs": len(shared),
           "krippendorff_alpha_chars": {lv: ag._clean(ag.krippendorff_alpha(counts, lv))
                                        for lv in ("nominal", "ordinal")}}
    if any(s.get("category") for r in rows for s in r.spans):
        out["categories"] = _category_agreement(rows, texts, set(shared))
    return out


def _category_agreement(rows: list[JudgementRow], texts: dict[int, str], shared: set[int]) -> dict:
    """MQM: the same character figures on top-level categories instead of severities: F1 where a
    character is shared only when both marked it with the same top-level category, and nominal
    alpha over (output, character) units labelled by that category (0: no error)."""
    codes: dict[str, int] = {}
    per_output: dict[int, dict] = defaultdict(dict)
    for r in sorted(rows, key=lambda r: (r.output_id, r.annotator_id)):
        if r.output_id in shared:
            spans = [(s["start"], s["end"], s.get("category", "")) for s in r.spans if not s.get("missing")]
            per_output[r.output_id][r.annotator_id] = sp.char_categories(len(texts.get(r.output_id, "")), spans,
                                                                         codes)
    counts = ag.value_counts(ag.Table.from_triples(sp.char_table(per_output)))
    return {**sp.pairwise_category_f1(per_output), "level": "top-level category",
            "krippendorff_alpha_chars_nominal": ag._clean(ag.krippendorff_alpha(counts, "nominal"))}


# ---- human scores per output and per system ----------------------------------

def human_output_scores(j: Loaded, criterion: str, *, normalize: str = "none") -> dict[int, float]:
    """Segment-level human score of each output: the protocol's definition (mean rating,
    win rate, best-worst count)."""
    return j.protocol.output_scores(j.rows.get(criterion, []), normalize=normalize)


def ranking_report(*, campaign: Campaign, criterion: str | None = None, annotators: str = INCLUDED,
                   normalize: str = "none", bootstrap: int = 100, seed: int = 0) -> dict:
    """Human rankings with clusters, and each done metric run's ranking, side by side."""
    j = load(campaign=campaign, annotators=annotators)
    outputs = output_index(campaign=campaign)
    result: dict = {"campaign": campaign.name, "judgements_used": j.describe(), "criteria": {}, "metrics": {},
                    "test": "one-sided Mann-Whitney U (Wilcoxon rank-sum) on per-output scores, p < 0.05; "
                            "a cluster boundary where every system above beats every system below",
                    "bootstrap": {"seed": seed, "reps": bootstrap, "resampled": "items (Bradley-Terry)",
                                  "mean_ci95": "200 resamples of each system's per-output scores, "
                                               "seed + (rank - 1)"}}
    for c in _criteria(j, criterion):
        scores = human_output_scores(j, c, normalize=normalize)
        samples: dict[str, list] = defaultdict(list)
        for o, v in scores.items():
            if o in outputs:
                samples[outputs[o]["system"]].append(v)
        rows = sy.clusters({s: np.array(v) for s, v in samples.items()}, seed=seed)
        if not j.protocol.scored:
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
        # Ranked and shown by the metric's own system score (corpus BLEU, not a mean of sentence
        # BLEU); the clusters' test still compares the systems' per-output scores.
        system = system_scores(run=run)
        missing = system.missing(samples)
        if missing:
            rows = sy.clusters({s: np.array(v) for s, v in samples.items()}, higher_is_better=run.higher_is_better,
                               seed=seed)
            label = f"mean of segment scores (the run stored no system score for {', '.join(sorted(missing))})"
        else:
            rows = sy.clusters({s: np.array(v) for s, v in samples.items()}, higher_is_better=run.higher_is_better,
                               scores=system.scores, seed=seed)
            label = system.label
        for r in rows:
            r["corpus_score"] = system.scores.get(r["system"])
        result["metrics"][f"{run.metric}#{run.pk}"] = {"metric": run.metric, "run": run.pk,
                                                       "signature": run.signature,
                                                       "higher_is_better": run.higher_is_better,
                                                       "score_label": label, "ranking": rows}
    return result


def _wins(j: Loaded, criterion: str, outputs: dict, items: set | None = None) -> list[tuple[str, str]]:
    rows = [r for r in j.rows.get(criterion, []) if items is None or r.item_id in items]
    return j.protocol.wins(rows, {o: info["system"] for o, info in outputs.items()})


def _bradley_terry(j, criterion, outputs, systems, *, bootstrap: int, seed: int) -> dict:
    point = sy.bradley_terry(_wins(j, criterion, outputs), systems)
    # Items in the data's own order (external id), so a seed draws the same items in any database.
    external = {info["item"]: info["item_ext"] for info in outputs.values()}
    items = sorted({r.item_id for r in j.rows.get(criterion, [])}, key=lambda i: (str(external.get(i, "")), i))
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
    external = {outputs[o]["item"]: outputs[o]["item_ext"] for o in used}
    systems = sorted({outputs[o]["system"] for o in outputs})
    # Columns in the data's own order (item external id), never by database id: the bootstrap
    # and PERM-BOTH draw by column, so the same seed gives the same figures in any database.
    items = sorted({outputs[o]["item"] for o in used}, key=lambda i: (str(external[i]), i)) if used else []
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
    j = load(campaign=campaign, annotators=annotators, criterion=criterion)
    base = {"campaign": campaign.name, "metric": run.metric, "run": run.pk, "signature": run.signature,
            "higher_is_better": run.higher_is_better, "criterion": criterion, "judgements_used": j.describe()}
    outputs = output_index(campaign=campaign)
    if j.protocol.correlate_as_pair_agreement:
        return {**base, **pairwise_agreement(j, criterion, scores_by_output(run=run), run.higher_is_better,
                                             min_votes=min_votes, min_consensus=min_consensus)}
    human = human_output_scores(j, criterion, normalize=normalize)
    sign = 1.0 if run.higher_is_better else -1.0
    systems, items, H, M = _matrices(outputs, human, scores_by_output(run=run), sign)
    base.update({"level": level, "method": method, "group_by": group_by, "normalize": normalize})
    if level == "system":
        H_sys, M_sys, used = _system_level(run, systems, H, M, sign)
        res = co.correlate(H_sys, M_sys, method, "none")
        ci = _system_ci(H, M, method, bootstrap, seed)
        base["system_metric_scores"] = used["label"]
        base["system_scores"] = used
        Hc, Mc, avg = H_sys, M_sys, "none"
    else:
        avg = GROUP_BY[group_by]
        res = co.correlate(H, M, method, avg)
        ci = co.bootstrap_ci(H, M, method, avg, reps=bootstrap, seed=seed)
        Hc, Mc = H, M
    out = {**base, "n": res["n"], method: _num(res["value"]), "ci95": [_num(x) for x in ci],
           "groups": res["groups"], "bootstrap": {"reps": bootstrap, "seed": seed, "resampled": "items"}}
    if level == "system":
        # The resamples rank systems by a mean over the drawn items: a corpus score per draw would
        # need every metric's statistics. Said here so the interval is not read as the point's.
        out["bootstrap"]["system_metric_scores"] = "mean of segment scores over the resampled items"
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
                    "delta": test["delta"], "resamples": test["resamples"], "test_seed": seed,
                    "test": "PERM-BOTH (mt-metrics-eval PermutationSigDiff); p_value: METRIC better than METRIC2"})
    return out


def _num(x):
    return None if x is None or not np.isfinite(x) else float(x)


def _system_level(run, systems, H, M, sign):
    """System-level human and metric scores (1 x systems) and what the metric's are: the run's
    system scores (the metric's corpus score, `system_scores`); only when the run has none for
    some system, the mean of segment scores over the judged outputs, labelled so with the reason."""
    human = np.nanmean(np.where(np.isnan(H), np.nan, H), axis=1)
    stored = system_scores(run=run)
    missing = stored.missing(systems)
    if not missing:
        metric = np.array([sign * stored.scores[s] for s in systems])
        used = {"label": stored.label, "aggregate": stored.aggregate,
                "scores": {s: stored.scores[s] for s in systems}, "fallback": None}
        return human.reshape(1, -1), metric.reshape(1, -1), used
    with np.errstate(all="ignore"):
        metric = np.nanmean(np.where(np.isnan(H), np.nan, M), axis=1)
    used = {"label": "mean of segment scores over the judged outputs",
            "aggregate": "mean of segment scores",
            "scores": {s: _num(sign * v) for s, v in zip(systems, metric)},
            "fallback": f"the run stored no {stored.aggregate} for system(s) {', '.join(missing)}"}
    return human.reshape(1, -1), metric.reshape(1, -1), used


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


def pairwise_agreement(j: Loaded, criterion: str, metric: dict[int, float | None], higher_is_better: bool,
                       *, min_votes: int = 1, min_consensus: float = 0.0) -> dict:
    """Share of compared pairs where the metric prefers the output most humans preferred.

    A pair is (item, output a, output b). A tie on either side (equal votes for
    a and b, equal metric scores) counts as disagreement. `min_votes` drops
    pairs with fewer votes (tie votes included); `min_consensus` keeps pairs
    whose majority share (votes for the preferred side / all votes) is at least X.
    """
    votes: dict[tuple, list[int]] = defaultdict(lambda: [0, 0, 0])
    for r in j.rows.get(criterion, []):
        votes[(r.item_id, r.a_id, r.b_id)][{"a": 0, "b": 1, "tie": 2}[r.winner]] += 1
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
