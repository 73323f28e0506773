"""identify / assert_rope_matches: what fn may return, config= objects, and a catalogue of bad inputs."""

import dataclasses

import ml_dtypes
import numpy as np
import pytest

import rope_ref as rr
from kernels import neox
from rope_ref import RopeSpec, assert_rope_matches, identify, scaled_inv_freq

D = 16


# ---- any array back ------------------------------------------------------------------------------

class FakeTensor:
    """Just enough of torch.Tensor's surface: a bfloat16 or grad-requiring tensor has no direct .numpy()."""

    def __init__(self, data, dtype="float32", requires_grad=False, device="cuda:0"):
        self.data, self.dtype, self.requires_grad, self.device = np.asarray(data), dtype, requires_grad, device

    def detach(self):
        return FakeTensor(self.data, self.dtype, False, self.device)

    def cpu(self):
        return FakeTensor(self.data, self.dtype, self.requires_grad, "cpu")

    def float(self):
        return FakeTensor(self.data.astype(np.float32), "float32", self.requires_grad, self.device)

    def numpy(self):
        if self.requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        if self.device != "cpu":
            raise TypeError("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() first.")
        if self.dtype == "bfloat16":
            raise TypeError("Got unsupported ScalarType BFloat16")
        return self.data.astype(self.dtype)


@pytest.mark.parametrize("wrap", [
    lambda y: FakeTensor(y, "float32", requires_grad=True),
    lambda y: FakeTensor(y.astype(ml_dtypes.bfloat16).astype(np.float32), "bfloat16"),
    lambda y: FakeTensor(y, "float64"),
    lambda y: y.astype(ml_dtypes.bfloat16),
    lambda y: y.astype(np.float16),
    lambda y: y.tolist(),
], ids=["grad", "torch_bf16", "torch_f64", "ml_dtypes_bf16", "float16", "list"])
def test_any_array_back(wrap):
    s = identify(lambda x: wrap(neox(x, 3)), D)
    assert (s.is_rope, s.pairing, s.offset) == (True, "half", 3)


def test_float64_tensor_keeps_its_precision():
    s = identify(lambda x: FakeTensor(neox(x, 3), "float64"), D)
    assert s.angle_precision == "float64"        # converted without a detour through float32


@pytest.mark.parametrize("back,words", [
    (lambda y: np.full(y.shape, "a"), "dtype <U1"),
    (lambda y: y.astype(complex), "complex128"),
    (lambda y: None, "NoneType"),
    (lambda y: {"a": 1}, "dict"),
])
def test_unconvertible_output_is_a_type_error(back, words):
    with pytest.raises(TypeError, match="fn must return") as info:
        identify(lambda x: back(neox(x)), D)
    assert words in str(info.value)


def test_real_torch_tensors():
    torch = pytest.importorskip("torch")

    def kernel(x, dtype):
        y = torch.tensor(neox(x, 5), dtype=dtype, requires_grad=True) * 1.0
        return y
    for dtype in (torch.float32, torch.bfloat16, torch.float64):
        s = identify(lambda x: kernel(x, dtype), D)
        assert s.is_rope and s.pairing == "half", dtype
    assert identify(lambda x: kernel(x, torch.float32), D).offset == 5


# ---- config= ---------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class StandIn:
    """The attributes of rope_ref's RopeConfig (a stand-in, to test the duck typing)."""
    head_dim: int
    rotary_dim: int
    pairing: str
    base: float
    rope_type: str
    params: dict
    attention_factor: float
    model_type: str = "test"


YARN = dict(factor=8.0, original_max_position_embeddings=4096)


def yarn_config(**changes):
    att = scaled_inv_freq(D, 10000.0, rope_type="yarn", **YARN)[1]
    return dataclasses.replace(StandIn(D, D, "half", 10000.0, "yarn", YARN, att), **changes)


def yarn_kernel(x, offset=0, scale=True):
    freqs, att = scaled_inv_freq(D, 10000.0, rope_type="yarn", **YARN)
    return neox(x, offset, freqs, att if scale else 1.0)


def test_config_matching_kernel_passes_and_d_comes_from_it():
    spec = assert_rope_matches(yarn_kernel, config=yarn_config())
    assert spec.rope_type == "yarn" and spec.rotary_dim == D


def test_config_names_every_difference():
    with pytest.raises(AssertionError) as info:
        assert_rope_matches(lambda x: yarn_kernel(x, offset=3, scale=False), config=yarn_config(pairing="interleaved"),
                            offset=0)
    msg = str(info.value)
    for w in ["pairing: expected interleaved, found half", "offset: expected row 0 at position 0, found 3",
              "norm_scale", "attention factor not applied"]:
        assert w in msg, msg


def test_explicit_keywords_override_config():
    assert_rope_matches(yarn_kernel, config=yarn_config(pairing="interleaved"), pairing="half")
    plain = StandIn(D, D, "half", 10000.0, "default", {}, 1.0)
    with pytest.raises(AssertionError, match="base left at 10"):
        assert_rope_matches(neox, config=plain, base=500000.0)


def test_config_attention_factor_is_expected_as_norm_scale():
    halved = StandIn(D, D, "half", 10000.0, "default", {}, 0.5)
    assert_rope_matches(lambda x: neox(x, scale=0.5), config=halved)
    with pytest.raises(AssertionError, match="norm_scale: expected 0.5, found 1"):
        assert_rope_matches(neox, config=halved)


def test_config_without_the_attributes_is_a_type_error():
    class Partial:
        head_dim = D
    with pytest.raises(TypeError, match="config") as info:
        assert_rope_matches(neox, config=Partial())
    assert "rotary_dim" in str(info.value) and "Partial" in str(info.value)


def test_a_config_dict_is_read_as_from_hf_config_reads_it():
    # issue 21: the config.json dict itself was refused ("config must be a RopeConfig")
    with pytest.raises(ValueError, match="model_type"):       # from_hf_config's own refusal, unchanged
        assert_rope_matches(neox, config={"head_dim": D})


# ---- bad inputs ------------------------------------------------------------------------------------

def nan_kernel(x):
    y = neox(x)
    y[1, 2] = np.nan
    return y


def boom(x):
    raise KeyError("cache slot 7")


IDENTIFY_BAD = [
    (dict(fn=5), TypeError, "fn must be callable"),
    (dict(fn=None), TypeError, "fn must be callable"),
    (dict(d=7), ValueError, "d"),
    (dict(d="16"), TypeError, "d"),
    (dict(seq="64"), TypeError, "seq"),
    (dict(seq=2), ValueError, "seq"),
    (dict(seed=-1), ValueError, "seed"),
    (dict(seed="a"), TypeError, "seed"),
    (dict(base_hint=0), ValueError, "base_hint"),
    (dict(base_hint=-1.0), ValueError, "base_hint"),
    (dict(base_hint=float("nan")), ValueError, "base_hint"),
    (dict(base_hint="10000"), TypeError, "base_hint"),
    (dict(fn=nan_kernel), ValueError, "fn returned non-finite values"),
    (dict(fn=lambda x: neox(x) * np.inf), ValueError, "fn returned non-finite values"),
    (dict(fn=lambda x: x[:, :4]), ValueError, "same shape"),
]


@pytest.mark.parametrize("kw,err,words", IDENTIFY_BAD)
def test_identify_bad_inputs(kw, err, words):
    args = dict(fn=neox, d=D) | kw
    fn, d = args.pop("fn"), args.pop("d")
    with pytest.raises(err) as info:
        identify(fn, d, **args)
    assert words in str(info.value)


ASSERT_BAD = [
    (dict(pairng="half"), TypeError, "'pairng' (did you mean 'pairing'?)"),
    (dict(bse=1e4), TypeError, "'bse' (did you mean 'base'?)"),
    (dict(offset="0"), TypeError, "offset"),
    (dict(offset=True), TypeError, "offset"),
    (dict(offset=float("nan")), ValueError, "offset must be finite"),      # _validate.check_scalar
    (dict(norm_scale=-1.0), ValueError, "norm_scale"),
    (dict(base=0), ValueError, "base"),
    (dict(pairing="halff"), ValueError, "did you mean 'half'"),
    (dict(rope_type="lama3"), ValueError, "did you mean 'llama3'"),
    (dict(rotary_dim=3), ValueError, "rotary_dim"),
    (dict(phase_atol=-1.0), ValueError, "phase_atol"),
    (dict(d=None), TypeError, "d"),
    (dict(config=object()), TypeError, "config"),
]


@pytest.mark.parametrize("kw,err,words", ASSERT_BAD)
def test_assert_rope_matches_bad_inputs(kw, err, words):
    args = dict(d=D) | kw
    d = args.pop("d")
    with pytest.raises(err) as info:
        assert_rope_matches(neox, d, **args)
    assert words in str(info.value)


def test_fn_that_raises_is_reraised_with_the_call_named():
    with pytest.raises(KeyError, match="cache slot 7") as info:
        identify(boom, D)
    assert any("raised by fn when rope_ref.identify called it with random input a" in n
               for n in info.value.__notes__)


def test_bare_spec_prints():
    assert str(RopeSpec(is_rope=True)).startswith("pairing=None rotary_dim=None base=None offset=None")
    assert str(RopeSpec(is_rope=False, reason="x")) == "not a rotary embedding: x"


def test_fn_that_writes_into_its_input_does_not_disturb_identify():
    def vandal(x):
        y = neox(x, 2)
        x *= 7.0                      # a kernel working in place on its argument
        return y
    s = identify(vandal, D)
    assert (s.is_rope, s.offset, s.rope_type) == (True, 2, "default")


# ---- sizes are checked before anything is allocated or fn is called (issue 22) -------------------------

def test_sizes_are_refused_before_fn_is_called():
    calls = []
    fn = lambda x: calls.append(1) or neox(x)            # noqa: E731
    with pytest.raises(ValueError, match=r"seq=1000000 and d=16 need seq x d x d float64 .*: 1\.907 GiB, "
                                         r"above max_bytes=1073741824 \(1 GiB\); pass a smaller seq"):
        identify(fn, D, seq=10**6, max_rows=10**6)
    with pytest.raises(ValueError, match=r"max_rows=100000000 and d=16 need max_rows x d float64 for one call"):
        identify(fn, D, max_rows=10**8)
    with pytest.raises(ValueError, match="max_bytes"):
        assert_rope_matches(fn, D, seq=4096, max_bytes=10**6)
    assert calls == []
    with pytest.raises(ValueError, match="max_bytes must be a positive integer"):
        identify(fn, D, max_bytes=0)
    assert identify(neox, D, seq=8, max_rows=64, max_bytes=8 * 8 * D * D).is_rope     # exactly at the limit


@pytest.mark.parametrize("rope_type", [t for t in rr.ROPE_TYPES if rr.scaling.SCALING_METHODS[t].required])
def test_every_key_of_the_scaling_schema_is_an_expectation(rope_type):
    # identify reads scaling's one schema: each alternative of a required key is accepted by name (a kernel that
    # is not that method then fails on its frequencies or a missing key, never on an unknown keyword)
    for alts in rr.scaling.SCALING_METHODS[rope_type].required:
        for key in alts:
            with pytest.raises((AssertionError, ValueError, TypeError)) as info:
                rr.assert_rope_matches(lambda x: neox(x), 16, rope_type=rope_type, **{key: 2})
            assert "unexpected keyword" not in str(info.value)
