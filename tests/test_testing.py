"""rope_ref.testing: a kernel built as its declared precision says passes, every planted defect fails, the bound holds
at its edge, layouts and tables give the positions and rows a suite's kernel uses."""

import warnings
from types import SimpleNamespace

import ml_dtypes
import numpy as np
import pytest

import rope_ref as rr
from rope_ref.kernel_check import DEFECTS as CATALOGUE
from rope_ref.kernel_check import RopeMismatch, expected_model
from rope_ref.testing import Precision, assert_rope_close, layout_positions, rotate_table

from kernels import MEASURED, planted

F32, BF16, F16 = np.float32, ml_dtypes.bfloat16, np.float16


def model_kernel(x, pos, *, base=10000.0, pairing="half", rotary_dim=None, table=F32, compute=F32):
    """A kernel as ggml computes it: pair j's float32 angle the position times j products of base^(-2/r) (the least
    precise of the suites' ways), the table and arithmetic in ``table``/``compute``, written out in x's dtype."""
    r, p = rotary_dim or x.shape[-1], np.asarray(pos).astype(F32)[..., None]
    step = np.broadcast_to(F32(base) ** (F32(-2) / F32(r)), p.shape[:-1] + (r // 2 - 1,))
    ang = np.cumprod(np.concatenate([p, step], -1), axis=-1, dtype=F32)
    c, s = np.cos(ang).astype(table).astype(compute), np.sin(ang).astype(table).astype(compute)
    xr, rest = x[..., :r].astype(compute), x[..., r:].astype(compute)
    c, s = (np.concatenate([t, t], -1) if pairing == "half" else np.repeat(t, 2, -1) for t in (c, s))
    y = xr * c + rr.rotate_half(xr, pairing) * s
    return np.concatenate([y, rest], -1).astype(x.dtype)


CASES = [(64, 1e4, None), (128, 5e5, None), (80, 1e4, None), (96, 1e6, 48), (128, 1e4, 32)]
PRECISION_DTYPES = [("float32", F32), ("bfloat16", BF16), ("float16", F16)]


def _positions(rng, largest):
    return np.concatenate([np.arange(32), rng.integers(0, largest, 96)]).astype(np.float64)


@pytest.mark.parametrize("d, base, rotary_dim", CASES)
@pytest.mark.parametrize("pairing", ["half", "interleaved"])
@pytest.mark.parametrize("precision, dtype", PRECISION_DTYPES)
def test_a_kernel_built_as_declared_passes_up_to_a_million(d, base, rotary_dim, pairing, precision, dtype):
    rng = np.random.default_rng(d)
    pos = _positions(rng, 10**6 if precision != "float16" else 6 * 10**4)
    x = rng.standard_normal((2, len(pos), d)).astype(dtype)
    y = model_kernel(x, pos, base=base, pairing=pairing, rotary_dim=rotary_dim, table=dtype, compute=dtype)
    assert_rope_close(y, x, pos, base=base, pairing=pairing, rotary_dim=rotary_dim, precision=precision)


def _rope_of(expected):
    """assert_rope_close's keywords for a plant's expectation: rotate's, or a config.json for a scaling method."""
    method = {k: v for k, v in expected.items() if k not in ("pairing", "rotary_dim", "base", "offset")}
    if not method:
        return dict(pairing=expected["pairing"], rotary_dim=expected["rotary_dim"], base=expected["base"])
    return dict(pairing=expected["pairing"], config=dict(model_type="llama", hidden_size=128, num_attention_heads=2,
                                                         partial_rotary_factor=0.5, rope_theta=expected["base"],
                                                         rope_scaling=method))


@pytest.mark.parametrize("name", [d.name for d in CATALOGUE])
@pytest.mark.parametrize("precision, dtype", PRECISION_DTYPES[:2])
def test_every_catalogued_defect_in_a_kernels_output_fails_and_is_named(name, precision, dtype):
    """Each entry of the catalogue planted in a kernel's output fails and is named (another scaling method: not
    measured from an output), and the kernel without it passes; cos/sin in 16 bits is what a bfloat16 kernel does."""
    if precision == "bfloat16" and name.startswith("cos/sin"):
        pytest.skip("the declared precision")
    expected, model = planted(name)
    rng = np.random.default_rng(1)
    pos = _positions(rng, 4096)
    x = rng.standard_normal((2, len(pos), 64)).astype(dtype)
    with pytest.raises(RopeMismatch, match="bound") as info:
        assert_rope_close(model.rotate(x.astype(float), pos).astype(dtype), x, pos, precision=precision,
                          **_rope_of(expected))
    assert info.value.defects == ([] if name == "another scaling method" else [name]), info.value.problems
    assert info.value.defects or "no known defect explains" in str(info.value)
    right = expected_model(expected, SimpleNamespace(**MEASURED))
    assert_rope_close(right.rotate(x.astype(float), pos).astype(dtype), x, pos, precision=precision,
                      **_rope_of(expected))


@pytest.mark.parametrize("position", [300.0, 3000.0, 30000.0])
def test_the_bound_holds_at_its_edge(position):
    """Angles rounded in float32, everything else exact: turned by exactly the angle budget, the kernel passes;
    one float32 ulp of the angle beyond it, it fails at the feature the rotation moves most."""
    precision = Precision("float32", "float64", "float64", "float64")
    d, j = 8, 0
    pos = np.array([position])
    phi = position * rr.frequencies(d)[j]
    budget = 6.0 * (np.finfo(np.float32).eps / 2) * phi          # theta_0 = 1: |ln theta_0| = 0
    x = np.zeros((1, d))
    x[0, 0], x[0, 1] = np.sin(phi), -np.cos(phi)              # R(phi) x = (1, 0): feature 0 moves by sin(delta)

    def turned_by(delta):
        return rr.rotate_elementwise(x, pos + delta / rr.frequencies(d)[j] * np.eye(1)[0], pairing="interleaved")

    exact_turn = np.arcsin(budget) * (1 - 1e-12)
    assert_rope_close(turned_by(exact_turn), x, pos, precision=precision)
    with pytest.raises(AssertionError, match=r"index \(0, [01]\)"):
        assert_rope_close(turned_by(exact_turn + np.spacing(np.float32(phi))), x, pos, precision=precision)


@pytest.mark.parametrize("layout, shape", [("bshd", (3, 5, 2, 8)), ("bhsd", (3, 2, 5, 8)), ("sbhd", (5, 3, 2, 8)),
                                           ("thd", (11, 2, 8))])
def test_layouts_give_each_token_its_position(layout, shape):
    packing = dict(cu_seqlens=np.array([0, 4, 4, 11])) if layout == "thd" else {}
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    y = rr.rotate(x, layout=layout, seqlen_offsets=[7, 0, 3], **packing)     # its positions: tests/test_layouts.py
    assert_rope_close(y, x, layout=layout, seqlen_offsets=[7, 0, 3], **packing)
    kernels = dict(seqlen_offsets=packing) | (dict(cu_seqlens=dict(cu_seqlens=[0, 11])) if packing else {})
    for ignored, kernel in kernels.items():                   # a ragged batch's kernel's usual bugs, named
        with pytest.raises(AssertionError) as info:
            assert_rope_close(rr.rotate(x, layout=layout, **kernel), x, layout=layout, seqlen_offsets=[7, 0, 3],
                              **packing)
        assert info.value.defects == [f"{ignored} ignored"], info.value.problems
    with pytest.raises(AssertionError, match="seqlen_offsets ignored"):    # one offset for all: named so, not "offset"
        assert_rope_close(rr.rotate(x, layout=layout, **packing), x, layout=layout, seqlen_offsets=7, **packing)


@pytest.mark.parametrize("pairing", ["half", "interleaved"])
@pytest.mark.parametrize("dtype", [BF16, F16, F32])
def test_a_random_angle_table_as_flash_attention_feeds_it(pairing, dtype):
    """flash-attention's tests: random angles, a cos/sin table in the kernel's dtype, float32 arithmetic, output in
    x's dtype, rows offset per sequence."""
    rng = np.random.default_rng(4)
    angle = rng.standard_normal((80, 32))
    cos, sin = np.cos(angle).astype(dtype), np.sin(angle).astype(dtype)
    x = rng.standard_normal((3, 40, 2, 128)).astype(dtype)
    rows = layout_positions(x.shape, "bshd", seqlen_offsets=[0, 5, 17]).astype(np.int64)
    y = rotate_table(x.astype(F32), cos.astype(F32), sin.astype(F32), rows=rows, pairing=pairing).astype(dtype)
    precision = Precision("float32", str(np.dtype(dtype)), "float32", str(np.dtype(dtype)))
    assert_rope_close(y, x, cos=cos, sin=sin, rows=rows, pairing=pairing, precision=precision)
    with pytest.raises(AssertionError):
        assert_rope_close(y, x, cos=cos, sin=-sin, rows=rows, pairing=pairing, precision=precision)


def test_rotate_table_is_rotate_with_the_exact_table():
    rng = np.random.default_rng(5)
    x, pos = rng.standard_normal((2, 9, 16)), rng.integers(0, 50, (2, 9))
    ang = np.multiply.outer(np.arange(50), rr.frequencies(12))
    for pairing in ("half", "interleaved"):
        np.testing.assert_allclose(rotate_table(x, np.cos(ang), np.sin(ang), rows=pos, pairing=pairing),
                                   rr.rotate_elementwise(x, pos, pairing=pairing, rotary_dim=12), atol=1e-12)


def test_angles_per_position_and_pair():
    rng = np.random.default_rng(6)
    x, pos = rng.standard_normal((7, 16)).astype(np.float32), np.arange(7.0) * 1000
    angles = np.multiply.outer(pos, rr.frequencies(16))
    assert_rope_close(rr.rotate(x, pos), x, angles=angles)
    with pytest.raises(AssertionError) as info:
        assert_rope_close(rr.rotate(x, pos + 1), x, angles=angles)
    assert info.value.defects == [] and "angle" in " ".join(info.value.problems)    # the catalogue is not tried


@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("precision, dtype, kernel, name", [
    *[(p, t, k, n) for p, t in PRECISION_DTYPES[:2] for k, n in [(dict(base=5e5), "another base"),
                                                                 (dict(pairing="half"), "pairing swapped")]],
    ("float32", F32, dict(base=5e5, rotary_dim=0.5), "different rotary_dim")])
def test_a_defect_is_named_when_the_slowest_pairs_turn_by_less_than_the_bound(d, precision, dtype, kernel, name):
    """Base 5e5 over 128 positions turns the slowest pairs at d = 64 and 128 by less than 2^-6 rad, in bfloat16 by less
    than the bound: the kernel fails and the defect is still named (rotary_dim: half the features, base 5e5 expected;
    measured only where the bound is finer than 2^-6)."""
    x = np.random.default_rng(d).standard_normal((128, d)).astype(dtype)
    kernel = {"pairing": "interleaved", **kernel, "rotary_dim": int(kernel.get("rotary_dim", 1) * d)}
    expected = dict(base=5e5) if "rotary_dim" in name else dict(rotary_dim=None)       # None: rotate's default
    with pytest.raises(RopeMismatch, match="bound") as info:
        assert_rope_close(model_kernel(x, np.arange(128.0), **kernel), x, precision=precision, **expected)
    assert info.value.defects == [name], info.value.problems


@pytest.mark.parametrize("d", [16, 64, 128])
def test_two_defects_the_output_cannot_tell_apart_are_both_given_and_neither_is_picked(d):
    """bfloat16, 128 positions: half the features rotated, or a base so large the second half barely turns, give
    outputs within the bound of each other; the diagnosis names both, as alternatives (the true one included, where
    its slowest pairs turn by less than the bound)."""
    x = np.random.default_rng(0).standard_normal((128, d)).astype(BF16)
    with pytest.raises(RopeMismatch) as info:
        assert_rope_close(rr.rotate(x, rotary_dim=d // 2), x, precision="bfloat16")
    assert sorted(info.value.defects) == ["another base", "different rotary_dim"] and "either" in str(info.value)


def test_an_unmeasured_base_is_not_reported_and_an_all_zero_x_warns_nothing():
    """A kernel on base 10^4 where 5e5 is expected, too few positions to measure the base at d = 64: no problem line
    reports a value it could not measure; an all-zero x (a 0/0 ratio in every pair) fails without a RuntimeWarning."""
    x = np.random.default_rng(0).standard_normal((128, 64)).astype(np.float32)
    with pytest.raises(RopeMismatch) as info:
        assert_rope_close(rr.rotate(x), x, base=5e5)
    assert not any("None" in line for line in info.value.problems), info.value.problems
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(RopeMismatch):
            assert_rope_close(np.ones(8), np.zeros(8))          # one vector: no seq axis
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)], [str(w.message) for w in caught]


@pytest.mark.parametrize("bad, name", [
    (dict(precision="float8"), "precision"), (dict(precision=3), "precision"), (dict(layout="bsdh"), "layout"),
    (dict(actual=np.zeros((3, 8))), "actual"), (dict(precision=Precision(table="int8")), "table"),
    (dict(rows=[0] * 4), "rows"), (dict(angles=np.zeros((4, 4)), positions=np.arange(4)), "positions"),
    (dict(angles=np.zeros((4, 4)), seqlen_offsets=2), "seqlen_offsets"),
    (dict(angles=np.zeros((4, 4)), sin=np.zeros((4, 4))), "sin"), (dict(x=np.full((4, 8), np.nan)), r"^x\b"),
    (dict(cos=np.ones((9, 4)), sin=np.ones((9, 4)), rows=[0] * 4, positions=[1] * 4), "positions"),
    (dict(cos=np.ones((4, 4)), sin=np.ones((4, 4)), base=5.0), "base"),
    (dict(positions=[0, np.nan, 1, 2], config=dict(model_type="llama", head_dim=8, hidden_size=16,
                                                   num_attention_heads=2)), "positions"),
    (dict(offset=3), r"assert_rope_close\(\).*offset")])
def test_bad_arguments_are_named(bad, name):
    kwargs = dict(actual=np.zeros((4, 8), np.float32), x=np.zeros((4, 8), np.float32)) | bad
    with pytest.raises((TypeError, ValueError), match=name):
        assert_rope_close(kwargs.pop("actual"), kwargs.pop("x"), **kwargs)


def test_torch_tensors_in_any_float_dtype_with_grad():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    x = rng.standard_normal((6, 16)).astype(np.float32)
    for dtype, precision in ((torch.float32, "float32"), (torch.bfloat16, "bfloat16"), (torch.float16, "float16")):
        xt = torch.tensor(x).to(dtype).requires_grad_()
        xn = xt.detach().float().numpy().astype({"bfloat16": BF16, "float16": F16, "float32": F32}[precision])
        yt = torch.tensor(model_kernel(xn, np.arange(6.0), table=xn.dtype, compute=xn.dtype).astype(np.float32))
        assert_rope_close(yt.to(dtype), xt, np.arange(6), precision=precision, pairing="half")
        assert rotate_table(xt, np.ones((6, 8)), np.zeros((6, 8))).dtype == dtype      # a tensor of x's dtype


def test_a_1d_config_beside_multi_axis_inv_freq_gives_its_attention_factor_to_the_diagnosis():
    x, F = np.random.default_rng(0).standard_normal((16, 8)), np.eye(2)[[0, 0, 1, 1]] * rr.frequencies(8)[:, None]
    pos = np.stack([np.arange(16), np.arange(16) % 4])
    config = rr.RopeConfig(None, 8, 8, "half", 1e4, "default", attention_factor=1.5)       # 1-D, cos/sin times 1.5
    with pytest.raises(RopeMismatch) as info:
        assert_rope_close(rr.rotate(x, pos, inv_freq=F, pairing="half"), x, pos, config=config, inv_freq=F)
    assert info.value.defects == ["attention factor missing"]


def test_a_float32_kernel_missing_its_scaling_is_named_alone():       # its angles' rounding: 4 times the expected
    rng = np.random.default_rng(3)
    x, pos = rng.uniform(-1, 1, (64, 8, 128)).astype(np.float32), rng.integers(0, 512, (64, 1))
    config = rr.RopeConfig(None, 128, 128, "interleaved", 1e4, "linear", params={"factor": 4.0})
    with pytest.raises(RopeMismatch) as info:
        assert_rope_close(model_kernel(x, pos, pairing="interleaved"), x, pos, config=config)
    assert info.value.defects == ["scaling missing"], info.value.problems
