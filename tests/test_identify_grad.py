"""assert_rope_grad_matches: backward passes of RoPE kernels, correct and with planted bugs.

The backward of row r's rotation R(r) is R(r)^T = the rotation by minus the angles (eq 34's blocks are
orthogonal).  The NumPy backwards below are written from that identity with tests/kernels.py's forward
kernels (neox with sign=-1 rotates by minus the angles); the torch ones come from autograd through
transformers' own modules.  Expected values are the kernels' parameters, never identify's output.
"""

import numpy as np
import pytest

import rope_ref as rr
from kernels import freqs64, llama, neox

D = 32


def neox_backward(offset=0, base=10000.0):
    """The right backward of neox(x, offset): g rotated by -(offset + r) theta."""
    return lambda x, g: neox(g, offset, base=base, sign=-1.0)


def test_a_correct_backward_passes_with_its_forward_expectations():
    spec = rr.assert_rope_grad_matches(neox_backward(7), D, pairing="half", base=10000.0, offset=7, rotary_dim=D)
    assert spec.offset == 7 and np.all(spec.inv_freq > 0)
    np.testing.assert_allclose(spec.inv_freq, freqs64(D), rtol=1e-9)


def test_a_backward_that_rotates_forward_is_named_wrong_direction():
    forward_again = lambda x, g: neox(g, 7)                     # noqa: E731  planted: R g instead of R^T g
    with pytest.raises(AssertionError, match="wrong direction") as info:
        rr.assert_rope_grad_matches(forward_again, D, pairing="half", base=10000.0, offset=7)
    assert "clockwise" not in str(info.value).split("identified")[0]


def test_a_backward_with_the_wrong_pairing_is_named():
    interleaved = lambda x, g: llama(g, 0, freqs=-freqs64(D))  # noqa: E731  planted: backward pairs interleaved
    with pytest.raises(AssertionError, match="wrong pairing in the backward") as info:
        rr.assert_rope_grad_matches(interleaved, D, pairing="half", base=10000.0, offset=0)
    assert "backward pairing: expected half, found interleaved" in str(info.value)


def test_a_backward_at_the_wrong_position_is_named():
    with pytest.raises(AssertionError, match="backward offset: expected row 0 at position 7, found 8"):
        rr.assert_rope_grad_matches(neox_backward(8), D, pairing="half", base=10000.0, offset=7)


def test_a_backward_with_the_wrong_base_is_named():
    with pytest.raises(AssertionError, match="follow base 10000"):
        rr.assert_rope_grad_matches(neox_backward(0, base=10000.0), D, base=500000.0, offset=0)


def test_a_backward_that_raises_is_reported_as_raising():
    def crashes(x, g):
        assert g.shape[0] < 10, "head size not supported"       # planted: an assert inside the kernel
        return neox(g, sign=-1.0)
    with pytest.raises(RuntimeError, match="vjp raised AssertionError: head size not supported") as info:
        rr.assert_rope_grad_matches(crashes, D, base=10000.0)
    assert not isinstance(info.value, AssertionError)


def test_config_dict_gives_the_expectations_and_offset_zero():
    cfg = {"model_type": "llama", "head_dim": D, "hidden_size": 4 * D, "num_attention_heads": 4, "rope_theta": 10000.0}
    rr.assert_rope_grad_matches(neox_backward(0), config=cfg)
    with pytest.raises(AssertionError, match="backward offset: expected row 0 at position 0, found 3"):
        rr.assert_rope_grad_matches(neox_backward(3), config=cfg)
    rr.assert_rope_grad_matches(neox_backward(3), config=cfg, offset=None)


# ---- against torch autograd through transformers' modules (skipped where torch is not installed) -----

def _llama_rotary(head_dim, base, offset):
    torch = pytest.importorskip("torch")
    llama_mod = pytest.importorskip("transformers.models.llama.modeling_llama")
    from transformers import LlamaConfig
    cfg = LlamaConfig(hidden_size=4 * head_dim, num_attention_heads=4, head_dim=head_dim, rope_theta=base)
    rotary = llama_mod.LlamaRotaryEmbedding(cfg)

    def forward(x):                       # x: (seq, head_dim) torch float32 with grad
        pos = torch.arange(offset, offset + x.shape[0])[None]
        cos, sin = rotary(x[None, None], pos)
        q, _ = llama_mod.apply_rotary_pos_emb(x[None, None], x[None, None], cos, sin)
        return q[0, 0]
    return torch, forward


@pytest.mark.parametrize("offset", [0, 300])
def test_torch_autograd_through_transformers_llama_rotary(offset):
    torch, forward = _llama_rotary(D, 10000.0, offset)

    def vjp(x, g):
        xt = torch.tensor(x, dtype=torch.float32, requires_grad=True)
        (grad,) = torch.autograd.grad((forward(xt) * torch.tensor(g, dtype=torch.float32)).sum(), xt)
        return grad
    spec = rr.assert_rope_grad_matches(vjp, D, pairing="half", base=10000.0, offset=offset)
    assert spec.offset == offset


def test_torch_planted_backward_bug_is_caught():
    torch, forward = _llama_rotary(D, 10000.0, 0)

    class WrongBackward(torch.autograd.Function):         # a fused kernel's backward that forgot the transpose
        @staticmethod
        def forward(ctx, x):
            return forward(x)

        @staticmethod
        def backward(ctx, g):
            return forward(g)

    def vjp(x, g):
        xt = torch.tensor(x, dtype=torch.float32, requires_grad=True)
        (grad,) = torch.autograd.grad((WrongBackward.apply(xt) * torch.tensor(g, dtype=torch.float32)).sum(), xt)
        return grad
    with pytest.raises(AssertionError, match="wrong direction"):
        rr.assert_rope_grad_matches(vjp, D, pairing="half", base=10000.0, offset=0)


def test_a_backward_that_is_not_a_rotation_says_so_in_its_problems():
    with pytest.raises(AssertionError) as info:
        rr.assert_rope_grad_matches(lambda x, g: g + 1.0, D)
    assert info.value.problems == [str(info.value)] and str(info.value).startswith("backward: not a rotary embedding")
