"""identify(fn, d, axes=A) on shifted, centred, aliased and 16-bit multi-axis kernels (issue 30, items 3, 5, 6).

The kernels are written as outside NumPy ports of diffusers' axial RoPE write them: ids (A, seq) cast to the
kernel's float type, each axis its own block of dims[a]/2 pairs turning by theta_k = base^(-2k/dims[a]) times
that axis's id (plus the shift the model adds: Qwen-Image centres its row and column ids on 0), cos and sin
repeated pair by pair, applied to pairs (2i, 2i + 1).  The expected values are those parameters.
"""

import ml_dtypes
import numpy as np
import pytest

import rope_ref as rr
from rope_ref.kernel_check import RopeMismatch

DIMS = (16, 56, 56)             # FLUX.1's axes_dims_rope


def expected_matrix(dims=DIMS, base=1e4, factor=1.0):
    """(sum(dims)/2, len(dims)): axis a's block of pairs turning by factor * base^(-2k/dims[a])."""
    matrix = np.zeros((sum(dims) // 2, len(dims)))
    start = 0
    for a, dim in enumerate(dims):
        matrix[start:start + dim // 2, a] = factor * base ** (-np.arange(0, dim, 2) / dim)
        start += dim // 2
    return matrix


def numpy_port(dtype=np.float64, shift=(0, 0, 0), out=None, factor=1.0, dims=DIMS, base=1e4):
    """fn(x (seq, d), ids (A, seq)): angles in ``dtype`` at ids + shift, cos/sin float32 when ``out`` is given
    (the model's dtype, the result cast to it as ``.to(x.dtype)``)."""
    inv_freq = [(factor / base ** (np.arange(0, dim, 2) / dim)).astype(dtype) for dim in dims]

    def fn(x, ids):
        pos = (np.asarray(ids) + np.asarray(shift)[:, None]).astype(dtype)
        ang = np.concatenate([np.outer(pos[a], inv_freq[a]) for a in range(len(dims))], axis=-1)
        cos, sin = np.repeat(np.cos(ang), 2, axis=-1), np.repeat(np.sin(ang), 2, axis=-1)
        if out is not None:
            cos, sin, x = cos.astype(np.float32), sin.astype(np.float32), x.astype(out).astype(np.float32)
        rotated = np.stack([-x[:, 1::2], x[:, 0::2]], axis=-1).reshape(x.shape)
        y = x * cos + rotated * sin
        return y if out is None else y.astype(out)
    return fn


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
def test_positions_shifted_by_minus_1000_are_measured_with_the_shift(dtype):
    """float32 angles at ids - 1000 err as angles of ~1000 rad do: refused as not linear before."""
    fn = numpy_port(dtype, shift=(0, -1000, -1000))
    spec = rr.identify(fn, 128, axes=3)
    assert spec.is_rope, spec
    assert (spec.form, spec.sections, spec.axis_bases) == ("axial", (8, 28, 28), (1e4, 1e4, 1e4)), spec
    assert spec.position_shift == (0.0, -1000.0, -1000.0)
    assert spec.angle_precision == ("float64" if dtype == np.float64 else "float32"), spec
    rr.assert_rope_matches(fn, 128, axes=3, inv_freq=expected_matrix(), pairing="interleaved",
                           position_shift=(0, -1000, -1000))
    with pytest.raises(RopeMismatch, match=r"rotation at position 0: expected none, .*\(fn shifts the positions by "
                                           r"h-1000, w-1000\)"):
        rr.assert_rope_matches(fn, 128, axes=3, inv_freq=expected_matrix())


def test_centred_ids_are_named_and_a_wrong_centre_is_named():
    """Qwen-Image's scale_rope: a latent of 64 rows and 64 columns has row and column ids -32..31."""
    fn = numpy_port(np.float32, shift=(0, -32, -32))
    spec = rr.assert_rope_matches(fn, 128, axes=3, inv_freq=expected_matrix(), position_shift=(0, -32, -32))
    assert spec.position_shift == (0.0, -32.0, -32.0)
    with pytest.raises(RopeMismatch, match=r"position_shift: expected h-31, w-32, found h-32, w-32"):
        rr.assert_rope_matches(fn, 128, axes=3, inv_freq=expected_matrix(), position_shift=(0, -31, -32))
    with pytest.raises(RopeMismatch, match=r"position_shift: expected h-32, w-32, found none \(fn does not shift its "
                                           r"positions: ids not centred\?\)"):
        rr.assert_rope_matches(numpy_port(np.float32), 128, axes=3, inv_freq=expected_matrix(),
                               position_shift=(0, -32, -32))


@pytest.mark.slow
def test_flux_in_bfloat16_is_named_a_16bit_output_as_in_1d():
    """Angles and cos/sin float64 -> float32, q in bfloat16, the result cast back to bfloat16 (diffusers' Flux
    in a bfloat16 pipeline): the 1-D probe says cos/sin or output 16-bit; so must the multi-axis probe."""
    fn = numpy_port(out=ml_dtypes.bfloat16)
    with pytest.raises(RopeMismatch) as err:
        rr.assert_rope_matches(fn, 128, axes=3, inv_freq=expected_matrix(), pairing="interleaved")
    assert err.value.problems == [
        f"angle precision: angles behave like float32 (cos/sin or output rounded to 16 bits) (errors up to "
        f"{err.value.spec.phase_error:.2g} rad); pass phase_atol= to accept that precision"]
    one_d = rr.identify(lambda x: fn(x, np.tile(np.arange(len(x)), (3, 1))), 128)    # text ids: t = h = w
    assert one_d.angle_precision.startswith("float32 (cos/sin")
    rr.assert_rope_matches(fn, 128, axes=3, inv_freq=expected_matrix(), phase_atol=0.01)


def test_frequencies_above_pi_per_step_get_the_aliasing_note():
    """inv_freq = 4 F: pair 0 of each axis turns 4 rad per step, seen as 4 - 2 pi."""
    spec = rr.identify(numpy_port(factor=4.0), 128, axes=3)
    assert spec.is_rope, spec
    assert spec.inv_freq[0, 0] == pytest.approx(4 - 2 * np.pi, rel=1e-9)
    aliasing = [n for n in spec.notes if "aliasing" in n]
    assert len(aliasing) == 1 and aliasing[0].startswith("along t, h, w (pairs counted within the axis): pairs 0..0 "
                                                         "turn more than pi rad per row (aliasing)"), spec.notes
    assert "known only modulo 2 pi" in aliasing[0]


def test_hundreds_of_radians_per_step_are_named_aliasing_not_nonlinear():
    """float32 angles of a pair turning ~300 rad per step: the aliased line fits, the rounding of the true
    angles (up to ~10^6 rad) does not fit what float32 allows on the aliased ones."""
    spec = rr.identify(numpy_port(np.float32, factor=300.0), 128, axes=3)
    assert not spec.is_rope
    assert spec.reason.startswith("the angles alias or are shifted far: along "), spec.reason


@pytest.mark.parametrize("shift, err, words", [
    ((0, -32), ValueError, r"position_shift must hold one shift per axis, shape \(3,\), got shape \(2,\)"),
    ((0, np.nan, 1), ValueError, "position_shift must be finite"),
    (("a", 0, 0), TypeError, "position_shift must be a real array"),
])
def test_position_shift_is_checked_before_fn_is_called(shift, err, words):
    def fn(x, p):
        raise AssertionError("fn must not be called")
    with pytest.raises(err, match=words):
        rr.assert_rope_matches(fn, 128, axes=3, position_shift=shift)


def test_expected_frequencies_above_pi_per_step_are_said_to_alias():
    with pytest.raises(RopeMismatch, match=r"3 of them expected to turn by more than pi rad per position step \(up "
                                           r"to 4\): sampled at integer positions such a turn aliases"):
        rr.assert_rope_matches(numpy_port(factor=4.0), 128, axes=3, inv_freq=expected_matrix(factor=4.0))
    with pytest.raises(RopeMismatch) as err:                      # frequencies below pi: no such words
        rr.assert_rope_matches(numpy_port(factor=0.5), 128, axes=3, inv_freq=expected_matrix())
    assert "alias" not in str(err.value)
