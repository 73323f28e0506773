"""Multi-axis RoPE: frequency matrices ``F`` ``(rotary_dim/2, A)``, pair j turning by ``sum_a F[j, a] * p_a``
(eq 34 with that sum for ``m * theta_j``), and the position ids that go with them (M-RoPE, axial, diffusion)."""

from __future__ import annotations

import numpy as np

from ._validate import (check_base, check_choice, check_d, check_nonnegative_int, check_number, check_positive_int,
                        check_positive_real)
from .forms import frequencies

#: the three M-RoPE axes, in the order of ``positions[0], positions[1], positions[2]``.
MROPE_AXES = ("temporal", "height", "width")


def _check_sections(sections, rotary_dim: int | None, count: int | None = 3) -> tuple:
    """Non-negative integers summing to ``rotary_dim/2`` (to any sum if None): ``count`` of them (M-RoPE's t, h, w),
    else one per axis."""
    if not isinstance(sections, (list, tuple, np.ndarray)) or getattr(sections, "ndim", 1) != 1:    # not a set
        raise TypeError(f"sections must be a list of non-negative integers (pairs per axis), got {sections!r:.80}")
    items = [check_nonnegative_int(s, f"sections[{i}]") for i, s in enumerate(sections)]
    if len(items) != (count or len(items)) or sum(items) != (rotary_dim or 2 * sum(items)) // 2 or not items:
        raise ValueError(f"sections must be {count or 'one or more'} entries summing to rotary_dim/2, got {items}")
    return tuple(items)


def mrope_frequencies(rotary_dim: int, sections, *, base: float = 10000.0,
                      interleaved: bool | str = False) -> np.ndarray:
    """M-RoPE's frequency matrix ``F``, float64 ``(rotary_dim/2, 3)``: columns temporal, height, width.

    Pair ``j`` keeps ``theta_j = base^(-2j/rotary_dim)`` (eq 15) on one axis, so on text (``p_t = p_h = p_w = m``)
    it is 1-D RoPE.  ``sections``: ``[s_t, s_h, s_w]`` pairs per axis (``mrope_section``), summing to
    ``rotary_dim/2``.  ``interleaved``: a layout of :data:`MROPE_LAYOUTS`, False for ``"blocks"`` (Qwen2-VL) or
    True for ``"interleaved"`` (Qwen3-VL: height on pairs 1, 4, 7, ..., width on 2, 5, 8, ..., temporal the rest).
    """
    rotary_dim, base = check_d(rotary_dim, "rotary_dim"), check_base(base)
    if isinstance(interleaved, (bool, np.bool_)):
        interleaved = "interleaved" if interleaved else "blocks"
    layout = check_choice(interleaved, "interleaved", MROPE_LAYOUTS, "True, False or ", unknown=TypeError)
    sections = _check_sections(sections, rotary_dim)
    axis = MROPE_LAYOUTS[layout][0](sections)
    if np.bincount(axis, minlength=3).tolist() != list(sections):     # the pairs each axis gets, in any layout
        raise ValueError(f"sections={list(sections)} cannot be laid out as {layout!r} ({MROPE_LAYOUTS[layout][1]})")
    return np.eye(3)[axis] * frequencies(rotary_dim, base)[:, None]      # pair j's theta_j in the column of its axis


def _interleaved(sections) -> np.ndarray:
    """Axis of each pair in Qwen3-VL's interleaving (transformers' ``apply_interleaved_mrope``): axis a >= 1
    takes pairs a, a + A, a + 2A, ... below A * sections[a] (and below the number of pairs); axis 0 the rest."""
    pair = np.arange(sum(sections))
    axis = pair % len(sections)
    return np.where(pair < len(sections) * np.asarray(sections)[axis], axis, 0)


#: The M-RoPE layouts: name -> (axis of each pair from the sections, what the layout is).  Adding a layout is one
#: entry here: :func:`mrope_frequencies` builds it and :func:`rope_ref.identify` recognises and names it.
MROPE_LAYOUTS = {
    "blocks": (lambda sections: np.repeat(np.arange(len(sections)), sections),
               "contiguous sections in axis order, as Qwen2-VL / Qwen2.5-VL"),
    "interleaved": (_interleaved, "axes interleaved pair by pair, as Qwen3-VL's mrope_interleaved"),
    "hw_alternating": (lambda sections: np.concatenate([np.tile([1, 2], sections[1]), np.zeros(sections[0], int)]),
                       "height and width alternating over the first 2 * s_h pairs (s_h = s_w), temporal on the rest, "
                       "as ERNIE-4.5-VL (which writes [s_h, s_w, s_t]) and VideoRoPE (arXiv:2502.05173)"),
}


def axial_frequencies(rotary_dim: int, *, base: float = 10000.0, axes: int | None = None, sections=None) -> np.ndarray:
    """Axial RoPE's frequency matrix ``F``, float64 ``(rotary_dim/2, A)``: block ``a``, ``sections[a]`` pairs
    (default: ``axes`` equal blocks, 2), is a 1-D RoPE of dimension ``2*sections[a]`` (eq 15) on ``positions[a]``.
    With :func:`grid_positions`: timm's ``RotaryEmbeddingCat`` (EVA-02), RoPE-Axial (arXiv:2403.13298; ``base=100.0``,
    ``indexing="xy"``).  Flux's ``axes_dims_rope`` (16, 56, 56) counts features: ``sections=[8, 28, 28]``."""
    rotary_dim, base = check_d(rotary_dim, "rotary_dim"), check_base(base)
    if sections is None:
        axes = 2 if axes is None else check_positive_int(axes, "axes")
        if rotary_dim % (2 * axes):
            raise ValueError(f"rotary_dim must be a multiple of 2*axes = {2 * axes} (else sections=), got {rotary_dim}")
        sections = [rotary_dim // (2 * axes)] * axes
    sections = _check_sections(sections, rotary_dim, count=None)
    if axes is not None and check_positive_int(axes, "axes") != len(sections):
        raise ValueError(f"axes={axes} disagrees with sections={list(sections)} ({len(sections)} axes); give one")
    freqs = np.concatenate([frequencies(2 * n, base) for n in sections if n])    # block a: a 1-D RoPE on 2 s_a
    return np.eye(len(sections))[MROPE_LAYOUTS["blocks"][0](sections)] * freqs[:, None]


def grid_positions(height: int, width: int, *, indexing: str = "ij") -> np.ndarray:
    """Positions of the patches of a ``height x width`` grid, numbered row by row: float64 ``(2, height*width)``,
    ``positions[0]`` the row (``indexing="ij"``, timm's default) or the column (``"xy"``)."""
    height, width = check_positive_int(height, "height"), check_positive_int(width, "width")
    indexing = check_choice(indexing, "indexing", ("ij", "xy"))
    rows_cols = np.indices((height, width), dtype=np.float64).reshape(2, -1)
    return rows_cols if indexing == "ij" else rows_cols[::-1].copy()


def mrope_position_ids(segments, *, spatial_merge_size: int = 2, tokens_per_second=None,
                       text_after_vision: str = "max+1") -> np.ndarray:
    """M-RoPE position ids (temporal, height, width) of one sequence, int64 ``(3, seq)``: Qwen2-VL's rule
    (arXiv:2409.12191, section 2.1) as transformers' ``get_rope_index`` computes it (Qwen2-VL to Qwen3-VL).
    ``segments``: ``("text", n)``, ``("image", (t, h, w))`` or ``("video", (t, h, w)[, seconds_per_grid])``,
    ``(t, h, w)`` the patch grid before the merge (``image_grid_thw``).  Text tokens get one id on all axes; vision
    token (i, r, c) of the merged grid gets ``start + (i, r, c)``, with ``i * seconds_per_grid * tokens_per_second``
    (float32, truncated) for a video's ``i`` when ``tokens_per_second`` is given (Qwen2.5-VL).  The next segment
    starts at the largest id plus one (``text_after_vision="max+1"``, transformers to v5.2) or at ``start +
    max(h, w)/spatial_merge_size`` (``"spatial"``, from v5.3).

    >>> mrope_position_ids([("text", 2), ("image", (1, 4, 6)), ("text", 1)]).tolist()
    [[0, 1, 2, 2, 2, 2, 2, 2, 5], [0, 1, 2, 2, 2, 3, 3, 3, 5], [0, 1, 2, 3, 4, 2, 3, 4, 5]]
    """
    merge = check_positive_int(spatial_merge_size, "spatial_merge_size")
    if tokens_per_second is not None:
        tokens_per_second = check_positive_real(tokens_per_second, "tokens_per_second")
    text_after_vision = check_choice(text_after_vision, "text_after_vision", ("max+1", "spatial"))
    if not isinstance(segments, (list, tuple)):                          # in order: not a set
        raise TypeError(f"segments must be a list such as [('text', 5), ('image', (1, 28, 28))], got {segments!r:.80}")
    blocks, start = [], 0
    for i, seg in enumerate(segments):      # ("text", n) or (kind, grid (t, h, w)[, seconds]), checked
        grid = seg[1] if isinstance(seg, (tuple, list)) and len(seg) in (2, 3) else None
        kind = "video" if grid is None else check_choice(seg[0], f"segments[{i}][0]", ("text", "image", "video"))
        if kind == "text" and len(seg) == 2:
            n = check_positive_int(grid, f"segments[{i}][1] (the number of text tokens)")
            ids, span = np.indices((3, n), dtype=np.int64)[1], n       # not arange: empty for n near 2**63
        else:
            grid = grid.tolist() if isinstance(grid, np.ndarray) else grid
            if not isinstance(grid, (tuple, list)) or len(grid) != 3 or (len(seg) == 3 and kind != "video"):
                raise TypeError(f'segments[{i}] must be ("text", n), ("image", (t, h, w)) or ("video", (t, h, w)[, '
                                f"seconds_per_grid]), got {seg!r:.120}")
            t, h, w = (check_positive_int(g, f"segments[{i}][1][{j}] (grid t, h, w)") for j, g in enumerate(grid))
            if h % merge or w % merge:
                raise ValueError(f"segments[{i}]: grid h={h}, w={w} must be multiples of spatial_merge_size={merge}")
            seconds = check_positive_real(seg[2], f"segments[{i}][2] (seconds_per_grid)") if len(seg) == 3 else 1.0
            ids = np.indices((t, h // merge, w // merge), dtype=np.int64).reshape(3, -1)  # (frame, row, column)
            span = max(h, w) // merge
        if kind == "video" and tokens_per_second is not None:   # floor(i * interval) in float32, as Qwen2.5-VL
            with np.errstate(over="ignore", invalid="ignore"):                 # inf or NaN: refused below
                interval = np.float32(np.float32(seconds) * np.float32(tokens_per_second))
                times = np.arange(t, dtype=np.float32) * interval
            if not times[-1] < 2 ** 40:
                raise ValueError(f"tokens_per_second: a video's temporal ids reach {times[-1]:.3g}, not below 2^40")
            ids[0] = times.astype(np.int64)[ids[0]]                     # truncated, as .long()
        blocks.append(ids + start)
        start += int(ids.max()) + 1 if text_after_vision == "max+1" else span
    if not blocks:
        raise ValueError("segments must hold at least one segment, got none")
    return np.concatenate(blocks, axis=1)


def flux_position_ids(text_tokens: int, height: int, width: int, *, frame: int = 0) -> np.ndarray:
    """FLUX.1's (t, h, w) position ids, int64 ``(3, text_tokens + height*width)``: the text tokens at (0, 0, 0), then
    the latent tokens row by row at (frame, row, column) (``FluxPipeline``; Kontext's reference image: frame=1)."""
    text_tokens, frame = check_nonnegative_int(text_tokens, "text_tokens"), check_nonnegative_int(frame, "frame")
    grid = np.indices((1, check_positive_int(height, "height"), check_positive_int(width, "width"))).reshape(3, -1)
    grid[0] = frame                                                                    # (frame, row, column)
    return np.concatenate([np.zeros((3, text_tokens), np.int64), grid], axis=1)


def qwen_image_position_ids(text_tokens: int, height: int, width: int, *, frames: int = 1) -> np.ndarray:
    """Qwen-Image's (t, h, w) position ids (``QwenEmbedRope``, ``scale_rope=True``), int64 ``(3, text_tokens +
    frames*height*width)``: text token n at max(height//2, width//2) + n on every axis, then latent token (f, r, c)
    at (f, r - ceil(height/2), c - ceil(width/2))."""
    text_tokens, frames = check_nonnegative_int(text_tokens, "text_tokens"), check_positive_int(frames, "frames")
    height, width = check_positive_int(height, "height"), check_positive_int(width, "width")
    grid = np.indices((frames, height, width)).reshape(3, -1) - [[0], [height - height // 2], [width - width // 2]]
    text = max(height // 2, width // 2) + np.indices((3, text_tokens))[1]
    return np.concatenate([text, grid], axis=1).astype(np.int64)


def deepseek_v4_compressed_positions(seq_len: int, compress_rate: int) -> np.ndarray:
    """The positions DeepSeek-V4 rotates its compressed KV entries at, int64 ``(seq_len // compress_rate,)``: entry
    w, of the complete window of tokens ``w*compress_rate .. (w+1)*compress_rate - 1``, turns at ``w*compress_rate``
    (transformers 5.24.0's ``DeepseekV4HCACompressor``, rate 128, and ``DeepseekV4CSACompressor``, rate 4)."""
    seq_len = check_number(seq_len, "seq_len", "a non-negative integer below 2**63", lambda v: 0 <= v < 2**63)
    rate = check_number(compress_rate, "compress_rate", "a positive integer", lambda v: v > 0)      # any size
    return min(rate, seq_len) * np.indices((seq_len // rate,), np.int64)[0]    # a rate above seq_len: no entry
