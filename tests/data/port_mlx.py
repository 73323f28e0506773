"""MLX's RoPE tests (python/tests/test_fast.py: test_rope, test_rope_large_input, test_rope_with_freqs,
test_rope_grad, test_rope_batch, test_rope_single_batch, test_rope_with_large_offset) ported to rope_ref: the kernel
under test is MLX's own reference rope_orig, reimplemented below in torch with MLX's dtype semantics (positions,
frequencies, angles, cos/sin and products all in x's dtype).

Run: PYTHONPATH=. python tests/data/port_mlx.py  (torch needed)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import torch

from rope_ref.testing import Precision, assert_rope_close
from port_common import case, plant, summary


# ---- MLX's rope_orig (python/tests/test_fast.py), mx -> torch ----
def rope_orig(x, dims, traditional, base, scale, offset, freqs=None):
    N = x.shape[-2]
    dtype = x.dtype
    half_D = dims // 2
    positions = torch.arange(N, dtype=dtype)
    if isinstance(offset, torch.Tensor) and offset.numel() > 1:
        expand = tuple(range(1, x.ndim - 1))
        offset = offset.to(dtype)
        for a in expand:
            offset = offset.unsqueeze(a)
        positions = offset + positions
    else:
        positions = offset + positions
    positions = positions * scale
    if freqs is None:
        inv_freqs = torch.exp(-torch.arange(0.0, half_D, dtype=dtype) * (math.log(base) / half_D))
    else:
        inv_freqs = (1 / freqs).to(x.dtype)
    theta = positions.unsqueeze(-1) * inv_freqs
    costheta, sintheta = torch.cos(theta), torch.sin(theta)
    if traditional:
        x1 = x[..., :dims:2]
        x2 = x[..., 1:dims:2]
        rx1 = x1 * costheta - x2 * sintheta
        rx2 = x1 * sintheta + x2 * costheta
        rx = torch.cat([rx1[..., None], rx2[..., None]], dim=-1)
        if dims < x.shape[-1]:
            rx = torch.reshape(rx, (*x.shape[:-1], dims))
            rx = torch.cat([rx, x[..., dims:]], dim=-1)
        return torch.reshape(rx, x.shape)
    x1 = x[..., : dims // 2]
    x2 = x[..., dims // 2: dims]
    rx1 = x1 * costheta - x2 * sintheta
    rx2 = x1 * sintheta + x2 * costheta
    if dims < x.shape[-1]:
        return torch.cat([rx1, rx2, x[..., dims:]], dim=-1)
    return torch.cat([rx1, rx2], dim=-1)


def grad_of(x, y, **kw):
    """mx.grad(lambda x, y: (rope_orig(x, ...) * y).sum())(x, y)"""
    x = x.detach().clone().requires_grad_(True)
    (rope_orig(x, **kw) * y).sum().backward()
    return x.grad


def mlx_precision(dtype):
    """rope_orig computes every step in x's dtype (glue: rope_ref's "bfloat16" keeps float32 angles)."""
    name = str(dtype).removeprefix("torch.")
    return Precision(name, name, name, name)


def check(x, dims, traditional, base, scale, offset, freqs=None, label=""):
    """assert_rope_close on rope_orig's output; positions (glue) = (offset + arange(N)) * scale on (..., N, d)."""
    rx = rope_orig(x, dims, traditional, base, scale, offset, freqs)
    N = x.shape[-2]
    off = np.asarray(offset, np.float64)
    pos = (off.reshape(off.shape + (1,) * (x.ndim - 1 - off.ndim)) + np.arange(N)) * scale if off.ndim else \
        (float(off) + np.arange(N)) * scale
    rope = dict(rotary_dim=dims, pairing="interleaved" if traditional else "half", precision=mlx_precision(x.dtype))
    rope |= dict(base=base) if freqs is None else dict(inv_freq=1 / freqs.double().numpy())
    case(f"mlx {label} {x.dtype} shape={tuple(x.shape)} dims={dims} trad={traditional} base={base} scale={scale} "
         f"offset={offset}", lambda: assert_rope_close(rx, x, pos, **rope))
    return rx, pos, rope


def run_test_rope():
    torch.manual_seed(0)
    T, defaults = 4, (8, torch.float32, 10000.0, 1.0, 0, False)
    dtypes = [torch.float32, torch.float16, torch.bfloat16]
    for traditional in (True, False):
        dims, dtype, _, scale, offset, _ = defaults
        for base in (10000.0, 1000000.0):
            check(torch.rand(2, T, dims).to(dtype), dims, traditional, base, scale, offset, label="test_rope base")
        dims, _, base, scale, offset, _ = defaults
        for dtype in dtypes:
            x = torch.rand(2, T, dims).to(dtype)
            check(x, dims, traditional, base, scale, offset, label="test_rope dtype")
            if dtype != torch.float32:     # rope_orig of x in float32 (MLX compares the fast kernel with it too)
                ry = rope_orig(x.float(), dims, traditional, base, scale, offset)
                case(f"mlx test_rope ry {dtype} trad={traditional}", lambda: assert_rope_close(
                    ry, x, base=base, rotary_dim=dims, pairing="interleaved" if traditional else "half"))
        dims, dtype, base, scale, _, _ = defaults
        for offset in (0, 3, torch.tensor(3)):
            check(torch.rand(2, T, dims).to(dtype), dims, traditional, base, scale, offset, label="test_rope offset")
        dims, dtype, base, _, offset, _ = defaults
        for scale in (1.0, 2.0):
            check(torch.rand(2, T, dims).to(dtype), dims, traditional, base, scale, offset, label="test_rope scale")
    dims, _, base, scale, offset, traditional = defaults
    x = torch.rand(1, 1, 4, dims).swapaxes(1, 2)        # (1, 4, 1, dims): MLX's seq axis is -2, of length 1
    rx = rope_orig(1.0 * x, dims, traditional, base, scale, offset)
    case("mlx test_rope transpose (1, 4, 1, d) as bhsd", lambda: assert_rope_close(rx, x, layout="bhsd", base=base,
                                                                                    rotary_dim=dims, pairing="half"))
    # test_rope_large_input: (8, 32, 8192, 32) in MLX; (2, 2, 8192, 32) here; MLX's own atol 5e-3
    x = torch.randn(2, 8192, 2, 32).swapaxes(1, 2)
    rx = rope_orig(x, 32, False, 10000.0, 1.0, 0)
    case("mlx test_rope_large_input bhsd", lambda: assert_rope_close(rx, x, layout="bhsd", pairing="half"))


def run_freqs_grad():
    torch.manual_seed(1)
    dims, T = 8, 4
    x = torch.rand(2, T, dims)
    freqs = torch.rand(dims // 2)
    for dtype in (torch.float32, torch.float16):
        check(x.to(dtype), dims, False, None, 1.0, 0, freqs, label="test_rope_with_freqs")
    check(torch.rand(1, 1, dims), dims, False, None, 1.0, 0, freqs, label="test_rope_with_freqs single")
    x, y = torch.rand(2, 4, dims), torch.rand(2, 4, dims)
    g = grad_of(x, y, dims=dims, traditional=False, base=None, scale=1.0, offset=0, freqs=freqs)
    case("mlx test_rope_with_freqs grad", lambda: assert_rope_close(      # glue: R^T y = R_{-m} y
        g, y, -np.arange(4.0), inv_freq=1 / freqs.double().numpy(), pairing="half"))
    D = 32
    for dims, traditional in itertools.product((D, D // 2), (True, False)):
        x, y = torch.rand(2, 100, D), torch.rand(2, 100, D)
        g = grad_of(x, y, dims=dims, traditional=traditional, base=10000.0, scale=1.0, offset=0)
        case(f"mlx test_rope_grad dims={dims} trad={traditional}", lambda: assert_rope_close(
            g, y, -np.arange(100.0), rotary_dim=dims, pairing="interleaved" if traditional else "half"))


def run_batch():
    torch.manual_seed(2)
    T, dims = 4, 32
    for batch_size, n_head in itertools.product((3, 8, 11), (1, 3, 5)):
        x = torch.rand(batch_size, n_head, T, dims)
        offset = torch.arange(batch_size)
        rx = rope_orig(x, dims, True, 10000.0, 1.0, offset)
        case(f"mlx test_rope_batch B={batch_size} H={n_head}", lambda: assert_rope_close(
            rx, x, layout="bhsd", seqlen_offsets=offset, rotary_dim=dims))
    x = torch.randn(2, 6, 8, 64).permute(0, 2, 1, 3)
    rx = rope_orig(x, 64, True, 10000.0, 1.0, 0)
    case("mlx test_rope_batch transposed", lambda: assert_rope_close(rx, x, layout="bhsd"))
    for traditional, B, n_head, dims in itertools.product((True, False), (2, 4, 8), (1, 4, 7), (64, 128)):
        x = torch.rand(B, n_head, 1, dims)
        rx = rope_orig(x, dims, traditional, 10000.0, 1.0, 5)
        case(f"mlx test_rope_single_batch B={B} H={n_head} d={dims}", lambda: assert_rope_close(
            rx, x, layout="bhsd", seqlen_offsets=5, pairing="interleaved" if traditional else "half"))
    x = torch.randn(1, 1, 1024, 32)
    for dtype in (torch.float32, torch.bfloat16):
        xd = x.to(dtype)
        rx = rope_orig(xd, 32, False, 10000, 1.0, 4000)
        case(f"mlx test_rope_with_large_offset {dtype}", lambda: assert_rope_close(
            rx, xd, layout="bhsd", seqlen_offsets=4000, pairing="half", precision=mlx_precision(dtype)))
        case(f"mlx test_rope_with_large_offset {dtype} against precision='{dtype}'".replace("torch.", ""),
             lambda: assert_rope_close(rx, xd, layout="bhsd", seqlen_offsets=4000, pairing="half",
                                       precision=str(dtype).removeprefix("torch.")))


def run_plants():
    torch.manual_seed(3)
    x = torch.rand(4, 3, 64, 32)                      # (B, H, T, d): the batch test, with more positions
    off = torch.tensor([0, 5, 9, 2])
    kw = dict(layout="bhsd", seqlen_offsets=off, rotary_dim=32, pairing="interleaved")
    plant("mlx traditional flipped", lambda: assert_rope_close(rope_orig(x, 32, False, 1e4, 1.0, off), x, **kw),
          ("pairing",))
    plant("mlx offset off by one", lambda: assert_rope_close(rope_orig(x, 32, True, 1e4, 1.0, off + 1), x, **kw),
          ("offset",))
    plant("mlx batch offsets ignored", lambda: assert_rope_close(rope_orig(x, 32, True, 1e4, 1.0, 0), x, **kw),
          ("offset",))
    plant("mlx batch offsets ignored (all equal 7)", lambda: assert_rope_close(
        rope_orig(x, 32, True, 1e4, 1.0, 0), x, **(kw | dict(seqlen_offsets=7))), ("offset",))
    plant("mlx base 1e6 for 1e4", lambda: assert_rope_close(rope_orig(x, 32, True, 1e6, 1.0, off), x, **kw),
          ("base",))
    plant("mlx dims=16 for 32", lambda: assert_rope_close(rope_orig(x, 16, True, 1e4, 1.0, off), x, **kw),
          ("rotary_dim",))
    pos = (np.arange(64) + 3.0) * 2.0
    plant("mlx scale ignored (2 expected)", lambda: assert_rope_close(
        rope_orig(x, 32, True, 1e4, 1.0, 3), x, pos, rotary_dim=32), ("offset", "scal"))
    xs = torch.rand(2, 64, 8)
    freqs = torch.rand(4) + 0.5
    plant("mlx freqs used as inv_freq (not inverted)", lambda: assert_rope_close(
        rope_orig(xs, 8, False, None, 1.0, 0, 1 / freqs), xs, inv_freq=1 / freqs.double().numpy(), pairing="half"),
        ("inv_freq", "freq", "base"))
    y = torch.rand(2, 100, 32)
    g = rope_orig(y, 32, False, 1e4, 1.0, 0)          # the forward used as the backward
    plant("mlx grad: R y for R^T y", lambda: assert_rope_close(g, y, -np.arange(100.0), pairing="half"),
          ("direction",))


if __name__ == "__main__":
    run_test_rope()
    run_freqs_grad()
    run_batch()
    run_plants()
    summary("MLX")
