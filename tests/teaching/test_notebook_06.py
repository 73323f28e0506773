"""Notebook 06 (precision): every number its prose states, recomputed here in plain NumPy (without
rope_ref.teaching.precision), and its exercise's checker."""

import math

import numpy as np
import pytest

from rope_ref.teaching import example_kernels, quantities
from rope_ref.teaching.exercises import check_reduced_cast_error

import notebook_cells
from frequency_formulas import thetas

TEXT = notebook_cells.text("06_precision")


def turned(v, angles):
    """Interleaved pairs (2i, 2i + 1) of ``v`` (d,) turned by ``angles`` (..., d/2)."""
    a, b = v[0::2], v[1::2]
    return np.stack([a * np.cos(angles) - b * np.sin(angles), a * np.sin(angles) + b * np.cos(angles)], -1).reshape(
        angles.shape[:-1] + v.shape)


@pytest.mark.slow
def test_the_worst_float32_error_over_the_range_not_at_a_lucky_position():
    q, k = quantities.random_qk(128, seed=0)
    th, th32 = thetas(128), thetas(128).astype(np.float32)
    m = np.arange(0, 1_000_001, 100)
    exact = np.einsum("nd,nd->n", turned(q, np.outer(m, th)), turned(k, np.outer(m + 16, th)))
    angles32 = [(p.astype(np.float32)[:, None] * th32).astype(np.float64) for p in (m, m + 16)]
    error = np.abs(np.einsum("nd,nd->n", turned(q, angles32[0]), turned(k, angles32[1])) - exact)
    size = abs(turned(q, 0 * th) @ turned(k, 16 * th))
    assert f"{size:.2f}" == "5.76" and f"{error.max():.2f}" == "0.19" and round(100 * error.max() / size) == 3
    assert f"{error[-1]:.1e}" == "2.7e-03" and error[-1] < error.max() / 50       # 10^6 itself: a lucky position
    worst_angle = {top: max(np.abs((p.astype(np.float32)[:, None] * th32).astype(np.float64) - np.outer(p, th)).max()
                            for p in [np.arange(0, top + 1, step)]) for top, step in [(10_000, 1), (1_000_000, 100)]}
    assert f"{worst_angle[10_000]:.0e}" == "8e-04" and f"{worst_angle[1_000_000]:.0e}" == "6e-02"
    assert "off by up to $8\\cdot10^{-4}$ rad at positions up to $10^4$ and $6\\cdot10^{-2}$ rad up to $10^6$" in TEXT
    assert "as much as 0.19 on $|q\\cdot k| \\approx 5.76$ somewhere below $10^6$ — 3 %" in TEXT
    assert "only by $2.7\\cdot10^{-3}$: a single position can be a lucky one" in TEXT and "0.05 %" not in TEXT


def test_checklist_numbers():
    th16 = thetas(128).astype(np.float16)                  # the table in float16 at position 1857
    angle = (np.float16(1857) * th16).astype(np.float16).astype(np.float64)
    exact = 1857 * thetas(128)
    cos_error = np.abs(np.cos(angle).astype(np.float16).astype(np.float64) - np.cos(exact)).max()
    assert f"{np.abs(angle - exact).max():.2f} {cos_error:.2f}" == "0.73 0.71"
    th1 = 10000.0 ** (-2 / 32)                             # gpt-neox #1003, d = 32
    assert f"{1857 * th1:.2f}" == "1044.27" and float(np.float16(1857) * np.float16(th1)) == 1045.0
    positions = 4090 + np.arange(16)                       # a clamped table of 4096 rows
    wrong = (np.minimum(positions, 4095) - positions)[:, None] * thetas(128)
    assert int((positions > 4095).sum()) == 10
    assert f"{np.abs((wrong + np.pi) % (2 * np.pi) - np.pi).max():.2f}" == "3.12"
    factor = 0.1 * math.log(4) + 1
    assert f"{factor:.4f} {factor ** 2:.4f}" == "1.1386 1.2965"
    inv_freq, cast = (example_kernels.llama_recording()[k] for k in ("inv_freq", "inv_freq_bf16"))   # as built; bf16
    np.testing.assert_allclose(inv_freq, 500000.0 ** (-np.arange(0, 128, 2) / 128), rtol=2.0 ** -23)
    assert f"{inv_freq[1]:.5f} {cast[1]:.5f}" == "0.81462 0.81641"
    assert f"{np.abs(cast / inv_freq - 1).max():.2%}" == "0.33%"
    off = [np.abs((m * (cast.astype(float) - inv_freq) + np.pi) % (2 * np.pi) - np.pi).max() for m in (100, 1000)]
    assert [f"{x:.2f}" for x in off] == ["0.18", "1.79"]
    for shown in ["off by 0.73 rad and cosines off by 0.71",
                  "$1857\\,\\theta_1 = 1044.27$ comes out of float16 as 1045",
                  "reuses row 4095 for 10 positions and is off by up to 3.12 rad", "YaRN's factor 1.1386",
                  "raises a score by 1.2965",
                  "0.81462 becomes 0.81641, 0.18 rad off at position 100 and 1.79 rad at 1,000",
                  "(up to 0.39 % off; 0.33 % here)", "position 257 becomes 256, 259 becomes 260"]:
        assert shown in TEXT, shown


def test_checker(capsys):
    exact = 1e6 * thetas(128)
    reduced = (exact + np.pi) % (2 * np.pi) - np.pi
    right = np.abs(reduced.astype(np.float32).astype(np.float64) - reduced).max()
    assert right <= np.spacing(np.float32(np.pi)) / 2
    assert check_reduced_cast_error(right) and capsys.readouterr().out.startswith("Correct")
    naive = np.abs((np.float32(1e6) * thetas(128).astype(np.float32)).astype(np.float64) - exact).max()
    for wrong, said in [(naive, "product formed in float32"), (0.0, "not 0"), (1e-3, "Not yet"), ("small", "number")]:
        assert not check_reduced_cast_error(wrong) and said in capsys.readouterr().out
