"""apex's fused RoPE tests (tests/L0/run_transformer/test_fused_rope.py: test_forward_backward, the cached variant,
test_thd_forward_backward, test_2d_forward_backward) ported to rope_ref: the kernel under test is the file's own
unfused reference (Megatron-Core's apply_rotary_pos_emb, apply_rotary_pos_emb_thd, apply_rotary_pos_emb_2d), copied
below.  apex feeds random angles emb (seq, 1, 1, r) whose two halves are independent: not a rotation, which rope_ref
cannot express; the port draws r/2 angles and repeats them (TE's and Megatron's emb have that form).

Run: PYTHONPATH=. python tests/data/port_apex.py  (torch needed).  head_num 2 (apex: 64)."""

from __future__ import annotations

import itertools

import torch

from rope_ref.testing import Precision, assert_rope_close
from port_common import case, plant, summary


# ---- apex's references (tests/L0/run_transformer/test_fused_rope.py) ----
def _rotate_half(x):
    x1, x2 = torch.chunk(x, 2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(t, freqs):
    rot_dim = freqs.shape[-1]
    t, t_pass = t[..., :rot_dim], t[..., rot_dim:]
    cos_ = torch.cos(freqs).to(t.dtype)
    sin_ = torch.sin(freqs).to(t.dtype)
    t = (t * cos_) + (_rotate_half(t) * sin_)
    return torch.cat((t, t_pass), dim=-1)


def apply_rotary_pos_emb_thd(t, cu_seqlens, freqs):
    seqlens = (cu_seqlens[1:] - cu_seqlens[:-1]).tolist()
    return torch.cat([apply_rotary_pos_emb(x.unsqueeze(1), freqs[: x.size(0)]) for x in torch.split(t, seqlens)]
                     ).squeeze(1)


def apply_rotary_pos_emb_2d(q, img_h, img_w, cos_h, sin_h, cos_w, sin_w):
    q = q.view(q.shape[0], img_h, img_w, q.shape[2], q.shape[3])
    q1, q2 = q.chunk(2, dim=-1)
    cos_h = cos_h[:, :img_h].unsqueeze(2)
    sin_h = sin_h[:, :img_h].unsqueeze(2)
    q1 = (q1 * cos_h) + (_rotate_half(q1) * sin_h)
    cos_w = cos_w[:, :img_w].unsqueeze(1)
    sin_w = sin_w[:, :img_w].unsqueeze(1)
    q2 = (q2 * cos_w) + (_rotate_half(q2) * sin_w)
    return torch.cat([q1, q2], dim=-1).view(q.shape[0], -1, q.shape[3], q.shape[4])


def forward_grad(fn, t, loss_func, *args):
    t = t.detach().requires_grad_(True)
    out = fn(t, *args)
    loss_func(out).backward()
    return out.detach(), t.grad.detach().clone()


def _overlapping_grad(output):
    return output.sum() * 2


def _non_overlapping_grad(output):
    return torch.sum(output * torch.ones_like(output))


def pair_emb(shape):
    """glue: apex's torch.rand emb of `shape` (..., r), made a rotation: r/2 random angles, each on both features."""
    half = torch.rand(shape[:-1] + (shape[-1] // 2,), dtype=torch.float32)
    return torch.cat([half, half], dim=-1), half


DTYPES = [torch.float32, torch.bfloat16, torch.float16]
HEADS = 2


def run_forward_backward():
    torch.manual_seed(0)
    grid = itertools.product(DTYPES, [2048, 4096], [128, 256], [0.5, 1.0], [None, (0, 1), (2, 3)],
                             [_overlapping_grad, _non_overlapping_grad], [False, True])
    for i, (dtype, seq, hidden, pct, transpose, loss_func, cached) in enumerate(grid):
        if i % 4:                                   # a quarter of the 144 cases, every dtype and flag met
            continue
        t = torch.rand((seq, 2, HEADS, hidden), dtype=dtype)
        if transpose:
            t = t.transpose(*transpose).contiguous().transpose(*transpose)
        emb, angles = pair_emb((seq, 1, 1, int(hidden * pct)))
        out, grad = forward_grad(apply_rotary_pos_emb, t, loss_func, emb)
        name = str(dtype).removeprefix("torch.")
        label = f"apex {name} s={seq} d={hidden} pct={pct} tr={transpose} cached={cached}"
        if cached:       # the table as the kernel holds it: cos(emb) cast to t's dtype; rows = positions 0..s-1
            cos, sin = (f(angles[:, 0, 0]).to(dtype) for f in (torch.cos, torch.sin))
            prec = Precision(table=name, compute=name, output=name)
            case(label, lambda: assert_rope_close(out, t, cos=cos, sin=sin, layout="sbhd", pairing="half",
                                                  precision=prec))
            g = torch.full_like(out, 2.0 if loss_func is _overlapping_grad else 1.0)
            case(label + " grad", lambda: assert_rope_close(grad, g, cos=cos, sin=-sin, layout="sbhd",
                                                            pairing="half", precision=prec))
        else:            # the angles: cos/sin computed in float32 from them, then cast to t's dtype
            prec = Precision(table=name, compute=name, output=name)
            case(label, lambda: assert_rope_close(out, t, angles=angles, pairing="half", precision=prec))
            g = torch.full_like(out, 2.0 if loss_func is _overlapping_grad else 1.0)
            case(label + " grad", lambda: assert_rope_close(grad, g, angles=-angles, pairing="half", precision=prec))


CU = torch.tensor([0, 400, 542, 711, 727, 752, 1270, 1426, 1450, 1954, 2044, 2048], dtype=torch.int32)


def run_thd():
    torch.manual_seed(1)
    for dtype, hidden, pct, transpose, loss_func in itertools.product(
            DTYPES, [128, 256], [0.5, 1.0], [None, [1, 2]], [_overlapping_grad, _non_overlapping_grad]):
        if (hidden == 256) == (transpose is None) or (pct == 0.5) == (loss_func is _overlapping_grad):
            continue                                # a quarter
        t = torch.rand((int(CU[-1]), HEADS, hidden), dtype=dtype)
        if transpose:
            t = t.transpose(*transpose).contiguous().transpose(*transpose)
        emb, angles = pair_emb((int(CU[-1]), 1, 1, int(hidden * pct)))
        out, grad = forward_grad(apply_rotary_pos_emb_thd, t, loss_func, CU, emb)
        name = str(dtype).removeprefix("torch.")
        cos, sin = (f(angles[:, 0, 0]).to(dtype) for f in (torch.cos, torch.sin))     # glue: the table, half of it
        prec = Precision(table=name, compute=name, output=name)
        label = f"apex thd {name} d={hidden} pct={pct} tr={transpose}"
        case(label, lambda: assert_rope_close(out, t, cos=cos, sin=sin, layout="thd", cu_seqlens=CU, pairing="half",
                                              precision=prec))
        g = torch.full_like(out, 2.0 if loss_func is _overlapping_grad else 1.0)
        case(label + " grad", lambda: assert_rope_close(grad, g, cos=cos, sin=-sin, layout="thd", cu_seqlens=CU,
                                                        pairing="half", precision=prec))


def check_2d(out, t, img_h, img_w, ch, sh, cw, sw, prec, label):
    """glue: apex's 2-D RoPE rotates each half of d with its own axis, half-split pairs within the half; rope_ref
    pairs (i, i + d/2) across d, so the two halves are checked in two calls, each with its axis' rows."""
    D = t.shape[-1]
    tok = torch.arange(img_h * img_w)
    rows_h, rows_w = (tok // img_w)[None, :, None], (tok % img_w)[None, :, None]
    case(label + " h-half", lambda: assert_rope_close(out[..., :D // 2], t[..., :D // 2], cos=ch, sin=sh, rows=rows_h,
                                                      pairing="half", precision=prec))
    case(label + " w-half", lambda: assert_rope_close(out[..., D // 2:], t[..., D // 2:], cos=cw, sin=sw, rows=rows_w,
                                                      pairing="half", precision=prec))


def run_2d():
    torch.manual_seed(2)
    grid = itertools.product(DTYPES, [32, 64], [32, 64], [128, 256], [None, (0, 1), (2, 3)],
                             [_overlapping_grad, _non_overlapping_grad], [0, 3])
    for i, (dtype, img_h, img_w, hidden, transpose, loss_func, margin) in enumerate(grid):
        if i % 12:
            continue
        t = torch.rand((2, img_h * img_w, HEADS, hidden), dtype=dtype)
        if transpose:
            t = t.transpose(*transpose).contiguous().transpose(*transpose)
        emb_h, ah = pair_emb((1, img_h + margin, 1, hidden // 2))
        emb_w, aw = pair_emb((1, img_w + margin, 1, hidden // 2))
        cos_h, sin_h = emb_h.cos().to(dtype), emb_h.sin().to(dtype)
        cos_w, sin_w = emb_w.cos().to(dtype), emb_w.sin().to(dtype)
        out, grad = forward_grad(apply_rotary_pos_emb_2d, t, loss_func, img_h, img_w, cos_h, sin_h, cos_w, sin_w)
        name = str(dtype).removeprefix("torch.")
        prec = Precision(compute=name, output=name)
        tables = [a[0, :, 0, : hidden // 4] for a in (cos_h, sin_h, cos_w, sin_w)]   # glue: (n, r/2) halves
        label = f"apex 2d {name} {img_h}x{img_w} d={hidden} margin={margin} tr={transpose}"
        check_2d(out, t, img_h, img_w, *tables, prec, label)
        g = torch.full_like(out, 2.0 if loss_func is _overlapping_grad else 1.0)
        ch, sh, cw, sw = tables
        check_2d(grad, g, img_h, img_w, ch, -sh, cw, -sw, prec, label + " grad")


def run_plants():
    torch.manual_seed(3)
    dtype, prec = torch.bfloat16, Precision(table="bfloat16", compute="bfloat16", output="bfloat16")
    t = torch.rand((2048, 2, HEADS, 128), dtype=dtype)
    emb, angles = pair_emb((2048, 1, 1, 128))
    cos, sin = (f(angles[:, 0, 0]).to(dtype) for f in (torch.cos, torch.sin))
    plant("apex table rows off by one", lambda: assert_rope_close(
        apply_rotary_pos_emb(t[1:], emb[:-1]), t[1:], cos=cos, sin=sin, rows=torch.arange(1, 2048)[:, None, None],
        pairing="half", precision=prec), ("row", "offset", "table"))
    il = lambda x: torch.stack((-x[..., 1::2], x[..., ::2]), -1).flatten(-2)          # noqa: E731
    inter = torch.cat([angles.repeat_interleave(2, -1)], -1)
    plant("apex interleaved rotate_half for half", lambda: assert_rope_close(
        t * inter.cos().to(dtype) + il(t) * inter.sin().to(dtype), t, cos=cos, sin=sin, layout="sbhd",
        pairing="half", precision=prec), ("pairing",))
    tt = torch.rand((2048, HEADS, 128), dtype=dtype)
    plant("apex thd cu_seqlens ignored", lambda: assert_rope_close(
        apply_rotary_pos_emb(tt.unsqueeze(1), emb).squeeze(1), tt, cos=cos, sin=sin, layout="thd", cu_seqlens=CU,
        pairing="half", precision=prec), ("cu_seqlens", "offset"))
    plant("apex forward as backward", lambda: assert_rope_close(
        apply_rotary_pos_emb(torch.ones_like(t), emb), torch.ones_like(t), cos=cos, sin=-sin, layout="sbhd",
        pairing="half", precision=prec), ("direction",))
    t2 = torch.rand((2, 32 * 32, HEADS, 128), dtype=dtype)
    emb_h, _ = pair_emb((1, 32, 1, 64))
    emb_w, _ = pair_emb((1, 32, 1, 64))
    tabs = [e.to(dtype) for e in (emb_h.cos(), emb_h.sin(), emb_w.cos(), emb_w.sin())]
    out = apply_rotary_pos_emb_2d(t2, 32, 32, *tabs[2:], *tabs[:2])                # h and w tables swapped
    before = dict(RESULTS_BEFORE=None)
    from port_common import RESULTS
    before = RESULTS["fail"]
    check_2d(out, t2, 32, 32, *(a[0, :, 0, :32] for a in tabs), Precision(compute="bfloat16", output="bfloat16"),
             "apex PLANT 2d h and w swapped (expected to FAIL)")
    print(f"PLANT apex 2d h/w swapped: {RESULTS['fail'] - before} of 2 halves failed")


if __name__ == "__main__":
    run_forward_backward()
    run_thd()
    run_2d()
    run_plants()
    summary("apex")
