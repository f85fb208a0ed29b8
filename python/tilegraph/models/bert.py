"""BERT encoder (Devlin et al. 2019), the layout of HuggingFace's BertModel.

Full: 12 layers, hidden 768, 12 heads, intermediate 3072, seq 128, vocab 30522.
Inputs input_ids / attention_mask / token_type_ids (int64, [bs, seq]); outputs
last_hidden_state [bs, seq, hidden] and pooler_output [bs, hidden].
"""

from __future__ import annotations

import math

import torch
from torch import nn

from . import Export, use_lib


class Embeddings(nn.Module):
    def __init__(self, vocab, hidden, max_pos, type_vocab, eps):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, hidden)
        self.position_embeddings = nn.Embedding(max_pos, hidden)
        self.token_type_embeddings = nn.Embedding(type_vocab, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=eps)
        self.register_buffer("position_ids", torch.arange(max_pos).unsqueeze(0), persistent=False)

    def forward(self, input_ids, token_type_ids):
        seq = input_ids.size(1)
        pos = self.position_ids[:, :seq]
        x = (self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
             + self.position_embeddings(pos))
        return self.LayerNorm(x)


class SelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.head_dim = hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)

    def split(self, x):
        b, s = x.size(0), x.size(1)
        return x.view(b, s, self.heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, x, mask_bias):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        probs = torch.softmax(scores + mask_bias, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        return ctx.view(ctx.size(0), ctx.size(1), self.heads * self.head_dim)


class Layer(nn.Module):
    def __init__(self, hidden, heads, inter, eps):
        super().__init__()
        self.attention = SelfAttention(hidden, heads)
        self.attn_out = nn.Linear(hidden, hidden)
        self.attn_norm = nn.LayerNorm(hidden, eps=eps)
        self.intermediate = nn.Linear(hidden, inter)
        self.output = nn.Linear(inter, hidden)
        self.out_norm = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x, mask_bias):
        x = self.attn_norm(self.attn_out(self.attention(x, mask_bias)) + x)
        h = nn.functional.gelu(self.intermediate(x))  # exact (erf) GELU, as BERT
        return self.out_norm(self.output(h) + x)


class Bert(nn.Module):
    def __init__(self, vocab=30522, hidden=768, layers=12, heads=12, inter=3072, max_pos=512,
                 type_vocab=2, eps=1e-12):
        super().__init__()
        self.embeddings = Embeddings(vocab, hidden, max_pos, type_vocab, eps)
        self.layers = nn.ModuleList(Layer(hidden, heads, inter, eps) for _ in range(layers))
        self.pooler = nn.Linear(hidden, hidden)

    def forward(self, input_ids, attention_mask, token_type_ids):
        x = self.embeddings(input_ids, token_type_ids)
        mask = attention_mask[:, None, None, :].to(x.dtype)
        mask_bias = (1.0 - mask) * -10000.0
        for layer in self.layers:
            x = layer(x, mask_bias)
        pooled = torch.tanh(self.pooler(x[:, 0]))
        return x, pooled


class _HFWrapper(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, input_ids, attention_mask, token_type_ids):
        out = self.m(input_ids=input_ids, attention_mask=attention_mask,
                     token_type_ids=token_type_ids, return_dict=True)
        return out.last_hidden_state, out.pooler_output


def build(bs=1, small=False, impl="auto") -> Export:
    if small:
        cfg = dict(vocab=512, hidden=32, layers=2, heads=2, inter=64, max_pos=64, seq=16)
    else:
        cfg = dict(vocab=30522, hidden=768, layers=12, heads=12, inter=3072, max_pos=512, seq=128)
    seq = cfg.pop("seq")
    if use_lib(impl, "transformers"):
        from transformers import BertConfig, BertModel
        hc = BertConfig(vocab_size=cfg["vocab"], hidden_size=cfg["hidden"],
                        num_hidden_layers=cfg["layers"], num_attention_heads=cfg["heads"],
                        intermediate_size=cfg["inter"], max_position_embeddings=cfg["max_pos"])
        # eager attention: SDPA has no ONNX export below opset 14
        hc._attn_implementation = "eager"
        m = BertModel(hc)
        module, library = _HFWrapper(m), "transformers"
    else:
        module, library = Bert(**cfg), "own"
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, cfg["vocab"], (bs, seq), generator=g)
    mask = torch.ones(bs, seq, dtype=torch.int64)
    types = torch.zeros(bs, seq, dtype=torch.int64)
    return Export(module, (ids, mask, types),
                  ["input_ids", "attention_mask", "token_type_ids"],
                  ["last_hidden_state", "pooler_output"],
                  {"input_ids": [0, cfg["vocab"]], "attention_mask": [0, 2],
                   "token_type_ids": [0, 2]},
                  f"BERT {cfg['layers']} layers, hidden {cfg['hidden']}, {cfg['heads']} heads, "
                  f"intermediate {cfg['inter']}, seq {seq}, vocab {cfg['vocab']}",
                  library)
