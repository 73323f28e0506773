"""No function modifies its input or returns a view of it, in every accepted dtype, or lets a warning escape; the
forms keep the dtype."""

import ml_dtypes
import numpy as np
import pytest

import rope_ref as rr

pytestmark = pytest.mark.filterwarnings("error")

DTYPES = [np.float16, np.float32, np.float64, ml_dtypes.bfloat16, np.int64]


def _cases(dt, positions):
    """(name, function, inputs): position 0 and passthrough tempt returning x; 0, 1, 2 show an in-place update."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((2, 3, 8)) * 4).astype(dt)
    x1 = (rng.standard_normal(8) * 4).astype(dt)
    pos0 = (np.zeros(3) if positions == "zeros" else np.arange(3)).astype(np.int64 if dt == np.int64 else np.float64)
    w2 = (rng.standard_normal((4, 5)) * 4).astype(dt)      # n_heads=2, head_dim=2: reshape would be a view
    return [
        ("rotate", lambda x, p: rr.rotate(x, p), (x, pos0)),
        ("rotate rotary_dim", lambda x, p: rr.rotate(x, p, rotary_dim=2, pairing="half"), (x, pos0)),
        ("rotate inv_freq", lambda x, f: rr.rotate(x, inv_freq=f), (x, np.zeros(4))),
        ("rotate 1-d at 0", lambda x: rr.rotate(x), (x1,)),
        ("rotate_elementwise", lambda x, p: rr.rotate_elementwise(x, p, rotary_dim=4), (x, pos0)),
        ("rotate thd", lambda x, cu: rr.rotate(x, layout="thd", cu_seqlens=cu), (x, np.array([0, 2]))),
        ("rotate_qkv", lambda x: rr.rotate_qkv(x, num_heads_q=2, head_dim=2), (x,)),
        ("rotate_dense", lambda x, p: rr.rotate_dense(x, p), (x, pos0)),
        ("rotate_table", lambda x: rr.testing.rotate_table(x, np.ones((3, 4)), np.zeros((3, 4))), (x,)),
        ("rotate_complex", lambda x, p: rr.rotate_complex(x, p), (x, pos0)),
        ("rotate_half", lambda x: rr.rotate_half(x), (x,)),
        ("rotate_half half", lambda x: rr.rotate_half(x, "half"), (x,)),
        ("to_half", rr.to_half, (x,)),
        ("to_interleaved", rr.to_interleaved, (x,)),
        ("to_half d=2", rr.to_half, (x[..., :2].copy(),)),
        ("permute_qk_weights head_dim 2", lambda w: rr.permute_qk_weights(w, 2), (w2,)),
        ("permute_qk_weights one head", lambda w: rr.permute_qk_weights(w, 1), (w2[:2].copy(),)),
        ("rotation_angles", rr.rotation_angles, (pos0, np.ones(1))),
        ("rotation_matrix", lambda p: rr.rotation_matrix(p, 4), (pos0,)),
        ("sinusoidal", lambda p: rr.sinusoidal(p, 4), (pos0,)),
        ("partial_sums", lambda p, f: rr.partial_sums(p, 2, inv_freq=f), (pos0, np.ones(1))),
        ("decay_bound", lambda p: rr.decay_bound(p, 4), (pos0,)),
        ("wrap_angle", rr.wrap_angle, (pos0,)),
        ("elu_plus_one", rr.elu_plus_one, (x,)),
        ("attention", lambda q, k, v: rr.attention(q, k, v, causal=True), (x, x.copy(), x.copy())),
        ("attention one key", lambda q, k, v: rr.attention(q, k, v), (x[:, :1], x[:, :1].copy(), x[:, :1].copy())),
        ("attention_dense", lambda q, k, v: rr.attention_dense(q, k, v, [0, 1, 2], [0, 1, 2]), (x, x.copy(), x.copy())),
        ("linear_attention", lambda q, k, v: rr.linear_attention(q, k, v), (x, x.copy(), x.copy())),
        ("linear_attention_dense", lambda q, k, v: rr.linear_attention_dense(q, k, v), (x, x.copy(), x.copy())),
    ]


CASE_NAMES = [c[0] for c in _cases(np.float64, "zeros")]


@pytest.mark.parametrize("positions", ["zeros", "arange"])
@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("case", CASE_NAMES)
def test_inputs_unchanged_and_result_is_not_a_view(case, dt, positions):
    name, fn, inputs = next(c for c in _cases(dt, positions) if c[0] == case)
    before = [a.copy() for a in inputs]
    result = fn(*inputs)
    for a, b in zip(inputs, before):
        np.testing.assert_array_equal(a, b)                      # not modified ...
        assert not np.shares_memory(result, a), f"{name} returned a view of its input"  # ... and not aliased
    if name.split()[0] in ("rotate", "rotate_elementwise", "rotate_dense", "rotate_complex", "rotate_table", "to_half"):
        assert result.dtype == (np.float64 if dt == np.int64 else dt)       # the dtype kept, integers promoted
        assert np.all(np.isfinite(result.astype(np.float64)))
