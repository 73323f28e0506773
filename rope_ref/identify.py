"""Black-box identification of a RoPE implementation: which pairing, base, offset, scaling.

``identify(fn, d)`` feeds ``fn`` float64 inputs of shape ``(seq, d)`` (the function
applies its own positions, row r at position offset + r) and reads back, row by row,
the linear map it applies.  A rotary embedding maps each row by a block rotation on
pairs of features, with angles linear in the row index; everything else follows
from measuring those blocks.  ``assert_rope_matches(fn, d, **expected)`` turns the
differences from what you expect into one readable AssertionError.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import _validate as val
from .core import frequencies, wrap_angle
from .scaling import scaled_inv_freq

#: Relative tolerance for structure (linearity, pair blocks): loose enough for float32/bfloat16 kernels.
STRUCTURE_RTOL = 2e-2
#: Relative tolerance when matching frequencies against a scaling method (float32 kernels reach ~1e-7).
FREQ_RTOL = 1e-5

_TRAIN_LENGTHS = (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)


@dataclass
class RopeSpec:
    """What :func:`identify` found.  ``is_rope`` False means the other fields are not meaningful."""

    is_rope: bool
    reason: str = ""
    pairing: str | None = None          # "interleaved", "half" or "other"
    pairs: list = field(default_factory=list)
    rotary_dim: int | None = None
    inv_freq: np.ndarray | None = None  # signed per-pair angular frequency, pair p in pairing order
    base: float | None = None           # from theta_0 / theta_1 = base^(2/rotary_dim)
    offset: float | None = None         # position of row 0
    norm_scale: float | None = None     # |output| / |input| on the rotated features
    rope_type: str | None = None
    rope_params: dict = field(default_factory=dict)
    phase_error: float = 0.0            # max |measured angle - (offset + row) * theta|, radians
    scale_error: float = 0.0            # max relative spread of the per-pair scale over rows
    notes: list = field(default_factory=list)

    def __str__(self) -> str:
        if not self.is_rope:
            return f"not a rotary embedding: {self.reason}"
        lines = [f"pairing={self.pairing} rotary_dim={self.rotary_dim} base={self.base:.6g} "
                 f"offset={self.offset:.6g} norm_scale={self.norm_scale:.6g}",
                 f"rope_type={self.rope_type} {_short(self.rope_params)}",
                 f"phase_error={self.phase_error:.2e} rad, scale_error={self.scale_error:.2e}"]
        return "\n".join(lines + [f"note: {n}" for n in self.notes])


def _short(params: dict) -> str:
    """Parameters for display: floats to 6 digits, long lists summarized."""
    def fmt(v):
        if isinstance(v, float):
            return f"{v:.6g}"
        if isinstance(v, list):
            return f"[{len(v)} values, {min(v):.4g}..{max(v):.4g}]"
        return repr(v)
    return "{" + ", ".join(f"{k}: {fmt(v)}" for k, v in params.items()) + "}"


def _call(fn, x):
    out = np.asarray(fn(x.copy()))
    if out.shape != x.shape:
        raise ValueError(f"fn must map an array of shape {x.shape} to the same shape, got {out.shape}")
    if out.dtype.kind not in "fiu" and out.dtype not in val.FLOAT_DTYPES:
        raise TypeError(f"fn must return a real array, got dtype {out.dtype}")
    return out.astype(np.float64)


def _not_rope(reason):
    return RopeSpec(is_rope=False, reason=reason)


def identify(fn, d: int, *, seq: int = 64, seed: int = 0, base_hint: float | None = None) -> RopeSpec:
    """Identify the RoPE variant that ``fn`` implements.

    ``fn(x) -> y``: x float64 of shape ``(seq, d)``, row r at the function's own
    position for row r.  ``base_hint`` (optional): the base the model was trained
    with, so a changed base can be reported as NTK scaling.
    Calls ``fn`` d + 3 times.  Returns a :class:`RopeSpec`.
    """
    d = val.check_d(d)
    seq = val.check_positive_int(seq, "seq")
    if seq < 3:
        raise ValueError(f"seq must be >= 3 to measure frequencies, got {seq}")
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((2, seq, d))
    ya, yb = _call(fn, a), _call(fn, b)
    scale = max(np.abs(ya).max(), np.abs(yb).max(), 1e-300)
    lin = np.abs(_call(fn, 2 * a - 3 * b) - (2 * ya - 3 * yb)).max() / scale
    if not np.all(np.isfinite(ya)) or lin > STRUCTURE_RTOL:
        return _not_rope(f"fn is not linear: f(2a - 3b) differs from 2 f(a) - 3 f(b) by {lin:.2g} "
                         "(relative); a rotary embedding is linear in its input")
    # M[r] is the d x d matrix applied to row r: column j is the response to e_j.
    M = np.stack([_call(fn, np.broadcast_to(e, (seq, d))) for e in np.eye(d)], axis=-1)
    mix = np.abs(np.einsum("rij,rj->ri", M, a) - ya).max() / scale
    if mix > STRUCTURE_RTOL:
        return _not_rope(f"row r of the output depends on other rows (error {mix:.2g} relative): "
                         "fn mixes positions or depends on content")
    return _analyse(M, base_hint)


def _find_pairs(M):
    """Partner of each feature from where the off-diagonal entries are non-zero."""
    d = M.shape[-1]
    off = np.abs(M).max(axis=0) * (1 - np.eye(d))
    tol = 1e-12 * max(np.abs(M).max(), 1e-300)  # structural zeros are exact, even in float16 kernels
    pairs, passthrough = [], []
    for j in range(d):
        partners = np.flatnonzero((off[:, j] > tol) | (off[j, :] > tol))
        if len(partners) == 0:
            passthrough.append(j)
        elif len(partners) > 1:
            return None, None, f"feature {j} mixes with features {partners.tolist()[:6]}: not pairwise rotations"
        elif j < partners[0]:
            pairs.append((j, int(partners[0])))
    partnered = {i for p in pairs for i in p}
    lonely = [j for j in range(d) if j not in partnered and j not in passthrough]
    if lonely:
        return None, None, f"features {lonely[:6]} mix one-way with others: not pairwise rotations"
    return pairs, passthrough, ""


def _order_pairs(pairs, r):
    if pairs == [(2 * p, 2 * p + 1) for p in range(r // 2)]:
        return "interleaved", pairs
    if sorted(pairs) == [(p, p + r // 2) for p in range(r // 2)]:
        return "half", sorted(pairs)
    return "other", sorted(pairs)


def _analyse(M, base_hint):
    seq = M.shape[0]
    pairs, passthrough, why = _find_pairs(M)
    if pairs is None:
        return _not_rope(why)
    pt_diag = M[:, passthrough, passthrough] if passthrough else np.ones(1)
    if np.abs(pt_diag - 1).max() > STRUCTURE_RTOL:
        return _not_rope(f"features {passthrough[:6]} are scaled, not rotated or passed through")
    if not pairs:
        return _not_rope("no pair of features is rotated: fn leaves every feature in place")
    notes = []
    r = 2 * len(pairs)
    if sorted(i for p in pairs for i in p) != list(range(r)):
        notes.append(f"the rotated features are not the leading {r}: passthrough features {passthrough[:8]}")
    pairing, pairs = _order_pairs(pairs, r)
    ia, ib = np.array(pairs).T
    c1, c2 = M[:, ia, ia], M[:, ib, ib]
    s1, s2 = M[:, ib, ia], -M[:, ia, ib]
    big = np.abs(M).max()
    if max(np.abs(c1 - c2).max(), np.abs(s1 - s2).max()) > STRUCTURE_RTOL * big:
        return _not_rope("a pair's 2x2 block is not a (scaled) rotation [[c, -s], [s, c]] "
                         f"(pair {pairs[int(np.argmax(np.abs(c1 - c2).max(0) + np.abs(s1 - s2).max(0)))]})")
    c, s = (c1 + c2) / 2, (s1 + s2) / 2
    scales = np.hypot(c, s)                                # (seq, pairs)
    norm_scale = float(np.median(scales))
    scale_error = float(np.abs(scales / norm_scale - 1).max())
    if scale_error > STRUCTURE_RTOL:
        return _not_rope(f"the norm of a pair changes with position by up to {scale_error:.1%}")
    phase = np.unwrap(np.arctan2(s, c), axis=0)            # (seq, pairs)
    rows = np.arange(seq, dtype=float)
    theta, intercept = np.polyfit(rows, phase, 1)          # per pair
    offset = _solve_offset(theta, intercept)
    predicted = np.outer(rows + offset, theta)
    phase_error = float(np.abs(wrap_angle(phase - predicted)).max())
    spec = RopeSpec(is_rope=True, pairing=pairing, pairs=pairs, rotary_dim=r, inv_freq=theta,
                    offset=offset, norm_scale=norm_scale, phase_error=phase_error,
                    scale_error=scale_error, notes=notes)
    _describe_frequencies(spec, base_hint)
    return spec


def _solve_offset(theta, intercept):
    """Offset o with o * theta_p = intercept_p (mod 2 pi), refined from slow to fast pairs."""
    order = np.argsort(np.abs(theta))
    order = [p for p in order if abs(theta[p]) > 1e-12]
    if not order:
        return 0.0
    p0 = order[0]
    o = math.remainder(intercept[p0], 2 * math.pi) / theta[p0]
    for p in order[1:]:
        k = round((o * theta[p] - intercept[p]) / (2 * math.pi))
        o = (intercept[p] + 2 * math.pi * k) / theta[p]
    return float(round(o)) if abs(o - round(o)) < 1e-9 else float(o)


def _describe_frequencies(spec, base_hint):
    theta = np.abs(spec.inv_freq)
    r = spec.rotary_dim
    if np.all(spec.inv_freq < 0):
        spec.notes.append("every pair rotates clockwise (negative frequencies): the sign of sin is flipped")
    elif np.any(spec.inv_freq < 0):
        spec.notes.append("some pairs rotate clockwise: the sign of sin is flipped for them")
    if len(theta) < 2:
        spec.base = float("nan")
        spec.rope_type, spec.rope_params = "default", {}
        return
    spec.base = float((theta[0] / theta[1]) ** (r / 2))
    if spec.phase_error > 1e-4:
        spec.notes.append(f"measured angles deviate from (offset + row) * theta by up to {spec.phase_error:.2g} rad: "
                          "angles computed in low precision (float16/bfloat16)?")
    if abs(theta[0] - spec.base ** (-2 / r)) < 1e-6 and abs(theta[0] - 1) > 1e-6:
        spec.notes.append(f"theta_0 = {theta[0]:.6g} = base^(-2/d): frequencies look indexed from 1 "
                          "(eq 15's 10000^(-2(i-1)/d) with i starting at 0)")
    if abs(spec.offset - round(spec.offset)) < 1e-6 and round(spec.offset) != 0:
        spec.notes.append(f"row 0 is rotated as position {round(spec.offset)}")
    if spec.phase_error > 1e-3:
        spec.notes.append("frequencies are too noisy to name a scaling method")
        return
    spec.rope_type, spec.rope_params = _best_rope_type(theta, r, spec.base, spec.norm_scale, base_hint)


def _candidates(theta, r, base, norm_scale, base_hint):
    """(rope_type, params) configurations worth comparing, simplest first."""
    if base_hint is not None and not math.isclose(base, base_hint, rel_tol=1e-9) and r > 2:
        yield "ntk", dict(base=base_hint, factor=float((base / base_hint) ** ((r - 2) / r)))
    yield "default", dict(base=base)
    factor = float(1 / theta[0])
    if abs(factor - 1) > 1e-9:
        yield "linear", dict(base=base, factor=factor)
    ratio = theta / frequencies(r, base)
    f_max = float(1 / ratio.min())
    if f_max > 1 + 1e-9:
        for L in _TRAIN_LENGTHS:
            for low, high in [(1.0, 4.0), (1.0, 2.0), (1.0, 8.0), (2.0, 8.0)]:
                yield "llama3", dict(base=base, factor=f_max, low_freq_factor=low, high_freq_factor=high,
                                     original_max_position_embeddings=L)
            for fast, slow in [(32.0, 1.0), (16.0, 1.0), (32.0, 2.0), (16.0, 2.0)]:
                yield "yarn", dict(base=base, factor=f_max, original_max_position_embeddings=L,
                                   beta_fast=fast, beta_slow=slow, attention_factor=norm_scale)


def _best_rope_type(theta, r, base, norm_scale, base_hint):
    best = (np.inf, None, {})
    for rope_type, params in _candidates(theta, r, base, norm_scale, base_hint):
        kw = {k: v for k, v in params.items() if k != "base"}
        try:
            freqs, _ = scaled_inv_freq(r, params["base"], rope_type=rope_type, **kw)
        except (ValueError, TypeError):
            continue
        err = float(np.abs(freqs / theta - 1).max())
        if err < FREQ_RTOL:
            return rope_type, params
        if err < best[0]:
            best = (err, rope_type, params)
    # No structured method fits: per-pair factors relative to the default, as LongRoPE allows.
    return "longrope", dict(base=base, ext_factors=(frequencies(r, base) / theta).tolist())


# ---- assertions -----------------------------------------------------------------------------

_SPEC_KEYS = ("pairing", "rotary_dim", "offset", "base", "norm_scale", "rope_type", "inv_freq")


def assert_rope_matches(fn, d: int, *, seq: int = 64, phase_atol: float = 1e-5, **expected) -> RopeSpec:
    """Raise AssertionError naming every property in which ``fn`` differs from ``expected``.

    ``expected`` may hold ``pairing``, ``rotary_dim``, ``offset``, ``base``, ``norm_scale``,
    ``rope_type``, ``inv_freq`` and the parameters of ``rope_type`` (``factor``,
    ``original_max_position_embeddings``, ...).  Frequencies expected from
    base/rope_type/params are compared pair by pair; angles must be linear in the
    position to ``phase_atol`` radians.  Returns the :class:`RopeSpec` when all match.
    """
    spec = identify(fn, d, seq=seq, base_hint=expected.get("base"))
    if not spec.is_rope:
        raise AssertionError(f"not a rotary embedding: {spec.reason}")
    problems = []
    if "pairing" in expected and expected["pairing"] != spec.pairing:
        shown = ", ".join(str(p) for p in spec.pairs[:3])
        problems.append(f"pairing: expected {expected['pairing']}, found {spec.pairing}; pairs {shown}…")
    if "rotary_dim" in expected and expected["rotary_dim"] != spec.rotary_dim:
        problems.append(f"rotary_dim: expected {expected['rotary_dim']}, found {spec.rotary_dim}")
    if "offset" in expected and abs(expected["offset"] - spec.offset) > 1e-6:
        problems.append(f"offset: expected row 0 at position {expected['offset']}, found {spec.offset:.6g}"
                        " (positions off by one?)" * (abs(abs(expected["offset"] - spec.offset) - 1) < 1e-6))
    want_freqs, want_scale = _expected_frequencies(expected, spec)
    if want_freqs is not None:
        problems += _compare_frequencies(want_freqs, spec)
    if "norm_scale" in expected:
        want_scale = expected["norm_scale"]
    if want_scale is not None and not math.isclose(want_scale, spec.norm_scale, rel_tol=1e-5):
        problems.append(f"norm_scale: expected {want_scale:.6g}, found {spec.norm_scale:.6g}")
    if "rope_type" in expected and want_freqs is None and expected["rope_type"] != spec.rope_type:
        problems.append(f"rope_type: expected {expected['rope_type']}, found {spec.rope_type} {_short(spec.rope_params)}")
    if spec.phase_error > phase_atol:
        problems.append(f"angle precision: angles deviate from (offset + row) * theta by up to "
                        f"{spec.phase_error:.2g} rad (> {phase_atol:g}); compute angles in float32 or better")
    if problems:
        raise AssertionError("RoPE mismatch:\n  " + "\n  ".join(problems) + f"\nidentified: {spec}")
    return spec


def _expected_frequencies(expected, spec):
    if "inv_freq" in expected:
        return np.asarray(expected["inv_freq"], float), None
    params = {k: v for k, v in expected.items() if k not in _SPEC_KEYS}
    if "base" not in expected and "rope_type" not in expected and not params:
        return None, None
    r = expected.get("rotary_dim", spec.rotary_dim)
    freqs, att = scaled_inv_freq(r, expected.get("base", 10000.0),
                                 rope_type=expected.get("rope_type", "default"), **params)
    return freqs, att


def _compare_frequencies(want, spec):
    found = spec.inv_freq
    if want.shape != found.shape:
        return [f"frequencies: expected {want.size} pairs, found {found.size}"]
    rel = np.abs(found / want - 1)
    bad = np.flatnonzero(rel > FREQ_RTOL)
    if bad.size == 0:
        return []
    msg = "frequencies: " + "; ".join(f"pair {p} expected {want[p]:.6g}, found {found[p]:.6g}" for p in bad[:3])
    if np.allclose(found, -want, rtol=FREQ_RTOL):
        msg += " (every sign flipped: rotation is clockwise)"
    elif len(want) > 1 and np.allclose(found, want * (want[1] / want[0]), rtol=FREQ_RTOL):
        msg += " (found theta_i = expected theta_{i+1}: indexed from 1?)"
    return [msg + f"; {bad.size} of {want.size} pairs differ; found base {spec.base:.6g}, "
            f"rope_type {spec.rope_type} {_short(spec.rope_params)}"]
