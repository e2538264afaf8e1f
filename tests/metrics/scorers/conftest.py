"""Fixtures shared by the scorer tests: the packaged encoder on the CPU, tiny NLI
classifiers built locally (no download)."""

from __future__ import annotations

import pytest

ID2LABEL = {0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}


def _save_tiny_nli(directory, tokenizer, id2label, permutation=None):
    """A random 1-layer RoBERTa classifier whose output bias favours ENTAILMENT.
    `permutation[i]` = the original label index placed at output position i."""
    import torch
    from transformers import RobertaConfig, RobertaForSequenceClassification

    torch.manual_seed(0)
    config = RobertaConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=66,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        id2label=ID2LABEL,
        label2id={v: k for k, v in ID2LABEL.items()},
    )
    model = RobertaForSequenceClassification(config).eval()
    with torch.no_grad():
        model.classifier.out_proj.bias.copy_(torch.tensor([0.0, 0.5, 3.0]))
        if permutation is not None:
            head = model.classifier.out_proj
            head.weight.copy_(head.weight[permutation].clone())
            head.bias.copy_(head.bias[permutation].clone())
            model.config.id2label = {i: ID2LABEL[p] for i, p in enumerate(permutation)}
            model.config.label2id = {v: k for k, v in model.config.id2label.items()}
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture(scope="session")
def tiny_tokenizer(tmp_path_factory):
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaTokenizerFast

    corpus = [
        "Blue Spice is a pub in the riverside area.",
        "The Eagle is a cheap coffee shop near Café Rouge.",
        "You can bring your kids to Blue Spice.",
        "The food of Alan Bean is French.",
    ] * 5
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        corpus, vocab_size=300, min_frequency=1, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    )
    directory = tmp_path_factory.mktemp("bpe")
    bpe.save_model(str(directory))
    return RobertaTokenizerFast(str(directory / "vocab.json"), str(directory / "merges.txt"), model_max_length=64)


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory, tiny_tokenizer):
    plain = _save_tiny_nli(tmp_path_factory.mktemp("nli_plain"), tiny_tokenizer, ID2LABEL)
    # Same network, outputs reordered to ENTAILMENT, CONTRADICTION, NEUTRAL.
    permuted = _save_tiny_nli(tmp_path_factory.mktemp("nli_permuted"), tiny_tokenizer, ID2LABEL, [2, 0, 1])
    return plain, permuted


@pytest.fixture(scope="session")
def encoder():
    """The shared encoder (packaged MiniLM) on the CPU, loaded once for the session."""
    from metrics.scorers.encoder import get_encoder

    return get_encoder(device="cpu")
