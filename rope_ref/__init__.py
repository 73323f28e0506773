"""rope_ref: a readable NumPy oracle for Rotary Position Embedding (RoFormer, arXiv:2104.09864, section 3).

Shapes are written ``(..., seq, d)``: batch/head axes, positions, features (docs/conventions.md).  The oracle
needs numpy and ml_dtypes only (its modules: docs/architecture.md); :mod:`rope_ref.teaching` needs matplotlib.
"""

import signal as _signal
import sys as _sys


def _interrupted_while_importing(signum, frame):
    """Ctrl-C while ``python -m rope_ref ...`` still imports the package, before its command line
    (rope_ref.__main__) takes Ctrl-C over: the same one line and status 130 as later."""
    command = [word for word in _sys.argv[1:] if word in ("check", "figures", "site")][:1]
    print(" ".join(["python -m rope_ref", *command]) + ": interrupted", file=_sys.stderr)
    raise SystemExit(130)


if _sys.argv[:1] == ["-m"]:         # Python sets argv[0] to "-m" while it imports the package of `python -m`
    _signal.signal(_signal.SIGINT, _interrupted_while_importing)

from ._fast import clear_cache, set_cache_limit, set_num_threads
from ._validate import RopeRefPrecisionWarning, size_limit
from .forms import (
    decay_bound,
    frequencies,
    partial_sums,
    permute_qk_weights,
    rotate,
    rotate_complex,
    rotate_dense,
    rotate_elementwise,
    rotate_half,
    rotation_angles,
    rotation_matrix,
    sinusoidal,
    sinusoidal_shift_matrix,
    to_half,
    to_interleaved,
    wrap_angle,
)
from .hf_config import RopeConfig, from_hf_config
from .kernel_check import AxesSpec, RopeSpec, assert_rope_grad_matches, assert_rope_matches, identify
from .rope_attention import attention, attention_dense, elu_plus_one, linear_attention, linear_attention_dense, softmax
from .multiaxis import (axial_frequencies, deepseek_v4_compressed_positions, flux_position_ids, grid_positions,
                        mrope_frequencies, mrope_position_ids, qwen_image_position_ids)
from .scaling import ROPE_TYPES, scaled_inv_freq, wavelengths

__version__ = "0.1.0"

__all__ = [
    "attention", "attention_dense", "decay_bound", "elu_plus_one", "frequencies", "size_limit",
    "linear_attention", "linear_attention_dense", "softmax", "partial_sums", "permute_qk_weights", "rotate",
    "rotate_complex", "rotate_dense", "rotate_elementwise", "rotate_half", "rotation_angles",
    "rotation_matrix", "sinusoidal", "sinusoidal_shift_matrix", "to_half", "to_interleaved", "wrap_angle",
    "RopeRefPrecisionWarning", "ROPE_TYPES", "scaled_inv_freq", "wavelengths", "RopeSpec", "assert_rope_matches",
    "assert_rope_grad_matches", "identify", "RopeConfig", "from_hf_config", "mrope_frequencies", "mrope_position_ids",
    "axial_frequencies", "grid_positions", "flux_position_ids", "qwen_image_position_ids",
    "deepseek_v4_compressed_positions", "AxesSpec",
    "clear_cache", "set_cache_limit", "set_num_threads",   # performance knobs of rotate's table cache and threads
]
