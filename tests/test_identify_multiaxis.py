"""identify(fn, d) on kernels that are not 1-D RoPE in the row index, and on proportional RoPE (issue 20).

A 2-D axial kernel (a ViT reading its rows as a flattened W-wide grid) and M-RoPE on image tokens turn
each pair by a position that is not linear in the row: identify must say so and point at multi-axis
probing, never blame the precision of their float64 angles.  Proportional RoPE (Gemma 4's full-attention
layers, transformers' `proportional` init) is named with its half pairing, base and rotated fraction.
The kernels are written from those definitions here; expected values are their parameters.
"""

import numpy as np
import pytest

import rope_ref as rr
from kernels import rotate_half

D = 32


def axial_2d(x, width=8, base=100.0):
    """2-D axial RoPE (Heo et al. 2024): row r is patch (r // width, r % width); the first half of the
    pairs turn with the column, the second half with the row, each band theta_i = base^(-4i/d); half pairing."""
    seq, d = x.shape
    band = base ** (-4 * np.arange(d // 4) / d)
    r = np.arange(seq)
    ang = np.concatenate([np.outer(r % width, band), np.outer(r // width, band)], axis=-1)   # (seq, d/2)
    emb = np.concatenate([ang, ang], axis=-1)
    return x * np.cos(emb) + rotate_half(x) * np.sin(emb)


def mrope_image(x, width=8, sections=(4, 6, 6), base=10000.0, start=5):
    """M-RoPE (Qwen2-VL, contiguous sections) on image tokens after `start` text tokens: row r is patch
    (t, h, w) = (start, start + r // width, start + r % width); pair j uses the axis of its section."""
    seq, d = x.shape
    theta = base ** (-2 * np.arange(d // 2) / d)
    r = np.arange(seq)
    pos = np.stack([np.full(seq, start), start + r // width, start + r % width])      # (3, seq)
    axis = np.repeat(np.arange(3), sections)
    ang = pos[axis].T * theta                                                        # (seq, d/2)
    emb = np.concatenate([ang, ang], axis=-1)
    return x * np.cos(emb) + rotate_half(x) * np.sin(emb)


@pytest.mark.parametrize("kernel", [axial_2d, mrope_image], ids=["axial_2d_vit", "mrope_image_tokens"])
def test_angles_not_linear_in_the_row_are_named_never_precision(kernel):
    # before: "1-D RoPE ... angles behave like bfloat16 / compute angles in float32 or better" on float64 kernels
    spec = rr.identify(kernel, D)
    assert not spec.is_rope and spec.multi_axis
    text = str(spec)
    assert "not linear in the row index" in text and "identify(fn, d, axes=A)" in text
    assert "precision" not in text and "float32" not in text
    with pytest.raises(AssertionError) as info:
        rr.assert_rope_matches(kernel, D, base=10000.0)
    assert "not a 1-D rotary embedding" in str(info.value) and "precision" not in str(info.value)


def test_text_tokens_of_mrope_are_still_1d_rope():
    # t = h = w on text tokens: M-RoPE is 1-D RoPE there (no multi-axis note)
    def text(x):
        theta = 10000.0 ** (-2 * np.arange(D // 2) / D)
        emb = np.concatenate([np.outer(np.arange(len(x)) + 3, theta)] * 2, axis=-1)
        return x * np.cos(emb) + rotate_half(x) * np.sin(emb)
    spec = rr.identify(text, D)
    assert (spec.is_rope, spec.multi_axis, spec.offset, spec.pairing) == (True, False, 3, "half")


def test_a_16bit_1d_kernel_is_not_called_multi_axis():
    # the exactness test must not fire on rounded angles of a genuinely 1-D kernel
    def f16(x):
        theta = (10000.0 ** (-2 * np.arange(D // 2) / D)).astype(np.float16)
        ang = ((np.arange(len(x)) + 1000).astype(np.float16)[:, None] * theta).astype(np.float64)
        emb = np.concatenate([ang, ang], axis=-1)
        return x * np.cos(emb) + rotate_half(x) * np.sin(emb)
    spec = rr.identify(f16, D)
    assert spec.is_rope and not spec.multi_axis


def proportional(x, offset=0, base=1e6, partial_rotary_factor=0.25):
    """transformers' `proportional` init (Gemma 4 full attention): inv_freq of d/2 entries, base^(-2i/d) for
    the first int(partial_rotary_factor * d // 2) and 0 for the rest; cos/sin of cat(freqs, freqs); rotate_half."""
    seq, d = x.shape
    n = int(partial_rotary_factor * d // 2)
    inv = np.concatenate([base ** (-np.arange(0, 2 * n, 2) / d), np.zeros(d // 2 - n)])
    ang = np.outer(np.arange(seq) + offset, inv)
    emb = np.concatenate([ang, ang], axis=-1)
    return x * np.cos(emb) + rotate_half(x) * np.sin(emb)


@pytest.mark.slow
@pytest.mark.parametrize("d,fraction", [(64, 0.25), (128, 0.5)])
def test_proportional_rope_is_named_with_half_pairing_base_and_fraction(d, fraction):
    # before: "pairing=other base=31.6" for Gemma 4's full-attention RoPE (base 1e6, 1/4 of the head rotated)
    spec = rr.identify(lambda x: proportional(x, 40, partial_rotary_factor=fraction), d)
    assert (spec.pairing, spec.rotary_dim, spec.rope_type, spec.offset) == ("half", d, "proportional", 40)
    assert spec.base == pytest.approx(1e6, rel=1e-6)
    assert spec.rope_params["partial_rotary_factor"] == fraction
    n = int(fraction * d // 2)
    assert spec.inv_freq.shape == (d // 2,) and np.all(spec.inv_freq[n:] == 0)
    np.testing.assert_allclose(spec.inv_freq[:n], 1e6 ** (-np.arange(0, 2 * n, 2) / d), rtol=1e-9)
    assert f"a fraction {fraction:g} of the features rotates" in str(spec)
    expected = np.concatenate([1e6 ** (-np.arange(0, 2 * n, 2) / d), np.zeros(d // 2 - n)])
    rr.assert_rope_matches(lambda x: proportional(x, 40, partial_rotary_factor=fraction), d, pairing="half",
                           rotary_dim=d, offset=40, inv_freq=expected)
    with pytest.raises(AssertionError, match="offset: expected row 0 at position 0, found 40"):
        rr.assert_rope_matches(lambda x: proportional(x, 40, partial_rotary_factor=fraction), d, offset=0,
                               inv_freq=expected)


def test_a_proportional_kernel_with_the_wrong_base_is_not_named_proportional_with_it():
    spec = rr.identify(lambda x: proportional(x, 0, base=1e4), 64)
    assert spec.rope_type == "proportional" and spec.base == pytest.approx(1e4, rel=1e-6)


def test_positions_rounded_to_bfloat16_are_one_axis_not_multi_axis():
    # a 1-D kernel whose positions are cast to bfloat16 (spacing 32 near 5000): rows stand still, then all pairs
    # jump together. That is one axis with uneven positions, not a multi-axis RoPE (the first version of the
    # multi-axis test called it one; the audit's "positions cast to bfloat16 (bug)" case caught it).
    import ml_dtypes

    def bf16_positions(x):
        pos = (np.arange(len(x)) + 5000).astype(ml_dtypes.bfloat16).astype(np.float64)
        emb = np.concatenate([np.outer(pos, 10000.0 ** (-2 * np.arange(D // 2) / D))] * 2, axis=-1)
        return x * np.cos(emb) + rotate_half(x) * np.sin(emb)
    spec = rr.identify(bf16_positions, D)
    assert spec.is_rope and not spec.multi_axis
    assert any("not at evenly spaced positions" in n and "bfloat16" in n for n in spec.notes)
    with pytest.raises(AssertionError) as info:
        rr.assert_rope_matches(bf16_positions, D, offset=5000, base=10000.0)
    assert "offset" in str(info.value) and "not a 1-D" not in str(info.value)
