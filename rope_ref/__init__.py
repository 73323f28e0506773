"""rope_ref: a readable NumPy oracle for Rotary Position Embedding (RoFormer, arXiv:2104.09864, section 3).

Shapes are written ``(..., seq, d)``: batch/head axes, positions, features (docs/conventions.md).  The oracle
needs numpy and ml_dtypes only (its modules: docs/architecture.md); :mod:`rope_ref.teaching` needs matplotlib.
"""

from ._validate import RopeRefPrecisionWarning
from .forms import (decay_bound, frequencies, partial_sums, permute_qk_weights, rotate, rotate_complex, rotate_dense,
                   rotate_elementwise, rotate_half, rotation_angles, rotation_matrix, sinusoidal,
                   sinusoidal_shift_matrix, to_half, to_interleaved, wrap_angle)
from .hf_config import RopeConfig, from_hf_config
from .layouts import layout_positions
from .kernel_check import AxesSpec, RopeSpec, assert_rope_grad_matches, assert_rope_matches, identify
from .rope_attention import attention, attention_dense, elu_plus_one, linear_attention, linear_attention_dense, softmax
from .multiaxis import (axial_frequencies, deepseek_v4_compressed_positions, flux_position_ids, grid_positions,
                        mrope_frequencies, mrope_position_ids, qwen_image_position_ids)
from .scaling import ROPE_TYPES, scaled_inv_freq, wavelengths
from .testing import rotate_qkv      # and so rope_ref.testing, the kernel suites' assertion, as rr.testing

__version__ = "0.1.0"

__all__ = [
    "attention", "attention_dense", "decay_bound", "elu_plus_one", "frequencies",
    "linear_attention", "linear_attention_dense", "softmax", "partial_sums", "permute_qk_weights", "rotate",
    "rotate_complex", "rotate_dense", "rotate_elementwise", "rotate_half", "rotation_angles",
    "rotation_matrix", "sinusoidal", "sinusoidal_shift_matrix", "to_half", "to_interleaved", "wrap_angle",
    "RopeRefPrecisionWarning", "ROPE_TYPES", "scaled_inv_freq", "wavelengths", "RopeSpec", "assert_rope_matches",
    "assert_rope_grad_matches", "identify", "RopeConfig", "from_hf_config", "mrope_frequencies", "mrope_position_ids",
    "axial_frequencies", "grid_positions", "flux_position_ids", "qwen_image_position_ids",
    "deepseek_v4_compressed_positions", "AxesSpec", "layout_positions", "rotate_qkv",
]
