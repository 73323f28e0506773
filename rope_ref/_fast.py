"""How :func:`rope_ref.rotate` computes eq 34 fast, on checked arguments: cos and sin of float64 angles in tables
(:func:`tables`, the last kept, as transformers' rotary modules keep cos/sin); pairs turned block by block in cache
(:func:`_rotate_into`); float16 and bfloat16 computed in float32 and rounded once; only the first ``r`` features, so
a partial rotation costs about the copy of x plus the rotation of the part (measured in ``benchmarks/``).
"""

from __future__ import annotations

import numpy as np

from ._validate import check_no_overflow

BLOCK_ELEMENTS = 1 << 17        # rotated elements per block (float32: 512 kB; measured best in benchmarks/)
KEEP_ANGLES = (1 << 12, 1 << 22)  # tables of this many angles are kept for the next call with equal positions
_last: dict = {}                # (pairing, work dtype, frequencies shape) -> (positions, frequencies, tables) last used


def tables(pos: np.ndarray, freqs: np.ndarray, work, pairing: str) -> tuple:
    """The tables for positions ``pos`` ``(n, A)`` and frequencies ``freqs`` ``(h, A)`` of the float64 angles
    sum_a pos[:, a] freqs[:, a] (in axis order, as :func:`rope_ref.rotate_elementwise`): interleaved -> ``(cis,)``,
    complex ``(n, h)``; half -> ``([cos, cos], [-sin, sin])``, each ``(n, 2h)``; in dtype ``work`` (float32 or
    float64).  Tables of ``KEEP_ANGLES`` angles are kept, read-only, until a call with other positions."""
    key = (pairing, np.dtype(work).str, freqs.shape)
    keep = KEEP_ANGLES[0] <= pos.shape[0] * freqs.shape[0] <= KEEP_ANGLES[1]
    last = _last.get(key) if keep else None
    if last is not None and np.array_equal(last[0], pos) and np.array_equal(last[1], freqs):   # shapes too
        return last[2]
    angles = np.multiply.outer(pos[:, 0], freqs[:, 0])
    for a in range(1, freqs.shape[1]):
        angles = angles + np.multiply.outer(pos[:, a], freqs[:, a])
    if pairing == "interleaved":
        cis = np.empty(angles.shape, np.result_type(work, np.complex64))
        cis.real, cis.imag = np.cos(angles), np.sin(angles)
        tabs = (cis,)
    else:
        cos, sin = np.cos(angles), np.sin(angles)
        tabs = (np.concatenate([cos, cos], -1).astype(work), np.concatenate([-sin, sin], -1).astype(work))
    if keep:
        for t in tabs:
            t.setflags(write=False)
        _last[key] = (pos.copy(), freqs.copy(), tabs)
    return tabs


def _blocks(lead: tuple, rows: int):
    """Index tuples cutting the leading shape ``lead`` into blocks of about ``rows`` rows: whole trailing axes
    while they fit, the next axis in slices, the axes before it one index at a time."""
    j, inner = len(lead), 1
    while j > 0 and inner * lead[j - 1] <= rows:
        j, inner = j - 1, inner * lead[j - 1]
    if j == 0:
        yield ()
        return
    step = max(1, rows // inner)
    for index in np.ndindex(lead[:j - 1]):
        for start in range(0, lead[j - 1], step):
            yield index + (slice(start, start + step),)


def rotate(x: np.ndarray, pos: np.ndarray, freqs: np.ndarray, pairing: str, r: int) -> np.ndarray:
    """Eq 34 of ``x`` ``(..., d)`` on its first ``r`` features: a new array of x's dtype.

    ``pos`` broadcasts to ``x.shape[:-1]`` with ``freqs`` ``(r/2,)``, or is ``(A,) + P`` with ``freqs`` ``(r/2, A)``
    (checked: finite angles).  A finite x whose result overflows its dtype raises the ValueError naming x."""
    if freqs.ndim == 1:                                          # one axis: A = 1, the same angles bit for bit
        pos, freqs = pos[None], freqs[:, None]
    work = np.dtype(np.float64 if x.dtype == np.float64 else np.float32)
    rows = pos.reshape(len(pos), -1).T                           # (n, A): one row of angles per position
    tabs = [t.reshape(pos.shape[1:] + t.shape[-1:]) for t in tables(rows, freqs, work, pairing)]   # P + (h or r,)
    out = np.empty(x.shape, x.dtype)
    scan = x.dtype != work    # rounding float32 to bfloat16 overflows without a flag
    try:                      # float arithmetic (and the cast to float16) that overflows raises: no scan of the result
        with np.errstate(over="raise", invalid="ignore"):
            _rotate_into(x, out, tabs, pairing, r, work)
    except FloatingPointError:                                  # an overflow, or x holds inf or NaN: scanned
        scan = True
        with np.errstate(over="ignore", invalid="ignore"):
            _rotate_into(x, out, tabs, pairing, r, work)
    return check_no_overflow(out, x) if scan else out


def _rotate_into(x, out, tabs, pairing, r, work) -> None:
    """Eq 34 on ``x[..., :r]`` into ``out`` (C-contiguous, x's dtype; the features beyond r: as x) in dtype ``work``.

    Straight from x's memory when it holds pairs of ``work``; partial rotations copy each block's rows whole while
    they are in cache, then turn the first r features there (interleaved) or through a contiguous copy of them
    (half-split; 16-bit or strided x: a converted copy)."""
    whole = r == x.shape[-1]
    direct = x.dtype == work and x.strides[-1] == work.itemsize
    if direct and whole and pairing == "interleaved":           # one complex multiply, no temporaries
        _rotate_block(x, out, tabs, pairing, None)
        return
    blocks = list(_blocks(x.shape[:-1], max(1, BLOCK_ELEMENTS // r)))
    if len(blocks) > 1:                                          # the tables indexed as x is
        tabs = [np.broadcast_to(t, x.shape[:-1] + t.shape[-1:]) for t in tabs]
    scratch = np.empty((3, min(x.size // x.shape[-1] * r, max(BLOCK_ELEMENTS, r))), work)  # part, result, turned
    for index in blocks:
        x_block, out_block, t_block = x[index][..., :r], out[index][..., :r], [t[index] for t in tabs]
        if not whole:
            out[index] = x[index]
        if direct and (whole or pairing == "interleaved"):
            _rotate_block(x_block if whole else out_block, out_block, t_block, pairing, scratch[2])
            continue
        part, result = (s[:x_block.size].reshape(x_block.shape) for s in scratch[:2])
        np.copyto(part, x_block)
        _rotate_block(part, result, t_block, pairing, scratch[2])
        out_block[...] = result


def _rotate_block(x_block, out_block, tabs, pairing, scratch) -> None:
    """Eq 34 on a block ``(..., r)`` of dtype ``work`` (last axis contiguous) into ``out_block`` (the same array
    allowed when interleaved); ``scratch``: at least the block's elements (half pairing)."""
    if pairing == "interleaved":
        (cis,) = tabs
        np.multiply(x_block.view(cis.dtype), cis, out=out_block.view(cis.dtype))
        return
    cos2, sin2 = tabs
    lead, h = x_block.shape[:-1], x_block.shape[-1] // 2
    np.multiply(x_block, cos2, out=out_block)                                  # x [cos, cos]: x read from memory once
    turned = scratch[:x_block.size].reshape(lead + (2, h))
    np.copyto(turned, x_block.reshape(lead + (2, h))[..., ::-1, :])            # (x2, x1): halves swapped, in cache
    turned = turned.reshape(x_block.shape)
    np.multiply(turned, sin2, out=turned)                                      # (-x2 sin, x1 sin)
    np.add(out_block, turned, out=out_block)                                   # eq 34, in contiguous runs
