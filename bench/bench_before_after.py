"""The annotation load benchmark on two versions of the code, interleaved, with ratios.

    git worktree add /tmp/before <commit>
    .venv/bin/python bench/bench_before_after.py --before /tmp/before --rounds 2 -- --seconds 10

Runs `bench/bench_annotation.py` of the earlier checkout (`--before`, which gets this
checkout's .venv) and of this one alternately, B A B A ... (`--rounds` pairs), each on its own
scratch database, and prints per mode the median over rounds of judgements per second and of
fetch / submit p95 for both, and after / before. Interleaving pairs each "after" with a
"before" measured minutes apart, so a machine whose speed drifts moves both. Arguments after
`--` go to bench_annotation.py unchanged.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(tree: Path, db: str, extra: list[str]) -> dict:
    venv = tree / ".venv"
    if not venv.exists():
        venv.symlink_to(ROOT / ".venv")
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    env = {**os.environ, "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{db}"}
    subprocess.run(
        [str(ROOT / ".venv/bin/python"), str(tree / "bench/bench_annotation.py"), "--json", out, *extra],
        cwd=tree,
        env=env,
        check=True,
        stdout=sys.stderr,
    )
    return {r["mode"]: r for r in json.loads(Path(out).read_text())["results"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="checkout of the earlier code (e.g. `git worktree add`)")
    parser.add_argument("--rounds", type=int, default=2, help="before/after pairs")
    parser.add_argument("rest", nargs=argparse.REMAINDER, help="-- then bench_annotation.py's arguments")
    args = parser.parse_args()
    extra = [a for a in args.rest if a != "--"]
    if args.before is None:  # `make bench` runs every script: this one has nothing to compare without it
        print("bench_before_after: give --before DIR, a checkout of the earlier code; nothing compared")
        return
    runs: dict[str, list[dict]] = {"before": [], "after": []}
    for k in range(args.rounds):
        for side, tree in (("before", args.before.resolve()), ("after", ROOT)):
            print(f"round {k + 1}: {side} ({tree})", file=sys.stderr)
            runs[side].append(run(tree, f"bench_{side}", extra))
    modes = [m for m in runs["after"][0] if all(m in r for r in runs["before"])]
    print(f"median of {args.rounds} interleaved rounds; before = {args.before}")
    print(f"{'mode':50} {'judgements/s before / after':>28} {'ratio':>6}   {'fetch p95 ms':>17} {'submit p95 ms':>17}")
    for mode in modes:
        med = {
            side: {
                key: statistics.median(r[mode][key] for r in runs[side])
                for key in ("judgements_per_s", "fetch_p95", "submit_p95")
            }
            for side in runs
        }
        b, a = med["before"], med["after"]
        print(
            f"{mode:50} {b['judgements_per_s']:12.1f} / {a['judgements_per_s']:<12.1f} "
            f"{a['judgements_per_s'] / b['judgements_per_s'] if b['judgements_per_s'] else float('nan'):6.2f}   "
            f"{b['fetch_p95']:7.1f} / {a['fetch_p95']:<7.1f} {b['submit_p95']:7.1f} / {a['submit_p95']:<7.1f}"
        )
    for side in runs:
        for k, r in enumerate(runs[side]):
            print(
                f"{side} round {k + 1}: "
                + ", ".join(f"{m.split(' (')[0]}@{v['think']:g}s {v['judgements_per_s']:.0f} j/s" for m, v in r.items())
            )


if __name__ == "__main__":
    main()
