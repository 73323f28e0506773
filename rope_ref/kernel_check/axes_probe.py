"""Black-box identification of a multi-axis RoPE kernel: which pairs turn with which position axis, how fast.

A multi-axis rotary embedding is a frequency matrix ``F`` of shape ``(rotary_dim/2, A)``: at positions
``p = (p_0, ..., p_{A-1})`` pair j is rotated (eq 34 of RoFormer, arXiv:2104.09864, one 2x2 block per pair)
by the angle ``sum_a F[j, a] * p_a``.  1-D RoPE is A = 1; M-RoPE (Qwen2-VL, Qwen2.5-VL, Qwen3-VL;
``mrope_section`` in transformers) drives each pair by exactly one of the t, h, w axes with one shared
spectrum theta_j; a 2-D axial ViT RoPE (timm, Heo et al. 2024, arXiv:2403.13298) gives each axis its own
spectrum; RoPE-Mixed (learned) is a dense F.

``identify_axes(fn, d, axes)`` calls ``fn(x, positions)`` with ``x`` float64 of shape ``(seq, d)`` and
``positions`` int64 of shape ``(axes, seq)`` that it chooses (row r at positions[:, r], transformers' layout
for M-RoPE position ids without the batch axis) and measures F:

1. structure (:mod:`.probe`, :mod:`.structure`, as for 1-D kernels): the d x d linear map of every row (one
   call per basis vector): which features pair up (pairing, rotary_dim), the norm scale, and that every block
   is a rotation;
2. angles (:mod:`.axes_angles`): the base row sits at position 0 on every axis; each axis is then moved
   alone, by 1, 2, ... (angles unwrapped from step to step) and then on geometrically to ``max_position``
   (each far angle's whole turns predicted from the fit so far), and a straight line through 0 fitted per
   pair and axis;
3. linearity (:mod:`.axes_angles`): the residuals of those lines, and rows at random combinations of all axes
   (predicted by ``sum_a F[j, a] p_a``), must stay within the rounding of the kernel's float type, else the
   spec says "not a rotation linear in positions";
4. naming (:mod:`.axes_spec`): which axis drives each pair, ``sections`` (pairs per axis) and, for M-RoPE,
   the layout: ``"blocks"`` (each axis one contiguous run, in axis order: Qwen2-VL) or ``"interleaved"``
   (Qwen3-VL's ``mrope_interleaved``).

``assert_axes_match(fn, d, axes, ...)`` and ``compare_axes`` (:mod:`.axes_compare`) name every difference
from what you expect (a wrong section split, layout, pairing, sign or frequency) in one AssertionError.

Positions are integers, so frequencies are measured modulo 2 pi: |F[j, a]| must stay below pi (every
published RoPE has |theta| <= 1 per position).
"""

from __future__ import annotations

import numpy as np

from .. import _validate as val
from .axes_angles import measure
from .axes_spec import DEFAULT_AXIS_NAMES, MAX_AXES, MAX_POSITION, AxesSpec, not_axes_rope
from .probe import Caller, check_probe_arguments, check_sizes, read_matrices
from .structure import read_structure
from .tolerances import MAX_BYTES

_FN_SHAPES = ("identify_axes calls fn(x, positions): x float64 of shape (seq, d), positions int64 of shape "
              "(axes, seq), row r at positions[:, r]; wrap a kernel taking torch (batch, heads, seq, d) and "
              "position ids (axes, batch, seq) as lambda x, p: kernel(torch.from_numpy(x)[None, None], "
              "torch.from_numpy(p)[:, None])[0, 0]")


# ---- the probe's positions ------------------------------------------------------------------------

def min_rows(axes: int) -> int:
    """Fewest rows ``seq`` identify_axes needs for ``axes`` axes: the base row, 3 steps per axis, 2 mixed rows."""
    return 1 + 3 * axes + 2


def _design(axes, seq, max_position, rng):
    """Positions (axes, seq) int64 and where each part of the design sits.

    Row 0: every axis at 0.  Per axis a, rows with axis a alone at 1, 2, ..., L (consecutive: angles unwrap
    from step to step) then geometrically on to max_position (a long lever for the slow pairs).  The rest:
    every axis at a random position in 0..min(max_position, 63), to check that the axes' angles add up.
    """
    n_mix = max(2, min(8, seq // 8))
    per_axis = (seq - 1 - n_mix) // axes
    linear = min(max(3, per_axis // 2), max_position)
    far = np.unique(np.round(np.geomspace(2 * linear, max_position, max(per_axis - linear, 1))).astype(np.int64))
    far = far[(far > linear) & (far <= max_position)][:per_axis - linear] if max_position > linear else far[:0]
    steps = np.concatenate([np.arange(1, linear + 1), far]).astype(np.int64)
    positions = np.zeros((axes, seq), np.int64)
    sweeps = []
    row = 1
    for a in range(axes):
        rows = np.arange(row, row + len(steps))
        positions[a, rows] = steps
        sweeps.append(rows)
        row += len(steps)
    mixed = np.arange(row, seq)
    positions[:, mixed] = rng.integers(0, min(max_position, 63) + 1, size=(axes, len(mixed)))
    return positions, steps, linear, sweeps, mixed


# ---- checks ------------------------------------------------------------------------------------

def _check_names(axis_names, axes):
    if axis_names is None:
        return DEFAULT_AXIS_NAMES.get(axes, tuple(f"axis{a}" for a in range(axes)))
    if isinstance(axis_names, str) or not all(isinstance(n, str) and n for n in axis_names):
        raise TypeError(f"axis_names must be a sequence of {axes} non-empty strings (e.g. ('t', 'h', 'w')), got "
                        f"{axis_names!r}")
    names = tuple(axis_names)
    if len(names) != axes or len(set(names)) != axes:
        raise ValueError(f"axis_names must hold {axes} distinct names, one per axis, got {names!r}")
    return names


def _check_inputs(fn, d, axes, seq, seed, max_position, max_bytes):
    axes = val.check_positive_int(axes, "axes")
    if axes > MAX_AXES:
        raise ValueError(f"axes must be at most {MAX_AXES} (the position axes fn reads: 3 for M-RoPE, 2 for a "
                         f"2-D grid), got {axes}")
    d, seq, seed = check_probe_arguments(fn, d, seq, seed, min_rows(axes), "as fn(x, positions) -> rotated x",
                                         f"rows for {axes} axes (the base row, 3 steps per axis, 2 rows mixing "
                                         "the axes)")
    check_sizes(seq, d, max_bytes)
    max_position = val.check_positive_int(max_position, "max_position")
    if max_position < 3:
        raise ValueError(f"max_position must be >= 3 (positions 1, 2, 3 on each axis), got {max_position}")
    return d, axes, seq, seed, max_position


# ---- the probe ---------------------------------------------------------------------------------

def identify_axes(fn, d: int, axes: int, *, seq: int = 64, seed: int = 0, max_position: int = MAX_POSITION,
                  axis_names=None, max_bytes: int = MAX_BYTES) -> AxesSpec:
    """Measure the frequency matrix ``F`` (rotary_dim/2, axes) of a multi-axis RoPE kernel.

    ``fn(x, positions) -> y``: ``x`` float64 of shape ``(seq, d)``, ``positions`` int64 of shape
    ``(axes, seq)`` (row r at positions[:, r]: transformers' M-RoPE position ids without the batch axis);
    ``y`` any real array of x's shape (numpy, torch of any dtype or device, jax, a list), row r rotated as at
    positions[:, r].  fn must depend on x and positions alone.  Calls fn d + 5 times, always with the same
    positions: at 0 on every axis; each axis alone at 1, 2, ... and geometrically up to ``max_position``
    (pass the largest position fn accepts, e.g. its cos/sin cache length - 1); random combinations of all axes.
    ``axis_names``: for the reports (default t/h/w for 3 axes, h/w for 2).  ``max_bytes``: the largest array
    it may hold (seq x d x d float64 for the row matrices), as for :func:`rope_ref.identify`.
    ``rope_ref.identify(fn, d, axes=A)`` calls this.

    Returns an :class:`AxesSpec`: ``inv_freq`` (pair j turns by ``sum_a inv_freq[j, a] * p_a``, eq 34 per
    pair), pairing, rotary_dim, ``sections`` and ``mrope_layout`` for M-RoPE.  ``is_rope`` is False, with the
    reason, when fn is not a rotation of pairs of features or its angles are not linear in the positions.

    >>> import numpy as np
    >>> theta = 10000.0 ** (-np.arange(0, 8, 2) / 8)                        # 4 pairs, half pairing
    >>> F = np.zeros((4, 2)); F[:2, 0] = theta[:2]; F[2:, 1] = theta[2:]    # pairs 0-1 turn with h, 2-3 with w
    >>> def kernel(x, p):
    ...     ang = p.T @ F.T
    ...     c, s, x1, x2 = np.cos(ang), np.sin(ang), x[:, :4], x[:, 4:]
    ...     return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=1)
    >>> spec = identify_axes(kernel, 8, 2)
    >>> spec.form, spec.pairing, spec.sections, spec.mrope_layout, bool(np.allclose(spec.inv_freq, F))
    ('M-RoPE', 'half', (2, 2), 'blocks', True)
    """
    d, axes, seq, seed, max_position = _check_inputs(fn, d, axes, seq, seed, max_position, max_bytes)
    names = _check_names(axis_names, axes)
    rng = np.random.default_rng(seed)
    positions, steps, linear, sweeps, mixed = _design(axes, seq, max_position, rng)
    call = Caller(fn, positions)
    done = dict(axes=axes, axis_names=names, positions=positions)
    a, b = rng.standard_normal((2, seq, d))
    read = read_matrices(call, a, b, "; " + _FN_SHAPES + f"; is d={d} the width fn rotates?")
    done["calls"] = call.calls
    if isinstance(read, str):
        return not_axes_rope(read, **done)
    structure = read_structure(read[0])
    if isinstance(structure, str):
        return not_axes_rope(structure, **done)
    if structure.output_pairing is not None:
        return not_axes_rope("the rotated pairs are written to other features (output feature "
                             f"{structure.output_pairs[0][0]} holds pair {structure.pairs[0]}): identify_axes follows "
                             "pairs written back in place only", **done)
    spec = AxesSpec(is_rope=True, pairing=structure.pairing, pairs=structure.pairs, rotary_dim=structure.rotary_dim,
                    rotary_start=structure.rotary_start, norm_scale=structure.norm_scale,
                    scale_error=structure.scale_error, notes=structure.notes, **done)
    return measure(spec, structure.cos, structure.sin, steps, linear, sweeps, mixed, call)
