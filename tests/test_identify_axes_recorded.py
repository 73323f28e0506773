"""identify(fn, d, axes=3) and assert_rope_matches(fn, config=...) on transformers' M-RoPE modules, recorded
(tests/data/multiaxis_modules.npz, mrope_families.npz) and replayed as kernels; nothing in a kernel comes from rope_ref,
the expectations from the modules' configs.  Planted kernels move a section boundary or swap the layout."""

import json
from pathlib import Path

import numpy as np
import pytest

import rope_ref as rr
from rope_ref.kernel_check import RopeMismatch

from kernels import rotate_every_two, rotate_half

DATA = Path(__file__).parent / "data"
MODULES = json.loads((DATA / "multiaxis_modules.json").read_text())
FAMILIES = json.loads((DATA / "mrope_families.json").read_text())
REC = {}
for _name in ("multiaxis_modules.npz", "mrope_families.npz"):
    with np.load(DATA / _name) as _z:
        REC.update({k: _z[k] for k in _z.files})

#: The transformers config class each module was built with (record_multiaxis.py: QWEN_MODULES), by model_type.
MODEL_TYPE = {"qwen2_vl": "qwen2_vl", "qwen2_5_vl": "qwen2_5_vl", "qwen3_vl": "qwen3_vl_text"}
CASES = sorted(MODEL_TYPE) + sorted(FAMILIES["configs"])


def config_of(case):
    """The config the recorded module was built with: a dict of its rope_parameters, or the family's small config."""
    if case in MODEL_TYPE:
        return {"model_type": MODEL_TYPE[case], "hidden_size": 256, "num_attention_heads": 2, "head_dim": 128,
                "rope_parameters": dict(MODULES["cases"][case]["rope_parameters"])}
    return DATA / "configs" / "families" / f"{case}.json"


def rope_section(case):
    """(sections, interleaved axes, base) as the config file or recorded rope_parameters write them."""
    if case in MODEL_TYPE:
        rope = MODULES["cases"][case]["rope_parameters"]
    else:
        cfg = json.loads(config_of(case).read_text())
        rope = cfg.get("rope_parameters") or dict(cfg["rope_scaling"], rope_theta=cfg["rope_theta"])
    return list(rope["mrope_section"]), bool(rope.get("mrope_interleaved")), rope["rope_theta"]


def layout_of(case):
    """(head_dim, rotary_dim, table columns: "cat" or "repeat_interleave") of the recorded module."""
    if case in MODEL_TYPE:
        return 128, 128, "cat"
    meta = FAMILIES["configs"][case]
    return meta["head_dim"], meta["rotary_dim"], meta["columns"]


def wrap(a):
    return np.angle(np.exp(1j * a))


def recorded_matrix(case):
    """F (table columns, 3): the angle of column c at ids p is sum_a F[c, a] p_a, solved from the recording."""
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


def kernel_of(F, columns="cat"):
    """fn(x, p): the family's apply_rotary_pos_emb with the columns' frequencies F (rotary_dim, 3), the rest passed."""
    rot = rotate_half if columns == "cat" else rotate_every_two

    def fn(x, p):
        ang = np.asarray(p, np.float64).T @ F.T                           # (seq, rotary_dim)
        r = F.shape[0]
        out = x.copy()
        out[..., :r] = x[..., :r] * np.cos(ang) + rot(x[..., :r]) * np.sin(ang)
        return out
    return fn


@pytest.fixture(scope="module", params=CASES)
def recorded(request):
    return request.param, recorded_matrix(request.param)


@pytest.mark.slow
def test_identify_with_axes_reads_the_recorded_sections_and_layout(recorded):
    case, F = recorded
    head_dim, r, columns = layout_of(case)
    sections, was_interleaved, base = rope_section(case)
    spec = rr.identify(kernel_of(F, columns), head_dim, axes=3)
    assert isinstance(spec, rr.AxesSpec) and spec.is_rope, spec
    pairing = "half" if columns == "cat" else "interleaved"
    assert (spec.form, spec.pairing, spec.rotary_dim, spec.rotary_start) == ("M-RoPE", pairing, r, 0), spec
    assert spec.inv_freq.shape == (r // 2, 3) and spec.sections == tuple(sections)
    assert spec.mrope_layout == ("interleaved" if was_interleaved else "blocks")
    assert spec.base == base


@pytest.mark.slow
@pytest.mark.parametrize("as_object", [False, True], ids=["config.json", "RopeConfig"])
def test_assert_rope_matches_passes_with_the_modules_config(recorded, as_object):
    case, F = recorded
    config = config_of(case)
    spec = rr.assert_rope_matches(kernel_of(F, layout_of(case)[2]),
                                  config=rr.from_hf_config(config) if as_object else config)
    assert spec.sections == tuple(rope_section(case)[0])


def blocks(sections):
    return np.repeat(np.arange(3), sections)


def interleaved(sections):
    """transformers' apply_interleaved_mrope: h takes pairs 1, 4, ... < 3 * sections[1]; w 2, 5, ...; t the rest."""
    axis = np.zeros(sum(sections), int)
    for a in (1, 2):
        idx = np.arange(a, 3 * sections[a], 3)
        axis[idx[idx < len(axis)]] = a
    return axis


def reassigned(case, F, axis_of_pair):
    """The recorded frequencies, each pair moved to the axis given (the plant)."""
    j = np.arange(F.shape[0] // 2)                                        # the table columns of pair j
    first, second = (j, j + len(j)) if layout_of(case)[2] == "cat" else (2 * j, 2 * j + 1)
    theta = np.abs(F[first]).max(axis=1)
    G = np.zeros_like(F)
    G[first, axis_of_pair] = G[second, axis_of_pair] = theta
    return kernel_of(G, layout_of(case)[2])


def defects(fn, config):
    """The known defects assert_rope_matches names for fn against config."""
    with pytest.raises(RopeMismatch) as info:
        rr.assert_rope_matches(fn, config=config)
    return info.value.defects


@pytest.mark.slow
def test_a_swapped_layout_and_a_shifted_section_boundary_are_named(recorded):
    case, F = recorded
    sections, was_interleaved, _ = rope_section(case)
    swapped = (blocks if was_interleaved else interleaved)(sections)
    assert defects(reassigned(case, F, swapped), config_of(case)) == ["M-RoPE layout swapped"]
    axis = (interleaved if was_interleaved else blocks)(sections).copy()
    axis[int(np.flatnonzero(axis == 1)[0])] = 0                           # one pair of h turns with t
    fn = reassigned(case, F, axis)
    if was_interleaved:         # t's extra pair is not where any layout of 17/23/24 puts it
        with pytest.raises(RopeMismatch, match="no known defect explains this"):
            rr.assert_rope_matches(fn, config=config_of(case))
    else:
        assert defects(fn, config_of(case)) == ["M-RoPE sections swapped"]


#: A recorded module checked against another model's config, and the defects that tell them apart.
THREE = ["M-RoPE layout swapped", "M-RoPE sections swapped", "another base"]
OTHER = {"qwen2_vl": ("qwen3_vl", THREE), "qwen2_5_vl": ("qwen3_vl", THREE), "qwen3_vl": ("qwen2_vl", THREE),
         "v5-qwen2-vl": ("v5-qwen3-vl-text", THREE), "v5-qwen3-vl-text": ("v5-qwen2-vl", THREE),
         "v5-glm4v-text": ("v5-qwen3-5-text", None), "v5-qwen3-5-text": ("v5-glm4v-text", None)}


@pytest.mark.slow
def test_the_other_models_config_is_told_apart(recorded):
    case, F = recorded
    other, named = OTHER[case]
    with pytest.raises(RopeMismatch) as info:
        rr.assert_rope_matches(kernel_of(F, layout_of(case)[2]), config=config_of(other))
    if named is not None:
        assert info.value.defects == named, info.value.problems
    assert info.value.problems
