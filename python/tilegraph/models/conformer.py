"""Conformer encoder (Gulati et al., Interspeech 2020), torchaudio.models.Conformer's layout.

Each layer: half-step FFN (LayerNorm, Linear, SiLU, Linear) -> multi-head self-
attention (LayerNorm, plain scaled dot-product MHSA with a key padding mask from
the lengths) -> convolution module (LayerNorm, pointwise conv to 2d, GLU,
depthwise conv, BatchNorm, SiLU, pointwise conv) -> half-step FFN -> LayerNorm.
Inputs: features [bs, frames, dim] (float) and lengths [bs] (int64, 1..frames);
outputs: the encoded features and the lengths (passed through, as torchaudio).

Welder's configuration: dim 512, 8 heads, FFN 512, 12 layers, depthwise kernel 31,
512 frames.
"""

from __future__ import annotations

import torch
from torch import nn

from . import Export, use_lib


class FeedForward(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.seq = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, hidden), nn.SiLU(),
                                 nn.Linear(hidden, dim))

    def forward(self, x):
        return self.seq(x)


class SelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.in_proj = nn.Linear(dim, 3 * dim)
        self.out_proj = nn.Linear(dim, dim)

    def forward(self, x, pad_mask):  # x [B, T, D]; pad_mask [B, T], True = padding
        b, t, d = x.shape
        q, k, v = self.in_proj(x).reshape(b, t, 3, self.heads, d // self.heads).permute(
            2, 0, 3, 1, 4).unbind(0)
        scores = (q * self.scale) @ k.transpose(-2, -1)
        scores = scores.masked_fill(pad_mask[:, None, None, :], -1e9)
        out = scores.softmax(dim=-1) @ v
        return self.out_proj(out.transpose(1, 2).reshape(b, t, d))


class ConvModule(nn.Module):
    def __init__(self, dim, kernel):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.pointwise1 = nn.Conv1d(dim, 2 * dim, 1)
        self.glu = nn.GLU(dim=1)
        self.depthwise = nn.Conv1d(dim, dim, kernel, padding=(kernel - 1) // 2, groups=dim)
        self.bn = nn.BatchNorm1d(dim)
        self.act = nn.SiLU()
        self.pointwise2 = nn.Conv1d(dim, dim, 1)

    def forward(self, x):  # [B, T, D]
        y = self.glu(self.pointwise1(self.norm(x).transpose(1, 2)))
        y = self.pointwise2(self.act(self.bn(self.depthwise(y))))
        return y.transpose(1, 2)


class ConformerLayer(nn.Module):
    def __init__(self, dim, ffn_dim, heads, kernel):
        super().__init__()
        self.ffn1 = FeedForward(dim, ffn_dim)
        self.attn_norm = nn.LayerNorm(dim)
        self.attn = SelfAttention(dim, heads)
        self.conv = ConvModule(dim, kernel)
        self.ffn2 = FeedForward(dim, ffn_dim)
        self.final_norm = nn.LayerNorm(dim)

    def forward(self, x, pad_mask):
        x = 0.5 * self.ffn1(x) + x
        x = self.attn(self.attn_norm(x), pad_mask) + x
        x = self.conv(x) + x
        x = 0.5 * self.ffn2(x) + x
        return self.final_norm(x)


class Conformer(nn.Module):
    def __init__(self, input_dim=512, num_heads=8, ffn_dim=512, num_layers=12,
                 depthwise_conv_kernel_size=31):
        super().__init__()
        self.layers = nn.ModuleList(
            ConformerLayer(input_dim, ffn_dim, num_heads, depthwise_conv_kernel_size)
            for _ in range(num_layers))

    def forward(self, x, lengths):
        t = x.size(1)
        pad_mask = torch.arange(t, device=x.device)[None, :] >= lengths[:, None]
        for layer in self.layers:
            x = layer(x, pad_mask)
        return x, lengths


def build(bs=1, small=False, impl="auto") -> Export:
    if small:
        cfg, frames = dict(input_dim=32, num_heads=2, ffn_dim=32, num_layers=2,
                           depthwise_conv_kernel_size=7), 16
    else:
        cfg, frames = dict(input_dim=512, num_heads=8, ffn_dim=512, num_layers=12,
                           depthwise_conv_kernel_size=31), 512
    # auto picks the own definition: torchaudio's (nn.MultiheadAttention) does not export
    # at opset 11 with current torch (aten::unflatten needs opset 13).
    if impl == "lib" and use_lib(impl, "torchaudio"):
        from torchaudio.models import Conformer as TAConformer
        module, library = TAConformer(**cfg), "torchaudio"
    else:
        module, library = Conformer(**cfg), "own"
    x = torch.randn(bs, frames, cfg["input_dim"])
    lengths = torch.full((bs,), frames, dtype=torch.int64)
    return Export(module, (x, lengths), ["input", "lengths"], ["output", "output_lengths"],
                  # torchaudio sizes its padding mask by max(lengths): keep that = frames
                  {"lengths": [frames if library == "torchaudio" else 1, frames + 1]},
                  f"Conformer dim {cfg['input_dim']}, {cfg['num_heads']} heads, FFN "
                  f"{cfg['ffn_dim']}, {cfg['num_layers']} layers, kernel "
                  f"{cfg['depthwise_conv_kernel_size']}, {frames} frames", library)
