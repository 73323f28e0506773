"""Checkers for the exercises of notebooks 00-05: each prints one line, returns a bool and raises nothing (NaN
included): ``Not answered yet ...`` (False) while an answer is ``None``, so Run All works; ``Correct: ...`` (True);
``Not yet: <why>`` (False), naming a common mistake without giving the right value away (answers from :mod:`rope_ref`).
"""

import numbers

import numpy as np

from ..rope_attention import attention
from ..forms import decay_bound, frequencies, rotate, rotation_matrix, wrap_angle
from .quantities import random_qk


def verdict(ok: bool, text: str) -> bool:
    """Print the checker's one line, "Correct: ..." or "Not yet: ...", and return ``ok``."""
    print(("Correct: " if ok else "Not yet: ") + text)
    return ok


def unanswered(*answers, hint: str) -> bool:
    """True (after printing "Not answered yet: <hint>") while any answer is still ``None``."""
    if any(a is None for a in answers):
        print(f"Not answered yet: {hint}")
        return True
    return False


def _number(value, name: str, hint: str = ""):
    """A finite real number (not a bool) as a float, or None after a printed explanation (None: not answered yet)."""
    if unanswered(value, hint=hint):
        return None
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        print(f"Not yet: {name} should be a number, got {value!r}")
        return None
    if not np.isfinite(value):
        print(f"Not yet: {name} should be a finite number, got {float(value)!r}")
        return None
    return float(value)


def _array(value, shape, name: str, hint: str = ""):
    """A finite float array of ``shape``, or None with a printed explanation (None: not answered yet, ``hint``)."""
    if unanswered(value, hint=hint):
        return None
    try:
        a = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        print(f"Not yet: {name} should be an array of shape {shape}, got {type(value).__name__}")
        return None
    if a.shape != tuple(shape):
        print(f"Not yet: {name} should have shape {tuple(shape)}, got {a.shape}")
        return None
    if not np.all(np.isfinite(a)):
        print(f"Not yet: {name} contains inf or nan")
        return None
    return a


def judge(is_answer, right, correct: str, mistakes, otherwise: str) -> bool:
    """The verdict on an answer, which ``is_answer(value)`` compares with a value: ``correct`` when it is ``right``,
    else the reason of the first (wrong value, reason) pair of ``mistakes`` it is, else ``otherwise``."""
    if is_answer(right):
        return verdict(True, correct)
    return verdict(False, next((why for wrong, why in mistakes if is_answer(wrong)), otherwise))


def check_hand0_return(m, confused_with_all_hands) -> bool:
    """Notebook 00: the position 1..100 hand 0 (theta_0 = 1) confuses most with 0, and whether all of d = 8 does."""
    if unanswered(m, confused_with_all_hands, hint="set m (a position 1..100) and confused_with_all_hands "
                                                    "(True or False), then run this cell"):
        return False
    if isinstance(m, bool) or not isinstance(m, numbers.Integral) or not 1 <= m <= 100:
        return verdict(False, f"m should be an integer position from 1 to 100, got {m!r}")
    if not isinstance(confused_with_all_hands, (bool, np.bool_)):
        return verdict(False, f"confused_with_all_hands should be True or False, got {confused_with_all_hands!r}")
    positions = np.arange(1, 101)
    off = np.abs(wrap_angle(positions * frequencies(8)[0]))        # hand 0's distance from a whole turn
    best = int(positions[np.argmin(off)])
    if m != best:
        return verdict(False, f"at m = {m} hand 0 is {off[m - 1]:.3f} rad from a whole turn; another position "
                              "between 1 and 100 comes closer (compute |wrap_angle(m * theta_0)| for every m and take "
                              "the smallest)")
    if bool(confused_with_all_hands):
        return verdict(False, f"m = {m} is right for hand 0, but look at the other hands: compare |R_m u - u| for "
                              "u = (1, 0, 1, 0, 1, 0, 1, 0) (all hands) with hand 0 alone, |e^(im) - 1|")
    return verdict(True, f"hand 0 comes within {off.min():.3f} rad of home at m = {m}, but hand 1 "
                         f"(theta_1 = 0.1) is then at {wrap_angle(m * 0.1):.2f} rad, so the full code differs")


def check_relative_rotation(answer, m: float = 5.0, n: float = 12.5, d: int = 16) -> bool:
    """Notebook 01, exercise 1: ``answer`` is the matrix R_m^T R_n, shape (d, d); it should equal R_{n-m}."""
    hint = "set answer to the matrix R_m^T R_n (use rr.rotation_matrix), then run this cell"
    if (a := _array(answer, (d, d), "answer", hint)) is None:
        return False
    mistakes = [(m - n, "your matrix is R_(m-n): the sign is flipped (R_m^T = R_(-m), so it is R_(-m) R_n)"),
                (m + n, "your matrix is R_(m+n): did you forget the transpose? R_m^T undoes R_m"),
                (0.0, "your matrix is the identity: that is R_m^T R_m (orthogonality), not R_m^T R_n")]
    return judge(lambda angle: np.allclose(a, rotation_matrix(angle, d), atol=1e-9), n - m,
                 f"R_m^T R_n equals R_(n-m) = R_{n - m:g} (max difference "
                 f"{np.abs(a - rotation_matrix(n - m, d)).max():.1e})", mistakes,
                 "your matrix is not R_m^T R_n; build R_m and R_n with rr.rotation_matrix and multiply R_m.T @ R_n")


def check_eq34(x, answer, base: float = 10000.0) -> bool:
    """Notebook 01, exercise 2: ``answer`` should be eq 34 on ``x`` ``(seq, d)`` at positions 0..seq-1: rr.rotate(x)."""
    x = np.asarray(x, dtype=np.float64)
    hint = "compute eq 34 for x into answer (five lines of NumPy), then run this cell"
    if (a := _array(answer, x.shape, "answer", hint)) is None:
        return False
    pos = np.arange(x.shape[-2], dtype=float)
    right = rotate(x, pos, base=base)
    angles = np.outer(pos, frequencies(x.shape[-1], base))                            # m theta_i, (seq, d/2)
    turned = np.stack([-x[..., 1::2], x[..., 0::2]], axis=-1).reshape(x.shape)       # rotate_half, interleaved
    tiled = x * np.tile(np.cos(angles), 2) + turned * np.tile(np.sin(angles), 2)    # theta_1..theta_(d/2) twice
    checks = [(tiled, "your cos and sin hold theta_1, theta_2, ..., theta_(d/2), theta_1, theta_2, ... (np.tile "
                      "repeats the whole row); eq 34 needs each theta_i twice in a row, theta_1, theta_1, theta_2, "
                      "theta_2, ...: np.repeat(..., 2, axis=-1)"),
              (rotate(x, -pos, base=base), "you rotate the wrong way: the sign of the sin term "
                                            "(rotate_half is (-x2, x1, -x4, x3, ...))"),
              (rotate(x, pos, base=base, pairing="half"), "you paired x_i with x_(i+d/2) (half-split); "
                                                            "eq 34 pairs neighbours (x1, x2), (x3, x4), ..."),
              (rotate(x, pos + 1, base=base), "your positions start at 1; the first row is position 0"),
              (x, "the answer equals x: nothing was rotated")]
    rows = np.flatnonzero(~np.all(np.isclose(a, right, atol=1e-9), axis=-1))
    return judge(lambda values: np.allclose(a, values, atol=1e-9), right,
                 f"your eq 34 matches rr.rotate(x) to {np.abs(a - right).max():.1e}", checks,
                 f"rows (positions) {rows[:5].tolist()}{' ...' if rows.size > 5 else ''} differ from rr.rotate(x) by "
                 f"up to {np.abs(a - right).max():.3g}; check theta_i = base^(-2i/d) for i = 0..d/2-1, each repeated "
                 "twice")


def check_predicted_angle(answer, m: float = 10, n: float = 4, i: int = 2, d: int = 16, seed: int = 0) -> bool:
    """Notebook 02: ``answer`` (radians) should be the angle from k_n to q_m in pair i, modulo 2 pi."""
    if (a := _number(answer, "answer", "set answer to your predicted angle in radians, then run this cell")) is None:
        return False
    q, k = random_qk(d, seed)
    q_m, k_n = rotate(q, m)[2 * i:2 * i + 2], rotate(k, n)[2 * i:2 * i + 2]      # pair i, rotated
    measured = float(wrap_angle(np.angle(complex(*q_m)) - np.angle(complex(*k_n))))
    if abs(wrap_angle(a - measured)) >= 1e-6 and abs(wrap_angle(np.radians(a) - measured)) < 1e-3:
        return verdict(False, f"{a:g} looks like the right angle in degrees; np.angle and theta_i are in radians, "
                              "and so is the answer (np.radians converts)")
    phi_q, phi_k = np.angle(complex(*q[2 * i:2 * i + 2])), np.angle(complex(*k[2 * i:2 * i + 2]))
    theta = frequencies(d)[i]
    mistakes = [(phi_k - phi_q + (m - n) * theta, "the content part has the wrong sign: the angle from k to q is "
                                                  "phi_q - phi_k"),
                (phi_q - phi_k + (n - m) * theta, "the position part has the wrong sign: q turns by m theta, k by n "
                                                  "theta, so q gains (m - n) theta"),
                ((m - n) * theta, "you left out the content part phi_q - phi_k"),
                (phi_q - phi_k, "you left out the position part (m - n) theta_i"),
                (phi_q - phi_k + (m - n) * frequencies(d)[min(i + 1, d // 2 - 1)], "wrong pair: theta_i for pair "
                                                                                   "i = 2 is frequencies(16)[2]")]
    return judge(lambda angle: abs(wrap_angle(a - angle)) < 1e-6, measured,
                 f"{a:+.6f} rad is the measured angle {measured:+.6f} rad (modulo 2 pi)", mistakes,
                 f"{a:+.4f} rad is {abs(wrap_angle(a - measured)):.3f} rad away from the measured angle (modulo 2 pi); "
                 "predict (phi_q - phi_k) + (m - n) theta_i")


def check_decay_prediction(far_is_higher, far_mean) -> bool:
    """Notebook 03: with base 5e5 instead of 1e4 (d = 128), whether the bound's mean over distances 128..256 is
    higher (True) or lower (False) than with base 1e4, and that mean (to 0.01; distances in steps of 0.01)."""
    if unanswered(far_is_higher, far_mean, hint="set far_is_higher (True or False) and far_mean (a number), "
                                                 "then run this cell"):
        return False
    if not isinstance(far_is_higher, (bool, np.bool_)):
        return verdict(False, f"far_is_higher should be True or False, got {far_is_higher!r}")
    if (mean := _number(far_mean, "far_mean")) is None:
        return False
    r = np.linspace(0, 256, 25601)
    far = r >= 128
    lo, hi = decay_bound(r, 128, 1e4), decay_bound(r, 128, 5e5)
    if bool(far_is_higher) != bool(hi[far].mean() > lo[far].mean()):
        return verdict(False, "think of what a larger base does to the slow pairs' angles r theta_i: do the partial "
                              "sums S_j stay coherent over longer distances or shorter ones?")
    but = f"your direction is right, but {mean:g}: that is the"
    mistakes = [(lo[far].mean(), f"{but} mean with base 1e4; compute rr.decay_bound(r, 128, base=5e5)"),
                (hi.mean(), f"{but} mean over all distances 0..256; take only r >= 128"),
                (hi[0], f"{but} value at distance 0; the exercise asks for the mean over 128..256")]
    return judge(lambda value: abs(mean - value) < 0.005, hi[far].mean(),
                 f"the mean over 128..256 is {hi[far].mean():.2f} with base 5e5 against {lo[far].mean():.2f} with 1e4: "
                 "the slow pairs turn slower, so the sums stay coherent longer", mistakes,
                 f"your direction is right, but the mean over 128..256 is not {mean:g}; average rr.decay_bound over "
                 "the distances r >= 128")


#: Notebook 04's "what is lost?": the choices, and why each wrong one is not it.
LOST_CHOICES = {"positions": None,
                "content": "the content still meets: q . k is computed as always; what no longer differs between "
                           "the keys?",
                "values": "the values are never rotated, and the buggy decoder still averages them; what no longer "
                          "differs between the keys?",
                "nothing": "the output differs from the correct decoder's; which part of the score no longer changes "
                           "from key to key?"}


def check_rerotating_cache(answer, lost, q, k, v, t: int = 20) -> bool:
    """Notebook 04: ``answer`` should be the buggy decoder's output ``(..., 1, d_v)`` at step t (query t, keys
    0..t, every vector rotated at position t); ``lost`` names what it loses, one of :data:`LOST_CHOICES`."""
    if unanswered(answer, lost, hint="compute the buggy step's output with rr.attention into answer, set lost to "
                                     f"one of {', '.join(map(repr, LOST_CHOICES))}, then run this cell"):
        return False
    said = lost.strip().lower().rstrip("s") if isinstance(lost, str) else None       # "position" as "positions"
    choice = next((name for name in LOST_CHOICES if name.rstrip("s") == said), None)
    if choice is None:
        return verdict(False, f"lost should be one of {', '.join(map(repr, LOST_CHOICES))}, got {lost!r}")
    if LOST_CHOICES[choice]:
        return verdict(False, f"not {choice}: {LOST_CHOICES[choice]}")
    q, k_all, v_all = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    q, k, v = q[..., t:t + 1, :], k_all[..., :t + 1, :], v_all[..., :t + 1, :]    # query t, keys and values 0..t
    if (a := _array(answer, q.shape[:-1] + v.shape[-1:], "answer")) is None:
        return False
    buggy = attention(q, k, v, q_positions=[t], k_positions=np.full(t + 1, t))
    right = attention(q, k, v, q_positions=[t], k_positions=np.arange(t + 1))
    every_key = attention(q, k_all, v_all, q_positions=[t], k_positions=np.full(k_all.shape[-2], t))
    mistakes = [(right, "that is the correct decoder (each key rotated at its own position n); the buggy one rotates "
                        "every stored key at the current position t"),
                (every_key, "every vector rotated at t: right; but at step t the cache holds only the keys and values "
                            "0..t, and your step attends all of them")]
    return judge(lambda output: np.allclose(a, output, atol=1e-9), buggy, "every vector rotated at the same position "
                 "t: all m - n are 0, so the positions are lost and the step is attention without positions", mistakes,
                 f"your output differs from the buggy step by up to {np.abs(a - buggy).max():.3g}; the buggy step is "
                 "query t attending the stored keys and values 0..t, every one of them rotated at t")


def check_dynamic_ntk_factors(at_4x, at_2x, factor: float = 4.0) -> bool:
    """Notebook 05: by how much dynamic NTK (factor s = 4, L_train = 4096) divides the slowest pair at L = 4 L_train
    (``at_4x``) and at L = 2 L_train (``at_2x``)."""
    if unanswered(at_4x, at_2x, hint="set at_4x and at_2x (two numbers), then run this cell"):
        return False
    if (a4 := _number(at_4x, "at_4x")) is None or (a2 := _number(at_2x, "at_2x")) is None:   # one line: the first
        return False
    s = float(factor)
    right = (s * 4 - (s - 1), s * 2 - (s - 1))
    which = [name for name, value, want in zip(("at_4x", "at_2x"), (a4, a2), right) if abs(value - want) >= 1e-6]
    mistakes = [((s, s), "that is the configured factor; dynamic NTK computes its own from the current length L"),
                ((s * 4, s * 2), "close: s L / L_train is part of it, but dynamic NTK subtracts s - 1 so that nothing "
                                 "changes at L = L_train")]
    return judge(lambda pair: max(abs(a4 - pair[0]), abs(a2 - pair[1])) < 1e-6, right,
                 f"divided by {right[0]:g} and {right[1]:g}: s L / L_train - (s - 1)", mistakes,
                 f"{' and '.join(which)} not right; read the base change base * (s L / L_train - (s - 1))^(d/(d-2)) "
                 "and what it does to the slowest pair, base^(-(d-2)/d)")
