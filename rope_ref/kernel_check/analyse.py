"""identify(fn, d): the calls and steps that turn what fn does into a :class:`RopeSpec` (docs/identify_internals.md)."""

from __future__ import annotations

import math

import numpy as np

from .._validate import check_base, check_number
from ..forms import frequencies, wrap_angle
from .angles import (angle_precision, fit_rows, freq_tol, locate, refit_absolute, rounded_positions, table_end,
                     uneven_steps)
from .axes_probe import MAX_POSITION, AxesSpec, identify_axes
from .naming import describe_frequencies, log_fit, method_frequencies
from .probe import Caller, Structure, check_probe_arguments, check_sizes, read_rotations
from .spec import RopeSpec, not_rope, show_number
from .tolerances import (DYNAMIC_MIN_OFFSET, MAX_BYTES, MAX_OFFSET, MAX_ROWS, NAME_RTOL, OFFSET_SIGMA, SIGMAS,
                         STATE_RTOL, TIMEOUT)

FLOAT32_UNIT = 2.0**-24


def identify(fn, d: int, *, axes: int | None = None, seq: int = 64, seed: int = 0, base_hint: float | None = None,
             max_rows: int | None = None, max_bytes: int = MAX_BYTES, max_position: int | None = None,
             axis_names=None, timeout: float | None = TIMEOUT) -> RopeSpec | AxesSpec:
    """Identify the RoPE variant that ``fn`` implements (eq 34): a :class:`RopeSpec`.

    ``fn(x) -> y``: x float64 ``(seq, d)``, row r at fn's own position offset + r; y any real array of that shape
    (numpy, torch, jax, a list), depending on x alone; d + 5 calls on ``seq`` rows, at most three on up to ``max_rows``
    (docs/checking_kernels.md).  ``base_hint``: the trained base (NTK, LongRoPE and dynamic NTK are solved from it).
    ``timeout``: seconds for all calls together.  With ``axes=A`` (M-RoPE, 2-D axial RoPE, RoPE-Mixed),
    ``fn(x, positions)`` gets int64 positions ``(A, seq)``: an :class:`AxesSpec` (:func:`~.axes_probe.identify_axes`).

    >>> import rope_ref as rr, numpy as np
    >>> freqs = rr.mrope_frequencies(16, [2, 3, 3])             # Qwen2-VL's layout: t, h, w blocks
    >>> spec = rr.identify(lambda x, p: rr.rotate(x, p, inv_freq=freqs, pairing="half"), 16, axes=3)
    >>> spec.sections, spec.mrope_layout, spec.pairing, spec.inv_freq.shape
    ((2, 3, 3), 'blocks', 'half', (8, 3))
    """
    if axes is not None:
        if base_hint is not None or max_rows is not None:
            raise TypeError("base_hint= and max_rows= are for 1-D probing (identify without axes=); with axes= "
                            "pass max_position= (the largest position fn accepts on any axis)")
        return identify_axes(fn, d, axes, seq=seq, seed=seed, max_bytes=max_bytes, axis_names=axis_names,
                             max_position=MAX_POSITION if max_position is None else max_position, timeout=timeout)
    if max_position is not None or axis_names is not None:
        raise TypeError("max_position= and axis_names= are for multi-axis probing: pass axes= (the number of "
                        "position axes fn reads) with them")
    return probe_one_axis(fn, d, seq=seq, seed=seed, base_hint=base_hint, max_rows=max_rows, max_bytes=max_bytes,
                          timeout=timeout)


def probe_one_axis(fn, d, *, seq=64, seed=0, base_hint=None, max_rows=None, max_bytes=MAX_BYTES, timeout=TIMEOUT,
                   name="fn", argument="x") -> RopeSpec:
    """identify(fn, d) of a 1-D kernel; ``name``, ``argument``: what errors call fn and its input (``vjp``, ``g``)."""
    d, seq, seed, timeout = check_probe_arguments(fn, d, seq, seed, timeout, 3, "(x of shape (seq, d) -> rotated x)",
                                                  "to measure frequencies")
    max_rows = check_number(MAX_ROWS if max_rows is None else max_rows, "max_rows",
                            f"an integer >= seq={seq} (the most rows fn accepts)", lambda rows: rows >= seq)
    base_hint = None if base_hint is None else check_base(base_hint, "base_hint")
    check_sizes(seq, d, max_bytes, max_rows)
    a, b = np.random.default_rng(seed).standard_normal((2, seq, d))
    call = Caller(fn, timeout=timeout, name=name, argument=argument)
    read = read_rotations(call, a, b, f"; identify passes a float64 NumPy array of shape (seq, d) = ({seq}, {d}): is "
                         f"d={d} the width fn rotates? wrap a kernel that takes (batch, heads, seq, d) torch tensors "
                         "as lambda x: kernel(torch.from_numpy(x)[None, None])[0, 0]")
    if isinstance(read, str):
        return not_rope(read)
    structure, ya, scale = read
    spec = _analyse(call, d, structure, base_hint, max_rows)
    if spec.is_rope and call.longest > seq:       # transformers' dynamic RoPE keeps the longest length seen
        state = np.abs(call(a, "random input a after the longer calls") - ya).max() / scale
        if state > STATE_RTOL:
            spec.stateful = True
            spec.notes.append(f"fn keeps state between calls: after the calls on more rows, the first call gives "
                              f"outputs {state:.2g} apart (relative); transformers' dynamic RoPE keeps the frequencies "
                              "of the longest sequence seen: pass a fresh rotary module per call. The frequencies at "
                              "other lengths above were measured in that state")
    return spec


def _analyse(call, d, structure: Structure, base_hint, max_rows) -> RopeSpec:
    """Steps 2-5 on the structure read from the first rows."""
    phase = np.unwrap(np.arctan2(structure.sin, structure.cos), axis=0)            # (seq, pairs), relative to row 0
    if np.abs(phase - phase[0]).max() <= 1e-9:
        return not_rope(f"every row is rotated alike (by up to {np.abs(phase[0]).max():.3g} rad): fn does not "
                        "advance the position with the row; identify needs row r at position offset + r "
                        "(does fn treat the first axis as a batch of tokens at one position? read a cos/sin table "
                        "beyond its end, its index clamped to the last row? hold positions in a 16-bit float type, "
                        "which rounds these consecutive ones to one?)")
    table = table_end(phase)
    if table and table[0] < 3:
        return not_rope(f"the angles advance over rows 0..{table[0] - 1} only: {_beyond(*table)}; identify needs "
                        "at least 3 rows inside the table")
    angles = _Angles(call, d, structure, phase, table)
    angles.refine(max_rows)
    steps = uneven_steps(angles.phase, angles.out_err) if angles.located.unit > FLOAT32_UNIT else None
    rounded = " or ".join(rounded_positions(angles.phase)) if steps == "one axis" else ""
    if rounded:
        angles.notes.append(f"the rows are not at evenly spaced positions: rows share positions, as positions offset "
                            f"+ r rounded to {rounded} do (every pair stands still at the same rows, the angles "
                            "exact). The kernel holds its positions in a 16-bit float type (position_ids.to(bfloat16)"
                            "?): keep them integers, or float32, until they multiply the frequencies. The offset and "
                            "frequencies above are not measured: identify measures them at consecutive positions")
    elif steps == "one axis":
        angles.notes.append("the rows are not at evenly spaced positions: the angles are exact, but every pair "
                            "stands still or jumps together at the same rows, as when positions are rounded to a "
                            "coarse float type (cast to bfloat16 or float16?) and several rows share a position")
    elif steps == "several axes":
        return not_rope("the angles are not linear in the row index: they are exact (to the kernel's rounding), but "
                        "each pair's angle advances by one step on most rows and jumps on others, as when fn reads its "
                        "rows as a flattened grid (2-D axial RoPE of a ViT) or gives them non-text M-RoPE positions. "
                        "This is not a 1-D RoPE: probe it along each axis with identify(fn, d, axes=A)",
                        multi_axis=True)
    spec, tau = angles.spec(max_rows)
    spec.rounded_positions = rounded or None
    if rounded:                         # the phase error measures the positions' rounding, not the angles'
        spec.angle_precision = "exact, at rounded positions"
        return spec
    describe_frequencies(spec, d, base_hint, tau, angles.located.unit)
    _check_dynamic(spec, angles, tau, base_hint, max_rows)
    return spec


class _Angles:
    """The measured angles of every pair (``phase``, rows x pairs) and the offset solved from them (``located``)."""

    def __init__(self, call, d, structure: Structure, phase, table=None):
        self.call, self.d, self.structure, self.table = call, d, structure, table   # table: (rows, table_end's kind)
        self.phase = phase if table is None else phase[:table[0]]
        self.seq = self.phase.shape[0]
        self.notes, self.drifted = list(structure.notes), False
        # cos/sin or the output rounded to 16 bits errs in angle and norm alike: tried first as float32 angles plus it
        self.out_err = 2 * structure.scale_error if structure.scale_error > 2.0**-16 else 0.0
        self.located = locate(self.phase, self.out_err)
        self.out_rounded = bool(self.out_err and self.located.unit <= FLOAT32_UNIT)
        self.bias_err = self.out_err if self.out_rounded else 0.0    # what the frequency tolerances allow for it

    def probe(self, rows, why):
        """Unwrapped angle of every pair at rows 0..rows-1, from one call with 1 on the first feature of each pair."""
        x = np.zeros((rows, self.d))
        x[:, [i for i, _ in self.structure.pairs]] = 1.0
        y = self.call(x, f"e_i on the first feature of every pair, {rows} rows, {why}", "; if fn accepts fewer rows "
                      "(a cos/sin cache read at an offset), pass max_rows= the most it accepts")
        return np.unwrap(np.arctan2(y[:, self.structure.out[1]], y[:, self.structure.out[0]]), axis=0)

    def _lengthen(self, rows, why) -> bool:
        """Measure over ``rows`` rows and solve again; False (with a note) when the first rows' angles moved."""
        long_phase = self.probe(rows, why)
        self.table = table_end(long_phase)
        long_phase = long_phase[:self.table[0] if self.table else None]
        drift = np.abs(wrap_angle(long_phase[:self.seq] - self.phase[:self.seq])).max()
        if drift > SIGMAS * self.located.fit.noise.max() + 1e-12:
            self.notes.append(f"the angles at rows 0..{self.seq - 1} change by {drift:.2g} rad when fn is given "
                              f"{rows} rows: its frequencies depend on the sequence length (dynamic scaling?)")
            self.drifted = True
            return False
        self.phase, self.located = long_phase, locate(long_phase, self.out_err)
        return True

    def refine(self, max_rows):
        """More rows (two calls at most) pin the offset unless angles are coarser than float32; slow pairs: one more."""
        rows = self.seq
        while ((self.located.sigma > OFFSET_SIGMA or self.located.status != "ok") and rows < max_rows and not self.table
               and self.located.unit <= FLOAT32_UNIT):
            want = self.seq * (self.located.sigma / OFFSET_SIGMA) ** (2 / 3)      # sigma falls as rows^-3/2
            rows = (max_rows if rows > self.seq or self.located.status != "ok" or not math.isfinite(want)
                    else int(min(max_rows, 2 ** math.ceil(math.log2(max(want, 2 * self.seq))))))
            if not self._lengthen(rows, "to refine the offset"):
                return
        located = self.located
        if (located.status == "ok" and self.phase.shape[0] < max_rows and located.unit <= FLOAT32_UNIT
                and not self.table):
            fit = refit_absolute(self.phase, located.offset, located.fit)
            if freq_tol(fit, located.unit, self.bias_err, located.offset).max() > NAME_RTOL:
                self._lengthen(max_rows, "to measure the slowest pairs' frequencies")

    def spec(self, max_rows):
        """Steps 3-4: the offset, the frequencies against (offset + row) * theta: (spec, relative tolerance of each)."""
        located, rows, structure = self.located, self.phase.shape[0], self.structure
        if located.status == "ambiguous":
            also = ", ".join([f"{o:.0f}" for o in located.also[:3]] + ["..."] * (len(located.also) > 3))
            why = (f"one rotated pair fixes the offset only modulo its wavelength 2 pi / theta = "
                   f"{2 * np.pi / abs(located.fit.theta[0]):.4g} positions" if len(structure.pairs) == 1
                   else "the frequencies' ratios nearly repeat there")
            self.notes.append(f"the offset is ambiguous: {len(located.also) + 1} offsets within +-{MAX_OFFSET} fit "
                              f"the angles within their noise (reported the smallest; also {also}): {why}")
        elif located.status == "inconsistent":
            self.notes.append("the angles of different pairs do not agree on one offset (best compromise reported)")
        if located.sigma > OFFSET_SIGMA:
            more = rows >= max_rows and located.unit <= FLOAT32_UNIT
            self.notes.append(f"the offset is not resolved to an integer from the {rows} rows measured (standard "
                              f"deviation {located.sigma:.2g} positions)" + ("; pass a larger max_rows if fn accepts "
                                                                         "more rows" if more else ""))
        nearest = float(round(located.offset))
        if located.sigma <= OFFSET_SIGMA and abs(located.offset - nearest) <= max(SIGMAS * located.sigma, 1e-9):
            located.offset = nearest
        if self.table:
            end = self.table[0]
            self.notes.append(f"the cos/sin table stops at position {_position(located.offset + end - 1)} (row "
                              f"{end - 1} here): {_beyond(end, self.table[1], located.offset)}; identify measured "
                              f"rows 0..{end - 1} only. Size the table for the longest position, the cache offset "
                              "plus the new tokens minus one (notebook 06, checklist item 2)")
        anchor = located.offset if located.status == "ok" else None
        fit = located.fit if anchor is None else refit_absolute(self.phase, anchor, located.fit)
        precision, unit = angle_precision(fit.resid, np.abs(np.outer(located.offset + np.arange(rows), fit.theta)))
        if self.out_rounded:
            self.notes.append(f"the angle errors (up to {np.abs(fit.resid).max():.2g} rad) come with norm errors (up "
                              f"to {structure.scale_error:.2g}): float32 angles, with cos/sin or the output rounded to "
                              "a 16-bit type (cos.to(x.dtype)?); frequencies are compared to the precision that leaves")
            precision, unit = "float32 (cos/sin 16-bit)", FLOAT32_UNIT
        located.unit = unit
        tau = freq_tol(fit, unit, self.bias_err, anchor)
        shared = ("pairing", "pairs", "rotary_dim", "rotary_start", "output_pairing", "output_pairs", "norm_scale",
                "scale_error")
        return RopeSpec(is_rope=True, **{name: getattr(structure, name) for name in shared}, inv_freq=fit.theta,
                        offset=located.offset, offset_resolution=float(located.sigma), angle_precision=precision,
                        phase_error=float(np.abs(fit.resid).max()), output_rounded=self.out_rounded, rows=int(rows),
                        offset_alternatives=np.asarray(located.also if located.status == "ambiguous" else [], float),
                        notes=self.notes,
                        table_end=self.table and (located.offset + self.table[0] - 1, self.table[1])), tau


def _position(position):
    """A position for display: an integer when it is one, else rounded, with a tilde."""
    return show_number(position) if position == round(position) else f"~{position:.0f}"


def _beyond(rows, kind, offset=None):
    """What the rows past a cos/sin table's end get (table_end's kind), in words."""
    if kind == "clamped":
        return (f"rows from {rows} on repeat row {rows - 1} exactly, as an index clamped to the table does "
                "(mode=\"clip\", a clamping gather)")
    length = "" if offset is None else f" {_position(offset + rows)}"
    return (f"row {rows} is rotated by 0 again and the rows after it start over from position 0, as an index "
            f"modulo the table length{length} does (a wrapped or repeated table)")


def _check_dynamic(spec, angles: _Angles, tau, base_hint, max_rows):
    """Static base or dynamic NTK, measured again at lengths L = offset + rows: past L_train, dynamic NTK's base grows
    as g^(r/(r-2)), g = 1 + factor (L - L_train) / L_train a line in L that two lengths past L_train solve."""
    r, kind, resolved, unit = spec.rotary_dim, spec.rope_type, spec.offset == round(spec.offset), angles.located.unit
    if angles.table or not (kind == "ntk" or (kind == "default" and spec.offset >= DYNAMIC_MIN_OFFSET)):
        return
    rows1 = max_rows if max_rows > spec.rows else spec.rows // 2
    if not resolved and angles.drifted and kind == "ntk":
        spec.rope_type, spec.closest = "custom", "ntk"
        spec.notes.append("not static NTK: the frequencies depend on the sequence length, and dynamic NTK "
                          "cannot be solved for while the offset is not resolved")
    elif (not resolved or rows1 < 3) and kind == "ntk":
        spec.notes.append(f"not checked at another sequence length ({'max_rows' if resolved else 'offset not resolved'}"
                          "): dynamic NTK at one length is the same base change")
    if not resolved or rows1 < 3:
        return

    def measure(rows):          # (L, |theta|, tau), as for the first rows
        phase = angles.probe(rows, "to see if the frequencies depend on the sequence length")
        fit = refit_absolute(phase, spec.offset, fit_rows(phase, unit, spec.offset))
        return int(spec.offset) + rows, np.abs(fit.theta), freq_tol(fit, unit, angles.bias_err, spec.offset)

    seen = [(int(spec.offset) + spec.rows, np.abs(spec.inv_freq), tau), measure(rows1)]
    (L0, theta, _), (L1, theta1, tau1) = seen
    if np.all(np.abs(theta1 / theta - 1) <= tau + tau1):
        if kind == "ntk":
            spec.notes.append(f"static NTK: the same base at sequence lengths {L0} and {L1} (offset + rows)")
        return
    base_at = lambda th: log_fit(th, r, intercept=False)[0]  # noqa: E731
    spec.notes.append(f"the frequencies depend on the sequence length L = offset + rows: base {base_at(theta):.7g} "
                      f"at L = {L0}, {base_at(theta1):.7g} at L = {L1}")
    if base_hint is None:
        spec.rope_type, spec.closest = "custom", kind
        spec.notes.append("dynamic NTK? its factor and max_position_embeddings can be solved for only from the "
                          "trained base: pass base_hint")
        return
    rows2 = (spec.rows + rows1) // 2
    if rows2 not in (spec.rows, rows1) and rows2 >= 3:      # a third length checks that g is a line in L
        seen.append(measure(rows2))
    default = frequencies(r, base_hint)
    far = sorted(x for x in seen if not np.all(np.abs(default / x[1] - 1) <= x[2]))   # lengths past L_train
    params = _solve_dynamic(far, r, base_hint, base_at) if len(far) >= 2 else None
    fits = lambda p: p is not None and _dynamic_error(p, seen, r) <= 1  # noqa: E731
    if fits(params):
        digits = max(1, int(-math.log10(float(tau.max()))))
        rounded = dict(params, factor=float(f"{params['factor']:.{digits}g}"))
        params = rounded if fits(rounded) else params
        spec.rope_type, spec.closest, spec.rope_params, spec.base = "dynamic", None, params, base_hint
        spec.fit_error = _dynamic_error(params, seen[:1], r, relative=True)
        T = params["max_position_embeddings"]
        if any(fits(_solve_dynamic(far, r, base_hint, base_at, T + dt)) for dt in (-1, 1)):
            spec.notes.append(f"max_position_embeddings is not resolved to one integer from lengths "
                              f"{[x[0] for x in seen]} (a larger max_rows would)")
        return
    if kind == "default" and len(far) < 2:
        spec.notes.append("dynamic NTK past a training length? one length past it is not enough to solve for "
                          f"its factor and max_position_embeddings; at L = {L0} the frequencies are the default ones")
        return
    spec.rope_type, spec.closest = "custom", "dynamic" if params else kind
    if params:
        spec.rope_params, spec.fit_error = params, _dynamic_error(params, seen, r, relative=True)
    spec.notes.append("no dynamic NTK factor and max_position_embeddings reproduce the frequencies at every "
                      "length measured")


def _solve_dynamic(far, r, base_hint, base_at, T=None):
    """factor and max_position_embeddings T from g at lengths past T: g - 1 = factor (L - T) / T."""
    L = np.array([x[0] for x in far], float)
    g = np.array([(base_at(x[1]) / base_hint) ** ((r - 2) / r) for x in far])
    slope = (g[-1] - g[0]) / (L[-1] - L[0])
    if T is None:
        T = int(round(L[0] - (g[0] - 1) / slope)) if slope > 0 else 0      # 0: no T fits
    if T < 1 or np.any(L <= T):
        return None
    factor = T * float((g - 1) @ (L - T) / ((L - T) @ (L - T)))
    return dict(base=base_hint, factor=factor, max_position_embeddings=T) if factor > 0 else None


def _dynamic_error(params, seen, r, relative=False):
    """Largest |theta_dynamic / theta_measured - 1| over the lengths seen, in units of tau (or relative)."""
    worst = 0.0
    for L, theta, tau in seen:
        freqs = method_frequencies("dynamic", params, r, seq_len=L)[0]
        if freqs is None:
            return math.inf
        rel = np.abs(freqs / theta - 1)
        worst = max(worst, float(rel.max() if relative else (rel / tau).max()))
    return worst
