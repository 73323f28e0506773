"""TransformerEngine's RoPE tests (tests/pytorch/test_fused_rope.py: test_fused_rope, test_fused_rope_thd) ported to
rope_ref: the kernel under test is TE's own unfused reference (transformer_engine/pytorch/attention/rope.py,
RotaryPositionEmbedding + apply_rotary_pos_emb(fused=False)), reimplemented below line for line on the CPU.

Run: PYTHONPATH=. python tests/data/port_te.py  (torch needed).  head_num is 2 (TE: 64) to fit a CPU."""

from __future__ import annotations

import itertools
import math

import numpy as np
import torch

import rope_ref as rr
from rope_ref.testing import Precision, assert_rope_close, layout_positions
from port_common import case, plant, summary


# ---- TE's reference, as in transformer_engine/pytorch/attention/rope.py (device: CPU) ----
class RotaryPositionEmbedding(torch.nn.Module):
    def __init__(self, dim, rotary_percent=1.0, seq_len_interpolation_factor=None,
                 pretrained_max_position_embeddings=None, rotary_base=10000.0, interleaved=False):
        super().__init__()
        if rotary_percent < 1.0:
            dim = int(dim * rotary_percent)
        self.seq_len_interpolation_factor = seq_len_interpolation_factor
        self.rotary_base = rotary_base
        inv_freq = 1.0 / (self.rotary_base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
        self.register_buffer("inv_freq", inv_freq)
        self.pretrained_max_position_embeddings = pretrained_max_position_embeddings
        self.interleaved = interleaved

    def forward(self, max_seq_len, offset=0):
        seq = torch.arange(max_seq_len, dtype=self.inv_freq.dtype) + offset
        if self.pretrained_max_position_embeddings is not None and self.seq_len_interpolation_factor is not None:
            if max_seq_len > self.pretrained_max_position_embeddings * self.seq_len_interpolation_factor:
                seq *= 1 / (max_seq_len / self.pretrained_max_position_embeddings)
            else:
                seq *= 1 / self.seq_len_interpolation_factor
        freqs = torch.einsum("i , j -> i j", seq, self.inv_freq)
        if not self.interleaved:
            emb = torch.cat((freqs, freqs), dim=-1)
        else:
            emb = torch.stack((freqs.view(-1, 1), freqs.view(-1, 1)), dim=-1).view(freqs.shape[0], -1)
        return emb.reshape(emb.size(0), 1, 1, emb.size(1))


def _rotate_half(x, interleaved):
    if not interleaved:
        x1, x2 = torch.chunk(x, 2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)
    x1 = x[:, :, :, ::2]
    x2 = x[:, :, :, 1::2]
    x_new = torch.stack((-x2, x1), dim=-1)
    return x_new.view(x_new.shape[0], x_new.shape[1], x_new.shape[2], -1)


def _apply_rotary_pos_emb_base(t, freqs, start_positions=None, tensor_format="sbhd", interleaved=False):
    max_seq_len = freqs.shape[0]
    cur_seq_len = t.shape[1] if tensor_format == "bshd" else t.shape[0]
    if start_positions is not None:
        assert torch.max(start_positions) + cur_seq_len <= max_seq_len
        freqs = torch.concatenate([freqs[i: i + cur_seq_len] for i in start_positions], dim=1)
    assert cur_seq_len <= max_seq_len
    freqs = freqs[:cur_seq_len]
    if tensor_format == "bshd":
        freqs = freqs.transpose(0, 1)
    cos_ = torch.cos(freqs).to(t.dtype)
    sin_ = torch.sin(freqs).to(t.dtype)
    rot_dim = freqs.shape[-1]
    t, t_pass = t[..., :rot_dim], t[..., rot_dim:]
    t = (t * cos_) + (_rotate_half(t, interleaved) * sin_)
    return torch.cat((t, t_pass), dim=-1)


def _get_freqs_on_this_cp_rank(freqs, seqlen, cp_size, cp_rank):
    if cp_size > 1:
        cp_seg = seqlen // 2
        full_seqlen = cp_size * seqlen
        return torch.cat([freqs[cp_rank * cp_seg: (cp_rank + 1) * cp_seg],
                          freqs[full_seqlen - (cp_rank + 1) * cp_seg: full_seqlen - cp_rank * cp_seg]])
    return freqs


def apply_rotary_pos_emb(t, freqs, tensor_format="sbhd", start_positions=None, interleaved=False, fused=False,
                         cu_seqlens=None, cp_size=1, cp_rank=0):
    assert not (cp_size > 1 and start_positions is not None)
    assert tensor_format != "thd" or cu_seqlens is not None
    if tensor_format == "thd":
        cu_seqlens = cu_seqlens // cp_size
        seqlens = (cu_seqlens[1:] - cu_seqlens[:-1]).tolist()
        return torch.cat([
            _apply_rotary_pos_emb_base(
                x.unsqueeze(1), _get_freqs_on_this_cp_rank(freqs, x.size(0), cp_size, cp_rank),
                start_positions=(start_positions[idx: idx + 1] if start_positions is not None else None),
                interleaved=interleaved)
            for idx, x in enumerate(torch.split(t, seqlens))]).squeeze(1)
    seqlen = t.size(0) if tensor_format == "sbhd" else t.size(1)
    return _apply_rotary_pos_emb_base(t, _get_freqs_on_this_cp_rank(freqs, seqlen, cp_size, cp_rank),
                                      start_positions, tensor_format, interleaved=interleaved)


def _overlapping_grad(output):
    return output.sum() * 2


def _non_overlapping_grad(output):
    t = torch.ones_like(output)
    return torch.sum(output * t)


# ---- glue: the positions of a context-parallel rank (rope_ref has no cp_size/cp_rank) ----
def cp_positions(seqlen, cp_size, cp_rank):
    """The positions TE's _get_freqs_on_this_cp_rank gives a rank's `seqlen` rows: two chunks, front and back."""
    seg, full = seqlen // 2, cp_size * seqlen
    return np.concatenate([np.arange(cp_rank * seg, (cp_rank + 1) * seg),
                           np.arange(full - (cp_rank + 1) * seg, full - cp_rank * seg)])


def forward_grad(t, emb, loss_func, **kw):
    """TE's test body for one rank: the unfused output (computed in float32, cast to t's dtype) and t's grad."""
    t = t.detach().requires_grad_(True)
    out = apply_rotary_pos_emb(t.float(), emb, fused=False, **kw).to(t.dtype)
    loss_func(out).backward()
    return out.detach(), t.grad.detach().clone()


DTYPES = [torch.float32, torch.bfloat16, torch.float16]
HEADS, BATCH = 2, 2


def te_grid(rng):
    """test_fused_rope's grid, sampled: every dtype x format x interleaved x cp_size x start_positions, with
    seq_length, hidden_size, rotary_percent, margin, transpose and loss_func cycled."""
    cyc = itertools.cycle(itertools.product([2048, 4096], [128, 256], [0.5, 1.0], [0, 10], [None, (0, 1), (2, 3)],
                                            [_overlapping_grad, _non_overlapping_grad]))
    for dtype, fmt, interleaved, cp_size, start in itertools.product(DTYPES, ["sbhd", "bshd"], [True, False], [1, 2],
                                                                       [True, False]):
        seq_length, hidden, pct, margin, transpose, loss_func = next(cyc)
        if start and cp_size > 1:
            continue
        if start and margin == 0:
            margin = 10
        yield dtype, fmt, interleaved, cp_size, start, seq_length, hidden, pct, margin, transpose, loss_func


def run_sbhd_bshd():
    torch.manual_seed(0)
    n = 0
    for (dtype, fmt, interleaved, cp_size, start, seq_length, hidden, pct, margin, transpose,
         loss_func) in te_grid(None):
        t = torch.rand((seq_length - margin, BATCH, HEADS, hidden), dtype=dtype)
        sp = torch.randint(0, margin, (BATCH,), dtype=torch.int32) if start else None
        if fmt == "bshd":
            t = t.transpose(0, 1).contiguous()
        if transpose:
            t = t.transpose(*transpose).contiguous().transpose(*transpose)
        emb = RotaryPositionEmbedding(hidden, pct, interleaved=interleaved)(seq_length * cp_size)
        rope = dict(rotary_dim=int(hidden * pct), base=10000.0, pairing="interleaved" if interleaved else "half",
                    precision=Precision(output=str(dtype).removeprefix("torch.")))
        for cp_rank in range(cp_size):
            out, grad = forward_grad(t, emb, loss_func, tensor_format=fmt, start_positions=sp,
                                     interleaved=interleaved, cp_size=cp_size, cp_rank=cp_rank)
            label = f"te {fmt} {dtype} s={seq_length - margin} d={hidden} pct={pct} il={interleaved} cp={cp_size}/" \
                    f"{cp_rank} sp={None if sp is None else sp.tolist()} tr={transpose}"
            if cp_size == 1:            # the natural call: the layout and the offsets
                case(label, lambda: assert_rope_close(out, t, layout=fmt, seqlen_offsets=sp, **rope))
                pos = layout_positions(t.shape, fmt, seqlen_offsets=sp)
            else:                       # glue: the rank's positions, shaped for the layout's (s or b, s) axes
                p = cp_positions(t.shape[0 if fmt == "sbhd" else 1], cp_size, cp_rank)
                pos = p[:, None, None] if fmt == "sbhd" else p[None, :, None]
                case(label, lambda: assert_rope_close(out, t, pos, **rope))
            if sp is None:              # TE checks the grad only without start_positions; glue: R^T g = R_{-m} g
                g = torch.full_like(out, 2.0 if loss_func is _overlapping_grad else 1.0)
                case(label + " grad", lambda: assert_rope_close(grad, g, -pos, **rope))
            n += 1
    print(f"sbhd/bshd: {n} forward cases")


CU = [0, 400, 542, 711, 727, 752, 1270, 1426, 1450, 1954, 2044, 2048]


def thd_cu(cp_size):
    if cp_size == 1:
        return torch.tensor(CU, dtype=torch.int32)
    pad = [0]
    for i in range(1, len(CU)):
        pad.append(pad[i - 1] + math.ceil((CU[i] - CU[i - 1]) / (cp_size * 2)) * (cp_size * 2))
    return torch.tensor(pad, dtype=torch.int32)


def thd_cp_positions(cu, cp_size, cp_rank):
    """glue: each packed sequence's rank positions (TE splits cu_seqlens // cp_size)."""
    lengths = np.diff(cu.numpy() // cp_size)
    return np.concatenate([cp_positions(int(n), cp_size, cp_rank) for n in lengths])


def run_thd():
    torch.manual_seed(1)
    n = 0
    for dtype, hidden, pct, transpose, cp_size, interleaved, start in itertools.product(
            DTYPES, [128, 256], [0.5, 1.0], [None, (1, 2)], [1, 2], [True, False], [True, False]):
        if start and cp_size > 1:
            continue
        if (hidden == 256) == (transpose is None):          # sample: half the (hidden, transpose) pairs
            continue
        loss_func = _overlapping_grad if interleaved else _non_overlapping_grad
        cu = thd_cu(cp_size)
        sp = torch.randint(0, 10, (len(CU) - 1,), dtype=torch.int32) if start else None
        t = torch.rand((int(cu[-1]) // cp_size, HEADS, hidden), dtype=dtype)
        if transpose:
            t = t.transpose(*transpose).contiguous().transpose(*transpose)
        emb = RotaryPositionEmbedding(hidden, pct, interleaved=interleaved)(int(cu[-1]))
        rope = dict(rotary_dim=int(hidden * pct), base=10000.0, pairing="interleaved" if interleaved else "half",
                    precision=Precision(output=str(dtype).removeprefix("torch.")))
        for cp_rank in range(cp_size):
            out, grad = forward_grad(t, emb, loss_func, tensor_format="thd", start_positions=sp,
                                     interleaved=interleaved, cu_seqlens=cu, cp_size=cp_size, cp_rank=cp_rank)
            label = f"te thd {dtype} d={hidden} pct={pct} il={interleaved} cp={cp_size}/{cp_rank} sp={sp is not None}"
            if cp_size == 1:
                case(label, lambda: assert_rope_close(out, t, layout="thd", cu_seqlens=cu, seqlen_offsets=sp, **rope))
                pos = layout_positions(t.shape, "thd", cu_seqlens=cu, seqlen_offsets=sp)
            else:
                pos = thd_cp_positions(cu, cp_size, cp_rank)[:, None]
                case(label, lambda: assert_rope_close(out, t, pos, **rope))
            if sp is None:
                g = torch.full_like(out, 2.0 if loss_func is _overlapping_grad else 1.0)
                case(label + " grad", lambda: assert_rope_close(grad, g, -pos, **rope))
            n += 1
    print(f"thd: {n} forward cases")


def run_plants():
    torch.manual_seed(2)
    dtype, hidden, s = torch.bfloat16, 128, 1024
    prec = Precision(output="bfloat16")
    t = torch.rand((s, BATCH, HEADS, hidden), dtype=dtype)
    sp = torch.tensor([3, 7], dtype=torch.int32)
    emb = RotaryPositionEmbedding(hidden)(s + 16)
    half = dict(rotary_dim=hidden, base=10000.0, pairing="half", precision=prec)
    ref = lambda **kw: apply_rotary_pos_emb(t.float(), kw.pop("emb", emb), **kw).to(dtype)    # noqa: E731
    plant("te interleaved flag flipped", lambda: assert_rope_close(
        ref(tensor_format="sbhd", interleaved=True), t, layout="sbhd", **half), ("pairing",))
    for dt in (torch.float32, torch.bfloat16):          # a clean swap: the table and the rotation both interleaved
        tt = t.to(dt)
        plant(f"te interleaved (emb and apply) for half {dt}", lambda: assert_rope_close(
            apply_rotary_pos_emb(tt.float(), RotaryPositionEmbedding(hidden, interleaved=True)(s), interleaved=True
                                 ).to(dt), tt, layout="sbhd", **(half | dict(precision=Precision(output=str(dt)[6:])))),
            ("pairing",))
    plant("te start_positions off by one", lambda: assert_rope_close(
        ref(tensor_format="sbhd", start_positions=sp + 1), t, layout="sbhd", seqlen_offsets=sp, **half), ("offset",))
    plant("te start_positions ignored", lambda: assert_rope_close(
        ref(tensor_format="sbhd"), t, layout="sbhd", seqlen_offsets=sp, **half), ("offset",))
    plant("te wrong base (5e5 for 1e4)", lambda: assert_rope_close(
        ref(tensor_format="sbhd", emb=RotaryPositionEmbedding(hidden, rotary_base=5e5)(s)), t, layout="sbhd", **half),
        ("base",))
    plant("te sbhd read as bshd", lambda: assert_rope_close(
        ref(tensor_format="sbhd"), t, layout="bshd", **half), ("offset", "position"))
    plant("te rotary_percent ignored (all rotate, 64 expected)", lambda: assert_rope_close(
        ref(tensor_format="sbhd"), t, layout="sbhd", **(half | dict(rotary_dim=64))), ("rotary_dim",))
    plant("te rotary_percent=0.5 frequencies of full d", lambda: assert_rope_close(
        ref(tensor_format="sbhd", emb=RotaryPositionEmbedding(hidden)(s)[..., :32].repeat(1, 1, 1, 2)), t,
        layout="sbhd", **(half | dict(rotary_dim=64))), ("rotary_dim", "base"))
    # thd: cu_seqlens ignored (one long sequence) / cp ignored
    cu = thd_cu(1)
    tt = torch.rand((2048, HEADS, hidden), dtype=dtype)
    one = torch.tensor([0, 2048], dtype=torch.int32)
    emb_thd = RotaryPositionEmbedding(hidden)(2048)
    plant("te thd cu_seqlens ignored", lambda: assert_rope_close(
        apply_rotary_pos_emb(tt.float(), emb_thd, "thd", cu_seqlens=one).to(dtype), tt, layout="thd", cu_seqlens=cu,
        **half), ("offset", "position", "cu_seqlens"))
    cu2 = thd_cu(2)
    tt2 = torch.rand((int(cu2[-1]) // 2, HEADS, hidden), dtype=dtype)
    emb2 = RotaryPositionEmbedding(hidden)(int(cu2[-1]))
    plant("te thd cp_rank 1 computed as rank 0", lambda: assert_rope_close(
        apply_rotary_pos_emb(tt2.float(), emb2, "thd", cu_seqlens=cu2, cp_size=2, cp_rank=0).to(dtype), tt2,
        thd_cp_positions(cu2, 2, 1)[:, None], **half), ("offset", "position"))
    # grad: the forward rotation given as the backward (R g for R^T g)
    g = torch.ones_like(t)
    plant("te grad turned forward (R g, not R^T g)", lambda: assert_rope_close(
        apply_rotary_pos_emb(g.float(), emb).to(dtype), g,
        -layout_positions(g.shape, "sbhd"), **half), ("direction",))


def run_identify():
    """identify / assert_rope_matches / assert_rope_grad_matches on TE's unfused function (sbhd, one row a token)."""
    for interleaved, pct in ((False, 1.0), (True, 0.5)):
        emb = RotaryPositionEmbedding(128, pct, interleaved=interleaved)(4096)

        def fn(x):                                                  # glue: (seq, d) float64 <-> (s, 1, 1, d) float32
            return apply_rotary_pos_emb(torch.tensor(x, dtype=torch.float32)[:, None, None], emb,
                                        interleaved=interleaved)[:, 0, 0].double().numpy()

        def vjp(x, g):
            t = torch.tensor(x, dtype=torch.float32)[:, None, None].requires_grad_(True)
            apply_rotary_pos_emb(t, emb, interleaved=interleaved).backward(torch.tensor(g, dtype=torch.float32)[:, None,
                                                                                                              None])
            return t.grad[:, 0, 0].double().numpy()
        pairing = "interleaved" if interleaved else "half"
        print("identify:", rr.identify(fn, 128))
        case(f"te assert_rope_matches il={interleaved} pct={pct}",
             lambda: rr.assert_rope_matches(fn, 128, pairing=pairing, rotary_dim=int(128 * pct), base=1e4))
        case(f"te assert_rope_grad_matches il={interleaved} pct={pct}",
             lambda: rr.assert_rope_grad_matches(vjp, 128, pairing=pairing, rotary_dim=int(128 * pct), base=1e4))
        plant(f"te assert_rope_matches wrong pairing expected il={interleaved}",
              lambda: rr.assert_rope_matches(fn, 128, pairing={"half": "interleaved"}.get(pairing, "half"),
                                             rotary_dim=int(128 * pct), base=1e4), ("pairing",))


if __name__ == "__main__":
    import sys
    parts = sys.argv[1:] or ["plants", "identify", "thd", "sbhd"]
    for part in parts:
        {"sbhd": run_sbhd_bshd, "thd": run_thd, "plants": run_plants, "identify": run_identify}[part]()
    summary("TransformerEngine")
