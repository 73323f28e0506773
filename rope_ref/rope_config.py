"""A model's rotary embedding as one value: ``RopeConfig``, read by :func:`rope_ref.from_hf_config`."""

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ._validate import check_no_overflow, check_positions, check_x
from .forms import rotate
from .multiaxis import axial_frequencies, mrope_frequencies
from .scaling import SCALING_METHODS, scaled_inv_freq


@dataclass(frozen=True)
class RopeConfig:
    """A model's rotary embedding, as :func:`from_hf_config` reads it; ``rotate`` applies it as the model does."""

    model_type: str | None
    head_dim: int            # features per head
    rotary_dim: int          # rotated features (the first rotary_dim of each head), even
    pairing: str             # "half" or "interleaved"
    base: float              # rope_theta
    rope_type: str           # one of rope_ref.ROPE_TYPES
    params: Mapping = field(default_factory=dict)   # scaling parameters, as scaled_inv_freq names them
    attention_factor: float = 1.0                    # multiplies cos and sin (yarn, longrope)
    output_pairing: str | None = None                # "half": the model writes rope_ref.to_half(cfg.rotate(x))
    query_scaling: Mapping = field(default_factory=dict)   # keys scaling the queries, not the angles: not applied
    mrope_section: tuple | None = None               # M-RoPE: pairs per axis (temporal, height, width)
    mrope_interleaved: bool | str = False            # M-RoPE layout: True, False (blocks) or a MROPE_LAYOUTS name
    axial_sections: tuple | None = None              # axial RoPE (diffusion transformers): pairs per axis
    clockwise: bool = False                          # NanoChat: every pair turns by -theta_j m (sin's sign flipped)

    @property
    def axes(self) -> int | None:
        """Position axes: 3 for M-RoPE (temporal, height, width), ``A`` for axial RoPE, None for 1-D RoPE."""
        sections = self.mrope_section if self.axial_sections is None else self.axial_sections
        return None if sections is None else len(sections)

    def inv_freq(self, seq_len=None) -> np.ndarray:
        """Per-pair frequencies at the current length ``seq_len``, float64: ``(rotary_dim/2,)``; for M-RoPE and axial
        RoPE ``(rotary_dim/2, axes)``, pair j turning by sum_a F[j, a] p_a (``rope_ref.mrope_frequencies``,
        ``rope_ref.axial_frequencies``).  Negative when ``clockwise``."""
        freqs, _ = scaled_inv_freq(self.rotary_dim, self.base, rope_type=self.rope_type, seq_len=seq_len, **self.params)
        if self.mrope_section is not None:
            sections = mrope_frequencies(self.rotary_dim, self.mrope_section, interleaved=self.mrope_interleaved)
            freqs = (sections != 0) * freqs[:, None]      # pair j's frequency in the column of its axis
        if self.axial_sections is not None:
            freqs = axial_frequencies(self.rotary_dim, base=self.base, sections=self.axial_sections)
        return -freqs if self.clockwise else freqs

    def rotate(self, x, positions=None, seq_len=None) -> np.ndarray:
        """RoPE as the model applies it: ``x`` ``(..., seq, head_dim)`` -> same shape and dtype.

        ``positions`` broadcastable to ``x.shape[:-1]`` (default ``arange(seq)``); for M-RoPE and axial RoPE
        ``(axes, ..., seq)``: transformers' ``position_ids`` (default: text, every axis ``arange(seq)``), or Flux's
        ``img_ids`` transposed.  The first ``rotary_dim`` features are rotated (RoFormer eq 34) and multiplied by the
        attention factor; the rest pass through.  ``seq_len`` (dynamic, longrope) defaults to ``max(positions) + 1``.
        """
        x = check_x(x)
        if x.shape[-1] != self.head_dim:
            raise ValueError(f"x.shape[-1] must be head_dim={self.head_dim}, got {x.shape[-1]}")
        if positions is None and self.axes:
            positions = np.broadcast_to(np.arange(x.shape[-2]) if x.ndim > 1 else 0, (self.axes,) + x.shape[-2:-1])
        pos = check_positions(positions, x.shape[:-1], axes=self.axes)
        if seq_len is None and SCALING_METHODS[self.rope_type].uses_seq_len:
            seq_len = int(np.max(pos, initial=0)) + 1
        y = rotate(x, pos, pairing=self.pairing, rotary_dim=self.rotary_dim, inv_freq=self.inv_freq(seq_len))
        with np.errstate(over="ignore"):                 # reported below as a ValueError
            y[..., :self.rotary_dim] *= np.asarray(self.attention_factor, dtype=y.dtype)
        return check_no_overflow(y, x, expected=f"x times the attention factor {self.attention_factor:.5g} within "
                                 f"{np.dtype(y.dtype).name}")
