"""What the 1-D and the multi-axis assertions share: the expected values checked, the pairing and precision
lines, and how they fail (:class:`RopeMismatch`; :class:`KernelRaised` when the function under test raised)."""

from __future__ import annotations

from .. import scaling
from .._validate import check_base, check_d, check_nonnegative_int, check_positive_real, check_scalar, closest_name

_PAIRINGS = ("interleaved", "half", "other")
#: The expected values that are names: each with its valid names, as the error lists them.
_NAMES = (("pairing", _PAIRINGS, "'interleaved', 'half' or 'other'"),
          ("output_pairing", (None, *_PAIRINGS), "None (pairs written in place), 'interleaved', 'half' or 'other'"),
          ("rope_type", scaling.ROPE_TYPES, f"one of {scaling.ROPE_TYPES}"))


class RopeMismatch(AssertionError):
    """An AssertionError with each difference on its own line (``problems``) and the ``spec`` identified (a RopeSpec
    or an AxesSpec); its message: a title, the problems indented, then the whole spec."""

    def __init__(self, title: str, problems: list, spec, spec_title: str = "identified"):
        message = (f"{title}:\n  " + "\n  ".join(problems) + f"\n{spec_title}: {spec}" if spec.is_rope
                   else "\n".join(problems))
        super().__init__(message)
        self.problems, self.spec = list(problems), spec


class KernelRaised(RuntimeError):
    """The function under test raised: reported as "fn raised ...", never as a RoPE mismatch."""


def raising_as(name, fn):
    """fn, with any exception it raises (AssertionError included) re-raised as KernelRaised."""
    if not callable(fn):
        return fn                       # identify names it
    def guarded(*args):
        try:
            return fn(*args)
        except Exception as err:
            raise KernelRaised(f"{name} raised {type(err).__name__}: {err}") from err
    return guarded


def check_expected(expected, phase_atol=None):
    """Expected values are the right kind of thing, named when not (``offset`` is made a float)."""
    if expected.get("offset") is not None:
        expected["offset"] = check_scalar(expected["offset"], "offset")
    for name, check in (("norm_scale", check_positive_real), ("base", check_base), ("rotary_dim", check_d)):
        if name in expected:
            check(expected[name], name)
    if "rotary_start" in expected:
        check_nonnegative_int(expected["rotary_start"], "rotary_start",
                              "a non-negative integer (the first rotated feature)")
    for name, valid, listed in _NAMES:
        if name in expected and expected[name] not in valid:
            raise ValueError(f"{name} must be {listed}, got {expected[name]!r}"
                             f"{closest_name(expected[name], [v for v in valid if v])}")
    if phase_atol is not None:
        check_positive_real(phase_atol, "phase_atol", "None or a positive number of radians")


def layout_problems(spec, pairing, rotary_dim, rotary_start) -> list:
    """The pairing, rotary_dim and rotary_start lines of a comparison (None: not checked) of either spec."""
    problems = []
    one_pair = spec.rotary_dim == 2 and {pairing, spec.pairing} <= {"half", "interleaved"}   # both names fit
    if pairing is not None and pairing != spec.pairing and not one_pair:
        shown = ", ".join(str(p) for p in spec.pairs[:3])
        problems.append(f"pairing: expected {pairing}, found {spec.pairing} (pairs {shown}, ...)")
    if rotary_dim is not None and rotary_dim != spec.rotary_dim:
        problems.append(f"rotary_dim: expected {rotary_dim}, found {spec.rotary_dim}")
    if rotary_start is not None and rotary_start != spec.rotary_start:
        problems.append(f"rotary_start: expected rotated features from {rotary_start}, found {spec.rotary_start}.."
                        f"{spec.rotary_start + spec.rotary_dim - 1} (pass rotary_start={spec.rotary_start} if "
                        "intended)")
    return problems


def precision_problems(spec, phase_atol, exact_angles, rounded_hint, plain_hint) -> list:
    """The angle precision line: angles off ``exact_angles`` by more than ``phase_atol`` radians, or without it, like
    a type coarser than float32 (``rounded_hint`` when cos/sin or the output was rounded, ``plain_hint`` else)."""
    if phase_atol is not None and spec.phase_error > phase_atol:
        return [f"angle precision: angles deviate from {exact_angles} by up to {spec.phase_error:.2g} rad "
                f"(> phase_atol={phase_atol:g})"]
    if phase_atol is None and spec.angle_precision not in ("float64", "float32"):
        hint = rounded_hint if spec.angle_precision.startswith("float32 (") else plain_hint
        return [f"angle precision: angles behave like {spec.angle_precision} (errors up to {spec.phase_error:.2g} "
                f"rad); {hint}"]
    return []
