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

minCER with CER: ours (the exact search of `mincer_search`: closed form,
bound + witness, lattice DP) against our own batched full level search
(`coherent=no`, default caps) on every HATS segment, at thresholds 0.02,
0.05 and 0.1; k must be identical wherever the full search is not capped.
Both are also checked against the reference semantics: the plain
one-candidate-at-a-time search scoring each candidate with jiwer's CER
(`get_metric("cer")`, strip included), on the segments with at most
`--cer-peer-errors` character errors (where it is exhaustive).

Data: HATS (French ASR, ../shared/data/hats/hats.tsv or
$WORKBENCH_SHARED_DATA/hats/hats.tsv), both hypotheses of each row against
its reference; embedded metrics WER and CER (jiwer) and SemDist (packaged
MiniLM). Both implementations must give identical k; the script fails
otherwise. Prints segments/s and the ratio.

    .venv/bin/python bench/bench_mined.py [--wer-rows 150] [--cer-rows 1000] [--semdist-rows 20] [--threads N]
"""

from __future__ import annotations

import argparse
import csv
import itertools
import math
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from metrics.scorers import get_metric  # noqa: E402
from metrics.scorers.mined import PASS_EPS, align  # noqa: E402

HATS = Path(os.environ.get("WORKBENCH_SHARED_DATA") or ROOT.parent / "shared" / "data") / "hats" / "hats.tsv"


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


def bench(
    label: str,
    name: str,
    embedded: str,
    hyps,
    refs,
    *,
    peer_cache: tuple[bool, ...] = (True,),
    repeats: int = 1,
    **options,
):
    ours = get_metric(name, metric=embedded, **options)
    peer_metric = get_metric(embedded)
    ours.score(hyps[:1], refs[:1])  # load models outside the timings
    peer_metric.score(hyps[:1], refs[:1])
    unit = ours.unit
    caps = dict(
        threshold=ours.threshold,
        max_errors=int(ours.options["max_errors"]),
        max_candidates=int(ours.options["max_candidates"]),
    )

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
            raise SystemExit(
                f"{label}: k differs on {len(bad)} segments, e.g. #{bad[0]}: ours {our_k[bad[0]]}, peer {peer_k[bad[0]]}"
            )
        ratios[cached] = peer_s / ours_s
        peer_name = "one-at-a-time" + (
            "" if len(peer_cache) == 1 else (" (our embedding cache)" if cached else " (no embedding cache)")
        )
        print(
            f"  {peer_name}: {n / peer_s:8.2f} seg/s ({peer_s:.2f} s, {calls[0]} metric calls)   "
            f"ours {n / ours_s:8.2f} seg/s ({ours_s:.2f} s)   ratio {ratios[cached]:.1f}x",
            flush=True,
        )
    set_embedding_cache(True)
    capped = sum(s.extra["capped"] for s in segs)
    evaluated = sum(s.extra["evaluated"] for s in segs)
    print(
        f"{label}: {n} segments, threshold {caps['threshold']}, mean k {sum(our_k) / n:.2f}, "
        f"mean E {sum(s.extra['E'] for s in segs) / n:.2f}, candidates scored by ours {evaluated}; "
        f"capped {capped}; identical k on every segment",
        flush=True,
    )
    return ratios


def bench_mincer(hyps, refs, *, threshold: float, peer_errors: int) -> float:
    """Ours (default search, best of 3) against our full level search, both
    checked against the one-at-a-time search on jiwer's CER. Returns the speed ratio."""
    ours = get_metric("mincer", metric="cer", threshold=threshold)
    full = get_metric("mincer", metric="cer", threshold=threshold, coherent="no")
    ours.score(hyps[:1], refs[:1])
    full.score(hyps[:1], refs[:1])
    ours_s = math.inf
    for _ in range(3):  # best of 3: a sub-second run is otherwise at the mercy of the machine's load
        start = time.perf_counter()
        our_segs = ours.score(hyps, refs)
        ours_s = min(ours_s, time.perf_counter() - start)
    start = time.perf_counter()
    full_segs = full.score(hyps, refs)
    full_s = time.perf_counter() - start
    n = len(hyps)
    uncapped = [i for i, s in enumerate(full_segs) if not s.extra["capped"]]
    differ = [i for i in uncapped if our_segs[i].score != full_segs[i].score]

    peer = get_metric("cer")  # jiwer.cer, default transform (strip included)
    small = [i for i, s in enumerate(our_segs) if s.extra["E"] <= peer_errors]
    caps = dict(threshold=threshold, max_errors=peer_errors, max_candidates=2**peer_errors)
    start = time.perf_counter()
    peer_k = {i: naive_k(hyps[i], refs[i][0], metric=peer, unit="char", **caps) for i in small}
    peer_s = time.perf_counter() - start
    ours_vs_jiwer = sum(int(our_segs[i].score) != peer_k[i] for i in small)
    full_vs_jiwer = sum(int(full_segs[i].score) != peer_k[i] for i in small)
    print(
        f"  threshold {threshold}: full search {n / full_s:8.1f} seg/s ({full_s:.2f} s, "
        f"{sum(s.extra['evaluated'] for s in full_segs)} candidates, capped {n - len(uncapped)})   "
        f"ours {n / ours_s:8.1f} seg/s ({ours_s:.2f} s, capped {sum(s.extra['capped'] for s in our_segs)})   "
        f"ratio {full_s / ours_s:.1f}x; "
        f"k differs from the full search on {len(differ)} of {len(uncapped)} uncapped segments",
        flush=True,
    )
    print(
        f"    against jiwer.cer one candidate at a time ({len(small)} segments with E <= {peer_errors}, "
        f"{peer_s:.1f} s): ours differs on {ours_vs_jiwer}, the full search on {full_vs_jiwer}",
        flush=True,
    )
    if differ or ours_vs_jiwer or full_vs_jiwer:
        raise SystemExit(
            f"minCER threshold {threshold}: k differs (full search {len(differ)}, "
            f"jiwer {ours_vs_jiwer}/{full_vs_jiwer})"
        )
    return full_s / ours_s


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
    parser.add_argument("--cer-rows", type=int, default=1000, help="HATS rows for minCER with CER (2 segments each)")
    parser.add_argument(
        "--cer-peer-errors",
        type=int,
        default=8,
        help="segments with at most this many character errors are checked one candidate at a time",
    )
    parser.add_argument("--semdist-rows", type=int, default=20, help="HATS rows for SemDist (2 segments each)")
    parser.add_argument("--only", choices=("wer", "cer", "semdist"), help="run one section")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    args = parser.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    if not HATS.is_file():
        raise SystemExit(f"HATS data not found at {HATS}")
    ratios = {}
    if args.only in (None, "wer"):
        hyps, refs = load_hats(args.wer_rows)
        ratios["minwed/wer"] = bench("minWED with WER", "minwed", "wer", hyps, refs, threshold=0.2, repeats=5)[True]
    if args.only in (None, "cer"):
        hyps, refs = load_hats(args.cer_rows)
        print(
            f"minCER with CER (jiwer's, strip included): {len(hyps)} segments, ours against our full level search",
            flush=True,
        )
        for threshold in (0.02, 0.05, 0.1):
            ratios[f"mincer/cer {threshold} vs full search"] = bench_mincer(
                hyps, refs, threshold=threshold, peer_errors=args.cer_peer_errors
            )
    if args.only not in (None, "semdist"):
        print("ratios: " + ", ".join(f"{k} {v:.1f}x" for k, v in ratios.items()))
        return
    hyps, refs = load_hats(args.semdist_rows)
    semdist = bench("minWED with SemDist (MiniLM)", "minwed", "semdist", hyps, refs, peer_cache=(False, True))
    ratios["minwed/semdist vs plain one-at-a-time"] = semdist[False]
    ratios["minwed/semdist vs one-at-a-time on our cached encoder"] = semdist[True]
    ceiling = encoder_batching_ceiling([h for h in hyps[:128]])
    print(f"  (context: MiniLM encodes {ceiling:.1f}x faster batched than one text at a time on this device)")
    print("ratios: " + ", ".join(f"{k} {v:.1f}x" for k, v in ratios.items()))


if __name__ == "__main__":
    main()
