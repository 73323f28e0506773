"""flash-attention's, vLLM's, Liger's, FlashInfer's and DeepSeek-V3's torch references (recorded) pass
assert_rope_close with the derived tolerance; against a planted defect they fail."""

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from rope_ref.testing import Precision, assert_rope_close

DATA = Path(__file__).parent / "data"
CASES = json.loads((DATA / "kernel_suites.json").read_text())["cases"]
ARRAYS = np.load(DATA / "kernel_suites.npz")
DTYPES = {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16, "float32": np.float32}


def replay(name, **changes):
    """The suite's call, written as an outside port would write it: its tensors, its keywords, its precision."""
    case = CASES[name]
    arrays = {key.split("/")[-1]: ARRAYS[key] for key in ARRAYS.files if key.rsplit("/", 1)[0] == name}
    x, out = (arrays.pop(k).astype(DTYPES[case["dtype"]]) for k in ("x", "out"))
    if "cos" in arrays:
        arrays["cos"], arrays["sin"] = (arrays[k].astype(DTYPES[case["precision"]["table"]]) for k in ("cos", "sin"))
    assert_rope_close(out, x, precision=Precision(**case["precision"]), **(case["call"] | arrays | changes))


@pytest.mark.parametrize("name", CASES)
def test_the_suites_references_pass_with_the_derived_tolerance(name):
    replay(name)


@pytest.mark.parametrize("name", CASES)
def test_a_planted_defect_fails(name):      # pairs swapped, or (a config fixes the pairing) rows shifted by one
    pairing = CASES[name]["call"].get("pairing")
    swapped = {"pairing": "half" if pairing == "interleaved" else "interleaved"}
    with pytest.raises(AssertionError, match="bound"):
        replay(name, **(swapped if pairing else {"positions": ARRAYS[f"{name}/positions"] + 1}))
    if np.any(ARRAYS.get(f"{name}/seqlen_offsets", 0) != 0):          # the offsets forgotten
        with pytest.raises(AssertionError):
            replay(name, seqlen_offsets=0)
