"""Throughput of our BERTScore against bert-score's BERTScorer, same model, same data.

Default: the packaged MiniLM (hidden state 6) on ASSET test, every original
sentence scored against its 10 reference simplifications (359 x 10 pairs),
then the 10 simplifications of each sentence scored against the original
(3,590 single-reference pairs). Both sides get the model loaded before the
clock starts; each timed run starts with an empty embedding cache, and idf
(--idf) is computed inside the timed region on both sides. Prints segments/s,
the ratio ours / bert-score, and the largest |difference| of P, R, F.

GPU mode: `--model-config large --device cuda` builds a random-weight model of
roberta-large's shape (24 layers, 1024 hidden, 16 heads) with a small
byte-level BPE tokenizer trained on the data, saved to a temporary directory
both scorers load; `--model-config tiny` is the same recipe at toy size, to
check the mode on a CPU. `--dtype float32` keeps our model in fp32 on CUDA so
the scores can be compared exactly (bf16 is our CUDA default).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "asset"

SIZES = {
    # roberta-large's shape (RobertaConfig defaults are base-sized, so spelled out).
    "large": dict(num_hidden_layers=24, hidden_size=1024, num_attention_heads=16, intermediate_size=4096),
    "base": dict(num_hidden_layers=12, hidden_size=768, num_attention_heads=12, intermediate_size=3072),
    "tiny": dict(num_hidden_layers=4, hidden_size=64, num_attention_heads=4, intermediate_size=128),
}


def load_asset(folder: Path, limit: int | None) -> tuple[list[str], list[list[str]]]:
    orig = (folder / "asset.test.orig").read_text(encoding="utf-8").splitlines()
    simps = [(folder / f"asset.test.simp.{k}").read_text(encoding="utf-8").splitlines() for k in range(10)]
    n = min(len(orig), *(len(s) for s in simps))
    if limit:
        n = min(n, limit)
    return orig[:n], [[s[i] for s in simps] for i in range(n)]


def build_random_model(texts: list[str], size: str, out_dir: Path) -> Path:
    """A random-weight RoBERTa of the given size plus a small BPE tokenizer, saved to out_dir."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaConfig, RobertaModel, RobertaTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        texts, vocab_size=4000, min_frequency=1, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    )
    raw = out_dir / "bpe"
    raw.mkdir(parents=True, exist_ok=True)
    bpe.save_model(str(raw))
    tokenizer = RobertaTokenizerFast(
        vocab_file=str(raw / "vocab.json"), merges_file=str(raw / "merges.txt"), model_max_length=512
    )
    tokenizer.save_pretrained(out_dir)  # writes vocab.json + merges.txt too, for bert-score's slow tokenizer
    torch.manual_seed(0)
    config = RobertaConfig(
        vocab_size=len(tokenizer),
        max_position_embeddings=514,
        type_vocab_size=1,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=0,
        eos_token_id=2,
        **SIZES[size],
    )
    RobertaModel(config).save_pretrained(out_dir)
    return out_dir


def time_ours(model: str, hyps, refs, layer: int, idf: bool, device: str, batch_size: int):
    import torch

    from metrics.scorers.bertscore import BERTScoreMetric

    metric = BERTScoreMetric(model=model, layer=layer, idf=idf, device=device, batch_size=batch_size)
    encoder = metric.encoder()
    metric.score(hyps[:2], refs[:2])  # warm-up (allocator, kernels)
    encoder.clear_cache()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    start, cpu = time.perf_counter(), time.process_time()
    segments = metric.score(hyps, refs)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    values = torch.tensor([[s.extra["precision"], s.extra["recall"], s.extra["f1"]] for s in segments])
    return elapsed, cpu, values


def time_bert_score(model: str, hyps, refs, layer: int, idf: bool, device: str, batch_size: int):
    import torch
    from bert_score import BERTScorer

    scorer = BERTScorer(model_type=model, num_layers=layer, idf=False, device=device, batch_size=batch_size)
    scorer.score(hyps[:2], refs[:2], batch_size=batch_size)  # warm-up
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    start, cpu = time.perf_counter(), time.process_time()
    if idf:
        scorer._idf = True
        scorer._idf_dict = None
        scorer.compute_idf([r for group in refs for r in group])
    P, R, F = scorer.score(hyps, refs, batch_size=batch_size)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    return elapsed, cpu, torch.stack([P, R, F], dim=1)


def run_case(label: str, model: str, hyps, refs, args) -> float:
    n = len(hyps)
    pairs = sum(len(r) for r in refs)
    print(f"\n-- {label}: {n} segments, {pairs} pairs, layer {args.layer}, idf={args.idf}, device {args.device}")
    ratios = []
    for rep in range(args.repeat):
        # Alternate which side runs first, so load changes on a shared machine hit both.
        if rep % 2 == 0:
            t_bs, c_bs, v_bs = time_bert_score(model, hyps, refs, args.layer, args.idf, args.device, args.batch_size)
            t_us, c_us, v_us = time_ours(model, hyps, refs, args.layer, args.idf, args.device, args.batch_size)
        else:
            t_us, c_us, v_us = time_ours(model, hyps, refs, args.layer, args.idf, args.device, args.batch_size)
            t_bs, c_bs, v_bs = time_bert_score(model, hyps, refs, args.layer, args.idf, args.device, args.batch_size)
        diff = (v_us - v_bs.to(v_us.dtype)).abs().max().item()
        ratio = t_bs / t_us
        ratios.append(ratio)
        print(
            f"run {rep + 1}: bert-score {n / t_bs:8.1f} seg/s ({t_bs:6.2f} s wall, {c_bs:6.2f} s cpu) | "
            f"ours {n / t_us:8.1f} seg/s ({t_us:6.2f} s wall, {c_us:6.2f} s cpu) | "
            f"ratio {ratio:5.2f}x wall, {c_bs / c_us:5.2f}x cpu | max |diff| P,R,F {diff:.2e}",
            flush=True,
        )
    best = max(ratios)
    print(f"{label}: ratio (best of {args.repeat}) {best:.2f}x, all {', '.join(f'{r:.2f}' for r in ratios)}")
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="ASSET folder (asset.test.orig, .simp.0-9)")
    parser.add_argument("--model", default=None, help="local model directory (default: packaged MiniLM)")
    parser.add_argument(
        "--model-config",
        choices=sorted(SIZES),
        default=None,
        help="build a random-weight RoBERTa of this size instead (GPU benchmark)",
    )
    parser.add_argument(
        "--layer", type=int, default=None, help="hidden state (default: top; 17 for --model-config large)"
    )
    parser.add_argument("--idf", action="store_true")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default=None, help="our dtype (float32, bfloat16, float16); default bf16 on CUDA")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--limit", type=int, default=None, help="use the first N ASSET sentences")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    parser.add_argument("--cases", default="multi,pairs", help="multi (orig vs 10 refs), pairs (simp vs orig)")
    args = parser.parse_args()

    if not (args.data / "asset.test.orig").is_file():
        print(f"skipped: ASSET data not found in {args.data} (pass --data)")
        return 0
    if args.dtype:
        os.environ["WORKBENCH_DTYPE"] = args.dtype
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    if args.threads:
        torch.set_num_threads(args.threads)
    orig, refs = load_asset(args.data, args.limit)

    with tempfile.TemporaryDirectory(prefix="bench-bertscore-") as tmp:
        if args.model_config:
            model = str(build_random_model(orig + [r for g in refs for r in g], args.model_config, Path(tmp)))
            if args.layer is None:
                args.layer = 17 if args.model_config == "large" else SIZES[args.model_config]["num_hidden_layers"]
        else:
            from metrics.scorers.loading import resolve_model_path

            model = str(resolve_model_path(args.model))
        if args.layer is None:
            import json

            args.layer = int(json.loads((Path(model) / "config.json").read_text())["num_hidden_layers"])
        print(
            f"model {model}; torch {torch.__version__}, {torch.get_num_threads()} threads; "
            f"transformers {transformers.__version__}"
        )
        results = {}
        cases = {c.strip() for c in args.cases.split(",")}
        if "multi" in cases:
            results["multi"] = run_case("ASSET orig vs 10 references", model, orig, refs, args)
        if "pairs" in cases:
            hyps = [r for g in refs for r in g]
            pair_refs = [[o] for o in orig for _ in range(10)]
            results["pairs"] = run_case("ASSET simplification vs original (1 ref)", model, hyps, pair_refs, args)
    print(
        "\nsummary: " + ", ".join(f"{k} {v:.2f}x" for k, v in results.items()) + " (ours / bert-score, higher = faster)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
