"""A catalogue of bad inputs for every public function of rope_ref.forms and rope_ref.rope_attention.

Each entry asserts the exception type and that the message names the argument (and, where it
matters, what was given and what is expected).  Property-based tests draw shapes, dtypes and
positions with hypothesis.
"""

import sys
import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rope_ref as rr
from rope_ref import checks

# A NumPy RuntimeWarning (or any other) escaping a call is itself a contract violation.
pytestmark = pytest.mark.filterwarnings("error")

X = np.zeros((2, 5, 8))
V = np.zeros((2, 5, 3))
DTYPES_LISTED = ["float16", "float32", "float64", "bfloat16", "integers"]

LLAMA = rr.from_hf_config({"model_type": "llama", "hidden_size": 256, "num_attention_heads": 4})
YARN_HUGE = rr.from_hf_config({"model_type": "llama", "hidden_size": 256, "num_attention_heads": 4,
                               "max_position_embeddings": 4096,
                               "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "attention_factor": 1e308}})

CATALOGUE = [
    # --- frequencies ---
    ("frequencies", lambda: rr.frequencies("128"), TypeError, ["d", "'128'", "positive even integer"]),
    ("frequencies", lambda: rr.frequencies(True), TypeError, ["d", "True"]),
    ("frequencies", lambda: rr.frequencies(130, base=None), TypeError, ["base", "None", "positive finite"]),
    ("frequencies", lambda: rr.frequencies(128, 5e-324), ValueError, ["base", "5e-324", "overflow"]),
    ("frequencies", lambda: rr.frequencies(128, bse=10.0), TypeError, ["'bse'", "did you mean 'base'"]),
    # --- rotation_angles ---
    ("rotation_angles", lambda: rr.rotation_angles(None, [1.0]), TypeError, ["positions", "None", "float64"]),
    ("rotation_angles", lambda: rr.rotation_angles([np.nan], [1.0]), ValueError, ["positions", "finite", "NaN"]),
    ("rotation_angles", lambda: rr.rotation_angles([1 + 2j], [1.0]), TypeError, ["positions", "complex", "imaginary"]),
    ("rotation_angles", lambda: rr.rotation_angles([1.0], [[[1.0]]]), ValueError, ["freqs", "1-D", "2-D", "(1, 1, 1)"]),
    ("rotation_angles", lambda: rr.rotation_angles([1.0, 2.0, 3.0], [[1.0, 2.0]]), ValueError, ["positions", "(2, ..., seq)", "(3,)", "freqs.shape[1] = 2"]),
    ("rotation_angles", lambda: rr.rotation_angles([1.0], [np.inf]), ValueError, ["freqs", "finite"]),
    ("rotation_angles", lambda: rr.rotation_angles([1e300], [1e10]), ValueError, ["positions", "overflow", "1e+300"]),
    ("rotation_angles", lambda: rr.rotation_angles([True], [1.0]), TypeError, ["positions", "bool"]),
    # --- rotation_matrix ---
    ("rotation_matrix", lambda: rr.rotation_matrix(None, 4), TypeError, ["positions", "None"]),
    ("rotation_matrix", lambda: rr.rotation_matrix([np.inf], 4), ValueError, ["positions", "finite"]),
    ("rotation_matrix", lambda: rr.rotation_matrix(1.0, 5), ValueError, ["d", "even", "5"]),
    ("rotation_matrix", lambda: rr.rotation_matrix(1.0, 4, base=-2.0), ValueError, ["base", "-2.0"]),
    # --- rotate (every x, positions, pairing, rotary_dim, inv_freq, out) ---
    ("rotate", lambda: rr.rotate(X.astype(np.longdouble)), TypeError, ["x", "float128"] + DTYPES_LISTED),
    ("rotate", lambda: rr.rotate(X.astype(bool)), TypeError, ["x", "bool"] + DTYPES_LISTED),
    ("rotate", lambda: rr.rotate(None), TypeError, ["x", "None"] + DTYPES_LISTED),
    ("rotate", lambda: rr.rotate([[1.0, 2.0], [3.0]]), TypeError, ["x", "list", "inhomogeneous"]),
    ("rotate", lambda: rr.rotate(X.astype(np.complex64)), TypeError, ["x", "complex"]),
    ("rotate", lambda: rr.rotate(X, pairing="hlaf"), ValueError, ["pairing", "'hlaf'", "did you mean 'half'"]),
    ("rotate", lambda: rr.rotate(X, pairing="neox"), ValueError, ["pairing", "'neox'", "did you mean 'half'"]),
    ("rotate", lambda: rr.rotate(X, pairing="llama"), ValueError, ["pairing", "did you mean 'interleaved'"]),
    ("rotate", lambda: rr.rotate(X, pairing=None), TypeError, ["pairing", "None", "interleaved"]),
    ("rotate", lambda: rr.rotate(X, pairing=np.array(["half"])), TypeError, ["pairing", "ndarray"]),
    ("rotate", lambda: rr.rotate(X, pairng="half"), TypeError, ["'pairng'", "did you mean 'pairing'"]),
    ("rotate", lambda: rr.rotate(X, rotary_dims=4), TypeError, ["'rotary_dims'", "did you mean 'rotary_dim'"]),
    ("rotate", lambda: rr.rotate(X, inv_freqs=[1.0]), TypeError, ["'inv_freqs'", "did you mean 'inv_freq'"]),
    ("rotate", lambda: rr.rotate(X, rotary_dim=4.0), TypeError, ["rotary_dim", "4.0"]),
    ("rotate", lambda: rr.rotate(X, inv_freq=[1.0, np.nan, 1.0, 1.0]), ValueError, ["inv_freq", "finite"]),
    ("rotate", lambda: rr.rotate(X, inv_freq=[1j, 1, 1, 1]), TypeError, ["inv_freq", "complex"]),
    ("rotate", lambda: rr.rotate(X, np.zeros((5, 2))), ValueError, ["positions", "(5, 2)", "(2, 5)"]),
    ("rotate", lambda: rr.rotate(X, np.array([None] * 5)), TypeError, ["positions", "object"]),
    ("rotate", lambda: rr.rotate(X, np.full(5, 1e300), inv_freq=np.full(4, 1e10)), ValueError,
     ["positions", "overflow"]),
    ("rotate", lambda: rr.rotate(X, out=np.empty((2, 5, 8), np.float32)), ValueError, ["out", "float64", "float32"]),
    ("rotate", lambda: rr.rotate(X, out=np.empty((2, 5, 6))), ValueError, ["out", "(2, 5, 8)", "(2, 5, 6)"]),
    ("rotate", lambda: rr.rotate(X, out=X), ValueError, ["out", "overlap"]),
    ("rotate", lambda: rr.rotate(X, out=np.zeros((2, 5, 8)).tolist()), TypeError, ["out", "list"]),
    ("rotate", lambda: rr.rotate(X, out=np.broadcast_to(0.0, X.shape)), ValueError, ["out", "writeable"]),
    ("rotate", lambda: rr.rotate(np.full((1, 2), 60000, np.float16), [0.7]), ValueError,
     ["x", "float16", "overflows", "65504", "norm below"]),
    # base goes through a cache of frequencies: unhashable or bad values must still be named
    ("rotate", lambda: rr.rotate(X, base=[2.0]), TypeError, ["base", "[2.0]", "positive finite real"]),
    ("rotate", lambda: rr.rotate(X, base=np.array([2.0, 3.0])), TypeError, ["base", "ndarray"]),
    ("rotate", lambda: rr.rotate(X, base=np.nan), ValueError, ["base", "nan"]),
    ("rotate", lambda: rr.rotate(X, base=True), TypeError, ["base", "True", "bool"]),
    ("rotate", lambda: rr.rotate(X, base=0), ValueError, ["base", "positive finite", "0"]),
    # --- the other forms of the rotation ---
    ("rotate_elementwise", lambda: rr.rotate_elementwise(X.astype(np.longdouble)), TypeError, ["x", "float128"]),
    ("rotate_elementwise", lambda: rr.rotate_elementwise(X, [1j] * 5), TypeError, ["positions", "complex"]),
    ("rotate_elementwise", lambda: rr.rotate_elementwise(X, pairing="Half"), ValueError, ["pairing", "'Half'"]),
    ("rotate_elementwise", lambda: rr.rotate_elementwise(X, out=X[0].copy()), ValueError, ["out", "(2, 5, 8)", "(5, 8)"]),
    ("rotate_elementwise", lambda: rr.rotate_elementwise(X, ouy=X.copy()), TypeError, ["'ouy'", "did you mean 'out'"]),
    ("rotate_elementwise", lambda: rr.rotate_elementwise(np.full((1, 2), 60000, np.float16), [0.7]), ValueError,
     ["x", "overflows"]),
    ("rotate_dense", lambda: rr.rotate_dense(X, np.full(4, 1.0)), ValueError, ["positions", "(4,)", "(2, 5)"]),
    ("rotate_dense", lambda: rr.rotate_dense(X, bse=2.0), TypeError, ["'bse'", "did you mean 'base'"]),
    ("rotate_dense", lambda: rr.rotate_dense(np.zeros((3, 3))), ValueError, ["x.shape[-1]", "even", "3"]),
    ("rotate_complex", lambda: rr.rotate_complex(X.astype(np.longdouble)), TypeError, ["x", "float128"]),
    ("rotate_complex", lambda: rr.rotate_complex(X, positons=1), TypeError, ["'positons'", "did you mean 'positions'"]),
    ("rotate_complex", lambda: rr.rotate_complex(X, np.full(5, np.nan)), ValueError, ["positions", "finite"]),
    ("rotate_half", lambda: rr.rotate_half(X, "halves"), ValueError, ["pairing", "did you mean 'half'"]),
    ("rotate_half", lambda: rr.rotate_half(np.zeros(3)), ValueError, ["x.shape[-1]", "even"]),
    ("rotate_half", lambda: rr.rotate_half("x"), TypeError, ["x", "string"]),
    # --- permutations ---
    ("to_half", lambda: rr.to_half(np.zeros(5)), ValueError, ["x.shape[-1]", "even", "5"]),
    ("to_half", lambda: rr.to_half([1j, 2j]), TypeError, ["x", "complex"]),
    ("to_interleaved", lambda: rr.to_interleaved(np.zeros((2, 7))), ValueError, ["x.shape[-1]", "7"]),
    ("to_interleaved", lambda: rr.to_interleaved(np.zeros(4, np.longdouble)), TypeError, ["x", "float128"]),
    ("permute_qk_weights", lambda: rr.permute_qk_weights(np.zeros((8, 3)), 0), ValueError, ["n_heads", "0"]),
    ("permute_qk_weights", lambda: rr.permute_qk_weights(np.zeros((8, 3)), "2"), TypeError, ["n_heads", "'2'"]),
    ("permute_qk_weights", lambda: rr.permute_qk_weights(np.zeros((6, 3)), 2), ValueError, ["head_dim", "even", "3"]),
    ("permute_qk_weights", lambda: rr.permute_qk_weights(np.zeros((8, 3), complex), 2), TypeError, ["w", "complex"]),
    ("permute_qk_weights", lambda: rr.permute_qk_weights(np.zeros((8, 3)), n_head=2), TypeError,
     ["'n_head'", "did you mean 'n_heads'"]),
    # --- sinusoidal, decay ---
    ("sinusoidal", lambda: rr.sinusoidal([np.nan], 4), ValueError, ["positions", "finite"]),
    ("sinusoidal", lambda: rr.sinusoidal([1.0], 4.0), TypeError, ["d", "4.0"]),
    ("sinusoidal", lambda: rr.sinusoidal(None, 4), TypeError, ["positions", "None"]),
    ("sinusoidal_shift_matrix", lambda: rr.sinusoidal_shift_matrix([1.0, 2.0], 4), ValueError, ["k", "scalar", "(2,)"]),
    ("sinusoidal_shift_matrix", lambda: rr.sinusoidal_shift_matrix(np.nan, 4), ValueError, ["k", "finite"]),
    ("sinusoidal_shift_matrix", lambda: rr.sinusoidal_shift_matrix(1j, 4), TypeError, ["k", "complex"]),
    ("partial_sums", lambda: rr.partial_sums(None, 8), TypeError, ["distance", "None"]),
    ("partial_sums", lambda: rr.partial_sums(1.0, 8, inv_freq=[1.0]), ValueError, ["inv_freq", "(4,)", "(1,)"]),
    ("partial_sums", lambda: rr.partial_sums(1e300, 8, inv_freq=[1e10] * 4), ValueError, ["distance", "overflow"]),
    ("decay_bound", lambda: rr.decay_bound(1.0, d=7), ValueError, ["d", "even", "7"]),
    ("decay_bound", lambda: rr.decay_bound([np.inf]), ValueError, ["distance", "finite"]),
    ("decay_bound", lambda: rr.decay_bound(1.0, dd=8), TypeError, ["'dd'", "did you mean 'd'"]),
    ("wrap_angle", lambda: rr.wrap_angle("a"), TypeError, ["a", "string"]),
    ("wrap_angle", lambda: rr.wrap_angle([np.nan]), ValueError, ["a", "finite"]),
    ("wrap_angle", lambda: rr.wrap_angle(1j), TypeError, ["a", "complex"]),
    # --- attention ---
    ("attention", lambda: rr.attention(X, X, V, causal="False"), TypeError, ["causal", "'False'", "True or False"]),
    ("attention", lambda: rr.attention(X, X, V, causal=np.array([True, False])), TypeError, ["causal", "ndarray"]),
    ("attention", lambda: rr.attention(X, X, V, causal=1), TypeError, ["causal", "int"]),
    ("attention", lambda: rr.attention(X, X[:, :0], V[:, :0]), ValueError, ["k", "at least one", "(2, 0, 8)"]),
    ("attention", lambda: rr.attention(X + np.nan, X, V), ValueError, ["q", "finite"]),
    ("attention", lambda: rr.attention(X, X, V + np.inf), ValueError, ["v", "finite"]),
    ("attention", lambda: rr.attention(X, X, V, q_positions=np.arange(4)), ValueError,
     ["q_positions", "(4,)", "(2, 5)"]),
    ("attention", lambda: rr.attention(X, X, V, k_positions=[np.nan] * 5), ValueError, ["k_positions", "finite"]),
    ("attention", lambda: rr.attention(X, X, V, casual=True), TypeError, ["'casual'", "did you mean 'causal'"]),
    ("attention", lambda: rr.attention(X, X, V, pairing="neox"), ValueError, ["pairing", "did you mean 'half'"]),
    ("attention", lambda: rr.attention(X.astype(np.longdouble), X, V), TypeError, ["q", "float128"]),
    ("attention", lambda: rr.attention(np.zeros(8), X, V), ValueError, ["(..., seq, d)"]),
    ("attention", lambda: rr.attention(np.full((1, 2), 1.5e308), np.ones((1, 2)), np.ones((1, 1)), q_positions=[0.7]),
     ValueError, ["q", "overflows", "norm below"]),
    ("attention_dense", lambda: rr.attention_dense(X, X, V, np.arange(5), np.arange(5), causal="yes"), TypeError,
     ["causal", "'yes'"]),
    ("attention_dense", lambda: rr.attention_dense(X + 1e200, X + 1e200, V, np.arange(5), np.arange(5)), ValueError,
     ["overflow", "attention()"]),
    ("attention_dense", lambda: rr.attention_dense(X, X, V, np.arange(4), np.arange(5)), ValueError,
     ["q_positions", "(4,)"]),
    ("linear_attention", lambda: rr.linear_attention(X, X, V, causal="True"), TypeError, ["causal", "'True'"]),
    ("linear_attention", lambda: rr.linear_attention(X, X, V, positions=[1j] * 5), TypeError, ["positions", "complex"]),
    ("linear_attention", lambda: rr.linear_attention(X, X, V, position=[0] * 5), TypeError,
     ["'position'", "did you mean 'positions'"]),
    ("linear_attention", lambda: rr.linear_attention(X, X, np.zeros((2, 5, 3), np.longdouble)), TypeError,
     ["v", "float128"]),
    ("linear_attention_dense", lambda: rr.linear_attention_dense(X, X, V, causal=np.bool_), TypeError, ["causal"]),
    ("linear_attention_dense", lambda: rr.linear_attention_dense(X, X[:, :3], V[:, :3]), ValueError,
     ["same length"]),
    ("elu_plus_one", lambda: rr.elu_plus_one("1.0"), TypeError, ["x", "string"]),
    ("elu_plus_one", lambda: rr.elu_plus_one([1j]), TypeError, ["x", "complex"]),
    ("elu_plus_one", lambda: rr.elu_plus_one(None), TypeError, ["x", "None"]),
    ("softmax", lambda: rr.softmax([1.0, np.nan]), ValueError, ["scores", "NaN"]),
    ("softmax", lambda: rr.softmax([-np.inf, -np.inf]), ValueError, ["scores", "at least one finite score"]),
    ("softmax", lambda: rr.softmax("1.0"), TypeError, ["scores", "string"]),
    # --- the identity table ---
    ("run_checks", lambda: checks.run_checks(d=7), ValueError, ["d", "even", "7"]),
    ("run_checks", lambda: checks.run_checks(seq=0), ValueError, ["seq", "positive", "0"]),
    ("run_checks", lambda: checks.run_checks(seed=-1), TypeError, ["seed", "non-negative integer", "-1"]),
    ("run_checks", lambda: checks.run_checks(seed="0"), TypeError, ["seed", "'0'"]),
    ("precision_at", lambda: checks.precision_at(1e3, n=0), ValueError, ["n", "positive", "0"]),
    ("precision_at", lambda: checks.precision_at([1.0, 2.0]), ValueError, ["position", "scalar"]),
    # --- scaling and model configs ---
    ("scaled_inv_freq", lambda: rr.scaled_inv_freq(64, rope_type=np.array(["linear"]), factor=2.0), TypeError,
     ["rope_type", "must be a string", "ndarray"]),
    ("scaled_inv_freq", lambda: rr.scaled_inv_freq(64, rope_type=["linear"], factor=2.0), TypeError,
     ["rope_type", "must be a string", "list"]),
    ("scaled_inv_freq", lambda: rr.scaled_inv_freq(64, type=3, factor=2.0), TypeError, ["type", "string", "3"]),
    ("scaled_inv_freq", lambda: rr.scaled_inv_freq(64, rope_type="linear", factor=10**400), ValueError,
     ["factor", "too large for float64"]),
    ("wavelengths", lambda: rr.wavelengths([0.5, 0.0]), ValueError, ["freqs[1] = 0.0", "non-zero"]),
    ("wavelengths", lambda: rr.wavelengths([1e-320]), ValueError, ["freqs[0]", "within float64"]),
    ("wavelengths", lambda: rr.wavelengths("a"), TypeError, ["freqs", "string"]),
    ("from_hf_config", lambda: rr.from_hf_config({"model_type": ["llama"]}), TypeError,
     ["model_type", "string", "list"]),
    ("from_hf_config", lambda: rr.from_hf_config({"model_type": "llama"}, pairng="half"), TypeError,
     ["'pairng'", "did you mean 'pairing'"]),
    ("RopeConfig.rotate", lambda: LLAMA.rotate(np.ones((4, 64)), positons=[0, 1, 2, 3]), TypeError,
     ["'positons'", "did you mean 'positions'"]),
    ("RopeConfig.rotate", lambda: YARN_HUGE.rotate(np.full((2, 64), 10.0)), ValueError,
     ["overflows float64", "attention factor 1e+308"]),
]


@pytest.mark.parametrize("fn,call,exc,words", CATALOGUE,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CATALOGUE)])
def test_bad_input_is_answered_clearly(fn, call, exc, words):
    with pytest.raises(exc) as info:
        call()
    msg = str(info.value)
    for w in words:
        assert w in msg, f"{w!r} not in {type(info.value).__name__}: {msg!r}"


PUBLIC = ["attention", "attention_dense", "decay_bound", "elu_plus_one", "frequencies", "linear_attention",
          "linear_attention_dense", "partial_sums", "permute_qk_weights", "rotate", "rotate_complex", "rotate_dense",
          "rotate_elementwise", "rotate_half", "rotation_angles", "rotation_matrix", "sinusoidal",
          "sinusoidal_shift_matrix", "softmax", "to_half", "to_interleaved", "wrap_angle"]


def test_the_catalogue_covers_every_public_function_of_core_and_attention():
    core, attention = sys.modules["rope_ref.forms"], sys.modules["rope_ref.rope_attention"]
    public = {n for m in (core, attention) for n in dir(m)
              if not n.startswith("_") and callable(getattr(m, n)) and getattr(m, n).__module__ == m.__name__}
    assert public == set(PUBLIC)
    assert set(PUBLIC) <= {c[0] for c in CATALOGUE}


# ---- property-based: shapes, dtypes, positions ------------------------------------------------------

ACCEPTED = [np.float16, np.float32, np.float64, ml_dtypes.bfloat16, np.int32, np.int64]
REFUSED = [np.longdouble, np.complex64, np.complex128, np.bool_, np.object_, np.str_]
ROTATIONS = [rr.rotate, rr.rotate_elementwise, rr.rotate_dense, rr.rotate_complex]


@st.composite
def lead_shapes(draw):
    return tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))


@settings(max_examples=60, deadline=None)
@given(lead=lead_shapes(), half_d=st.integers(1, 6), dtype=st.sampled_from(REFUSED), fn=st.sampled_from(ROTATIONS))
def test_refused_dtypes_list_the_accepted_ones(lead, half_d, dtype, fn):
    x = np.zeros(lead + (2 * half_d,)).astype(dtype)
    with pytest.raises(TypeError) as info:
        fn(x)
    msg = str(info.value)
    assert msg.startswith("x ")
    assert str(x.dtype) in msg or np.dtype(dtype).kind == "c"
    for w in DTYPES_LISTED:
        assert w in msg


@settings(max_examples=60, deadline=None)
@given(lead=lead_shapes(), half_d=st.integers(1, 6), fn=st.sampled_from(ROTATIONS), data=st.data())
def test_non_finite_positions_are_refused_wherever_they_are(lead, half_d, fn, data):
    x = np.ones(lead + (2 * half_d,))
    pos = np.zeros(lead)
    where = tuple(data.draw(st.integers(0, n - 1)) for n in lead)
    pos[where] = data.draw(st.sampled_from([np.nan, np.inf, -np.inf]))
    with pytest.raises(ValueError) as info:
        fn(x, pos)
    assert "positions" in str(info.value) and "finite" in str(info.value)
    assert str(where) in str(info.value)   # and says where


@settings(max_examples=60, deadline=None)
@given(lead=lead_shapes(), pos_shape=st.lists(st.integers(1, 5), min_size=1, max_size=3),
       fn=st.sampled_from(ROTATIONS))
def test_positions_that_do_not_broadcast_name_both_shapes(lead, pos_shape, fn):
    pos_shape = tuple(pos_shape)
    try:
        ok = np.broadcast_shapes(pos_shape, lead) == lead
    except ValueError:
        ok = False
    x = np.ones(lead + (4,))
    if ok:
        assert fn(x, np.zeros(pos_shape)).shape == x.shape
        return
    with pytest.raises(ValueError) as info:
        fn(x, np.zeros(pos_shape))
    msg = str(info.value)
    assert "positions" in msg and str(pos_shape) in msg and str(lead) in msg


@settings(max_examples=40, deadline=None)
@given(lead=lead_shapes(), half_d=st.integers(1, 6), dtype=st.sampled_from(ACCEPTED), fn=st.sampled_from(ROTATIONS))
def test_accepted_dtypes_give_finite_results_of_the_documented_dtype(lead, half_d, dtype, fn):
    x = np.arange(np.prod(lead) * 2 * half_d).reshape(lead + (2 * half_d,)) % 7
    x = x.astype(dtype)
    out = fn(x)
    assert out.dtype == (np.float64 if np.dtype(dtype).kind == "i" else np.dtype(dtype))
    assert np.all(np.isfinite(out.astype(np.float64)))


KEYWORDS = {  # function -> a keyword it takes
    "rotate": "rotary_dim", "rotate_elementwise": "inv_freq", "rotate_dense": "base", "rotate_complex": "positions",
    "rotate_half": "pairing", "rotation_angles": "freqs", "rotation_matrix": "positions", "frequencies": "base",
    "to_half": "x", "to_interleaved": "x", "permute_qk_weights": "n_heads", "sinusoidal": "positions",
    "sinusoidal_shift_matrix": "base", "partial_sums": "distance", "decay_bound": "inv_freq", "wrap_angle": "a",
    "attention": "k_positions", "attention_dense": "causal", "linear_attention": "positions",
    "linear_attention_dense": "causal", "elu_plus_one": "x", "softmax": "scores",
}


@settings(max_examples=80, deadline=None)
@given(name=st.sampled_from(sorted(KEYWORDS)), typo=st.sampled_from(["swap", "drop", "double", "upper"]))
def test_a_misspelt_keyword_suggests_the_closest(name, typo):
    kw = KEYWORDS[name]
    if len(kw) < 4 and typo != "upper":
        typo = "double"
    mid = len(kw) // 2
    swapped = kw[:mid - 1] + kw[mid] + kw[mid - 1] + kw[mid + 1:]
    bad = {"swap": swapped, "drop": kw[:-1], "double": kw + kw[-1], "upper": kw.upper()}[typo]
    with pytest.raises(TypeError) as info:
        getattr(rr, name)(**{bad: 1})
    msg = str(info.value)
    assert repr(bad) in msg and f"did you mean {kw!r}" in msg and name in msg


def test_each_keyword_map_entry_is_a_real_parameter():
    import inspect
    for name, kw in KEYWORDS.items():
        assert kw in inspect.signature(getattr(rr, name)).parameters, name


@pytest.mark.parametrize("fn", ["attention", "attention_dense", "linear_attention", "linear_attention_dense"])
@pytest.mark.parametrize("flag", ["False", "True", 0, 1, None, np.array([True, False]), np.array(False), [True]])
def test_causal_must_be_a_real_bool(fn, flag):
    pos = np.arange(5)
    args = (X, X, V, pos, pos) if fn == "attention_dense" else (X, X, V)
    with pytest.raises(TypeError) as info:
        getattr(rr, fn)(*args, causal=flag)
    assert "causal" in str(info.value) and "True or False" in str(info.value)


@pytest.mark.parametrize("flag", [True, False, np.True_, np.False_])
def test_real_bools_are_accepted(flag):
    out = rr.attention(X + 1, X + 1, V + 1, causal=flag)
    np.testing.assert_allclose(out, 1.0)


# ---- answers that were silent (issue: the last unclear answers) ------------------------------------------

def test_python_ints_beyond_2_53_beside_floats_warn_as_integer_arrays_do():
    """[2**53 + 1, 0.5] becomes a float64 array in which 2^53 + 1 is 2^53: the integer given is lost before the
    math, so the same warning as for int64 positions, naming the integer as given."""
    for positions, largest in (([2**53 + 1, 0.5], 2**53 + 1), ([[2**53, 0.5], (1.0, -(2**53 + 3))], 2**53 + 3)):
        x = np.ones(np.shape(positions) + (4,))
        with pytest.warns(rr.RopeRefPrecisionWarning, match=rf"positions: integers beyond 2\^53 .* up to {largest}$"):
            rr.rotate(x, positions, inv_freq=[1e-30, 1e-31])
    with warnings.catch_warnings():
        warnings.simplefilter("error", rr.RopeRefPrecisionWarning)
        rr.rotate(np.ones((2, 4)), [2.0**53 + 2, 0.5], inv_freq=[1e-30, 1e-31])   # floats, taken as given
        rr.rotate(np.ones((2, 4)), [2**53, 0.5], inv_freq=[1e-30, 1e-31])         # 2^53 itself is a float64


@pytest.mark.parametrize("call", [lambda: rr.rotate(X, base=1), lambda: rr.frequencies(8, 1.0),
                                  lambda: rr.attention(X, X, V, base=1),
                                  lambda: rr.from_hf_config({"model_type": "llama", "head_dim": 8, "rope_theta": 1})])
def test_base_1_warns_naming_base(call):
    """base = 1: theta_i = 1^(-2i/d) = 1 for every pair (eq 15), one wavelength for all: allowed, not silent."""
    with pytest.warns(UserWarning, match=r"(base|rope_theta \(config\['rope_theta'\]\))=1 gives every pair the same "
                                         r"frequency theta_i = 1") as info:
        call()
    assert info[0].filename == __file__                            # points at the caller's line
