"""identify / assert_rope_matches on dynamic NTK kernels, whose base grows with the sequence length.

transformers' dynamic NTK (``_compute_dynamic_ntk_parameters``): at length L = offset + rows past the
trained length L_train, base * (factor * L / L_train - (factor - 1))^(d/(d-2)); up to L_train the
default frequencies.  Expected values are the kernels' own parameters, never identify's output.
"""

import numpy as np
import pytest

from rope_ref import assert_rope_matches, identify, scaled_inv_freq

from kernels import hf_inv_freq, hf_rope, rotate_half

D = 64


def hf_dynamic(offset, factor, L_train, base=10000.0, max_rows=None):
    """HF dynamic NTK in float32: the base (float64, as Python computes it) from seq_len = offset + rows,
    inv_freq and angles in float32 (hf_rope).  Records the rows of each call; refuses more than max_rows."""
    asked = []

    def fn(x):
        asked.append(len(x))
        if max_rows is not None and len(x) > max_rows:
            raise ValueError(f"cache holds {max_rows} rows, asked for {len(x)}")
        seq_len, b = offset + len(x), base
        if seq_len > L_train:
            b = base * ((factor * seq_len / L_train) - (factor - 1)) ** (D / (D - 2))
        return hf_rope(x, offset, inv_freq=hf_inv_freq(D, b))
    return fn, asked


def dynamic64(offset, factor, L_train, base=10000.0):
    """float64 kernel from rope_ref.scaled_inv_freq at seq_len = offset + rows: x cos + rotate_half(x) sin."""
    def fn(x):
        freqs, _ = scaled_inv_freq(D, base, rope_type="dynamic", factor=factor, max_position_embeddings=L_train,
                                   seq_len=offset + len(x))
        angle = np.outer(offset + np.arange(len(x)), np.concatenate([freqs, freqs]))
        return x * np.cos(angle) + rotate_half(x) * np.sin(angle)
    return fn


@pytest.mark.slow
@pytest.mark.parametrize("factor", [2.0, 4.0, 8.0])
@pytest.mark.parametrize("offset", [4000, 10000])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dynamic_named_with_factor_and_training_length(dtype, offset, factor):
    fn = hf_dynamic(offset, factor, 2048)[0] if dtype == "float32" else dynamic64(offset, factor, 2048)
    s = identify(fn, D, base_hint=10000.0)
    assert s.rope_type == "dynamic" and s.offset == offset, s
    assert s.rope_params == {"base": 10000.0, "factor": factor, "max_position_embeddings": 2048}, s
    assert s.angle_precision == dtype and s.closest is None
    assert_rope_matches(fn, D, base=10000.0, rope_type="dynamic", factor=factor, max_position_embeddings=2048,
                        offset=offset, pairing="half")


def test_a_wrong_factor_or_training_length_is_named():
    fn, _ = hf_dynamic(4000, 4.0, 2048)
    with pytest.raises(AssertionError, match="factor: expected 2, found 4"):
        assert_rope_matches(fn, D, base=10000.0, rope_type="dynamic", factor=2.0, max_position_embeddings=2048)
    with pytest.raises(AssertionError, match="max_position_embeddings: expected 1024, found 2048"):
        assert_rope_matches(fn, D, base=10000.0, rope_type="dynamic", factor=4.0, max_position_embeddings=1024)


def test_static_ntk_stays_ntk():
    freqs, _ = scaled_inv_freq(D, 10000.0, rope_type="ntk", factor=4.0)
    asked = []
    s = identify(lambda x: asked.append(len(x)) or hf_rope(x, 4000, inv_freq=freqs), D, base_hint=10000.0)
    assert s.rope_type == "ntk" and s.rope_params == {"base": 10000.0, "factor": 4.0}, s
    assert 4096 in asked and any("static NTK" in n for n in s.notes), (asked, s.notes)   # checked at another length


@pytest.mark.parametrize("base_hint", [None, 10000.0])
def test_below_the_training_length_it_is_default(base_hint):
    fn, asked = hf_dynamic(2000, 4.0, 8192)          # rows up to 2000 + 4096 stay below 8192
    s = identify(fn, D, base_hint=base_hint)
    assert (s.rope_type, s.rope_params, s.offset) == ("default", {"base": 10000.0}, 2000), s
    assert max(asked) == 4096


def test_training_length_crossed_by_the_longer_calls():
    fn, _ = hf_dynamic(1500, 4.0, 2048)              # 64 rows end at 1564 (default); 4096 rows pass 2048
    s = identify(fn, D, base_hint=10000.0)
    assert s.rope_type == "dynamic", s
    assert s.rope_params == {"base": 10000.0, "factor": 4.0, "max_position_embeddings": 2048}, s


def test_without_base_hint_it_is_custom_never_ntk():
    fn, _ = hf_dynamic(4000, 4.0, 2048)
    s = identify(fn, D)
    assert s.rope_type == "custom" and s.closest == "default", s
    assert any("depend on the sequence length" in n for n in s.notes)
    assert any("pass base_hint" in n for n in s.notes)


def test_max_rows_is_respected():
    fn, asked = hf_dynamic(4000, 4.0, 2048, max_rows=64)
    s = identify(fn, D, base_hint=10000.0, max_rows=64)
    assert max(asked) == 64 and min(asked) < 64       # measured at fewer rows instead
    assert s.rope_type == "dynamic", s
    # 64 - 32 positions apart do not pin L_train to one integer: said so, and the kernel still matches
    assert any("not resolved to one integer" in n for n in s.notes), s.notes
    assert_rope_matches(fn, D, base=10000.0, rope_type="dynamic", factor=4.0, max_position_embeddings=2048,
                        max_rows=64)


def test_a_base_that_grows_otherwise_is_not_dynamic():
    def fn(x):                                       # base grows as L^2: not a line in L
        return hf_rope(x, 4000, base=10000.0 * ((4000 + len(x)) / 2048) ** 2)
    s = identify(fn, D, base_hint=10000.0)
    assert s.rope_type == "custom" and s.closest == "dynamic", s
    assert any("no dynamic NTK" in n for n in s.notes)


def test_a_third_length_checks_that_the_growth_is_a_line():
    # g(L) = 1 + 4 (L - 2048) / 2048 at 4064 and 8096 (the rows 64 and 4096 end there), bent between them
    def fn(x):
        L = 4000 + len(x)
        g = 1 + 4.0 * (L - 2048) / 2048 + 1e-6 * (L - 4064) * (L - 8096)
        return hf_rope(x, 4000, inv_freq=hf_inv_freq(D, 10000.0 * g ** (D / (D - 2))))
    s = identify(fn, D, base_hint=10000.0)
    assert s.rope_type == "custom" and s.closest == "dynamic", s
