"""What the analysis pages show, computed from the readers and the pure modules, and cached.

Cached through `annotations.selectors.figures_cache` (its key follows the newest judgement,
run and quality decision).
"""

from __future__ import annotations

import math
from array import array
from collections import defaultdict

from django.db.models import Exists, OuterRef
from django.urls import reverse

from annotations import protocols
from annotations.analysis import correlation as co, error_free as ef, judges, report, span_eval as se
from annotations.analysis.metric_scores import extras_by_output, latest_done_runs, scores_by_output, scores_of_outputs
from annotations.models import (
    Campaign,
    Item,
    Output,
    Reference,
    System,
)
from annotations.selectors.documents import item_place, item_places
from annotations.selectors.figures_cache import cached
from annotations.selectors.judgements import INCLUDED, campaign_judgements
from annotations.selectors.outputs import output_index
from workbench.lazy import lazy_module

# numpy is imported on first use, not by every web worker at start-up (workbench.lazy, issue 45).
np = lazy_module("numpy")
# factgenie's gamma brings numpy and scipy.optimize: loaded by the first gamma asked for.
ga = lazy_module("annotations.analysis.gamma")


def item_url(item_id: int) -> str:
    return reverse("item-detail", args=[item_id])


def with_places(rows: list[dict], *, item_key: str = "item_id") -> list[dict]:
    """Each row (one output of an item) with its item's `place` (issue 41: document, position and
    media kinds; None without either), read in one statement for the whole page, never per row."""
    places = item_places(item_ids={r[item_key] for r in rows}) if rows else {}
    for r in rows:
        r["place"] = places.get(r[item_key])
    return rows


def runs_info(campaign: Campaign) -> list[dict]:
    return [
        {
            "id": r.pk,
            "metric": r.metric,
            "signature": r.signature,
            "higher_is_better": r.higher_is_better,
            "label": f"{r.metric} (run {r.pk})",
        }
        for r in latest_done_runs(dataset=campaign.dataset)
    ]


def _filter_outputs(outputs: dict, systems: list[str] | None) -> dict:
    return {o: v for o, v in outputs.items() if not systems or v["system"] in systems}


# ---- dashboard ---------------------------------------------------------------

# The dashboard's agreement intervals: resamples of units and the seed, both shown on the page.
DASHBOARD_REPS, DASHBOARD_SEED = 100, 0


def dashboard_agreement(campaign: Campaign, *, criterion: str | None, annotators: str = INCLUDED) -> dict:
    """The dashboard's agreement figures (`report.agreement_report` without per-annotator figures)."""
    return cached(
        campaign,
        "agreement",
        {"c": criterion, "a": annotators},
        lambda: report.agreement_report(
            campaign=campaign,
            criterion=criterion,
            annotators=annotators,
            bootstrap=DASHBOARD_REPS,
            seed=DASHBOARD_SEED,
            per_annotator=False,
            cohen=False,
        ),
    )


# ---- scatter -----------------------------------------------------------------


def scatter(
    campaign: Campaign,
    *,
    run_id: int,
    criterion: str,
    annotators: str = INCLUDED,
    systems: list[str] | None = None,
    normalize: str = "none",
) -> dict:
    def compute():
        run = latest_done_runs(dataset=campaign.dataset).get(pk=run_id)
        j = report.load(campaign=campaign, annotators=annotators, criterion=criterion)
        human = report.human_output_scores(j, criterion, normalize=normalize)
        metric = scores_by_output(run=run)
        outputs = _filter_outputs(output_index(campaign=campaign), systems)
        points = []
        for o, h in human.items():
            if o not in outputs or metric.get(o) is None:
                continue
            info = outputs[o]
            points.append(
                {
                    "output": o,
                    "item": info["item_ext"],
                    "item_id": info["item"],
                    "system": info["system"],
                    "metric": metric[o],
                    "human": h,
                    "url": item_url(info["item"]),
                }
            )
        points.sort(key=lambda p: (p["system"], p["item"]))
        with_places(points)  # the table's document and media markers, as the other item lists
        r = co.correlate(
            np.array([p["human"] for p in points]),
            np.array([p["metric"] for p in points]) * (1 if run.higher_is_better else -1),
            "pearson",
        )
        return {
            "metric": run.metric,
            "run": run.pk,
            "signature": run.signature,
            "higher_is_better": run.higher_is_better,
            "criterion": criterion,
            "points": points,
            "pearson": None if not np.isfinite(r["value"]) else r["value"],
            "used": j.describe(),
        }

    return cached(
        campaign, "scatter", {"run": run_id, "c": criterion, "a": annotators, "s": systems, "z": normalize}, compute
    )


# ---- rankings ----------------------------------------------------------------


def rankings(
    campaign: Campaign,
    *,
    criterion: str | None,
    annotators: str = INCLUDED,
    systems: list[str] | None = None,
    rule: str = "wmt25",
    alpha: float = 0.05,
    resamples: int = 100,
    seed: int = 0,
) -> dict:
    """Rankings recomputed on the chosen systems (ranks from 1, ranges and clusters among them
    only), as the meta-evaluation's system filter does; never rows hidden from a ranking of all."""

    def compute():
        return report.ranking_report(
            campaign=campaign,
            criterion=criterion,
            annotators=annotators,
            systems=systems,
            rule=rule,
            alpha=alpha,
            resamples=resamples,
            rule_seed=seed,
        )

    return cached(
        campaign,
        "rankings",
        {"c": criterion, "a": annotators, "s": systems, "r": rule, "al": alpha, "n": resamples, "seed": seed},
        compute,
    )


# ---- meta-evaluation table -----------------------------------------------------

# PERM-BOTH resamples behind the clusters of the page's SPA column (`correlate --compare-all`
# runs 1000 by default); few enough that the page answers in seconds on a large campaign.
META_CLUSTER_RESAMPLES = 200
# Multiply-adds the page may spend on them (metric pairs x resamples x 2 SPA computations x
# permutations x systems x items); above it the page says to run `correlate --compare-all`.
META_CLUSTER_BUDGET = 5e10


def meta_table(
    campaign: Campaign, *, annotators: str = INCLUDED, systems: list[str] | None = None, normalize: str = "none"
) -> dict:
    """Every done run x every criterion x every method; the best value per column marked; the
    metrics' significance clusters on the SPA column; a second wave as a human row."""

    def compute():
        j = report.load(campaign=campaign, annotators=annotators)
        criteria = [c for c in campaign.criteria]
        outputs = _filter_outputs(output_index(campaign=campaign), systems)
        runs = list(latest_done_runs(dataset=campaign.dataset))
        pairwise = j.protocol.correlate_as_pair_agreement
        columns = []
        for c in criteria:
            if pairwise:
                columns.append({"criterion": c, "method": "agreement", "level": "pairs", "group_by": "none"})
                continue
            for method in co.METHODS:
                columns.append({"criterion": c, "method": method, "level": "segment", "group_by": "none"})
            columns.append({"criterion": c, "method": "pdp", "level": "segment", "group_by": "item"})
            columns.append({"criterion": c, "method": "pearson", "level": "system", "group_by": "none"})
            columns.append({"criterion": c, "method": "spa", "level": "system", "group_by": "none"})
        humans = {c: report.human_output_scores(j, c, normalize=normalize) for c in criteria} if not pairwise else {}
        stats = {
            id(col): report._Statistic(col["method"], col["level"], col["group_by"]) for col in columns if not pairwise
        }
        rows = []
        for run in runs:
            metric = scores_by_output(run=run)
            sign = 1.0 if run.higher_is_better else -1.0
            cells = []
            matrices: dict[str, tuple] = {}  # per criterion: the same for each of its columns
            for col in columns:
                c = col["criterion"]
                if pairwise:
                    res = report.pairwise_agreement(j, c, metric, run.higher_is_better)
                    cells.append({"value": res["agreement"], "n": res["n"]})
                    continue
                if c not in matrices:
                    human = {o: v for o, v in humans[c].items() if o in outputs}
                    matrices[c] = report._matrices(outputs, human, metric, sign)
                syss, _items, H, M = matrices[c]
                cells.append(_cell(stats[id(col)], run, syss, H, M, sign))
            rows.append(
                {
                    "run": run.pk,
                    "metric": run.metric,
                    "signature": run.signature,
                    "higher_is_better": run.higher_is_better,
                    "cells": cells,
                }
            )
        waves = _wave_row(campaign, j, columns, stats, humans, outputs, annotators, normalize) if not pairwise else None
        for k in range(len(columns)):
            values = [r["cells"][k]["value"] for r in rows if r["cells"][k]["value"] is not None]
            best = max(values) if values else None
            for r in rows:
                r["cells"][k]["best"] = best is not None and r["cells"][k]["value"] == best
        clusters = {}
        n_sys = len({v["system"] for v in outputs.values()})
        n_items = len({v["item"] for v in outputs.values()})
        cost = len(runs) * (len(runs) - 1) / 2 * META_CLUSTER_RESAMPLES * 2 * co.SPA_PERMUTATIONS * n_sys * n_items
        skipped = None
        if cost > META_CLUSTER_BUDGET:
            skipped = "too many metrics, systems and items to test on this page: run `correlate --compare-all`"
        if not pairwise and len(runs) >= 2 and skipped is None:
            for k, col in enumerate(columns):
                if col["method"] != "spa":
                    continue
                found = report.compare_all_report(
                    campaign=campaign,
                    criterion=col["criterion"],
                    method="spa",
                    normalize=normalize,
                    annotators=annotators,
                    systems=systems,
                    resamples=META_CLUSTER_RESAMPLES,
                    loaded=j,  # read once: a second read held 2 copies of 60,000 rows (issue 46)
                )
                ranks = {m["metric"]: m["rank"] for m in found["metrics"]}
                names = report._run_names(runs)
                for r in rows:
                    r["cells"][k]["cluster"] = ranks.get(names[r["run"]])
                clusters[col["criterion"]] = found["clusters"]
        return {
            "columns": columns,
            "rows": rows,
            "used": j.describe(),
            "waves": waves,
            "clusters": clusters,
            "cluster_test": {
                "resamples": META_CLUSTER_RESAMPLES,
                "seed": 0,
                "threshold": 0.05,
                "skipped": skipped,
                "spa_seed": co.SPA_SEED,
                "spa_permutations": co.SPA_PERMUTATIONS,
            },
        }

    return cached(campaign, "meta", {"a": annotators, "s": systems, "z": normalize}, compute)


def _cell(stat, run, systems, H, M, sign) -> dict:
    Hc, Mc, _ = stat.inputs(run, systems, H, M, sign)
    Hc, Mc = stat.prepare(Hc, Mc)
    res = stat.value(Hc, Mc)
    v = res["value"]
    return {"value": None if not np.isfinite(v) else float(v), "n": res["n"]}


def _wave_row(campaign, j, columns, stats, humans, outputs, annotators, normalize) -> dict | None:
    """The other human wave as a row scored like a metric (the ceiling), and human1 vs human2."""
    other, role = report._other_wave(campaign)
    if other is None:
        return None
    j2 = report.load(campaign=other, annotators=annotators)
    cells = []
    for col in columns:
        c = col["criterion"]
        h2 = report.human_output_scores(j2, c, normalize=normalize)
        human = {o: v for o, v in humans[c].items() if o in outputs}
        syss, _items, H, M = report._matrices(outputs, human, h2, 1.0)
        cells.append(_cell(stats[id(col)], None, syss, H, M, 1.0))
    figures = report.waves_report(campaign=campaign, annotators=annotators)
    return {
        "campaign": other.name,
        "campaign_id": other.pk,
        "role": role,
        "cells": cells,
        "label": f"Human wave 2 ({other.name})" if role == "human2" else f"Human wave 1 ({other.name})",
        "agreement": figures,
    }


def wave_discrepancies(campaign: Campaign, *, annotators: str = INCLUDED, threshold: float = 50.0) -> dict | None:
    """The outputs whose two waves differ by more than `threshold`, each with its item's URL; the
    rows `agreement --json` prints under waves.criteria.<c>.discrepancies."""

    def compute():
        figures = report.waves_report(campaign=campaign, annotators=annotators, threshold=threshold)
        if figures is None:
            return None
        rows = with_places(  # each row's document and media markers, as the other item lists
            [
                {"criterion": c, **r, "url": item_url(r["item"])}
                for c, f in figures["criteria"].items()
                for r in f["discrepancies"]
            ],
            item_key="item",
        )
        return {
            "threshold": threshold,
            "label": figures["discrepancy_label"],
            "human1": figures["human1"],
            "human2": figures["human2"],
            "rows": rows,
        }

    return cached(campaign, "wave-discrepancies", {"a": annotators, "t": threshold}, compute)


# ---- LLM judges: bias probes and the alternative annotator test ------------------------

ALT_EPSILONS = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3)


def judge_panel(
    campaign: Campaign, *, annotators: str = INCLUDED, normalize: str = "none", epsilon: float = 0.2
) -> list[dict]:
    """For each done judge run: its bias probes and, per criterion, the alt-test; the same
    functions `correlate --json` and `correlate --method alt-test` call."""

    def compute():
        runs = [r for r in latest_done_runs(dataset=campaign.dataset) if judges.is_judge(r)]
        if not runs:
            return []
        j = report.load(campaign=campaign, annotators=annotators)
        panel = []
        for run in runs:
            criteria = []
            for c in campaign.criteria:
                probes = judges.judge_probes(campaign=campaign, run=run, j=j, criterion=c, normalize=normalize)
                try:
                    alt = judges.alt_test_report(campaign=campaign, run=run, j=j, criterion=c, epsilon=epsilon)
                    alt_error = None
                except report.AnalysisError as exc:
                    alt, alt_error = None, str(exc)
                criteria.append({"criterion": c, "length": probes["length"], "alt": alt, "alt_error": alt_error})
            first = (
                probes
                if campaign.criteria
                else judges.judge_probes(campaign=campaign, run=run, j=j, criterion="", normalize=normalize)
            )
            panel.append(
                {
                    "run": run.pk,
                    "metric": run.metric,
                    "signature": run.signature,
                    "mode": (run.options or {}).get("mode"),
                    "position": first["position"],
                    "self_preference": first["self_preference"],
                    "seeds": first["seeds"],
                    "criteria": criteria,
                }
            )
        return panel

    return cached(campaign, "judges", {"a": annotators, "z": normalize, "e": epsilon}, compute)


# ---- disagreement inspector ----------------------------------------------------


def pseudonyms(names: dict[int, str]) -> dict[int, str]:
    """A1, A2... in the order of the annotators' names (never of database ids), so the same
    data gives the same labels in any database."""
    return {a: f"A{k + 1}" for k, a in enumerate(sorted(names, key=lambda a: (str(names[a]), a)))}


# Items shown in detail on the disagreement page (the CSV lists them all).
DISAGREEMENT_SHOWN = 30


def disagreement(
    campaign: Campaign,
    *,
    sort: str = "annotators",
    run_id: int | None = None,
    criterion: str | None = None,
    annotators: str = INCLUDED,
    systems: list[str] | None = None,
    limit: int | None = None,
) -> dict:
    """The items ranked by disagreement (a figure over every judgement of the campaign: on a worker for a
    large one, `figure_jobs.FIGURES["disagreement"]`), with the first `limit` items' details read here."""
    params = {"sort": sort, "run": run_id, "c": criterion, "a": annotators, "s": systems}
    data = cached(campaign, "disagreement", params, lambda: disagreement_ranked(campaign, params))
    shown = data["ranked"][: DISAGREEMENT_SHOWN if limit is None else limit]
    # The shown items' judgements in one read through the reader ("complete only", the same annotator
    # inclusion as the figure), never the campaign's.
    by_item = defaultdict(list)
    if shown:
        for r in campaign_judgements(
            campaign=campaign,
            annotators=data.get("annotators", INCLUDED),
            criterion=data["criterion"] or None,
            item_ids=[row["item"] for row in shown],
        ):
            by_item[r.item_id].append(r)
    return {**data, "items": _item_details(campaign, shown, data, systems, by_item)}


class Ranked:
    """The disagreement ranking: per item, in rank order, its id and its annotator and metric
    disagreement (None: not measured), held as three typed arrays.

    The figure a worker stores for a large campaign: the page shows 30 items of it and says how many
    there are, the CSV lists them all. As a list of {"item", ...} dicts, 100,000 items were a 2.4 MB
    pickle that took every view 0.3-0.7 s to fetch and unpickle (bench_pages at 1M, issue 45); arrays
    unpickle as their bytes (milliseconds). Reads like that list: `len`, slices and iteration give
    the same dicts, with the same float values (doubles, NaN standing for None)."""

    __slots__ = ("item_ids", "annotator", "metric")

    def __init__(self, rows: list[dict]):
        self.item_ids = array("q", (row["item"] for row in rows))
        self.annotator = array("d", (_nan(row["annotator_disagreement"]) for row in rows))
        self.metric = array("d", (_nan(row["metric_disagreement"]) for row in rows))

    def __len__(self) -> int:
        return len(self.item_ids)

    def _row(self, k: int) -> dict:
        return {
            "item": self.item_ids[k],
            "annotator_disagreement": _none(self.annotator[k]),
            "metric_disagreement": _none(self.metric[k]),
        }

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self._row(k) for k in range(*index.indices(len(self)))]
        return self._row(range(len(self))[index])

    def __iter__(self):
        return (self._row(k) for k in range(len(self)))

    def __getstate__(self):
        return (self.item_ids, self.annotator, self.metric)

    def __setstate__(self, state):
        self.item_ids, self.annotator, self.metric = state


def _nan(value: float | None) -> float:
    return math.nan if value is None else value


def _none(value: float) -> float | None:
    return None if math.isnan(value) else value


def disagreement_ranked(campaign: Campaign, params: dict) -> dict:
    """Every item's annotator (and metric) disagreement, ranked: `params` as `disagreement` passes them."""
    sort, run_id, criterion, annotators, systems = (params[k] for k in ("sort", "run", "c", "a", "s"))
    j = report.load(campaign=campaign, annotators=annotators)
    crit = criterion or (campaign.criteria[0] if campaign.criteria else None)
    outputs = _filter_outputs(output_index(campaign=campaign), systems)
    names = pseudonyms(j.names())
    per_item_spread = _item_spread(j.protocol, j.rows.get(crit, []), outputs)
    annotator_score = {i: float(np.mean(v)) for i, v in per_item_spread.items()}
    metric_score: dict[int, float] = {}
    run = None
    if run_id:
        run = latest_done_runs(dataset=campaign.dataset).filter(pk=run_id).first()
    if run is not None and crit:
        human = report.human_output_scores(j, crit)
        metric = scores_by_output(run=run)
        used = [o for o in human if o in outputs and metric.get(o) is not None]
        if len(used) >= 2:
            from scipy.stats import rankdata  # lazy: scipy costs each web worker ~0.5 s and ~40 MB

            hr = rankdata([human[o] for o in used]) / len(used)
            mr = rankdata([metric[o] * (1 if run.higher_is_better else -1) for o in used]) / len(used)
            gaps = defaultdict(list)
            for o, a, b in zip(used, hr, mr):
                gaps[outputs[o]["item"]].append(abs(a - b))
            metric_score = {i: float(np.mean(v)) for i, v in gaps.items()}
    key = metric_score if sort == "metric" and metric_score else annotator_score
    external = {info["item"]: str(info["item_ext"]) for info in outputs.values()}
    order = sorted(key, key=lambda i: (-key[i], external.get(i, ""), i))  # ties in the data's order
    ranked = Ranked(
        [
            {"item": i, "annotator_disagreement": annotator_score.get(i), "metric_disagreement": metric_score.get(i)}
            for i in order
        ]
    )
    return {
        "criterion": crit,
        "annotators": annotators,
        "sort": "metric" if key is metric_score and metric_score else "annotators",
        "ranked": ranked,
        "names": {str(k): v for k, v in names.items()},
        "used": j.describe(),
        "run": run.pk if run else None,
    }


def _item_spread(protocol, rows, outputs: dict) -> dict[int, list[float]]:
    """Per item, how far its annotators disagree: the spread of each output's scores
    (scored protocols) or the minority share of each pair's votes (choices)."""
    spread: dict[int, list] = defaultdict(list)
    if protocol.per_output:
        by_output = defaultdict(list)
        for r in rows:
            if r.output_id in outputs:
                by_output[r.output_id].append(r.score)
        for o, vs in by_output.items():
            if len(vs) >= 2:
                spread[outputs[o]["item"]].append(float(np.std(vs)))
        return spread
    votes: dict[tuple, dict] = defaultdict(lambda: defaultdict(int))
    for r in rows:
        votes[(r.item_id, protocol.unit_key(r))][repr(protocol.consensus_value(r))] += 1
    for (i, _unit), v in votes.items():
        total = sum(v.values())
        if total >= 2:
            spread[i].append(1 - max(v.values()) / total)  # minority share
    return spread


def _item_details(campaign: Campaign, shown: list[dict], data: dict, systems: list[str] | None, by_item) -> list[dict]:
    """The shown items with their outputs, references, judgements (`by_item`: the reader's rows per item)
    and metric scores: a fixed number of statements for all of them (six per item made the page take
    seconds at 30 items)."""
    ids = [row["item"] for row in shown]
    items = Item.objects.in_bulk(ids)
    outputs_of = defaultdict(list)
    for o in Output.objects.filter(item_id__in=ids).select_related("system").order_by("item_id", "system__name"):
        outputs_of[o.item_id].append(o)
    references = defaultdict(list)
    for item_id, text in (
        Reference.objects.filter(item_id__in=ids).order_by("item_id", "position").values_list("item_id", "text")
    ):
        references[item_id].append(text)
    runs = list(latest_done_runs(dataset=campaign.dataset))
    scores = scores_of_outputs(runs=runs, output_ids=[o.pk for outs in outputs_of.values() for o in outs])
    names = {int(k): v for k, v in data["names"].items()}
    found = []
    for row in shown:
        item = items[row["item"]]
        system_of = {o.pk: o.system.name for o in outputs_of[item.pk]}
        outputs = [o for o in outputs_of[item.pk] if not systems or o.system.name in systems]
        judgements = defaultdict(list)
        pairs = []
        for r in by_item[item.pk]:
            who = names.get(r.annotator_id, "A?")
            if r.output_id is not None:
                judgements[r.output_id].append({"annotator": who, "criterion": r.criterion, "score": r.score})
            elif r.a_id is not None:
                oa, ob = system_of.get(r.a_id), system_of.get(r.b_id)
                pairs.append(
                    {
                        "a": oa,
                        "b": ob,
                        "annotator": who,
                        "criterion": r.criterion,
                        "winner": {"a": oa, "b": ob}.get(r.winner, "tie"),
                    }
                )
        found.append(
            {
                "id": item.pk,
                "external_id": item.external_id,
                "source": item.source,
                "data": item.data,
                "url": item_url(item.pk),
                # Its document and media (issue 41): fields of the item already read, no statement of its own.
                "place": item_place(item) if item.doc or item.media else None,
                "references": references[item.pk],
                "annotator_disagreement": row["annotator_disagreement"],
                "metric_disagreement": row["metric_disagreement"],
                "outputs": [
                    {
                        "system": o.system.name,
                        "text": o.text,
                        "judgements": judgements.get(o.pk, []),
                        "scores": [{"metric": r.metric, "run": r.pk, "score": scores[r.pk].get(o.pk)} for r in runs],
                    }
                    for o in outputs
                ],
                "pairs": pairs,
            }
        )
    return found


# ---- error severity (minED): in severity.py --------------------------------------

# ---- NLI facts ------------------------------------------------------------------


def facts_view(
    campaign: Campaign,
    *,
    run_id: int,
    systems: list[str] | None = None,
    limit: int = 50,
    offset: int = 0,
    only_problems: bool = False,
) -> dict:
    run = latest_done_runs(dataset=campaign.dataset).get(pk=run_id)
    extras = extras_by_output(run=run)
    outputs = _filter_outputs(output_index(campaign=campaign), systems)
    ids = sorted((o for o in extras if o in outputs), key=lambda o: (outputs[o]["position"], outputs[o]["system"]))
    if only_problems:
        ids = [o for o in ids if (extras[o] or {}).get("label", "OK") != "OK"]
    labels = defaultdict(int)
    for o in extras:
        if o in outputs:
            labels[(extras[o] or {}).get("label", "?")] += 1
    texts = dict(Output.objects.filter(pk__in=ids[offset : offset + limit]).values_list("pk", "text"))
    rows = []
    for o in ids[offset : offset + limit]:
        e = extras[o] or {}
        rows.append(
            {
                "output": o,
                "item": outputs[o]["item_ext"],
                "item_id": outputs[o]["item"],
                "system": outputs[o]["system"],
                "url": item_url(outputs[o]["item"]),
                "text": texts.get(o, ""),
                "label": e.get("label"),
                "confidence": e.get("confidence"),
                "facts": e.get("facts") or [],
                "omitted": e.get("omitted") or [],
                "hallucination": e.get("hallucination_check") or {},
            }
        )
    return {
        "run": run.pk,
        "metric": run.metric,
        "signature": run.signature,
        "rows": with_places(rows),
        "total": len(ids),
        "labels": dict(labels),
        "offset": offset,
        "limit": limit,
        "end": offset + len(rows),
    }


def judgements_summary(j) -> dict:
    return j.describe()


def output_index_systems(campaign: Campaign) -> set[str]:
    """The names of the systems with outputs in the campaign (the filters' choices): from the
    systems table, not by reading every output (a million of them take seconds)."""

    systems = System.objects.filter(dataset=campaign.dataset)
    chosen = list(campaign.systems.values_list("pk", flat=True))
    if chosen:
        systems = systems.filter(pk__in=chosen)
    return set(systems.filter(Exists(Output.objects.filter(system=OuterRef("pk")))).values_list("name", flat=True))


# ---- span meta-evaluation, error-free detection, acc23 pairs permutation ----------------

# Metric runs whose every pair the page tests by acc23 pairs permutation (6 pairs); more: the
# page says to run `correlate --method acc23 --compare`.
META_PAIR_RUNS = 4
# Pairs per resample the page's acc23 pairs permutation may draw (1,000 resamples each); above it
# the row says to run `correlate`. PERM-BOTH of acc23 is left to `correlate --compare`: it
# recomputes the tie-calibrated acc23 per resample (minutes on 10 systems x 500 items).
META_PAIRS_PER_RESAMPLE = 5_000


def meta_tasks(campaign: Campaign, *, annotators: str = INCLUDED) -> dict:
    """The meta-evaluation tasks beyond correlations, per criterion and metric run, each figure
    from the very function `correlate` prints it with (`report.correlate_report`): span
    P/R/F1 with WMT25's severity-weighted F1 and factgenie's span F1 (method span-f1), factgenie's
    span gamma (method span-gamma),
    error-free detection (method error-free) and acc23 with the pairs permutation test
    (method acc23, grouped by item, --compare; PERM-BOTH left to the command)."""

    def compute():
        runs = list(latest_done_runs(dataset=campaign.dataset))
        protocol = protocols.of(campaign)
        out: dict = {
            "span_label": se.LABEL,
            "wmt25_label": se.WMT25_LABEL,
            "factgenie_label": se.FACTGENIE_LABEL,
            "gamma_label": ga.GAMMA_LABEL,
            "error_free_label": ef.LABEL,
            "pairs_label": report.PAIRS_TEST_LABEL,
            "spans": [],
            "error_free": [],
            "error_free_note": None,
            "pairs": [],
            "pairs_note": None,
        }
        if not runs:
            return out

        def correlate(run, criterion, method, **options):
            return report.correlate_report(
                campaign=campaign,
                metric=f"#{run.pk}",
                criterion=criterion,
                method=method,
                annotators=annotators,
                bootstrap=0,
                **options,
            )

        for c in campaign.criteria:
            if protocol.has_spans:
                for run in runs:
                    try:
                        found = correlate(run, c, report.SPAN_F1)
                    except report.AnalysisError:
                        continue  # a run without spans has no span figures
                    gamma = correlate(run, c, report.SPAN_GAMMA)
                    out["spans"].append(
                        {
                            "criterion": c,
                            "run": run.pk,
                            "metric": run.metric,
                            **found["overall"],
                            "gamma": gamma["overall"],
                            "per_system": [
                                {"system": name, **f, "gamma": gamma["per_system"][name]}
                                for name, f in found["per_system"].items()
                            ],
                        }
                    )
                for run in runs:
                    try:
                        found = correlate(run, c, report.ERROR_FREE)
                    except report.AnalysisError as exc:
                        out["error_free_note"] = str(exc)
                        break
                    out["error_free"].append(
                        {
                            "criterion": c,
                            "run": run.pk,
                            "metric": run.metric,
                            "positives": found["positives"],
                            "n": found["n"],
                            "held_out": found["held_out"],
                            "best_on_all": found["best_on_all"],
                        }
                    )
            if protocol.correlate_as_pair_agreement:
                continue
            if len(runs) > META_PAIR_RUNS:
                out["pairs_note"] = (
                    f"{len(runs)} metric runs: more than {META_PAIR_RUNS} to test pairwise here; run "
                    "`correlate --method acc23 --group-by item --compare METRIC2` for a pair"
                )
                continue
            for k, first in enumerate(runs):
                for second in runs[k + 1 :]:
                    found = correlate(
                        first,
                        c,
                        "acc23",
                        group_by="item",
                        compare=f"#{second.pk}",
                        perm_both_test=False,
                        max_pairs=META_PAIRS_PER_RESAMPLE,
                    )
                    pairs = found.get("pairs_test", {})
                    out["pairs"].append(
                        {
                            "criterion": c,
                            "metric": first.metric,
                            "run": first.pk,
                            "compare": second.metric,
                            "compare_run": second.pk,
                            "acc23": found.get("acc23"),
                            "p_value": pairs.get("p_value"),
                            "skipped": pairs.get("skipped"),
                            "epsilons": [pairs.get("epsilon2"), pairs.get("epsilon1")],
                        }
                    )
        return out

    return cached(campaign, "meta-tasks", {"a": annotators}, compute)
