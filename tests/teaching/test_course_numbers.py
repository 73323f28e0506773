"""Every number the course notebooks state in prose, recomputed here independently of the notebook.

Each test reads the number from the notebook's text and derives it again, with plain NumPy where the
notebook calls rope_ref, or with a second rope_ref path (dense matrices) where it calls the fast one.
"""

import json
import math
from pathlib import Path

import numpy as np
import pytest

import rope_ref as rr
from rope_ref.teaching import context_extension, precision, quantities

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
    # distance of the code at m from the code at 0 in one pair is the chord 2 |sin(m theta / 2)|
    m = np.array([0.0, 1.0, 6.0, 44.0])
    np.testing.assert_allclose(quantities.code_distance(m, 8, pairs=[0]), 2 * np.abs(np.sin(m / 2)), atol=1e-12)
    # 44 rad = 7 turns + 0.018 rad: the closest return of pair 0 within 1..100
    turns = np.arange(1, 101) / (2 * np.pi)
    assert int(np.argmin(np.abs(turns - np.round(turns)))) + 1 == 44
    assert "7 turns plus 0.018 rad" in text("00_why_positions")
    assert abs(44 - 7 * 2 * np.pi) == pytest.approx(0.0177, abs=1e-4)


# --- 01: the radius is a choice ---------------------------------------------------------------------------------------

def test_radius_choice_keeps_the_score_and_grows_the_norm():
    q, k, a = np.array([1.5410, -0.2934]), np.array([-2.1788, 0.5684]), 1.05
    scores, norms = [], []
    for m, n in [(3, 10), (103, 110)]:
        fq = a ** m * (rr.rotation_matrix(m, 2) @ q)      # dense matrices, not the fast path
        fk = a ** -n * (rr.rotation_matrix(n, 2) @ k)
        np.testing.assert_allclose(quantities.radial_scaled(q, m, a), fq, rtol=1e-12)
        np.testing.assert_allclose(quantities.radial_scaled(k, n, 1 / a), fk, rtol=1e-12)
        scores.append(fq @ fk)
        norms.append(np.linalg.norm(fq))
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
    np.testing.assert_allclose(rr.decay_bound(r, 128), y4, rtol=1e-12)


def test_abel_terms_against_a_loop():
    q, k = quantities.random_qk(16, seed=3)
    for dist in [0.0, 2.5, 40.0]:
        t = quantities.abel_terms(q, k, dist)
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
    assert "reduce the angle mod $2\\pi$ in high precision" in t
    # reduce in float64, then cast: at most half an ulp of pi in float32 = 2^-22 / 2
    half_ulp_pi = np.spacing(np.float32(np.pi)) / 2
    assert f"{half_ulp_pi:.1e}" == "1.2e-07" and "1.2\\cdot10^{-7}" in t


def test_format_errors_spells_out_inf_nan_and_small_values():
    row = precision.format_errors([0.0030844, np.inf, np.nan, 2.3e3])
    assert row.split() == ["3.1e-03", "inf", "nan", "2.3e+03"]
    e16 = precision.score_error_by_dtype(*quantities.random_qk(128, seed=0), np.array([100.0]), dtype=np.float16)
    assert 1e-3 < e16[0] < 1e-2 and precision.format_errors(e16).strip() == f"{e16[0]:.1e}"
