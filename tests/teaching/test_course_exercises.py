"""Each exercise checker of notebooks 00-05 accepts a right answer, refuses a wrong one with its reason, and says
"Not answered yet" (returning False, raising nothing) for None.  The right answers are derived here without the
checker's code path: plain math/NumPy loops, hand-built 2x2 blocks, arithmetic."""

import cmath
import math

import numpy as np
import pytest

from rope_ref.teaching import exercises, quantities


def run(capsys, checker, *args, **kwargs):
    ok = checker(*args, **kwargs)
    out = capsys.readouterr().out.strip()
    assert "\n" not in out, f"a checker prints one line, got {out!r}"
    return ok, out


def right(capsys, checker, *args, **kwargs):
    ok, out = run(capsys, checker, *args, **kwargs)
    assert ok is True and out.startswith("Correct: "), out
    return out


def wrong(capsys, checker, *args, expect: str, **kwargs):
    ok, out = run(capsys, checker, *args, **kwargs)
    assert ok is False and out.startswith("Not yet: ") and expect in out, out
    return out


# --- 00 ------------------------------------------------------------------------------------------------------------

def closest_return():
    best, best_off = None, 10.0
    for m in range(1, 101):
        off = abs(m - round(m / (2 * math.pi)) * 2 * math.pi)
        if off < best_off:
            best, best_off = m, off
    return best


def test_hand0_return(capsys):
    m = closest_return()
    assert m == 44
    right(capsys, exercises.check_hand0_return, m, False)
    wrong(capsys, exercises.check_hand0_return, 6, False, expect="another position")
    wrong(capsys, exercises.check_hand0_return, 88, False, expect="another position")
    wrong(capsys, exercises.check_hand0_return, 44, True, expect="other hands")
    wrong(capsys, exercises.check_hand0_return, 44.0, False, expect="integer")
    wrong(capsys, exercises.check_hand0_return, 44, "no", expect="True or False")


# --- 01 ------------------------------------------------------------------------------------------------------------

def block_rotation(angle_per_pair):
    R = np.zeros((2 * len(angle_per_pair),) * 2)
    for i, a in enumerate(angle_per_pair):
        R[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]]
    return R


def test_relative_rotation(capsys):
    theta = [10000 ** (-2 * i / 16) for i in range(8)]
    Rm, Rn = block_rotation([5 * t for t in theta]), block_rotation([12.5 * t for t in theta])
    right(capsys, exercises.check_relative_rotation, Rm.T @ Rn)
    wrong(capsys, exercises.check_relative_rotation, Rm @ Rn.T, expect="sign is flipped")
    wrong(capsys, exercises.check_relative_rotation, Rm @ Rn, expect="transpose")
    wrong(capsys, exercises.check_relative_rotation, Rm.T @ Rm, expect="orthogonality")
    wrong(capsys, exercises.check_relative_rotation, np.eye(8), expect="shape")


def test_eq34(capsys):
    x = np.random.default_rng(1).standard_normal((32, 16))
    out = np.empty_like(x)
    for m in range(32):                                  # one position and one pair at a time
        for i in range(8):
            z = complex(x[m, 2 * i], x[m, 2 * i + 1]) * cmath.exp(1j * m * 10000 ** (-2 * i / 16))
            out[m, 2 * i], out[m, 2 * i + 1] = z.real, z.imag
    right(capsys, exercises.check_eq34, x, out)
    half = np.concatenate([x[:, 0::2], x[:, 1::2]], axis=1)   # the same numbers, features in half-split order
    half_rotated = np.empty_like(x)
    for m in range(32):                                  # pairs (x_i, x_(i+8)) rotated: the half-split convention
        for i in range(8):
            z = complex(x[m, i], x[m, i + 8]) * cmath.exp(1j * m * 10000 ** (-2 * i / 16))
            half_rotated[m, i], half_rotated[m, i + 8] = z.real, z.imag
    wrong(capsys, exercises.check_eq34, x, half_rotated, expect="half-split")
    assert half.shape == x.shape
    back = np.empty_like(x)
    for m in range(32):
        for i in range(8):
            z = complex(x[m, 2 * i], x[m, 2 * i + 1]) * cmath.exp(-1j * m * 10000 ** (-2 * i / 16))
            back[m, 2 * i], back[m, 2 * i + 1] = z.real, z.imag
    wrong(capsys, exercises.check_eq34, x, back, expect="wrong way")
    wrong(capsys, exercises.check_eq34, x, x.copy(), expect="nothing was rotated")
    # the frequencies widened with np.tile (theta_1..theta_8, theta_1..theta_8) instead of np.repeat
    tiled = np.empty_like(x)
    for m in range(32):
        for j in range(16):
            angle = m * 10000 ** (-2 * (j % 8) / 16)                # column j gets theta_(j mod 8)
            partner = -x[m, j + 1] if j % 2 == 0 else x[m, j - 1]    # rotate_half, interleaved
            tiled[m, j] = x[m, j] * math.cos(angle) + partner * math.sin(angle)
    assert not np.allclose(tiled, out)
    wrong(capsys, exercises.check_eq34, x, tiled, expect="np.tile")
    assert "np.repeat" in wrong(capsys, exercises.check_eq34, x, tiled, expect="np.tile")
    shifted = np.vstack([out[1:], out[:1]])
    wrong(capsys, exercises.check_eq34, x, shifted, expect="rows")
    wrong(capsys, exercises.check_eq34, x, out[:, :8], expect="shape")


# --- 02 ------------------------------------------------------------------------------------------------------------

def test_predicted_angle(capsys):
    q, k = quantities.random_qk(16, seed=0)
    zq, zk = complex(q[4], q[5]), complex(k[4], k[5])
    theta2 = 10000 ** (-4 / 16)
    predicted = cmath.phase(zq) - cmath.phase(zk) + 6 * theta2
    right(capsys, exercises.check_predicted_angle, predicted)
    right(capsys, exercises.check_predicted_angle, predicted + 4 * math.pi)        # modulo 2 pi
    wrong(capsys, exercises.check_predicted_angle, cmath.phase(zk) - cmath.phase(zq) + 6 * theta2,
          expect="content part has the wrong sign")
    wrong(capsys, exercises.check_predicted_angle, cmath.phase(zq) - cmath.phase(zk) - 6 * theta2,
          expect="position part has the wrong sign")
    wrong(capsys, exercises.check_predicted_angle, 6 * theta2, expect="left out the content part")
    wrong(capsys, exercises.check_predicted_angle, "1.2", expect="should be a number")
    in_degrees = predicted * 180 / math.pi
    wrong(capsys, exercises.check_predicted_angle, in_degrees, expect="degrees")
    wrong(capsys, exercises.check_predicted_angle, round(in_degrees, 2), expect="degrees")
    wrong(capsys, exercises.check_predicted_angle, in_degrees - 360, expect="degrees")
    wrong(capsys, exercises.check_predicted_angle, in_degrees + 5, expect="away from the measured")


# --- 03 ------------------------------------------------------------------------------------------------------------

def far_mean_of_the_bound(base):
    """Figure 2's curve (d = 128) averaged over the distances 128, 128.01, ..., 256, one distance at a time."""
    thetas = [base ** (-2 * i / 128) for i in range(64)]
    total, count = 0.0, 0
    for step in range(12800, 25601):
        partial, sizes = 0j, 0.0
        for th in thetas:
            partial += cmath.exp(1j * step / 100 * th)
            sizes += abs(partial)
        total += sizes / 64
        count += 1
    return total / count


@pytest.mark.slow
def test_decay_prediction(capsys):
    far_5e5, far_1e4 = far_mean_of_the_bound(5e5), far_mean_of_the_bound(1e4)
    assert f"{far_5e5:.2f}" == "12.58" and f"{far_1e4:.2f}" == "8.26"
    right(capsys, exercises.check_decay_prediction, True, far_5e5)
    right(capsys, exercises.check_decay_prediction, True, round(far_5e5, 2))
    wrong(capsys, exercises.check_decay_prediction, False, far_5e5, expect="slow pairs")
    wrong(capsys, exercises.check_decay_prediction, True, far_1e4, expect="base 1e4")
    wrong(capsys, exercises.check_decay_prediction, True, (64 + 1) / 2, expect="distance 0")
    wrong(capsys, exercises.check_decay_prediction, True, far_5e5 + 0.5, expect="not")
    wrong(capsys, exercises.check_decay_prediction, "yes", far_5e5, expect="True or False")


# --- 04 ------------------------------------------------------------------------------------------------------------

def test_rerotating_cache(capsys):
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 4, 32, 16)) for _ in range(3))
    t = 20
    s = np.einsum("bhd,bhnd->bhn", q[:, :, t], k[:, :, :t + 1]) / 4.0   # no rotation at all: every m - n is 0
    w = np.exp(s - s.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    no_positions = np.einsum("bhn,bhnd->bhd", w, v[:, :, :t + 1])[:, :, None, :]
    right(capsys, exercises.check_rerotating_cache, no_positions, "positions", q, k, v, t=t)
    right(capsys, exercises.check_rerotating_cache, no_positions, " Position", q, k, v, t=t)
    import rope_ref as rr
    correct = rr.attention_dense(q, k, v, np.arange(32), np.arange(32), causal=True)[..., t:t + 1, :]
    wrong(capsys, exercises.check_rerotating_cache, correct, "positions", q, k, v, t=t, expect="correct decoder")
    out = wrong(capsys, exercises.check_rerotating_cache, no_positions + 0.1, "positions", q, k, v, t=t,
                expect="differs")
    assert "k_positions" not in out and "np.full" not in out, "the verdict does not print the call back"
    for lost in ["content", "values", "nothing"]:
        wrong(capsys, exercises.check_rerotating_cache, no_positions, lost, q, k, v, t=t, expect=f"not {lost}")
    wrong(capsys, exercises.check_rerotating_cache, no_positions, "the order", q, k, v, t=t, expect="one of")
    wrong(capsys, exercises.check_rerotating_cache, no_positions, 3, q, k, v, t=t, expect="one of")


# --- 05 ------------------------------------------------------------------------------------------------------------

def test_dynamic_ntk_factors(capsys):
    s = 4
    right(capsys, exercises.check_dynamic_ntk_factors, s * 4 - (s - 1), s * 2 - (s - 1))
    wrong(capsys, exercises.check_dynamic_ntk_factors, 4, 4, expect="configured factor")
    wrong(capsys, exercises.check_dynamic_ntk_factors, 16, 8, expect="subtracts")
    wrong(capsys, exercises.check_dynamic_ntk_factors, 13, 8, expect="at_2x")


# --- every checker: None is "not answered yet", no exception -------------------------------------------------------

@pytest.mark.parametrize("checker,args", [
    (exercises.check_hand0_return, (None, None)), (exercises.check_relative_rotation, (None,)),
    (exercises.check_eq34, (np.zeros((2, 4)), None)), (exercises.check_predicted_angle, (None,)),
    (exercises.check_decay_prediction, (True, None)), (exercises.check_dynamic_ntk_factors, (13, None)),
    (exercises.check_rerotating_cache, (None, "positions", np.zeros((3, 2)), np.zeros((3, 2)), np.zeros((3, 2)))),
    (exercises.check_rerotating_cache, (np.zeros((1, 2)), None, np.zeros((3, 2)), np.zeros((3, 2)), np.zeros((3, 2)))),
])
def test_unanswered_is_not_an_error(capsys, checker, args):
    ok, out = run(capsys, checker, *args)
    assert ok is False and out.startswith("Not answered yet")


def test_every_public_checker_is_tested():
    import inspect
    import sys
    names = {n for n, f in inspect.getmembers(exercises, inspect.isfunction)
             if n.startswith("check_") and f.__module__ == exercises.__name__}
    source = inspect.getsource(sys.modules[__name__])
    assert names and all(f"right(capsys, exercises.{n}" in source for n in names), names


# --- every checker of every notebook: a NaN answer gets a verdict, not an exception ----------------------------------

NAN = float("nan")
QKV = tuple(np.random.default_rng(0).standard_normal((2, 4, 32, 16)) for _ in range(3))


def nan_answers():
    """(checker, arguments) with NaN (or an array holding one) in each answer slot in turn, the other answers right."""
    from rope_ref.teaching import exercises_extensions as extensions
    nan_array = np.full((32, 16), NAN)
    nan_step = np.full((2, 4, 1, 16), NAN)
    return [
        (exercises.check_hand0_return, (NAN, False)), (exercises.check_hand0_return, (44, NAN)),
        (exercises.check_relative_rotation, (np.full((16, 16), NAN),)),
        (exercises.check_eq34, (np.ones((32, 16)), nan_array)),
        (exercises.check_predicted_angle, (NAN,)), (exercises.check_predicted_angle, (np.float32(NAN),)),
        (exercises.check_decay_prediction, (True, NAN)), (exercises.check_decay_prediction, (NAN, 12.58)),
        (exercises.check_rerotating_cache, (nan_step, "positions", *QKV)),
        (exercises.check_rerotating_cache, (nan_step[..., 0, 0], NAN, *QKV)),
        (exercises.check_dynamic_ntk_factors, (NAN, 5)), (exercises.check_dynamic_ntk_factors, (13, NAN)),
        (exercises.check_dynamic_ntk_factors, (np.float64(NAN), np.float64(NAN))),
        (extensions.check_reduced_cast_error, (NAN,)),
        (extensions.check_planted_bug, (NAN,)), (extensions.check_planted_bug, (np.float64(NAN),)),
        (extensions.check_supported_context, (NAN,)), (extensions.check_diagonal_norm, (NAN,)),
        (extensions.check_text_after_image, (NAN,)),
        (extensions.check_text_after_image, ([NAN] * 3,)),
        (extensions.check_same_score_patch, ((NAN, NAN),)),
        (extensions.check_same_score_patch, (np.array([NAN, 1.0]),)),
        (extensions.check_mystery_rope, (NAN,)),
    ]


@pytest.mark.parametrize("checker,args", nan_answers(), ids=lambda a: getattr(a, "__name__", ""))
def test_a_nan_answer_gets_a_verdict_not_an_exception(capsys, checker, args):
    ok, out = run(capsys, checker, *args)
    assert ok is False and out.startswith("Not yet: "), out


def test_every_checker_of_every_module_is_tried_with_nan():
    import importlib
    import pkgutil
    import rope_ref.teaching as teaching
    modules = [importlib.import_module(f"rope_ref.teaching.{m.name}") for m in pkgutil.iter_modules(teaching.__path__)
               if m.name.startswith("exercises")]
    checkers = {f for module in modules for name, f in vars(module).items()
                if name.startswith("check_") and callable(f) and f.__module__ == module.__name__}
    tried = {checker for checker, _ in nan_answers()}
    assert len(modules) >= 2 and checkers and checkers <= tried, sorted(f.__name__ for f in checkers - tried)
