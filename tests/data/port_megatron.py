"""Megatron-LM's RoPE (tests/unit_tests/transformer/test_rope.py drives it; its numbers come from
megatron/core/models/common/embeddings/rotary_pos_embedding.py and rope_utils.py) ported to rope_ref: the kernel
under test is Megatron's unfused path, reimplemented below on the CPU: RotaryEmbedding (rotary_percent,
rotary_interleaved, seq_len_interpolation_factor, rope_scaling as Llama 3), MultimodalRotaryEmbedding (mrope_section),
_apply_rotary_pos_emb_bshd (mscale, inverse, MLA interleaving), _apply_rotary_pos_emb_thd (context parallel),
apply_rotary_pos_emb_with_cos_sin (its fallback without flash-attn), and test_rope's fused-QKV split.

Run: PYTHONPATH=. python tests/data/port_megatron.py  (torch needed)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import torch

import rope_ref as rr
from rope_ref.testing import assert_rope_close, layout_positions
from port_common import case, plant, summary


# ---- Megatron's reference (rotary_pos_embedding.py, rope_utils.py), device CPU, no process groups ----
class RotaryEmbedding:
    def __init__(self, kv_channels, rotary_percent, rotary_interleaved=False, seq_len_interpolation_factor=None,
                 rotary_base=10000, rope_scaling=False, rope_scaling_factor=8.0):
        dim = kv_channels
        if rotary_percent < 1.0:
            dim = int(dim * rotary_percent)
        self.rotary_interleaved = rotary_interleaved
        self.seq_len_interpolation_factor = seq_len_interpolation_factor
        self.inv_freq = 1.0 / (rotary_base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
        if rope_scaling:
            self.inv_freq = self._apply_scaling(self.inv_freq, factor=rope_scaling_factor)

    def _apply_scaling(self, freqs, factor=8, low_freq_factor=1, high_freq_factor=4,
                       original_max_position_embeddings=8192):
        old_context_len = original_max_position_embeddings
        low_freq_wavelen = old_context_len / low_freq_factor
        high_freq_wavelen = old_context_len / high_freq_factor
        wavelen = 2 * math.pi / freqs
        inv_freq_llama = torch.where(wavelen > low_freq_wavelen, freqs / factor, freqs)
        smooth_factor = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
        smoothed_inv_freq = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
        is_medium_freq = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
        return torch.where(is_medium_freq, smoothed_inv_freq, inv_freq_llama)

    def get_freqs_non_repeated(self, max_seq_len, offset=0):
        seq = torch.arange(max_seq_len, dtype=self.inv_freq.dtype) + offset
        if self.seq_len_interpolation_factor is not None:
            seq *= 1 / self.seq_len_interpolation_factor
        return torch.outer(seq, self.inv_freq)

    def __call__(self, max_seq_len, offset=0):
        freqs = self.get_freqs_non_repeated(max_seq_len, offset)
        if not self.rotary_interleaved:
            emb = torch.cat((freqs, freqs), dim=-1)
        else:
            emb = torch.stack((freqs.view(-1, 1), freqs.view(-1, 1)), dim=-1).view(freqs.shape[0], -1)
        return emb[:, None, None, :]


class MultimodalRotaryEmbedding:
    def __init__(self, kv_channels, rotary_percent, rotary_interleaved=False, seq_len_interpolation_factor=None,
                 rotary_base=10000):
        dim = kv_channels
        if rotary_percent < 1.0:
            dim = int(dim * rotary_percent)
        self.rotary_interleaved = rotary_interleaved
        self.seq_len_interpolation_factor = seq_len_interpolation_factor
        self.inv_freq = 1.0 / (rotary_base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))

    def __call__(self, position_ids, mrope_section):
        seq = position_ids.to(dtype=self.inv_freq.dtype)
        if self.seq_len_interpolation_factor is not None:
            seq *= 1 / self.seq_len_interpolation_factor
        inv_freq_expanded = self.inv_freq[None, None, :, None].expand(3, seq.shape[1], -1, 1)
        seq_expanded = seq[:, :, None, :].float()
        freqs = (inv_freq_expanded @ seq_expanded).transpose(2, 3)
        if not self.rotary_interleaved:
            emb = torch.cat((freqs, freqs), dim=-1)
        else:
            bs = freqs.shape[1]
            emb = torch.stack((freqs.view(3, bs, -1, 1), freqs.view(3, bs, -1, 1)), dim=-1).view(
                3, bs, freqs.shape[0], -1)
        mrope_section = mrope_section * 2
        emb = torch.cat([m[i % 3] for i, m in enumerate(emb.split(mrope_section, dim=-1))], dim=-1)
        return emb[..., None, :].transpose(0, 1).contiguous()


def _rotate_half(x, rotary_interleaved):
    if not rotary_interleaved:
        x1, x2 = torch.chunk(x, 2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)
    x1 = x[:, :, :, ::2]
    x2 = x[:, :, :, 1::2]
    x_new = torch.stack((-x2, x1), dim=-1)
    return x_new.view(x_new.shape[0], x_new.shape[1], x_new.shape[2], -1)


def _apply_rotary_pos_emb_bshd(t, freqs, rotary_interleaved=False, mla_rotary_interleaved=False, mscale=1.0,
                               inverse=False, mla_output_remove_interleaving=False):
    if freqs.dim() == t.dim() + 1 and freqs.size(-2) == 1:
        freqs = freqs.squeeze(-2)
    rot_dim = freqs.shape[-1]
    t, t_pass = t[..., :rot_dim], t[..., rot_dim:]
    if mla_rotary_interleaved:
        x1 = t[..., 0::2]
        x2 = t[..., 1::2]
        t = torch.cat((x1, x2), dim=-1)
    cos_ = (torch.cos(freqs) * mscale).to(t.dtype)
    sin_ = (torch.sin(freqs) * mscale).to(t.dtype)
    if inverse:
        sin_ = -sin_
    t = (t * cos_) + (_rotate_half(t, rotary_interleaved) * sin_)
    if mla_rotary_interleaved and mla_output_remove_interleaving:
        x1, x2 = torch.chunk(t, 2, dim=-1)
        t = torch.stack((x1, x2), dim=-1).flatten(start_dim=-2)
    return torch.cat((t, t_pass), dim=-1)


def _apply_rotary_pos_emb_thd(t, cu_seqlens, freqs, rotary_interleaved=False, cp_size=1, cp_rank=0, **kw):
    total_tokens = t.shape[0]
    token_pos = torch.arange(total_tokens)
    seq_idx = torch.searchsorted(cu_seqlens, token_pos, right=True) - 1
    seq_idx = seq_idx.clamp(min=0, max=cu_seqlens.shape[0] - 2)
    seq_start = cu_seqlens[seq_idx]
    local_pos = token_pos - seq_start
    seq_len_i64 = (cu_seqlens[seq_idx + 1] - seq_start).to(torch.int64)
    full_seqlen = seq_len_i64 * cp_size
    chunk_size = seq_len_i64 // 2
    if cp_size > 1:
        is_first_half = local_pos < chunk_size
        freq_pos = torch.where(is_first_half, cp_rank * chunk_size + local_pos,
                               full_seqlen - (cp_rank + 1) * chunk_size + (local_pos - chunk_size))
    else:
        freq_pos = local_pos.to(torch.int64)
    if freqs.dim() >= 1 and freqs.size(0) > total_tokens:
        freq_pos = freq_pos + seq_start.to(torch.int64) * cp_size
    freq_pos = freq_pos.clamp(min=0, max=freqs.shape[0] - 1)
    return _apply_rotary_pos_emb_bshd(t.unsqueeze(1), freqs[freq_pos], rotary_interleaved=rotary_interleaved,
                                      **kw).squeeze(1)


def apply_rotary_pos_emb_with_cos_sin(t, cos, sin, rotary_interleaved=False):
    """The path taken when flash_attn is not installed (apply_rotary_emb_flash is None)."""
    cos = cos.to(t.dtype)
    sin = sin.to(t.dtype)
    freqs = torch.stack([cos, sin], dim=-1).flatten(start_dim=-2)
    while freqs.dim() < t.dim():
        freqs = freqs.unsqueeze(1)
    freqs = freqs.expand(t.shape[:-1] + (-1,))
    return _apply_rotary_pos_emb_bshd(t, freqs, rotary_interleaved=rotary_interleaved, mla_rotary_interleaved=False,
                                      mscale=1.0)


DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def name(dtype):
    return str(dtype).removeprefix("torch.")


def run_bshd():
    """Megatron computes cos/sin in float32 then casts them to t's dtype: table, arithmetic and output in it."""
    torch.manual_seed(0)
    s, b, h = 1024, 2, 2
    grid = itertools.product(DTYPES, [64, 128], [0.5, 1.0], [False, True], [None, 4.0], [False, True])
    for dtype, kv, pct, interleaved, interp, llama3 in grid:
        emb_mod = RotaryEmbedding(kv, pct, interleaved, seq_len_interpolation_factor=interp, rope_scaling=llama3)
        t = torch.randn(s, b, h, kv, dtype=dtype)
        out = _apply_rotary_pos_emb_bshd(t, emb_mod(s), rotary_interleaved=interleaved)
        r = int(kv * pct)
        inv = rr.scaled_inv_freq(r, 10000.0, rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                                 original_max_position_embeddings=8192)[0] if llama3 else None
        pos = layout_positions(t.shape, "sbhd") / (interp or 1.0)           # glue: the interpolation factor
        label = f"megatron bshd {name(dtype)} kv={kv} pct={pct} il={interleaved} interp={interp} llama3={llama3}"
        case(label, lambda: assert_rope_close(out, t, pos, rotary_dim=r, inv_freq=inv,
                                              pairing="interleaved" if interleaved else "half", precision=name(dtype)))
    # inverse=True: sin negated, R^T
    t = torch.randn(s, b, h, 128)
    out = _apply_rotary_pos_emb_bshd(t, RotaryEmbedding(128, 1.0)(s), inverse=True)
    case("megatron bshd inverse", lambda: assert_rope_close(out, t, -layout_positions(t.shape, "sbhd"), pairing="half"))


def run_mscale_mla():
    """mscale multiplies cos and sin; MLA de-interleaves the input (interleaved pairs) and writes half-split output
    unless mla_output_remove_interleaving.  rope_ref has keywords for neither: a RopeConfig carries both."""
    torch.manual_seed(1)
    s, b, h, kv = 512, 2, 2, 64
    for dtype, mscale in itertools.product(DTYPES, [1.0, 1.3]):
        t = torch.randn(s, b, h, kv, dtype=dtype)
        emb = RotaryEmbedding(kv, 1.0)(s)
        out = _apply_rotary_pos_emb_bshd(t, emb, mscale=mscale)
        cfg = rr.RopeConfig(model_type=None, head_dim=kv, rotary_dim=kv, pairing="half", base=1e4, rope_type="default",
                            attention_factor=mscale)                               # glue: a RopeConfig for mscale
        case(f"megatron mscale={mscale} {name(dtype)}", lambda: assert_rope_close(out, t, layout="sbhd", config=cfg,
                                                                                   precision=name(dtype)))
        for remove in (True, False):
            out = _apply_rotary_pos_emb_bshd(t, emb, mla_rotary_interleaved=True, mscale=mscale,
                                             mla_output_remove_interleaving=remove)
            cfg = rr.RopeConfig(model_type=None, head_dim=kv, rotary_dim=kv, pairing="interleaved", base=1e4,
                                rope_type="default", attention_factor=mscale,
                                output_pairing=None if remove else "half")
            case(f"megatron MLA mscale={mscale} remove_interleaving={remove} {name(dtype)}",
                 lambda: assert_rope_close(out, t, layout="sbhd", config=cfg, precision=name(dtype)))
            if not remove:          # glue: the output layout undone by hand (rr.to_interleaved), then compared
                case(f"megatron MLA (to_interleaved) mscale={mscale} {name(dtype)}", lambda: assert_rope_close(
                    torch.from_numpy(rr.to_interleaved(out.float().numpy())).to(dtype), t, layout="sbhd", config=cfg
                    .__class__(**{**cfg.__dict__, "output_pairing": None}), precision=name(dtype)))


def run_thd():
    torch.manual_seed(2)
    cu = torch.tensor([0, 400, 542, 711, 727, 752, 1270, 1426, 1450, 1954, 2044, 2048], dtype=torch.int32)
    for dtype, interleaved, cp_size in itertools.product(DTYPES, [False, True], [1, 2]):
        emb_mod = RotaryEmbedding(128, 1.0, interleaved)
        # Megatron (as TE) expects each sequence padded to a multiple of 2 * cp_size under context parallelism
        pad = np.r_[0, np.cumsum(-(-np.diff(cu.numpy()) // (2 * cp_size)) * (2 * cp_size))]
        cu_local = torch.tensor(pad // cp_size, dtype=torch.int32) if cp_size > 1 else cu
        t = torch.randn(int(cu_local[-1]), 2, 128, dtype=dtype)
        for cp_rank in range(cp_size):
            max_len = int(np.diff(cu_local.numpy()).max()) * cp_size        # freqs of the longest, as Megatron's
            out = _apply_rotary_pos_emb_thd(t, cu_local, emb_mod(max_len), interleaved, cp_size, cp_rank)
            rope = dict(pairing="interleaved" if interleaved else "half", precision=name(dtype))
            label = f"megatron thd {name(dtype)} il={interleaved} cp={cp_size}/{cp_rank}"
            if cp_size == 1:
                case(label, lambda: assert_rope_close(out, t, layout="thd", cu_seqlens=cu_local, **rope))
            else:           # glue: each sequence's two chunks on this rank (as TE's)
                n = np.diff(cu_local.numpy())
                pos = np.concatenate([np.r_[cp_rank * (k // 2) + np.arange(k // 2),
                                            cp_size * k - (cp_rank + 1) * (k // 2) + np.arange(k - k // 2)]
                                      for k in n])
                case(label, lambda: assert_rope_close(out, t, pos[:, None], **rope))


def run_mrope():
    """MultimodalRotaryEmbedding(kv_channels=128), mrope_section [16, 24, 24] (the test's), position_ids (3, b, s)."""
    torch.manual_seed(3)
    s, b, h, kv, section = 64, 2, 2, 128, [16, 24, 24]
    pid = torch.stack([torch.arange(s).repeat(b, 1), torch.randint(0, 20, (b, s)), torch.randint(0, 20, (b, s))])
    for dtype in DTYPES:
        emb = MultimodalRotaryEmbedding(kv, 1.0)(pid, section)              # (s, b, 1, kv)
        t = torch.randn(s, b, h, kv, dtype=dtype)
        out = _apply_rotary_pos_emb_bshd(t, emb)
        pos = pid.permute(0, 2, 1)[..., None].numpy()                       # glue: (3, b, s) -> (3, s, b, 1) for sbhd
        case(f"megatron mrope {name(dtype)}", lambda: assert_rope_close(
            out, t, pos, inv_freq=rr.mrope_frequencies(kv, section), pairing="half", precision=name(dtype)))
    # rotary_interleaved=True with mrope raises in Megatron itself (a .view of a transposed tensor), not ported


def run_cos_sin_and_qkv():
    torch.manual_seed(4)
    s, b, h, d = 256, 2, 2, 64
    t = torch.randn(s, b, h, d)
    cos, sin = RotaryEmbedding(d, 1.0).get_freqs_non_repeated(s).cos(), RotaryEmbedding(d, 1.0).get_freqs_non_repeated(
        s).sin()
    for interleaved in (False, True):
        out = apply_rotary_pos_emb_with_cos_sin(t, cos, sin, interleaved)
        case(f"megatron apply_rotary_pos_emb_with_cos_sin fallback il={interleaved} (cos/sin table)",
             lambda: assert_rope_close(out, t, cos=cos, sin=sin, layout="sbhd",
                                       pairing="interleaved" if interleaved else "half"))
    # test_rope.py's TestQKVRotaryEmbedding: qkv (s, 1, heads, kv * 6) split [4 kv, kv, kv]: 4 q heads, 1 k, 1 v
    kv, seq = 128, 64
    qkv = torch.randn(seq, 1, 1, kv * 6)
    pos_embed = RotaryEmbedding(kv, 1.0)(seq)
    q_in, k_in, _ = torch.split(qkv, [kv * 4, kv, kv], dim=3)
    q_ref = _apply_rotary_pos_emb_bshd(q_in.reshape(seq, 1, -1, kv), pos_embed)
    k_ref = _apply_rotary_pos_emb_bshd(k_in, pos_embed)
    case("megatron qkv: q", lambda: assert_rope_close(q_ref, q_in.reshape(seq, 1, -1, kv), layout="sbhd",
                                                      pairing="half"))
    case("megatron qkv: k", lambda: assert_rope_close(k_ref, k_in, layout="sbhd", pairing="half"))
    want = rr.testing.rotate_qkv(qkv.numpy(), np.arange(seq)[:, None, None], num_heads_q=4, head_dim=kv,
                                 pairing="half")                            # the oracle's packed q, k (and v)
    got = torch.cat([q_ref.reshape(seq, 1, 1, -1), k_ref], dim=-1).numpy()
    print("rotate_qkv vs Megatron q|k: max |diff|", float(np.abs(want[..., :5 * kv] - got).max()))


def run_plants():
    torch.manual_seed(5)
    s, b, h, kv = 1024, 2, 2, 128
    t = torch.randn(s, b, h, kv)
    emb = RotaryEmbedding(kv, 1.0)(s)
    plant("megatron rotary_interleaved flipped (emb half, rotate interleaved)", lambda: assert_rope_close(
        _apply_rotary_pos_emb_bshd(t, emb, rotary_interleaved=True), t, layout="sbhd", pairing="half"), ("pairing",))
    plant("megatron interleaved (emb and rotate) for half", lambda: assert_rope_close(
        _apply_rotary_pos_emb_bshd(t, RotaryEmbedding(kv, 1.0, True)(s), rotary_interleaved=True), t, layout="sbhd",
        pairing="half"), ("pairing",))
    plant("megatron llama3 scaling missing", lambda: assert_rope_close(
        _apply_rotary_pos_emb_bshd(t, emb), t, layout="sbhd", pairing="half",
        config=dict(model_type="llama", hidden_size=kv * 2, num_attention_heads=2, rope_theta=1e4,
                    rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                                      original_max_position_embeddings=8192))), ("scaling",))
    plant("megatron mscale missing (1.3 expected)", lambda: assert_rope_close(
        _apply_rotary_pos_emb_bshd(t, emb), t, layout="sbhd", config=rr.RopeConfig(
            None, kv, kv, "half", 1e4, "default", attention_factor=1.3)), ("attention factor", "norm"))
    plant("megatron MLA output interleaving not removed (plain interleaved expected)", lambda: assert_rope_close(
        _apply_rotary_pos_emb_bshd(t, RotaryEmbedding(kv, 1.0)(s), mla_rotary_interleaved=True), t, layout="sbhd",
        pairing="interleaved"), ("output layout",))
    pid = torch.stack([torch.arange(64).repeat(2, 1), torch.randint(0, 20, (2, 64)), torch.randint(0, 20, (2, 64))])
    tm = torch.randn(64, 2, 2, 128)
    plant("megatron mrope sections [24, 20, 20] for [16, 24, 24]", lambda: assert_rope_close(
        _apply_rotary_pos_emb_bshd(tm, MultimodalRotaryEmbedding(128, 1.0)(pid, [24, 20, 20])), tm,
        pid.permute(0, 2, 1)[..., None].numpy(), inv_freq=rr.mrope_frequencies(128, [16, 24, 24]), pairing="half"),
        ("section", "axis", "axes"))
    cu = torch.tensor([0, 400, 542, 711, 727, 752, 1270, 1426, 1450, 1954, 2044, 2048], dtype=torch.int32)
    tt = torch.randn(2048, 2, 128)
    plant("megatron thd: freqs over all tokens (absolute positions) for per-sequence", lambda: assert_rope_close(
        _apply_rotary_pos_emb_thd(tt, cu, RotaryEmbedding(128, 1.0)(4096)), tt, layout="thd", cu_seqlens=cu,
        pairing="half"), ("offset", "cu_seqlens", "position"))


if __name__ == "__main__":
    run_bshd()
    run_mscale_mla()
    run_thd()
    run_mrope()
    run_cos_sin_and_qkv()
    run_plants()
    summary("Megatron-LM")
