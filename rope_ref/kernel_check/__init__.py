"""Black-box checking of a RoPE kernel: measure what it does (its pairs and its angle table), compute what it should do
with the oracle, and explain a difference only by a catalogue of known defects (docs/checking_kernels.md)."""

from .assertions import assert_rope_grad_matches, assert_rope_matches, expected_model, identify
from .axes import AXES_DEFECTS, assert_axes_match, identify_axes
from .defects import DEFECTS, Defect, Model, diagnose, explain
from .probe import KernelRaised
from .spec import AxesSpec, RopeMismatch, RopeSpec
