"""identify(fn, d, axes=3) and assert_rope_matches(fn, config=<M-RoPE config>) on transformers' own M-RoPE modules.

tests/data/multiaxis_modules.npz holds the float32 cos/sin that transformers 5.24's Qwen2VLRotaryEmbedding,
Qwen2_5_VLRotaryEmbedding and Qwen3VLTextRotaryEmbedding computed at 22 recorded (t, h, w) position ids
(tests/data/record_multiaxis.py).  The probe needs other positions, so each recording is replayed as a kernel:
the frequency of every feature column along each axis is solved here from the recorded cos/sin alone (unit
steps of each axis in the recorded ids, then least squares over all 22 rows with whole turns predicted from
the fit so far), shown to reproduce every recorded cos/sin and the recorded rotated query, and applied the way
the recorded ``apply_rotary_pos_emb`` does (x * cos + rotate_half(x) * sin).  Nothing in the kernel comes
from rope_ref; the expectations come from the configs the modules were built with (the recorded
``rope_parameters``, read by rope_ref.from_hf_config).  Planted kernels move a section boundary or swap the
layout of the recorded frequencies, and must be named.
"""

import json
from pathlib import Path

import numpy as np
import pytest

import rope_ref as rr
from rope_ref.identify import KernelRaised, RopeMismatch

DATA = Path(__file__).parent / "data"
META = json.loads((DATA / "multiaxis_modules.json").read_text())
with np.load(DATA / "multiaxis_modules.npz") as _z:
    REC = {k: _z[k] for k in _z.files}

#: The transformers config class each module was built with (record_multiaxis.py: QWEN_MODULES), by model_type.
MODEL_TYPE = {"qwen2_vl": "qwen2_vl", "qwen2_5_vl": "qwen2_5_vl", "qwen3_vl": "qwen3_vl_text"}
CASES = sorted(MODEL_TYPE)


def config_of(case):
    """The config the recorded module was built with: 2 heads of head_dim 128 and its recorded rope_parameters."""
    return {"model_type": MODEL_TYPE[case], "hidden_size": 256, "num_attention_heads": 2, "head_dim": 128,
            "rope_parameters": dict(META["cases"][case]["rope_parameters"])}


def wrap(a):
    return np.angle(np.exp(1j * a))


def recorded_matrix(case):
    """F (feature columns, 3): the angle of column c at ids p is sum_a F[c, a] p_a, solved from the recording."""
    P = REC[f"{case}/pos"].astype(np.float64)                             # (3, rows)
    phi = np.arctan2(REC[f"{case}/sin"], REC[f"{case}/cos"]).astype(np.float64)   # (rows, columns)
    # the recorded ids move w alone (rows 2 -> 3), h alone (4 -> 7) and all three (0 -> 1) by one
    assert [list(P[:, 3] - P[:, 2]), list(P[:, 7] - P[:, 4]), list(P[:, 1] - P[:, 0])] == [[0, 0, 1], [0, 1, 0],
                                                                                          [1, 1, 1]]
    assert np.all(P[:, 0] == 0)
    fw, fh = wrap(phi[3] - phi[2]), wrap(phi[7] - phi[4])
    F = np.stack([wrap(phi[1] - phi[0] - fh - fw), fh, fw], axis=-1)
    order = np.argsort(P.max(axis=0), kind="stable")
    for k in range(8, len(order) + 1):                                    # rows by their largest id
        rows = order[:k]
        pred = P[:, rows].T @ F.T
        unwrapped = phi[rows] + 2 * np.pi * np.round((pred - phi[rows]) / (2 * np.pi))
        F = np.linalg.lstsq(P[:, rows].T, unwrapped, rcond=None)[0].T
    # entries far below their column's largest are rounding (float32 angles up to 70000 rad): exactly 0, and the
    # others fitted again by least squares over the axes left
    keep = np.abs(F) >= 1e-4 * np.abs(F).max(axis=1, keepdims=True)
    for c in range(F.shape[0]):
        F[c] = 0.0
        F[c, keep[c]] = np.linalg.lstsq(P[keep[c]].T, unwrapped[:, c], rcond=None)[0]
    return F


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def kernel_of(F):
    """transformers' apply_rotary_pos_emb with cos/sin of the column frequencies F: fn(x (seq, 128), p (3, seq))."""
    def fn(x, p):
        ang = np.asarray(p, np.float64).T @ F.T                           # (seq, columns)
        return x * np.cos(ang) + rotate_half(x) * np.sin(ang)
    return fn


@pytest.fixture(scope="module", params=CASES)
def recorded(request):
    return request.param, recorded_matrix(request.param)


def test_the_replayed_kernel_is_the_recording(recorded):
    case, F = recorded
    P = REC[f"{case}/pos"].astype(np.float64)
    ang = P.T @ F.T
    tol = 5e-7 * np.abs(ang) + 2e-6                                       # float32 angles and cos/sin
    assert np.all(np.abs(np.cos(ang) - REC[f"{case}/cos"]) <= tol)
    assert np.all(np.abs(np.sin(ang) - REC[f"{case}/sin"]) <= tol)
    q = REC[f"{case}/q"].astype(np.float64)                               # (heads, rows, 128)
    out = np.stack([kernel_of(F)(head, P) for head in q])
    bound = 4 * np.concatenate([tol[None]] * len(q)) * (1 + np.abs(q))
    assert np.all(np.abs(out - REC[f"{case}/out"]) <= bound)
    # each column turns with one axis, the two halves of a pair alike (rotate_half)
    assert np.all((F != 0).sum(axis=1) == 1) and np.array_equal(F[:64], F[64:])


def test_identify_with_axes_reads_the_recorded_sections_and_layout(recorded):
    case, F = recorded
    spec = rr.identify(kernel_of(F), 128, axes=3)
    rope = META["cases"][case]["rope_parameters"]
    assert isinstance(spec, rr.AxesSpec) and spec.is_rope, spec
    assert (spec.form, spec.pairing, spec.rotary_dim, spec.inv_freq.shape) == ("M-RoPE", "half", 128, (64, 3))
    assert spec.sections == tuple(rope["mrope_section"])
    assert spec.mrope_layout == ("interleaved" if rope.get("mrope_interleaved") else "blocks")
    assert spec.base == rope["rope_theta"]


@pytest.mark.parametrize("as_object", [False, True], ids=["config.json dict", "RopeConfig"])
def test_assert_rope_matches_passes_with_the_modules_config(recorded, as_object):
    case, F = recorded
    config = config_of(case)
    spec = rr.assert_rope_matches(kernel_of(F), config=rr.from_hf_config(config) if as_object else config)
    assert spec.sections == tuple(config["rope_parameters"]["mrope_section"])


def blocks(sections):
    return np.repeat(np.arange(3), sections)


def interleaved(sections):
    """transformers' apply_interleaved_mrope: h takes pairs 1, 4, ... < 3 * sections[1]; w 2, 5, ...; t the rest."""
    axis = np.zeros(sum(sections), int)
    for a in (1, 2):
        idx = np.arange(a, 3 * sections[a], 3)
        axis[idx[idx < len(axis)]] = a
    return axis


def reassigned(F, axis_of_pair):
    """The recorded frequencies, each pair moved to the axis given (the plant)."""
    theta = np.abs(F[:64]).max(axis=1)
    G = np.zeros((64, 3))
    G[np.arange(64), axis_of_pair] = theta
    return np.concatenate([G, G])


def problems(fn, config):
    with pytest.raises(RopeMismatch) as info:
        rr.assert_rope_matches(fn, config=config)
    return info.value.problems


def test_the_axes_from_the_recording_follow_transformers_layouts(recorded):
    case, F = recorded
    rope = META["cases"][case]["rope_parameters"]
    layout = interleaved if rope.get("mrope_interleaved") else blocks
    np.testing.assert_array_equal(np.argmax(F[:64] != 0, axis=1), layout(rope["mrope_section"]))


def test_a_swapped_layout_is_named(recorded):
    case, F = recorded
    rope = META["cases"][case]["rope_parameters"]
    sections, was_interleaved = rope["mrope_section"], bool(rope.get("mrope_interleaved"))
    axis = (blocks if was_interleaved else interleaved)(sections)
    found, expected = ("blocks", "interleaved") if was_interleaved else ("interleaved", "blocks")
    lines = problems(kernel_of(reassigned(F, axis)), config_of(case))
    layout = [p for p in lines if p.startswith("layout:")]
    assert len(layout) == 1 and layout[0].startswith(f"layout: kernel's axes are {found} ("), lines
    assert f"expected {expected} (" in layout[0]
    # transformers' interleaving of 16/24/24 over 64 pairs gives h and w only 21 pairs each (t 22): that
    # split is named too; Qwen3-VL's 24/20/20 fit both layouts, so only the layout differs
    effective = tuple(np.bincount(axis, minlength=3))
    assert any(p.startswith("sections:") for p in lines) == (effective != tuple(sections)), lines
    if effective != tuple(sections):
        assert "sections: kernel gives t/h/w 22/21/21 pairs, expected 16/24/24" in lines


def test_a_shifted_section_boundary_is_named(recorded):
    case, F = recorded
    rope = META["cases"][case]["rope_parameters"]
    sections = rope["mrope_section"]
    axis = (interleaved if rope.get("mrope_interleaved") else blocks)(sections)
    first_h = int(np.flatnonzero(axis == 1)[0])
    axis = axis.copy()
    axis[first_h] = 0                                                     # one pair of h turns with t
    lines = problems(kernel_of(reassigned(F, axis)), config_of(case))
    t, h, w = sections
    assert lines[0] == f"sections: kernel gives t/h/w {t + 1}/{h - 1}/{w} pairs, expected {t}/{h}/{w}", lines


def test_the_other_models_config_is_named(recorded):
    # Qwen2-VL's module checked against Qwen3-VL's config and back: sections, layout and base all differ
    case, F = recorded
    other = config_of("qwen3_vl" if case != "qwen3_vl" else "qwen2_vl")
    lines = problems(kernel_of(F), other)
    assert any(p.startswith("sections:") for p in lines) and any(p.startswith("frequencies") for p in lines), lines


def test_a_one_axis_kernel_for_an_mrope_config_is_named_as_raising():
    # fn(x) where the config needs fn(x, positions): the kernel's own TypeError, never a RoPE mismatch
    with pytest.raises(KernelRaised, match="fn raised TypeError"):
        rr.assert_rope_matches(lambda x: x, config=config_of("qwen2_vl"))
