"""The machinery behind :func:`rope_ref.rotate`: cached cos/sin tables and a blocked loop.

The math is eq 34 and nothing else; this module only decides *how* to stream it:

* leading axes are flattened into rows; the positions are reduced to their distinct rows
  (an axis along which they do not change, e.g. heads, is dropped) and one cos/sin table is
  computed per distinct position from float64 angles, then cast;
* interleaved pairs are multiplied as complex numbers in one ufunc call (per thread)
  (``(x_2i + i x_2i+1) * (cos + i sin)`` is exactly eq 34);
* half-split pairs use ``x * [cos, cos] + (halves swapped) * [-sin, sin]`` (rotate_half, with its
  sign carried by the table), over blocks of rows small enough that the temporary stays in cache;
  the halves are swapped by a copy, so that every multiply reads contiguous memory;
  float16/bfloat16 are converted to float32 block by block the same way;
* arrays of 2^20 elements or more are split into runs of blocks, one per thread (NumPy releases
  the GIL inside each ufunc call): see :func:`set_num_threads`;
* tables are cached: see :func:`set_cache_limit`.
"""

from __future__ import annotations

import hashlib
import math
import os
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ._boundary import check_angle_range
from ._validate import check_no_overflow, check_nonnegative_int, check_positive_int, overflow_error

BLOCK_ELEMENTS = 1 << 16                 # elements per block: x, table, temporary stay in L2
DEFAULT_CACHE_LIMIT = 256 * 1024 * 1024  # bytes
# What an entry holds beyond its tables' data, counted against the bound so that it bounds process memory
# even for one-position tables (a decode loop at d = 2 keeps 16-byte tables): tracemalloc measures ~380 bytes
# for an entry of one table and ~440 for two (digest, tuple, array objects, the dict's slot; NumPy 2, CPython
# 3.11-3.13); counted with room for malloc's own headers.
ENTRY_OVERHEAD = 512
TABLE_OVERHEAD = 128
THREADED_ELEMENTS = 1 << 20              # arrays at least this large are split across threads

_lock = threading.Lock()                 # guards the four names below
_threads = min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
_pool_: list = []                        # [(workers, ThreadPoolExecutor)] once made
_cache: OrderedDict = OrderedDict()      # digest -> tuple of read-only tables, least recently used first
_cache_bytes = 0                         # tables' data plus each entry's counted overhead: what the bound bounds
_cache_limit = DEFAULT_CACHE_LIMIT


def set_cache_limit(nbytes: int) -> int:
    """Bound the cos/sin table cache of :func:`rope_ref.rotate` to ``nbytes`` bytes; return the old bound.

    The cache keeps the most recently used tables (keyed by a BLAKE2b digest of the positions,
    frequencies, dtype and pairing, never a copy of the positions) and evicts the least recently
    used ones to stay within the bound.  The bound counts each entry's tables plus ``ENTRY_OVERHEAD +
    TABLE_OVERHEAD`` bytes per table (the digest, the array objects, the dict's slot), so it bounds the
    memory the cache holds for any table size, one-position decode tables included (within ~1.3x: malloc's
    own headers).  A table larger than the bound is computed and not kept.  ``0`` disables caching.
    Default 256 MiB.  Thread-safe.
    """
    global _cache_limit
    nbytes = check_nonnegative_int(nbytes, "nbytes", "a non-negative integer number of bytes")
    with _lock:
        old, _cache_limit = _cache_limit, nbytes
        _evict()
    return old


def clear_cache() -> None:
    """Free every cached cos/sin table (the next :func:`rope_ref.rotate` call recomputes its table)."""
    global _cache_bytes
    with _lock:
        _cache.clear()
        _cache_bytes = 0


def cache_info() -> dict:
    """``{"entries": n, "nbytes": the tables' bytes, "limit": bound in bytes}`` of the table cache (the bound
    holds for nbytes plus the counted overhead of each entry: see :func:`set_cache_limit`)."""
    with _lock:
        nbytes = sum(t.nbytes for tabs in _cache.values() for t in tabs)
        return {"entries": len(_cache), "nbytes": nbytes, "limit": _cache_limit}


def _cost(tabs: tuple) -> int:
    """The bytes an entry holding ``tabs`` counts against the bound: their data and its overhead."""
    return sum(t.nbytes for t in tabs) + ENTRY_OVERHEAD + TABLE_OVERHEAD * len(tabs)


def set_num_threads(n: int) -> int:
    """Let :func:`rope_ref.rotate` split arrays of at least 2^20 elements across ``n`` threads; return the old ``n``.

    NumPy releases the GIL inside each ufunc call, so blocks of rows run in parallel.  Default: the
    number of CPUs this process may run on, at most 4.  ``1`` runs everything in the calling thread.
    Results do not depend on ``n`` (every element is computed by the same operations either way).
    """
    global _threads
    n = check_positive_int(n, "n", expected="a positive integer number of threads")
    with _lock:
        old, _threads = _threads, n
        if _pool_ and _pool_[0][0] < _threads:
            _pool_.clear()          # a larger pool next time; calls holding the old one finish on it
    return old


def _pool() -> ThreadPoolExecutor:
    with _lock:
        if not _pool_:
            _pool_.append((_threads, ThreadPoolExecutor(_threads, thread_name_prefix="rope_ref")))
        return _pool_[0][1]


if hasattr(os, "register_at_fork"):                     # a forked child has the pool but not its threads
    os.register_at_fork(after_in_child=_pool_.clear)


def _in_parts(fn, size: int, parts: int) -> None:
    """``fn(slice)`` over ``parts`` contiguous pieces of ``range(size)``, one per pool thread when there
    are several (NumPy releases the GIL inside each ufunc call, so they run in parallel)."""
    if parts <= 1:
        fn(slice(0, size))
        return
    pool = _pool()
    futures = [pool.submit(fn, slice(i * size // parts, (i + 1) * size // parts)) for i in range(parts)]
    for f in futures:           # every part finishes before anything is raised: no thread is still
        f.exception()           # writing into the output when the caller sees an error
    for f in futures:
        f.result()


def _evict() -> None:
    """Drop least recently used tables until the cache fits its bound (caller holds the lock)."""
    global _cache_bytes
    while _cache and _cache_bytes > _cache_limit:
        _cache_bytes -= _cost(_cache.popitem(last=False)[1])


def _digest(pos: np.ndarray, freqs: np.ndarray, work: np.dtype, pairing: str) -> bytes:
    h = hashlib.blake2b(digest_size=32)
    h.update(repr((pos.shape, pos.dtype.str, freqs.shape, work.str, pairing)).encode())
    h.update(np.ascontiguousarray(pos).data)
    h.update(np.ascontiguousarray(freqs).data)
    return h.digest()


def tables(pos: np.ndarray, freqs: np.ndarray, work, pairing: str) -> tuple:
    """Read-only tables for positions ``pos`` of shape ``(n, A)`` and ``freqs`` ``(h, A)``, cached.

    interleaved -> ``(cis,)``, complex ``(n, h)``; half -> (``[cos, cos]``, ``[-sin, sin]``),
    each ``(n, 2h)`` of dtype ``work``.  cos and sin are taken of float64 angles sum_a freqs[:, a] pos[:, a]
    (summed in axis order, as :func:`rope_ref.rotate_elementwise` does), then cast.
    """
    global _cache_bytes
    work = np.dtype(work)
    key = _digest(pos, freqs, work, pairing)
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    flat, h = pos, freqs.shape[0]
    if pairing == "interleaved":
        tabs = (np.empty((len(flat), h), np.result_type(work, np.complex64)),)
    else:
        tabs = (np.empty((len(flat), 2 * h), work), np.empty((len(flat), 2 * h), work))

    def fill(rows: slice) -> None:                     # the angles in float64, then cos and sin
        angles = np.multiply.outer(flat[rows, 0], freqs[:, 0])
        for a in range(1, freqs.shape[1]):
            angles += np.multiply.outer(flat[rows, a], freqs[:, a])
        cos, sin = np.cos(angles), np.sin(angles)
        if pairing == "interleaved":
            tabs[0].real[rows], tabs[0].imag[rows] = cos, sin
        else:
            tabs[0][rows, :h], tabs[0][rows, h:] = cos, cos
            tabs[1][rows, :h], tabs[1][rows, h:] = -sin, sin

    angles_per_thread = max(1, THREADED_ELEMENTS // 16)     # float64 cos and sin: 15-30 ns an angle
    _in_parts(fill, len(flat), min(_threads, -(-len(flat) * h // angles_per_thread)))
    for t in tabs:
        t.setflags(write=False)
    with _lock:
        if _cost(tabs) <= _cache_limit and key not in _cache:
            _cache[key] = tabs
            _cache_bytes += _cost(tabs)
            _evict()
    return tabs


def _distinct_rows(pos: np.ndarray) -> np.ndarray:
    """``pos`` ``P + (A,)`` with every axis of P along which it does not change cut to length 1 (heads, batch...)."""
    for ax in range(pos.ndim - 1):
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


def rotate(x: np.ndarray, pos: np.ndarray, freqs: np.ndarray, pairing: str, r: int, out=None, name: str = "x"):
    """:func:`rope_ref.rotate` on checked arguments (``x`` of an accepted dtype, ``pos`` and ``freqs`` as its
    boundary hands them over, ``out`` checked or None); ``name`` is what an overflow error calls ``x``
    (attention passes "q" or "k").

    Streams eq 34 through :func:`rotate_into`; around it: a C-contiguous buffer when ``out`` is strided,
    float32/64 overflow caught as a FloatingPointError (free when nothing overflows), and float16's overflow
    (rounded without a flag) found by looking for inf in the result.
    """
    check_angle_range(pos, freqs)
    if freqs.ndim == 1:                                         # one axis: A = 1 (the same angles, bit for bit)
        pos, freqs = pos[None], freqs[:, None]
    work = np.float64 if x.dtype == np.float64 else np.float32  # angles are float64 either way
    out = np.empty(x.shape, dtype=x.dtype) if out is None else out
    buf = out if out.flags.c_contiguous else np.empty(x.shape, dtype=x.dtype)  # rotate_into writes C-contiguous only
    try:    # float32/64 arithmetic that overflows raises here, at no cost when it does not
        with np.errstate(over="raise", invalid="ignore"):
            rotate_into(x, buf, pos, freqs, pairing, r, work)
    except FloatingPointError:
        if np.all(np.isfinite(x)):                           # finite x overflowed: the result would hold inf
            raise overflow_error(x.dtype, name) from None
        with np.errstate(over="ignore", invalid="ignore"):  # x holds inf or NaN: its rows are non-finite anyway
            rotate_into(x, buf, pos, freqs, pairing, r, work)
    if x.dtype == np.float16:  # rounded to float16 without a flag: a pair's norm > 65504 gives inf
        check_no_overflow(buf, x, name)
    if buf is not out:
        out[...] = buf
    return out


def rotate_into(x: np.ndarray, out: np.ndarray, pos: np.ndarray, freqs: np.ndarray, pairing: str, r: int, work):
    """Write RoPE of ``x`` ``(..., seq, d)`` into ``out`` (same shape, x's dtype), block by block.

    ``pos`` has shape ``(A,) + P``, each ``pos[a]`` broadcasting to ``x.shape[:-1]``; ``freqs`` is ``(r/2, A)``
    (pair j turns by sum_a freqs[j, a] pos[a]); ``work`` is the dtype the arithmetic runs in (float32 or float64).
    ``out`` is C-contiguous (:func:`rope_ref.rotate` hands over a contiguous buffer when the caller's is strided).
    """
    work = np.dtype(work)
    if x.size == 0:
        return out
    lead, d, n_axes = x.shape[:-1], x.shape[-1], pos.shape[0]
    pos = pos.reshape((n_axes,) + (1,) * (len(lead) + 1 - pos.ndim) + pos.shape[1:])
    pos = pos.transpose(tuple(range(1, pos.ndim)) + (0,))          # axes last: P + (A,)
    pos = _distinct_rows(pos)                            # P + (A,), P of len(lead) axes
    gshape, tshape = _groups(lead, pos)
    tabs = [t.reshape(tshape + t.shape[-1:]) for t in tables(pos.reshape(-1, n_axes), freqs, work, pairing)]
    xg = x.reshape(gshape + (d,))                       # a view unless x's leading axes are scattered
    og = out.reshape(gshape + (d,))                    # a view: out is C-contiguous
    direct = x.dtype == work and og.dtype == work and xg.strides[-1] == work.itemsize
    threads = _threads if x.size >= THREADED_ELEMENTS else 1
    # Threads take blocks twice as large: each ufunc call hands the GIL over, and on 2 cores blocks of
    # 2^17 elements beat 2^16 by 20-35 % (float32 half, bfloat16, float16; benchmarks/bench.py).
    rows = max(1, BLOCK_ELEMENTS * (2 if threads > 1 else 1) // d)
    if direct and pairing == "interleaved":            # no temporaries: one complex multiply per thread
        rows = max(1, -(-math.prod(gshape) // threads))
    blocks = list(_blocks(gshape, rows))
    args = (xg, og, tabs, tshape, pairing, r, work, direct, rows * d, np.geterr())
    _in_parts(lambda part: _rotate_blocks(blocks[part], *args), len(blocks), min(threads, len(blocks)))
    return out


def _rotate_blocks(blocks, xg, og, tabs, tshape, pairing, r, work, direct, size, errors):
    """Eq 34 on ``xg[i]`` into ``og[i]`` for each index ``i`` in ``blocks`` (each at most ``size`` elements)."""
    scratch = np.empty(0 if direct and pairing == "interleaved" else 2 * size, work)  # every block's temporaries
    with np.errstate(**errors):                        # a worker thread does not inherit the caller's errstate
        for xi in blocks:
            ti = tuple(i if t > 1 else (slice(None) if isinstance(i, slice) else 0) for i, t in zip(xi, tshape))
            xs, ys = xg[xi], og[xi]
            xw, yw, tmp = xs, ys, scratch[:xs.size].reshape(xs.shape) if scratch.size else None
            if not direct:                             # narrow dtypes, strided x: convert a block at a time
                xw = yw = scratch[size:size + xs.size].reshape(xs.shape)
                xw[...] = xs
            _rotate_block(xw, yw, [t[ti] for t in tabs], pairing, r, tmp)
            if not direct:
                ys[...] = yw
            elif r < xs.shape[-1]:
                ys[..., r:] = xs[..., r:]


def _rotate_block(xs, ys, tabs, pairing, r, tmp):
    """Eq 34 on a block ``(..., d)``; the first ``r`` features are rotated (``ys`` may be ``xs``).

    ``tmp`` is scratch of the block's shape (half pairing only)."""
    if pairing == "interleaved":
        (cis,) = tabs
        np.multiply(xs[..., :r].view(cis.dtype), cis, out=ys[..., :r].view(cis.dtype))
        return
    cos2, sin2 = tabs
    h, lead = r // 2, xs.shape[:-1]
    tmp = tmp[..., :r].view()
    tmp.shape = lead + (2, h)                                   # a view, never a copy (that would raise)
    np.copyto(tmp, xs[..., :r].reshape(lead + (2, h))[..., ::-1, :])  # (x_{i+h}, x_i): rotate_half, unsigned
    tmp = tmp.reshape(lead + (r,))                              # (a copy then a contiguous multiply beats
    np.multiply(tmp, sin2, out=tmp)                             #  one multiply reading the swapped view)
    np.multiply(xs[..., :r], cos2, out=ys[..., :r])             # after the swap: ys may be xs
    np.add(ys[..., :r], tmp, out=ys[..., :r])
