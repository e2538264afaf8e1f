"""Segments per second of `comet`, `cometkiwi`, `xcomet` and `metricx` against their references
(unbabel-comet 2.2.7; google-research/metricx's metricx24/models.py) on the same checkpoints: the
tiny random-weight ones of tests/metrics/scorers/comet_fixtures and metricx_fixtures. The
references run in their own environments (var/comet-ref, see bench/reference/comet_expected.py;
var/metricx-ref + var/metricx-src, see bench/reference/metricx_expected.py); without one only our
figures are printed for it.

    .venv/bin/python bench/bench_learned.py [--n 2000] [--device cpu|cuda] [--only xcomet,...]

Texts are distinct random word sequences (a fixed seed), so that our encoding of each distinct
text once gains nothing beyond what real data with shared sources and references would give;
`--shared` makes 4 systems share one source and reference per segment, as a WMT test set does.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
FIXTURES = ROOT / "tests" / "metrics" / "scorers" / "comet_fixtures"
REF_PYTHON = ROOT / "var" / "comet-ref" / "bin" / "python"
METRICX_FIXTURES = ROOT / "tests" / "metrics" / "scorers" / "metricx_fixtures"
METRICX_PYTHON = ROOT / "var" / "metricx-ref" / "bin" / "python"
METRICX_SRC = ROOT / "var" / "metricx-src"
WORDS = (
    "the cat sat on mat die Katze saß auf der Matte quick brown fox jumps over lazy dog le chat est assis "
    "sur tapis machine translation quality estimation without references numbers 1234 and 56.7 appear too"
).split()

REFERENCE = r"""
import json, sys, time, torch
from comet import load_from_checkpoint
args = json.loads(sys.argv[1])
torch.set_num_threads(args["threads"])
import os; os.chdir(args["cwd"])
model = load_from_checkpoint(args["ckpt"], local_files_only=True)
data = json.load(open(args["data"]))
best = None
for _ in range(args["repeat"]):  # the best of several: a busy machine slows single runs at random
    start = time.perf_counter()
    pred = model.predict(data, batch_size=args["batch_size"], gpus=1 if args["device"] == "cuda" else 0,
                         progress_bar=False, num_workers=1)
    took = time.perf_counter() - start
    best = took if best is None else min(best, took)
print(json.dumps({"seconds": best, "scores": [float(x) for x in pred.scores]}))
"""


# The reference's models.py on predict.py's inputs (as bench/reference/metricx_expected.py runs it),
# batches in file order.
METRICX_REFERENCE = r"""
import json, sys, time, torch
args = json.loads(sys.argv[1])
sys.path.insert(0, args["src"])
torch.set_num_threads(args["threads"])
from metricx24 import models
from transformers import AutoTokenizer
tok = AutoTokenizer.from_pretrained(args["ckpt"])
model = models.MT5ForRegression.from_pretrained(args["ckpt"], torch_dtype="auto").eval()
rows = json.load(open(args["data"]))
texts = ["source: " + r["src"] + " candidate: " + r["mt"] + " reference: " + r["ref"] for r in rows]
best = None
for _ in range(args["repeat"]):
    start = time.perf_counter()
    feats = []
    for t in texts:
        e = tok(t, max_length=args["max_len"], truncation=True, padding=False)
        feats.append({"input_ids": e["input_ids"][:-1], "attention_mask": e["attention_mask"][:-1]})
    scores = []
    with torch.no_grad():
        for i in range(0, len(feats), args["batch_size"]):
            b = tok.pad(feats[i : i + args["batch_size"]], return_tensors="pt")
            scores += [float(x) for x in model(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).predictions]
    took = time.perf_counter() - start
    best = took if best is None else min(best, took)
print(json.dumps({"seconds": best, "scores": scores}))
"""


def sentences(rng: random.Random, n: int) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) for _ in range(n)]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--shared", action="store_true")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per side; the best counts")
    parser.add_argument("--only", default="", help="comma-separated metrics to bench (default: all)")
    args = parser.parse_args()

    import torch

    from metrics.scorers import get_metric
    from metrics.scorers.files import trusted_paths

    torch.set_num_threads(args.threads)
    rng = random.Random(7)
    if args.shared:
        k = max(1, args.n // 4)
        srcs, refs = sentences(rng, k) * 4, sentences(rng, k) * 4
        srcs, refs = srcs[: args.n], refs[: args.n]
    else:
        srcs, refs = sentences(rng, args.n), sentences(rng, args.n)
    hyps = sentences(rng, args.n)
    data_file = ROOT / "var" / "bench_learned_data.json"
    data_file.parent.mkdir(exist_ok=True)
    print(f"{args.n} segments, device {args.device}, batch size {args.batch_size}, shared={args.shared}")
    print(f"{'metric':<10} {'ours seg/s':>11} {'reference seg/s':>16} {'ratio':>6} {'max |diff|':>11}")
    only = {m for m in args.only.split(",") if m}
    for name, checkpoint in (("comet", "comet-tiny"), ("cometkiwi", "kiwi-tiny"), ("xcomet", "xcomet-tiny")):
        if only and name not in only:
            continue
        with trusted_paths():
            metric = get_metric(
                name,
                model=str(FIXTURES / checkpoint),
                encoder=str(FIXTURES / "tiny-xlmr"),
                device=args.device,
                dtype="float32",
                batch_size=args.batch_size,
            )
            metric.score(hyps[:8], [[r] for r in refs[:8]], srcs[:8])  # load the model outside the timing
            ours_s = None
            for _ in range(args.repeat):  # the best of several, as for the reference
                start = time.perf_counter()
                ours = [s.score for s in metric.score(hyps, [[r] for r in refs], srcs)]
                took = time.perf_counter() - start
                ours_s = took if ours_s is None else min(ours_s, took)
        rows = [
            {"src": s, "mt": h} if name == "cometkiwi" else {"src": s, "mt": h, "ref": r}
            for s, h, r in zip(srcs, hyps, refs)
        ]
        data_file.write_text(json.dumps(rows), encoding="utf-8")
        ref_rate, ratio, diff = "-", "-", "-"
        if REF_PYTHON.exists():
            payload = {
                "ckpt": str(FIXTURES / checkpoint / "checkpoints" / "model.ckpt"),
                "cwd": str(FIXTURES),
                "data": str(data_file),
                "batch_size": args.batch_size,
                "device": args.device,
                "threads": args.threads,
                "repeat": args.repeat,
            }
            done = subprocess.run(
                [str(REF_PYTHON), "-c", REFERENCE, json.dumps(payload)], capture_output=True, text=True, check=True
            )
            result = json.loads(done.stdout.strip().splitlines()[-1])
            ref_rate = f"{args.n / result['seconds']:.0f}"
            ratio = f"{result['seconds'] / ours_s:.2f}"
            diff = f"{max(abs(a - b) for a, b in zip(ours, result['scores'])):.1e}"
        print(f"{name:<10} {args.n / ours_s:>11.0f} {ref_rate:>16} {ratio:>6} {diff:>11}")
    if not only or "metricx" in only:
        bench_metricx(args, hyps, refs, srcs, data_file)
    return 0


def bench_metricx(args, hyps: list[str], refs: list[str], srcs: list[str], data_file: Path) -> None:
    from metrics.scorers import get_metric
    from metrics.scorers.files import trusted_paths

    checkpoint = METRICX_FIXTURES / "mt5-tiny"
    max_len = json.loads((METRICX_FIXTURES / "expected.json").read_text(encoding="utf-8"))["provenance"][
        "max_input_length"
    ]
    with trusted_paths():
        metric = get_metric(
            "metricx",
            model=str(checkpoint),
            tokenizer=str(checkpoint),
            max_input_length=max_len,
            device=args.device,
            dtype="float32",
            batch_size=args.batch_size,
        )
        metric.score(hyps[:8], [[r] for r in refs[:8]], srcs[:8])  # load the model outside the timing
        ours_s = None
        for _ in range(args.repeat):
            start = time.perf_counter()
            ours = [s.score for s in metric.score(hyps, [[r] for r in refs], srcs)]
            took = time.perf_counter() - start
            ours_s = took if ours_s is None else min(ours_s, took)
    ref_rate, ratio, diff = "-", "-", "-"
    if METRICX_PYTHON.exists() and (METRICX_SRC / "metricx24" / "models.py").exists():
        data_file.write_text(
            json.dumps([{"src": s, "mt": h, "ref": r} for s, h, r in zip(srcs, hyps, refs)]), encoding="utf-8"
        )
        payload = {
            "ckpt": str(checkpoint),
            "src": str(METRICX_SRC),
            "data": str(data_file),
            "batch_size": args.batch_size,
            "max_len": max_len,
            "threads": args.threads,
            "repeat": args.repeat,
        }
        done = subprocess.run(
            [str(METRICX_PYTHON), "-c", METRICX_REFERENCE, json.dumps(payload)],
            capture_output=True,
            text=True,
            check=True,
        )
        result = json.loads(done.stdout.strip().splitlines()[-1])
        ref_rate = f"{args.n / result['seconds']:.0f}"
        ratio = f"{result['seconds'] / ours_s:.2f}"
        diff = f"{max(abs(a - b) for a, b in zip(ours, result['scores'])):.1e}"
    print(f"{'metricx':<10} {args.n / ours_s:>11.0f} {ref_rate:>16} {ratio:>6} {diff:>11}")


if __name__ == "__main__":
    sys.exit(main())
