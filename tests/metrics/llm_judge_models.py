"""Tiny causal language models built locally for the llm-judge tests and bench:
a tokenizer trained on the fly with `tokenizers` (byte-level BPE, so every
character is a token; digits always single tokens) and a Llama- or GPT-2-shaped
network with random weights, saved with save_pretrained(). Nothing is downloaded."""

from __future__ import annotations

from pathlib import Path

CORPUS = [
    "the cat sat on a mat while dogs ran across green fields under bright skies",
    "and old men told stories of distant seas to eager children",
    "Score: 1 2 3 4 5 6 7 8 9 0 10 100",
    "Better output: A B",
    '{"errors":[{"text":"cat","occurrence":0,"severity":"minor"}]}',
    '{"errors":[]} "severity":"major" "category":"accuracy" fluency style',
    "Rate the quality of the output below on a scale from worst to best.",
    "Which one is better? Answer with A or B only. Source: Reference: Output:",
]

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


def build_tokenizer(directory: Path, *, chat: bool = True, vocab_size: int = 400):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    # Digits split one by one before byte-level BPE: "57" is always "5", "7".
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<|endoftext|>", "<|pad|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(CORPUS * 3, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|endoftext|>",
        bos_token="<|endoftext|>",
        pad_token="<|pad|>",
        model_max_length=512,
    )
    if chat:
        fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(str(directory))
    return fast


def build_model(
    directory: Path, *, shape: str = "llama", seed: int = 0, chat: bool = True, hidden: int = 32, layers: int = 2
) -> Path:
    """Save a tiny random model and its tokenizer in `directory`; returns it."""
    import torch

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(directory, chat=chat)
    torch.manual_seed(seed)
    if shape == "llama":
        from transformers import LlamaConfig, LlamaForCausalLM

        config = LlamaConfig(
            vocab_size=len(tokenizer),
            hidden_size=hidden,
            intermediate_size=2 * hidden,
            num_hidden_layers=layers,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=512,
            pad_token_id=tokenizer.pad_token_id,
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )
        model = LlamaForCausalLM(config)
    else:
        from transformers import GPT2Config, GPT2LMHeadModel

        config = GPT2Config(
            vocab_size=len(tokenizer),
            n_embd=hidden,
            n_layer=layers,
            n_head=4,
            n_positions=512,
            pad_token_id=tokenizer.pad_token_id,
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )
        model = GPT2LMHeadModel(config)
    # Random init gives near-uniform next-token distributions; a wider spread makes
    # the judge's choices (and so the tests) depend on the input.
    with torch.no_grad():
        for param in model.parameters():
            if param.dim() == 2:
                param.mul_(4.0)
    model.eval().save_pretrained(str(directory))
    return directory
