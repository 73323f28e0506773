"""identify(fn, d): the calls, and the steps that turn what fn does into a :class:`RopeSpec`.

1. structure (:mod:`.structure`): which features pair up, the norm scale;
2. angles (:mod:`.angles`): each pair's angle at each row, their noise and float type;
3. offset (:mod:`.offset`): solved from the angles modulo 2 pi per pair, with more rows fetched
   when the noise leaves it unresolved;
4. frequencies: refitted against the absolute angle (offset + row) * theta_p;
5. naming (:mod:`.naming`, :mod:`.dynamic`): the simplest scaling method that matches.
"""

from __future__ import annotations

import numpy as np

from .. import _validate as val
from ..forms import wrap_angle
from .angles import angle_precision, freq_tol, refit_absolute, theta_at, uneven_steps
from .axes_probe import identify_axes
from .axes_spec import MAX_POSITION, AxesSpec
from .dynamic import check_dynamic
from .naming import describe_frequencies, describe_proportional
from .offset import locate, rows_needed
from .probe import call, check_seed, check_sizes, probe_phase
from .spec import RopeSpec, not_rope
from .structure import Structure, read_structure
from .tolerances import (DYNAMIC_MIN_OFFSET, MAX_BYTES, MAX_OFFSET, MAX_ROWS, NAME_RTOL, OFFSET_SIGMA, SIGMAS,
                         STATE_RTOL, STRUCTURE_RTOL, ZERO_RTOL)

FLOAT32_UNIT = 2.0**-24


def identify(fn, d: int, *, axes: int | None = None, seq: int = 64, seed: int = 0, base_hint: float | None = None,
             max_rows: int | None = None, max_bytes: int = MAX_BYTES, max_position: int | None = None,
             axis_names=None) -> RopeSpec | AxesSpec:
    """Identify the RoPE variant that ``fn`` implements.

    ``fn(x) -> y``: x float64 of shape ``(seq, d)``, row r at the function's own
    position for row r; y any real array of that shape (numpy, torch of any dtype or
    device, jax, a list).  ``base_hint`` (optional): the base the model was trained
    with, so a changed base is reported as NTK scaling and LongRoPE factors can be
    separated from the base.  Calls ``fn`` d + 5 times on ``seq`` rows (the first input twice:
    ``fn`` must depend on x alone, else ValueError), and up to twice on
    more rows (never more than ``max_rows``, e.g. the size of a kernel's cos/sin cache) when
    the angle noise leaves the offset unresolved; if it stays unresolved, the spec says so
    (a note, and ``offset_resolution``).  Once more on ``max_rows`` rows when the slowest pairs
    turn too little over the rows measured to tell the scaling methods apart.  A kernel that looks
    like ``ntk`` (or ``default`` with rows from DYNAMIC_MIN_OFFSET on) is measured at one or two
    other lengths: if its base changes with the length offset + rows it is ``dynamic`` (solved given
    ``base_hint``) or ``"custom"``.
    After calls on more rows the first call is repeated: a changed output sets ``stateful``.
    ``max_bytes``: the largest array identify may hold (seq x d x d float64 for the row matrices,
    max_rows x d for one call); larger ``seq``/``max_rows`` are a ValueError before any call.
    ``max_rows`` defaults to MAX_ROWS.  Returns a :class:`RopeSpec`.

    **Multi-axis kernels** (M-RoPE of Qwen2-VL / Qwen3-VL, 2-D axial RoPE of ViTs, RoPE-Mixed): with
    ``axes=A``, ``fn(x, positions) -> y`` is called with x float64 ``(seq, d)`` and positions int64 ``(A, seq)``
    that identify chooses (row r at positions[:, r]: transformers' M-RoPE position ids without the batch
    axis; each axis moved alone up to ``max_position``, default 4096, then mixed), and the result is an
    :class:`AxesSpec`: ``inv_freq`` of shape ``(rotary_dim/2, A)`` (pair j turns by
    ``sum_a inv_freq[j, a] * p_a``, signed), ``pairing``, ``rotary_dim``, ``rotary_start``, ``form``
    ("1-D", "M-RoPE", "axial" or "mixed"), and where each pair turns with one axis ``sections`` (pairs per
    axis, in axis order) and for M-RoPE ``mrope_layout`` ("blocks": Qwen2-VL's contiguous sections;
    "interleaved": Qwen3-VL's ``mrope_interleaved``).  ``axis_names`` label the axes in its reports
    (default t/h/w for 3 axes, h/w for 2).  ``base_hint`` and ``max_rows`` are 1-D probing's (TypeError with
    ``axes``); ``max_position`` and ``axis_names`` are multi-axis probing's.  See
    :func:`~rope_ref.identify.axes_probe.identify_axes`.

    >>> import rope_ref as rr, numpy as np
    >>> F = rr.mrope_frequencies(16, [2, 3, 3])                 # Qwen2-VL's layout: t, h, w blocks
    >>> spec = rr.identify(lambda x, p: rr.rotate(x, p, inv_freq=F, pairing="half"), 16, axes=3)
    >>> spec.sections, spec.mrope_layout, spec.pairing, spec.inv_freq.shape
    ((2, 3, 3), 'blocks', 'half', (8, 3))
    """
    if axes is not None:
        if base_hint is not None or max_rows is not None:
            raise TypeError("base_hint= and max_rows= are for 1-D probing (identify without axes=); with axes= "
                            "pass max_position= (the largest position fn accepts on any axis)")
        return identify_axes(fn, d, axes, seq=seq, seed=seed, max_bytes=max_bytes, axis_names=axis_names,
                             max_position=MAX_POSITION if max_position is None else max_position)
    if max_position is not None or axis_names is not None:
        raise TypeError("max_position= and axis_names= are for multi-axis probing: pass axes= (the number of "
                        "position axes fn reads) with them")
    max_rows = MAX_ROWS if max_rows is None else max_rows
    if not callable(fn):
        raise TypeError(f"fn must be callable (x of shape (seq, d) -> rotated x), got {fn!r} of type "
                        f"{type(fn).__name__}")
    seq, max_rows, base_hint = _check_arguments(fn, d, seq, seed, base_hint, max_rows)
    d = val.check_d(d)
    check_sizes(seq, d, max_bytes, max_rows)
    a, b = np.random.default_rng(seed).standard_normal((2, seq, d))
    read = _read_matrices(fn, a, b)
    if isinstance(read, RopeSpec):
        return read
    M, ya, scale = read
    longest = [seq]

    def counted(x):
        longest[0] = max(longest[0], len(x))
        return fn(x)
    spec = _analyse(counted, M, base_hint, max_rows)
    if spec.is_rope and longest[0] > seq:       # transformers' dynamic RoPE keeps the longest length seen
        state = np.abs(call(fn, a, "random input a after the longer calls") - ya).max() / scale
        if state > STATE_RTOL:
            spec.stateful = True
            spec.notes.append(f"fn keeps state between calls: after the calls on more rows, the first call gives "
                              f"outputs {state:.2g} apart (relative); transformers' dynamic RoPE keeps the frequencies "
                              "of the longest sequence seen: pass a fresh rotary module per call. The frequencies at "
                              "other lengths above were measured in that state")
    return spec


def _check_arguments(fn, d, seq, seed, base_hint, max_rows):
    if not callable(fn):
        raise TypeError(f"fn must be callable (x of shape (seq, d) -> rotated x), got {fn!r} of type "
                        f"{type(fn).__name__}")
    val.check_d(d)
    seq = val.check_positive_int(seq, "seq")
    if seq < 3:
        raise ValueError(f"seq must be >= 3 to measure frequencies, got {seq}")
    max_rows = val.check_positive_int(max_rows, "max_rows")
    if max_rows < seq:
        raise ValueError(f"max_rows (the most rows fn accepts) must be >= seq={seq}, got {max_rows}")
    if base_hint is not None:
        base_hint = val.check_base(base_hint, "base_hint")
    check_seed(seed)
    return seq, max_rows, base_hint


def _read_matrices(fn, a, b):
    """The d x d matrix fn applies to each row, M (seq, d, d), after checking that fn is a function of x
    alone, maps 0 to 0, is linear and keeps rows apart: (M, fn(a), output scale), or a RopeSpec saying which
    of those fails.  d + 5 calls."""
    seq, d = a.shape
    first = (f"; identify passes a float64 NumPy array of shape (seq, d) = ({seq}, {d}): is d={d} the width fn "
             "rotates? wrap a kernel that takes (batch, heads, seq, d) torch tensors as "
             "lambda x: kernel(torch.from_numpy(x)[None, None])[0, 0]")
    ya, yb = call(fn, a, "random input a", first), call(fn, b, "random input b")
    scale = max(np.abs(ya).max(), np.abs(yb).max(), 1e-300)
    state = np.abs(call(fn, a, "random input a again") - ya).max() / scale
    if state > STATE_RTOL:
        raise ValueError(f"fn must depend on x alone: two calls with the same x gave outputs {state:.2g} apart "
                         "(relative): fn keeps state between calls (a cache position advanced by every call?); "
                         "pass a function that applies the same positions on every call")
    # A linear kernel maps 0 to exactly 0 in any float type: a bias or an added position embedding does not.
    bias = np.abs(call(fn, np.zeros((seq, d)), "zeros")).max() / scale
    if bias > ZERO_RTOL:
        return not_rope(f"fn(0) is not 0 (up to {bias:.2g} relative to its output): fn adds something that does "
                        "not depend on x (an absolute position embedding? a bias?); a rotary embedding is linear "
                        "in its input")
    # Rounding in the kernel's float type is relative to the terms: |f(2a - 3b)| + 2 |f(a)| + 3 |f(b)|.
    y_lin = call(fn, 2 * a - 3 * b, "2a - 3b")
    terms = np.abs(y_lin) + 2 * np.abs(ya) + 3 * np.abs(yb)
    lin = np.abs(y_lin - (2 * ya - 3 * yb)).max() / max(terms.max(), 1e-300)
    if lin > STRUCTURE_RTOL:
        return not_rope(f"fn is not linear: f(2a - 3b) differs from 2 f(a) - 3 f(b) by {lin:.2g} "
                        "(relative to the terms); a rotary embedding is linear in its input")
    # M[r] is the d x d matrix applied to row r: column j is the response to e_j.
    M = np.stack([call(fn, np.broadcast_to(e, (seq, d)), f"basis vector e_{j} in every row")
                  for j, e in enumerate(np.eye(d))], axis=-1)
    mix = np.abs(np.einsum("rij,rj->ri", M, a) - ya).max() / scale
    if mix > STRUCTURE_RTOL:
        return not_rope(f"row r of the output depends on other rows (error {mix:.2g} relative): "
                        "fn mixes positions or depends on content")
    return M, ya, scale


def _analyse(fn, M, base_hint, max_rows) -> RopeSpec:
    """Steps 1-5 on the matrices M fn applies to the first rows."""
    st = read_structure(M)
    if isinstance(st, str):
        return not_rope(st)
    phase = np.unwrap(np.arctan2(st.sin, st.cos), axis=0)            # (seq, pairs), relative to row 0
    if np.abs(phase - phase[0]).max() <= 1e-9:
        return not_rope(f"every row is rotated alike (by up to {np.abs(phase[0]).max():.3g} rad): fn does not "
                        "advance the position with the row; identify needs row r at position offset + r "
                        "(does fn treat the first axis as a batch of tokens at one position?)")
    angles = _Angles(fn, M.shape[-1], st, phase)
    angles.refine(max_rows)
    steps = uneven_steps(angles.phase) if angles.loc.unit > FLOAT32_UNIT else None
    if steps == "one axis":
        angles.notes.append("the rows are not at evenly spaced positions: the angles are exact, but every pair "
                            "stands still or jumps together at the same rows, as when positions are rounded to a "
                            "coarse float type (cast to bfloat16 or float16?) and several rows share a position")
    elif steps == "several axes":
        return not_rope("the angles are not linear in the row index: they are exact, but each pair's angle "
                        "advances by one step on most rows and jumps on others, as when fn reads its rows as a "
                        "flattened grid (2-D axial RoPE of a ViT) or gives them non-text M-RoPE positions. This is "
                        "not a 1-D RoPE: probe it along each axis with identify(fn, d, axes=A)", multi_axis=True)
    angles.note_offset(max_rows)
    spec, tau = angles.spec(st)
    if not describe_proportional(spec, M.shape[-1], tau):
        describe_frequencies(spec, base_hint, tau, angles.loc.unit)
    if spec.rope_type == "ntk" or (spec.rope_type == "default" and spec.offset >= DYNAMIC_MIN_OFFSET):
        _check_length_dependence(spec, angles, tau, base_hint, max_rows)
    return spec


def _check_length_dependence(spec, angles, tau, base_hint, max_rows):
    """Static base or dynamic NTK, when the offset allows measuring again at another length."""
    if spec.offset == round(spec.offset):
        def measure(n):
            return theta_at(angles.probe(n, "to see if the frequencies depend on the sequence length"),
                            spec.offset, angles.loc.unit, angles.bias_err)
        check_dynamic(spec, measure, np.abs(spec.inv_freq), tau, base_hint, max_rows)
    elif angles.drifted and spec.rope_type == "ntk":
        spec.rope_type, spec.closest = "custom", "ntk"
        spec.notes.append("not static NTK: the frequencies depend on the sequence length, and dynamic NTK "
                          "cannot be solved for while the offset is not resolved")
    elif spec.rope_type == "ntk":
        spec.notes.append("not checked at another sequence length (offset not resolved): dynamic NTK at one "
                          "length is the same base change")


class _Angles:
    """The measured angles of every pair (``phase``, rows x pairs) and the offset solved from them
    (``loc``), lengthened by further calls on more rows where that pins them down."""

    def __init__(self, fn, d, st: Structure, phase):
        self.fn, self.d, self.st, self.phase = fn, d, st, phase
        self.seq = phase.shape[0]
        self.notes = list(st.notes)
        self.drifted = False
        # Rounding cos/sin or the output to a 16-bit type (cos.to(x.dtype) in a bfloat16 model) errs in the
        # angle and the norm alike, by up to about the norm's error at every position; rounding the angles
        # themselves leaves the norm exact.  Such angles are first tried as float32 ones plus that error.
        self.out_err = 2 * st.scale_error if st.scale_error > 2.0**-16 else 0.0
        self.loc = locate(phase, self.out_err)
        self.out_rounded = bool(self.out_err and self.loc.unit <= FLOAT32_UNIT)
        self.bias_err = self.out_err if self.out_rounded else 0.0    # what the frequency tolerances allow for it

    def probe(self, rows, why):
        return probe_phase(self.fn, self.d, self.st.first_features, self.st.out, rows, why)

    def _lengthen(self, rows, why) -> bool:
        """Measure over ``rows`` rows and solve again; False (with a note) when the first rows' angles moved."""
        long_phase = self.probe(rows, why)
        drift = np.abs(wrap_angle(long_phase[:self.seq] - self.phase[:self.seq])).max()
        if drift > SIGMAS * self.loc.fit.noise.max() + 1e-12:
            self.notes.append(f"the angles at rows 0..{self.seq - 1} change by {drift:.2g} rad when fn is given "
                              f"{rows} rows: its frequencies depend on the sequence length (dynamic scaling?)")
            self.drifted = True
            return False
        self.phase = long_phase
        self.loc = locate(long_phase, self.out_err)
        return True

    def refine(self, max_rows):
        """More rows pin the offset down (at most two more calls), unless the angles are coarser than
        float32: then their errors grow with the position faster than more rows help.  Pairs that turn
        too little over the rows measured (a large base; llama3's divided low frequencies) leave their
        frequencies too uncertain to tell the methods apart, which differ exactly there: one more call
        on max_rows rows lengthens the lever."""
        rows = self.seq
        while ((self.loc.sigma > OFFSET_SIGMA or self.loc.status != "ok") and rows < max_rows
               and self.loc.unit <= FLOAT32_UNIT):
            rows = (max_rows if rows > self.seq or self.loc.status != "ok"
                    else rows_needed(self.seq, self.loc.sigma, max_rows))
            if not self._lengthen(rows, "to refine the offset"):
                return
        loc = self.loc
        if loc.status == "ok" and self.phase.shape[0] < max_rows and loc.unit <= FLOAT32_UNIT:
            fit = refit_absolute(self.phase, loc.offset, loc.fit)
            lever = loc.offset + np.arange(self.phase.shape[0])
            if freq_tol(fit.theta, fit.sigma_theta, loc.unit, self.bias_err, lever).max() > NAME_RTOL:
                self._lengthen(max_rows, "to measure the slowest pairs' frequencies")

    def note_offset(self, max_rows):
        """Notes on an ambiguous, inconsistent or unresolved offset; an integer offset when resolved."""
        loc, rows = self.loc, self.phase.shape[0]
        if loc.status == "ambiguous":
            also = ", ".join(f"{o:.0f}" for o in loc.fit.also[:3])
            why = (f"one rotated pair fixes the offset only modulo its wavelength 2 pi / theta = "
                   f"{2 * np.pi / abs(loc.fit.theta[0]):.4g} positions" if len(self.st.pairs) == 1
                   else "the frequencies' ratios nearly repeat there")
            self.notes.append(f"the offset is ambiguous: {len(loc.fit.also) + 1} offsets within +-{MAX_OFFSET} fit "
                              f"the angles within their noise (reported the smallest; also {also}"
                              f"{', ...' if len(loc.fit.also) > 3 else ''}): {why}")
        elif loc.status == "inconsistent":
            self.notes.append("the angles of different pairs do not agree on one offset (best compromise reported)")
        if loc.sigma > OFFSET_SIGMA:
            more = rows >= max_rows and loc.unit <= FLOAT32_UNIT
            self.notes.append(f"the offset is not resolved to an integer from the {rows} rows measured (standard "
                              f"deviation {loc.sigma:.2g} positions)" + ("; pass a larger max_rows if fn accepts "
                                                                         "more rows" if more else ""))
        if loc.sigma <= OFFSET_SIGMA and abs(loc.offset - round(loc.offset)) <= max(SIGMAS * loc.sigma, 1e-9):
            loc.offset = float(round(loc.offset))

    def spec(self, st: Structure):
        """Step 4: frequencies against the absolute angle (offset + row) * theta; the spec and the
        relative tolerance of each frequency."""
        loc, rows = self.loc, self.phase.shape[0]
        if loc.status == "ok":
            fit = refit_absolute(self.phase, loc.offset, loc.fit)
            lever = loc.offset + np.arange(rows)
        else:
            fit = loc.fit
            lever = np.arange(rows) - (rows - 1) / 2
        angle = np.abs(np.outer(loc.offset + np.arange(rows), fit.theta))
        precision, unit = angle_precision(fit.resid, angle)
        if self.out_rounded:
            self.notes.append(f"the angle errors (up to {np.abs(fit.resid).max():.2g} rad) come with norm errors (up "
                              f"to {st.scale_error:.2g}): float32 angles, with cos/sin or the output rounded to a "
                              "16-bit type (cos.to(x.dtype)?); frequencies are compared to the precision that leaves")
            precision, unit = "float32 (cos/sin 16-bit)", FLOAT32_UNIT
        loc.unit = unit
        tau = freq_tol(fit.theta, fit.sigma_theta, unit, self.bias_err, lever)
        spec = RopeSpec(is_rope=True, pairing=st.pairing, pairs=st.pairs, rotary_dim=st.rotary_dim,
                        rotary_start=st.rotary_start, output_pairing=st.output_pairing, output_pairs=st.output_pairs,
                        inv_freq=fit.theta, offset=loc.offset, offset_resolution=float(loc.sigma),
                        norm_scale=st.norm_scale, angle_precision=precision,
                        phase_error=float(np.abs(fit.resid).max()), scale_error=st.scale_error,
                        output_rounded=self.out_rounded,
                        offset_alternatives=np.asarray(loc.fit.also if loc.status == "ambiguous" else [], float),
                        rows=int(rows), notes=self.notes)
        return spec, tau
