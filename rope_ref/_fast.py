"""How :func:`rope_ref.rotate` streams eq 34: cos/sin tables of float64 angles, one row per distinct position,
cached; interleaved pairs as one complex multiply ``(x_2i + i x_2i+1) * (cos + i sin)``; half-split pairs as
``x * [cos, cos] + (halves swapped) * [-sin, sin]`` over blocks that stay in cache; threads for large arrays."""

from __future__ import annotations

import hashlib
import itertools
import math
import os
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor, wait

import numpy as np

from ._boundary import check_angle_range
from ._validate import check_no_overflow, check_nonnegative_int, check_positive_int, overflow_error

BLOCK_ELEMENTS = 1 << 16                 # elements per block: x, table, temporary stay in L2
DEFAULT_CACHE_LIMIT = 256 * 1024 * 1024  # bytes
# An entry's bytes beyond its tables' data (tracemalloc: ~380 for one table, ~440 for two; docs/oracle.md).
ENTRY_OVERHEAD = 512
TABLE_OVERHEAD = 128
THREADED_ELEMENTS = 1 << 20              # arrays at least this large are split across threads

_lock = threading.Lock()                 # guards the names below
_threads = min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
_pool_: list = []                        # [ThreadPoolExecutor] once made
_cache: OrderedDict = OrderedDict()      # digest -> tuple of read-only tables, least recently used first
_cache_bytes = 0                         # tables' data plus each entry's counted overhead: what the bound bounds
_cache_limit = DEFAULT_CACHE_LIMIT


def set_cache_limit(nbytes: int) -> int:
    """Bound the cos/sin table cache of :func:`rope_ref.rotate` to ``nbytes`` bytes (default 256 MiB, 0: no cache),
    least recently used out first, an entry counting ``ENTRY_OVERHEAD`` + ``TABLE_OVERHEAD`` a table; return the old."""
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
    """``{"entries": n, "nbytes": the tables' bytes, "limit": bound in bytes}`` of the table cache."""
    with _lock:
        nbytes = sum(t.nbytes for tabs in _cache.values() for t in tabs)
        return {"entries": len(_cache), "nbytes": nbytes, "limit": _cache_limit}


def _cost(tabs: tuple) -> int:
    """The bytes an entry holding ``tabs`` counts against the bound: their data and its overhead."""
    return sum(t.nbytes for t in tabs) + ENTRY_OVERHEAD + TABLE_OVERHEAD * len(tabs)


def set_num_threads(n: int) -> int:
    """Let :func:`rope_ref.rotate` split arrays of at least 2^20 elements across ``n`` threads; return the old ``n``.
    Default: the CPUs this process may use, at most 4.  Results do not depend on ``n``."""
    global _threads
    n = check_positive_int(n, "n", expected="a positive integer number of threads")
    with _lock:
        old, _threads = _threads, n
        _pool_.clear()              # a pool of n threads next time; calls holding the old one finish on it
    return old


if hasattr(os, "register_at_fork"):                     # a forked child has the pool but not its threads
    os.register_at_fork(after_in_child=_pool_.clear)


def _in_parts(fn, size: int, parts: int) -> None:
    """``fn(slice)`` over ``parts`` contiguous pieces of ``range(size)``, one per pool thread when there are several."""
    if parts <= 1:
        fn(slice(0, size))
        return
    with _lock:
        if not _pool_:
            _pool_.append(ThreadPoolExecutor(_threads, thread_name_prefix="rope_ref"))
        pool = _pool_[0]
    futures = [pool.submit(fn, slice(i * size // parts, (i + 1) * size // parts)) for i in range(parts)]
    wait(futures)               # every part finishes before anything is raised: no thread still writes the output
    for f in futures:
        f.result()


def _evict() -> None:
    """Drop least recently used tables until the cache fits its bound (caller holds the lock)."""
    global _cache_bytes
    while _cache and _cache_bytes > _cache_limit:
        _cache_bytes -= _cost(_cache.popitem(last=False)[1])


def tables(pos: np.ndarray, freqs: np.ndarray, work, pairing: str) -> tuple:
    """Read-only tables for positions ``pos`` ``(n, A)`` and ``freqs`` ``(h, A)``, cached: interleaved ->
    ``(cis,)``, complex ``(n, h)``; half -> ``([cos, cos], [-sin, sin])``, each ``(n, 2h)`` of dtype ``work``; of
    float64 angles sum_a freqs[:, a] pos[:, a] in axis order (as :func:`rope_ref.rotate_elementwise`), then cast.
    """
    global _cache_bytes
    digest = hashlib.blake2b(repr((pos.shape, pos.dtype.str, freqs.shape, work.str, pairing)).encode(), digest_size=32)
    digest.update(np.ascontiguousarray(pos).data)
    digest.update(np.ascontiguousarray(freqs).data)
    key = digest.digest()
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    h = freqs.shape[0]
    if pairing == "interleaved":
        tabs = (np.empty((len(pos), h), np.result_type(work, np.complex64)),)
    else:
        tabs = (np.empty((len(pos), 2 * h), work), np.empty((len(pos), 2 * h), work))

    def fill(rows: slice) -> None:                     # the angles in float64, in axis order, then cos and sin
        angles = sum(np.multiply.outer(pos[rows, a], freqs[:, a]) for a in range(freqs.shape[1]))
        cos, sin = np.cos(angles), np.sin(angles)
        if pairing == "interleaved":
            tabs[0].real[rows], tabs[0].imag[rows] = cos, sin
        else:
            tabs[0][rows, :h], tabs[0][rows, h:] = cos, cos
            tabs[1][rows, :h], tabs[1][rows, h:] = -sin, sin

    angles_per_thread = max(1, THREADED_ELEMENTS // 16)     # float64 cos and sin: 15-30 ns an angle
    _in_parts(fill, len(pos), min(_threads, -(-len(pos) * h // angles_per_thread)))
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
    """:func:`rope_ref.rotate` on checked arguments through :func:`rotate_into`, with a C-contiguous buffer when
    ``out`` is strided and overflow refused; ``name`` is what an overflow error calls ``x`` ("q", "k")."""
    check_angle_range(pos, freqs)
    if freqs.ndim == 1:                                         # one axis: A = 1 (the same angles, bit for bit)
        pos, freqs = pos[None], freqs[:, None]
    work = np.dtype(np.float64 if x.dtype == np.float64 else np.float32)  # angles are float64 either way
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
    """Write eq 34 of ``x`` ``(..., seq, d)`` into C-contiguous ``out`` (same shape, x's dtype), block by block:
    ``pos`` ``(A,) + P``, each ``pos[a]`` broadcasting to ``x.shape[:-1]``; ``freqs`` ``(r/2, A)``; ``work``: the
    dtype the arithmetic runs in (float32 or float64)."""
    if x.size == 0:
        return
    lead, d, n_axes = x.shape[:-1], x.shape[-1], pos.shape[0]
    pos = pos.reshape((n_axes,) + (1,) * (len(lead) + 1 - pos.ndim) + pos.shape[1:])
    pos = pos.transpose(tuple(range(1, pos.ndim)) + (0,))          # axes last: P + (A,)
    pos = _distinct_rows(pos)                            # P + (A,), P of len(lead) axes
    # lead merged into runs of axes along which pos varies or is broadcast; the table's run length 1 where it is
    axes = [(n, p > 1) for n, p in zip(lead, pos.shape) if n > 1]
    runs = [(math.prod(n for n, _ in run), varies) for varies, run in itertools.groupby(axes, key=lambda a: a[1])]
    row_shape, table_shape = tuple(n for n, _ in runs), tuple(n if varies else 1 for n, varies in runs)
    tabs = [t.reshape(table_shape + t.shape[-1:]) for t in tables(pos.reshape(-1, n_axes), freqs, work, pairing)]
    x_rows = x.reshape(row_shape + (d,))                # a view unless x's leading axes are scattered
    out_rows = out.reshape(row_shape + (d,))            # a view: out is C-contiguous
    direct = x.dtype == work and out_rows.dtype == work and x_rows.strides[-1] == work.itemsize
    threads = _threads if x.size >= THREADED_ELEMENTS else 1
    # Threads take blocks twice as large (fewer GIL hand-overs: 20-35 % faster on 2 cores, benchmarks/bench.py).
    rows = max(1, BLOCK_ELEMENTS * (2 if threads > 1 else 1) // d)
    if direct and pairing == "interleaved":            # no temporaries: one complex multiply per thread
        rows = max(1, -(-math.prod(row_shape) // threads))
    blocks = list(_blocks(row_shape, rows))
    size, errors = rows * d, np.geterr()               # a worker thread does not inherit the caller's errstate

    def rotate_blocks(part: slice) -> None:
        """Eq 34 on ``x_rows[i]`` into ``out_rows[i]`` for each block ``i`` of ``blocks[part]``."""
        scratch = np.empty(0 if direct and pairing == "interleaved" else 2 * size, work)  # the blocks' temporaries
        with np.errstate(**errors):
            for index in blocks[part]:
                table_index = tuple(i if n > 1 else (slice(None) if isinstance(i, slice) else 0)
                                    for i, n in zip(index, table_shape))
                x_block, out_block = x_rows[index], out_rows[index]
                tmp = scratch[:x_block.size].reshape(x_block.shape) if scratch.size else None
                x_work, out_work = x_block, out_block
                if not direct:                             # narrow dtypes, strided x: convert a block at a time
                    x_work = out_work = scratch[size:size + x_block.size].reshape(x_block.shape)
                    x_work[...] = x_block
                _rotate_block(x_work, out_work, [t[table_index] for t in tabs], pairing, r, tmp)
                if not direct:
                    out_block[...] = out_work
                elif r < x_block.shape[-1]:
                    out_block[..., r:] = x_block[..., r:]

    _in_parts(rotate_blocks, len(blocks), min(threads, len(blocks)))


def _rotate_block(x_block, out_block, tabs, pairing, r, tmp):
    """Eq 34 on the first ``r`` features of a block ``(..., d)`` (``out_block`` may be ``x_block``; ``tmp``:
    scratch of its shape, half pairing only)."""
    if pairing == "interleaved":
        (cis,) = tabs
        np.multiply(x_block[..., :r].view(cis.dtype), cis, out=out_block[..., :r].view(cis.dtype))
        return
    cos2, sin2 = tabs
    h, lead = r // 2, x_block.shape[:-1]
    tmp = tmp[..., :r].view()
    tmp.shape = lead + (2, h)                                   # a view, never a copy (that would raise)
    np.copyto(tmp, x_block[..., :r].reshape(lead + (2, h))[..., ::-1, :])    # (x_{i+h}, x_i): unsigned rotate_half
    tmp = tmp.reshape(lead + (r,))                              # (a copy then a contiguous multiply beats
    np.multiply(tmp, sin2, out=tmp)                             #  one multiply reading the swapped view)
    np.multiply(x_block[..., :r], cos2, out=out_block[..., :r])   # after the swap: out_block may be x_block
    np.add(out_block[..., :r], tmp, out=out_block[..., :r])
