"""Expected MetricX-24 scores from the reference code (google-research/metricx, metricx24/models.py
and predict.py at commit COMMIT below) on a tiny random-weight mT5 checkpoint. Runs outside
`make test`, in its own virtual environment (the repository pins transformers 4.30.2 and
datasets 2.13.1; it is no package):

    python3 -m venv var/metricx-ref
    # reuse the project's CPU torch instead of downloading a CUDA one:
    ln -s $PWD/.venv/lib/python3.11/site-packages/{torch,torch-*.dist-info,functorch,torchgen} \
        var/metricx-ref/lib/python3.11/site-packages/
    var/metricx-ref/bin/pip install transformers==4.30.2 sentencepiece==0.1.99 protobuf==3.20.3 \
        numpy==1.26.4
    # the repository's snapshot, as a bare git directory (e.g. the search tool's fetch):
    var/metricx-ref/bin/python bench/reference/metricx_expected.py /path/to/google-research+metricx/repo

It copies metricx24/models.py (and predict.py, for the record) out of that git directory at COMMIT into
var/metricx-src/ (never into the repository) with ONE change, recorded in the provenance:
models.py's hard-coded `250089` (`<extra_id_10>` in mT5's 250k vocabulary) becomes the id of
`<extra_id_10>` in the tiny vocabulary. It runs that models.py's MT5ForRegression on predict.py's
inputs (transcribed: predict.py itself needs datasets and accelerate, whose install pulls a CUDA
torch), in reference mode and in QE mode, and writes under tests/metrics/scorers/metricx_fixtures/:
- mt5-tiny/: the checkpoint (MT5ForRegression.save_pretrained: config.json + model.safetensors)
  and its tokenizer (a SentencePiece model trained on the sentences below, as T5TokenizerFast);
- expected.json: the reference's scores with their provenance.
Everything is built from fixed seeds, so a rerun rewrites the same scores.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

import sentencepiece as spm
import torch

COMMIT = "fc4978eb064670f7cc33e93ea4f52d38396b8ae6"
ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "metrics" / "scorers" / "metricx_fixtures"
SRC = ROOT / "var" / "metricx-src"
MAX_INPUT_LENGTH = 100

CORPUS = [
    "source: candidate: reference:",
    "The cat sat on the mat.",
    "Die Katze saß auf der Matte.",
    "A quick brown fox jumps over the lazy dog.",
    "Ein schneller brauner Fuchs springt über den faulen Hund.",
    "Machine translation quality estimation without references.",
    "Maschinelle Übersetzung bewertet man auch ohne Referenzen.",
    "Le chat est assis sur le tapis.",
    "Où est la gare, s'il vous plaît ?",
    "Numbers like 1234 and 56.7 appear too.",
    "Η γάτα κάθεται στο χαλί.",
]
LONG = " ".join(CORPUS[1:5])
# (source, hypothesis, reference): an empty output, unicode, duplicates, and inputs longer than
# MAX_INPUT_LENGTH tokens (truncated by the reference; our scorer must cut them the same way).
SAMPLES = [
    ("Die Katze saß auf der Matte.", "The cat sat on the mat.", "The cat sat on the mat."),
    ("Die Katze saß auf der Matte.", "The cat is on a mat.", "The cat sat on the mat."),
    ("Die Katze saß auf der Matte.", "A dog sat.", "The cat sat on the mat."),
    (
        "Ein schneller brauner Fuchs springt über den faulen Hund.",
        "A fast brown fox jumps over the lazy dog.",
        "A quick brown fox jumps over the lazy dog.",
    ),
    ("Maschinelle Übersetzung bewertet man auch ohne Referenzen.", "", "Quality estimation without references."),
    ("Le chat est assis sur le tapis.", "The cat sits on the carpet.", "The cat is sitting on the mat."),
    ("Où est la gare, s'il vous plaît ?", "Where is the station, please?", "Where is the train station, please?"),
    ("Η γάτα κάθεται στο χαλί.", "The cat sits on the rug.", "The cat is sitting on the rug."),
    (LONG, LONG, "short reference"),
    ("Numbers like 1234 and 56.7 appear too.", "Numbers 1234 and 56,7 appear.", LONG),
    ("Die Katze saß auf der Matte.", "The cat sat on the mat.", "The cat sat on the mat."),
]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def reference_source(repo: Path, score_id: int) -> None:
    """metricx24/ at COMMIT into var/metricx-src, models.py's token id replaced (and nothing else)."""
    pkg = SRC / "metricx24"
    pkg.mkdir(parents=True, exist_ok=True)
    for name in ("__init__.py", "models.py", "predict.py"):
        text = subprocess.run(
            ["git", "--git-dir", str(repo), "show", f"{COMMIT}:metricx24/{name}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        if name == "models.py":
            assert text.count("250089") == 2, "models.py changed: check the token id by hand"
            text = text.replace("250089", str(score_id))
        (pkg / name).write_text(text, encoding="utf-8")


def build_tokenizer(directory: Path):
    from transformers import T5TokenizerFast

    with tempfile.TemporaryDirectory() as tmp:
        text = Path(tmp) / "corpus.txt"
        text.write_text("\n".join(CORPUS * 3) + "\n", encoding="utf-8")
        prefix = Path(tmp) / "spm"
        # mT5's special ids: pad 0, </s> 1, unk 2, no <s>.
        spm.SentencePieceTrainer.train(
            input=str(text),
            model_prefix=str(prefix),
            vocab_size=120,
            model_type="unigram",
            character_coverage=1.0,
            num_threads=1,
            seed_sentencepiece_size=10000,
            shuffle_input_sentence=False,
            pad_id=0,
            eos_id=1,
            unk_id=2,
            bos_id=-1,
            minloglevel=2,
        )
        fast = T5TokenizerFast(vocab_file=str(prefix) + ".model", extra_ids=100)
        fast.save_pretrained(str(directory), legacy_format=False)
    return T5TokenizerFast.from_pretrained(str(directory))


def build_model(directory: Path, tokenizer, score_id: int, models) -> None:
    config = models.MT5Config(
        vocab_size=len(tokenizer),
        d_model=16,
        d_kv=4,
        d_ff=32,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=4,
        relative_attention_num_buckets=8,
        relative_attention_max_distance=20,
        feed_forward_proj="gated-gelu",
        tie_word_embeddings=False,
        dropout_rate=0.0,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
    )
    torch.manual_seed(43)
    model = models.MT5ForRegression(config)
    gen = torch.Generator().manual_seed(4343)
    with torch.no_grad():
        for _, param in sorted(model.named_parameters()):
            # No parameter keeps its neutral initial value (layer norms at 1).
            param.add_(torch.randn(param.shape, generator=gen) * 0.5 * (param.std() if param.numel() > 1 else 1))
    model.eval()
    spread_score_row(model, tokenizer, score_id)
    model.save_pretrained(str(directory), safe_serialization=True)


def spread_score_row(model, tokenizer, score_id: int) -> None:
    """Random weights put every score at one end of [0, 25]: set the score row so that the
    samples' raw logits centre on 12 with a spread of 9, so scores differ and a few clip."""
    texts = [f"source: {s} candidate: {h} reference: {r}" for s, h, r in SAMPLES]
    batch = tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model.encoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])[0]
        start = torch.zeros((len(texts), 1), dtype=torch.long)
        out = model.decoder(
            input_ids=start, encoder_hidden_states=hidden, encoder_attention_mask=batch["attention_mask"]
        )[0][:, 0, :]
        mean = out.mean(0)
        centred = out - mean
        direction = torch.linalg.svd(centred, full_matrices=False).Vh[0]
        spread = (centred @ direction).std()
        row = 12.0 * mean / mean.dot(mean) + 9.0 * direction / spread
        row = row - (row.dot(mean) - 12.0) * mean / mean.dot(mean)
        model.lm_head.weight[score_id] = row


def predict(directory: Path, qe: bool, models) -> list[float]:
    """predict.py's path, transcribed because its `datasets` 2.13.1 and Trainer (accelerate) pull
    a CUDA torch into the venv: _make_input, _tokenize (truncation to max_input_length), _remove_eos,
    then batches of 4 in file order padded as the Trainer's default collator pads them
    (tokenizer.pad), into the repository's own MT5ForRegression (loaded with from_pretrained,
    torch_dtype="auto", eval mode), its `predictions` taken as they are."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(directory))
    model = models.MT5ForRegression.from_pretrained(str(directory), torch_dtype="auto")
    model.eval()
    features = []
    for source, hypothesis, reference in SAMPLES:
        if qe:
            text = "source: " + source + " candidate: " + hypothesis
        else:
            text = "source: " + source + " candidate: " + hypothesis + " reference: " + reference
        example = tokenizer(text, max_length=MAX_INPUT_LENGTH, truncation=True, padding=False)
        features.append({"input_ids": example["input_ids"][:-1], "attention_mask": example["attention_mask"][:-1]})
    scores: list[float] = []
    with torch.no_grad():
        for i in range(0, len(features), 4):
            batch = tokenizer.pad(features[i : i + 4], return_tensors="pt")
            out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
            scores += [float(x) for x in out.predictions]
    return scores


def main() -> int:
    repo = Path(sys.argv[1])
    directory = OUT / "mt5-tiny"
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(directory)
    score_id = tokenizer.convert_tokens_to_ids("<extra_id_10>")
    reference_source(repo, score_id)
    sys.path.insert(0, str(SRC))
    from metricx24 import models

    build_model(directory, tokenizer, score_id, models)
    truncated = {}
    for qe in (False, True):
        texts = [f"source: {s} candidate: {h}" + ("" if qe else f" reference: {r}") for s, h, r in SAMPLES]
        lengths = [len(tokenizer(t)["input_ids"]) for t in texts]
        truncated["qe" if qe else "ref"] = [i for i, n in enumerate(lengths) if n > MAX_INPUT_LENGTH]
    scores = {"ref": predict(directory, False, models), "qe": predict(directory, True, models)}
    expected = {
        "provenance": {
            "reference": f"google-research/metricx {COMMIT} (metricx24/models.py run as is; predict.py's "
            "input path transcribed)",
            "change": f"models.py's token id 250089 (<extra_id_10> in mT5) replaced by {score_id}, "
            "<extra_id_10> in the tiny vocabulary",
            "transformers": metadata.version("transformers"),
            "torch": torch.__version__,
            "max_input_length": MAX_INPUT_LENGTH,
            "checkpoint_sha256": sha256(directory / "model.safetensors"),
        },
        "samples": [{"src": s, "mt": h, "ref": r} for s, h, r in SAMPLES],
        "scores": scores,
        "truncated": truncated,
    }
    (OUT / "expected.json").write_text(json.dumps(expected, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps(expected["scores"], indent=1))
    print(json.dumps(truncated))
    return 0


if __name__ == "__main__":
    sys.exit(main())
