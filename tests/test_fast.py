"""The fast path (rope_ref._fast behind rotate) against the plain form of eq 34, and its table cache.

rotate_elementwise is written independently (float64 cos/sin, no cache, no blocking, no complex
numbers); every leading shape, positions layout, pairing, rotary_dim, dtype and out= layout of
rotate must match it.  Block sizes are shrunk so that every test crosses many block boundaries.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import sys
import threading
import tracemalloc
import warnings
import weakref
import zlib

import ml_dtypes
import numpy as np
import pytest

import rope_ref as rr
from rope_ref import _fast

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.float16), BF16]
# (x shape, positions shape or None for the default arange(seq))
LAYOUTS = [
    ((16,), ()),                    # one vector, one position
    ((16,), None),                  # one vector, default position 0
    ((7, 16), None),                # (seq, d)
    ((3, 5, 7, 16), None),          # (batch, heads, seq, d), positions shared by all heads
    ((3, 5, 7, 16), (7,)),
    ((3, 5, 7, 16), (3, 1, 7)),     # per sequence, broadcast over heads
    ((3, 5, 7, 16), (3, 5, 7)),     # per row
    ((3, 5, 7, 16), (3, 5, 1)),     # one position per (batch, head)
    ((40, 1, 16), None),            # decode: many sequences of one token, all at position 0
    ((40, 1, 16), (40, 1)),         # decode: each sequence at its own position
    ((5, 8, 1, 16), (5, 1, 1)),     # decode with heads: per sequence, broadcast over heads
    ((1, 40, 16), (1, 40)),
    ((2, 1, 3, 1, 16), (1, 1, 3, 1)),
]


def tolerance(dtype):
    """A few units in the last place of the dtype (the two forms round differently)."""
    return {np.float64: 1e-12, np.float32: 4e-6, np.float16: 2e-3}.get(np.dtype(dtype).type, 2e-2)


def assert_matches_plain(x, positions, **kw):
    """rotate == rotate_elementwise, with and without out= (contiguous and strided); x untouched."""
    x_before = x.copy()
    want = rr.rotate_elementwise(x, positions, **kw).astype(np.float64)
    scale = max(1.0, float(np.abs(x.astype(np.float64)).max()))
    tol = tolerance(x.dtype) * scale
    got = rr.rotate(x, positions, **kw)
    assert got.shape == x.shape and got.dtype == x.dtype and not np.shares_memory(got, x)
    np.testing.assert_allclose(got.astype(np.float64), want, atol=tol, rtol=0)
    out = np.full_like(x, np.nan)
    assert rr.rotate(x, positions, out=out, **kw) is out
    np.testing.assert_array_equal(out, got)
    strided = np.full(x.shape[:-1] + (2 * x.shape[-1],), np.nan, dtype=x.dtype)[..., ::2]
    assert rr.rotate(x, positions, out=strided, **kw) is strided
    np.testing.assert_array_equal(strided, got)
    np.testing.assert_array_equal(x, x_before)


@pytest.fixture(params=[(_fast.BLOCK_ELEMENTS, 1), (48, 1), (48, 3)],
                ids=["default-blocks", "tiny-blocks", "tiny-blocks-3-threads"])
def blocks(request, monkeypatch):
    """Block size and thread count; threads start at any size, so small tests split across them."""
    size, threads = request.param
    monkeypatch.setattr(_fast, "BLOCK_ELEMENTS", size)
    monkeypatch.setattr(_fast, "THREADED_ELEMENTS", 0)
    old = rr.set_num_threads(threads)
    yield size
    rr.set_num_threads(old)


@pytest.mark.parametrize("pairing", ["interleaved", "half"])
@pytest.mark.parametrize("shape,pshape", LAYOUTS)
def test_every_leading_shape_matches_the_plain_form(blocks, shape, pshape, pairing):
    rng = np.random.default_rng(zlib.crc32(repr((shape, pshape, pairing)).encode()))   # same data every run
    positions = None if pshape is None else rng.uniform(-50, 3000, pshape)
    for dtype in DTYPES:
        x = (rng.standard_normal(shape) * 3).astype(dtype)
        assert_matches_plain(x, positions, pairing=pairing)
        assert_matches_plain(x, positions, pairing=pairing, rotary_dim=6, base=500.0)


@pytest.mark.parametrize("pairing", ["interleaved", "half"])
def test_strided_and_reversed_inputs(blocks, pairing):
    rng = np.random.default_rng(7)
    big = rng.standard_normal((4, 9, 32))
    for x in [big[:, ::2, :16], big[::-1, :, ::2], np.asfortranarray(big), big.transpose(1, 0, 2)]:
        for dtype in (np.float64, np.float32, BF16):
            assert_matches_plain(np.asarray(x, dtype=dtype) if dtype != np.float64 else x,
                                 rng.uniform(0, 100, x.shape[-2]), pairing=pairing)


def test_rotate_complex_matches_the_plain_form():
    rng = np.random.default_rng(3)
    for shape, pshape in LAYOUTS:
        positions = None if pshape is None else rng.uniform(0, 3000, pshape)
        for dtype in DTYPES:
            x = rng.standard_normal(shape).astype(dtype)
            got = rr.rotate_complex(x, positions)
            assert got.dtype == x.dtype and got.shape == x.shape and not np.shares_memory(got, x)
            want = rr.rotate_elementwise(x, positions).astype(np.float64)
            np.testing.assert_allclose(got.astype(np.float64), want, atol=tolerance(dtype) * 4, rtol=0)


def test_blocks_cover_every_row_once_in_few_blocks():
    rng = np.random.default_rng(0)
    for _ in range(200):
        shape = tuple(int(n) for n in rng.integers(1, 9, rng.integers(0, 5)))
        rows = int(rng.integers(1, 40))
        seen = np.zeros(shape, int)
        blocks = list(_fast._blocks(shape, rows))
        for idx in blocks:
            seen[idx] += 1
            assert seen[idx].size <= max(rows, 1)
        assert (seen == 1).all(), (shape, rows)
        total = int(np.prod(shape))
        # each block but those ending an axis holds at least rows/2 rows: at most ~2x the ideal count
        assert len(blocks) <= 2 * -(-total // rows) + int(np.prod(shape[:-1] or (1,))), (shape, rows, len(blocks))


def test_tables_are_computed_once_per_distinct_position_row():
    rr.clear_cache()
    x = np.ones((32, 100, 16), np.float32)
    rr.rotate(x, np.broadcast_to(np.arange(100.0), (32, 100)).copy())   # the same row for every head
    # one complex64 table of (100 positions, 8 pairs): 8 bytes each -- not one per head
    assert _fast.cache_info() == {"entries": 1, "nbytes": 100 * 8 * 8, "limit": _fast.cache_info()["limit"]}
    assert all(isinstance(k, bytes) and len(k) == 32 for k in _fast._cache)   # a digest, not the positions


def test_the_cache_never_confuses_frequencies_dtypes_or_pairings():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 6, 16))
    pos = rng.uniform(0, 50, 6)
    for kw in [{}, {"base": 500.0}, {"rotary_dim": 8}, {"pairing": "half"}, {"inv_freq": rr.frequencies(16) / 3},
               {"pairing": "half", "rotary_dim": 8}]:
        for dtype in (np.float64, np.float32):
            xd = x.astype(dtype)
            np.testing.assert_allclose(rr.rotate(xd, pos, **kw), rr.rotate_elementwise(xd, pos, **kw),
                                       atol=tolerance(dtype) * 4, err_msg=str((kw, dtype)))
    # the same position bytes in another shape are other positions for another x
    np.testing.assert_allclose(rr.rotate(x, pos.reshape(1, 6)), rr.rotate_elementwise(x, pos), atol=1e-12)


@pytest.fixture
def cache_limit():
    """Restore the cache bound and empty the cache after a test that changes them."""
    old = _fast.cache_info()["limit"]
    yield
    rr.set_cache_limit(old)
    rr.clear_cache()


def test_cache_stays_within_its_byte_bound(cache_limit):
    assert _fast.DEFAULT_CACHE_LIMIT <= 256 * 2**20
    limit = 1 << 20
    assert rr.set_cache_limit(limit) == _fast.DEFAULT_CACHE_LIMIT
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3000, 32)).astype(np.float32)
    for i in range(12):                         # complex64 (3000, 16): 384 KiB; half: 2 x 384 KiB
        pos = rng.uniform(0, 1e4, 3000)
        for pairing in ("interleaved", "half"):
            rr.rotate(x, pos, pairing=pairing)
            info = _fast.cache_info()
            assert 0 < info["nbytes"] <= limit and info["entries"] >= 1, info
    big = rng.uniform(0, 1e4, 20000)            # a (20000, 16) complex64 table: 2.4 MiB > the bound
    rr.clear_cache()
    np.testing.assert_allclose(rr.rotate(np.ones((20000, 32)), big), rr.rotate_elementwise(np.ones((20000, 32)), big),
                               atol=1e-12)
    assert _fast.cache_info()["entries"] == 0   # computed, not kept
    rr.set_cache_limit(0)                       # 0: no caching at all, same results
    np.testing.assert_allclose(rr.rotate(x, pos), rr.rotate_elementwise(x, pos), atol=4e-5)
    assert _fast.cache_info()["nbytes"] == 0


@pytest.mark.slow
def test_clear_cache_frees_the_tables():
    rr.clear_cache()
    rr.rotate(np.ones((50, 8)))
    assert _fast.cache_info()["nbytes"] == 50 * 4 * 16                 # complex128 (50, 4)
    refs = [weakref.ref(t) for tabs in _fast._cache.values() for t in tabs]
    rr.clear_cache()
    gc.collect()
    assert _fast.cache_info() == {"entries": 0, "nbytes": 0, "limit": _fast.cache_info()["limit"]}
    assert refs and all(r() is None for r in refs)                     # nothing else holds them


@pytest.mark.parametrize("bad,err", [(-1, ValueError), (1.5, TypeError), ("1e6", TypeError), (True, TypeError),
                                     (None, TypeError)])
def test_set_cache_limit_refuses_bad_values(bad, err):
    with pytest.raises(err, match="nbytes"):
        rr.set_cache_limit(bad)


@pytest.mark.slow
def test_eight_threads_under_a_tiny_switch_interval(cache_limit):
    # Small arrays (the time goes to the cache's bookkeeping) and a bound of two tables, so threads
    # evict what others are reading: the old cache raised KeyError at move_to_end here.
    table_bytes = 4 * 4 * 8                           # complex64 (4 positions, 4 pairs); half: 2 x 4 x 8 x 4
    rr.set_cache_limit(2 * (table_bytes + _fast.ENTRY_OVERHEAD + _fast.TABLE_OVERHEAD))   # entries count their overhead
    rng = np.random.default_rng(4)
    cases = []
    for i in range(12):
        x = rng.standard_normal((2, 4, 8)).astype(np.float32 if i % 2 else np.float64)
        pos, pairing = rng.uniform(0, 1000, 4), ("interleaved", "half")[i % 3 == 0]
        cases.append((x, pos, pairing, rr.rotate_elementwise(x, pos, pairing=pairing)))
    errors, bad = [], []

    def worker(seed):
        order = np.random.default_rng(seed)
        try:
            for _ in range(1500):
                x, pos, pairing, want = cases[order.integers(len(cases))]
                got = rr.rotate(x, pos, pairing=pairing)
                if not np.allclose(got, want, atol=tolerance(x.dtype) * 8, rtol=0):
                    bad.append(pairing)
        except Exception as e:                                     # noqa: BLE001 - reported below
            errors.append(repr(e))

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert not errors, errors[:3]
    assert not bad
    assert _fast.cache_info()["nbytes"] <= 2 * table_bytes


@pytest.mark.slow                                     # 4000 calls under tracemalloc per case: 1.5 s each
@pytest.mark.parametrize("d", [2, 128])
@pytest.mark.parametrize("pairing", ["interleaved", "half"])
def test_the_cache_bound_bounds_the_memory_it_holds_in_a_decode_loop(cache_limit, d, pairing):
    """One new position per call (decoding): each entry holds a tiny table plus its own objects.  The
    memory the cache holds (tracemalloc: every Python and NumPy allocation) stays within 1.5x the bound; the
    tables alone were counted before, so at d = 2 it held ~20x the bound."""
    limit = 64 * 1024
    rr.set_cache_limit(limit)
    rr.clear_cache()
    x = np.ones((1, 1, d))
    rr.rotate(x, [0.5], pairing=pairing)               # first-call allocations (theta cache etc.) before measuring
    rr.clear_cache()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(4000):
            rr.rotate(x, [i + 0.25], pairing=pairing)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    info = _fast.cache_info()
    assert info["entries"] >= 10                       # the cache is in use, and full (evicting)
    assert limit / 2 < held <= 1.5 * limit, (held, info)


def test_a_planted_bug_is_caught(monkeypatch):
    """The comparison above fails when the fast path reuses one position row for all (a real risk of
    reducing positions to their distinct rows)."""
    rr.clear_cache()
    monkeypatch.setattr(_fast, "_distinct_rows", lambda pos: np.ascontiguousarray(pos[..., :1, :]))  # P + (A,)
    x = np.random.default_rng(5).standard_normal((3, 5, 7, 16))
    with pytest.raises(AssertionError):
        assert_matches_plain(x, np.arange(7.0), pairing="half")
    rr.clear_cache()


@pytest.mark.parametrize("bad,error", [(0, ValueError), (-2, ValueError), (1.5, TypeError), (True, TypeError),
                                       ("2", TypeError), (None, TypeError)])
def test_set_num_threads_names_bad_values(bad, error):
    old = rr.set_num_threads(2)
    try:
        with pytest.raises(error, match="n must be a positive integer number of threads"):
            rr.set_num_threads(bad)
        assert rr.set_num_threads(old) == 2          # the bad call changed nothing
    finally:
        rr.set_num_threads(old)


def test_worker_threads_keep_the_callers_errstate(monkeypatch):
    """float16 overflow is reported as rope_ref's ValueError, not a RuntimeWarning from a worker thread."""
    monkeypatch.setattr(_fast, "THREADED_ELEMENTS", 0)
    monkeypatch.setattr(_fast, "BLOCK_ELEMENTS", 64)
    old = rr.set_num_threads(3)
    x = np.full((8, 64, 16), 60000.0, np.float16)       # each pair's norm is 84853 > 65504
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(ValueError, match="overflow"):
                rr.rotate(x, np.full(64, 0.7))
    finally:
        rr.set_num_threads(old)


def test_an_error_in_one_thread_is_raised_after_every_part_has_finished():
    """No worker may still be writing into the caller's output when the caller sees the error."""
    import time
    old = rr.set_num_threads(2)
    finished = []

    def part(rows):
        if rows.start == 0:
            raise FloatingPointError("planted")
        time.sleep(0.2)                                 # the other part is still running when part 0 fails
        finished.append(rows)

    try:
        with pytest.raises(FloatingPointError, match="planted"):
            _fast._in_parts(part, 10, 2)
        assert finished == [slice(5, 10)]
    finally:
        rr.set_num_threads(old)


def _rotate_in_child(queue):
    x = np.ones((4, 512, 1024), np.float32)
    queue.put(float(rr.rotate(x, pairing="half")[0, 3, 0]))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_can_rotate_after_the_parent_used_the_threads():
    """A forked child inherits the parent's thread pool object but not its threads; it must not hang."""
    old = rr.set_num_threads(2)
    try:
        rr.rotate(np.ones((4, 512, 1024), np.float32))   # 2^21 elements: the pool starts
        ctx = multiprocessing.get_context("fork")
        queue = ctx.Queue()
        child = ctx.Process(target=_rotate_in_child, args=(queue,))
        with warnings.catch_warnings():                  # Python 3.12+ warns that forking a threaded process is risky
            warnings.simplefilter("ignore", DeprecationWarning)
            child.start()
        child.join(60)
        if child.is_alive():
            child.kill()
        assert child.exitcode == 0, "the forked child hung or failed"
        # position 3, first pair: cos(3) - sin(3) (half pairing: x_0 pairs with x_512, both 1)
        assert queue.get(timeout=5) == pytest.approx(np.cos(3.0) - np.sin(3.0), abs=1e-6)
    finally:
        rr.set_num_threads(old)


@pytest.mark.parametrize("pairing", ["interleaved", "half"])
def test_the_result_does_not_depend_on_the_thread_count(monkeypatch, pairing):
    """rotate's docstring promises bit-identical results for any set_num_threads (elementwise math)."""
    monkeypatch.setattr(_fast, "THREADED_ELEMENTS", 0)
    monkeypatch.setattr(_fast, "BLOCK_ELEMENTS", 256)
    rng = np.random.default_rng(11)
    results = {}
    for n in (1, 2, 3):
        old = rr.set_num_threads(n)
        try:
            for dtype in (np.float32, np.float16, BF16):
                x = rng.standard_normal((3, 50, 32)).astype(dtype) if n == 1 else results[(1, dtype)][0]
                rr.clear_cache()                                   # tables are rebuilt with n threads too
                results[(n, dtype)] = (x, rr.rotate(x, np.arange(50) * 37.5, pairing=pairing))
        finally:
            rr.set_num_threads(old)
    for (n, dtype), (_, got) in results.items():
        np.testing.assert_array_equal(got, results[(1, dtype)][1], err_msg=f"{n} threads, {np.dtype(dtype)}")


@pytest.mark.parametrize("pairing", ["interleaved", "half"])
def test_narrow_dtypes_are_the_float32_result_rounded_once(blocks, pairing):
    """float16/bfloat16 run in float32 and are rounded once at the end, so they must equal the float32
    result cast by NumPy/ml_dtypes bit for bit (the float32 path is checked against the plain form above;
    this catches conversion errors far below the narrow dtypes' tolerance)."""
    rng = np.random.default_rng(12)
    big = rng.standard_normal((5, 40, 64)) * 30
    big[0, 0, :4] = [0.0, -0.0, 1e-6, -3e-7]                     # zeros and float16 subnormals
    for dtype in (np.float16, BF16):
        for x in [big.astype(dtype), big.astype(dtype)[:, ::3, :32], big.astype(dtype).transpose(1, 0, 2)]:
            for kw in [{}, {"rotary_dim": 16}]:
                pos = rng.uniform(0, 5000, x.shape[-2])
                want = rr.rotate(x.astype(np.float32), pos, pairing=pairing, **kw).astype(dtype)
                got = rr.rotate(x, pos, pairing=pairing, **kw)
                np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16), err_msg=f"{dtype} {kw}")


@pytest.mark.parametrize("pairing", ["interleaved", "half"])
def test_every_finite_float16_value_turned_by_zero_is_itself_and_inf_passes_through(pairing):
    """Every finite float16 (subnormals, the largest 65504, both zeros) through rotate's float16 path at
    position 0 comes back unchanged; an inf in x is carried to the result, not reported as an overflow."""
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    finite = bits[(bits & 0x7C00) != 0x7C00].view(np.float16)            # 63,488 values
    x = np.stack([finite, np.zeros_like(finite)], axis=-1)               # pairs (v, 0), one per row
    np.testing.assert_array_equal(rr.rotate(x, np.zeros(len(x)), pairing=pairing), x)
    x[7, 0] = np.inf
    got = rr.rotate(x, np.zeros(len(x)), pairing=pairing)
    assert got[7, 0] == np.inf and np.array_equal(np.delete(got, 7, 0), np.delete(x, 7, 0))
