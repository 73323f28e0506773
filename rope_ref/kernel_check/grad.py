"""assert_rope_grad_matches: a RoPE backward pass against what the forward should be.

The forward maps row r by R(r) = s * rotation by (offset + r) * theta_p in each pair (eq 34);
its vector-Jacobian product is g -> R(r)^T g = s * rotation by -(offset + r) * theta_p: the
inverse rotation (a rotation matrix's transpose is its inverse).  So the map g -> vjp(x, g) is
itself a rotary embedding, with every frequency negated, and identify measures it like any
forward kernel; the frequencies are then negated back and compared with the forward's
expectations, with the same tolerances and the same report.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .analyse import identify
from .assertions import prepare_expected, compare
from .mismatch import RopeMismatch, raising_as
from .spec import RopeSpec
from .tolerances import MAX_BYTES, MAX_ROWS


def assert_rope_grad_matches(vjp, d: int | None = None, *, config=None, seq: int = 64,
                             phase_atol: float | None = None, max_rows: int = MAX_ROWS, max_bytes: int = MAX_BYTES,
                             **expected) -> RopeSpec:
    """Raise AssertionError naming every way the backward pass ``vjp`` differs from that of the RoPE expected.

    ``vjp(x, g) -> dx``: x and g of shape ``(seq, d)`` (rows at positions offset, offset + 1, ...),
    dx the gradient with respect to x of ``sum(fn(x) * g)`` for the forward ``fn`` (e.g.
    ``torch.autograd.grad((fn(x) * g).sum(), x)[0]``), any array type :func:`identify` accepts.
    The expected gradient is the inverse rotation of g, by -(offset + r) * theta_p in each pair
    (times the norm scale).  ``d``, ``config``, ``seq``, ``phase_atol``, ``max_rows``, ``max_bytes`` and the
    expectations are those of :func:`assert_rope_matches`, of the forward pass: with ``config``, row 0
    is at position 0 unless ``offset=`` says otherwise (``offset=None`` skips the check).  A backward
    that rotates forward (returns R g instead of R^T g) and one whose pairs differ from the expected
    forward's are named as such.  An exception raised inside ``vjp`` is re-raised as a RuntimeError
    "vjp raised ...".  Returns the :class:`RopeSpec` of the forward rotation the backward implies.

    >>> import rope_ref as rr, numpy as np
    >>> back = lambda x, g: rr.rotate(g, np.arange(len(g)), inv_freq=-rr.frequencies(8))
    >>> spec = rr.assert_rope_grad_matches(back, 8, base=1e4, offset=0)
    """
    d, expected = prepare_expected(d, config, expected, phase_atol)
    guarded = raising_as("vjp", vjp)
    xs = {}

    def g_to_dx(g):
        """The backward as a function of g alone, at one fixed random x per shape."""
        if g.shape not in xs:
            xs[g.shape] = np.random.default_rng(len(g)).standard_normal(g.shape)
        return guarded(xs[g.shape].copy(), g)
    back = identify(g_to_dx, d, seq=seq, base_hint=expected.get("base"), max_rows=max_rows,
                    max_bytes=max_bytes)
    if not back.is_rope:
        raise RopeMismatch("", [f"backward: {back}"], back)
    spec = _forward_of(back)
    problems = compare(spec, expected, phase_atol, what="vjp")
    problems = [_backward_words(p, back) for p in problems]
    if problems:
        raise RopeMismatch("RoPE backward mismatch (vjp(x, g) should rotate g by minus the forward angles)",
                           problems, back, "identified backward, as a rotation of g")
    return spec


def _forward_of(back: RopeSpec) -> RopeSpec:
    """The forward rotation whose vjp ``back`` is: every frequency negated (the names, from |theta|, stay)."""
    notes = [n for n in back.notes if "clockwise" not in n]
    return dataclasses.replace(back, inv_freq=-back.inv_freq, notes=notes)


def _backward_words(problem: str, back: RopeSpec) -> str:
    """A forward report line, said of the backward."""
    if "every sign flipped: rotation is clockwise" in problem:
        return (problem.replace("(every sign flipped: rotation is clockwise)",
                                "(wrong direction: the backward rotates g forward, by +angles, instead of applying "
                                "the inverse rotation R^T)").replace("frequencies:", "backward frequencies:", 1))
    if problem.startswith("pairing:"):
        return "backward " + problem + " (wrong pairing in the backward: it rotates other pairs than the forward)"
    return "backward " + problem
