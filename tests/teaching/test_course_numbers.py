"""Every number notebooks 00-05 state in prose, recomputed independently (plain NumPy, or dense matrices where the
notebook calls the fast path), over the range the prose names; notebook 06's precision helpers."""

import math
import re

import ml_dtypes
import numpy as np
import pytest

import rope_ref as rr
from rope_ref.teaching import figures, precision, quantities, views

from frequency_formulas import thetas
from notebook_cells import cells, prose, run_cells, src


def text(name):                          # all the markdown, solutions included, whitespace collapsed
    return " ".join(prose(name, solutions=None).split())


def stated(name, pattern):               # the groups of the one place pattern matches in the collapsed prose
    found = re.findall(pattern, text(name))
    assert len(found) == 1, f"{name}: {pattern!r} should match once, found {found}"
    return found[0]


# --- 00 ---------------------------------------------------------------------------------------------------------------

def test_wavelengths_of_notebook_00_and_05():
    wl = 2 * np.pi / thetas(128)
    assert stated("00_why_positions", r"fastest hand turns every ([\d.]+) positions; the slowest needs about "
                                      r"([\d,]+)") \
        == (f"{wl[0]:.2f}", f"{wl[-1]:,.0f}")
    # pair i turns less than once in 4096 positions iff i > 64 log10(4096 / 2 pi) / 4
    never = 64 - math.floor(64 * math.log10(4096 / (2 * np.pi)) / 4) - 1
    assert stated("00_why_positions", r"never sees (\d+) of its (\d+) hands complete a turn") == (str(never), "64")
    assert stated("05_context_extension", r"with \$d = 128\$, (\d+) of the 64 pairs never complete") == str(never)


def test_aliasing_numbers_of_notebook_00():
    assert stated("00_why_positions", r"only ([\d.]+) rad short of a full turn") == f"{2 * math.pi - 6:.2f}"
    theta1, turned = stated("00_why_positions", r"Hand 1 \(\$\\theta_1 = ([\d.]+)\$ for \$d = 8\$\) has turned only "
                                                r"([\d.]+) rad")
    assert (float(theta1), float(turned)) == pytest.approx((thetas(8)[1], 6 * thetas(8)[1]))
    m, pair0 = figures.fig_aliasing().axes[0].lines[0].get_data()         # the figure's pair-0 curve is the chord
    np.testing.assert_allclose(pair0, [2 * abs(math.sin(a / 2)) for a in m], atol=1e-12)     # |e^{i m} - 1|
    # the exercise's solution: 44 rad is 7 turns plus 0.018 rad; the other hands at 44
    turns = np.arange(1, 101) / (2 * np.pi)
    best = int(np.argmin(np.abs(turns - np.round(turns)))) + 1
    wrapped = [(44 * t + math.pi) % (2 * math.pi) - math.pi for t in thetas(8)]
    assert stated("00_why_positions", r"(\d+) radians is (\d+) turns plus ([\d.]+) rad") == \
        (str(best), str(round(best / (2 * math.pi))), f"{best - 7 * 2 * math.pi:.3f}")
    assert stated("00_why_positions", r"hand 2 at ([\d.]+) rad, hand 3 at ([\d.]+) rad") == \
        (f"{wrapped[2]:.2f}", f"{wrapped[3]:.3f}")
    assert stated("00_why_positions", r"which is \$(-[\d.]+)\$ rad from home") == f"{wrapped[1]:.2f}"


def _softmax_weight(logits, target):
    w = np.exp(logits - logits.max())
    return w[target] / w.sum()


@pytest.mark.slow
def test_four_schemes_numbers_of_notebook_00():
    L, height, offsets = 64, 12.0, (3, 7)
    theta = thetas(128)
    # RoPE with content-free keys: the logit of query c at distance r is Re(sum_i z_ci e^{-i r theta_i}), fitted as a
    # least-squares problem on the real and imaginary parts of e^{-i r theta_i}
    def features(rel):
        E = np.exp(-1j * np.outer(rel, theta))
        return np.concatenate([E.real, -E.imag], axis=1)
    rope = {}
    for o in offsets:
        sol = np.linalg.lstsq(features(np.arange(L)), height * (np.arange(L) == o), rcond=None)[0]
        rel = np.arange(L)[::-1]                          # a window of 64 keys: distances 63..0, at any query
        rope[o] = _softmax_weight(features(rel) @ sol, int(np.flatnonzero(rel == o)[0]))
    t5 = _softmax_weight(np.array([height / 2 if r in offsets else 0.0 for r in range(L)]), 3)   # mean target
    cell = run_cells("00_why_positions", "cell-09", namespace={"np": np, "rr": rr})      # the notebook's own code
    assert np.array_equal(cell["t5_bucket"](np.arange(16)), np.arange(16)), "3 and 7 back: buckets of their own"
    got = cell["weights"]
    np.testing.assert_allclose(got["RoPE"], [[rope[3]] * 2, [rope[7]] * 2], atol=1e-6)    # the same near and far
    np.testing.assert_allclose(got["T5 bias"], t5, atol=1e-9)
    np.testing.assert_allclose(got["ALiBi"], [[_softmax_weight(-0.5 * np.arange(L), o)] * 2 for o in offsets])
    assert np.all(np.isnan(got["learned absolute"][:, 1])) and np.all(got["learned absolute"][:, 0] > 0.97)
    assert stated("00_why_positions", r"between 3 and 7 back \(([\d.]+) each\)") == f"{t5:.2f}"
    assert stated("00_why_positions", r"RoPE\*\* puts ([\d.]+) on the key 3 back and ([\d.]+) on the key 7 back, each "
                                      r"the same near and far") == (f"{rope[3]:.3f}", f"{rope[7]:.2f}")
    assert stated("00_why_positions", r"1 is perfect, 1/(\d+) is no preference") == str(L)


def _plain_attention(x, causal):
    """Softmax attention of x with itself, no positions, masked by index when causal: (N, d) -> (N, d)."""
    scores = x @ x.T / math.sqrt(x.shape[1])
    if causal:
        scores = np.where(np.tri(len(x), dtype=bool), scores, -np.inf)
    w = np.exp(scores - scores.max(axis=1, keepdims=True))
    return (w / w.sum(axis=1, keepdims=True)) @ x


def test_notebook_00_order_demo_masks_by_index(capsys):
    rng = np.random.default_rng(0)                        # the notebook's six tokens and shuffle
    x = rng.standard_normal((6, 16))
    perm = rng.permutation(6)
    assert np.abs(_plain_attention(x[perm], False) - _plain_attention(x, False)[perm]).max() < 1e-12
    leak = np.abs(_plain_attention(x[perm], True) - _plain_attention(x, True)[perm]).max()
    run_cells("00_why_positions", "cell-02", "cell-04")
    printed = re.findall(r"causal mask by index: they differ by ([\d.]+)", capsys.readouterr().out)
    assert printed == [f"{leak:.2f}"] and leak > 0.1, "the cell shows the leak the prose describes"
    assert "A causal mask" in text("00_why_positions") and "masks by *position*" in text("00_why_positions")


# --- 01 ---------------------------------------------------------------------------------------------------------------

def test_notebook_01_worked_example_and_radius_choice(capsys):
    angle = float(stated("01_three_forms", r"rotated by the angle \$([\d.]+)\$"))
    c, s = math.cos(angle), math.sin(angle)
    x, y = 1.5410 * c + 0.2934 * s, 1.5410 * s - 0.2934 * c            # rotate (1.5410, -0.2934) by the angle
    assert stated("01_three_forms", r"should give \$\(([\d.]+), ([\d.]+)\)\$") == (f"{x:.4f}", f"{y:.4f}")
    assert stated("01_three_forms", r"\\cos [\d.]+ \\approx ([\d.]+)\$, \$\\sin [\d.]+ \\approx ([\d.]+)") == \
        (f"{c:.3f}", f"{s:.3f}")
    a = 1.05
    q, k = np.array([1.5410, -0.2934]), np.array([-2.1788, 0.5684])
    notebook = run_cells("01_three_forms", "cell-31", namespace={"np": np, "rr": rr, "q2": q})
    scores = [(a ** m * rr.rotation_matrix(m, 2) @ q) @ (a ** -n * rr.rotation_matrix(n, 2) @ k)
              for m, n in [(3, 10), (103, 110)]]                     # dense matrices, not the fast path
    assert scores[0] == pytest.approx(scores[1], rel=1e-12)
    np.testing.assert_allclose(notebook["fk"], a ** -110 * rr.rotation_matrix(110, 2) @ k, rtol=1e-12)
    assert stated("01_three_forms", r"1\.05\^\{100\} \\approx ([\d.]+)") == f"{a ** 100:.1f}"
    capsys.readouterr()


def test_notebook_01_real_condition_allows_a_shear_and_a_reflection():
    q, k = np.array([1.5410, -0.2934]), np.array([-2.1788, 0.5684])
    M, P = np.array([[1.0, 0.5], [0.0, 1.0]]), np.diag([1.0, -1.0])
    for m, n in [(3, 10), (103, 110), (4, 11)]:
        shear = q @ np.linalg.matrix_power(M.T, m) @ np.linalg.matrix_power(np.linalg.inv(M.T), n) @ k
        assert shear == pytest.approx(q @ np.linalg.matrix_power(M.T, m - n) @ k, rel=1e-9)
        reflection = (np.linalg.matrix_power(P, m) @ q) @ (np.linalg.matrix_power(P, n) @ k)
        assert reflection == pytest.approx(q @ np.linalg.matrix_power(P, abs(m - n)) @ k)
    assert np.linalg.norm(M @ q) != pytest.approx(np.linalg.norm(q)), "a shear changes lengths"
    t = text("01_three_forms")
    assert "**The angle needs the complex condition.**" in t and "that part is forced" not in t
    assert "c01-shear" in [c["id"] for c in cells("01_three_forms")]


def test_notebook_01_complex_dot_product_and_the_sinusoids_cross_terms():
    q, k = quantities.random_qk(64, seed=0)
    z, w = q[0::2] + 1j * q[1::2], k[0::2] + 1j * k[1::2]
    assert (z * np.conj(w)).real.sum() == pytest.approx(sum(q[i] * k[i] for i in range(64)))
    pos = np.arange(48)
    E = rr.sinusoidal(pos, 64)
    EE = E @ E.T                          # the term E(m).E(n): a function of m - n only
    for offset in range(-47, 48):
        assert np.ptp(np.diagonal(EE, offset)) < 1e-9
    assert np.ptp(E @ q) > 1 and np.ptp(E @ k) > 1, "the cross terms q.E(n), E(m).k move along a diagonal"
    assert "**cross terms**" in text("01_three_forms")
    assert "E(m).E(n)" in "".join(src(c) for c in cells("01_three_forms"))


# --- 02 ---------------------------------------------------------------------------------------------------------------

def test_notebook_02_score_panel_rises():
    q, k = quantities.random_qk(16, seed=0)
    r = np.arange(-64, 64.5, 0.5)                                # the view's m - n axis
    score = np.array([(rr.rotation_matrix(x, 16) @ q) @ k for x in r])
    at0, top, where = stated("02_rotations", r"rises from ([\d.]+) at \$m-n = 0\$ to ([\d.]+) at \$m-n = ([\d.]+)\$")
    assert (at0, top, where) == (f"{score[r == 0][0]:.2f}", f"{score.max():.2f}", f"{r[score.argmax()]:g}")


# --- 03 ---------------------------------------------------------------------------------------------------------------

def test_figure2_numbers():
    r = np.linspace(0, 256, 25601)
    y = {base: np.abs(np.cumsum(np.exp(1j * r[:, None] * thetas(128, base)), axis=1)).mean(axis=1)
         for base in [1e4, 5e5]}
    assert stated("03_long_term_decay", r"the bound is \$\(d/2\+1\)/2 = ([\d.]+)\$") == f"{y[1e4][0]:g}" == "32.5"
    assert stated("03_long_term_decay", r"peak below distance ([\d.]+) lies") == f"{r[np.argmax(y[1e4] < 22)]:.2f}"
    assert stated("03_long_term_decay", r"mean ([\d.]+) instead of ([\d.]+) over 128–256") == \
        (f"{y[5e5][r >= 128].mean():.2f}", f"{y[1e4][r >= 128].mean():.2f}")
    far = f"{y[1e4][r >= 128].mean():.2f}"
    assert stated("03_long_term_decay", r"for base \$10\^4\$ \(mean ([\d.]+) there\)") == far
    np.testing.assert_allclose(rr.decay_bound(r, 128), y[1e4], rtol=1e-12)


def test_eqs_35_to_37_of_notebook_03_against_a_loop():
    q, k = quantities.random_qk(16, seed=3)
    eqs_35_to_37 = run_cells("03_long_term_decay", "cell-07", namespace={"np": np})["eqs_35_to_37"]
    for dist in [0.0, 2.5, 40.0]:
        t = eqs_35_to_37(q, k, dist, thetas(16))
        h = [complex(q[2 * i], q[2 * i + 1]) * complex(k[2 * i], -k[2 * i + 1]) for i in range(8)] + [0j]
        S = np.cumsum([complex(math.cos(dist * th), math.sin(dist * th)) for th in thetas(16)])
        direct = sum(h[i] * (S[i] - (S[i - 1] if i else 0)) for i in range(8))
        assert t["direct"] == pytest.approx(direct) and t["abel"] == pytest.approx(direct)     # eq 36 is exact
        assert t["triangle"] == pytest.approx(sum(abs(S[i]) * abs(h[i + 1] - h[i]) for i in range(8)))
        assert (rr.rotation_matrix(dist, 16) @ q) @ k == pytest.approx(direct.real)           # eq 35, dense
    assert "**Abel summation** (eq 36) is summation by parts" in text("03_long_term_decay")


@pytest.mark.slow
def test_decay_looseness_over_the_range_and_the_normalised_figure():
    q, k = quantities.random_qk(128, seed=0)
    h = np.append((q[0::2] + 1j * q[1::2]) * (k[0::2] - 1j * k[1::2]), 0)
    dh = np.abs(np.diff(h))
    r = np.arange(1, 257.0)
    e = np.exp(1j * np.outer(r, thetas(128)))                  # e^{i r theta_i} at every whole distance
    S = np.cumsum(e, axis=1)
    direct = np.abs((h[:64] * e).sum(axis=1))                  # |sum_i h_i e^{i r theta_i}|
    scores = np.array([(rr.rotation_matrix(x, 128) @ q) @ k for x in r])
    np.testing.assert_allclose(scores, (h[:64] * e).sum(axis=1).real, atol=1e-9)    # eq 35 through dense matrices
    middle, final = (np.abs(S) * dh).sum(axis=1) / direct, dh.max() * np.abs(S).sum(axis=1) / direct
    assert stated("03_long_term_decay", r"at distance 100 the middle inequality is (\d+) times .* the final bound "
                                        r"(\d+) times\.") == (f"{middle[99]:.0f}", f"{final[99]:.0f}")
    assert stated("03_long_term_decay", r"from 1 to 256 .* the middle one is at least (\d+) times, the final bound at "
                                        r"least (\d+) times") == (f"{middle.min():.0f}", f"{final.min():.0f}")
    r, got = figures.fig_decay_vs_actual(n_samples=1024).axes[0].lines[1].get_data()
    qs, ks = quantities.random_qk(128, seed=0, n=1024)
    dense = np.array([np.abs(np.einsum("nd,de,ne->n", qs, rr.rotation_matrix(x, 128), ks)).mean() for x in r])
    np.testing.assert_allclose(got, dense / dense[0], rtol=1e-9)
    assert stated("03_long_term_decay", r"it stays between about ([\d.]+) and ([\d.]+) of its value at 0") == \
        (f"{(dense / dense[0]).min():.2f}", f"{(dense / dense[0]).max():.2f}")
    bound = np.abs(np.cumsum(np.exp(1j * np.outer(r, thetas(128))), axis=1)).mean(axis=1)
    assert stated("03_long_term_decay", r"falls from 1 to about (\d\.\d+)") == f"{bound[-1] / bound[0]:.1f}"


# --- 05 ---------------------------------------------------------------------------------------------------------------

def test_dynamic_ntk_numbers_of_notebook_05():
    s, L_train = 8.0, 4096
    freqs, _ = rr.scaled_inv_freq(128, rope_type="dynamic", factor=s, max_position_embeddings=L_train,
                                  seq_len=int(s * L_train))
    assert thetas(128)[-1] / freqs[-1] == pytest.approx(57)
    assert stated("05_context_extension", r"\$8\\cdot 8 - 7 = (\d+)\$") == "57"
    for mult, want in [(4, "13"), (2, "5")]:
        freqs, _ = rr.scaled_inv_freq(128, rope_type="dynamic", factor=4.0, max_position_embeddings=L_train,
                                      seq_len=mult * L_train)
        said = stated("05_context_extension", rf"4\\cdot{mult}-3 = (\d+)")
        assert f"{thetas(128)[-1] / freqs[-1]:.6g}" == want == said


def test_ntk_divides_pair_i_by_s_to_the_2i_over_d_minus_2_and_both_1_over_32():
    for d, s in [(128, 8.0), (64, 32.0)]:
        freqs, _ = rr.scaled_inv_freq(d, 10000.0, rope_type="ntk", factor=s)
        np.testing.assert_allclose(thetas(d) / freqs, s ** (2 * np.arange(d // 2) / (d - 2)), rtol=1e-12)
    ratios = views.frequency_ratios(factor=32.0)
    assert ratios["linear"][0][-1] == pytest.approx(1 / 32, rel=1e-15) == ratios["ntk"][0][-1]
    assert (f"{ratios['linear'][0][-1]:.3g}", f"{ratios['ntk'][0][-1]:.3g}") == \
        stated("05_context_extension", r'"linear ([\d.]+), ntk ([\d.]+)": both are exactly \$1/32 = 0\.03125\$')
    assert "black" not in text("05_context_extension"), "the view draws no black line"


def test_per_pair_angles_claims_of_notebook_05():
    v = views.ScalingView(factor=8.0)                                       # the largest angle per pair it draws
    train, a = 2 * np.pi * v.train_line.get_ydata(), {n: 2 * np.pi * ln.get_ydata() for n, ln in v.angle_lines.items()}
    np.testing.assert_allclose(a["linear"], train, rtol=1e-12)             # linear: on the training curve
    unseen = train < 2 * np.pi                                               # pairs below one turn in training
    for name in ["yarn", "llama3"]:                                          # slow pairs land on the curve
        np.testing.assert_allclose(a[name][unseen], train[unseen], rtol=1e-9)
    assert a["ntk"][-1] == pytest.approx(train[-1]) and np.all(a["ntk"][unseen][:-1] > train[unseen][:-1])
    assert np.all(a["dynamic"][unseen] < train[unseen])                     # squeezed more than needed


def test_notebook_05_yarn_logits_and_llama3_thresholds():
    s, L_train = 8.0, 4096
    att = 0.1 * math.log(s) + 1
    assert stated("05_context_extension", r"\$\(0\.1\\ln 8 \+ 1\)\^2 \\approx ([\d.]+)\$") == f"{att ** 2:.3f}"
    _, got = rr.scaled_inv_freq(128, 10000.0, rope_type="yarn", factor=s, original_max_position_embeddings=L_train)
    assert got == pytest.approx(att)
    q, k = quantities.random_qk(128, seed=0)          # both q and k scaled: the logit grows by the square
    assert (att * rr.rotate(q, 30.0)) @ (att * rr.rotate(k, 5.0)) == pytest.approx(att ** 2 * rr.rotate(q, 25.0) @ k)
    wavelengths = 2 * np.pi / thetas(128)
    for low, high in [(1.0, 4.0), (2.0, 8.0)]:        # kept below L / high_freq_factor, divided above L / low
        freqs, _ = rr.scaled_inv_freq(128, 10000.0, rope_type="llama3", factor=s, low_freq_factor=low,
                                      high_freq_factor=high, original_max_position_embeddings=L_train)
        kept, divided = wavelengths < L_train / high, wavelengths > L_train / low
        np.testing.assert_allclose(freqs[kept], thetas(128)[kept], rtol=1e-12)
        np.testing.assert_allclose(freqs[divided], thetas(128)[divided] / s, rtol=1e-12)
    params = views.method_configs(factor=s, train_len=L_train)["llama3"]
    assert (params["low_freq_factor"], params["high_freq_factor"]) == (1.0, 4.0)
    assert "it runs no model" in text("05_context_extension")


def test_angle_errors_by_dtype():
    e = precision.angle_errors([1, 1e3, 1e6], 64, 1e4, np.float64)
    assert np.all(e == 0)                                 # float64 angles have no error
    pos = np.array([10.0, 1e3, 1e5, 1e6])             # each float32 rounding (theta_i, the product) is half an ulp
    e = precision.angle_errors(pos, 128, 1e4, np.float32)
    assert np.all(e <= pos * 2 * 2.0 ** -24 + 1e-12) and e[-1] > 1e-3          # but milliradians at 10^6
    assert np.isinf(precision.angle_errors([70000.0], 8, 1e4, np.float16)[0])    # float16 overflows
    assert precision.angle_errors([1e5], 128, 1e4, ml_dtypes.bfloat16)[0] > 2 * np.pi  # whole turns lost


def test_rotate_with_float64_angles_is_rotate():
    x = np.random.default_rng(0).standard_normal((5, 16))
    pos = np.arange(5) * 1000.0
    np.testing.assert_allclose(precision.rotate_with_angle_dtype(x, pos, dtype=np.float64), rr.rotate(x, pos),
                               atol=1e-15)
    q, k = quantities.random_qk(16)
    assert np.all(precision.score_error_by_dtype(q, k, pos, dtype=np.float64) < 1e-12)
    assert precision.score_error_by_dtype(q, k, np.array([1e5]), dtype=np.float32)[0] > 1e-6

