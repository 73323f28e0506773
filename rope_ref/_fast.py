"""The machinery behind :func:`rope_ref.rotate`: cached cos/sin tables and a blocked loop.

The math is eq 34 and nothing else; this module only decides *how* to stream it:

* leading axes are flattened into rows; the positions are reduced to their distinct rows
  (an axis along which they do not change, e.g. heads, is dropped) and one cos/sin table is
  computed per distinct position from float64 angles, then cast;
* interleaved pairs are multiplied as complex numbers in one ufunc call
  (``(x_2i + i x_2i+1) * (cos + i sin)`` is exactly eq 34);
* half-split pairs use ``x * [cos, cos] + (halves swapped) * [-sin, sin]`` (rotate_half, with its
  sign carried by the table), over blocks of rows small enough that the temporary stays in cache;
  float16/bfloat16 are converted to float32 block by block the same way;
* tables are cached: see :func:`set_cache_limit`.
"""

from __future__ import annotations

import hashlib
import numbers
import threading
from collections import OrderedDict

import numpy as np

BLOCK_ELEMENTS = 1 << 16                 # elements per block: x, table, temporary stay in L2
DEFAULT_CACHE_LIMIT = 256 * 1024 * 1024  # bytes

_lock = threading.Lock()                 # guards the three names below
_cache: OrderedDict = OrderedDict()      # digest -> tuple of read-only tables, least recently used first
_cache_bytes = 0
_cache_limit = DEFAULT_CACHE_LIMIT


def set_cache_limit(nbytes: int) -> int:
    """Bound the cos/sin table cache of :func:`rope_ref.rotate` to ``nbytes`` bytes; return the old bound.

    The cache keeps the most recently used tables (keyed by a BLAKE2b digest of the positions,
    frequencies, dtype and pairing, never a copy of the positions) and evicts the least recently
    used ones to stay within the bound.  A table larger than the bound is computed and not kept.
    ``0`` disables caching.  Default 256 MiB.  Thread-safe.
    """
    global _cache_limit
    if isinstance(nbytes, (bool, np.bool_)) or not isinstance(nbytes, numbers.Integral):
        raise TypeError(f"nbytes must be a non-negative integer number of bytes, got {nbytes!r}")
    if nbytes < 0:
        raise ValueError(f"nbytes must be a non-negative integer number of bytes, got {nbytes}")
    with _lock:
        old, _cache_limit = _cache_limit, int(nbytes)
        _evict()
    return old


def clear_cache() -> None:
    """Free every cached cos/sin table (the next :func:`rope_ref.rotate` call recomputes its table)."""
    global _cache_bytes
    with _lock:
        _cache.clear()
        _cache_bytes = 0


def cache_info() -> dict:
    """``{"entries": n, "nbytes": bytes held, "limit": bound in bytes}`` of the table cache."""
    with _lock:
        return {"entries": len(_cache), "nbytes": _cache_bytes, "limit": _cache_limit}


def _evict() -> None:
    """Drop least recently used tables until the cache fits its bound (caller holds the lock)."""
    global _cache_bytes
    while _cache and _cache_bytes > _cache_limit:
        _, tabs = _cache.popitem(last=False)
        _cache_bytes -= sum(t.nbytes for t in tabs)


def _digest(pos: np.ndarray, freqs: np.ndarray, work: np.dtype, pairing: str) -> bytes:
    h = hashlib.blake2b(digest_size=32)
    h.update(repr((pos.shape, pos.dtype.str, freqs.shape, work.str, pairing)).encode())
    h.update(np.ascontiguousarray(pos).data)
    h.update(np.ascontiguousarray(freqs).data)
    return h.digest()


def tables(pos: np.ndarray, freqs: np.ndarray, work, pairing: str) -> tuple:
    """Read-only tables for positions ``pos`` (any shape P), cached.

    interleaved -> ``(cis,)``, complex ``P + (h,)``; half -> (``[cos, cos]``, ``[-sin, sin]``),
    each ``P + (2h,)`` of dtype ``work``.  cos and sin are taken of float64 angles, then cast.
    """
    global _cache_bytes
    work = np.dtype(work)
    key = _digest(pos, freqs, work, pairing)
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    angles = np.multiply.outer(pos, freqs)
    cos, sin = np.cos(angles), np.sin(angles)
    if pairing == "interleaved":
        cis = np.empty(angles.shape, dtype=np.result_type(work, np.complex64))
        cis.real, cis.imag = cos, sin
        tabs = (cis,)
    else:
        tabs = (np.concatenate([cos, cos], axis=-1).astype(work),
                np.concatenate([-sin, sin], axis=-1).astype(work))
    for t in tabs:
        t.setflags(write=False)
    nbytes = sum(t.nbytes for t in tabs)
    with _lock:
        if nbytes <= _cache_limit and key not in _cache:
            _cache[key] = tabs
            _cache_bytes += nbytes
            _evict()
    return tabs


def _distinct_rows(pos: np.ndarray) -> np.ndarray:
    """``pos`` with every axis along which it does not change cut to length 1 (heads, batch...)."""
    for ax in range(pos.ndim):
        if pos.shape[ax] > 1:
            first = pos[(slice(None),) * ax + (slice(0, 1),)]
            if np.array_equal(pos, np.broadcast_to(first, pos.shape)):
                pos = first
    return np.ascontiguousarray(pos)


def _groups(lead: tuple, pos: np.ndarray):
    """Merge the leading axes into runs along which positions vary (True) or are broadcast (False).

    ``pos`` has ``len(lead)`` axes, each of lead's length or 1.  Returns the merged leading shape
    and the table's shape (the run's length where positions vary, 1 where they are broadcast).
    """
    runs: list = []
    for n, p in zip(lead, pos.shape):
        if n == 1:
            continue
        varies = p > 1
        if runs and runs[-1][1] == varies:
            runs[-1][0] *= n
        else:
            runs.append([n, varies])
    return tuple(n for n, _ in runs), tuple(n if v else 1 for n, v in runs)


def _blocks(shape: tuple, rows: int):
    """Index tuples cutting leading shape ``shape`` into blocks of about ``rows`` rows (at least rows/2
    except at the end of an axis), so the number of blocks never depends on how the rows are shaped."""
    j, inner = len(shape), 1
    while j > 0 and inner * shape[j - 1] <= rows:
        j, inner = j - 1, inner * shape[j - 1]
    if j == 0:
        yield ()
        return
    step = max(1, rows // inner)
    for idx in np.ndindex(shape[:j - 1]):
        for s in range(0, shape[j - 1], step):
            yield idx + (slice(s, s + step),)


def rotate_into(x: np.ndarray, out: np.ndarray, pos: np.ndarray, freqs: np.ndarray, pairing: str, r: int, work):
    """Write RoPE of ``x`` ``(..., seq, d)`` into ``out`` (same shape, x's dtype), block by block.

    ``pos`` broadcasts to ``x.shape[:-1]``; ``freqs`` has ``r/2`` entries; ``work`` is the dtype the
    arithmetic runs in (float32 or float64).  ``out`` is C-contiguous (:func:`rope_ref.rotate` hands over
    a contiguous buffer when the caller's is strided).
    """
    work = np.dtype(work)
    if x.size == 0:
        return out
    lead, d = x.shape[:-1], x.shape[-1]
    pos = _distinct_rows(pos.reshape((1,) * (len(lead) - pos.ndim) + pos.shape))
    gshape, tshape = _groups(lead, pos)
    tabs = [t.reshape(tshape + t.shape[-1:]) for t in tables(pos.reshape(-1), freqs, work, pairing)]
    xg = x.reshape(gshape + (d,))                       # a view unless x's leading axes are scattered
    og = out.reshape(gshape + (d,))                    # a view: out is C-contiguous
    direct = x.dtype == work and og.dtype == work and xg.strides[-1] == work.itemsize
    if direct and pairing == "interleaved":
        _rotate_block(xg, og, tabs, pairing, r)        # no temporary at all: one complex multiply
        if r < d:
            og[..., r:] = xg[..., r:]
    else:
        for idx in _blocks(gshape, max(1, BLOCK_ELEMENTS // d)):
            tidx = tuple(i if t > 1 else (slice(None) if isinstance(i, slice) else 0) for i, t in zip(idx, tshape))
            xs, ys = xg[idx], og[idx]
            xw = xs if direct else np.array(xs, dtype=work, order="C")  # a block at a time: narrow dtypes, strides
            yw = ys if direct else xw
            _rotate_block(xw, yw, [t[tidx] for t in tabs], pairing, r)
            if r < d and direct:
                ys[..., r:] = xs[..., r:]
            if not direct:
                ys[...] = yw
    return out


def _rotate_block(xs, ys, tabs, pairing, r):
    """Eq 34 on a block ``(..., d)``; the first ``r`` features are rotated (``ys`` may be ``xs``)."""
    if pairing == "interleaved":
        (cis,) = tabs
        np.multiply(xs[..., :r].view(cis.dtype), cis, out=ys[..., :r].view(cis.dtype))
        return
    cos2, sin2 = tabs
    h, lead = r // 2, xs.shape[:-1]
    tmp = np.empty(lead + (r,), xs.dtype)
    swapped = xs[..., :r].reshape(lead + (2, h))[..., ::-1, :]  # (x_{i+h}, x_i): rotate_half without its sign
    np.multiply(swapped, sin2.reshape(sin2.shape[:-1] + (2, h)), out=tmp.reshape(lead + (2, h)))
    np.multiply(xs[..., :r], cos2, out=ys[..., :r])             # after the swap: ys may be xs
    np.add(ys[..., :r], tmp, out=ys[..., :r])
