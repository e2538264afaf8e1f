"""Replay real studies through the allocation policies: how many judgements until the conclusions are final.

Each study's recorded judgements are the pool. A unit is one screen of the original study (an
item shown with its set of systems) and holds the judgements it really received (k = how many).
A policy decides the order in which the units' judgements arrive; nobody is asked anything, the
recorded judgement is drawn instead. Policies:

- `uniform`: every recorded judgement in a random order (the baseline). `spread` (each
  annotator walks their own random permutation of the units) hands out the same judgements in
  an order that is, for this purpose, just as random: it is uniform here and not run twice.
- `overlap-first`: units in a random order, each unit's k judgements before the next unit opens.
- `uniform+stop`: uniform, with the adaptive stopping rule (verdicts every `check_every`
  judgements, no targeting): only its stopping point is measured. It separates what the
  stopping rule saves from what targeting the undecided pairs saves.
- `adaptive-any`: adaptive without the engine's "complete a started unit to k first": any
  remaining judgement of a wanted unit may come next (breadth first, as uniform).
- `adaptive`: annotations/allocation/adaptive.py. A started unit is completed to k first (the
  engine keeps "exactly k annotators per judged unit"); a new unit opens only if the current
  verdict wants it; the verdict is recomputed every `check_every` judgements, from the
  judgements drawn so far and the planned outputs per system (known before any judgement:
  the campaign's units). When the stopping rule fires the point is recorded; the replay then
  draws the remaining judgements in a random order so that the curve ends at the full data.

Measured per policy and seed: the share of all judgements after which the system ranking and
its significance clusters, computed with the workbench's own functions
(annotations/analysis/systems.py: per-output scores, `clusters`, one-sided Mann-Whitney at
p < 0.05) on the judgements drawn so far, equal those of the full data and stay equal until the
end. Two criteria: `clusters` (the ordered significance clusters, i.e. every significant
conclusion) and `exact` (also the order inside each cluster). Checked on a grid of `--grid`
points, walking back from the end.

Studies (../shared/data, SOURCES.md): E2E quality and naturalness (Dušek et al. 2020; 5 systems
a screen, 0-100 RankME-style ratings, scored as the mean rating per output), HATS (Bañeras-Roux
et al. 2023; pairwise, each vote a judgement, win rate per output), ASSET ratings
(Alva-Manchego et al. 2020; 0-100 meaning ratings of 100 outputs by 15 workers: the file names no
system, so there is one system and nothing to rank) and, in its place as a ranking study, ASSET's
pairwise comparisons (simplicity of ASSET vs TurkCorpus vs HSplit references; one judgement a
screen).

    .venv/bin/python bench/bench_allocation.py [--seeds 10] [--grid 20] [--quick] [--only e2e-quality,hats]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from annotations.allocation.adaptive import AdaptiveParams, unit_wanted, verdict  # noqa: E402
from annotations.analysis import systems as sy  # noqa: E402

DATA = Path(
    os.environ.get("WORKBENCH_SHARED_DATA") or Path(__file__).resolve().parent.parent.parent / "shared" / "data"
)


@dataclass
class Unit:
    key: str
    systems: tuple[str, ...]
    judgements: list = field(default_factory=list)  # each: list of (item, system, value)


@dataclass
class Study:
    name: str
    kind: str  # "ratings" | "pairwise"
    units: list[Unit]

    @property
    def judgements(self) -> list[tuple[int, int]]:
        return [(u, j) for u, unit in enumerate(self.units) for j in range(len(unit.judgements))]


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def e2e(data: Path, file: str, column: str) -> Study:
    units: dict[str, Unit] = {}
    with (data / "e2e-human" / file).open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            obs = []
            for i in range(1, 6):
                system, value = row.get(f"sys{i}"), _float(row.get(f"{column}{i}", ""))
                if system and row.get(f"ref{i}") and value is not None and 0 <= value <= 100:
                    obs.append((row["mr_id"], system, value))
            if obs:
                unit = units.setdefault(
                    row["_unit_id"],
                    Unit(row["_unit_id"], tuple(sorted(row[f"sys{i}"] for i in range(1, 6) if row.get(f"sys{i}")))),
                )
                unit.judgements.append(obs)
    return Study(f"e2e-{file.split('.')[0]}", "ratings", list(units.values()))


def hats(data: Path) -> Study:
    units = []
    with (data / "hats" / "hats.tsv").open(encoding="utf-8", newline="") as f:
        for n, row in enumerate(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE), start=1):
            item = f"hats-{n}"
            votes = [1.0] * int(row["nbrA"]) + [0.0] * int(row["nbrB"])
            units.append(Unit(item, ("hypA", "hypB"), [[(item, "hypA", v), (item, "hypB", 1 - v)] for v in votes]))
    return Study("hats", "pairwise", units)


def asset_ratings(data: Path, aspect: str = "meaning") -> Study:
    units: dict[str, Unit] = {}
    with (data / "asset" / "human_ratings.csv").open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            if row["aspect"] == aspect:
                item = f"asset-{row['original_sentence_id']}"
                units.setdefault(item, Unit(item, ("rated",))).judgements.append(
                    [(item, "rated", float(row["rating"]))]
                )
    return Study(f"asset-{aspect}", "ratings", list(units.values()))


def asset_pairwise(data: Path, aspect: str = "simplicity") -> Study:
    units: dict[str, Unit] = {}
    with (data / "asset" / "pairwise_comparisons.csv").open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            if row["aspect"] != aspect:
                continue
            item, other = f"asset-{row['sentence_id']}", row["other_dataset"]
            value = {"asset": 1.0, "similar": 0.5}.get(row["winner"], 0.0)
            unit = units.setdefault(f"{item}/{other}", Unit(f"{item}/{other}", ("asset", other)))
            unit.judgements.append([(item, "asset", value), (item, other, 1 - value)])
    return Study(f"asset-pairwise-{aspect}", "pairwise", list(units.values()))


def studies(data: Path) -> list[Study]:
    return [
        e2e(data, "quality.csv", "quality"),
        e2e(data, "naturalness.csv", "natur"),
        hats(data),
        asset_ratings(data),
        asset_pairwise(data),
    ]


# ---- the workbench's conclusions --------------------------------------------------------


def conclusions(study: Study, drawn: list[list[tuple]]) -> tuple[tuple, tuple]:
    """(ranking, ordered clusters) as the workbench computes them from these judgements."""
    if study.kind == "pairwise":
        # Each pairwise judgement as the workbench stores it: (item, output a, output b, winner).
        comparisons = []
        for (item, a, va), (_item, b, _vb) in drawn:
            comparisons.append((item, (item, a), (item, b), "a" if va == 1 else "b" if va == 0 else "tie"))
        scores = sy.win_rates(comparisons)
    else:
        sums: dict = defaultdict(list)
        for obs in drawn:
            for item, system, value in obs:
                sums[(item, system)].append(value)
        scores = {o: float(np.mean(v)) for o, v in sums.items()}
    samples: dict[str, list] = defaultdict(list)
    for (_item, system), score in scores.items():
        samples[system].append(score)
    rows = sy.clusters({s: np.array(v) for s, v in samples.items()})
    ranking = tuple(r["system"] for r in rows)
    grouped: dict[int, list] = defaultdict(list)
    for r in rows:
        grouped[r["cluster"]].append(r["system"])
    return ranking, tuple(frozenset(g) for _c, g in sorted(grouped.items()))


# ---- policies: orders of (unit, judgement) ----------------------------------------------


def order_uniform(study: Study, rng) -> list[tuple[int, int]]:
    pool = study.judgements
    return [pool[i] for i in rng.permutation(len(pool))]


def order_overlap_first(study: Study, rng) -> list[tuple[int, int]]:
    return [(u, j) for u in rng.permutation(len(study.units)) for j in range(len(study.units[u].judgements))]


def order_adaptive(
    study: Study, rng, params: AdaptiveParams, *, fill: bool = True, target: bool = True
) -> tuple[list[tuple[int, int]], dict]:
    """fill: complete every started unit to k before opening another (the engine's rule); without
    it the next judgement is any remaining judgement of a wanted unit (what the verdict alone
    would choose, breadth first like uniform). target=False: every unit is wanted until the
    stopping rule fires (uniform allocation with the adaptive stopping rule)."""
    units = study.units
    systems = sorted({s for u in units for s in u.systems})
    planned: dict[str, int] = defaultdict(int)
    for _item, system in {(obs[0], obs[1]) for u in units for j in u.judgements for obs in j}:
        planned[system] += 1
    # Each unit's recorded judgements in a random order (who came first is not recorded).
    queues = {u: list(rng.permutation(len(unit.judgements))) for u, unit in enumerate(units)}
    order: list[tuple[int, int]] = []
    observations: list[tuple] = []
    started: set[int] = set()
    v = verdict([], systems, params, planned=planned)

    def wanted_units():
        return [u for u in range(len(units)) if queues[u] and (not target or unit_wanted(units[u].systems, v))]

    wanted = wanted_units()
    checks = 0
    while True:
        open_started = [u for u in started if queues[u]]
        if fill and open_started:
            u = open_started[int(rng.integers(len(open_started)))]
        else:
            pool = [u for u in wanted if queues[u] and (not fill or u not in started)]
            if not pool:
                break
            if fill:
                u = pool[int(rng.integers(len(pool)))]
            else:
                weights = np.array([len(queues[u]) for u in pool], dtype=float)
                u = pool[int(rng.choice(len(pool), p=weights / weights.sum()))]
        started.add(u)
        j = int(queues[u].pop())
        order.append((u, j))
        observations.extend(units[u].judgements[j])
        if len(order) % params.check_every == 0:
            v = verdict(observations, systems, params, previous=v, planned=planned)
            wanted = wanted_units()
            checks += 1
            if v.stop:
                break
    stop = {"judgements": len(order), "stopped": v.stop, "reason": v.reason, "checks": checks}
    rest = [(u, j) for u in range(len(units)) for j in queues[u]]
    order.extend(rest[i] for i in rng.permutation(len(rest)))
    return order, stop


# ---- measurement ----------------------------------------------------------------------


def needed(study: Study, order: list[tuple[int, int]], full: tuple, grid: int) -> dict:
    """Smallest grid share after which the conclusions equal the full data's until the end."""
    total = len(order)
    drawn = [study.units[u].judgements[j] for u, j in order]
    first = {"clusters": 1.0, "exact": 1.0}
    open_ = {"clusters": True, "exact": True}
    for g in range(grid - 1, 0, -1):
        m = max(1, round(total * g / grid))
        ranking, clusters = conclusions(study, drawn[:m])
        if open_["clusters"] and clusters == full[1]:
            first["clusters"] = g / grid
        else:
            open_["clusters"] = False
        if open_["exact"] and clusters == full[1] and ranking == full[0]:
            first["exact"] = g / grid
        else:
            open_["exact"] = False
        if not any(open_.values()):
            break
    return first


def complete_units(study: Study, order: list[tuple[int, int]], wanted: int = 10) -> float | None:
    """Share of judgements after which `wanted` units with k >= 2 have all their k judgements
    (interval alpha computable), or None if the study never gets there."""
    k = {u: len(unit.judgements) for u, unit in enumerate(study.units)}
    seen: dict[int, int] = defaultdict(int)
    done = 0
    for n, (u, _j) in enumerate(order, start=1):
        seen[u] += 1
        if k[u] >= 2 and seen[u] == k[u]:
            done += 1
            if done >= wanted:
                return n / len(order)
    return None


def spread(values: list[float]) -> dict:
    a = np.asarray([v for v in values if v is not None], dtype=float)
    if not len(a):
        return {"median": None}
    q1, med, q3 = np.percentile(a, [25, 50, 75])
    return {
        "median": float(med),
        "q1": float(q1),
        "q3": float(q3),
        "min": float(a.min()),
        "max": float(a.max()),
        "n": int(len(a)),
    }


def run_study(study: Study, seeds: int, grid: int, params: AdaptiveParams) -> dict:
    total = sum(len(u.judgements) for u in study.units)
    everything = [j for u in study.units for j in u.judgements]
    full = conclusions(study, everything)
    result = {
        "study": study.name,
        "judgements": total,
        "units": len(study.units),
        "k": dict(sorted(((str(k), n) for k, n in _counts([len(u.judgements) for u in study.units]).items()))),
        "systems": len(full[0]),
        "full_ranking": list(full[0]),
        "full_clusters": [sorted(c) for c in full[1]],
        "policies": {},
    }
    per: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    t0 = time.perf_counter()
    for seed in range(seeds):
        orders = {
            "uniform": order_uniform(study, np.random.default_rng([seed, 1])),
            "overlap-first": order_overlap_first(study, np.random.default_rng([seed, 2])),
        }
        orders["adaptive"], stop = order_adaptive(study, np.random.default_rng([seed, 3]), params)
        orders["adaptive-any"], stop_any = order_adaptive(study, np.random.default_rng([seed, 4]), params, fill=False)
        # The stopping rule alone, no targeting: only its stopping point is measured.
        order_stop, stop_uniform = order_adaptive(
            study, np.random.default_rng([seed, 5]), params, fill=False, target=False
        )
        for policy, order in orders.items():
            for criterion, share in needed(study, order, full, grid).items():
                per[policy][criterion].append(share)
            per[policy]["ten_complete_units"].append(complete_units(study, order))
        for policy, st, order in (
            ("adaptive", stop, orders["adaptive"]),
            ("adaptive-any", stop_any, orders["adaptive-any"]),
            ("uniform+stop", stop_uniform, order_stop),
        ):
            drawn = [study.units[u].judgements[j] for u, j in order[: st["judgements"]]]
            ranking, clusters = conclusions(study, drawn)
            per[policy]["stop_share"].append(st["judgements"] / total)
            per[policy]["stop_fired"].append(st["stopped"])
            per[policy]["stop_clusters_equal"].append(clusters == full[1])
            per[policy]["stop_exact_equal"].append(clusters == full[1] and ranking == full[0])
            per[policy]["stop_reason"].append(st["reason"])
    for policy, figures in per.items():
        out = {}
        for name, values in figures.items():
            if name in ("stop_fired", "stop_clusters_equal", "stop_exact_equal"):
                out[name] = f"{sum(values)}/{len(values)}"
            elif name == "stop_reason":
                out["stop_reasons"] = sorted(set(values))[:3]
            else:
                out[name] = spread(values)
        result["policies"][policy] = out
    result["seconds"] = round(time.perf_counter() - t0, 1)
    return result


def _counts(values):
    out: dict[int, int] = defaultdict(int)
    for v in values:
        out[v] += 1
    return out


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def _cell(f: dict) -> str:
    if not f or f.get("median") is None:
        return "never"
    return f"{_pct(f['median'])} [{_pct(f['q1'])}-{_pct(f['q3'])}]"


def table(results: list[dict]) -> str:
    lines = [
        "| study (judgements, systems, full clusters) | policy | clusters final after | exact ranking final after "
        "| adaptive / uniform (clusters) | 10 units at k after |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        u = r["policies"]["uniform"]["clusters"]["median"]
        sizes = "+".join(str(len(c)) for c in r["full_clusters"])
        for policy in ("uniform", "overlap-first", "adaptive", "adaptive-any"):
            f = r["policies"][policy]
            ratio = f["clusters"]["median"] / u if policy.startswith("adaptive") and u else None
            lines.append(
                f"| {r['study']} ({r['judgements']}, {r['systems']}, {sizes}) | {policy} | {_cell(f['clusters'])} "
                f"| {_cell(f['exact'])} | {'' if ratio is None else f'{ratio:.2f}'} "
                f"| {_cell(f['ten_complete_units'])} |"
            )
        for policy in ("adaptive", "adaptive-any", "uniform+stop"):
            a = r["policies"][policy]
            lines.append(
                f"| {r['study']} | {policy}: stop | at {_cell(a['stop_share'])} (rule fired {a['stop_fired']}) "
                f"| clusters equal at stop {a['stop_clusters_equal']}, exact {a['stop_exact_equal']} | | |"
            )
    return "\n".join(lines)


def summary(results: list[dict]) -> str:
    """Ratios: judgements spent by adaptive (its stopping point, when its conclusions were the
    full data's) against uniform, which has no stopping rule and spends everything, and
    against uniform with the same stopping rule."""
    lines = [
        "| study | adaptive stops at (conclusions = full data's) | vs uniform (all judgements) "
        "| uniform+stop stops at (= full data's) | adaptive / uniform+stop | hindsight: adaptive / uniform |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        a, us = r["policies"]["adaptive"], r["policies"]["uniform+stop"]
        u = r["policies"]["uniform"]["clusters"]["median"]
        stop, ustop = a["stop_share"]["median"], us["stop_share"]["median"]
        lines.append(
            f"| {r['study']} | {_pct(stop)} ({a['stop_clusters_equal']}) | {stop:.2f} "
            f"| {_pct(ustop)} ({us['stop_clusters_equal']}) | {stop / ustop:.2f} "
            f"| {a['clusters']['median'] / u:.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--grid", type=int, default=20, help="check points (default 20: every 5%%)")
    parser.add_argument("--quick", action="store_true", help="3 seeds, 10 check points (about 1.5 minutes of CPU)")
    parser.add_argument("--only", default="", help="comma-separated study names")
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "out" / "allocation.json"))
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.grid = 3, 10
    data = Path(args.data)
    if not (data / "e2e-human").is_dir():
        sys.exit(f"no shared data at {data} (see SOURCES.md): nothing to replay")
    params = AdaptiveParams()
    wanted = {s for s in args.only.split(",") if s}
    results = []
    for study in studies(data):
        if wanted and study.name not in wanted:
            continue
        r = run_study(study, args.seeds, args.grid, params)
        results.append(r)
        print(table([r]).split("\n", 2)[2], flush=True)
        print(f"  ({r['seconds']} s)", flush=True)
    print()
    print(
        f"{args.seeds} seeds, conclusions checked every {100 / args.grid:g}% of the judgements; "
        f"median [IQR] share of all judgements"
    )
    print(table(results))
    print()
    print(summary(results))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps({"seeds": args.seeds, "grid": args.grid, "params": asdict(params), "results": results}, indent=2)
    )
    print(f"written {out}")


if __name__ == "__main__":
    main()
