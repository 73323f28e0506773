"""Multi-axis RoPE: frequency matrices and position ids for images, video and text.

A multi-axis RoPE is a frequency matrix ``F`` of shape ``(rotary_dim/2, A)`` and positions ``p``
of ``A`` axes: pair ``j`` turns by ``sum_a F[j, a] * p_a`` (RoFormer eq 34 with the angle
``m * theta_j`` replaced by that sum).  1-D RoPE is ``A = 1``.  This module builds ``F`` for the
layouts models ship and the position ids that go with them:

* :func:`mrope_frequencies` -- M-RoPE (Qwen2-VL, arXiv:2409.12191): each pair keeps its 1-D
  frequency ``theta_j = base^(-2j/rotary_dim)`` and serves one of three axes (temporal, height,
  width), in contiguous sections (Qwen2-VL, Qwen2.5-VL) or interleaved (Qwen3-VL);
* :func:`axial_frequencies` and :func:`grid_positions` -- 2-D axial RoPE for image patches
  (timm's ``RotaryEmbeddingCat``; Heo et al. 2024, "Rotary Position Embedding for Vision
  Transformer", arXiv:2403.13298, RoPE-Axial);
* :func:`mrope_position_ids` -- the ``(3, seq)`` position ids of a sequence of text, image and
  video segments (transformers' ``get_rope_index`` for the Qwen VL models).

Arrays are float64 and new; inputs are never modified.
"""

from __future__ import annotations

import numbers

import numpy as np

from . import _validate as val
from .core import frequencies

#: the three M-RoPE axes, in the order of ``positions[0], positions[1], positions[2]``.
MROPE_AXES = ("temporal", "height", "width")


def _check_sections(sections, n_pairs: int, rotary_dim: int) -> tuple[int, int, int]:
    """Three non-negative integers summing to ``rotary_dim/2``."""
    if isinstance(sections, (str, bytes)) or not hasattr(sections, "__len__"):
        raise TypeError(f"sections must be a list of 3 non-negative integers (pairs for temporal, height, "
                        f"width), got {sections!r} of type {type(sections).__name__}")
    items = list(np.asarray(sections).tolist()) if isinstance(sections, np.ndarray) else list(sections)
    if len(items) != 3:
        raise ValueError(f"sections must have 3 entries (pairs for temporal, height, width), got {len(items)}: "
                         f"{items!r}")
    for i, s in enumerate(items):
        if isinstance(s, bool) or not isinstance(s, numbers.Integral):
            raise TypeError(f"sections[{i}] must be a non-negative integer, got {s!r} of type {type(s).__name__}")
        if s < 0:
            raise ValueError(f"sections[{i}] must be a non-negative integer, got {s}")
    items = [int(s) for s in items]
    if sum(items) != n_pairs:
        raise ValueError(f"sections must sum to rotary_dim/2 = {n_pairs} (rotary_dim={rotary_dim}), got "
                         f"{items} summing to {sum(items)}")
    return items[0], items[1], items[2]


@val.suggest_keywords
def mrope_frequencies(rotary_dim: int, sections, *, base: float = 10000.0, interleaved: bool = False) -> np.ndarray:
    """M-RoPE's frequency matrix ``F``, float64 of shape ``(rotary_dim/2, 3)``: columns temporal, height, width.

    Pair ``j`` keeps its 1-D frequency ``theta_j = base^(-2j/rotary_dim)`` (eq 15, 0-indexed) and
    serves exactly one axis: ``F[j, axis(j)] = theta_j``, the other two entries are 0.  So pair ``j``
    turns by ``theta_j * p[axis(j)]``, and on text, where ``p_t = p_h = p_w = m``, by ``theta_j * m``:
    1-D RoPE.

    ``sections`` = ``[s_t, s_h, s_w]`` pairs per axis (a config's ``mrope_section``), summing to
    ``rotary_dim/2``:

    * ``interleaved=False`` (Qwen2-VL, Qwen2.5-VL): contiguous blocks in theta order -- pairs
      ``[0, s_t)`` temporal, ``[s_t, s_t+s_h)`` height, the rest width (transformers'
      ``Qwen2VLRotaryEmbedding``: ``freq.split(mrope_section)``, chunk ``i`` from axis ``i % 3``).
    * ``interleaved=True`` (Qwen3-VL, ``mrope_interleaved``): height takes pairs ``1, 4, 7, ...``
      (``s_h`` of them), width ``2, 5, 8, ...`` (``s_w``), and temporal every other pair: ``0, 3, 6,
      ...`` and the leftover pairs at the top when ``s_t > s_h, s_w`` (transformers'
      ``Qwen3VLTextRotaryEmbedding``: ``freqs_thw[..., slice(offset, 3 * s, 3)] = freq[axis]``).
      Sections whose strided slice would run past the last pair (``3*s_h - 2 >= rotary_dim/2`` or
      ``3*s_w - 1 >= rotary_dim/2``) raise: transformers clips such a slice, so the config's counts
      would not be the counts used.

    Example: Qwen2-VL ``mrope_frequencies(128, [16, 24, 24])``; Qwen3-VL
    ``mrope_frequencies(128, [24, 20, 20], base=5e6, interleaved=True)``.

    >>> F = mrope_frequencies(8, [2, 1, 1])
    >>> (F != 0).astype(int).tolist()
    [[1, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]]
    >>> (mrope_frequencies(8, [2, 1, 1], interleaved=True) != 0).astype(int).tolist()
    [[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0]]
    """
    rotary_dim = val.check_d(rotary_dim, "rotary_dim")
    base = val.check_base(base)
    interleaved = val.check_bool(interleaved, "interleaved")
    n = rotary_dim // 2
    s_t, s_h, s_w = _check_sections(sections, n, rotary_dim)
    axis = np.zeros(n, dtype=np.intp)                       # temporal unless claimed below
    if interleaved:
        for a, (offset, s) in enumerate(((1, s_h), (2, s_w)), start=1):
            if s and offset + 3 * (s - 1) >= n:
                raise ValueError(
                    f"sections={[s_t, s_h, s_w]} cannot be interleaved over rotary_dim/2 = {n} pairs: "
                    f"{MROPE_AXES[a]} would need pairs {offset}, {offset + 3}, ..., {offset + 3 * (s - 1)} "
                    f"(expected {MROPE_AXES[a]}'s section s with {offset} + 3*(s-1) < {n})")
            axis[offset:offset + 3 * s:3] = a
    else:
        axis[s_t:s_t + s_h] = 1
        axis[s_t + s_h:] = 2
    F = np.zeros((n, 3))
    F[np.arange(n), axis] = frequencies(rotary_dim, base)
    return F
