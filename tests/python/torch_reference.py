"""Axiom's definitions written again in PyTorch, from the papers and autograd/ops.h, for the
comparisons of test_ops_vs_torch.py and test_axial_transformer_vs_torch.py. Nothing here calls axiom.

Layouts are axiom's, so that a state_dict moves across unchanged: a Dense weight is [in, out], the
packed projections of attention are [q | k | v] with the heads side by side inside each third.
"""
import math

import torch
from torch import nn
import torch.nn.functional as F


def attention(qkv, axis, heads, causal=False, bias=None):
    """Multi-head self-attention along `axis` from packed [q | k | v] projections [..., 3D] -> [..., D]."""
    x = qkv.movedim(axis, -2)                                   # [..., L, 3D]
    d = x.shape[-1] // 3
    dh = d // heads

    def split(part):                                            # [..., H, L, Dh]
        return x[..., part * d:(part + 1) * d].unflatten(-1, (heads, dh)).transpose(-2, -3)

    q, k, v = split(0), split(1), split(2)
    scores = q @ k.transpose(-1, -2) / math.sqrt(dh)
    if bias is not None:
        scores = scores + bias
    if causal:  # inclusive: query i sees keys 0..i
        length = scores.shape[-1]
        hidden = torch.ones(length, length, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(hidden, -math.inf)
    out = torch.softmax(scores, -1) @ v                         # [..., H, L, Dh]
    return out.transpose(-2, -3).flatten(-2).movedim(-2, axis)


def shift(x, axis, amount):
    """x moved `amount` places along `axis`, zeros coming in: shift([1, 2, 3], 0, 1) = [0, 1, 2]."""
    length = x.shape[axis]
    if amount >= 0:
        return torch.cat([torch.zeros_like(x.narrow(axis, 0, amount)), x.narrow(axis, 0, length - amount)], axis)
    return torch.cat([x.narrow(axis, -amount, length + amount), torch.zeros_like(x.narrow(axis, 0, -amount))], axis)


# --- the Axial Transformer (Ho et al., 2019), section 3, as ../shared/DESIGN.md fills in its details ---

class Dense(nn.Module):
    def __init__(self, inputs, outputs):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(inputs, outputs, dtype=torch.float64))
        self.bias = nn.Parameter(torch.zeros(outputs, dtype=torch.float64))

    def forward(self, x):
        return x @ self.weight + self.bias


class AxialAttention(nn.Module):
    def __init__(self, d, heads, axis, masked):
        super().__init__()
        self.qkv, self.out = Dense(d, 3 * d), Dense(d, d)
        self.heads, self.axis, self.masked = heads, axis, masked

    def forward(self, x):
        return self.out(attention(self.qkv(x), self.axis, self.heads, self.masked))


class AttentionBlock(nn.Module):
    """x + Attention_k(LayerNorm(x)): pre-LayerNorm."""

    def __init__(self, d, heads, axis, masked):
        super().__init__()
        self.norm = nn.LayerNorm(d, dtype=torch.float64)
        self.attention = AxialAttention(d, heads, axis, masked)

    def forward(self, x):
        return x + self.attention(self.norm(x))


class FeedforwardBlock(nn.Module):
    """x + Dense_D(GELU(Dense_4D(LayerNorm(x))))."""

    def __init__(self, d, multiple):
        super().__init__()
        self.norm = nn.LayerNorm(d, dtype=torch.float64)
        self.up, self.down = Dense(d, multiple * d), Dense(multiple * d, d)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(self.norm(x))))


class TransformerBlock(nn.Module):
    def __init__(self, d, heads, multiple, axis, masked):
        super().__init__()
        self.attention = AttentionBlock(d, heads, axis, masked)
        self.feedforward = FeedforwardBlock(d, multiple)

    def forward(self, x):
        return self.feedforward(self.attention(x))


class Positions(nn.Module):
    """One learned table per spatial axis, added: [H, 1, D] + [1, W, D]."""

    def __init__(self, height, width, d):
        super().__init__()
        self.axis_1 = nn.Parameter(torch.zeros(height, d, dtype=torch.float64))
        self.axis_2 = nn.Parameter(torch.zeros(width, d, dtype=torch.float64))

    def forward(self):
        return self.axis_1[:, None, :] + self.axis_2[None, :, :]


ROWS, COLUMNS = 2, 1  # on [B, H, W, D]: a row attends along W, a column along H


class AxialTransformer(nn.Module):
    """On images [B, C, H, W] of values 0..255, the logits [B, H, W, 256] of one channel per image.

    h = Embed(x_c); u = h + positions (+ the channel encoder's context)
    u = outer decoder: (unmasked row block, masked column block) x upper_layers/2
    z = ShiftRight(h) + ShiftDown(u) + positions; z = inner decoder: masked row blocks
    logits = Dense_256(LayerNorm(z))
    """

    def __init__(self, height, width, channels, d, heads, upper_layers, row_layers, encoder_layers, multiple=4):
        super().__init__()
        block = lambda axis, masked: TransformerBlock(d, heads, multiple, axis, masked)  # noqa: E731
        self.embedding = nn.Embedding(256, d, dtype=torch.float64)
        self.outer_position = Positions(height, width, d)
        self.outer = nn.ModuleList([block(ROWS if i % 2 == 0 else COLUMNS, i % 2 == 1) for i in range(upper_layers // 2 * 2)])
        self.inner_position = Positions(height, width, d)
        self.inner = nn.ModuleList([block(ROWS, True) for _ in range(row_layers)])
        self.channels = channels
        if channels > 1:
            self.channel_values = nn.Embedding(channels * 256, d, dtype=torch.float64)
            self.channel_marker = nn.Embedding(channels, d, dtype=torch.float64)
            self.encoder_position = Positions(height, width, d)
            self.encoder = nn.ModuleList([block(ROWS if i % 2 == 0 else COLUMNS, False) for i in range(encoder_layers)])
        self.final_norm = nn.LayerNorm(d, dtype=torch.float64)
        self.logits = Dense(d, 256)

    def encode(self, images, channel):
        """The channel encoder (section 3.2.2): the channels before each image's own, embedded and summed."""
        which = torch.arange(self.channels).reshape(1, -1, 1, 1)
        values = self.channel_values(images + 256 * which)                    # [B, C, H, W, D]
        earlier = (which.reshape(1, -1) < channel.reshape(-1, 1)).to(values.dtype)
        context = (values * earlier[:, :, None, None, None]).sum(1)          # [B, H, W, D]
        context = context + self.channel_marker(channel)[:, None, None, :] + self.encoder_position()
        for block in self.encoder:
            context = block(context)
        return context

    def forward(self, images, channel):
        batch = torch.arange(images.shape[0])
        h = self.embedding(images[batch, channel])                            # [B, H, W, D]
        u = h + self.outer_position()
        if self.channels > 1:
            u = u + self.encode(images, channel)
        for block in self.outer:
            u = block(u)
        z = shift(h, 2, 1) + shift(u, 1, 1) + self.inner_position()
        for block in self.inner:
            z = block(z)
        return self.logits(self.final_norm(z))

    def loss(self, images, channel):
        """Bits per dimension of each image's channel."""
        batch = torch.arange(images.shape[0])
        targets = images[batch, channel]
        return F.cross_entropy(self.forward(images, channel).reshape(-1, 256), targets.reshape(-1)) / math.log(2)
