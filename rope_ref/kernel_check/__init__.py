"""Black-box checking of a RoPE kernel: which pairing, base, offset, scaling (``identify``), and how it differs
from what you expect (``assert_rope_matches``, ``assert_rope_grad_matches`` for a backward pass).  A 1-D kernel
``fn(x)`` is the one-axis case of a multi-axis one ``fn(x, positions)`` (``axes=A``).  The modules and how the
measurement works: docs/identify_internals.md."""

from .analyse import identify
from .assertions import assert_rope_grad_matches, assert_rope_matches
from .axes_compare import assert_axes_match, compare_axes
from .axes_probe import identify_axes
from .spec import AxesSpec, KernelRaised, RopeMismatch, RopeSpec
from .tolerances import (DYNAMIC_MIN_OFFSET, FREQ_ULPS, MAX_BYTES, MAX_OFFSET, MAX_ROWS, NAME_RTOL, NOISE_ULPS,
                         OFFSET_SIGMA, PRECISIONS, SIGMAS, STATE_RTOL, STRUCTURE_RTOL, TIMEOUT, ZERO_RTOL)

__all__ = ["RopeSpec", "identify", "assert_rope_matches", "assert_rope_grad_matches", "KernelRaised", "RopeMismatch",
           "AxesSpec", "identify_axes", "compare_axes", "assert_axes_match",
           "DYNAMIC_MIN_OFFSET", "FREQ_ULPS", "MAX_BYTES", "MAX_OFFSET", "MAX_ROWS", "NAME_RTOL", "NOISE_ULPS",
           "OFFSET_SIGMA", "PRECISIONS", "SIGMAS", "STATE_RTOL", "STRUCTURE_RTOL", "TIMEOUT", "ZERO_RTOL"]
