"""minED throughput: our batched search against a straightforward one.

Peer: the same algorithm (levels 0, 1, ..., the same caps and greedy
completion past them) written the plain way: one embedded-metric call per
candidate hypothesis, segment after segment, stopping at the first passing
candidate of a level, and no coherent shortcut. For SemDist the peer runs
twice: plain (each call encodes its candidate and reference, as a
straightforward implementation does) and on our shared encoder with its
cross-call embedding cache (references encoded once), to separate what the
cache gives from what batching gives.
Ours: the candidates of a level, for all segments, in batched calls
(duplicates once, most promising subsets first, a segment leaving the level
at its first pass), and for WER inside minWED only level 1 (the exact
coherent shortcut).

Data: HATS (French ASR, ../shared/data/hats/hats.tsv), both hypotheses of
each row against its reference; embedded metrics WER (jiwer) and SemDist
(packaged MiniLM). Both implementations must give identical k; the script
fails otherwise. Prints segments/s and the ratio.

    .venv/bin/python bench/bench_mined.py [--wer-rows 150] [--semdist-rows 20] [--threads N]
"""
from __future__ import annotations

import argparse
import csv
import itertools
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from metrics.scorers import get_metric  # noqa: E402
from metrics.scorers.mined import PASS_EPS, align  # noqa: E402

HATS = ROOT.parent / "shared" / "data" / "hats" / "hats.tsv"


def load_hats(rows: int) -> tuple[list[str], list[list[str]]]:
    with open(HATS, encoding="utf-8") as fh:
        data = list(csv.DictReader(fh, delimiter="\t"))[:rows]
    hyps, refs = [], []
    for row in data:
        for key in ("hypA", "hypB"):
            hyps.append(row[key])
            refs.append([row["reference"]])
    return hyps, refs


def naive_k(hyp: str, ref: str, *, metric, unit: str, threshold: float, max_errors: int, max_candidates: int) -> int:
    """The straightforward search: one metric call per candidate."""
    a = align(ref, hyp, unit)
    reference, n_errors = a.reference, len(a.errors)

    def value(corrections) -> float:
        [seg] = metric.score([a.apply(corrections)], [[reference]])
        return 1.0 - seg.score if metric.higher_is_better else seg.score

    def passes(v: float) -> bool:
        return v < threshold - PASS_EPS

    base = value(())
    singles = [value((e,)) for e in range(n_errors)]
    evaluated = 1 + n_errors
    if n_errors == 0 or passes(base):
        return 0
    if any(passes(v) for v in singles) or n_errors == 1:
        return 1
    best = (min(range(n_errors), key=lambda e: (singles[e], e)),)
    level = 2
    while level <= max_errors and evaluated + math.comb(n_errors, level) <= max_candidates:
        scored = []
        for combo in itertools.combinations(range(n_errors), level):
            v = value(combo)
            if passes(v):
                return level  # the plain way also stops at the first passing candidate
            scored.append((v, combo))
        evaluated += len(scored)
        if level == n_errors:
            return level
        best = min(scored)[1]
        level += 1
    while True:  # greedy completion past the cap
        options = [tuple(sorted(set(best) | {e})) for e in range(n_errors) if e not in best]
        values = [value(c) for c in options]
        i = min(range(len(options)), key=lambda j: (values[j], options[j]))
        best = options[i]
        if passes(values[i]) or len(best) == n_errors:
            return len(best)


def set_embedding_cache(enabled: bool) -> None:
    """Turn the shared encoder's cross-call embedding cache on or off. A
    straightforward search has no such cache: every metric call encodes its
    candidate and its reference again."""
    try:
        from metrics.scorers import encoder
    except ImportError:
        return
    for enc in list(getattr(encoder, "_ENCODERS", {}).values()):
        enc.clear_cache()
        for cache in (enc._token_cache, enc._sentence_cache):
            cache.__dict__.setdefault("default_max_bytes", cache.max_bytes)
            cache.max_bytes = cache.default_max_bytes if enabled else 0


def bench(label: str, name: str, embedded: str, hyps, refs, *, peer_cache: tuple[bool, ...] = (True,), repeats: int = 1,
          **options):
    ours = get_metric(name, metric=embedded, **options)
    peer_metric = get_metric(embedded)
    ours.score(hyps[:1], refs[:1])  # load models outside the timings
    peer_metric.score(hyps[:1], refs[:1])
    unit = ours.unit
    caps = dict(threshold=ours.threshold, max_errors=int(ours.options["max_errors"]),
                max_candidates=int(ours.options["max_candidates"]))

    calls = [0]
    plain_score = peer_metric.score

    def counted(*args, **kwargs):
        calls[0] += 1
        return plain_score(*args, **kwargs)

    peer_metric.score = counted
    # Best of `repeats` cold-cache runs: a fast run is otherwise dominated by
    # first-call costs (lazy imports, allocator warm-up) rather than the search.
    ours_s = math.inf
    for _ in range(repeats):
        set_embedding_cache(True)
        start = time.perf_counter()
        segs = ours.score(hyps, refs)
        ours_s = min(ours_s, time.perf_counter() - start)
    our_k = [int(s.score) for s in segs]
    n = len(hyps)

    ratios = {}
    for cached in peer_cache:
        set_embedding_cache(cached)
        calls[0] = 0
        start = time.perf_counter()
        peer_k = [naive_k(h, r[0], metric=peer_metric, unit=unit, **caps) for h, r in zip(hyps, refs)]
        peer_s = time.perf_counter() - start
        if our_k != peer_k:
            bad = [i for i, (a, b) in enumerate(zip(our_k, peer_k)) if a != b]
            raise SystemExit(f"{label}: k differs on {len(bad)} segments, e.g. #{bad[0]}: ours {our_k[bad[0]]}, peer {peer_k[bad[0]]}")
        ratios[cached] = peer_s / ours_s
        peer_name = "one-at-a-time" + ("" if len(peer_cache) == 1 else (" (our embedding cache)" if cached else " (no embedding cache)"))
        print(f"  {peer_name}: {n / peer_s:8.2f} seg/s ({peer_s:.2f} s, {calls[0]} metric calls)   "
              f"ours {n / ours_s:8.2f} seg/s ({ours_s:.2f} s)   ratio {ratios[cached]:.1f}x", flush=True)
    set_embedding_cache(True)
    capped = sum(s.extra["capped"] for s in segs)
    evaluated = sum(s.extra["evaluated"] for s in segs)
    print(f"{label}: {n} segments, threshold {caps['threshold']}, mean k {sum(our_k) / n:.2f}, "
          f"mean E {sum(s.extra['E'] for s in segs) / n:.2f}, candidates scored by ours {evaluated}; "
          f"capped {capped}; identical k on every segment", flush=True)
    return ratios


def encoder_batching_ceiling(texts: list[str]) -> float:
    """How much faster the embedding model is batched than one text at a time on
    this machine: the most batching can give minED with an embedding metric."""
    from metrics.scorers.encoder import get_encoder

    enc = get_encoder(None, None)
    enc.clear_cache()
    start = time.perf_counter()
    enc.sentence_embeddings(texts)
    batched = time.perf_counter() - start
    enc.clear_cache()
    start = time.perf_counter()
    for text in texts:
        enc.sentence_embeddings([text])
    single = time.perf_counter() - start
    enc.clear_cache()
    return single / batched


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wer-rows", type=int, default=150, help="HATS rows for WER (2 segments each)")
    parser.add_argument("--semdist-rows", type=int, default=20, help="HATS rows for SemDist (2 segments each)")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    args = parser.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    if not HATS.is_file():
        raise SystemExit(f"HATS data not found at {HATS}")
    ratios = {}
    hyps, refs = load_hats(args.wer_rows)
    ratios["minwed/wer"] = bench("minWED with WER", "minwed", "wer", hyps, refs, threshold=0.2, repeats=5)[True]
    hyps, refs = load_hats(args.semdist_rows)
    semdist = bench("minWED with SemDist (MiniLM)", "minwed", "semdist", hyps, refs, peer_cache=(False, True))
    ratios["minwed/semdist vs plain one-at-a-time"] = semdist[False]
    ratios["minwed/semdist vs one-at-a-time on our cached encoder"] = semdist[True]
    ceiling = encoder_batching_ceiling([h for h in hyps[:128]])
    print(f"  (context: MiniLM encodes {ceiling:.1f}x faster batched than one text at a time on this device)")
    print("ratios: " + ", ".join(f"{k} {v:.1f}x" for k, v in ratios.items()))


if __name__ == "__main__":
    main()
