"""Checkers for the exercises of every notebook, each one call of :func:`check` with its reference answer (from
:mod:`rope_ref`) and its likely mistakes: one printed line and a bool, never an exception (NaN included)."""

import bisect
import functools
import hashlib
import numbers

import numpy as np

from ..forms import decay_bound, frequencies, rotate, rotate_half, rotation_angles, rotation_matrix, wrap_angle
from ..multiaxis import mrope_position_ids
from ..rope_attention import attention
from .precision import angle_errors
from .quantities import random_qk
from .spectrum import supported_context
from .vision_rope import _axial_score


def is_integer(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


#: Kinds of answer: (what it should be, a test it passes, its conversion).
NUMBER = ("a finite number", lambda v: isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))
          and np.isfinite(v), float)
INTEGER = ("an integer", is_integer, int)
BOOL = ("True or False", lambda v: isinstance(v, (bool, np.bool_)), bool)


def integer_in(low: int, high: float = np.inf):
    return (f"an integer from {low}" + (f" to {high}" if high < np.inf else " up"),
            lambda v: is_integer(v) and low <= v <= high, int)


def array_of(shape):
    return (f"a finite array of shape {tuple(shape)}", lambda v: np.shape(v) == tuple(shape) and
            np.all(np.isfinite(np.asarray(v, dtype=np.float64))), lambda v: np.asarray(v, dtype=np.float64))


def one_of(choices, fold=str.lower):
    """Any of ``choices``, a string read stripped and folded by ``fold``."""
    return (f"one of {', '.join(map(repr, choices))}", lambda v: isinstance(v, str) and fold(v.strip()) in choices,
            lambda v: fold(v.strip()))


def check(answers: dict, right, correct, mistakes=(), otherwise="", same=lambda yours, ref: yours == ref) -> bool:
    """``answers`` maps each answer's name to (value, kind).  Prints "Not answered yet" while a value is None, "Not
    yet: <name> should be ..." for a value of the wrong kind, "Correct: ``correct``" when the answer is ``same`` as
    ``right``, else the reason of the first (wrong value, reason) of ``mistakes`` it is ``same`` as, else
    ``otherwise``.  A text may be a callable of the answer (a tuple when there are several)."""
    if any(value is None for value, _ in answers.values()):
        wanted = " and ".join(f"{name} ({kind[0]})" for name, (_, kind) in answers.items())
        print(f"Not answered yet: set {wanted}, then run this cell")
        return False
    parsed = []
    for name, (value, (what, ok, convert)) in answers.items():
        try:
            parsed.append(convert(value) if ok(value) else None)
        except (TypeError, ValueError):
            parsed.append(None)
        if parsed[-1] is None:
            got = f"shape {value.shape}" if isinstance(value, np.ndarray) else " ".join(repr(value).split())[:60]
            print(f"Not yet: {name} should be {what}, got {got}")
            return False
    yours = parsed[0] if len(parsed) == 1 else tuple(parsed)
    ok = bool(same(yours, right))
    text = correct if ok else next((why for wrong, why in mistakes if same(yours, wrong)), otherwise)
    print(("Correct: " if ok else "Not yet: ") + (text(yours) if callable(text) else text))
    return ok


def check_hand0_return(m, confused_with_all_hands) -> bool:
    """Notebook 00: the position 1..100 hand 0 (theta_0 = 1) confuses most with 0, and whether all of d = 8 does."""
    off = np.abs(wrap_angle(np.arange(1, 101) * frequencies(8)[0]))     # hand 0's distance from a whole turn at m
    best = 1 + int(np.argmin(off))
    return check({"m": (m, integer_in(1, 100)), "confused_with_all_hands": (confused_with_all_hands, BOOL)},
                 (best, False), f"hand 0 comes within {off.min():.3f} rad of home at m = {best}, but hand 1 (theta_1 = "
                 f"0.1) is then at {wrap_angle(best * 0.1):.2f} rad, so the full code differs",
                 [((best, True), "m is right for hand 0, but compare |R_m u - u| for u = (1, 0, 1, 0, 1, 0, 1, 0) "
                                 "(all hands) with hand 0 alone, |e^(im) - 1|")],
                 lambda a: f"at m = {a[0]} hand 0 is {off[a[0] - 1]:.3f} rad from a whole turn; another position "
                           "between 1 and 100 comes closer (take the smallest |wrap_angle(m * theta_0)|)")


def check_relative_rotation(answer, m: float = 5.0, n: float = 12.5, d: int = 16) -> bool:
    """Notebook 01, exercise 1: ``answer`` is the matrix R_m^T R_n, shape (d, d); it should equal R_{n-m}."""
    return check({"answer": (answer, array_of((d, d)))}, n - m, f"R_m^T R_n equals R_(n-m) = R_{n - m:g}",
                 [(m - n, "your matrix is R_(m-n): the sign is flipped (R_m^T = R_(-m))"),
                  (m + n, "your matrix is R_(m+n): did you forget the transpose? R_m^T undoes R_m"),
                  (0.0, "your matrix is the identity: that is R_m^T R_m (orthogonality), not R_m^T R_n")],
                 "your matrix is not R_m^T R_n; build R_m and R_n with rr.rotation_matrix and multiply R_m.T @ R_n",
                 lambda a, angle: np.allclose(a, rotation_matrix(angle, d), atol=1e-9))


def check_eq34(x, answer, base: float = 10000.0) -> bool:
    """Notebook 01, exercise 2: ``answer`` should be eq 34 on ``x`` ``(seq, d)`` at positions 0..seq-1: rr.rotate(x)."""
    x = np.asarray(x, dtype=np.float64)
    pos = np.arange(x.shape[-2], dtype=float)
    right = rotate(x, pos, base=base)
    angles = np.tile(np.outer(pos, frequencies(x.shape[-1], base)), 2)          # theta_1..theta_(d/2) twice
    mistakes = [(x * np.cos(angles) + rotate_half(x) * np.sin(angles), "your cos and sin repeat the whole row "
                 "(np.tile); eq 34 needs each theta_i twice in a row: np.repeat(..., 2, axis=-1)"),
                (rotate(x, -pos, base=base), "you rotate the wrong way: check the sign of the sin term"),
                (rotate(x, pos, base=base, pairing="half"), "you paired x_i with x_(i+d/2) (half-split); eq 34 pairs "
                                                              "neighbours (x1, x2), (x3, x4), ..."),
                (rotate(x, pos + 1, base=base), "your positions start at 1; the first row is position 0"),
                (x, "the answer equals x: nothing was rotated")]
    return check({"answer": (answer, array_of(x.shape))}, right, "your eq 34 matches rr.rotate(x)", mistakes,
                 lambda a: f"rows (positions) {np.flatnonzero(~np.all(np.isclose(a, right), axis=-1))[:5].tolist()} "
                           "differ from rr.rotate(x); check theta_i = base^(-2i/d), each repeated twice",
                 lambda a, ref: np.allclose(a, ref, atol=1e-9))


def check_predicted_angle(answer, m: float = 10, n: float = 4, i: int = 2, d: int = 16, seed: int = 0) -> bool:
    """Notebook 02: ``answer`` (radians) should be the angle from k_n to q_m in pair i, modulo 2 pi."""
    q, k = random_qk(d, seed)
    zq, zk, zqm, zkn = (complex(*v[2 * i:2 * i + 2]) for v in (q, k, rotate(q, m), rotate(k, n)))     # pair i
    measured, phi = float(wrap_angle(np.angle(zqm / zkn))), np.angle(zq) - np.angle(zk)       # phi = phi_q - phi_k
    turn = (m - n) * frequencies(d)[i]
    return check({"answer": (answer, NUMBER)}, measured, f"the measured angle is {measured:+.6f} rad (modulo 2 pi)",
                 [(turn - phi, "the content part has the wrong sign: the angle from k to q is phi_q - phi_k"),
                  (phi - turn, "the position part has the wrong sign: q turns by m theta, k by n theta"),
                  (turn, "you left out the content part phi_q - phi_k"),
                  (phi, "you left out the position part (m - n) theta_i")],
                 lambda a: "that looks like the right angle in degrees; the answer is in radians (np.radians)"
                 if abs(wrap_angle(np.radians(a) - measured)) < 1e-3 else
                 f"{a:+.4f} rad is {abs(wrap_angle(a - measured)):.3f} rad away from the measured angle (modulo 2 pi)",
                 lambda a, angle: abs(wrap_angle(a - angle)) < 1e-6)


def check_decay_prediction(far_is_higher, far_mean) -> bool:
    """Notebook 03: with base 5e5 instead of 1e4 (d = 128), whether the bound's mean over distances 128..256 is
    higher (True) or lower (False) than with base 1e4, and that mean (to 0.01; distances in steps of 0.01)."""
    r = np.linspace(0, 256, 25601)
    lo, hi = decay_bound(r, 128, 1e4), decay_bound(r, 128, 5e5)
    far_lo, far_hi = lo[r >= 128].mean(), hi[r >= 128].mean()
    higher = bool(far_hi > far_lo)
    return check({"far_is_higher": (far_is_higher, BOOL), "far_mean": (far_mean, NUMBER)}, far_hi,
                 f"the mean over 128..256 is {far_hi:.2f} with base 5e5 against {far_lo:.2f} with 1e4: the slow pairs "
                 "stay coherent longer", [(wrong, f"your direction is right, but {why}") for wrong, why in [
                     (far_lo, "that is the mean with base 1e4; use rr.decay_bound(r, 128, base=5e5)"),
                     (hi.mean(), "that is the mean over all distances 0..256; take only r >= 128"),
                     (hi[0], "that is the value at distance 0; the exercise asks for the mean over 128..256")]],
                 lambda a: "think of what a larger base does to the slow pairs' angles r theta_i" if a[0] != higher
                 else f"your direction is right, but the mean over 128..256 is not {a[1]:g}",
                 lambda a, ref: a[0] == higher and abs(a[1] - ref) < 0.005)


#: Notebook 04's "what is lost?": the choices, and why each wrong one is not it.
LOST_CHOICES = {"position": None,
                "content": "the content still meets: q . k is computed as always; what no longer differs between "
                           "the keys?",
                "value": "the values are never rotated and are still averaged; what no longer differs between the "
                         "keys?",
                "nothing": "the output differs from the correct decoder's; which part of the score no longer changes "
                           "from key to key?"}


def check_rerotating_cache(answer, lost, q, k, v, t: int = 20) -> bool:
    """Notebook 04: ``answer`` should be the buggy decoder's output ``(..., 1, d_v)`` at step t (query t, keys
    0..t, every vector rotated at position t); ``lost`` names what it loses, one of :data:`LOST_CHOICES`."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    step = q[..., t:t + 1, :], k[..., :t + 1, :], v[..., :t + 1, :]       # query t, keys and values 0..t
    buggy = attention(*step, q_positions=[t], k_positions=np.full(t + 1, t))
    mistakes = [(("position", attention(*step, q_positions=[t], k_positions=np.arange(t + 1))),
                 "that is the correct decoder (each key rotated at its own position n); the buggy one rotates every "
                 "stored key at the current position t"),
                (("position", attention(*step[:1], k, v, q_positions=[t], k_positions=np.full(k.shape[-2], t))),
                 "every vector rotated at t: right; but at step t the cache holds only the keys and values 0..t, "
                 "and your step attends all of them")]
    lost_kind = one_of(LOST_CHOICES, lambda s: s.lower().rstrip("s"))           # "Positions" as "position"
    return check({"answer": (answer, array_of(buggy.shape)), "lost": (lost, lost_kind)},
                 ("position", buggy), "every vector rotated at the same position t: all m - n are 0, so the "
                 "positions are lost", mistakes,
                 lambda a: f"not {a[1]}: {LOST_CHOICES[a[1]]}" if LOST_CHOICES[a[1]] else "your output differs from "
                 "the buggy step: query t attending the stored keys and values 0..t, every one of them rotated at t",
                 lambda a, ref: a[1] == ref[0] and np.allclose(a[0], ref[1], atol=1e-9))


def check_dynamic_ntk_factors(at_4x, at_2x, factor: float = 4.0) -> bool:
    """Notebook 05: by how much dynamic NTK (factor s = 4) divides the slowest pair at 4 and at 2 L_train."""
    s = float(factor)
    right = (s * 4 - (s - 1), s * 2 - (s - 1))
    return check({"at_4x": (at_4x, NUMBER), "at_2x": (at_2x, NUMBER)}, right,
                 f"divided by {right[0]:g} and {right[1]:g}: s L / L_train - (s - 1)",
                 [((s, s), "that is the configured factor; dynamic NTK computes its own from the current length L"),
                  ((s * 4, s * 2), "close: s L / L_train is part of it, but dynamic NTK subtracts s - 1 so that "
                                   "nothing changes at L = L_train")],
                 lambda a: " and ".join(name for name, x, want in zip(("at_4x", "at_2x"), a, right) if x != want)
                 + " not right; read the base change base * (s L / L_train - (s - 1))^(d/(d-2)) and what it does to "
                 "the slowest pair, base^(-(d-2)/d)", lambda a, ref: np.allclose(a, ref, rtol=0, atol=1e-6))


def check_reduced_cast_error(answer, position: float = 1e6, d: int = 128, base: float = 10000.0) -> bool:
    """Notebook 06: the largest angle error (rad) of "reduce m theta_i to (-pi, pi] in float64, cast to float32"."""
    exact = rotation_angles(position, frequencies(d, base))
    right = float(np.abs(wrap_angle(wrap_angle(exact).astype(np.float32).astype(np.float64) - exact)).max())
    naive = float(angle_errors([position], d, base, np.float32)[0])
    return check({"answer": (answer, NUMBER)}, right, f"{right:.2e} rad, at most half an ulp of pi in float32: "
                 f"{naive / right:,.0f} times less than forming the product in float32 ({naive:.1e} rad).",
                 [(naive, "that is the error of the product formed in float32; reduce the float64 angle to (-pi, pi] "
                          "first, then cast."),
                  (0.0, "a float32 cast of an angle near pi rounds it: the error is not 0.")],
                 "that is not the largest error over the 64 pairs; compare each cast angle with its float64 value "
                 "(mod 2 pi).", lambda a, ref: abs(a - ref) <= 0.05 * ref)


#: Notebook 07: the kinds of bug the answer names, and what rules each wrong one out.
BUG_KINDS = {"pairing": "feature 0 moves only into feature 1, feature 2 only into 3: Llama's pairs (2i, 2i + 1)",
             "base": "from one row to the next, pair p turns by exactly theta_p = 10000^(-2p/d)",
             "offset": None,
             "direction": "it turns the same way as Llama's kernel: the phase error does not grow with the row",
             "scale": "every row keeps its length: nothing scales the rotated features",
             "precision": "the angles agree with float64 to 1e-10 once the rows are shifted: no rounding noise"}


def check_planted_bug(answer) -> bool:
    """``answer``: the kind of bug ``example_kernels.mystery_rope`` has, one of :data:`BUG_KINDS` (a string)."""
    return check({"answer": (answer, one_of(BUG_KINDS))}, "offset", "offset: row 0 is rotated as position 1, every "
                 "row one position too far; the fix is to count positions from 0",
                 otherwise=lambda a: f"not the {a}: {BUG_KINDS[a]}. Look again at the phase-error panel: what is flat,"
                                     " what is not?")


def check_supported_context(answer, base: float = 500000.0, d: int = 128) -> bool:
    """Notebook 08: the longest context L that ``base`` supports by Men et al.'s criterion (B_m >= 0 for m <= L)."""
    right = supported_context(base, d)
    return check({"answer": (answer, INTEGER)}, right, f"B_m >= 0 for every m up to {right:,}; at m = {right + 1:,} "
                 "it is negative.",
                 [(-1, "-1 is what argmax(margin < 0) - 1 gives when no B_m in your range is negative: scan further."),
                  (supported_context(10000.0, d), "that is the context of base 10,000, similarity_margin's default "
                                                  "base: pass the exercise's base."),
                  (right + 1, "that is the first distance where B_m < 0; the supported length ends one before.")],
                 lambda a: "a context length is a number of positions, 0 or more." if a < 0 else
                 f"B_m is already negative at some m <= {a:,}: stop at the first negative value." if a > right else
                 f"B_m is still >= 0 at every m up to {a + 1:,}: the first negative value comes later.")


def check_diagonal_norm(answer, target: float = 0.9, pair: int = 8) -> bool:
    """Notebook 10: the smallest integer |psi|^2 at which Barbero et al.'s diagonal head (arXiv:2410.06205) puts
    ``target`` on itself: each of 48 tokens is psi on ``pair`` (frequency g, d = 64), so alpha_{i,i} = 1 / sum_r
    exp(|psi|^2 (cos(r g) - 1)), which rises with |psi|^2 (every term r != 0 falls): a bisection finds it."""
    def weight(norm_sq) -> float:
        return float(1.0 / np.exp(norm_sq * (np.cos(np.arange(48) * frequencies(64)[pair]) - 1.0)).sum())
    right = 1 + bisect.bisect_left(range(1, 1 << 40), target, key=weight)
    return check({"answer": (answer, integer_in(1))}, right, f"|psi|^2 = {right:,} gives {weight(right):.5f} >= "
                 f"{target}; {right - 1:,} gives {weight(right - 1):.5f}.",
                 otherwise=lambda a: f"at |psi|^2 = {a:,} the weight is {weight(a):.5f}, "
                 f"below {target}: it must be larger." if a < right else
                 f"|psi|^2 = {a:,} reaches {target}, but so does a smaller value: find the first one.")


#: notebook 09's sequence: 5 text tokens, an image of 6 x 10 patches (merged 2 x 2), 3 text tokens.
AFTER_IMAGE_SEGMENTS = (("text", 5), ("image", (1, 6, 10)), ("text", 3))


def _one_id(value) -> int | None:
    """The integer an answer gives once or three times (10, [10], (10, 10, 10), ids[:, k], np.array(10)), else None."""
    ids = np.ravel(np.asarray(value, dtype=object)).tolist()
    return int(ids[0]) if len(ids) in (1, 3) and len(set(ids)) == 1 and all(map(is_integer, ids)) else None


def check_text_after_image(answer, segments=AFTER_IMAGE_SEGMENTS, spatial_merge_size: int = 2) -> bool:
    """``answer``: the position id of the first text token after the image (an int, or its (t, h, w) ids)."""
    ids = mrope_position_ids(segments, spatial_merge_size=spatial_merge_size)
    start, (t, h, w) = segments[0][1], segments[1][1]
    tokens = t * h * w // spatial_merge_size ** 2
    right = int(ids[0, start + tokens])
    position = ("one integer, or the same integer three times (a text token has the same id on t, h and w)",
                lambda v: _one_id(v) is not None, _one_id)
    return check({"answer": (answer, position)}, right, f"the image's ids run from {start} to {right - 1} (its widest "
                 f"axis has {max(h, w) // spatial_merge_size} tokens), so the text resumes at {right}",
                 [(start + tokens, "that counts every image token as one position, as 1-D RoPE would; an image "
                                   "token's ids are (start + t, start + row, start + column)"),
                  (start + max(h, w), "the grid (t, h, w) counts patches before the spatial merge: "
                                      f"{spatial_merge_size} x {spatial_merge_size} patches become one token"),
                  (start + max(h, w) - 1, "the grid counts patches before the spatial merge, and the text starts "
                                          "one after the largest id"),
                  (right - 1, "that is the largest id the image uses; the text starts one after it"),
                  (start + h // spatial_merge_size, "that is one past the image's last row; the columns go further"),
                  (start + 1, "that is one past the image's temporal id; its rows and columns go further")],
                 "that is not where the text resumes; find the largest id the image uses on any axis")


PATCH = ("a patch (x, y) of two integers", lambda v: isinstance(v, (tuple, list, np.ndarray)) and len(v) == 2
         and all(map(is_integer, v)), lambda v: tuple(int(i) for i in v))
#: The exercise's query and key, independent (an offset and its reverse score differently): ``same_score_qk()``.
same_score_qk = functools.partial(random_qk, 64, 1)


def check_same_score_patch(answer) -> bool:
    """``answer``: the key patch (x, y) that, with the query at (10, 10), scores as query (2, 3) and key (7, 1)."""
    start, key, (qx, qy), (q, k) = (2, 3), (7, 1), (10, 10), same_score_qk()    # the pair; the query's new patch
    dx, dy = np.subtract(key, start).tolist()
    target = _axial_score(q, k, start, key)

    def scores(patch):
        return f"score {_axial_score(q, k, (qx, qy), patch):.4f}, not {target:.4f}"
    return check({"answer": (answer, PATCH)}, (qx + dx, qy + dy),
                 lambda a: f"key {a} sits at the same offset from the query as {key} from {start}: "
                           f"score {_axial_score(q, k, (qx, qy), a):.6f} = {target:.6f}",
                 [((dx, dy), "that is the offset between the patches; the answer is a patch, seen from the query"),
                  ((qx - dx, qy - dy), lambda a: f"that patch is at the reversed offset: {scores(a)}"),
                  ((qx + dy, qy + dx), lambda a: f"x and y are swapped: {scores(a)}")],
                 lambda a: f"with the query at (10, 10) that key has {scores(a)}; what stays the same when both "
                           "patches move together?")


# --- notebook 11: which of three RoPE kernels for SmolLM2 (base 10^5, interleaved) has a planted bug?  Found
# without the model: by eq 11, a right RoPE gives scores (R_m q) . (R_n k) equal to rope_ref's at every (m, n).  The
# letters are dealt by a hash, so that reading this module does not hand out the notebook's answer.
def _mystery_kernel(x, positions, *, shift: float, period: float):
    """RoPE at (positions + shift) modulo ``period``, SmolLM2's base 10^5."""
    return rotate(x, np.fmod(np.asarray(positions, dtype=np.float64) + shift, period), base=1e5)


_DEALT = sorted(range(3), key=lambda i: hashlib.sha256(f"rope_ref 11 {i}".encode()).hexdigest())
MYSTERY_ROPES = {letter: functools.partial(_mystery_kernel, shift=(1e3, 0.0, 0.0)[i], period=(np.inf, 32.0, np.inf)[i])
                 for letter, i in zip("ABC", _DEALT)}


def check_mystery_rope(answer) -> bool:
    """``answer``: the letter ("A", "B" or "C") of the kernel in :data:`MYSTERY_ROPES` with the planted bug: the one
    whose scores (R_m q) . (R_n k) differ from rope_ref's, the one that wraps its positions."""
    bug = next(letter for letter, rope in MYSTERY_ROPES.items() if rope.keywords["period"] < np.inf)
    return check({"answer": (answer, one_of(MYSTERY_ROPES, str.upper))}, bug, f"kernel {bug} wraps its positions "
                 "modulo 32 (a cos/sin table built for 32 positions): every prompt shorter than 33 tokens is exact, a "
                 "longer one loses where its tokens are", otherwise=lambda a: f"kernel {a} gives every score q_m . k_n "
                 "the model's own RoPE gives (eq 11): it is not the bug. Measure each kernel, with the copy task or an "
                 "attention map")
