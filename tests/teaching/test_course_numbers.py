"""Every number the course notebooks state in prose, recomputed here independently of the notebook.

Each test reads the number from the notebook's text and derives it again, with plain NumPy where the
notebook calls rope_ref, or with a second rope_ref path (dense matrices) where it calls the fast one.
"""

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

import rope_ref as rr
from rope_ref.teaching import context_extension, figures, precision, quantities

from notebook_cells import run_cells

NB_DIR = Path(__file__).resolve().parents[2] / "notebooks"


def text(name):
    cells = json.loads((NB_DIR / f"{name}.ipynb").read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def thetas(d, base=10000.0):
    return base ** (-np.arange(0, d, 2) / d)          # eq 15, indexed from 0, written out here


# --- 00 and 05: wavelengths ------------------------------------------------------------------------------------------

def test_wavelength_numbers():
    wl = 2 * np.pi / thetas(128)
    assert f"{wl[0]:.2f}" == "6.28" and f"{wl[-1]:,.0f}" == "54,410"
    never = int((wl > 4096).sum())
    # pair i turns less than once in 4096 positions iff i > 64 * log10(4096 / (2 pi)) / 4
    assert never == 64 - math.floor(64 * math.log10(4096 / (2 * np.pi)) / 4) - 1 == 18
    t = text("00_why_positions")
    assert "6.28 positions" in t and "54,410" in t and "18 of its 64" in t


# --- 00 and 03: aliasing ---------------------------------------------------------------------------------------------

def test_aliasing_numbers():
    short = 2 * np.pi - 6.0                               # how far 6 rad is from a full turn
    assert f"{short:.2f}" == "0.28"
    assert thetas(8)[1] == pytest.approx(0.1) and 6 * thetas(8)[1] == pytest.approx(0.6)
    assert "0.28 rad short of" in text("00_why_positions") and "0.6 rad" in text("00_why_positions")
    assert "0.28 rad" not in text("02_rotations"), "aliasing is explained once, in 00; 02 refers back"
    # distance of the code at m from the code at 0 in one pair is the chord 2 |sin(m theta / 2)|: the aliasing
    # figure's pair-0 curve, and the number notebook 00 prints with |e^{im} - 1|
    m, pair0 = figures.fig_aliasing().axes[0].lines[0].get_data()
    np.testing.assert_allclose(pair0, 2 * np.abs(np.sin(m / 2)), atol=1e-12)
    assert f"{2 * abs(math.sin(3)):.2f}" == "0.28" and "abs(np.exp(6j) - 1)" in "".join(
        "".join(c["source"]) for c in json.loads((NB_DIR / "00_why_positions.ipynb").read_text())["cells"])
    # 44 rad = 7 turns + 0.018 rad: the closest return of pair 0 within 1..100
    turns = np.arange(1, 101) / (2 * np.pi)
    assert int(np.argmin(np.abs(turns - np.round(turns)))) + 1 == 44
    assert "7 turns plus 0.018 rad" in text("00_why_positions")
    assert abs(44 - 7 * 2 * np.pi) == pytest.approx(0.0177, abs=1e-4)


# --- 01: the radius is a choice ---------------------------------------------------------------------------------------

def test_radius_choice_keeps_the_score_and_grows_the_norm(capsys):
    q, k, a = np.array([1.5410, -0.2934]), np.array([-2.1788, 0.5684]), 1.05
    notebook = run_cells("01_three_forms", "cell-31", namespace={"np": np, "rr": rr, "q2": q})   # f_q, f_k as 01 has them
    printed = re.findall(r"f_q \. f_k = ([-+]\d+\.\d+), \|f_q\| = +(\d+\.\d+)", capsys.readouterr().out)
    scores, norms = [], []
    for (m, n), (score, norm) in zip([(3, 10), (103, 110)], printed, strict=True):
        fq = a ** m * (rr.rotation_matrix(m, 2) @ q)      # dense matrices, not the fast path
        fk = a ** -n * (rr.rotation_matrix(n, 2) @ k)
        assert (f"{fq @ fk:+.10f}", f"{np.linalg.norm(fq):.3f}") == (score, norm)
        scores.append(fq @ fk)
        norms.append(np.linalg.norm(fq))
    np.testing.assert_allclose(notebook["fq"], fq, rtol=1e-12)     # the last (m, n) = (103, 110)
    np.testing.assert_allclose(notebook["fk"], fk, rtol=1e-12)
    assert scores[0] == pytest.approx(scores[1], rel=1e-12)
    assert norms[1] / norms[0] == pytest.approx(a ** 100) and f"{a ** 100:.1f}" == "131.5"
    t = text("01_three_forms")
    assert "1.05^{100} \\approx 131.5" in t and "only their **product** is fixed" in t


# --- 02: Figure 2 and eqs 35-37 ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def fig2():
    r = np.linspace(0, 256, 25601)
    out = {}
    for base in [1e4, 5e5]:
        S = np.cumsum(np.exp(1j * r[:, None] * thetas(128, base)[None, :]), axis=1)
        out[base] = np.abs(S).mean(axis=1)
    return r, out


def test_figure2_numbers(fig2):
    r, y = fig2
    y4, y5 = y[1e4], y[5e5]
    assert y4[0] == pytest.approx(32.5)
    assert f"{r[np.argmax(y4 < 22)]:.2f}" == "4.27"
    assert f"{y4[r >= 5].min():.2f}" == "6.39" and f"{y4[r >= 5].max():.2f}" == "20.85"
    assert f"{y4[r >= 128].mean():.2f}" == "8.26" and f"{y5[r >= 128].mean():.2f}" == "12.58"
    t = text("03_long_term_decay")
    assert "distance 4.27" in t and "32.5" in t and "12.58 instead of 8.26" in t
    assert "The paper gives neither $d$ nor the ranges" in " ".join(t.split()) and "**inferred**" in t   # d = 128 fits
    np.testing.assert_allclose(rr.decay_bound(r, 128), y4, rtol=1e-12)


def test_eqs_35_to_37_of_notebook_03_against_a_loop():
    q, k = quantities.random_qk(16, seed=3)
    eqs_35_to_37 = run_cells("03_long_term_decay", "cell-07", namespace={"np": np})["eqs_35_to_37"]
    for dist in [0.0, 2.5, 40.0]:
        t = eqs_35_to_37(q, k, dist, thetas(16))
        h = [complex(q[2 * i], q[2 * i + 1]) * complex(k[2 * i], -k[2 * i + 1]) for i in range(8)] + [0j]
        e = [complex(math.cos(dist * th), math.sin(dist * th)) for th in thetas(16)]
        S = np.cumsum(e)
        direct = sum(h[i] * e[i] for i in range(8))
        abel = -sum(S[i] * (h[i + 1] - h[i]) for i in range(8))
        assert t["direct"] == pytest.approx(direct) and t["abel"] == pytest.approx(abel)
        assert t["triangle"] == pytest.approx(sum(abs(S[i]) * abs(h[i + 1] - h[i]) for i in range(8)))
        assert t["bound"] == pytest.approx(max(abs(h[i + 1] - h[i]) for i in range(8)) * np.abs(S).sum())
        # eq 35: the score through dense rotation matrices (m - n = dist) is Re of the sum
        score = (rr.rotation_matrix(dist, 16) @ q) @ k
        assert score == pytest.approx(direct.real)
        assert abs(direct) <= t["triangle"] <= t["bound"]


# --- 05: dynamic NTK ---------------------------------------------------------------------------------------------------

def test_dynamic_ntk_effective_factor_is_57():
    s, L_train = 8.0, 4096
    freqs, _ = rr.scaled_inv_freq(128, rope_type="dynamic", factor=s, max_position_embeddings=L_train,
                                  seq_len=int(s * L_train))
    assert thetas(128)[-1] / freqs[-1] == pytest.approx(s * s - (s - 1)) == 57
    ratio, _ = context_extension.frequency_ratios(factor=8.0)["dynamic"]
    assert 1 / ratio[-1] == pytest.approx(57)
    t = text("05_context_extension")
    assert "$8\\cdot 8 - 7 = 57$" in t and "not 8" in t and "$4\\cdot4-3 = 13$" in t and "$4\\cdot2-3 = 5$" in t


def test_per_pair_angles_claims_of_notebook_05():
    a = context_extension.angles_reached(factor=8.0)
    train = a["training"]
    np.testing.assert_allclose(a["linear"], train, rtol=1e-12)             # linear: on the training line
    unseen = train < 2 * np.pi                                               # pairs below one turn in training
    assert unseen.sum() == 18
    for name in ["yarn", "llama3"]:                                          # slow pairs land on the line
        np.testing.assert_allclose(a[name][unseen], train[unseen], rtol=1e-9)
    assert a["ntk"][-1] == pytest.approx(train[-1]) and np.all(a["ntk"][unseen][:-1] > train[unseen][:-1])
    assert np.all(a["dynamic"][unseen] < train[unseen])                     # squeezed more than needed
    assert a["dynamic"][-1] == pytest.approx(train[-1] * 8 / 57)


# --- 06: precision -----------------------------------------------------------------------------------------------------

def test_precision_numbers():
    th = thetas(128)
    err32 = {p: np.abs((np.float32(p) * th.astype(np.float32)).astype(np.float64) - p * th).max() for p in [1e4, 1e6]}
    assert f"{err32[1e4]:.0e}" == "3e-04" and round(err32[1e6], 2) == 0.05
    assert np.finfo(np.float16).max == 65504
    t = text("06_precision")
    assert "$3\\cdot10^{-4}$ rad at $10^4$" in t and "$\\sim 5\\cdot10^{-2}$ rad at $10^6$" in t and "65504" in t
    assert "reduce the angle mod $2\\pi$ in high precision" not in t
    assert "form the **product** $m\\theta_i$ in float64" in t
    # reduce in float64, then cast: at most half an ulp of pi in float32 = 2^-22 / 2
    half_ulp_pi = np.spacing(np.float32(np.pi)) / 2
    assert f"{half_ulp_pi:.1e}" == "1.2e-07" and "1.2\\cdot10^{-7}" in t


def test_format_errors_spells_out_inf_nan_and_small_values():
    row = precision.format_errors([0.0030844, np.inf, np.nan, 2.3e3])
    assert row.split() == ["3.1e-03", "inf", "nan", "2.3e+03"]
    e16 = precision.score_error_by_dtype(*quantities.random_qk(128, seed=0), np.array([100.0]), dtype=np.float16)
    assert 1e-3 < e16[0] < 1e-2 and precision.format_errors(e16).strip() == f"{e16[0]:.1e}"


# --- 00: four schemes, one task (issue 24) ------------------------------------------------------------------------------

def _softmax_weight(logits, target):
    w = np.exp(logits - logits.max())
    return w[target] / w.sum()


def _t5_bucket(r, num_buckets=32, max_distance=128):
    """transformers' T5Attention._relative_position_bucket, bidirectional=False, for one distance r = m - n >= 0."""
    exact = num_buckets // 2
    if r < exact:
        return r
    return min(exact + int(math.log(r / exact) / math.log(max_distance / exact) * (num_buckets - exact)),
               num_buckets - 1)


def test_four_schemes_numbers_of_notebook_00():
    L, height, offsets = 64, 12.0, (3, 7)
    theta = thetas(128)
    # RoPE with content-free keys: the logit of query c at distance r is Re(sum_i z_ci e^{-i r theta_i}) for complex
    # z_ci (q and k as complex pairs); fitted here as a complex least-squares problem on e^{-i r theta_i}
    E = np.exp(-1j * np.outer(np.arange(L), theta))
    A = np.concatenate([E.real, -E.imag], axis=1)             # Re(z e) = Re z Re e - Im z Im e
    rope = {}
    for o in offsets:
        sol = np.linalg.lstsq(A, height * (np.arange(L) == o), rcond=None)[0]
        for end in (63, 1000):
            rel = np.arange(L)[::-1]                          # keys end-63..end: distances 63..0
            Er = np.exp(-1j * np.outer(rel, theta))
            rope[o, end] = _softmax_weight(np.concatenate([Er.real, -Er.imag], axis=1) @ sol,
                                           int(np.flatnonzero(rel == o)[0]))
    # T5: per bucket the mean target over both contents; all distances 0..15 have their own bucket
    t5 = {}
    for o in offsets:
        logits = np.array([height / 2 if r in offsets else 0.0 for r in range(L)])   # mean of the two targets
        t5[o] = _softmax_weight(logits, o)
    assert all(_t5_bucket(r) == r for r in range(16)) and _t5_bucket(128) == _t5_bucket(5000) == 31
    np.testing.assert_array_equal(quantities.t5_bucket(np.arange(600)), [_t5_bucket(r) for r in range(600)])
    alibi = {o: _softmax_weight(-0.5 * np.arange(L), o) for o in offsets}
    got = quantities.offset_head_weights(offsets=offsets, train_len=L, d=128, height=height, window_ends=(63, 1000))
    np.testing.assert_allclose(got["RoPE"], [[rope[3, 63], rope[3, 1000]], [rope[7, 63], rope[7, 1000]]], atol=1e-6)
    np.testing.assert_allclose(got["T5 bias"], [[t5[3]] * 2, [t5[7]] * 2], atol=1e-9)
    np.testing.assert_allclose(got["ALiBi"], [[alibi[3]] * 2, [alibi[7]] * 2], atol=1e-12)
    assert np.all(np.isnan(got["learned absolute"][:, 1])) and np.all(got["learned absolute"][:, 0] > 0.97)
    t = text("00_why_positions")
    assert f"{t5[3]:.2f}" == "0.46" and "(0.46 each)" in t
    assert f"{rope[3, 63]:.3f}" == "0.999" and f"{rope[7, 63]:.2f}" == "0.73" and "0.999 and 0.73" in t
    assert "1/64 is no preference" in t and 1 / L == 0.015625


def test_notebook_00_fact_check():
    t = text("00_why_positions")
    assert "seven apart" in t and (10 - 3) == 7 and "three apart" not in t
    assert "§3.4.3" in t and "§3.3, Figure 2" not in t
    a = (44 * thetas(8) + np.pi) % (2 * np.pi) - np.pi
    assert [f"{x:.2f}" for x in a[1:]] == ["-1.88", "0.44", "0.04"] and f"{a[3]:.3f}" == "0.044"
    assert "hand 2 at 0.44 rad" in t and "hand 3 at 0.044 rad" in t and "$-1.88$ rad from home" in t
    assert "lecture notes" not in t + text("01_three_forms") and "Stratos" not in text("01_three_forms")



def _plain_attention(x, causal):
    """Softmax attention of x with itself, no positions, in plain NumPy: (N, d) -> (N, d)."""
    scores = x @ x.T / math.sqrt(x.shape[1])
    if causal:
        scores = np.where(np.tri(len(x), dtype=bool), scores, -np.inf)
    w = np.exp(scores - scores.max(axis=1, keepdims=True))
    return (w / w.sum(axis=1, keepdims=True)) @ x


def test_notebook_00_order_claims_hold_only_without_a_mask():
    rng = np.random.default_rng(0)                        # the notebook's six tokens and shuffle
    x = rng.standard_normal((6, 16))
    perm = rng.permutation(6)
    assert np.abs(_plain_attention(x[perm], False) - _plain_attention(x, False)[perm]).max() < 1e-12
    assert np.abs(_plain_attention(x[perm], True) - _plain_attention(x, True)[perm]).max() > 0.1
    t = " ".join(text("00_why_positions").split())
    assert "## Without a mask, attention does not see order" in t and "no causal mask" in t
    assert "A causal mask (a decoder: each token sees only the tokens before it) already leaks some order" in t
    code = "".join("".join(c["source"]) for c in json.loads((NB_DIR / "00_why_positions.ipynb").read_text())["cells"])
    assert "k_positions=zeros, causal=True)" in code


def test_notebook_00_says_whose_requirements_and_how_each_scheme_is_fitted():
    t = " ".join(text("00_why_positions").split())
    assert "Requirement 2 and the KV cache are this course's" in t
    assert "T5 and ALiBi break requirement 3 only for linear attention" in t
    assert "The paper's case for RoPE is requirements 1–4" not in t and "fitted by least squares" not in t
    # how quantities.offset_head_weights treats each scheme, read from its source: ALiBi has no fit, learned absolute
    # is a truncated SVD, T5 and RoPE are least squares (a bucket's mean target is its least-squares bias)
    import inspect
    body = inspect.getsource(quantities.offset_head_weights)
    assert "np.linalg.svd(" in body and body.count("np.linalg.lstsq(") == 1 and "-alibi_slope * rel" in body
    assert "(a table of position vectors, by SVD)" in t and "nothing to fit" in t and t.count("by least squares") == 2


def test_notebook_00_leaves_partial_rotary_to_notebook_08():
    t = text("00_why_positions")
    code = "".join("".join(c["source"]) for c in json.loads((NB_DIR / "00_why_positions.ipynb").read_text())["cells"])
    assert "fig_turning_dimensions" not in code and "Qwen3.5" not in t and "Gemma 4" not in t


# --- 03: how loose the bound is, what the normalised figure shows -------------------------------------------------------

@pytest.mark.slow
def test_decay_looseness_and_normalised_figure_numbers():
    q, k = quantities.random_qk(128, seed=0)
    h = [complex(q[2 * i], q[2 * i + 1]) * complex(k[2 * i], -k[2 * i + 1]) for i in range(64)] + [0j]
    middle, final = [], []
    for dist in [0.0, 7.5, 100.0, 250.0]:
        e = [cmath_exp(dist * th) for th in thetas(128)]
        S = np.cumsum(e)
        direct = abs(sum(h[i] * e[i] for i in range(64)))
        dh = [abs(h[i + 1] - h[i]) for i in range(64)]
        middle.append(sum(abs(S[i]) * dh[i] for i in range(64)) / direct)
        final.append(max(dh) * np.abs(S).sum() / direct)
    assert (f"{middle[2]:.0f}", f"{final[2]:.0f}") == ("149", "376")               # the one row, r = 100
    assert min(middle) > 50 and min(final) > 100, "loose at every distance tried"
    t = text("03_long_term_decay")
    prose = " ".join(t.split())
    assert "at distance 100 the middle inequality is 149 times" in prose and "the final bound 376 times" in prose
    code = "".join("".join(c["source"]) for c in json.loads((NB_DIR / "03_long_term_decay.ipynb").read_text())["cells"])
    assert "dist = 100.0" in code and "for dist in" not in code, "03's Abel table has one row"
    # the normalised figure (as notebook 03 draws it, 1024 samples): random q, k stay within 0.94..1.03 of their value
    # at 0 at the figure's 129 distances; the bound falls to ~0.2.  Recomputed with dense rotation matrices.
    cells_03 = json.loads((NB_DIR / "03_long_term_decay.ipynb").read_text())["cells"]
    assert "fig_decay_vs_actual(n_samples=1024)" in "".join("".join(c["source"]) for c in cells_03)
    r, got = figures.fig_decay_vs_actual(n_samples=1024).axes[0].lines[1].get_data()
    qs, ks = quantities.random_qk(128, seed=0, n=1024)
    dense = np.array([np.abs(np.einsum("nd,de,ne->n", qs, rr.rotation_matrix(dist, 128), ks)).mean() for dist in r])
    np.testing.assert_allclose(got, dense / dense[0], rtol=1e-9)
    assert len(r) == 129 and (f"{(dense / dense[0]).min():.2f}", f"{(dense / dense[0]).max():.2f}") == ("0.94", "1.03")
    bound = np.abs(np.cumsum(np.exp(1j * np.outer(r, thetas(128))), axis=1)).mean(axis=1)
    assert bound[-1] / bound[0] == pytest.approx(0.2, abs=0.03)
    prose = " ".join(t.split())
    assert "with 1024 random pairs it stays between about 0.94 and 1.03" in prose and "0.9 and 1.1" not in prose


def cmath_exp(angle):
    return complex(math.cos(angle), math.sin(angle))


def test_notebook_05_names_and_no_repeated_wavelength_cell():
    t = text("05_context_extension")
    assert "transformers has no static `ntk` type" in t and "18 of the 64" in t
    code = "\n".join("".join(c["source"]) for c in json.loads((NB_DIR / "05_context_extension.ipynb").read_text())["cells"]
                     if c["cell_type"] == "code")
    assert "wavelengths(" not in code, "the wavelength cell lives in 00; 05 refers back"


def test_notebook_01_worked_example():
    c, s = math.cos(1.4314), math.sin(1.4314)
    assert (f"{c:.3f}", f"{s:.3f}") == ("0.139", "0.990")
    x, y = 1.5410 * c + 0.2934 * s, 1.5410 * s - 0.2934 * c            # rotate (1.5410, -0.2934) by 1.4314
    assert (f"{x:.4f}", f"{y:.4f}") == ("0.5047", "1.4853")
    t = " ".join(text("01_three_forms").split())
    assert "$(0.5047, 1.4853)$" in t and "$\\cos 1.4314 \\approx 0.139$" in t and "$\\sin 1.4314 \\approx 0.990$" in t


# --- 03: the decay view's static frames show what their captions say --------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("start", [{"d": 128, "base": 10000.0}, {"d": 64, "base": 1e5}])
def test_decay_view_frames_show_the_d_and_base_their_captions_name(start):
    """The frames apply one after another (SliderApp), so a frame that names d or a base must set it itself."""
    from rope_ref.teaching.widgets import decay_widget
    box = decay_widget(**start)
    state = dict(start)
    named = 0
    for caption, params in box.frames:
        state.update(params)                              # cumulative, as SliderApp applies them
        for d in re.findall(r"\bd = (\d+)", caption):
            assert state["d"] == int(d), f"frame {caption!r} shows d = {state['d']}"
            named += 1
        for base in re.findall(r"base (\d+(?:\.\d+)?e\d+)", caption):
            assert state["base"] == float(base), f"frame {caption!r} shows base {state['base']:g}"
            named += 1
    assert named >= 3
    assert "d = 128, Llama 3's base 5e5" in [c.split(":")[0] for c, _ in box.frames]


def test_notebook_01_eq16_needs_orthogonality_and_adding_angles():
    def block(angle):
        return np.array([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])
    for theta in thetas(8):
        m, n = 3.0 * theta, 10.0 * theta
        assert np.allclose(block(m).T, np.linalg.inv(block(m))) and np.allclose(block(m).T, block(-m))  # orthogonal
        assert np.allclose(block(-m) @ block(n), block(n - m))                                       # angles add
    t = " ".join(text("01_three_forms").split())
    assert "Each $R$ is orthogonal, so $R_m^\\top = R_m^{-1}$" in t
    assert "rotations of the same planes add their angles" in t
    assert "it misses the transpose of $W_q$ and the subscript of $x$" in t and "drops the transposes" not in t
    assert "$x_m^\\top W_q^\\top R^d_{\\Theta,n-m} W_k x_n$" in t
    assert "$f(x, 0) = x$" not in t and "$f_q(x_q, 0) = q = W_q x_q$" in t
    assert "the unrotated $W_q x_q$ and $W_k x_k$" in t
    code = "".join("".join(c["source"]) for c in json.loads((NB_DIR / "01_three_forms.ipynb").read_text())["cells"])
    assert "getsource" not in code and "rr.rotate_dense(x)" not in code, "01's cut: no source print, no form table"


def test_notebook_05_yarn_logits_and_llama3_thresholds():
    t = " ".join(text("05_context_extension").split())
    # YaRN: transformers multiplies cos and sin by the attention factor, so q and k both grow by it
    s, L_train = 8.0, 4096
    att = 0.1 * math.log(s) + 1
    assert f"{att ** 2:.3f}" == "1.459" and "$(0.1\\ln 8 + 1)^2 \\approx 1.459$ at $s = 8$" in t
    _, got = rr.scaled_inv_freq(128, 10000.0, rope_type="yarn", factor=s, original_max_position_embeddings=L_train)
    assert got == pytest.approx(att)
    q, k = quantities.random_qk(128, seed=0)
    assert (att * rr.rotate(q, 30.0)) @ (att * rr.rotate(k, 5.0)) == pytest.approx(att ** 2 * rr.rotate(q, 25.0) @ k)
    assert "scales both q and k, so the logits $q\\cdot k$ grow by its square" in t
    # Llama 3: pairs faster than L / high_freq_factor are kept, slower than L / low_freq_factor divided by s
    wavelengths = 2 * np.pi / thetas(128)
    for low, high in [(1.0, 4.0), (2.0, 8.0)]:
        freqs, _ = rr.scaled_inv_freq(128, 10000.0, rope_type="llama3", factor=s, low_freq_factor=low,
                                      high_freq_factor=high, original_max_position_embeddings=L_train)
        kept, divided = wavelengths < L_train / high, wavelengths > L_train / low
        assert kept.any() and divided.any()
        np.testing.assert_allclose(freqs[kept], thetas(128)[kept], rtol=1e-12)
        np.testing.assert_allclose(freqs[divided], thetas(128)[divided] / s, rtol=1e-12)
    params = context_extension.method_configs(factor=s, train_len=L_train)["llama3"]
    assert (params["low_freq_factor"], params["high_freq_factor"]) == (1.0, 4.0)
    assert "hold for Llama 3.1's `low_freq_factor` 1 and `high_freq_factor` 4" in t
    # no model is run, so the title promises no context length
    assert "reaches 32k" not in t and "it runs no model" in t
