"""Argument checks, one per kind of argument, each a TypeError (wrong kind) or ValueError (wrong value) naming the
argument, what was given and what was expected; the one size guard (:func:`check_nbytes`, :func:`size_limit`)."""

from __future__ import annotations

import contextlib
import contextvars
import difflib
import functools
import inspect
import numbers
import os
import reprlib
import sys
import warnings

import ml_dtypes
import numpy as np

PAIRINGS = ("interleaved", "half")
#: other names people use for the two pairings, for the "did you mean" hint.
PAIRING_ALIASES = {"neox": "half", "gpt-neox": "half", "gptneox": "half", "rotate_half": "half",
                   "hf": "half", "split": "half", "llama": "interleaved", "gptj": "interleaved",
                   "gpt-j": "interleaved", "paper": "interleaved", "roformer": "interleaved"}

#: dtypes ``rotate`` and friends accept and return unchanged.
FLOAT_DTYPES = tuple(np.dtype(t) for t in (np.float16, np.float32, np.float64, ml_dtypes.bfloat16))
ACCEPTED = "float16, float32, float64 or bfloat16 (ml_dtypes), or integers (promoted to float64)"

#: float64 angles |m*theta| >= ANGLE_LIMIT have a rounding error ulp/2 > ANGLE_TOL rad.
ANGLE_TOL = 1e-6
ANGLE_LIMIT = 2.0 ** (np.ceil(np.log2(ANGLE_TOL)) + 53)    # 2^34 ~ 1.7e10: ulp(2^34)/2 = 2^-19 ~ 1.9e-6
EXACT_INT_LIMIT = 2 ** 53                                  # integers beyond this are not all float64 values

#: arrays rope_ref allocates from your sizes larger than this raise a ValueError before any allocation.
DEFAULT_MAX_BYTES = 2 * 1024 ** 3
_MAX_BYTES = contextvars.ContextVar("rope_ref_max_bytes", default=DEFAULT_MAX_BYTES)


@contextlib.contextmanager
def size_limit(max_bytes):
    """Within the ``with`` block, arrays rope_ref allocates from your sizes may take up to ``max_bytes``
    bytes (``None``: the default, 2 GiB).  Nests; local to the thread (and asyncio task) that enters it."""
    if max_bytes is not None:
        max_bytes = check_nonnegative_int(max_bytes, "max_bytes", "None or a number of bytes")
    token = _MAX_BYTES.set(DEFAULT_MAX_BYTES if max_bytes is None else max_bytes)
    try:
        yield
    finally:
        _MAX_BYTES.reset(token)


def check_nbytes(nbytes: int, name: str, *, what: str) -> None:
    """A ValueError naming ``name``, the size and the limit if ``nbytes`` (of ``what``) exceed the limit."""
    limit = _MAX_BYTES.get()
    if nbytes > limit:
        raise ValueError(f"{name}: {what} would take {format_bytes(nbytes)}, above the limit of {format_bytes(limit)}; "
                         f"allow it with `with rope_ref.size_limit(max_bytes={nbytes}):`")


def format_bytes(nbytes: int, digits: int = 3, *, exact: bool = True) -> str:
    """Bytes in words: '8 GiB (8589934592 bytes)' (``exact=False``: '8 GiB'), to ``digits`` significant digits."""
    for unit, scale in (("TiB", 1024 ** 4), ("GiB", 1024 ** 3), ("MiB", 1024 ** 2), ("KiB", 1024)):
        if nbytes >= scale:
            words = f"{nbytes / scale:.{digits}g} {unit}"
            return f"{words} ({nbytes} bytes)" if exact else words
    return f"{nbytes} bytes"


class RopeRefPrecisionWarning(UserWarning):
    """The math is fine but float64 cannot resolve it (positions so large that m*theta loses digits)."""


_WARNED: set = set()


def warn_precision(kind: str, message: str, *, every_call: bool = False) -> None:
    """Warn once per process for each ``kind`` of precision loss (on every call if ``every_call``)."""
    if every_call or kind not in _WARNED:
        _WARNED.add(kind)
        _warn(message, RopeRefPrecisionWarning)


def _warn(message: str, category) -> None:
    """``warnings.warn`` pointing at the first frame outside rope_ref, the user's call."""
    here, frame, level = os.path.dirname(os.path.abspath(__file__)) + os.sep, sys._getframe(), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(here):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


def check_bool(flag, name: str) -> bool:
    """A real bool (or numpy bool): strings such as "False" and arrays are refused, not truth-tested."""
    if isinstance(flag, (bool, np.bool_)):
        return bool(flag)
    raise TypeError(f"{name} must be True or False, got {flag!r} of type {type(flag).__name__}")


def closest_name(name: str, valid) -> str:
    """' (did you mean 'x'?)' for the valid name closest to a misspelt one, else ''."""
    by_lower = {str(v).lower(): str(v) for v in valid}
    match = difflib.get_close_matches(str(name).lower(), list(by_lower), n=1, cutoff=0.6)
    return f" (did you mean {by_lower[match[0]]!r}?)" if match else ""


def check_keywords(given, valid, what: str) -> None:
    """TypeError naming every unknown keyword in ``given``, with the closest valid name for each."""
    unknown = [k for k in given if k not in valid]
    if unknown:
        hints = "; ".join(f"{k!r}{closest_name(k, valid)}" for k in unknown)
        raise TypeError(f"{what} got unexpected keyword(s) {hints}; valid keywords: {sorted(valid)}")


def suggest_keywords(fn):
    """Decorator: a misspelt keyword raises a TypeError naming the closest valid one (pairng= -> pairing), and
    a keyword-only argument given by position says so."""
    params = inspect.signature(fn).parameters
    valid = [p for p, v in params.items() if v.kind in (v.POSITIONAL_OR_KEYWORD, v.KEYWORD_ONLY) and p != "self"]
    positional = [p for p, v in params.items() if v.kind == v.POSITIONAL_OR_KEYWORD]
    keyword_only = [p for p, v in params.items() if v.kind == v.KEYWORD_ONLY]
    star_args = any(v.kind == v.VAR_POSITIONAL for v in params.values())

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if len(args) > len(positional) and keyword_only and not star_args:
            extra = keyword_only[:len(args) - len(positional)]
            raise TypeError(f"{fn.__name__}() takes {len(positional)} positional argument(s) ({', '.join(positional)}),"
                            f" got {len(args)}; {', '.join(extra)} {'is' if len(extra) == 1 else 'are'} keyword-only: "
                            f"{fn.__name__}(..., {extra[0]}=...)")
        check_keywords(kwargs, valid, f"{fn.__name__}()")
        return fn(*args, **kwargs)
    return wrapper


def check_number(value, name: str, expected: str, valid, *, real: bool = False, error=ValueError):
    """``value`` as an int (a float if ``real``): a TypeError for other kinds and bools, ``error`` if not valid."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real if real else numbers.Integral):
        raise TypeError(f"{name} must be {expected}, got {value!r} of type {type(value).__name__}")
    try:
        value = float(value) if real else int(value)
    except OverflowError:        # an int beyond float64 (10**400)
        raise ValueError(f"{name} must be {expected}, got an integer too large for float64 "
                         f"({len(str(value))} digits)") from None
    if not valid(value):
        raise error(f"{name} must be {expected}, got {value}")
    return value


def check_positive_int(n, name: str, *, expected: str = "a positive integer") -> int:
    """A positive integer; ``expected`` words it for the message."""
    return check_number(n, name, expected, lambda v: v > 0)


def check_nonnegative_int(n, name: str, expected: str = "a non-negative integer") -> int:
    """An integer >= 0."""
    return check_number(n, name, expected, lambda v: v >= 0)


def check_seed(seed, name: str = "seed") -> int:
    """A non-negative integer random seed (a TypeError for any other value)."""
    return check_number(seed, name, "a non-negative integer", lambda v: v >= 0, error=TypeError)


def check_d(d, name: str = "d") -> int:
    """A positive even integer feature dimension."""
    return check_number(d, name, "a positive even integer", lambda v: v > 0 and v % 2 == 0)


def check_rotary_dim(rotary_dim, d: int, name: str = "rotary_dim") -> int:
    """``rotary_dim`` defaults to ``d``; otherwise an even integer in [2, d]."""
    if rotary_dim is None:
        return d
    return check_number(rotary_dim, name, f"None or an even integer in [2, d={d}]", lambda v: 0 < v <= d and v % 2 == 0)


def check_positive_real(value, name: str, expected: str = "a positive finite real number") -> float:
    """A finite, positive real number (a Python or NumPy number, not a bool), as a float."""
    return check_number(value, name, expected, lambda v: 0 < v < np.inf, real=True)


def check_base(base, name: str = "base") -> float:
    """A finite, positive real base; base = 1 warns (every theta_i = 1^(-2i/d) = 1: one frequency for all pairs)."""
    base = check_positive_real(base, name)
    if base == 1:
        _warn(f"{name}=1 gives every pair the same frequency theta_i = 1^(-2i/d) = 1 (RoFormer eq 15), so the pairs "
              "carry no range of wavelengths; RoPE's bases are > 1 (10000 in the paper)", UserWarning)
    return base


def check_choice(value, name: str, choices, meaning: str = "", unknown: type = ValueError, aliases=None) -> str:
    """One of ``choices``: a TypeError for a non-string, ``unknown`` for another string, with the closest name
    (or the one ``aliases`` maps its lower case to) as a hint."""
    choices = tuple(choices)
    if isinstance(value, str) and value in choices:
        return value
    if not isinstance(value, str):
        raise TypeError(f"{name} must be {meaning}one of {choices}, got {reprlib.repr(value)} of type "
                        f"{type(value).__name__}")
    alias = (aliases or {}).get(value.lower())
    hint = f" (did you mean {alias!r}?)" if alias else closest_name(value, choices)
    raise unknown(f"{name} must be {meaning}one of {choices}, got {value!r}{hint}")


def check_pairing(pairing) -> str:
    """'interleaved' or 'half'; a misspelling or another library's name gets a hint."""
    return check_choice(pairing, "pairing", PAIRINGS, aliases=PAIRING_ALIASES)


def check_real_array(a, name: str) -> np.ndarray:
    """A real array of an accepted dtype (see ``ACCEPTED``): not complex, object, string, bool or longdouble."""
    expected = f"a real array of dtype {ACCEPTED}"
    if a is None or isinstance(a, str):
        raise TypeError(f"{name} must be {expected}, got {'None' if a is None else 'a string ' + repr(a)}")
    if isinstance(a, (bytes, bytearray)) or isinstance(a, memoryview) and isinstance(a.obj, (bytes, bytearray)):
        raise TypeError(f"{name} must be {expected}, got {type(a).__name__} (raw bytes are not read as numbers); "
                        f"pass np.frombuffer({name}, dtype=...) with the dtype the bytes hold")
    if type(a).__module__.split(".")[0] == "torch":     # a tensor NumPy cannot read as it is: say what to pass
        dtype, device = str(getattr(a, "dtype", "?")), str(getattr(a, "device", "cpu"))
        grad = bool(getattr(a, "requires_grad", 0))
        fix = ".detach()" * grad + ".cpu()" * (device != "cpu") + ".float()" * (dtype == "torch.bfloat16")
        if fix:
            exact = f" (bfloat16 exactly: {name}{fix[:-8]}.view(torch.int16).numpy().view(ml_dtypes.bfloat16))"
            raise TypeError(f"{name} is a torch tensor ({dtype}, device {device}, requires_grad={grad}) that NumPy "
                            f"cannot read; pass {name}{fix}.numpy(){exact * fix.endswith('.float()')}")
    if np.ma.is_masked(a):       # np.asarray would drop the mask and use the hidden values
        raise TypeError(f"{name} must be {expected}, got a masked array with masked entries (rope_ref ignores no "
                        f"values); pass {name}.filled(value) or the unmasked part")
    try:
        arr = np.asarray(a)
    except (ValueError, TypeError, OverflowError) as e:       # ragged nested lists and the like
        raise TypeError(f"{name} must be {expected}, got {type(a).__name__} that numpy cannot convert ({e})") from None
    arr = arr.astype(arr.dtype.newbyteorder("="), copy=False)  # big-endian ('>f4'): the same numbers, native order
    if arr.dtype in FLOAT_DTYPES or arr.dtype.kind in "iu":
        return arr
    hint = {"c": " (rope_ref does not drop imaginary parts)", "f": " (convert with .astype(np.float64))"}
    if arr.dtype == object and arr.size:          # say what the objects are: an int beyond int64 becomes one
        kinds = sorted({type(v).__name__ for v in arr.flat[:1000]})
        beyond = "; integers beyond the int64 range are not NumPy integers: pass floats" if "int" in kinds else ""
        hint["O"] = f" (elements of type {', '.join(kinds)}){beyond}"
    raise TypeError(f"{name} must be {expected}, got dtype {arr.dtype}{hint.get(arr.dtype.kind, '')}")


def check_finite(arr: np.ndarray, name: str) -> np.ndarray:
    """``arr`` unchanged, or a ValueError naming the first NaN or infinity."""
    if not np.all(np.isfinite(arr)):
        where = tuple(int(i) for i in np.unravel_index(np.argmin(np.isfinite(arr)), arr.shape))
        raise ValueError(f"{name} must be finite, got NaN or infinity (first at index {where})")
    return arr


def check_finite_array(a, name: str) -> np.ndarray:
    """Finite real values of any shape, as a float64 array."""
    return check_finite(check_real_array(a, name).astype(np.float64), name)


def check_x(x, name: str = "x") -> np.ndarray:
    """Input vectors of shape (..., d) with d even; integers are promoted to float64."""
    arr = check_real_array(x, name)
    if arr.ndim == 0:
        raise ValueError(f"{name} must have at least one axis (shape (..., seq, d)), got a 0-d array")
    check_d(arr.shape[-1], f"{name}.shape[-1] (d)")
    return arr.astype(np.float64) if arr.dtype.kind in "iu" else arr


def check_positions(positions, lead_shape: tuple | None, name: str = "positions", target: str = "x.shape[:-1]",
                    *, axes: int | None = None, freqs_name: str = "inv_freq") -> np.ndarray:
    """Finite real positions as float64, broadcastable to ``lead_shape`` = x.shape[:-1] (any shape if None).

    ``None`` means ``arange(seq)`` along the second-to-last axis of x (0 for a single vector).  ``axes=A`` (an
    ``inv_freq`` of shape ``(rotary_dim/2, A)``): shape ``(A, ...)``, ``None`` only for A = 1.  Integers beyond
    2^53 warn.  The result keeps its own (smaller) shape."""
    if positions is None and lead_shape is not None:
        if axes is not None and axes > 1:
            raise ValueError(f"{name} must be given with an {freqs_name} of shape (rotary_dim/2, {axes}): shape "
                             f"({axes}, ..., seq), one row of positions per axis (M-RoPE: t, h, w)")
        default = np.zeros(()) if len(lead_shape) == 0 else np.arange(lead_shape[-1], dtype=np.float64)
        return default if axes is None else default[None]
    given = check_real_array(positions, name)
    pos = check_finite(given.astype(np.float64), name)
    largest = max(abs(int(given.max())), abs(int(given.min()))) if given.dtype.kind in "iu" and given.size else 0
    if given.dtype.kind == "f" and not isinstance(positions, np.ndarray) and np.max(np.abs(pos), initial=0) >= 2**53:
        given_as = np.asarray(positions, dtype=object).ravel()                # [2**53 + 1, 0.5]: the ints as given
        largest = max((abs(v) for v in given_as if isinstance(v, numbers.Integral)), default=0)
    if largest > EXACT_INT_LIMIT:
        warn_precision("int53", f"{name}: integers beyond 2^53 = {EXACT_INT_LIMIT} are rounded to float64, so "
                       f"neighbouring positions can get identical angles (2^53 and 2^53 + 1 do); "
                       f"got {name} up to {largest}", every_call=True)
    each = pos.shape
    if axes is not None:
        if pos.ndim == 0 or pos.shape[0] != axes:
            got = "a 0-d array" if pos.ndim == 0 else f"shape {pos.shape} ({name}.shape[0] = {pos.shape[0]})"
            raise ValueError(f"{name} must have shape ({axes}, ..., seq), one row of positions per column of "
                             f"{freqs_name} ({freqs_name}.shape[1] = {axes}), got {got}")
        each = pos.shape[1:]
    if lead_shape is None:
        return pos
    if len(each) > len(lead_shape) or any(e not in (1, t) for e, t in zip(each[::-1], lead_shape[::-1])):
        which = name if axes is None else f"{name}[a] (of {name}.shape = {pos.shape})"
        raise ValueError(f"{which} of shape {each} does not broadcast to {target} = {lead_shape}")
    return pos


def check_positions_any(positions, name: str = "positions") -> np.ndarray:
    """Finite real positions of any shape, as float64."""
    return check_positions(positions, None, name)


def check_scalar(value, name: str) -> float:
    """A finite real scalar (a 0-d array or a Python/numpy number)."""
    arr = check_positions_any(value, name)
    if arr.ndim:
        raise ValueError(f"{name} must be a real scalar, got an array of shape {arr.shape}")
    return float(arr)


def check_freqs(freqs, name: str = "freqs", *, axes: bool = False, n_pairs: int | None = None) -> np.ndarray:
    """Finite real frequencies of shape (n,), or (n, A) with A >= 1 if ``axes``; n = ``n_pairs`` if given."""
    f = check_finite_array(freqs, name)
    if not (f.ndim == 1 or axes and f.ndim == 2 and f.shape[1] > 0) or n_pairs not in (None, f.shape[0]):
        expected = "be 1-D (one frequency per pair)" + " or 2-D (pairs, axes)" * axes
        if n_pairs is not None:
            expected = f"have shape ({n_pairs},) = (rotary_dim/2,)" + f", or ({n_pairs}, A) for A position axes" * axes
        raise ValueError(f"{name} must {expected}, got shape {f.shape}")
    return f


def check_no_overflow(result: np.ndarray, x: np.ndarray, name: str = "x", expected: str | None = None) -> np.ndarray:
    """``result`` unchanged, or the :func:`overflow_error` when finite ``x`` gave inf/NaN."""
    if not np.all(np.isfinite(result)) and np.all(np.isfinite(x)):
        raise overflow_error(result.dtype, name, expected)
    return result


def overflow_error(dtype, name: str = "x", expected: str | None = None) -> ValueError:
    """The ValueError for a result of ``dtype`` that overflowed although ``name`` was finite (``expected`` by
    default: every rotated pair within the dtype)."""
    big = float(ml_dtypes.finfo(dtype).max)
    if expected is None:
        expected = (f"every pair of {name} to have norm below {big:.5g} (safe: |{name}| < {big / np.sqrt(2):.5g}), "
                    f"or a wider dtype")
    return ValueError(f"{name}: the result computed from finite {name} overflows {np.dtype(dtype)} (largest value "
                      f"{big:.5g}); expected {expected}")
