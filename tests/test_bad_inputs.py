"""Bad inputs to every public function of rope_ref.forms, .layouts, .rope_attention, .testing, .kernel_check: the
right exception type, and a message that names the argument (never its wording); no RuntimeWarning escapes."""

import re

import ml_dtypes
import numpy as np
import pytest

import rope_ref as rr
from rope_ref.testing import assert_rope_close, rotate_table

pytestmark = pytest.mark.filterwarnings("error")

X, V, F3, Q = np.zeros((2, 5, 8)), np.zeros((2, 5, 3)), np.ones((4, 3)), np.ones((5, 4))
X7, A7 = np.zeros((7, 16)), np.zeros((7, 8))              # x and its angles (seq, r/2)
X4, X3, CU = np.zeros((3, 5, 2, 8)), np.zeros((11, 2, 8)), [0, 4, 4, 11]      # layouts "bshd" and "thd"

CATALOGUE = [  # (call, exception, the argument the message names)
    (lambda: rr.frequencies("128"), TypeError, "d"),
    (lambda: rr.frequencies(128, 5e-324), ValueError, "base"),
    (lambda: rr.frequencies(2**64), ValueError, "d"),                 # numpy's arange of 2**63 floats: empty
    (lambda: rr.rotation_angles(None, [1.0]), TypeError, "positions"),
    (lambda: rr.rotation_angles([1.0], [[[1.0]]]), ValueError, "freqs"),
    (lambda: rr.rotation_angles([1.0, 2.0, 3.0], [[1.0, 2.0]]), ValueError, "positions"),
    (lambda: rr.rotation_angles([1e300], [1e10]), ValueError, "positions"),
    (lambda: rr.rotation_matrix(1.0, 5), ValueError, "d"),
    (lambda: rr.rotation_matrix(1.0, 4, pairing="neox"), ValueError, "pairing"),
    (lambda: rr.rotation_matrix(np.zeros((2, 5)), 8, inv_freq=F3), ValueError, "positions"),
    (lambda: rr.rotate(X.astype(np.longdouble)), TypeError, "x"),
    (lambda: rr.rotate([[1.0, 2.0], [3.0]]), TypeError, "x"),
    (lambda: rr.rotate(np.zeros(())), ValueError, "x"),
    (lambda: rr.rotate(X, pairing=np.array(["half"])), TypeError, "pairing"),
    (lambda: rr.rotate(X, rotary_dim=4.0), TypeError, "rotary_dim"),
    (lambda: rr.rotate(X, rotary_dim=10), ValueError, "rotary_dim"),
    (lambda: rr.rotate(X, inv_freq=[1.0, np.nan, 1.0, 1.0]), ValueError, "inv_freq"),
    (lambda: rr.rotate(X, inv_freq=[1.0, 1.0]), ValueError, "inv_freq"),
    (lambda: rr.rotate(X, np.zeros((5, 2))), ValueError, "positions"),
    (lambda: rr.rotate(X, np.full(5, 1e300), inv_freq=np.full(4, 1e10)), ValueError, "positions"),
    (lambda: rr.rotate(np.full((1, 2), 60000, np.float16), [0.7]), ValueError, "x"),
    (lambda: rr.rotate(X, base=[2.0]), TypeError, "base"),
    (lambda: rr.rotate(X, base=10 ** 400), ValueError, "base"),
    (lambda: rr.rotate(bytearray(b"\x00\x01\x02\x03")), TypeError, "x"),
    (lambda: rr.rotate(X, memoryview(b"\x00\x01\x02\x03\x04")), TypeError, "positions"),
    (lambda: rr.rotate(np.ma.masked_array(X, mask=True)), TypeError, "x"),
    (lambda: rr.rotate(X, 2 ** 70), TypeError, "positions"),
    (lambda: rr.rotate(X[0], inv_freq=F3), ValueError, "positions"),       # 3 axes need positions (3, ..., seq)
    (lambda: rr.rotate(X[0], np.zeros((3, 5)), inv_freq=np.ones((3, 3))), ValueError, "inv_freq"),
    (lambda: rr.rotate(X7, angles=np.zeros((4, 8))), ValueError, "angles"),
    (lambda: rr.rotate(X7, angles=np.zeros((7, 9))), ValueError, "angles"),
    (lambda: rr.rotate(X7, angles=5.0), ValueError, "angles"),
    (lambda: rr.rotate(X7, angles=A7 + np.nan), ValueError, "angles"),
    (lambda: rr.rotate(X7, angles=A7, rotary_dim=8), TypeError, "angles"),
    (lambda: rr.rotate(X7, angles=A7, rotary_dim=np.array([16, 16])), TypeError, "rotary_dim"),
    (lambda: rr.rotate(X7, np.arange(7), angles=A7), TypeError, "angles"),
    (lambda: rr.rotate(X4, layout="bsdh"), ValueError, "layout"),
    (lambda: rr.rotate(X4, layout=4), TypeError, "layout"),
    (lambda: rr.rotate(X3, layout="bshd"), ValueError, "layout"),
    (lambda: rr.rotate(X4, [0], layout="bshd"), TypeError, "layout"),
    (lambda: rr.rotate(X3, layout="thd"), TypeError, "cu_seqlens"),
    (lambda: rr.rotate(X4, layout="bshd", cu_seqlens=CU), TypeError, "cu_seqlens"),
    (lambda: rr.rotate(X3, layout="thd", cu_seqlens=[0, 5, 4, 11]), ValueError, "cu_seqlens"),
    (lambda: rr.rotate(X3, layout="thd", cu_seqlens=[0, 5.5, 11]), ValueError, "cu_seqlens"),
    (lambda: rr.layout_positions((2**63 - 1, 2, 8), "thd", cu_seqlens=[0, 2**63 - 1]), ValueError, "cu_seqlens"),
    (lambda: rr.rotate(X3, layout="thd", cu_seqlens=CU, seqlen_offsets=[1, 2]), ValueError, "seqlen_offsets"),
    (lambda: rr.rotate_elementwise(X4, layout="bshd", seqlen_offsets=[0, np.nan, 1]), ValueError, "seqlen_offsets"),
    (lambda: rr.rotate_elementwise(X3, seqlen_offsets=3), TypeError, "seqlen_offsets"),
    (lambda: rr.testing.layout_positions((5, 2, 4), "thd", cu_seqlens=np.array([0, 3, 2, 5], np.uint32)), ValueError,
     "cu_seqlens"),                                          # unsigned: np.diff wraps
    (lambda: rr.layout_positions((1, 3, 2, 8), "bshd", seqlen_offsets=np.array([2 ** 63 - 2])), ValueError,
     "seqlen_offsets"),                                      # the last position would wrap past int64
    (lambda: rr.layout_positions((3, 5.0, 2, 8), "bshd"), TypeError, "shape"),         # x.shape's integers only
    (lambda: rr.layout_positions(np.array(4), "bshd"), TypeError, "shape"),
    (lambda: rr.rotate_qkv(np.zeros((2, 5, 4, 2, 8))), ValueError, "qkv"),
    (lambda: rr.rotate_qkv(np.ones((4, 3, 2, 8)), np.arange(5)), ValueError, "qkv"),     # its token axes, not x's
    (lambda: rr.rotate_qkv(np.zeros((4, 16)), head_dim=8, layout="thd", cu_seqlens=[0, 4]), TypeError, "cu_seqlens"),
    (lambda: rr.rotate_qkv(np.zeros((2, 5, 6, 8)), num_heads_q=5), ValueError, "num_heads_q"),
    (lambda: rr.rotate_qkv(np.zeros((2, 5, 6, 8)), num_heads_q=6), ValueError, "num_heads_q"),      # no k or v left
    (lambda: rr.rotate_qkv(np.zeros((5, 48)), head_dim=3), ValueError, "head_dim"),
    (lambda: rr.rotate_qkv(np.zeros((5, 48)), head_dim=10), ValueError, "head_dim"),
    (lambda: assert_rope_close(X4, X4), ValueError, "layout"),            # (b, s, h, d) or (b, h, s, d): ambiguous
    (lambda: assert_rope_close(X, X, head_dim="4"), TypeError, "head_dim"),
    (lambda: assert_rope_close(X, X, head_dim=3), ValueError, "head_dim"),
    (lambda: assert_rope_close(X, X, cos=np.ones((9, 4)), sin=np.zeros((9, 3))), ValueError, "sin"),
    (lambda: assert_rope_close(X, X, cos=np.ones((9, 5)), sin=np.zeros((9, 5))), ValueError, "cos"),    # r > d
    (lambda: rotate_table(X, np.ones((9, 4)), np.zeros((9, 4)), rows=[0, 1, 2, 3, -1]), ValueError, "rows"),
    (lambda: rr.assert_rope_matches(lambda x: x), TypeError, "d"),
    (lambda: rr.assert_rope_grad_matches(None, 8), TypeError, "vjp"),
    (lambda: rr.kernel_check.Model("sideways", 8), ValueError, "pairing"),
    (lambda: rr.kernel_check.Model("half", 8).rotate(np.ones((2, 4)), [0, 1]), ValueError, "x"),
    (lambda: rr.kernel_check.diagnose({}, None), TypeError, "model"),
    (lambda: rr.kernel_check.expected_model(None, None), TypeError, "expected"),
    (lambda: rr.rotate_elementwise(X, [1j] * 5), TypeError, "positions"),
    (lambda: rr.rotate_elementwise(X, base=-1.0, inv_freq=np.ones(4)), ValueError, "base"),
    (lambda: rr.rotate_elementwise(X[0], np.zeros((2, 5)), inv_freq=F3), ValueError, "positions"),
    (lambda: rr.rotate_dense(X, np.full(4, 1.0)), ValueError, "positions"),
    (lambda: rr.rotate_dense(np.zeros((3, 3))), ValueError, "x"),
    (lambda: rr.rotate_complex(X.astype(object)), TypeError, "x"),
    (lambda: rr.rotate_elementwise(X.astype(bool), np.zeros((3, 1))), TypeError, "x"),
    (lambda: rr.rotate(X, np.zeros((2, 5)) + [0, 0, np.inf, 0, 0]), ValueError, "positions"),
    (lambda: rr.rotate_half(np.zeros(3)), ValueError, "x"),
    (lambda: rr.rotate_half(X, "odd"), ValueError, "pairing"),
    (lambda: rr.to_half(np.zeros(5)), ValueError, "x"),
    (lambda: rr.to_interleaved(np.zeros((2, 7))), ValueError, "x"),
    (lambda: rr.permute_qk_weights(np.zeros((8, 3)), 0), ValueError, "n_heads"),
    (lambda: rr.permute_qk_weights(np.zeros((6, 3)), 2), ValueError, "w"),
    (lambda: rr.permute_qk_weights(np.zeros((8, 3), complex), 2), TypeError, "w"),
    (lambda: rr.sinusoidal([np.nan], 4), ValueError, "positions"),
    (lambda: rr.sinusoidal([1.0], 4.0), TypeError, "d"),
    (lambda: rr.sinusoidal_shift_matrix([1.0, 2.0], 4), ValueError, "k"),
    (lambda: rr.partial_sums(None, 8), TypeError, "distance"),
    (lambda: rr.partial_sums(1.0, 8, inv_freq=np.ones((4, 2))), ValueError, "inv_freq"),
    (lambda: rr.partial_sums(1e300, 8, inv_freq=[1e10] * 4), ValueError, "distance"),
    (lambda: rr.decay_bound([np.inf]), ValueError, "distance"),
    (lambda: rr.decay_bound(1.0, base="1e4", inv_freq=np.ones(64)), TypeError, "base"),
    (lambda: rr.wrap_angle("a"), TypeError, "a"), (lambda: rr.wrap_angle([np.nan]), ValueError, "a"),
    (lambda: rr.attention(X, X, V + np.inf), ValueError, "v"),
    (lambda: rr.attention_dense(X, X, V, np.arange(4), np.arange(5)), ValueError, "q_positions"),
    (lambda: rr.linear_attention_dense(X, X, V, causal=np.bool_), TypeError, "causal"),
    (lambda: rr.attention(Q, Q[:, :2], Q), ValueError, "k"),
    (lambda: rr.attention(Q, Q, Q[:3]), ValueError, "v"),
    (lambda: rr.attention(Q, Q, Q.astype(complex)), TypeError, "v"),
    (lambda: rr.attention(Q, Q, Q, pairing="halves"), ValueError, "pairing"),
    (lambda: rr.attention(Q, Q, Q, q_positions=[0, 1, 2, 3, 4], k_positions=np.arange(5) + 9, causal=True),
     ValueError, "k_positions"),
    (lambda: rr.attention_dense(Q + 1e200, Q + 1e200, Q, np.arange(5), np.arange(5)), ValueError, "q"),
    (lambda: rr.linear_attention(Q, Q[:3], Q[:3]), ValueError, "q"),
    (lambda: rr.linear_attention(np.array([[1e300, -1e300]]), np.array([[-1e300, 1e300]]), np.ones((1, 1))),
     ValueError, "q"),
    (lambda: rr.linear_attention_dense(Q - 800, Q, Q), ValueError, "q"),
    (lambda: rr.softmax([-np.inf, -np.inf]), ValueError, "scores"),
    (lambda: rr.softmax([1.0], scale=-1.0), ValueError, "scale"),
    (lambda: rr.softmax([1.0], scale="2"), TypeError, "scale"),
    (lambda: rr.softmax([1.0], axis="1"), TypeError, "axis"),
]


@pytest.mark.parametrize("call,exc,name", CATALOGUE)
def test_bad_input_raises_naming_the_argument(call, exc, name):
    with pytest.raises(exc) as info:
        call()
    assert re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", str(info.value)), f"{name!r} not named: {info.value}"


@pytest.mark.parametrize("call", [lambda: rr.rotate(X, base=1), lambda: rr.frequencies(8, 1.0),
                                  lambda: rr.decay_bound(3.0, 8, 1)])
def test_base_1_warns_naming_base(call):
    with pytest.warns(UserWarning, match="base"):
        call()


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_torch_in_torch_out(dtype):
    """Issue 40: a torch tensor (any float dtype, requires_grad) comes back as a tensor of its dtype and device."""
    torch = pytest.importorskip("torch")
    t = torch.randn(3, 5, 8, generator=torch.Generator().manual_seed(0)).to(getattr(torch, dtype)).requires_grad_()
    before = t.detach().clone()
    x = t.detach().float().numpy().astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)
    for form in (rr.rotate, rr.rotate_elementwise, rr.rotate_complex, rr.rotate_dense,
                 rr.from_hf_config({"model_type": "llama", "head_dim": 8}).rotate):
        y = form(t, torch.arange(5) + 3)
        assert isinstance(y, torch.Tensor) and (y.dtype, y.device) == (t.dtype, t.device) and not y.requires_grad
        np.testing.assert_array_equal(y.float().numpy(), form(x, np.arange(5) + 3).astype(np.float32))
        assert torch.equal(t.detach(), before)
    assert all(type(f(t)) is type(t) and f(t).dtype == t.dtype for f in (rr.rotate_half, rr.to_half, rr.to_interleaved))
    assert pytest.raises(TypeError, rr.rotate, t.detach().to(torch.float8_e4m3fn)).value.args[0].startswith("x ")
    with pytest.warns(rr.RopeRefPrecisionWarning, match="2\\^34"):    # float positions past 2^53 read from a tensor
        rr.rotate(t, torch.full((5,), 2.0 ** 60, dtype=None if dtype == "float16" else t.dtype).requires_grad_())
