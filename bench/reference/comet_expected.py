"""Expected COMET / CometKiwi / xCOMET scores (and xCOMET's error spans) from the reference code (unbabel-comet 2.2.7) on tiny
random-weight checkpoints. Runs outside `make test`, in its own virtual environment, because
unbabel-comet pins numpy<2 and torchmetrics<0.11 while the project pins numpy 2:

    python3 -m venv var/comet-ref
    # reuse the project's CPU torch instead of downloading a CUDA one. COPY it, never symlink:
    # pip may uninstall a linked torch and so delete the project venv's own.
    cp -r .venv/lib/python3.11/site-packages/{torch,torch-*.dist-info,functorch,torchgen} \
        var/comet-ref/lib/python3.11/site-packages/
    echo "torch==2.13.0" > var/comet-ref/constraints.txt   # pip must keep the copied torch
    var/comet-ref/bin/pip install -c var/comet-ref/constraints.txt unbabel-comet==2.2.7 \
        "setuptools>=77.0.3,<81" sentencepiece==0.2.0
    # (torchmetrics 0.10 needs pkg_resources, gone from setuptools 81; torch 2.13 needs >=77.0.3;
    # sentencepiece 0.2.0 suits the protobuf 4 that comet pins. Check with --dry-run first that
    # pip installs no torch.)
    var/comet-ref/bin/python bench/reference/comet_expected.py

It writes, under tests/metrics/scorers/comet_fixtures/ (small: the tests load them as they are):
- tiny-xlmr/: an XLM-R config (hidden 32, 2 layers, 64 positions so truncation is exercised) and a
  SentencePiece tokenizer trained on the sentences below;
- comet-tiny/, kiwi-tiny/, unified3-tiny/, xcomet-tiny/: hparams.yaml + checkpoints/model.ckpt built by the
  reference's own model classes from a fixed seed, every weight perturbed so that no parameter
  keeps its neutral initial value (layer-mix scalars, gamma, layer norms);
- expected.json: the reference's scores with their provenance (versions, checkpoint sha256), and
  xcomet-tiny's error spans as the reference decodes them (XCOMETMetric.decode: start, end,
  severity, confidence), with references (three inputs) and without (QE mode: mt + src).
Everything is built from fixed seeds, so a rerun rewrites the same files.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from importlib import metadata
from pathlib import Path

import sentencepiece as spm
import torch
import yaml
from transformers import XLMRobertaConfig, XLMRobertaTokenizer, XLMRobertaTokenizerFast

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "metrics" / "scorers" / "comet_fixtures"

CORPUS = [
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

# (src, mt, ref): duplicates, an empty output, unicode, and inputs longer than the 62 tokens the
# tiny encoder takes (truncated by the reference; our scorer must cut them the same way).
LONG = " ".join(CORPUS[:4])
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


def build_encoder(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        text = Path(tmp) / "corpus.txt"
        text.write_text("\n".join(CORPUS * 3) + "\n", encoding="utf-8")
        prefix = Path(tmp) / "spm"
        spm.SentencePieceTrainer.train(
            input=str(text),
            model_prefix=str(prefix),
            vocab_size=120,
            model_type="unigram",
            character_coverage=1.0,
            num_threads=1,
            seed_sentencepiece_size=10000,
            shuffle_input_sentence=False,
            minloglevel=2,
        )
        slow = XLMRobertaTokenizer(vocab_file=str(prefix) + ".model")
        fast = XLMRobertaTokenizerFast(vocab_file=str(prefix) + ".model")
        fast.model_max_length = 62
        fast.save_pretrained(str(directory), legacy_format=False)
        vocab = len(slow)
    config = XLMRobertaConfig(
        vocab_size=vocab,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=66,
        type_vocab_size=1,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
    )
    config.save_pretrained(str(directory))


def perturb(model: torch.nn.Module, seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in sorted(model.named_parameters()):
            # Layer-mix scalars and the estimator far from their initial values, so that segment
            # scores spread widely and a small mistake shows; the encoder stays near its init.
            scale = 0.05 if name.startswith("encoder.") else 0.5
            param.add_(torch.randn(param.shape, generator=gen) * scale)


def save_checkpoint(model, directory: Path) -> None:
    import pytorch_lightning as pl

    (directory / "checkpoints").mkdir(parents=True, exist_ok=True)
    hparams = {k: (list(v) if isinstance(v, tuple) else v) for k, v in dict(model.hparams).items()}
    hparams["pretrained_model"] = "tiny-xlmr"
    (directory / "hparams.yaml").write_text(yaml.safe_dump(hparams, sort_keys=True), encoding="utf-8")
    state = {k: v.detach().clone().contiguous() for k, v in sorted(model.state_dict().items())}
    # As Lightning writes it: the reference builds the model from the checkpoint's hyper_parameters
    # (hparams.yaml only tells it the class).
    ckpt = {"state_dict": state, "hyper_parameters": hparams, "pytorch-lightning_version": pl.__version__}
    torch.save(ckpt, directory / "checkpoints" / "model.ckpt")


def _span(span: dict) -> dict:
    """A decoded span as the reference returns it (its `text` is the tokenizer's decoding of the
    span's tokens; ours is the output's characters [start:end], so it is kept only for reading)."""
    return {
        "start": int(span["start"]),
        "end": int(span["end"]),
        "severity": span["severity"],
        "confidence": float(span["confidence"]),
        "text": span["text"],
    }


def main() -> int:
    from comet import load_from_checkpoint
    from comet.models import RegressionMetric, UnifiedMetric, XCOMETMetric

    torch.use_deterministic_algorithms(True)
    encoder_dir = OUT / "tiny-xlmr"
    build_encoder(encoder_dir)
    common = dict(
        pretrained_model=str(encoder_dir),
        load_pretrained_weights=False,
        local_files_only=True,
        hidden_sizes=[48, 16],
        activations="Tanh",
        dropout=0.1,
        layer_norm=True,
    )
    builders = {
        "comet-tiny": lambda: RegressionMetric(**common, layer="mix", layer_transformation="softmax", pool="avg"),
        "kiwi-tiny": lambda: UnifiedMetric(
            **common,
            sent_layer="mix",
            layer_transformation="sparsemax",
            input_segments=["mt", "src"],
            word_level_training=False,
        ),
        "unified3-tiny": lambda: UnifiedMetric(
            **common,
            sent_layer="mix",
            layer_transformation="softmax",
            input_segments=["mt", "src", "ref"],
            word_level_training=False,
            final_activation="Sigmoid",
        ),
        # xCOMET's own defaults (sparsemax mix without layer norm), the word-level head on the
        # last layer; added last so the other checkpoints keep their seeds.
        "xcomet-tiny": lambda: XCOMETMetric(**{**common, "layer_norm": False}, sent_layer="mix", word_layer=2),
    }
    samples = [{"src": s, "mt": m, "ref": r} for s, m, r in SAMPLES]
    scores, digests, truncated, spans = {}, {}, {}, {}
    for seed, (name, build) in enumerate(builders.items(), start=1):
        torch.manual_seed(seed)
        model = build()
        perturb(model, seed)
        save_checkpoint(model, OUT / name)
        ckpt = OUT / name / "checkpoints" / "model.ckpt"
        digests[name] = sha256(ckpt)
        # The reference resolves the encoder by the hparams' name: point it at the directory.
        os.chdir(OUT)
        loaded = load_from_checkpoint(str(ckpt), local_files_only=True)
        loaded.eval()
        inputs = samples if name != "kiwi-tiny" else [{"src": s["src"], "mt": s["mt"]} for s in samples]
        pred = loaded.predict(inputs, batch_size=4, gpus=0, progress_bar=False, num_workers=1)
        scores[name] = [float(x) for x in pred.scores]
        if name == "xcomet-tiny":
            spans[name] = [[_span(s) for s in seg] for seg in pred.metadata.error_spans]
            # QE mode: the reference falls back to one [mt, src] input when samples have no ref.
            qe = loaded.predict(
                [{"src": s["src"], "mt": s["mt"]} for s in samples],
                batch_size=4,
                gpus=0,
                progress_bar=False,
                num_workers=1,
            )
            scores[name + "-qe"] = [float(x) for x in qe.scores]
            spans[name + "-qe"] = [[_span(s) for s in seg] for seg in qe.metadata.error_spans]
            print(name + "-qe", [round(x, 6) for x in scores[name + "-qe"]])
            print(name, "spans", spans[name])
            print(name + "-qe", "spans", spans[name + "-qe"])
        # Which segments the reference truncates: a text longer than the encoder's limit, or (unified
        # models) parts too long together (its concat_sequences rule).
        enc = loaded.encoder
        size = lambda text: len(enc.tokenizer(text)["input_ids"])  # noqa: E731
        limit = enc.max_positions - 2

        def lost(sample: dict, parts: list[str]) -> bool:
            if any(size(sample[k]) > limit for k in parts):
                return True
            if name == "comet-tiny":
                return False  # encoded one text at a time
            # concat_sequences: each text's content (its own truncation first) joined with 2n specials,
            # cut to max_positions tokens.
            content = sum(min(size(sample[k]), limit) - 2 for k in parts)
            return content + 2 * len(parts) > enc.max_positions

        variants = {"comet-tiny": [["src", "mt", "ref"]], "kiwi-tiny": [["mt", "src"]]}.get(
            name, [["mt", "src"], ["mt", "ref"], ["mt", "src", "ref"]]
        )
        truncated[name] = [i for i, sample in enumerate(inputs) if any(lost(sample, v) for v in variants)]
        print(name, digests[name][:12], [round(x, 6) for x in scores[name]])
    expected = {
        "provenance": {
            "reference": f"unbabel-comet {metadata.version('unbabel-comet')}",
            "torch": torch.__version__,
            "transformers": metadata.version("transformers"),
            "pytorch-lightning": metadata.version("pytorch-lightning"),
            "sentencepiece": metadata.version("sentencepiece"),
            "python": sys.version.split()[0],
            "script": "bench/reference/comet_expected.py",
            "checkpoint_sha256": digests,
            "tokenizer_sha256": sha256(encoder_dir / "tokenizer.json"),
        },
        "samples": [{"src": s, "mt": m, "ref": r} for s, m, r in SAMPLES],
        "scores": scores,
        "truncated": truncated,
        "spans": spans,
    }
    (OUT / "expected.json").write_text(json.dumps(expected, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print("wrote", OUT / "expected.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
