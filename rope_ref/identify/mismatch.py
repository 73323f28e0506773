"""How the assertions fail: :class:`RopeMismatch` (each difference on its own line) and :class:`KernelRaised`
(the function under test raised: never reported as a mismatch)."""

from __future__ import annotations


class RopeMismatch(AssertionError):
    """An AssertionError with each difference on its own line (``problems``) and the ``spec`` identified
    (a :class:`~rope_ref.identify.spec.RopeSpec`, or an :class:`~rope_ref.identify.axes_spec.AxesSpec` for
    multi-axis kernels).

    Its message: a title, the problems indented, then the whole spec (what a test run shows)."""

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
