"""Each exercise checker of notebooks 00-05 accepts a right answer, refuses a wrong one with its reason, and says
"Not answered yet" (returning False, raising nothing) for None.  The right answers are derived here without the
checker's code path: plain math/NumPy loops, hand-built 2x2 blocks, arithmetic."""

import cmath
import math

import numpy as np
import pytest

import rope_ref as rr
from rope_ref.teaching import exercises, quantities
from rope_ref.teaching import exercises_extensions as extensions


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
    verdict(capsys, exercises.check_hand0_return, m, False)
    verdict(capsys, exercises.check_hand0_return, 6, False, expect="another position")
    verdict(capsys, exercises.check_hand0_return, 88, False, expect="another position")
    verdict(capsys, exercises.check_hand0_return, 44, True, expect="all hands")
    verdict(capsys, exercises.check_hand0_return, 44.0, False, expect="integer")
    verdict(capsys, exercises.check_hand0_return, 44, "no", expect="True or False")


# --- 01 ------------------------------------------------------------------------------------------------------------

def block_rotation(angle_per_pair):
    R = np.zeros((2 * len(angle_per_pair),) * 2)
    for i, a in enumerate(angle_per_pair):
        R[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]]
    return R


def test_relative_rotation(capsys):
    theta = [10000 ** (-2 * i / 16) for i in range(8)]
    Rm, Rn = block_rotation([5 * t for t in theta]), block_rotation([12.5 * t for t in theta])
    verdict(capsys, exercises.check_relative_rotation, Rm.T @ Rn)
    verdict(capsys, exercises.check_relative_rotation, Rm @ Rn.T, expect="sign is flipped")
    verdict(capsys, exercises.check_relative_rotation, Rm @ Rn, expect="transpose")
    verdict(capsys, exercises.check_relative_rotation, Rm.T @ Rm, expect="orthogonality")
    verdict(capsys, exercises.check_relative_rotation, np.eye(8), expect="shape (16, 16)")
    out = verdict(capsys, exercises.check_relative_rotation, 2 * Rm, expect="not R_m^T R_n")
    assert "R_(n-m)" not in out and "R_(m+n)" not in out, "the fallback names no other choice"


def rotated_by_loop(x, partner, sign=1.0, freq_of=lambda j: j // 2):
    """Eq 34 one position and one feature at a time: feature j with ``partner(j)`` (the other member of its pair, with
    rotate_half's sign) turned by ``sign * m * theta_(freq_of(j))``."""
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
    verdict(capsys, exercises.check_eq34, x, out)
    half = rotated_by_loop(x, lambda j: (-1, j + 8) if j < 8 else (1, j - 8), freq_of=lambda j: j % 8)
    verdict(capsys, exercises.check_eq34, x, half, expect="half-split")
    verdict(capsys, exercises.check_eq34, x, rotated_by_loop(x, interleaved, sign=-1.0), expect="wrong way")
    verdict(capsys, exercises.check_eq34, x, x.copy(), expect="nothing was rotated")
    tiled = rotated_by_loop(x, interleaved, freq_of=lambda j: j % 8)        # np.tile: theta_1..theta_8 twice
    assert "np.repeat" in verdict(capsys, exercises.check_eq34, x, tiled, expect="np.tile")
    verdict(capsys, exercises.check_eq34, x, np.vstack([out[1:], out[:1]]), expect="rows")
    verdict(capsys, exercises.check_eq34, x, out[:, :8], expect="shape")


# --- 02 ------------------------------------------------------------------------------------------------------------

def test_predicted_angle(capsys):
    q, k = quantities.random_qk(16, seed=0)
    zq, zk = complex(q[4], q[5]), complex(k[4], k[5])
    theta2 = 10000 ** (-4 / 16)
    predicted = cmath.phase(zq) - cmath.phase(zk) + 6 * theta2
    verdict(capsys, exercises.check_predicted_angle, predicted)
    verdict(capsys, exercises.check_predicted_angle, predicted + 4 * math.pi)        # modulo 2 pi
    verdict(capsys, exercises.check_predicted_angle, cmath.phase(zk) - cmath.phase(zq) + 6 * theta2,
          expect="content part has the wrong sign")
    verdict(capsys, exercises.check_predicted_angle, cmath.phase(zq) - cmath.phase(zk) - 6 * theta2,
          expect="position part has the wrong sign")
    verdict(capsys, exercises.check_predicted_angle, 6 * theta2, expect="left out the content part")
    verdict(capsys, exercises.check_predicted_angle, "1.2", expect="should be a finite number")
    in_degrees = predicted * 180 / math.pi
    verdict(capsys, exercises.check_predicted_angle, in_degrees, expect="degrees")
    verdict(capsys, exercises.check_predicted_angle, round(in_degrees, 2), expect="degrees")
    verdict(capsys, exercises.check_predicted_angle, in_degrees - 360, expect="degrees")
    verdict(capsys, exercises.check_predicted_angle, in_degrees + 5, expect="away from the measured")


# --- 03 ------------------------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_decay_prediction(capsys):
    far_5e5, far_1e4 = 12.58, 8.26        # the means over 128..256, recomputed in test_course_numbers' fig2 fixture
    verdict(capsys, exercises.check_decay_prediction, True, far_5e5)
    verdict(capsys, exercises.check_decay_prediction, False, far_5e5, expect="slow pairs")
    verdict(capsys, exercises.check_decay_prediction, True, far_1e4, expect="base 1e4")
    verdict(capsys, exercises.check_decay_prediction, True, (64 + 1) / 2, expect="distance 0")
    verdict(capsys, exercises.check_decay_prediction, True, far_5e5 + 0.5, expect="not")
    verdict(capsys, exercises.check_decay_prediction, "yes", far_5e5, expect="True or False")


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
    verdict(capsys, exercises.check_rerotating_cache, no_positions, "positions", q, k, v, t=t)
    verdict(capsys, exercises.check_rerotating_cache, no_positions, " Position", q, k, v, t=t)
    correct = rr.attention_dense(q, k, v, np.arange(32), np.arange(32), causal=True)[..., t:t + 1, :]
    verdict(capsys, exercises.check_rerotating_cache, correct, "positions", q, k, v, t=t, expect="correct decoder")
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
    verdict(capsys, exercises.check_rerotating_cache, no_positions, "the order", q, k, v, t=t, expect="one of")
    verdict(capsys, exercises.check_rerotating_cache, no_positions, 3, q, k, v, t=t, expect="one of")


# --- 05 ------------------------------------------------------------------------------------------------------------

def test_dynamic_ntk_factors(capsys):
    s = 4
    verdict(capsys, exercises.check_dynamic_ntk_factors, s * 4 - (s - 1), s * 2 - (s - 1))
    verdict(capsys, exercises.check_dynamic_ntk_factors, 4, 4, expect="configured factor")
    verdict(capsys, exercises.check_dynamic_ntk_factors, 16, 8, expect="subtracts")
    verdict(capsys, exercises.check_dynamic_ntk_factors, 13, 8, expect="at_2x")


# --- every checker: None is "not answered yet"; NaN or a wrong type gets a verdict, never an exception --------------

QKV = tuple(np.random.default_rng(0).standard_normal((2, 4, 32, 16)) for _ in range(3))
CALLS = [  # (checker, arguments, the answer slots among them)
    (exercises.check_hand0_return, (44, False), (0, 1)), (exercises.check_relative_rotation, (np.eye(16),), (0,)),
    (exercises.check_eq34, (np.ones((32, 16)), np.ones((32, 16))), (1,)),
    (exercises.check_predicted_angle, (1.0,), (0,)), (exercises.check_decay_prediction, (True, 12.58), (0, 1)),
    (exercises.check_dynamic_ntk_factors, (13, 5), (0, 1)),
    (exercises.check_rerotating_cache, (np.zeros((2, 4, 1, 16)), "positions", *QKV), (0, 1)),
    (extensions.check_reduced_cast_error, (1e-3,), (0,)), (extensions.check_planted_bug, ("offset",), (0,)),
    (extensions.check_supported_context, (1,), (0,)), (extensions.check_diagonal_norm, (1,), (0,)),
    (extensions.check_text_after_image, (10,), (0,)), (extensions.check_same_score_patch, ((1, 2),), (0,)),
    (extensions.check_mystery_rope, ("A",), (0,)),
]
NAN = float("nan")
ODD = [None, NAN, np.float32(NAN), np.float64(NAN), [NAN] * 3, (NAN, NAN), np.full((2, 4, 1, 16), NAN), "x"]


@pytest.mark.parametrize("checker,args,slots", CALLS, ids=lambda a: getattr(a, "__name__", ""))
def test_an_odd_answer_gets_a_verdict_not_an_exception(capsys, checker, args, slots):
    for slot in slots:
        for odd in ODD:
            ok, out = run(capsys, checker, *args[:slot], odd, *args[slot + 1:])
            assert ok is False and out.startswith("Not answered yet" if odd is None else "Not yet: "), (odd, out)
