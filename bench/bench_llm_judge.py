"""Throughput of the llm-judge metric (outputs/s, tokens/s) in its three modes.

Outputs: ASSET test simplifications (simp.0) judged against their original
sentence as source (`--limit` of them). The judge is a Llama-shaped model with
random weights and a byte-level BPE tokenizer trained on the data (digits as
single tokens), built from a config and saved to a temporary directory, which
the metric loads like any checkpoint: nothing is downloaded.

Each mode is timed after a warm-up call (model loaded, vocabulary indexed), and
next to a baseline measured in the same run:

* score: batched (`--batch-size`) against one prompt per forward pass
  (batch_size=1): the ratio is what batching buys;
* pairwise: the same, over all pairs of `--systems` pseudo-systems per item
  (both orders);
* spans: constrained generation against plain greedy generation of the same
  number of new tokens with transformers' generate() (no constraint, no
  parsing): the ratio is what the constraint costs.

tokens/s counts prompt tokens read (score, pairwise) or prompt plus generated
tokens (spans). CPU default: a tiny model (2 layers, hidden 64). `--gpu`: a
Llama-3-8B-shaped model (32 layers, hidden 4096, 32 heads / 8 KV heads, MLP
14336, vocabulary 128,256) in bf16 on CUDA, built with random weights directly
on the GPU and saved once (about 16 GB under --workdir).
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
if not DEFAULT_DATA.is_dir():
    DEFAULT_DATA = Path(os.environ.get("WORKBENCH_SHARED_DATA", "/work/shared/data")) / "asset"

LLAMA_8B = dict(
    hidden_size=4096,
    intermediate_size=14336,
    num_hidden_layers=32,
    num_attention_heads=32,
    num_key_value_heads=8,
    vocab_size=128256,
    max_position_embeddings=8192,
    rope_theta=500000.0,
)
TINY = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=2048,
)


def load_texts(folder: Path, limit: int) -> tuple[list[str], list[str]]:
    srcs = (folder / "asset.test.orig").read_text(encoding="utf-8").splitlines()[:limit]
    outs = (folder / "asset.test.simp.0").read_text(encoding="utf-8").splitlines()[:limit]
    return srcs, outs


def build_judge(directory: Path, texts: list[str], *, gpu: bool) -> Path:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    if (directory / "config.json").is_file():
        return directory
    directory.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=8000,
        special_tokens=["<|endoftext|>", "<|pad|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(texts + ['{"errors":[{"text":"x","occurrence":0,"severity":"minor"}]}'], trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|endoftext|>",
        bos_token="<|endoftext|>",
        pad_token="<|pad|>",
        model_max_length=8192,
    )
    tokenizer.chat_template = (
        "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
    )
    tokenizer.save_pretrained(str(directory))
    shape = dict(LLAMA_8B) if gpu else dict(TINY, vocab_size=len(tokenizer))
    config = LlamaConfig(
        **shape,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(0)
    if gpu:
        # Built in bf16 directly on the GPU: 16 GB instead of 32 GB of fp32 first.
        torch.set_default_dtype(torch.bfloat16)
        try:
            with torch.device("cuda"):
                model = LlamaForCausalLM(config)
        finally:
            torch.set_default_dtype(torch.float32)
    else:
        model = LlamaForCausalLM(config)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"built a Llama-shaped judge: {n_params / 1e9:.2f} B parameters, vocabulary {config.vocab_size}")
    model.save_pretrained(str(directory))
    del model
    if gpu:
        torch.cuda.empty_cache()
    return directory


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpu", action="store_true", help="8B-shaped model in bf16 on CUDA")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--limit", type=int, default=None, help="outputs (default 64 on CPU, 512 on GPU)")
    parser.add_argument("--systems", type=int, default=3, help="outputs per item in pairwise mode")
    parser.add_argument("--batch-size", type=int, default=None, help="default 16 on CPU, 32 on GPU")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--modes", default="score,pairwise,spans")
    parser.add_argument("--workdir", type=Path, default=None, help="where the model is built (kept between runs)")
    args = parser.parse_args()

    import torch

    from metrics.scorers import get_metric

    limit = args.limit or (512 if args.gpu else 64)
    batch = args.batch_size or (32 if args.gpu else 16)
    device = "cuda" if args.gpu else "cpu"
    if args.gpu and not torch.cuda.is_available():
        sys.exit("--gpu: CUDA is not available on this machine")
    srcs, outs = load_texts(args.data, limit)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench-llm-judge-"))
    path, built = timed(lambda: build_judge(workdir / ("llama8b" if args.gpu else "tiny"), srcs + outs, gpu=args.gpu))
    print(
        f"model at {path} (built/found in {built:.1f} s); {len(outs)} outputs, batch {batch}, device {device}, "
        f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads"
    )
    common = {"model": str(path), "device": device}

    for mode in args.modes.split(","):
        if mode == "score":
            fast = get_metric("llm-judge", **common, batch_size=batch)
            slow = get_metric("llm-judge", **common, batch_size=1)
            tokens = sum(len(ids) for ids in fast.prompt_ids(outs, srcs=srcs))
            n, kwargs = len(outs), {"srcs": srcs}
            hyps = outs
        elif mode == "pairwise":
            fast = get_metric("llm-judge", **common, mode="pairwise", batch_size=batch)
            slow = get_metric("llm-judge", **common, mode="pairwise", batch_size=1)
            k = args.systems
            items = len(outs) // k
            hyps = outs[: items * k]
            kwargs = {"srcs": [srcs[i // k * k] for i in range(len(hyps))], "items": [i // k for i in range(len(hyps))]}
            pairs = [(g * k + a, g * k + b) for g in range(items) for a in range(k) for b in range(k) if a != b]
            tokens = sum(len(fast.prompt_ids(hyps, srcs=kwargs["srcs"], pair=p)[0]) for p in pairs)
            n = len(hyps)
        elif mode == "spans":
            fast = get_metric("llm-judge", **common, mode="spans", batch_size=batch, max_new_tokens=args.max_new_tokens)
            slow = None
            hyps, kwargs, n = outs, {"srcs": srcs}, len(outs)
            tokens = sum(len(ids) for ids in fast.prompt_ids(outs, srcs=srcs))
        else:
            sys.exit(f"unknown mode {mode}")
        fast.score(hyps[:2], **{k2: v[:2] for k2, v in kwargs.items()})  # load, index the vocabulary
        results, seconds = timed(lambda: fast.score(hyps, **kwargs))
        if mode == "spans":
            judge = fast.judge()
            generated = sum(
                len(judge.tokenizer(r.extra["raw"], add_special_tokens=False)["input_ids"]) for r in results
            )
            ids = fast.prompt_ids(hyps, srcs=srcs)

            lengths = [len(judge.tokenizer(r.extra["raw"], add_special_tokens=False)["input_ids"]) for r in results]

            def plain() -> None:
                # The same batches, each run for as many steps as its longest constrained answer
                # took, so the ratio is the cost of the constraint alone.
                from transformers import GenerationConfig

                order = sorted(range(len(ids)), key=lambda i: (-len(ids[i]), i))
                with torch.inference_mode():
                    for start in range(0, len(order), batch):
                        rows = order[start : start + batch]
                        steps = max(lengths[i] for i in rows)
                        config = GenerationConfig(
                            max_new_tokens=steps,
                            min_new_tokens=steps,
                            do_sample=False,
                            pad_token_id=judge.pad_id,
                            eos_token_id=judge.eos_id,
                            bos_token_id=judge.tokenizer.bos_token_id,
                        )
                        x, m = judge._padded([ids[i] for i in rows])
                        judge.model.generate(input_ids=x, attention_mask=m, generation_config=config)

            _, base = timed(plain)
            spans = sum(len(r.extra["spans"]) for r in results)
            print(
                f"spans: {n / seconds:8.2f} outputs/s, {(tokens + generated) / seconds:9.0f} tokens/s "
                f"({tokens} prompt + {generated} generated; {spans} spans) | plain greedy generate(), same "
                f"steps: {n / base:8.2f} outputs/s | constrained/plain time "
                f"{seconds / base:.2f}"
            )
            continue
        _, base = timed(lambda: slow.score(hyps, **kwargs))
        print(
            f"{mode}: {n / seconds:8.2f} outputs/s, {tokens / seconds:9.0f} prompt tokens/s (batch {batch}) | "
            f"batch 1: {n / base:8.2f} outputs/s | ratio batched/one-by-one {base / seconds:.2f}"
        )


if __name__ == "__main__":
    main()
