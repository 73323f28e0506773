"""Kernel tensor layouts (issue 40): the positions of a "bshd", "bhsd", "sbhd" or "thd" tensor (b batch, s sequence,
h heads, d features; "thd": sequences of different lengths packed along t), and the positions a form reads."""

from __future__ import annotations

import numpy as np

from ._validate import (check_choice, check_finite_array, check_nonnegative_int, check_positions, check_real_array,
                        check_rotary_dim)


def layout_positions(shape, layout: str, *, cu_seqlens=None, seqlen_offsets=None) -> np.ndarray:
    """Positions broadcastable to ``shape[:-1]`` of a tensor laid out as ``layout``; for "thd", sequence i is rows
    ``cu_seqlens[i]:cu_seqlens[i+1]`` (flash-attention's ``cu_seqlens``, FlashInfer's ``indptr``).

    ``seqlen_offsets``: the position of each sequence's first token: one number, or one per batch entry (per packed
    sequence for "thd"), as flash-attention's ``seqlen_offsets`` or a KV cache's lengths."""
    layout = check_choice(layout, "layout", ("bshd", "bhsd", "sbhd", "thd"))
    if not isinstance(shape, (tuple, list, np.ndarray)) or getattr(shape, "ndim", 1) != 1:
        raise TypeError(f"shape must be x.shape, a tuple of non-negative integers, got {type(shape).__name__}")
    shape = tuple(check_nonnegative_int(n, "shape", "x.shape, a tuple of non-negative integers") for n in shape)
    if len(shape) != len(layout):
        raise ValueError(f"layout={layout!r} needs a {len(layout)}-D x, got x of shape {tuple(shape)}")
    if (layout == "thd") != (cu_seqlens is not None):
        raise TypeError(f"cu_seqlens must be given with layout='thd' and only then, got layout={layout!r} with "
                        f"cu_seqlens={cu_seqlens!r:.60}")
    if layout == "thd":
        cu = check_real_array(cu_seqlens, "cu_seqlens").astype(np.float64)     # np.diff wraps unsigned integers
        if cu.ndim != 1 or len(cu) < 2 or cu[0] != 0 or cu[-1] != shape[0] or np.any(np.diff(cu) < 0) \
                or np.any(cu % 1) or shape[0] >= 2 ** 53:                      # float64's integers: exact
            raise ValueError(f"cu_seqlens must be integers below 2**53 rising from 0 to t={shape[0]}, got "
                             f"{cu.tolist()!r:.80}")
    else:                                                              # b sequences of s tokens
        cu = np.arange(shape[layout.index("b")] + 1) * shape[layout.index("s")]
    cu = cu.astype(np.int64)
    lengths, n = np.diff(cu), len(cu) - 1
    offsets = np.zeros((), np.int64) if seqlen_offsets is None else check_real_array(seqlen_offsets, "seqlen_offsets")
    if offsets.shape not in ((), (n,)) or not np.all(np.isfinite(offsets)):
        raise ValueError(f"seqlen_offsets must be one finite number or {n}, one per sequence, got "
                         f"{offsets.tolist()!r:.80}")
    offsets = np.broadcast_to(offsets, (n,))
    if offsets.dtype.kind in "iu" and max((int(o) + int(k) for o, k in zip(offsets, lengths)), default=0) > 2 ** 63:
        raise ValueError(f"seqlen_offsets must keep positions within int64, got {offsets.tolist()!r:.80} for "
                         f"sequences of {lengths.tolist()!r:.60} tokens")
    offsets = offsets.astype(np.int64 if offsets.dtype.kind in "iu" else np.float64)
    rows = np.arange(cu[-1]) - np.repeat(cu[:-1], lengths) + np.repeat(offsets, lengths)   # row - start + offset
    grid = rows if layout == "thd" else rows.reshape(n, shape[layout.index("s")])          # (t,) or (b, s)
    return np.expand_dims(grid.T if layout == "sbhd" else grid, layout.index("h"))


def positions_of(shape, positions, layout=None, inv_freq=None, rotary_dim=None, angles=None, **packing):
    """(positions, inv_freq, rotary_dim) of a form's x of ``shape``: as given; from ``layout``
    (:func:`layout_positions`); or ``angles`` ``(..., seq, r/2)`` as r/2 axes of positions with the identity as
    inv_freq (pair j turns by angles[..., j] exactly).  A 4-D x with none of them is refused as ambiguous."""
    given = [name for name, value in packing.items() if value is not None]
    if layout is None and given:
        raise TypeError(f"{' and '.join(given)} must come with a layout, got layout=None")
    if layout is not None and (positions is not None or angles is not None):
        raise TypeError(f"layout={layout!r} sets the positions, expected no positions or angles beside it")
    if layout is not None:
        return layout_positions(shape, layout, **packing), inv_freq, rotary_dim
    if len(shape) == 4 and positions is None and angles is None:
        raise ValueError(f"x of shape {tuple(shape)} is ambiguous without positions or layout: pass layout='bhsd' for "
                         f"(batch, heads, seq, d) or layout='bshd' for (batch, seq, heads, d)")
    if angles is None:
        return positions, inv_freq, rotary_dim
    angles = check_finite_array(angles, "angles")
    r = 2 * angles.shape[-1] if angles.ndim else 0
    if not 0 < r <= shape[-1]:
        raise ValueError(f"angles must have shape (..., seq, r/2) with r <= d = {shape[-1]}, got shape {angles.shape}")
    check_positions(angles[..., 0], tuple(shape[:-1]), "angles[..., 0]")          # the lead axes broadcast to x's
    rotary_dim = r if rotary_dim is None else check_rotary_dim(rotary_dim, shape[-1])
    if positions is not None or inv_freq is not None or rotary_dim != r:
        raise TypeError(f"angles sets the positions, inv_freq and rotary_dim={r}, got them beside it")
    return np.moveaxis(angles, -1, 0), np.eye(r // 2), r
