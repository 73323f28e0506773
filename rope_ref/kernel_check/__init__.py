"""Black-box identification of a RoPE implementation: which pairing, base, offset, scaling.

``identify(fn, d)`` feeds ``fn`` float64 inputs of shape ``(seq, d)`` (the function
applies its own positions, row r at position offset + r) and reads back, row by row,
the linear map it applies.  A rotary embedding maps each row by the block-diagonal
rotation of eq 34 (RoFormer, arXiv:2104.09864): one 2x2 block [[cos, -sin], [sin, cos]]
per pair of features, with angle (offset + row) * theta_i.  Everything else follows
from measuring those blocks (:mod:`.analyse` lists the steps and the module of each).

``assert_rope_matches(fn, d, **expected)`` turns the differences from what you expect
into one readable AssertionError; ``assert_rope_grad_matches(vjp, d, **expected)`` does
the same for a backward pass.  How the measurement works: docs/identify_internals.md.

Multi-axis RoPE (M-RoPE, 2-D axial, RoPE-Mixed): ``identify(fn, d, axes=A)`` calls
``fn(x, positions)`` with positions ``(A, seq)`` and returns an :class:`AxesSpec` (the frequency
matrix ``(rotary_dim/2, A)``, sections, M-RoPE layout); ``assert_rope_matches(fn, config=<M-RoPE
config>)`` or ``assert_rope_matches(fn, d, axes=A, ...)`` compares it.  The modules: :mod:`.axes_probe`
(calls and structure), :mod:`.axes_angles` (the fits), :mod:`.axes_spec` (the spec and its naming),
:mod:`.axes_compare` (``compare_axes``, ``assert_axes_match``, what a config expects).
"""

from .analyse import identify
from .assertions import assert_rope_matches
from .axes_compare import assert_axes_match, compare_axes
from .axes_probe import identify_axes
from .axes_spec import AxesSpec
from .grad import assert_rope_grad_matches
from .mismatch import KernelRaised, RopeMismatch
from .spec import RopeSpec
from .tolerances import (DYNAMIC_MIN_OFFSET, FREQ_ULPS, MAX_BYTES, MAX_OFFSET, MAX_ROWS, NAME_RTOL, NOISE_ULPS,
                         OFFSET_SIGMA, PRECISIONS, SIGMAS, STATE_RTOL, STRUCTURE_RTOL, ZERO_RTOL)

__all__ = ["RopeSpec", "identify", "assert_rope_matches", "assert_rope_grad_matches", "KernelRaised", "RopeMismatch",
           "AxesSpec", "identify_axes", "compare_axes", "assert_axes_match",
           "DYNAMIC_MIN_OFFSET", "FREQ_ULPS", "MAX_BYTES", "MAX_OFFSET", "MAX_ROWS", "NAME_RTOL", "NOISE_ULPS",
           "OFFSET_SIGMA", "PRECISIONS", "SIGMAS", "STATE_RTOL", "STRUCTURE_RTOL", "ZERO_RTOL"]
