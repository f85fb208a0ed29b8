"""NeRF MLP (Mildenhall et al., ECCV 2020), at Welder's size.

A batch of points, each a 64-wide feature row (already positionally encoded):
the first 40 columns encode position, the last 24 the view direction. Seven
ReLU layers of width 64 on the position encoding, with the position encoding
concatenated back after the fifth (skip); a density head (Linear -> ReLU) and a
colour head (Linear feature, concat view encoding, Linear + ReLU at half width,
Linear -> sigmoid). Outputs rgb [N, 3] and sigma [N, 1].

Welder's configuration: 1920*1080 points of width 64, 7 layers, width 64.
"""

from __future__ import annotations

import torch
from torch import nn

from . import Export


class NeRF(nn.Module):
    def __init__(self, depth=7, width=64, in_pos=40, in_view=24, skip=4):
        super().__init__()
        self.in_pos, self.in_view, self.skip = in_pos, in_view, skip
        layers = [nn.Linear(in_pos, width)]
        for i in range(1, depth):
            layers.append(nn.Linear(width + (in_pos if i - 1 == skip else 0), width))
        self.pts_linears = nn.ModuleList(layers)
        self.alpha_linear = nn.Linear(width, 1)
        self.feature_linear = nn.Linear(width, width)
        self.views_linear = nn.Linear(width + in_view, width // 2)
        self.rgb_linear = nn.Linear(width // 2, 3)

    def forward(self, x):
        pts, views = torch.split(x, [self.in_pos, self.in_view], dim=-1)
        h = pts
        for i, lin in enumerate(self.pts_linears):
            h = torch.relu(lin(h))
            if i == self.skip:
                h = torch.cat([pts, h], dim=-1)
        sigma = torch.relu(self.alpha_linear(h))
        h = torch.cat([self.feature_linear(h), views], dim=-1)
        rgb = torch.sigmoid(self.rgb_linear(torch.relu(self.views_linear(h))))
        return rgb, sigma


def build(bs=1, small=False, impl="auto") -> Export:
    if impl == "lib":
        raise RuntimeError("NeRF has no library implementation; use --impl own")
    if small:
        cfg, n = dict(depth=7, width=32, in_pos=24, in_view=8), 256
    else:
        cfg, n = dict(depth=7, width=64, in_pos=40, in_view=24), 1920 * 1080
    n *= bs
    x = torch.randn(n, cfg["in_pos"] + cfg["in_view"])
    return Export(NeRF(**cfg), (x,), ["input"], ["rgb", "sigma"], {},
                  f"NeRF MLP {cfg['depth']} layers, width {cfg['width']}, skip after layer 5, "
                  f"input {n}x{cfg['in_pos'] + cfg['in_view']}", "own")
