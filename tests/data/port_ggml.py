"""llama.cpp/ggml's RoPE tests (tests/test-rope.cpp: test_rope_comp's grid of modes NORMAL, NEOX, MROPE, IMROPE, VISION
with freq_scale, ext_factor, attn_factor and freq_factors; and the composition check rope(rope(x, p0), p1) ==
rope(x, p2)) ported to rope_ref: the kernel under test is ggml's CPU rope (ggml-cpu/ops.cpp: ggml_rope_cache_init,
ggml_mrope_cache_init, rope_yarn, rotate_pairs), reimplemented below in float32 NumPy as ggml computes it (theta by
repeated multiplication by theta_scale, pair after pair).

Run: PYTHONPATH=. python tests/data/port_ggml.py  (NumPy only)."""

from __future__ import annotations

import itertools
import math

import numpy as np

import rope_ref as rr
from rope_ref.testing import Precision, assert_rope_close
from port_common import case, plant, summary

F32 = np.float32
NORMAL, NEOX, MROPE, IMROPE, VISION = 0, 2, 8, 40, 24


# ---- ggml's CPU rope, float32 as in ggml-cpu/ops.cpp ----
def corr_dims(n_dims, n_ctx_orig, base, beta_fast, beta_slow):
    def dim(n_rot):
        with np.errstate(divide="ignore"):
            return n_dims * np.log(F32(n_ctx_orig) / F32(n_rot * 2 * math.pi)) / (2 * np.log(F32(base)))
    return max(0.0, float(np.floor(dim(beta_fast)))), min(n_dims - 1.0, float(np.ceil(dim(beta_slow))))


def rope_yarn(theta_extrap, freq_scale, corr, i0, ext_factor, mscale):
    theta_interp = F32(freq_scale) * theta_extrap
    theta = theta_interp
    if ext_factor != 0.0:
        y = (i0 // 2 - corr[0]) / max(0.001, corr[1] - corr[0])
        ramp_mix = F32((1 - min(1.0, max(0.0, y))) * ext_factor)
        theta = theta_interp * (F32(1) - ramp_mix) + theta_extrap * ramp_mix
        mscale = F32(mscale) * F32(1.0 + 0.1 * math.log(1.0 / freq_scale))
    return np.cos(F32(theta)) * F32(mscale), np.sin(F32(theta)) * F32(mscale)


def cache_init(p, ne0, theta_scale, ff, corr, fs, ef, af, sections=None, imrope=False, vision=False):
    """cos/sin per pair for one token: p is a position, or (p_t, p_h, p_w, p_e) with sections."""
    cache = np.zeros(ne0, F32)
    bases = [F32(q) for q in np.atleast_1d(p)]
    thetas = list(bases)
    for i0 in range(0, ne0, 2):
        f = F32(1.0) if ff is None or i0 // 2 >= len(ff) else F32(ff[i0 // 2])   # past n_dims/2: unused pairs
        if sections is None:
            theta = thetas[0]
        else:
            sect_dims = sum(sections)
            sec_w, sector = sections[0] + sections[1], (i0 // 2) % sect_dims
            sec_e = sections[2] + sec_w
            if vision:
                for a, start in enumerate((0, sections[0], sec_w, sec_e)):
                    if sector == start:
                        thetas[a] = bases[a]
            if imrope:
                a = (1 if sector % 3 == 1 and sector < 3 * sections[1] else 2 if sector % 3 == 2 and sector < 3 *
                     sections[2] else 0 if sector % 3 == 0 and sector < 3 * sections[0] else 3)
            else:
                a = 0 if sector < sections[0] else 1 if sector < sec_w else 2 if sector < sec_w + sections[2] else 3
            theta = thetas[a]
        cache[i0], cache[i0 + 1] = rope_yarn(F32(theta / f), fs, corr, i0, ef, af)
        thetas = [F32(t * theta_scale) for t in thetas]
    return cache


def ggml_rope(x, pos, n_dims, mode, *, base=10000.0, fs=1.0, ef=0.0, af=1.0, ff=None, sections=None, n_ctx_orig=0,
              beta_fast=1.0, beta_slow=1.0):
    """x (seq, heads, ne0) float32 or float16; pos (seq,) or (4, seq) for the multi modes."""
    seq, heads, ne0 = x.shape
    theta_scale = F32(np.power(F32(base), F32(-2.0) / F32(n_dims)))
    corr = corr_dims(n_dims, n_ctx_orig, base, beta_fast, beta_slow)
    out = x.copy()
    src = x.astype(F32)
    for i2 in range(seq):
        p = pos[i2] if mode in (NORMAL, NEOX) else pos[:, i2]
        c = cache_init(p, ne0, theta_scale, ff, corr, fs, ef, af, None if mode in (NORMAL, NEOX) else sections,
                       mode == IMROPE, mode == VISION)
        n, off, scale = {NORMAL: (n_dims, 1, 1), VISION: (ne0, n_dims, 2)}.get(mode, (n_dims, n_dims // 2, 2))
        ic = np.arange(0, n, 2) // scale
        cos, sin = c[0:n:2], c[1:n:2]
        x0, x1 = src[i2][:, ic], src[i2][:, ic + off]
        out[i2][:, ic] = (x0 * cos - x1 * sin).astype(x.dtype)
        out[i2][:, ic + off] = (x0 * sin + x1 * cos).astype(x.dtype)
    return out


# ---- glue: what ggml's parameters mean for rope_ref (frequencies per pair and axis, the attention factor) ----
def expected_freqs(n_dims, mode, base, fs, ef, ff, sections, pairs):
    """F (pairs, axes): ggml's theta_j = base^(-2k/n_dims) / ff_j, YaRN-mixed with freq_scale, on pair j's axis (k: j,
    or j's index within its section for VISION)."""
    corr = corr_dims(n_dims, 0, base, 1.0, 1.0)
    j = np.arange(pairs)
    axis, k = np.zeros(pairs, int), j.copy()
    if sections is not None:
        sector, sec_w = j % sum(sections), sections[0] + sections[1]
        starts = np.array([0, sections[0], sec_w, sec_w + sections[2]])
        if mode == IMROPE:
            axis = np.select([(sector % 3 == 1) & (sector < 3 * sections[1]), (sector % 3 == 2) & (sector < 3 *
                              sections[2]), (sector % 3 == 0) & (sector < 3 * sections[0])], [1, 2, 0], 3)
        else:
            axis = np.searchsorted(starts, sector, side="right") - 1
        if mode == VISION:
            k = sector - starts[axis]
    theta = base ** (-2.0 * k / n_dims) / (1.0 if ff is None else ff[:pairs].astype(np.float64))
    ramp = 1 - np.clip((j - corr[0]) / max(0.001, corr[1] - corr[0]), 0, 1) if ef else np.zeros(pairs)
    theta = theta * (fs * (1 - ramp * ef) + ramp * ef)
    F = np.zeros((pairs, 4 if sections is not None else 1))
    F[j, axis] = theta
    return F if sections is not None else F[:, 0]


def check(x, pos, n_dims, mode, label, **kw):
    y = ggml_rope(x, pos, n_dims, mode, **kw)
    fs, ef, af = kw.get("fs", 1.0), kw.get("ef", 0.0), kw.get("af", 1.0)
    base, sections, ff = kw.get("base", 10000.0), kw.get("sections"), kw.get("ff")
    d = x.shape[-1]
    r = d if mode == VISION else n_dims
    F = expected_freqs(n_dims, mode, base, fs, ef, ff, sections, r // 2)
    factor = af * (1.0 + 0.1 * math.log(1.0 / fs)) if ef else af
    p = pos[:, :, None] if F.ndim == 2 else pos[:, None]   # (A, seq, 1) or (seq, 1) for x (seq, heads, d)
    prec = Precision(output="float16" if x.dtype == np.float16 else "float32")
    pairing = "interleaved" if mode == NORMAL else "half"
    if F.ndim == 1:     # glue: an attention factor only through a RopeConfig (its frequencies replaced by F)
        cfg = rr.RopeConfig(None, d, r, pairing, base, "default", attention_factor=factor)
        return case(label, lambda: assert_rope_close(y, x, p, config=cfg, inv_freq=F, precision=prec)), y
    # multi-axis: no RopeConfig takes F (A = 4) and a factor; glue: the output divided by the factor (float64)
    scaled = np.concatenate([y[..., :r].astype(np.float64) / factor, y[..., r:]], axis=-1)   # the rotated part
    return case(label, lambda: assert_rope_close(scaled, x, p, inv_freq=F, rotary_dim=r,
                                                 pairing=pairing, precision=prec)), y


def run_comp():
    """test_rope_comp's grid (positions rand() % 512), every case."""
    rng = np.random.default_rng(0)
    shapes = [((128, 32), 128, NORMAL), ((128, 40), 128, NORMAL), ((64, 71), 64, NEOX), ((80, 32), 20, NORMAL),
              ((80, 32), 32, NEOX), ((128, 12), 128, MROPE), ((128, 28), 32, MROPE), ((128, 12), 128, IMROPE),
              ((128, 28), 20, IMROPE), ((80, 16), 80, VISION), ((64, 128), 64, NEOX)]
    for fs, ef, af, dtype, use_ff in itertools.product([1.0, 1.4245], [0.0, 0.7465], [1.0, 1.4245],
                                                       [np.float32, np.float16], [False, True]):
        for (ne0, heads), n_dims, mode in shapes:
            seq = 2
            x = rng.uniform(-1, 1, (seq, heads, ne0)).astype(dtype)
            if mode == VISION:
                n_dims, sections = n_dims // 2, [n_dims // 4, n_dims // 4, 0, 0]
            elif mode in (MROPE, IMROPE):
                sections = [n_dims // 3] * 3 + [0]
            else:
                sections = None
            pos = rng.integers(0, 512, (4, seq) if sections else seq)
            ff = rng.uniform(0.9, 1.1, (ne0 if mode == VISION else n_dims) // 2).astype(F32) if use_ff else None
            check(x, pos, n_dims, mode, f"ggml mode={mode} {ne0}x{heads} n_dims={n_dims} fs={fs} ef={ef} af={af} "
                  f"{np.dtype(dtype)} ff={use_ff}", fs=fs, ef=ef, af=af, ff=ff, sections=sections)


def run_far():
    """The same kernel far out (NORMAL, NEOX, base 1e4 and 1e6; positions to 10^6): ggml's angle is p times
    theta_scale multiplied j times, so pair j's angle carries about j more roundings than base^(-2j/d) * p."""
    rng = np.random.default_rng(1)
    for mode, base, far in itertools.product([NORMAL, NEOX], [1e4, 1e6], [4096, 32768, 10**6]):
        x = rng.standard_normal((256, 4, 128)).astype(F32)
        pos = np.sort(rng.integers(0, far, 256))
        check(x, pos, 128, mode, f"ggml far mode={mode} base={base:g} positions<{far}", base=base)


def run_composition():
    """test-rope.cpp's main: r1 = rope(rope(x, 100 + i), 33 - 100) equals r2 = rope(x, 33 + i)."""
    rng = np.random.default_rng(2)
    x = rng.uniform(-1, 1, (73, 32, 256)).astype(F32)
    i = np.arange(73)
    for mode in (NORMAL, NEOX):
        r0 = ggml_rope(x, 100 + i, 128, mode)
        r1 = ggml_rope(r0, np.full(73, 33 - 100), 128, mode)
        pairing = "interleaved" if mode == NORMAL else "half"
        case(f"ggml composition r1 vs x at 33 + i mode={mode}", lambda: assert_rope_close(
            r1, x, (33 + i)[:, None], rotary_dim=128, pairing=pairing,
            precision=Precision(compute="float32")))         # two float32 rotations: does one's bound hold?
        case(f"ggml composition r1 vs r0 turned by -67 mode={mode}", lambda: assert_rope_close(
            r1, r0, np.full((73, 1), -67), rotary_dim=128, pairing=pairing))
    for mode in (MROPE, IMROPE, VISION):
        p0 = np.stack([100 + i + j for j in range(4)])
        sections = [16, 24, 24, 0]
        n_dims = 128
        x_m = x if mode != VISION else x[..., :256]
        check(x_m, p0, n_dims, mode, f"ggml multi mode={mode} (test-rope main, base 1e6)", base=1e6,
              sections=sections)


def run_plants():
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (64, 8, 128)).astype(F32)
    pos = rng.integers(0, 512, 64)
    kw = dict(config=rr.RopeConfig(None, 128, 128, "interleaved", 1e4, "default"))
    plant("ggml NEOX for NORMAL", lambda: assert_rope_close(ggml_rope(x, pos, 128, NEOX), x, pos[:, None], **kw),
          ("pairing",))
    plant("ggml positions + 1", lambda: assert_rope_close(ggml_rope(x, pos + 1, 128, NORMAL), x, pos[:, None], **kw),
          ("offset",))
    plant("ggml base 1e6 for 1e4", lambda: assert_rope_close(ggml_rope(x, pos, 128, NORMAL, base=1e6), x,
                                                             pos[:, None], **kw), ("base",))
    plant("ggml freq_scale 0.25 not applied", lambda: assert_rope_close(
        ggml_rope(x, pos, 128, NORMAL), x, pos[:, None], config=rr.RopeConfig(
            None, 128, 128, "interleaved", 1e4, "linear", params={"factor": 4.0})), ("scaling",))
    plant("ggml attn_factor 1.4245 not applied", lambda: assert_rope_close(
        ggml_rope(x, pos, 128, NORMAL), x, pos[:, None], config=rr.RopeConfig(
            None, 128, 128, "interleaved", 1e4, "default", attention_factor=1.4245)), ("attention factor",))
    secs = [16, 24, 24, 0]
    p4 = rng.integers(0, 512, (4, 64))
    F = expected_freqs(128, MROPE, 1e4, 1.0, 0.0, None, secs, 64)
    plant("ggml MROPE read as IMROPE", lambda: assert_rope_close(
        ggml_rope(x, p4, 128, IMROPE, sections=secs), x, p4[:, :, None], inv_freq=F, pairing="half"),
        ("axis", "section", "layout"))


if __name__ == "__main__":
    run_comp()
    run_far()
    run_composition()
    run_plants()
    summary("ggml")
