"""Tiny models built here (random weights, a tokenizer trained on a few sentences): nothing
comes from a model hub. Used by the tests and by `benchmarks/reward_model_bench.py`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

CORPUS = [
    "What is 2 + 2 ? The answer is 4 .",
    "Natalia sold clips to 48 of her friends in April , and then she sold half as many .",
    "Step 1 : compute the total . Step 2 : divide by two . So the answer is 72 .",
    "user assistant system hello world the a of is to and in",
]

SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>", "<|im_start|>", "<|im_end|>", "<extra_0>"]

CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{{ m['content'] }}<|im_end|>\n{% endfor %}"
)
"""A ChatML template that writes the BOS token itself (as Llama 3's does)."""


def tokenizer(*, adds_bos: bool = True) -> Any:
    """A byte-level BPE tokenizer with a ChatML template that writes BOS; with `adds_bos`,
    tokenizing also prepends BOS (the doubled-BOS pitfall), else it adds nothing."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.BPE(unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=320,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    raw.train_from_iterator(CORPUS, trainer=trainer)
    if adds_bos:
        bos = raw.token_to_id("<bos>")
        raw.post_processor = processors.TemplateProcessing(
            single="<bos> $A", pair="<bos> $A $B", special_tokens=[("<bos>", bos)]
        )
    built = PreTrainedTokenizerFast(
        tokenizer_object=raw,
        pad_token="<pad>",
        eos_token="<eos>",
        bos_token="<bos>",
        unk_token="<unk>",
        additional_special_tokens=["<|im_start|>", "<|im_end|>", "<extra_0>"],
    )
    built.chat_template = CHAT_TEMPLATE
    return built


def _config(vocab: int, num_labels: int, pad_id: int, layers: int = 2, hidden: int = 32) -> Any:
    from transformers import Qwen2Config

    return Qwen2Config(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        num_labels=num_labels,
        pad_token_id=pad_id,
    )


def _save(folder: Path, head: str, num_labels: int, adds_bos: bool, seed: int) -> Path:
    import torch
    import transformers

    tok = tokenizer(adds_bos=adds_bos)
    torch.manual_seed(seed)
    model = getattr(transformers, head)(_config(len(tok), num_labels, tok.pad_token_id))
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def save_reward_model(folder: Path, *, adds_bos: bool = True, seed: int = 0) -> Path:
    """A 2-layer Qwen2 sequence classifier (one label) and its tokenizer, saved in `folder`."""
    return _save(folder, "Qwen2ForSequenceClassification", 1, adds_bos, seed)


def save_process_model(folder: Path, *, seed: int = 0) -> Path:
    """A 2-layer Qwen2 token classifier (two labels, Qwen2.5-Math-PRM's shape) and its
    tokenizer (step tag ``<extra_0>``), saved in `folder`."""
    return _save(folder, "Qwen2ForTokenClassification", 2, False, seed)


def save_language_model(folder: Path, *, seed: int = 0) -> Path:
    """A 2-layer Qwen2 causal LM and its tokenizer, saved in `folder`."""
    return _save(folder, "Qwen2ForCausalLM", 1, False, seed)
