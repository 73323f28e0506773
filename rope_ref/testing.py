"""A kernel's RoPE output against the oracle's, with a tolerance derived from the kernel's arithmetic.

:func:`assert_rope_close` is the call a kernel test suite makes in place of its own torch reference and its
hand-picked ``atol``.  docs/kernel_suites.md derives the bound; for feature ``e`` of pair ``(a, b)`` at position
``m`` (exact angle phi = m * theta_j; ``u_*`` the unit roundoffs of the :class:`Precision` steps):

    |actual_e - exact_e| <= r * min(Delta, 2) + (|x_a| + |x_b|) * (2 u_angles + u_table + 4 u_compute + u_output)
                            + |x_e| * u_output  (the features that are not rotated: that term alone)

with ``r = |(x_a, x_b)|`` and ``Delta = (6 + 2j + |ln theta_j|) * u_angles * |phi|``; given ``angles=``, Delta =
u_angles * |phi|; given a ``cos``/``sin`` table, Delta = 0 and no table rounding.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from ._validate import (as_given, check_choice, check_d, check_finite_array, check_freqs, check_keywords,
                        check_no_overflow, check_pairing, check_positions, check_positive_int, check_real_array,
                        check_x)
from .forms import _arguments, _pairs, rotate, rotate_elementwise, rotation_angles, to_half
from .hf_config import RopeConfig, from_hf_config
from .kernel_check import DEFECTS, RopeMismatch, RopeSpec, expected_model, explain
from .kernel_check.assertions import _expectations
from .layouts import layout_positions, positions_of  # layout_positions: also re-exported (rr.testing.layout_positions)


@dataclass(frozen=True)
class Precision:
    """The float type of each step of a kernel: its angles (frequencies, positions and their product), its cos/sin
    table, its arithmetic ``x * cos + rotate_half(x) * sin`` and its output."""

    angles: str = "float32"
    table: str = "float32"
    compute: str = "float32"
    output: str = "float32"

    def roundoff(self, step: str) -> float:
        """The unit roundoff (half the machine epsilon) of ``step``'s type."""
        try:
            return float(ml_dtypes.finfo(getattr(self, step)).eps) / 2
        except (TypeError, ValueError):             # not a float type
            raise TypeError(f"Precision's {step} must name a float type, got {getattr(self, step)!r}") from None


#: ``precision="..."``: the table, the arithmetic and the output in the named type, the angles in float32 (in float64
#: for "float64"); "float32", float32 throughout, is the suites' references and most kernels.
PRECISIONS = {t: Precision("float64" if t == "float64" else "float32", t, t, t)
              for t in ("float64", "float32", "bfloat16", "float16")}


def _heads(a: np.ndarray, head_dim, name: str) -> np.ndarray:
    """``a`` ``(..., heads * head_dim)`` as ``(..., heads, head_dim)`` (vLLM's flattened heads)."""
    if a.shape[-1] % check_d(head_dim, "head_dim"):
        raise ValueError(f"head_dim must divide {name}.shape[-1]={a.shape[-1]}, got head_dim={head_dim}")
    return a.reshape(a.shape[:-1] + (a.shape[-1] // head_dim, head_dim))


def rotate_table(x, cos, sin, *, rows=None, pairing: str = "interleaved") -> np.ndarray:
    """Eq 34 with a given table: x * cos + rotate_half(x) * sin, as kernels fed a cos/sin cache compute it.

    ``cos``, ``sin``: ``(n, r/2)``, row p for position p (flash-attention, vLLM's cos_sin_cache halves); ``rows``:
    the row of each of x's positions, broadcastable to ``x.shape[:-1]`` (default: row i for position i along seq).
    The first r features of ``x`` ``(..., seq, d)`` rotate, the rest pass through; computed in float64, returned
    in x's dtype (a tensor for a tensor).
    """
    array = check_x(x)
    y = array.astype(np.float64)                                        # a copy, turned in place
    cos, sin = (check_finite_array(t, name) for t, name in ((cos, "cos"), (sin, "sin")))
    if cos.ndim != 2 or sin.shape != cos.shape or not 0 < cos.shape[1] <= y.shape[-1] // 2:
        raise ValueError(f"cos and sin must have one shape (n, r/2) with r <= d = {y.shape[-1]}, got shapes "
                         f"{cos.shape} and {sin.shape}")
    rows = check_positions(rows, y.shape[:-1], "rows")
    if np.any(rows % 1) or np.any(rows < 0) or np.any(rows >= len(cos)):
        raise ValueError(f"rows must be integers in [0, {len(cos)}) indexing the table, got {rows.ravel()[:8]}")
    a, b = _pairs(2 * cos.shape[-1], check_pairing(pairing))
    c, s = (t[rows.astype(np.int64)] for t in (cos, sin))
    y[..., a], y[..., b] = y[..., a] * c - y[..., b] * s, y[..., b] * c + y[..., a] * s    # x cos + rotate_half(x) sin
    return as_given(check_no_overflow(y.astype(array.dtype), array), x)


def _oracle(x, positions, rope: dict, config, precision, angles=None, cos=None, sin=None, rows=None) -> tuple:
    """(the exact float64 RoPE of ``x``, the bound on |kernel - it| derived from ``precision`` (module docstring),
    both of x's shape; for other pairs: the rounding relative to |x_a| + |x_b| and each row's angle term)."""
    table, factor = cos is not None or sin is not None, 1.0 if config is None else config.attention_factor
    if config is not None:
        seq_len = None if positions is None else int(np.max(check_finite_array(positions, "positions"), initial=0)) + 1
        rope = dict(pairing=config.pairing, rotary_dim=config.rotary_dim, inv_freq=config.inv_freq(seq_len)) | rope
    pairing = rope.get("pairing", "interleaved")
    if table:                           # budget: each angle's error in angle roundoffs; none for the shared table
        y, budget, r = rotate_table(x, cos, sin, rows=rows, pairing=pairing), 0.0, 2 * np.shape(cos)[-1]
    elif angles is not None:                        # the kernel rounds each given angle once
        y = rotate_elementwise(x, angles=angles, pairing=pairing)
        budget, r = np.abs(np.asarray(angles, np.float64)), 2 * np.shape(angles)[-1]
    else:
        y = rotate_elementwise(x, positions, **rope)
        positions, freqs, r = _arguments(positions, x.shape[-1], rope.get("base", 10000.0), pairing,
                                         rope.get("rotary_dim"), rope.get("inv_freq"), x.shape[:-1])
        magnitude = np.abs(freqs).reshape(r // 2, -1).max(axis=1)
        steps = 6.0 + 2 * np.arange(r // 2) + np.abs(np.log(np.where(magnitude > 0, magnitude, 1.0)))   # per pair j
        budget = steps * rotation_angles(np.abs(positions), np.abs(freqs))           # each term rounds
        y[..., :r] *= factor                                            # cos and sin scaled: the rotated part only
    ua, ut, uc, uo = (precision.roundoff(s) for s in ("angles", "table", "compute", "output"))
    rounding = (0.0 if table else 2 * ua + ut) + 4 * uc + uo
    a, b = _pairs(r, pairing)
    xa, xb = x[..., a], x[..., b]
    turn = np.atleast_1d(np.minimum(budget * ua, 2.0))             # each pair's angle error, at most 2
    pair = abs(factor) * (np.hypot(xa, xb) * turn + (np.abs(xa) + np.abs(xb)) * rounding)
    bound = np.abs(x) * uo + float(ml_dtypes.finfo(precision.output).smallest_normal)
    bound[..., a] += pair
    bound[..., b] += pair
    if config is not None and config.output_pairing == "half":             # pairs written half-split (DeepSeek's MLA)
        y[..., :r], bound[..., :r] = to_half(y[..., :r]), to_half(bound[..., :r])
    slack = np.sqrt(2) * abs(factor) * np.abs(x).max(-1, keepdims=True) * turn.max(-1, keepdims=True)  # >= r * turn
    return y, bound, (rounding, slack)


def assert_rope_close(actual, x, positions=None, *, precision="float32", angles=None, cos=None, sin=None, rows=None,
                      layout=None, cu_seqlens=None, seqlen_offsets=None, head_dim=None, **rope) -> None:
    """Raise AssertionError (a RopeMismatch: where, by how much, against which bound, and the known defects of the
    checker's catalogue that reproduce ``actual``, else that none does) if ``actual`` (a kernel's RoPE of ``x``) is
    farther from the oracle than the bound derived from ``precision`` allows, elementwise (a name of
    :data:`PRECISIONS` or a :class:`Precision`).

    The RoPE: the keywords of :func:`rope_ref.rotate` (``base``, ``pairing``, ``rotary_dim``, ``inv_freq``), or
    ``config=`` (a config.json path or dict, a transformers config object, a ``RopeConfig``), or ``angles``
    ``(..., seq, r/2)``, or a ``cos``/``sin`` table ``(n, r/2)`` with ``rows`` (see :func:`rotate_table`).
    Positions: ``positions`` as for ``rotate``, or ``layout`` ("bshd", "bhsd", "sbhd", "thd" with ``cu_seqlens``)
    and ``seqlen_offsets`` (:func:`layout_positions`).  ``head_dim``: x's last axis holds heads of this size one after
    another (vLLM's ``(tokens, heads * head_size)``; positions then index the axes before it).  ``actual`` and ``x``
    may be torch tensors.

    >>> import numpy as np, rope_ref as rr
    >>> x = np.random.default_rng(0).standard_normal((2, 16, 4, 8)).astype(np.float32)
    >>> p = rr.testing.layout_positions(x.shape, "bshd")
    >>> rr.testing.assert_rope_close(rr.rotate(x, p), x, layout="bshd")
    """
    if not isinstance(precision, Precision):
        precision = PRECISIONS[check_choice(precision, "precision", PRECISIONS, "a Precision or ")]
    check_keywords(rope, ("base", "pairing", "rotary_dim", "inv_freq", "config"), "assert_rope_close()")
    if rows is not None and cos is None and sin is None:
        raise TypeError("rows index a cos/sin table, got rows without cos and sin")
    if angles is not None or cos is not None or sin is not None:        # a table sets the angles (rows: positions)
        placed = dict(positions=positions, layout=layout, cu_seqlens=cu_seqlens, seqlen_offsets=seqlen_offsets)
        beside = dict(rope, **(dict(cos=cos, sin=sin) if angles is not None else {}),
                      **(placed if angles is not None or rows is not None else {}))
        beside = [k for k, v in beside.items() if k != "pairing" and v is not None]
        if beside:
            given = "angles" if angles is not None else "cos, sin and rows" if rows is not None else "cos and sin"
            raise TypeError(f"{given} set the angles, expected no {' or '.join(beside)} beside them")
    x64 = check_finite_array(check_x(x), "x")                     # float64; NaN or inf in x: refused
    got = check_real_array(actual, "actual").astype(np.float64)
    if got.shape != x64.shape:
        raise ValueError(f"actual must have x's shape {x64.shape}, got shape {got.shape}")
    if head_dim is not None:
        x64, got = (_heads(a, head_dim, "x") for a in (x64, got))
        if layout is None:                                             # default: arange(tokens)
            positions = np.asarray(check_positions(None, x64.shape[:-2]) if positions is None else positions)[..., None]
    if layout is not None or (angles is None and rows is None):        # a 4-D x without positions or layout: refused
        positions = positions_of(x64.shape, positions, layout, cu_seqlens=cu_seqlens, seqlen_offsets=seqlen_offsets)[0]
        positions = check_positions(None, x64.shape[:-1]) if positions is None else positions     # arange(seq)
    rows = positions if rows is None else rows
    config = rope.pop("config", None)
    config = config if config is None or isinstance(config, RopeConfig) else from_hf_config(config)
    exact, bound, unit = _oracle(x64, positions, rope, config, precision, angles, cos, sin, rows)
    err = np.abs(got - exact)
    bad = ~(err <= bound)                        # NaN in actual fails
    if not bad.any():
        return
    ratio = np.where(bad, np.nan_to_num(err / bound, nan=np.inf), -1.0)
    worst = np.unravel_index(np.argmax(ratio), err.shape)
    problems, defects = (_diagnosis(got, x64, positions, rope, config, bound, unit) if cos is None and angles is None
                         else (["the catalogue of known defects is not tried on a given cos/sin or angle table"], []))
    for name, given, cu, held in (("seqlen_offsets", seqlen_offsets, cu_seqlens, "each sequence's from 0"),
                                  ("cu_seqlens", cu_seqlens, [0, len(x64)], "0, 1, ... over all tokens, one sequence")):
        if given is None or defects not in ([], ["position offset"]) or cos is not None or angles is not None:
            continue
        alike = _oracle(x64, layout_positions(x64.shape, layout, cu_seqlens=cu), rope, config, precision)[0]
        if np.all(np.abs(got - alike) <= bound):
            problems, defects = [f"{name} ignored: the kernel's positions are {held}"], [f"{name} ignored"]
    raise RopeMismatch(
        f"{int(bad.sum())} of {bad.size} elements are farther from the oracle than the bound derived for {precision}; "
        f"worst at index {tuple(int(i) for i in worst)}: actual {got[worst]:.7g}, expected {exact[worst]:.7g}, "
        f"|difference| {err[worst]:.3g} > bound {bound[worst]:.3g} ({ratio[worst]:.3g} times)", problems, None, defects)


def _diagnosis(actual, x, positions, rope: dict, config: RopeConfig | None, bound, unit) -> tuple:
    """The known defects whose model y, computed by the oracle, is within ``bound`` of ``actual`` (a kernel's output
    of ``x`` ``(..., d)`` at ``positions``) everywhere, plus ``unit``'s terms for its pairs when the model pairs other
    features: (a line each, their names); else a line saying none is, and no name.  ``rope``: the keywords of rotate."""
    d, rope = x.shape[-1], {k: v for k, v in rope.items() if v is not None}         # rotary_dim=None: the default
    if config is not None and not config.axes and np.ndim(rope.get("inv_freq")) == 2:    # a 1-D config, A axes given
        rope = dict(pairing=config.pairing, rotary_dim=config.rotary_dim, norm_scale=config.attention_factor) | rope
    elif config is not None:
        given = dict(inv_freq=config.inv_freq(), offset=0) | rope if config.axes else rope     # multi-axis: its F
        rope = _expectations(d, config, None, given, None)[2]
    pos = np.asarray(positions, np.float64)
    model = expected_model(rope, RopeSpec(True, pairing="interleaved", rotary_dim=d, offset=0,
                                          rows=int(np.max(pos, initial=0)) + 1))    # else rotate's defaults
    (rounding, slack), rows = unit, int(np.prod(x.shape[:-1]))
    top = lambda p: max(np.abs(model.angles_at(p)).max(), 1e-300)      # noqa: E731 (the expected largest angle)
    everything = x, pos, actual, bound, np.broadcast_to(slack, x.shape[:-1] + (1,)), top(pos)
    if rows > 4096 and np.ndim(model.inv_freq) < 2:     # searched on 4096 rows, the defects found checked on all
        keep = np.linspace(0, rows - 1, 4096).astype(int)
        pos = np.broadcast_to(pos, x.shape[:-1]).reshape(rows)[keep]
        x, actual, bound, slack = (a.reshape(rows, -1)[keep] for a in everything[:1] + everything[2:5])
    def fits(m, x=x, pos=pos, actual=actual, bound=bound, slack=slack, top=top(pos)):   # pair terms on other pairs
        same = all(getattr(m, k) == getattr(model, k) for k in ("pairing", "rotary_dim", "rotary_start",
                                                                "output_pairing"))
        try:
            y = m.rotate(x, pos)
            grow = np.abs(m.angles_at(pos)).max() / top           # its angles' rounding against the expected's
        except (ValueError, TypeError, ZeroDivisionError):       # a model the oracle refuses reproduces nothing
            return False
        extra = slack * (max(grow, 1.0) if not same else max(grow - 1.0, 0.0))     # grows with its larger angles
        return bool(np.all(np.abs(actual - y) <= bound + (0.0 if same else rounding * (np.abs(x) + np.abs(y))) + extra))

    def reading(r=None):                              # one reading of the output, and the defects it gives
        spec = _measure_output(x, actual, pos, model, bound, r)
        f = explain(model, spec, DEFECTS, fits, 2)
        return spec, [f] if f and fits(f[2], *everything) else []

    with warnings.catch_warnings(action="ignore", category=RuntimeWarning):    # an all-zero x or row: 0/0, All-NaN
        seen, found = reading()
        if seen.rotary_start == model.rotary_start and (seen.rotary_dim or 0) < model.rotary_dim:
            # slow pairs under the bound: read as rotated; if the measured width fits nothing, the first that does
            between = () if found else range((seen.rotary_dim or 0) + 2, model.rotary_dim, 2)
            found += reading(model.rotary_dim)[1] + next(filter(None, (reading(r)[1] for r in between)), [])
    fewest = {tuple(f[1]): f for f in found if len(f[1]) == min(len(g[1]) for g in found)}
    if len(fewest) > 1:                                  # never a guess: the output cannot tell them apart
        return (["either of these explains it (the output cannot tell them apart):"]
                + [f"  {line}" for f in fewest.values() for line in f[0]], [n for names in fewest for n in names])
    return next(iter(fewest.values()))[:2] if fewest else (
        ["no known defect explains this (none of kernel_check.DEFECTS, alone or two together)"], [])


def _measure_output(x, y, positions, model, bound, r=None) -> RopeSpec:
    """What ``y``, a kernel's output of ``x``, shows for the catalogue's measured parameters: the features it moves
    by more than ``bound`` (or ``r`` from the first), the pairs that keep their norm (and where they are written);
    then, with the model's frequencies, the position each row turns as (from the slowest pair on), hence the
    offset and where a table ends, and the base from the best fitted pair's line."""
    spec = RopeSpec(is_rope=True)
    moved = np.flatnonzero(np.any(np.abs(y - x) > bound, axis=tuple(range(x.ndim - 1))))
    if moved.size < 2:
        return spec
    start = int(moved[0])
    r = r or min(int(moved[-1] - start + 2), x.shape[-1] - start) // 2 * 2
    tried = []
    for pairing, out in (("interleaved", None), ("half", None), ("interleaved", "half")):
        a, b = (start + i for i in _pairs(r, pairing))
        oa, ob = (start + i for i in _pairs(r, out)) if out else (a, b)
        ratio = np.hypot(y[..., oa], y[..., ob]) / np.hypot(x[..., a], x[..., b])      # 0/0: NaN (warning silenced)
        tried.append((float(np.nanmax(np.abs(ratio / np.nanmedian(ratio) - 1))), pairing, out, a, b, oa, ob))
    _, spec.pairing, spec.output_pairing, a, b, oa, ob = min(tried, key=lambda t: t[0])     # the steadiest norms
    angle = np.arctan2(x[..., a] * y[..., ob] - x[..., b] * y[..., oa], x[..., a] * y[..., oa] + x[..., b] * y[..., ob])
    spec.rotary_start, spec.rotary_dim = start, r
    theta = model.theta(model, int(np.max(positions, initial=0)) + 1)
    if theta.ndim != 1 or len(theta) != r // 2 or not np.all(theta > 0):
        return spec
    order = np.argsort(theta)
    pos = np.broadcast_to(positions, angle.shape[:-1])
    held = angle[..., order[0]] / theta[order[0]]
    for k in order[1:]:
        held = (angle[..., k] + 2 * np.pi * np.round((held * theta[k] - angle[..., k]) / (2 * np.pi))) / theta[k]
    near = np.abs(held * theta[order[0]]) < 3             # rows whose slowest angle has not wrapped
    if not near.any():
        return spec
    pos, held, angle = pos[near], held[near], angle[near]
    shifts, counts = np.unique(np.round(held - pos), return_counts=True)
    spec.offset = float(shifts[np.argmax(counts)])
    other = np.round(held - pos) != spec.offset
    gap = np.round(pos[other] + spec.offset - held[other])
    if other.any() and np.ptp(np.round(held[other])) == 0:
        spec.table_end = (float(np.round(held[other][0])), "clamped")
    elif other.any() and gap.min() > 0 and np.all(gap % gap.min() == 0):
        spec.table_end = (float(gap.min()) - 1, "repeated")
    lines = []
    for j in range(1, r // 2):                      # theta_j from pair j's line (any offset); the best measured one
        slow = np.abs(pos * theta[j]) < 1
        if slow.sum() > 8 and np.ptp(pos[slow]) > 0:            # a spread of 7 or more degrees of freedom
            (slope, _), resid = np.polyfit(pos[slow], angle[slow, j], 1, full=True)[:2]
            spread = np.sqrt(float(np.sum(resid)) / (slow.sum() - 2) / np.var(pos[slow]) / slow.sum()) / abs(slope)
            lines.append((np.nan_to_num(6 * spread * r / (2 * j), nan=np.inf), abs(slope) ** (-r / (2 * j))))
    if lines:
        tol, base = min(lines)
        spec.base = next((nice for k in range(1, 13) if abs((nice := float(f"{base:.{k}g}")) / base - 1)
                          <= tol + 1e-12), base)
    return spec


def rotate_qkv(qkv, positions=None, *, num_heads_q=None, head_dim=None, **rope):
    """Rotate the q and k heads of packed q, k, v and pass v through; a new array of qkv's shape.

    ``qkv``: ``(..., seq, 3, heads, d)`` (flash-attention's ``apply_rotary_emb_qkv_``), or with ``num_heads_q``
    ``(..., seq, heads_q + 2 * heads_kv, d)`` (grouped heads: q, then k, then v).  With ``head_dim`` the heads are
    flattened on the last axis, ``(..., tokens, heads * head_dim)`` as vLLM's q, k (every head rotates) or, with
    ``num_heads_q``, its packed qkv.  ``positions``: one per token, broadcastable to the token axes (default
    ``arange(seq)``); ``(A, ...)`` for a multi-axis ``inv_freq``.  ``rope``: ``base``, ``pairing``, ``rotary_dim``,
    ``inv_freq`` as for :func:`rope_ref.rotate`.
    """
    array = check_x(qkv, "qkv")
    check_keywords(rope, ("base", "pairing", "rotary_dim", "inv_freq"), "rotate_qkv()")      # positions, no layout
    x = array if head_dim is None else _heads(array, head_dim, "qkv")
    if head_dim is None and num_heads_q is None:
        if x.ndim < 4 or x.shape[-3] != 3:
            raise ValueError(f"qkv must have shape (..., seq, 3, heads, d) without num_heads_q or head_dim, got "
                             f"shape {x.shape}")
        num_heads_q, x = x.shape[-2], x.reshape(x.shape[:-3] + (3 * x.shape[-2], x.shape[-1]))  # q, k, v: one axis
    heads = x.shape[-2]
    num_heads_q = None if num_heads_q is None else check_positive_int(num_heads_q, "num_heads_q")
    if num_heads_q is not None and (num_heads_q > heads - 2 or (heads - num_heads_q) % 2):
        raise ValueError(f"num_heads_q must leave two equal groups of k and v heads of {heads}, got {num_heads_q}")
    if x.ndim < 3:
        raise ValueError(f"qkv must have a token axis before the heads, got shape {array.shape}")
    rotated = heads if num_heads_q is None else (heads + num_heads_q) // 2           # heads_q + heads_kv
    freqs = None if rope.get("inv_freq") is None else check_freqs(rope["inv_freq"], "inv_freq", axes=True)
    token_positions = check_positions(positions, x.shape[:-2], target="qkv's token axes",
                                      axes=freqs.shape[1] if freqs is not None and freqs.ndim == 2 else None)
    out = x.copy()
    out[..., :rotated, :] = rotate(x[..., :rotated, :], token_positions[..., None], **rope)
    return as_given(out.reshape(array.shape), qkv)
