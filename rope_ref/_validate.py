"""Argument checks, one per kind of argument: a TypeError (wrong kind) or ValueError (wrong value) that names the
argument, what was given and what was expected, in one sentence; and the precision warnings, on every call."""

from __future__ import annotations

import numbers
import warnings
from functools import partial

import ml_dtypes
import numpy as np

RESOLVED_ANGLE = 2.0 ** 34      # rad: beyond it float64 rounds an angle by more than 1e-6 rad


class RopeRefPrecisionWarning(UserWarning):
    """The math is fine but float64 cannot resolve it (positions so large that m*theta loses digits)."""


def check_bool(flag, name: str) -> bool:
    if isinstance(flag, (bool, np.bool_)):
        return bool(flag)
    raise TypeError(f"{name} must be True or False, got {flag!r} of type {type(flag).__name__}")


def check_keywords(given, valid, what: str) -> None:
    unknown = sorted(k for k in given if k not in valid)
    if unknown:
        raise TypeError(f"{what} got unexpected keyword(s) {unknown}, expected some of {sorted(valid)}")


def check_choice(value, name: str, choices, meaning: str = "", unknown: type = ValueError) -> str:
    choices = tuple(choices)
    if isinstance(value, str) and value in choices:
        return value
    error = unknown if isinstance(value, str) else TypeError
    raise error(f"{name} must be {meaning}one of {choices}, got {value!r:.80}")


def check_number(value, name: str, expected: str, valid, *, real: bool = False):
    """``value`` as an int (a float if ``real``): a TypeError for other kinds and bools, a ValueError if not valid."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real if real else numbers.Integral):
        raise TypeError(f"{name} must be {expected}, got {value!r} of type {type(value).__name__}")
    try:
        value = float(value) if real else int(value)
    except OverflowError:        # an int beyond float64 (10**400)
        raise ValueError(f"{name} must be {expected}, got an integer too large for float64") from None
    if not valid(value):
        raise ValueError(f"{name} must be {expected}, got {value}")
    return value


def _number_check(expected: str, valid, *, real: bool = False, default_name: str | None = None):
    """A :func:`check_number` of one kind, ``(value, name[, expected])`` -> the value: ``valid`` is its rule."""
    return lambda value, name=default_name, expected=expected: check_number(value, name, expected, valid, real=real)


check_positive_int = _number_check("a positive integer below 2**63", lambda v: 0 < v < 2 ** 63)         # an int64
check_nonnegative_int = _number_check("a non-negative integer below 2**63", lambda v: 0 <= v < 2 ** 63)
check_seed = _number_check("a non-negative integer", lambda v: v >= 0, default_name="seed")
check_d = _number_check("a positive even integer below 2**63", lambda v: 0 < v < 2 ** 63 and v % 2 == 0,
                        default_name="d")
check_length = _number_check("a positive integer below 2**1023", lambda v: 0 < v < 2 ** 1023)      # a float64 too
check_positive_real = _number_check("a positive finite real number", lambda v: 0 < v < np.inf, real=True)
check_fraction = _number_check("a number in (0, 1]", lambda v: 0 < v <= 1, real=True)
check_pairing = partial(check_choice, name="pairing", choices=("interleaved", "half"))


def check_rotary_dim(rotary_dim, d: int, name: str = "rotary_dim") -> int:
    if rotary_dim is None:
        return d
    return check_number(rotary_dim, name, f"None or an even integer in [2, d={d}]", lambda v: 0 < v <= d and v % 2 == 0)


def check_base(base, name: str = "base", *, d: int | None = None) -> float:
    """A positive base whose frequencies base^(-2i/d) fit float64 (when ``d`` is given); base = 1 warns."""
    base = check_positive_real(base, name)
    if base == 1:
        warnings.warn(f"{name}=1 gives every pair theta_i = 1 (eq 15); RoPE's bases are > 1", stacklevel=2)
    if d is not None and base < 1 and (d - 2) / d * -np.log2(base) >= 1024:
        raise ValueError(f"{name} must keep base^(-2i/d) within float64 for d={d} (base >= 1e-300 does), got {base!r}")
    return base


def as_given(result: np.ndarray, given):
    """``result`` as a tensor of ``given``'s dtype and device when ``given`` is a torch tensor, else unchanged."""
    if not type(given).__module__.startswith("torch"):
        return result
    import torch
    if result.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(result.astype(np.float32)).to(device=given.device, dtype=torch.bfloat16)
    return torch.from_dlpack(result).to(given.device)


def check_real_array(a, name: str) -> np.ndarray:
    """A real array in native byte order (lists and torch tensors convert; raw bytes and masked entries do not)."""
    expected = "a real array of dtype float16, float32, float64, bfloat16 or integer"
    if type(a).__module__.startswith("torch"):      # any device, requires_grad allowed, through DLPack: no torch import
        t = a.detach().cpu()
        bfloat16 = str(t.dtype) == "torch.bfloat16"                      # NumPy's DLPack has no bfloat16
        try:
            a = t.float().numpy().astype(ml_dtypes.bfloat16) if bfloat16 else np.from_dlpack(t.contiguous())
        except (RuntimeError, BufferError, TypeError):                   # float8, ...: no NumPy dtype
            raise TypeError(f"{name} must be {expected}, got a tensor of {t.dtype}") from None
    raw = isinstance(a, bytearray) or isinstance(a, memoryview) and isinstance(a.obj, (bytes, bytearray))
    if raw or np.ma.is_masked(a):
        raise TypeError(f"{name} must be {expected}, got {type(a).__name__} of raw bytes or masked entries")
    try:
        arr = np.asarray(a)
    except Exception as e:       # ragged lists, objects numpy cannot read
        raise TypeError(f"{name} must be {expected}, got a {type(a).__name__} numpy cannot read ({e})") from None
    arr = arr if arr.dtype.isnative else arr.astype(arr.dtype.newbyteorder("="))
    if arr.dtype in (np.float16, np.float32, np.float64, ml_dtypes.bfloat16) or arr.dtype.kind in "iu":
        return arr
    raise TypeError(f"{name} must be {expected}, got {type(a).__name__} of dtype {arr.dtype}")


def check_finite(arr: np.ndarray, name: str) -> np.ndarray:
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got NaN or infinity at {np.argwhere(~np.isfinite(arr))[0].tolist()}")
    return arr


def check_finite_array(a, name: str) -> np.ndarray:
    return check_finite(check_real_array(a, name).astype(np.float64), name)


def check_x(x, name: str = "x") -> np.ndarray:
    """Input vectors of shape (..., d) with d even; integers are promoted to float64."""
    arr = check_real_array(x, name)
    check_d(arr.shape[-1] if arr.ndim else 0, f"{name}.shape[-1]")
    return arr.astype(np.float64) if arr.dtype.kind in "iu" else arr


def check_positions(positions, lead_shape: tuple | None, name: str = "positions", target: str = "x.shape[:-1]",
                    *, axes: int | None = None) -> np.ndarray:
    """Finite positions as float64 broadcasting to ``lead_shape`` (any shape if None; None is ``arange(seq)``), of
    shape ``(A, ...)`` for frequencies ``(n, A)`` (``axes=A``); integers beyond 2^53 warn, on every call."""
    if positions is None and lead_shape is not None:
        if (axes or 1) > 1:
            raise ValueError(f"{name} must be given for frequencies of {axes} columns, got None")
        default = np.arange(lead_shape[-1], dtype=np.float64) if lead_shape else np.zeros(())
        return default if axes is None else default[None]
    given = check_real_array(positions, name)
    pos = check_finite(given.astype(np.float64), name)
    if np.max(np.abs(pos), initial=0) >= 2 ** 53:      # 2^53 + 1 rounds to 2^53: the integers as given
        exact = positions if isinstance(positions, (list, tuple)) else [given.max(), given.min()]   # an array's: dtype
        if max((abs(int(v)) for v in np.ravel(np.asarray(exact, object)) if isinstance(v, numbers.Integral)),
               default=0) > 2 ** 53:
            warnings.warn(f"{name} holds integers beyond 2^53 that float64 rounds (2^53 + 1 to 2^53), so distinct "
                          f"values can act as one", RopeRefPrecisionWarning, stacklevel=2)
    if axes is not None and (pos.ndim == 0 or pos.shape[0] != axes):
        raise ValueError(f"{name} must have shape ({axes}, ..., seq) for frequencies of {axes} columns, got shape "
                         f"{pos.shape}")
    each = pos.shape if axes is None else pos.shape[1:]
    if lead_shape is not None and (len(each) > len(lead_shape) or
                                   any(e not in (1, t) for e, t in zip(each[::-1], lead_shape[::-1]))):
        raise ValueError(f"{name} must broadcast to {target} = {lead_shape}, got shape {pos.shape}")
    return pos


def check_positions_any(positions, name: str = "positions") -> np.ndarray:
    return check_positions(positions, None, name)


def check_scalar(value, name: str) -> float:
    arr = check_positions_any(value, name)
    if arr.ndim:
        raise ValueError(f"{name} must be a real scalar, got an array of shape {arr.shape}")
    return float(arr)


def check_freqs(freqs, name: str = "freqs", *, axes: bool = False, n_pairs: int | None = None) -> np.ndarray:
    """Finite real frequencies of shape (n,), or (n, A) with A >= 1 if ``axes``; n = ``n_pairs`` if given."""
    f = check_finite_array(freqs, name)
    if not (f.ndim == 1 or axes and f.ndim == 2 and f.shape[1] > 0) or n_pairs not in (None, f.shape[0]):
        n = "n" if n_pairs is None else n_pairs
        raise ValueError(f"{name} must have shape ({n},)" + f" or ({n}, A)" * axes + f", got shape {f.shape}")
    return f


def check_angles(positions, freqs: np.ndarray, lead_shape: tuple | None = None, name: str = "positions") -> tuple:
    """(``positions`` checked for the checked ``freqs`` (:func:`check_positions`), ``freqs``); angles that can
    overflow float64 raise, and ones that can reach 2^34 warn, on every call (:func:`rope_ref.rotation_angles`)."""
    positions = check_positions(positions, lead_shape, name, axes=None if freqs.ndim == 1 else freqs.shape[1])
    pairs = [(positions, freqs)] if freqs.ndim == 1 else zip(positions, freqs.T)     # Python floats: inf, no warning
    peak = sum(float(abs(p).max(initial=0.0)) * float(abs(f).max(initial=0.0)) for p, f in pairs)
    if not np.isfinite(peak):
        raise ValueError(f"{name} times the frequencies must be finite angles, got |{name} * theta| beyond 1.8e308")
    if peak >= RESOLVED_ANGLE:
        warnings.warn(f"{name} times the frequencies reach {peak:.3g} rad, beyond 2^34 where float64 rounds an angle "
                      f"by more than 1e-6 rad", RopeRefPrecisionWarning, stacklevel=2)
    return positions, freqs


def check_weights(w, n_heads) -> tuple:
    w, n_heads = check_real_array(w, "w"), check_positive_int(n_heads, "n_heads")
    if w.ndim != 2 or w.shape[0] % (2 * n_heads):
        raise ValueError(f"w must have shape (n_heads * head_dim, in) with head_dim even for n_heads={n_heads}, "
                         f"got shape {w.shape}")
    return w, n_heads


def check_no_overflow(result: np.ndarray, x: np.ndarray, name: str = "x", expected: str | None = None) -> np.ndarray:
    if not np.all(np.isfinite(result)) and np.all(np.isfinite(x)):
        limit = f"every pair of {name} to have norm below {float(ml_dtypes.finfo(result.dtype).max):.5g}"
        raise ValueError(f"{name} is finite but the result overflows {result.dtype}, expected {expected or limit}")
    return result
