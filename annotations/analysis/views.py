"""Analysis pages (owners and researchers only: annotators and non-members 404).

Every page takes the same filters in its query string: `criterion`, `system`
(repeatable), `annotators` (included|all) and, where a metric is shown,
`run`; `?format=csv` downloads the figures shown as CSV.
"""

from __future__ import annotations

import logging

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import urlencode

from annotations import protocols
from annotations.access import campaign_for_staff
from annotations.analysis import cluster_rules, figure_jobs, pages, report, severity
from annotations.export.csvsafe import csv_response
from annotations.models import Campaign
from annotations.selectors import figures_cache
from annotations.selectors.judgements import ALL, INCLUDED
from annotations.views.figures import figures_on_workers

logger = logging.getLogger(__name__)


def _campaign(request: HttpRequest, pk: int) -> Campaign:
    return campaign_for_staff(user=request.user, pk=pk)


def _filters(request: HttpRequest, campaign: Campaign) -> dict:
    criterion = request.GET.get("criterion") or None
    if criterion and criterion not in campaign.criteria:
        criterion = None
    systems_all = sorted(pages.output_index_systems(campaign))
    systems = [s for s in request.GET.getlist("system") if s in systems_all] or None
    annotators = request.GET.get("annotators") if request.GET.get("annotators") in (INCLUDED, ALL) else INCLUDED
    runs = pages.runs_info(campaign)
    run_id = request.GET.get("run")
    run_id = int(run_id) if run_id and run_id.isdigit() and any(r["id"] == int(run_id) for r in runs) else None
    return {
        "criterion": criterion,
        "systems": systems,
        "annotators": annotators,
        "run": run_id,
        "all_systems": systems_all,
        "runs": runs,
        "criteria": campaign.criteria,
    }


def _query(f: dict, **extra) -> str:
    params = [("annotators", f["annotators"])]
    if f["criterion"]:
        params.append(("criterion", f["criterion"]))
    for s in f["systems"] or []:
        params.append(("system", s))
    if f["run"]:
        params.append(("run", f["run"]))
    params += [(k, v) for k, v in extra.items() if v is not None]
    return "?" + urlencode(params)


def _csv(name: str, header: list[str], rows: list[list]) -> HttpResponse:
    return csv_response(name, header, rows)


def _base(request, campaign, f, active: str) -> dict:
    links = [
        ("dashboard", "Dashboard", "analysis-dashboard"),
        ("scatter", "Metric vs human", "analysis-scatter"),
        ("rankings", "Rankings", "analysis-rankings"),
        ("meta", "Meta-evaluation", "analysis-meta"),
        ("disagreement", "Disagreements", "analysis-disagreement"),
        ("errors", "Error severity", "analysis-errors"),
        ("facts", "NLI facts", "analysis-facts"),
    ]
    if getattr(protocols.of(campaign), "error_categories", False):
        links.insert(4, ("mqm-errors", "MQM errors", "analysis-mqm-errors"))
    return {
        "campaign": campaign,
        "project": campaign.project,
        "f": f,
        "active": active,
        "query": _query(f),
        "csv_url": request.path + _query(f, format="csv"),
        "nav": [
            {"key": k, "label": label, "url": reverse(name, args=[campaign.pk]) + _query(f)} for k, label, name in links
        ],
    }


DASHBOARD_REPS, DASHBOARD_SEED = pages.DASHBOARD_REPS, pages.DASHBOARD_SEED


@login_required
@figures_on_workers
def dashboard(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = _campaign(request, pk)
    f = _filters(request, campaign)
    figures = pages.dashboard_agreement(campaign, criterion=f["criterion"], annotators=f["annotators"])
    rows = []
    for c, v in figures["criteria"].items():
        # cESA: the pairwise protocol's figure over the preferences its scores imply, on a row of its own.
        for shown, fig in ((c, v), (f"{c} (pairs derived from the scores)", v.get("pairwise_derived"))):
            if fig is not None:
                rows.append(
                    {
                        "criterion": c,
                        "shown": shown,
                        **fig,
                        "derived": fig is not v,
                        "headline_ci": fig["ci95"].get(f"krippendorff_alpha_{fig['headline']['level']}"),
                        "minor": {k.split(".")[-1] for k in fig["not_headline"]},
                    }
                )
    if request.GET.get("format") == "csv":
        return _csv(
            f"{campaign.name}-agreement",
            [
                "criterion",
                "headline",
                "headline_value",
                "headline_ci_low",
                "headline_ci_high",
                "alpha_nominal",
                "alpha_ordinal",
                "alpha_interval",
                "fleiss_kappa",
                "percent_agreement",
                "units",
                "annotators",
            ],
            [
                [
                    r["shown"],
                    r["headline"]["label"],
                    r["headline"]["value"],
                    *(r["headline_ci"] or [None, None]),
                    r["krippendorff_alpha"]["nominal"],
                    r["krippendorff_alpha"]["ordinal"],
                    r["krippendorff_alpha"]["interval"],
                    r["fleiss_kappa"],
                    r["percent_agreement"],
                    r["n_units"],
                    r["n_annotators"],
                ]
                for r in rows
            ],
        )
    ctx = _base(request, campaign, f, "dashboard")
    ctx.update(
        {
            "agreement": rows,
            "used": figures["judgements_used"],
            "runs": f["runs"],
            "bootstrap": {"reps": DASHBOARD_REPS, "seed": DASHBOARD_SEED},
        }
    )
    return render(request, "analysis/dashboard.html", ctx)


def _need_run(f: dict, metrics: tuple[str, ...] | None = None) -> int | None:
    if f["run"]:
        return f["run"]
    for r in f["runs"]:
        if metrics is None or r["metric"] in metrics:
            return r["id"]
    return None


@login_required
@figures_on_workers
def scatter(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = _campaign(request, pk)
    f = _filters(request, campaign)
    ctx = _base(request, campaign, f, "scatter")
    run_id = _need_run(f)
    criterion = f["criterion"] or (campaign.criteria[0] if campaign.criteria else None)
    pairs_only = protocols.of(campaign).correlate_as_pair_agreement
    if pairs_only or run_id is None or criterion is None:
        ctx["empty"] = (
            "Pairwise campaigns have no per-output score to plot: see the meta-evaluation table."
            if pairs_only
            else "No done metric run on this dataset yet."
        )
        return render(request, "analysis/scatter.html", ctx)
    data = pages.scatter(
        campaign,
        run_id=run_id,
        criterion=criterion,
        annotators=f["annotators"],
        systems=f["systems"],
        normalize=request.GET.get("normalize", "none"),
    )
    if request.GET.get("format") == "csv":
        return _csv(
            f"{campaign.name}-{data['metric']}-{criterion}",
            ["item", "system", "output", data["metric"], criterion, "url"],
            [[p["item"], p["system"], p["output"], p["metric"], p["human"], p["url"]] for p in data["points"]],
        )
    ctx.update({"data": data, "criterion": criterion, "run_id": run_id})
    return render(request, "analysis/scatter.html", ctx)


@login_required
@figures_on_workers
def rankings(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = _campaign(request, pk)
    f = _filters(request, campaign)
    r = _rule_params(request)
    data = pages.rankings(campaign, criterion=f["criterion"], annotators=f["annotators"], systems=f["systems"], **r)
    if request.GET.get("format") == "csv" and request.GET.get("table") == "rule":
        rule = data["rule"]
        return _csv(
            f"{campaign.name}-rankings-{rule['name']}",
            [
                "criterion",
                "rule",
                "rule_label",
                "system",
                "mean",
                "n",
                "rank",
                "rank_range_low",
                "rank_range_high",
                "cluster",
            ],
            [
                [
                    c,
                    rule["name"],
                    rule["label"],
                    x["system"],
                    x["mean"],
                    x["n"],
                    x["rank"],
                    *x["rank_range"],
                    x["cluster"],
                ]
                for c, rs in data.get("rule_rankings", {}).items()
                for x in rs
            ],
        )
    # Document-level scores (issue 41): what the report computed, never more per request.
    total_name = protocols.of(campaign).document_total_name
    documents = (data.get("documents") or {}).get("criteria") or {}
    if request.GET.get("format") == "csv" and request.GET.get("table") == "documents":
        return _csv(
            f"{campaign.name}-documents",
            ["criterion", "doc", "system", "segments", "mean", *([total_name] if total_name else [])],
            [
                [c, x["doc"], x["system"], x["segments"], x["mean"], *([x.get(total_name)] if total_name else [])]
                for c, rs in documents.items()
                for x in rs
            ],
        )
    if request.GET.get("format") == "csv":
        rows = []
        for c, rs in data["criteria"].items():
            rows += [
                [
                    f"human:{c}",
                    r["system"],
                    r["rank"],
                    r["cluster"],
                    r["score"],
                    *r["ci95"],
                    "mean of per-output human scores",
                    None,
                    None,
                    None,
                    *_paired(r),
                ]
                for r in rs
            ]
        for name, m in data["metrics"].items():
            rows += [
                [
                    name,
                    r["system"],
                    r["rank"],
                    r["cluster"],
                    r["score"],
                    *r["ci95"],
                    m["score_label"],
                    r.get("segment_mean", r["score"]),
                    *r.get("segment_mean_ci95", r["ci95"]),
                    *_paired(r),
                ]
                for r in m["ranking"]
            ]
        return _csv(
            f"{campaign.name}-rankings",
            [
                "by",
                "system",
                "rank",
                "cluster",
                "score",
                "ci_low",
                "ci_high",
                "score_is",
                "mean_of_segment_scores",
                "mean_ci_low",
                "mean_ci_high",
                "paired_cluster",
                "rank_range_low",
                "rank_range_high",
            ],
            rows,
        )
    ctx = _base(request, campaign, f, "rankings")
    extra = {"rule": r["rule"], "alpha": r["alpha"], "resamples": r["resamples"], "seed": r["seed"]}
    ctx["csv_url"] = request.path + _query(f, format="csv", **extra)
    ctx.update(
        {
            "rules": [
                {
                    "name": x.name,
                    "label": x.describe(alpha=r["alpha"], resamples=r["resamples"], seed=r["seed"])["label"],
                }
                for x in cluster_rules.RULES.values()
            ],
            "rule_params": r,
            "rule_csv_url": request.path + _query(f, format="csv", table="rule", **extra),
            "documents": {
                "label": data["documents"]["label"] if documents else "",
                "total_name": total_name,
                "criteria": {c: [{**x, "total": x.get(total_name)} for x in rs] for c, rs in documents.items()},
                "csv_url": request.path + _query(f, format="csv", table="documents", **extra),
            },
        }
    )
    side = []
    for c, rs in data["criteria"].items():
        side.append({"label": f"Humans: {c}", "rows": rs, "human": True})
    for name, m in data["metrics"].items():
        side.append(
            {
                "label": f"{m['metric']} (run {m['run']}, {'higher' if m['higher_is_better'] else 'lower'} is better)",
                "rows": m["ranking"],
                "human": False,
                "score_label": m["score_label"],
            }
        )
    ctx.update(
        {
            "data": data,
            "side": side,
            "plot": [
                {
                    "label": s["label"],
                    "systems": [r["system"] for r in s["rows"]],
                    "scores": [r["score"] for r in s["rows"]],
                    "lo": [r["ci95"][0] for r in s["rows"]],
                    "hi": [r["ci95"][1] for r in s["rows"]],
                    "clusters": [r["cluster"] for r in s["rows"]],
                }
                for s in side
                if s["human"]
            ],
        }
    )
    return render(request, "analysis/rankings.html", ctx)


def _number(request: HttpRequest, key: str, cast, default, low, high):
    """A number from the query string, or the default when missing, unreadable or out of range."""
    try:
        value = cast(request.GET.get(key, default))
    except (TypeError, ValueError):
        return default
    return value if low <= value <= high else default


def _rule_params(request: HttpRequest) -> dict:
    """The cluster rule and its options from the query string; anything unreadable falls back
    to the default (a page never fails on a hand-edited URL)."""
    name = request.GET.get("rule")
    rule = name if name in cluster_rules.RULES else cluster_rules.DEFAULT_RULE
    return {
        "rule": rule,
        "alpha": _number(request, "alpha", float, cluster_rules.DEFAULT_ALPHA, 1e-6, 0.5),
        "resamples": _number(request, "resamples", int, cluster_rules.DEFAULT_RESAMPLES, 1, 10_000),
        "seed": _number(request, "seed", int, 0, 0, 2**32 - 1),
    }


def _paired(row: dict) -> list:
    """Paired-Wilcoxon cluster and rank range (systems.paired_ranks), for the CSV."""
    low, high = row.get("rank_range", [None, None])
    return [row.get("paired_cluster"), low, high]


@login_required
@figures_on_workers
def meta(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = _campaign(request, pk)
    f = _filters(request, campaign)
    normalize = "z" if request.GET.get("normalize") == "z" else "none"
    threshold = _number(request, "discrepancy", float, 50.0, 0.0, 1e9)
    if request.GET.get("format") == "csv" and request.GET.get("table") == "discrepancies":
        found = pages.wave_discrepancies(campaign, annotators=f["annotators"], threshold=threshold) or {"rows": []}
        return _csv(
            f"{campaign.name}-wave-discrepancies",
            ["criterion", "item_id", "system", "human1", "human2", "difference", "threshold"],
            [
                [r["criterion"], r["item_ext"], r["system"], r["human1"], r["human2"], r["difference"], threshold]
                for r in found["rows"]
            ],
        )
    data = pages.meta_table(campaign, annotators=f["annotators"], systems=f["systems"], normalize=normalize)
    if request.GET.get("format") == "csv":
        header = ["metric", "run"] + [
            f"{c['criterion']}:{c['method']}:{c['level']}:{c['group_by']}" for c in data["columns"]
        ]
        return _csv(
            f"{campaign.name}-meta-evaluation",
            header,
            [[r["metric"], r["run"], *[cell["value"] for cell in r["cells"]]] for r in data["rows"]]
            + (
                [
                    [
                        f"{data['waves']['role']}:{data['waves']['campaign']}",
                        None,
                        *[cell["value"] for cell in data["waves"]["cells"]],
                    ]
                ]
                if data.get("waves")
                else []
            ),
        )
    try:
        epsilon = float(request.GET.get("epsilon", 0.2))
    except ValueError:
        epsilon = 0.2
    epsilon = epsilon if epsilon in pages.ALT_EPSILONS else 0.2
    ctx = _base(request, campaign, f, "meta")
    if data.get("waves"):
        ctx["discrepancies"] = pages.wave_discrepancies(campaign, annotators=f["annotators"], threshold=threshold)
        ctx["discrepancy_csv_url"] = request.path + _query(
            f, format="csv", table="discrepancies", discrepancy=f"{threshold:g}"
        )
    # The judge section is an extra: whatever goes wrong in it, the metric table above still shows.
    try:
        judges, judges_error = (
            pages.judge_panel(campaign, annotators=f["annotators"], normalize=normalize, epsilon=epsilon),
            None,
        )
    except report.AnalysisError as exc:
        judges, judges_error = [], str(exc)
    except figures_cache.FigurePending:
        raise  # a worker computes it: the waiting page (views.figures.figures_on_workers)
    except Exception:  # noqa: BLE001 - logged with its traceback; the page says the section failed
        logger.exception("judge panel of campaign %s", campaign.pk)
        judges, judges_error = [], "the LLM judge section could not be computed (the error is in the server's log)"
    # The same for the span, error-free and acc23-pairs tables: the correlations above still show.
    try:
        tasks, tasks_error = pages.meta_tasks(campaign, annotators=f["annotators"]), None
    except report.AnalysisError as exc:
        tasks, tasks_error = None, str(exc)
    except figures_cache.FigurePending:
        raise  # a worker computes it: the waiting page (views.figures.figures_on_workers)
    except Exception:  # noqa: BLE001 - logged with its traceback; the page says the section failed
        logger.exception("meta-evaluation tasks of campaign %s", campaign.pk)
        tasks, tasks_error = None, "the span, error-free and acc23 tables could not be computed (see the server's log)"
    ctx.update(
        {
            "data": data,
            "tasks": tasks,
            "tasks_error": tasks_error,
            "normalize": normalize,
            "epsilon": epsilon,
            "epsilons": pages.ALT_EPSILONS,
            "judges": judges,
            "judges_error": judges_error,
        }
    )
    return render(request, "analysis/meta.html", ctx)


@login_required
@figures_on_workers
def disagreement(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = _campaign(request, pk)
    f = _filters(request, campaign)
    sort = "metric" if request.GET.get("sort") == "metric" else "annotators"
    run_id = _need_run(f)
    data = pages.disagreement(
        campaign, sort=sort, run_id=run_id, criterion=f["criterion"], annotators=f["annotators"], systems=f["systems"]
    )
    if request.GET.get("format") == "csv":
        return _csv(
            f"{campaign.name}-disagreement",
            ["item_id", "annotator_disagreement", "metric_disagreement"],
            [[r["item"], r["annotator_disagreement"], r["metric_disagreement"]] for r in data["ranked"]],
        )
    ctx = _base(request, campaign, f, "disagreement")
    ctx.update(
        {
            "data": data,
            "sort": sort,
            "run_id": run_id,
            "sort_annotators": request.path + _query(f, sort="annotators"),
            "sort_metric": request.path + _query(f, sort="metric"),
        }
    )
    return render(request, "analysis/disagreement.html", ctx)


def _page(request) -> int:
    value = request.GET.get("offset", "0")
    return max(0, int(value)) if value.isdigit() else 0


@login_required
def errors(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = _campaign(request, pk)
    f = _filters(request, campaign)
    ctx = _base(request, campaign, f, "errors")
    runs = [
        r
        for r in f["runs"]
        if r["metric"] in ("minwed", "mincer") or severity.is_span_run(r["metric"], r["signature"] or "")
    ]
    run_id = f["run"] if any(r["id"] == f["run"] for r in runs) else (runs[0]["id"] if runs else None)
    ctx["severity_runs"] = runs
    if run_id is None:
        ctx["empty"] = (
            "No done minWED / minCER run, nor a run with error spans (xCOMET, LLM judge), on this dataset yet."
        )
        return render(request, "analysis/errors.html", ctx)
    offset = _page(request)
    limit = request.GET.get("limit", "")
    limit = min(200, max(1, int(limit))) if limit.isdigit() else 50
    keep = limit if limit != 50 else None  # carried to the next and previous pages
    data = severity.severity_view(
        campaign, run_id=run_id, systems=f["systems"], offset=offset, limit=limit, annotators=f["annotators"]
    )
    if request.GET.get("format") == "csv":
        rows = []
        for r in data["rows"]:
            for e in [t["error"] for t in r["tokens"] if t["error"]] + r["missing"]:
                rows.append(
                    [
                        r["item"],
                        r["system"],
                        e["index"],
                        e["type"],
                        e["ref"],
                        e["hyp"],
                        e["severity"],
                        e["corrected"],
                        r["overlap"],
                        e["bin"],
                    ]
                )
        return _csv(
            f"{campaign.name}-error-severity",
            [
                "item",
                "system",
                "error",
                "type",
                "ref",
                "hyp",
                "severity",
                "in_correction_set",
                "overlap_with_humans",
                "severity_bin",
            ],
            rows,
        )
    ctx.update(
        {
            "data": data,
            "run_id": run_id,
            "next": request.path + _query({**f, "run": run_id}, offset=offset + limit, limit=keep)
            if offset + limit < data["total"]
            else None,
            "prev": request.path + _query({**f, "run": run_id}, offset=max(0, offset - limit), limit=keep)
            if offset
            else None,
        }
    )
    return render(request, "analysis/errors.html", ctx)


@login_required
@figures_on_workers
def mqm_error_breakdown(request: HttpRequest, pk: int) -> HttpResponse:
    """MQM errors by category and severity per system; `?cell=SYSTEM&category=PATH&severity=S` lists the
    items behind one cell (category and severity optional: a category includes its subcategories)."""
    campaign = _campaign(request, pk)
    f = _filters(request, campaign)
    ctx = _base(request, campaign, f, "mqm-errors")
    cell = request.GET.get("cell")
    category = request.GET.get("category") or None
    severity = request.GET.get("severity") or None
    try:
        if cell:
            if cell not in f["all_systems"]:
                raise Http404()
            data = figure_jobs.figure(
                campaign,
                "mqm-error-items",
                {"s": cell, "c": category, "v": severity, "a": f["annotators"], "k": f["criterion"]},
            )
        else:
            data = figure_jobs.figure(
                campaign, "mqm-errors", {"s": f["systems"], "a": f["annotators"], "k": f["criterion"]}
            )
    except report.AnalysisError as exc:
        ctx["empty"] = str(exc)
        return render(request, "analysis/mqm_errors.html", ctx)
    if request.GET.get("format") == "csv":
        if cell:
            return _csv(
                f"{campaign.name}-mqm-errors-{cell}",
                ["item", "system", "raters", "errors", "penalty"],
                [[r["item"], cell, r["raters"], r["count"], r["penalty"]] for r in data["items"]],
            )
        return _csv(
            f"{campaign.name}-mqm-errors",
            ["system", "category", "severity", "errors", "penalty"],
            [
                [r["system"], c["category"], c["severity"], c["count"], c["penalty"]]
                for r in data["systems"]
                for c in r["cells"]
            ],
        )
    base = request.path + _query(f)
    if cell:
        for r in pages.with_places(data["items"]):
            r["url"] = pages.item_url(r["item_id"])
    else:
        for r in data["systems"]:
            r["url"] = base + "&" + urlencode({"cell": r["system"]})
            r["by_category"] = _by_category(r["cells"], data["severities"], base, r["system"])
    ctx.update(
        {
            "data": data,
            "cell": cell,
            "back": base,
            "csv_url": request.path + _query(f, cell=cell, category=category, severity=severity, format="csv"),
        }
    )
    return render(request, "analysis/mqm_errors.html", ctx)


def _by_category(cells: list[dict], severities: list[str], base: str, system: str) -> list[dict]:
    """One row per category, a (count, penalty, drill-down link) per severity column."""
    rows: dict[str, dict] = {}
    for c in cells:
        row = rows.setdefault(
            c["category"],
            {
                "category": c["category"],
                "cells": {s: None for s in severities},
                "url": base + "&" + urlencode({"cell": system, "category": c["category"]}),
            },
        )
        row["cells"][c["severity"]] = {
            **c,
            "url": base + "&" + urlencode({"cell": system, "category": c["category"], "severity": c["severity"]}),
        }
    return [{**r, "cells": [r["cells"][s] for s in severities]} for r in rows.values()]


@login_required
def facts(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = _campaign(request, pk)
    f = _filters(request, campaign)
    ctx = _base(request, campaign, f, "facts")
    runs = [r for r in f["runs"] if r["metric"] == "nli"]
    run_id = f["run"] if any(r["id"] == f["run"] for r in runs) else (runs[0]["id"] if runs else None)
    if run_id is None:
        ctx["empty"] = "No done NLI run on this dataset yet."
        return render(request, "analysis/facts.html", ctx)
    offset = _page(request)
    data = pages.facts_view(
        campaign, run_id=run_id, systems=f["systems"], offset=offset, only_problems=request.GET.get("problems") == "1"
    )
    if request.GET.get("format") == "csv":
        rows = []
        for r in data["rows"]:
            for fact in r["facts"]:
                rows.append(
                    [
                        r["item"],
                        r["system"],
                        r["label"],
                        r["confidence"],
                        fact.get("fact"),
                        fact.get("entailed"),
                        (fact.get("probs") or {}).get("entailment"),
                    ]
                )
        return _csv(
            f"{campaign.name}-nli-facts",
            ["item", "system", "label", "confidence", "fact", "entailed", "p_entailment"],
            rows,
        )
    ctx.update(
        {
            "data": data,
            "run_id": run_id,
            "next": request.path + _query({**f, "run": run_id}, offset=offset + data["limit"])
            if offset + data["limit"] < data["total"]
            else None,
        }
    )
    return render(request, "analysis/facts.html", ctx)


def not_found(*_args, **_kwargs):  # pragma: no cover
    raise Http404
