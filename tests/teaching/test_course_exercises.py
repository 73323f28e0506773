"""Each exercise checker of notebooks 00-05 accepts a right answer, refuses a wrong one with its reason, and says
"Not answered yet" (returning False, raising nothing) for None.  The right answers are derived here without the
checker's code path: plain math/NumPy loops, hand-built 2x2 blocks, arithmetic."""

import cmath
import math

import numpy as np
import pytest

import rope_ref as rr
from rope_ref.teaching import exercises, quantities


def run(capsys, checker, *args, **kwargs):
    ok = checker(*args, **kwargs)
    out = capsys.readouterr().out.strip()
    assert "\n" not in out, f"a checker prints one line, got {out!r}"
    return ok, out


def verdict(capsys, checker, *args, expect=None, **kwargs):
    """The checker's verdict on ``args``: "Correct" (True), or with ``expect`` "Not yet" naming it (False)."""
    ok, out = run(capsys, checker, *args, **kwargs)
    assert (ok, out.startswith("Correct: " if expect is None else "Not yet: "), (expect or "") in out) == \
        (expect is None, True, True), out
    return out


# --- 00 ------------------------------------------------------------------------------------------------------------

def test_hand0_return(capsys):
    m = min(range(1, 101), key=lambda m: abs(m - round(m / (2 * math.pi)) * 2 * math.pi))    # closest to whole turns
    assert m == 44
    for answer, all_hands, expect in [(m, False, None), (6, False, "another position"), (88, False, "another position"),
                                      (44, True, "all hands"), (44.0, False, "integer"), (44, "no", "True or False")]:
        verdict(capsys, exercises.check_hand0_return, answer, all_hands, expect=expect)


# --- 01 ------------------------------------------------------------------------------------------------------------

def block_rotation(angle_per_pair):
    R = np.zeros((2 * len(angle_per_pair),) * 2)
    for i, a in enumerate(angle_per_pair):
        R[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]]
    return R


def test_relative_rotation(capsys):
    theta = [10000 ** (-2 * i / 16) for i in range(8)]
    Rm, Rn = block_rotation([5 * t for t in theta]), block_rotation([12.5 * t for t in theta])
    for answer, expect in [(Rm.T @ Rn, None), (Rm @ Rn.T, "sign is flipped"), (Rm @ Rn, "transpose"),
                           (Rm.T @ Rm, "orthogonality"), (np.eye(8), "shape (16, 16)")]:
        verdict(capsys, exercises.check_relative_rotation, answer, expect=expect)
    out = verdict(capsys, exercises.check_relative_rotation, 2 * Rm, expect="not R_m^T R_n")
    assert "R_(n-m)" not in out and "R_(m+n)" not in out, "the fallback names no other choice"


def rotated_by_loop(x, partner, sign=1.0, freq_of=lambda j: j // 2):
    """Eq 34 one feature at a time: j with (sign, index) ``partner(j)``, by ``sign * m * theta_(freq_of(j))``."""
    out = np.empty_like(x)
    for m in range(x.shape[0]):
        for j in range(x.shape[1]):
            angle = sign * m * 10000 ** (-2 * freq_of(j) / x.shape[1])
            sign_j, other = partner(j)
            out[m, j] = x[m, j] * math.cos(angle) + sign_j * x[m, other] * math.sin(angle)
    return out


def test_eq34(capsys):
    x = np.random.default_rng(1).standard_normal((32, 16))
    interleaved = lambda j: (-1, j + 1) if j % 2 == 0 else (1, j - 1)          # (-x2, x1, -x4, x3, ...)
    out = rotated_by_loop(x, interleaved)
    half = rotated_by_loop(x, lambda j: (-1, j + 8) if j < 8 else (1, j - 8), freq_of=lambda j: j % 8)
    for answer, expect in [(out, None), (half, "half-split"), (rotated_by_loop(x, interleaved, sign=-1.0), "wrong way"),
                           (x.copy(), "nothing was rotated"), (np.vstack([out[1:], out[:1]]), "rows"),
                           (out[:, :8], "shape")]:
        verdict(capsys, exercises.check_eq34, x, answer, expect=expect)
    tiled = rotated_by_loop(x, interleaved, freq_of=lambda j: j % 8)        # np.tile: theta_1..theta_8 twice
    assert "np.repeat" in verdict(capsys, exercises.check_eq34, x, tiled, expect="np.tile")


# --- 02 ------------------------------------------------------------------------------------------------------------

def test_predicted_angle(capsys):
    q, k = quantities.random_qk(16, seed=0)
    zq, zk = complex(q[4], q[5]), complex(k[4], k[5])
    theta2 = 10000 ** (-4 / 16)
    predicted = cmath.phase(zq) - cmath.phase(zk) + 6 * theta2
    in_degrees = predicted * 180 / math.pi
    for answer, expect in [(predicted, None), (predicted + 4 * math.pi, None),      # modulo 2 pi
                           (cmath.phase(zk) - cmath.phase(zq) + 6 * theta2, "content part has the wrong sign"),
                           (cmath.phase(zq) - cmath.phase(zk) - 6 * theta2, "position part has the wrong sign"),
                           (6 * theta2, "left out the content part"), ("1.2", "should be a finite number"),
                           (in_degrees, "degrees"), (round(in_degrees, 2), "degrees"), (in_degrees - 360, "degrees"),
                           (in_degrees + 5, "away from the measured")]:
        verdict(capsys, exercises.check_predicted_angle, answer, expect=expect)


# --- 03 ------------------------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_decay_prediction(capsys):
    far_5e5, far_1e4 = 12.58, 8.26        # the means over 128..256, recomputed in test_course_numbers' fig2 fixture
    for higher, mean, expect in [(True, far_5e5, None), (False, far_5e5, "slow pairs"), (True, far_1e4, "base 1e4"),
                                 (True, (64 + 1) / 2, "distance 0"), (True, far_5e5 + 0.5, "not"),
                                 ("yes", far_5e5, "True or False")]:
        verdict(capsys, exercises.check_decay_prediction, higher, mean, expect=expect)


# --- 04 ------------------------------------------------------------------------------------------------------------

def no_position_step(q, k, v, t, keys):
    """Query t attending keys and values 0..keys-1 with no rotation at all (every m - n is 0), in plain NumPy."""
    s = np.einsum("bhd,bhnd->bhn", q[:, :, t], k[:, :, :keys]) / 4.0
    w = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("bhn,bhnd->bhd", w / w.sum(-1, keepdims=True), v[:, :, :keys])[:, :, None, :]


def test_rerotating_cache(capsys):
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 4, 32, 16)) for _ in range(3))
    t = 20
    no_positions = no_position_step(q, k, v, t, t + 1)
    correct = rr.attention_dense(q, k, v, np.arange(32), np.arange(32), causal=True)[..., t:t + 1, :]
    for answer, lost, expect in [(no_positions, "positions", None), (no_positions, " Position", None),
                                 (correct, "positions", "correct decoder"), (no_positions, "the order", "one of"),
                                 (no_positions, 3, "one of")]:
        verdict(capsys, exercises.check_rerotating_cache, answer, lost, q, k, v, t=t, expect=expect)
    out = verdict(capsys, exercises.check_rerotating_cache, no_positions + 0.1, "positions", q, k, v, t=t,
                  expect="differs")
    assert "k_positions" not in out and "np.full" not in out, "the verdict does not print the call back"
    all_keys = no_position_step(q, k, v, t, 32)                     # every vector at t, but all 32 keys
    out = verdict(capsys, exercises.check_rerotating_cache, all_keys, "positions", q, k, v, t=t, expect="0..t")
    assert "at which position" not in out, "the hint points at what is wrong (the keys attended), not at what was right"
    for lost in ["content", "values", "nothing"]:                     # no hint names the right choice
        out = verdict(capsys, exercises.check_rerotating_cache, no_positions, lost, q, k, v, t=t,
                      expect=f"not {lost.rstrip('s')}")
        assert "position" not in out.lower()


# --- 05 ------------------------------------------------------------------------------------------------------------

def test_dynamic_ntk_factors(capsys):
    s = 4
    for at_4x, at_2x, expect in [(s * 4 - (s - 1), s * 2 - (s - 1), None), (4, 4, "configured factor"),
                                 (16, 8, "subtracts"), (13, 8, "at_2x")]:
        verdict(capsys, exercises.check_dynamic_ntk_factors, at_4x, at_2x, expect=expect)


# --- every checker: None is "not answered yet"; NaN or a wrong type gets a verdict, never an exception --------------

QKV = tuple(np.random.default_rng(0).standard_normal((2, 4, 32, 16)) for _ in range(3))
CALLS = [  # (checker, arguments, the answer slots among them)
    (exercises.check_hand0_return, (44, False), (0, 1)), (exercises.check_relative_rotation, (np.eye(16),), (0,)),
    (exercises.check_eq34, (np.ones((32, 16)), np.ones((32, 16))), (1,)),
    (exercises.check_predicted_angle, (1.0,), (0,)), (exercises.check_decay_prediction, (True, 12.58), (0, 1)),
    (exercises.check_dynamic_ntk_factors, (13, 5), (0, 1)),
    (exercises.check_rerotating_cache, (np.zeros((2, 4, 1, 16)), "positions", *QKV), (0, 1)),
    (exercises.check_reduced_cast_error, (1e-3,), (0,)), (exercises.check_planted_bug, ("offset",), (0,)),
    (exercises.check_supported_context, (1,), (0,)), (exercises.check_diagonal_norm, (1,), (0,)),
    (exercises.check_text_after_image, (10,), (0,)), (exercises.check_same_score_patch, ((1, 2),), (0,)),
    (exercises.check_mystery_rope, ("A",), (0,)),
]
NAN = float("nan")
ODD = [None, NAN, np.float32(NAN), np.float64(NAN), [NAN] * 3, (NAN, NAN), np.full((2, 4, 1, 16), NAN), "x"]


@pytest.mark.parametrize("checker,args,slots", CALLS, ids=lambda a: getattr(a, "__name__", ""))
def test_an_odd_answer_gets_a_verdict_not_an_exception(capsys, checker, args, slots):
    for slot in slots:
        for odd in ODD:
            ok, out = run(capsys, checker, *args[:slot], odd, *args[slot + 1:])
            assert ok is False and out.startswith("Not answered yet" if odd is None else "Not yet: "), (odd, out)
