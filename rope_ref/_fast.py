"""The machinery behind :func:`rope_ref.rotate`: cached cos/sin tables and a blocked loop.

The math is eq 34 and nothing else; this module only decides *how* to stream it:

* tables are computed once per (positions, frequencies, dtype) from float64 angles
  and cached (read-only), so repeated calls on the same shape pay nothing;
* interleaved pairs are multiplied as complex numbers in one ufunc call per block
  (``(x_2i + i x_2i+1) * (cos + i sin)`` is exactly eq 34);
* half-split pairs use ``x * [cos, cos] + rotate_half(x) * [sin, sin]``, with rotate_half's sign
  carried by the table (``halves_swapped(x) * [-sin, sin]``);
* rows are processed in blocks of ~64k elements so the single temporary stays in cache.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

BLOCK_ELEMENTS = 1 << 16
_CACHE: OrderedDict = OrderedDict()
_CACHE_SIZE = 16


def clear_cache() -> None:
    """Free every cached cos/sin table."""
    _CACHE.clear()


def tables(pos: np.ndarray, freqs: np.ndarray, work, pairing: str):
    """Read-only tables for ``pos`` (any shape P): interleaved -> cis ``P + (h,)`` complex;
    half -> (``[cos, cos]``, ``[-sin, sin]``) each ``P + (2h,)``.  Angles in float64."""
    work = np.dtype(work)
    key = (pos.shape, pos.tobytes(), freqs.tobytes(), work.str, pairing)
    hit = _CACHE.get(key)
    if hit is not None:
        _CACHE.move_to_end(key)
        return hit
    angles = np.multiply.outer(pos, freqs)
    cos, sin = np.cos(angles), np.sin(angles)
    if pairing == "interleaved":
        cis = np.empty(angles.shape, dtype=np.complex64 if work == np.float32 else np.complex128)
        cis.real, cis.imag = cos, sin
        out = (cis,)
    else:
        out = (np.concatenate([cos, cos], axis=-1).astype(work), np.concatenate([-sin, sin], axis=-1).astype(work))
    for t in out:
        t.setflags(write=False)
    _CACHE[key] = out
    if len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return out


def rotate_into(x: np.ndarray, out: np.ndarray, pos: np.ndarray, freqs: np.ndarray, pairing: str, r: int, work):
    """Write RoPE of ``x`` ``(..., seq, d)`` into ``out`` (same shape, x's dtype), block by block."""
    if x.ndim == 1:
        rotate_into(x[None], out[None], pos[None], freqs, pairing, r, work)
        return out
    work = np.dtype(work)
    lead = x.shape[:-1]
    tabs = [np.broadcast_to(t, lead + t.shape[-1:]) for t in tables(pos, freqs, work, pairing)]
    seq, d = x.shape[-2], x.shape[-1]
    rows = max(1, BLOCK_ELEMENTS // d)
    direct = x.dtype == work and out.dtype == work and x.strides[-1] == work.itemsize
    if direct and pairing == "interleaved":          # no temporary at all: one complex multiply
        _rotate_block(x, out, tabs, pairing, r)
        if r < d:
            out[..., r:] = x[..., r:]
        return out
    for idx in np.ndindex(lead[:-1]):
        for s in range(0, seq, rows):
            sl = idx + (slice(s, s + rows),)
            xs, ys = x[sl], out[sl]
            xw = xs if direct else np.ascontiguousarray(xs, dtype=work)
            yw = ys if direct else np.empty(xw.shape, dtype=work)
            _rotate_block(xw, yw, [t[sl] for t in tabs], pairing, r)
            if r < d:
                yw[:, r:] = xw[:, r:]
            if not direct:
                ys[...] = yw
    return out


def _rotate_block(xs, ys, tabs, pairing, r):
    """Eq 34 on a block of rows ``(b, d)``; the first ``r`` features are rotated."""
    if pairing == "interleaved":
        (cis,) = tabs
        np.multiply(xs[..., :r].view(cis.dtype), cis, out=ys[..., :r].view(cis.dtype))
        return
    cos2, sin2 = tabs
    b, h = xs.shape[0], r // 2
    np.multiply(xs[:, :r], cos2, out=ys[:, :r])
    swapped = xs[:, :r].reshape(b, 2, h)[:, ::-1, :]           # (x_{i+h}, x_i): rotate_half without its sign
    tmp = np.multiply(swapped, sin2.reshape(b, 2, h))          # sign carried by [-sin, sin]
    np.add(ys[:, :r], tmp.reshape(b, r), out=ys[:, :r])
