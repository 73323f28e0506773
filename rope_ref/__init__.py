"""rope_ref: a readable NumPy oracle for Rotary Position Embedding (RoFormer section 3).

Shapes are written ``(..., seq, d)``: any leading batch/head axes, then
positions, then features.  See the README's "Conventions" for the choices
made where the sources disagree.
"""

from .attention import attention, elu_plus_one, linear_attention
from .core import (
    decay_bound,
    inv_freq,
    partial_sums,
    permute_qk_weights,
    rotate,
    rotate_complex,
    rotate_dense,
    rotation_angles,
    rotation_matrix,
    sinusoidal,
    to_half,
    to_interleaved,
)
from .identify import RopeSpec, assert_rope_matches, identify
from .scaling import ROPE_TYPES, scaled_inv_freq

__version__ = "0.1.0"

__all__ = [
    "attention", "decay_bound", "elu_plus_one", "inv_freq", "linear_attention",
    "partial_sums", "permute_qk_weights", "rotate", "rotate_complex", "rotate_dense",
    "rotation_angles", "rotation_matrix", "sinusoidal", "to_half", "to_interleaved",
    "ROPE_TYPES", "scaled_inv_freq", "RopeSpec", "assert_rope_matches", "identify",
]
