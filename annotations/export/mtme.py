"""`export_dataset --format mtme`: a campaign as an mt-metrics-eval test set.

The layout is the one `mt_metrics_eval.data.EvalSet._ReadDataset` reads (google-research/
mt-metrics-eval, data.py at commit 68a481aea1a7), under OUT/<campaign>/:

    documents/LP.docs                       "domain doc" per segment
    sources/LP.txt                          one source per line
    references/LP.refA.txt (refB, ...)      one reference per line
    system-outputs/LP/SYSTEM.txt            one output per line
    human-scores/LP.CAMPAIGN.seg.score      "SYSTEM score" per segment, systems one after another
    human-scores/LP.CAMPAIGN.sys.score      "SYSTEM score" per system
    metric-scores/LP/METRIC-REF.seg.score   as human scores; REF is refA, or src for a metric
    metric-scores/LP/METRIC-REF.sys.score   that reads no reference
    meta_info.json                          the fields of mt_metrics_eval.meta_info.MetaInfo

The reader splits lines on whitespace and file names on dots and dashes, so texts are written on
one line each (runs of whitespace become one space) and names keep only letters, digits and `_`
(the mapping is in `names.json`). Both sides are oriented as `correlate` orients them (higher is better), so that
mt-metrics-eval's correlations equal `correlate`'s.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from pathlib import Path

from annotations.analysis.report import human_output_scores, load
from annotations.export.metric_scores import metric_scores
from annotations.models import Campaign, Item, Output, Reference
from annotations.selectors.judgements import ALL, INCLUDED
from annotations.selectors.outputs import output_index

# mt-metrics-eval reads this line as a missing translation (data.NO_TRANSLATION).
NO_TRANSLATION = "[No translation supplied]"
DEFAULT_LP = "src-tgt"
_UNSAFE = re.compile(r"[^A-Za-z0-9_]+")


def safe_name(name: str) -> str:
    """A name mt-metrics-eval's file-name parsing keeps whole (no dot, dash or space)."""
    return _UNSAFE.sub("_", name).strip("_") or "unnamed"


def one_line(text: str | None) -> str:
    if text is None:
        return NO_TRANSLATION
    # The reader strips each line's trailing whitespace; an empty line is kept as "".
    return " ".join(str(text).split())


def language_pair(campaign: Campaign) -> str:
    """The items' `lp` meta field (e.g. en-de) when every item that has one agrees; else src-tgt."""
    found = set(
        Item.objects.filter(dataset=campaign.dataset, meta__has_key="lp").values_list("meta__lp", flat=True).distinct()
    )
    if len(found) == 1:
        lp = str(next(iter(found)))
        if re.fullmatch(r"[A-Za-z0-9_]+-[A-Za-z0-9_]+", lp):
            return lp
    return DEFAULT_LP


def write_mtme(*, campaign: Campaign, out: Path, criterion: str, included_only: bool) -> dict:
    """Write the test set; returns a summary (files, systems, metrics, skipped metrics)."""
    from annotations.export.service import ExportFailed  # lazy: cycle with annotations.export

    name = safe_name(campaign.name)
    lp = language_pair(campaign)
    root = out / name
    items = list(
        Item.objects.filter(dataset=campaign.dataset)
        .order_by("position", "id")
        .values_list("id", "external_id", "source", "meta")
    )
    refs = defaultdict(list)
    for item_id, text in (
        Reference.objects.filter(item__dataset=campaign.dataset)
        .order_by("item_id", "position")
        .values_list("item_id", "text")
    ):
        refs[item_id].append(text)
    n_refs = max((len(v) for v in refs.values()), default=0)
    if n_refs == 0:
        raise ExportFailed(
            ["--format mtme: the dataset has no references, and mt-metrics-eval needs a standard reference"]
        )

    outputs = output_index(campaign=campaign)  # output id -> {item, system, ...}
    system_names = sorted({info["system"] for info in outputs.values()})
    safe_systems = _unique({s: safe_name(s) for s in system_names})
    by_cell = {(info["item"], info["system"]): pk for pk, info in outputs.items()}

    j = load(campaign=campaign, annotators=INCLUDED if included_only else ALL, criterion=criterion)
    human = human_output_scores(j, criterion)
    # Oriented as `correlate` orients them: higher is better on both sides.
    sign_h = 1.0 if j.protocol.higher_is_better else -1.0

    for sub in ("documents", "sources", "references", f"system-outputs/{lp}", "human-scores", f"metric-scores/{lp}"):
        (root / sub).mkdir(parents=True, exist_ok=True)

    def lines(path: Path, rows) -> None:
        path.write_text("".join(f"{r}\n" for r in rows), encoding="utf-8")

    # Each item its own document in one domain, unless the items say otherwise (meta doc/domain).
    lines(
        root / "documents" / f"{lp}.docs",
        [
            f"{safe_name(str((meta or {}).get('domain') or 'default'))} {safe_name(str(ext))}"
            for _, ext, _, meta in items
        ],
    )
    lines(root / "sources" / f"{lp}.txt", [one_line(src) for _, _, src, _ in items])
    ref_names = [f"ref{chr(ord('A') + k)}" for k in range(n_refs)]
    for k, ref in enumerate(ref_names):
        lines(
            root / "references" / f"{lp}.{ref}.txt",
            [one_line(refs[i][k] if k < len(refs[i]) else None) for i, *_ in items],
        )
    texts = dict(Output.objects.filter(pk__in=list(outputs)).values_list("pk", "text"))
    for system in system_names:
        lines(
            root / "system-outputs" / lp / f"{safe_systems[system]}.txt",
            [one_line(texts.get(by_cell.get((i, system)))) for i, *_ in items],
        )

    seg_rows, sys_rows = [], []
    for system in system_names:
        values = []
        for i, *_ in items:
            pk = by_cell.get((i, system))
            v = human.get(pk) if pk is not None else None
            values.append(None if v is None or not math.isfinite(v) else sign_h * v)
        seg_rows += [f"{safe_systems[system]} {_num(v)}" for v in values]
        known = [v for v in values if v is not None]
        sys_rows.append(f"{safe_systems[system]} {_num(sum(known) / len(known) if known else None)}")
    lines(root / "human-scores" / f"{lp}.{name}.seg.score", seg_rows)
    lines(root / "human-scores" / f"{lp}.{name}.sys.score", sys_rows)

    metrics, skipped = {}, {}
    runs = metric_scores(dataset=campaign.dataset)
    safe_runs = _unique({run.key: safe_name(run.key) for run in runs})
    for run in runs:
        sign = -1.0 if run.higher_is_better is False else 1.0
        seg, missing = [], []
        for system in system_names:
            for i, ext, *_ in items:
                pk = by_cell.get((i, system))
                if pk is None:
                    # No output to score: mt-metrics-eval's own repair value; no human score there either.
                    seg.append(f"{safe_systems[system]} 0")
                    continue
                v = run.scores.get(pk)
                if v is None or not math.isfinite(v):
                    missing.append(f"{ext}/{system}")
                seg.append(f"{safe_systems[system]} {_num(None if v is None else sign * v)}")
        if missing:
            # mt-metrics-eval refuses a metric file with a missing score.
            skipped[run.key] = f"no score for {len(missing)} output(s), e.g. {missing[0]}"
            continue
        metric = f"{safe_runs[run.key]}-refA"
        lines(root / "metric-scores" / lp / f"{metric}.seg.score", seg)
        corpus = (run.systems or {}).get("scores") or {}
        if any(corpus.get(s) is None for s in system_names):
            # As `correlate --level system`: without a stored corpus score for every system, the
            # mean of the segment scores over the outputs with a human score, for every system.
            corpus = {}
            for system in system_names:
                judged = [by_cell[(i, system)] for i, *_ in items if human.get(by_cell.get((i, system))) is not None]
                vals = [run.scores[pk] for pk in judged]
                corpus[system] = sum(vals) / len(vals) if vals else 0.0
        sys_lines = [f"{safe_systems[s]} {_num(sign * corpus[s])}" for s in system_names]
        lines(root / "metric-scores" / lp / f"{metric}.sys.score", sys_lines)
        metrics[run.key] = {"file_name": metric, "signature": run.signature, "negated": sign < 0}

    meta = {
        "std_ref": "refA",
        "std_gold": {"seg": name, "sys": name},
        "outlier_systems": [],
        "primary_metrics": sorted(safe_runs[k] for k in metrics),
        "baseline_metrics": None,
    }
    (root / "meta_info.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    names = {
        "test_set": name,
        "lp": lp,
        "campaign": campaign.name,
        "criterion": criterion,
        "human_negated": sign_h < 0,
        "systems": {s: safe_systems[s] for s in system_names},
        "items": [str(ext) for _, ext, _, _ in items],
        "metrics": metrics,
        "metrics_left_out": skipped,
    }
    (root / "names.json").write_text(json.dumps(names, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    (root / "README.md").write_text(_readme(names, meta), encoding="utf-8")
    return names


def _unique(names: dict[str, str]) -> dict[str, str]:
    """Two names that become one safe name get _2, _3... (the mapping is in names.json)."""
    seen: dict[str, int] = {}
    out = {}
    for key in sorted(names):
        base = names[key]
        seen[base] = seen.get(base, 0) + 1
        out[key] = base if seen[base] == 1 else f"{base}_{seen[base]}"
    return out


def _num(v: float | None) -> str:
    return "None" if v is None else repr(float(v))


def _readme(names: dict, meta: dict) -> str:
    lp, name = names["lp"], names["test_set"]
    left_out = "".join(f"- {k}: {why}\n" for k, why in names["metrics_left_out"].items()) or "none\n"
    return (
        f"# {name}: campaign {names['campaign']!r} as an mt-metrics-eval test set\n\n"
        f"Criterion: {names['criterion']}. Language pair: {lp}. Human scores: `{name}` at `seg` and `sys` level"
        + (" (negated: the protocol's scores are lower-is-better)" if names["human_negated"] else "")
        + ". Metric scores are oriented so that higher is better.\n\n"
        "```python\n"
        "import json\n"
        "from mt_metrics_eval import data, meta_info\n\n"
        f"info = json.load(open('{name}/meta_info.json'))\n"
        "info = {k: set(v) if isinstance(v, list) else v for k, v in info.items()}  # JSON has no sets\n"
        f"evs = data.EvalSet('{name}', '{lp}', read_stored_metric_scores=True,\n"
        "                   info=meta_info.MetaInfo(**info), path='.')\n"
        "```\n\n"
        "Names as written (systems, metrics) are in `names.json`.\n\n"
        f"Metrics left out:\n{left_out}"
    )
