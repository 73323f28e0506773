"""The boundary every form of RoPE runs inside: :func:`checked`, and the tables of checks it reads (each argument
by its name, :data:`ARGUMENTS`; the size of what a form allocates, :data:`RESULT_SIZES`; docs/architecture.md)."""

from __future__ import annotations

import functools
import inspect

import numpy as np

from ._validate import (ANGLE_LIMIT, ANGLE_TOL, check_base, check_d, check_finite_array, check_freqs,
                        check_no_overflow, check_nbytes, check_pairing, check_positions, check_positive_int,
                        check_real_array, check_rotary_dim, check_scalar, check_x, suggest_keywords,
                        warn_precision)


def checked(fn=None, *, freqs_from=None, fast: bool = False):
    """Decorator: ``fn``'s arguments checked and normalised by name (:data:`ARGUMENTS`) before its body runs.

    ``freqs_from(r, base)`` (:func:`rope_ref.frequencies`) gives the frequencies when ``inv_freq`` is None.  With
    ``x`` in the signature the body gets a float64 copy of ``x[..., :rotary_dim]`` and returns its rotation, cast
    back and written to ``out`` here; ``fast=True`` hands the body x (integers promoted) and ``out`` as they are.
    """
    if fn is None:
        return functools.partial(checked, freqs_from=freqs_from, fast=fast)
    signature = inspect.signature(fn)

    @suggest_keywords
    @functools.wraps(fn)
    def boundary(*args, **kwargs):
        given = signature.bind(*args, **kwargs)
        given.apply_defaults()
        arguments = dict(given.arguments)
        for name, check in ARGUMENTS.items():
            if name in arguments:
                arguments[name] = check(arguments[name], arguments, freqs_from)
        angle_of = next((n for n in ("positions", "distance", "k") if n in arguments), None)
        freqs = arguments.get("inv_freq", arguments.get("freqs"))
        if freqs is None and freqs_from is not None:
            freqs = _read_only_frequencies(freqs_from, _width(arguments), arguments["base"])
        if angle_of is not None and freqs is not None and not fast:
            check_angle_range(np.asarray(arguments[angle_of]), freqs, angle_of)
        if fn.__name__ in RESULT_SIZES:
            name, nbytes, what = RESULT_SIZES[fn.__name__](arguments)
            check_nbytes(nbytes, name, what=what)
        if "x" not in arguments or fast:
            return fn(**arguments)
        x, out = arguments["x"], arguments.get("out")
        work = np.array(x, dtype=np.float64, order="C")           # a copy: x is never modified
        arguments["x"] = work[..., :arguments.get("rotary_dim", x.shape[-1])]
        with np.errstate(over="ignore", invalid="ignore"):       # overflow: cast_back raises
            arguments["x"][...] = fn(**arguments)
        if out is None:
            return cast_back(work, x)
        out[...] = cast_back(work, x)
        return out
    return boundary


@functools.lru_cache(maxsize=64)
def _read_only_frequencies(freqs_from, r: int, base: float) -> np.ndarray:
    """``freqs_from(r, base)``, read-only and cached: computing them took a quarter of a small rotate."""
    frequencies = freqs_from(r, base)
    frequencies.setflags(write=False)
    return frequencies


def _width(args: dict) -> int:
    """The number of features rotated: rotary_dim (once checked), else x's last axis, else d."""
    return args.get("rotary_dim") or (args["x"].shape[-1] if "x" in args else args["d"])


def _base(base, args: dict, freqs_from) -> float:
    """A positive base whose frequencies base^(-2i/r) fit float64 when they are used (no ``inv_freq``)."""
    base, r = check_base(base), _width(args)
    with np.errstate(over="ignore"):
        largest = np.float64(base) ** (-(r - 2) / r)
    if args.get("inv_freq") is None and not np.isfinite(largest):
        raise ValueError(f"base={base!r} with d={r} gives frequencies base^(-2i/d) that overflow float64; "
                         f"expected a base that is not vanishingly small (base >= 1e-300 is safe)")
    return base


def _inv_freq(inv_freq, args: dict, freqs_from) -> np.ndarray:
    """freqs_from(r, base) when None; else (r/2,), or (r/2, A) for A axes of positions (forms with ``positions``)."""
    r = _width(args)
    if inv_freq is None:
        return _read_only_frequencies(freqs_from, r, args["base"])
    f = check_freqs(inv_freq, "inv_freq", axes=True, n_pairs=r // 2)
    if f.ndim != 1 and "positions" not in args:
        raise ValueError(f"inv_freq must have shape ({r // 2},) here (one axis of positions), got shape {f.shape}")
    return f


def _positions(positions, args: dict, freqs_from) -> np.ndarray:
    """Float64, broadcastable to x.shape[:-1] (any shape without x); ``(A, ...)`` for an ``(r/2, A)`` inv_freq."""
    freqs = args.get("inv_freq", args.get("freqs"))
    return check_positions(positions, args["x"].shape[:-1] if "x" in args else None,
                           axes=None if freqs is None or freqs.ndim == 1 else freqs.shape[1],
                           freqs_name="freqs" if "freqs" in args else "inv_freq")


def _n_heads(n_heads, args: dict, freqs_from) -> int:
    """A positive number of heads splitting w's rows ``(n_heads * head_dim, in)`` into heads of even head_dim."""
    w = args["w"]
    if w.ndim != 2:
        raise ValueError(f"w must be a 2-D weight matrix (n_heads*head_dim, in_features), got shape {w.shape}")
    n_heads = check_positive_int(n_heads, "n_heads")
    if w.shape[0] % n_heads:
        raise ValueError(f"w.shape[0]={w.shape[0]} is not divisible by n_heads={n_heads}")
    check_d(w.shape[0] // n_heads, "head_dim (w.shape[0] // n_heads)")
    return n_heads


#: argument name -> its check: (value given, the arguments so far, freqs_from) -> the value the body receives.
#: Checked in this order: a check reads the checked values before it and the raw values after it.
ARGUMENTS = {
    "x": lambda x, args, freqs_from: check_x(x),
    "w": lambda w, args, freqs_from: check_real_array(w, "w"),
    "n_heads": _n_heads,
    "d": lambda d, args, freqs_from: check_d(d),
    "pairing": lambda pairing, args, freqs_from: check_pairing(pairing),
    "rotary_dim": lambda rotary_dim, args, freqs_from: check_rotary_dim(
        rotary_dim, args["x"].shape[-1] if "x" in args else args["d"]),
    "base": _base,
    "inv_freq": _inv_freq,
    "freqs": lambda freqs, args, freqs_from: check_freqs(freqs, axes=True),
    "positions": _positions,
    "distance": lambda distance, args, freqs_from: check_positions(distance, None, "distance"),
    "k": lambda k, args, freqs_from: check_scalar(k, "k"),
    "a": lambda a, args, freqs_from: check_finite_array(a, "a"),
    "out": lambda out, args, freqs_from: None if out is None else check_out(out, args["x"]),
}


def _n_positions(args: dict) -> int:
    """How many positions (rows of angles) ``positions`` holds: per axis for ``(A, ...)`` positions."""
    positions, freqs = args["positions"], args.get("inv_freq", args.get("freqs"))
    return positions.size if freqs is None or freqs.ndim == 1 else positions[0].size


#: form -> (the argument that sets the size, bytes, what they hold) of the largest array it allocates.
RESULT_SIZES = {
    "frequencies": lambda a: ("d", a["d"] // 2 * 8, f"d/2 = {a['d'] // 2} float64 frequencies"),
    "rotation_angles": lambda a: ("positions", _n_positions(a) * len(a["freqs"]) * 8,
                                  f"{_n_positions(a)} x {len(a['freqs'])} float64 angles"),
    "rotation_matrix": lambda a: ("positions", _n_positions(a) * a["d"] ** 2 * 8,
                                  f"{_n_positions(a)} float64 matrices of {a['d']} x {a['d']}"),
    "sinusoidal": lambda a: ("positions", a["positions"].size * a["d"] * 8,
                             f"{a['positions'].size} x {a['d']} float64"),
    "sinusoidal_shift_matrix": lambda a: ("d", a["d"] ** 2 * 8, f"a float64 matrix of {a['d']} x {a['d']}"),
    "partial_sums": lambda a: ("distance", a["distance"].size * (a["d"] // 2) * 16,
                               f"{a['distance'].size} x {a['d'] // 2} complex128"),
}


def check_out(out, x: np.ndarray) -> np.ndarray:
    """An output buffer: a writeable ndarray of x's shape and dtype (any strides) that does not overlap x."""
    if not isinstance(out, np.ndarray) or isinstance(out, np.ma.MaskedArray):   # a mask would be left stale
        raise TypeError(f"out must be a numpy array of x's shape {x.shape} and dtype {x.dtype}, "
                        f"got {type(out).__name__}")
    if out.shape != x.shape or out.dtype != x.dtype:
        raise ValueError(f"out must have x's shape {x.shape} and dtype {x.dtype} (integers are promoted to float64), "
                         f"got shape {out.shape} and dtype {out.dtype}")
    if not out.flags.writeable:
        raise ValueError("out must be writeable, got a read-only array")
    if _overlaps_itself(out):
        raise ValueError(f"out must not overlap itself: its strides {out.strides} for shape {out.shape} make several "
                         f"elements share memory (np.broadcast_to or as_strided?); pass a separate array, "
                         f"e.g. np.empty_like(x)")
    try:
        overlap = np.shares_memory(out, x, max_work=10**6)
    except np.exceptions.TooHardError:
        overlap = True
    if overlap:
        raise ValueError("out must not overlap x: rope_ref never modifies its input in place; pass a separate buffer")
    return out


def _overlaps_itself(a: np.ndarray) -> bool:
    """Whether two elements of ``a`` share memory: none if each |stride| reaches past the extent of the smaller
    ones, else by comparing byte offsets (beyond 2^22 elements, such a tangle of strides counts as overlapping)."""
    extent = a.itemsize
    for stride, n in sorted((abs(stride), n) for stride, n in zip(a.strides, a.shape) if n > 1):
        if stride < extent:
            break
        extent += stride * (n - 1)
    else:
        return False
    if a.size > 1 << 22:
        return True
    starts = np.sort(np.tensordot(np.indices(a.shape, dtype=np.int64), a.strides, axes=(0, 0)).ravel())
    return bool(np.any(np.diff(starts) < a.itemsize))


def check_angle_range(pos: np.ndarray, freqs: np.ndarray, name: str = "positions") -> None:
    """m * theta must be finite (else ValueError); beyond ``ANGLE_LIMIT`` float64 rounds it by > 1e-6 rad: warn once."""
    m, f = float(np.max(np.abs(pos), initial=0.0)), float(np.max(np.abs(freqs), initial=0.0))
    rows, columns = (pos[None], freqs[:, None]) if freqs.ndim == 1 else (pos, freqs)
    peak = sum(float(np.max(np.abs(p), initial=0.0)) * float(np.max(np.abs(c), initial=0.0))      # >= max|F p|
               for p, c in zip(rows, columns.T))
    if not np.isfinite(peak):
        raise ValueError(f"{name} times the frequencies overflow float64: |{name}| up to {m:.3g} times theta up to "
                         f"{f:.3g} is not a finite angle; expected |{name} * theta| < 1.8e308")
    if peak >= ANGLE_LIMIT:
        err = float(np.spacing(peak)) / 2
        warn_precision("angle", f"{name} up to {m:.3g} with theta up to {f:.3g}: the float64 angle m*theta is rounded "
                       f"by up to {err:.2g} rad; the rounding exceeds {ANGLE_TOL:g} rad once |m*theta| >= 2^34 = "
                       f"{ANGLE_LIMIT:.4g} (ulp(m*theta)/2), i.e. beyond position {ANGLE_LIMIT / f:.4g} here")


def cast_back(result: np.ndarray, x: np.ndarray, name: str = "x", expected: str | None = None) -> np.ndarray:
    """A float64 ``result`` as a new array of x's dtype; a finite x whose result overflows that dtype raises."""
    with np.errstate(over="ignore"):
        out = result.astype(x.dtype)
    return check_no_overflow(out, x, name, expected)
