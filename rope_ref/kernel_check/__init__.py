"""Black-box checking of a RoPE kernel: which pairing, base, offset, scaling (``identify``), and how it differs
from what you expect (``assert_rope_matches``, ``assert_rope_grad_matches`` for a backward pass).

A rotary embedding maps each row by the block-diagonal rotation of eq 34 (RoFormer, arXiv:2104.09864): one
2x2 block [[cos, -sin], [sin, cos]] per pair of features.  ``identify(fn, d)`` calls ``fn(x)`` on rows
(row r at position offset + r); with ``axes=A`` it calls ``fn(x, positions)`` with positions ``(A, seq)``
(M-RoPE, 2-D axial, RoPE-Mixed).  One probe serves both, a 1-D kernel being the case A = 1 that also has an
unknown offset: :mod:`.probe` (calling fn, the five opening checks), :mod:`.structure` (the pairs and their
blocks), :mod:`.angles` (line fits, float types).  What differs lives apart: 1-D in :mod:`.analyse`
(the steps), :mod:`.offset`, :mod:`.naming`, :mod:`.dynamic`, :mod:`.spec`, :mod:`.assertions` (forward and
backward passes); several axes in :mod:`.axes_probe` (positions and fits), :mod:`.axes_spec` (sections,
layouts), :mod:`.axes_compare`.  How the measurement works: docs/identify_internals.md.
"""

from .analyse import identify
from .assertions import assert_rope_grad_matches, assert_rope_matches
from .axes_compare import assert_axes_match, compare_axes
from .axes_probe import identify_axes
from .axes_spec import AxesSpec
from .mismatch import KernelRaised, RopeMismatch
from .spec import RopeSpec
from .tolerances import (DYNAMIC_MIN_OFFSET, FREQ_ULPS, MAX_BYTES, MAX_OFFSET, MAX_ROWS, NAME_RTOL, NOISE_ULPS,
                         OFFSET_SIGMA, PRECISIONS, SIGMAS, STATE_RTOL, STRUCTURE_RTOL, ZERO_RTOL)

__all__ = ["RopeSpec", "identify", "assert_rope_matches", "assert_rope_grad_matches", "KernelRaised", "RopeMismatch",
           "AxesSpec", "identify_axes", "compare_axes", "assert_axes_match",
           "DYNAMIC_MIN_OFFSET", "FREQ_ULPS", "MAX_BYTES", "MAX_OFFSET", "MAX_ROWS", "NAME_RTOL", "NOISE_ULPS",
           "OFFSET_SIGMA", "PRECISIONS", "SIGMAS", "STATE_RTOL", "STRUCTURE_RTOL", "ZERO_RTOL"]
