"""Audit of rope_ref.identify / assert_rope_matches against real RoPE kernels (torch, transformers, JAX): a
mismatch must name the catalogued defect (rope_ref.kernel_check.DEFECTS) that the planted bug is.

Not collected by pytest (CI has numpy only).  Run with a venv holding torch, transformers and jax:

    PYTHONPATH=. python tests/data/audit_identify.py

Each case is a kernel (x: (seq, d) float64 numpy -> rotated x) with what the kernel is known to do
(from its own parameters, never from identify).  The table says, per case, whether identify's verdict
matches that, whether assert_rope_matches with the true expectations passes (and, for a planted
mismatch, whether it names it), and the first line of what was said.
"""

import importlib.util
import math
import sys
import traceback

import numpy as np
import torch

import rope_ref as rr

torch.set_num_threads(1)


# ---- transformers rotary modules + apply functions ------------------------------------------------

def hf_kernel(family, d, rope_parameters, offset=0, dtype=torch.float32, rotary_factor=None, fresh=True,
              layout="bhsd", **cfg):
    """x (seq, d) -> the family's rotary module and apply_rotary_pos_emb on (1, 1, seq, d) in `dtype`."""
    import importlib
    mod = importlib.import_module(f"transformers.models.{family}.modeling_{family}")
    conf = importlib.import_module(f"transformers.models.{family}.configuration_{family}")
    Config = next(getattr(conf, n) for n in dir(conf) if n.endswith("Config") and n != "PreTrainedConfig")
    Rotary = next(getattr(mod, n) for n in dir(mod) if n.endswith("RotaryEmbedding"))
    params = dict(rope_parameters)
    if rotary_factor is not None:
        params["partial_rotary_factor"] = rotary_factor
    config = Config(hidden_size=d * 2, num_attention_heads=2, head_dim=d, rope_parameters=params, **cfg)
    state = {"rot": Rotary(config)}

    def fn(x):
        seq = x.shape[0]
        rot = Rotary(config) if fresh else state["rot"]
        q = torch.tensor(x, dtype=dtype)[None, None]
        pos = torch.arange(seq)[None] + offset
        cos, sin = rot(q, pos)
        if family == "phi":                       # PhiAttention applies it to the leading rotary_ndims only
            r = cos.shape[-1]
            y, _ = mod.apply_rotary_pos_emb(q[..., :r], q[..., :r], cos, sin)
            return torch.cat([y, q[..., r:]], dim=-1)[0, 0]
        y, _ = mod.apply_rotary_pos_emb(q, q, cos, sin)
        return y[0, 0]
    return fn


def deepseek_kernel(offset=0, rope_parameters=None, nope=128, rope=64):
    """DeepSeek-V3 MLA query: q = cat(q_pass (128), q_rot (64)); q_rot by apply_rotary_pos_emb_interleave."""
    from transformers.models.deepseek_v3 import modeling_deepseek_v3 as mod
    from transformers import DeepseekV3Config
    params = rope_parameters or dict(rope_type="default", rope_theta=10000.0)
    config = DeepseekV3Config(hidden_size=512, num_attention_heads=2, qk_nope_head_dim=nope, qk_rope_head_dim=rope,
                              v_head_dim=128, rope_parameters=params, max_position_embeddings=163840)
    rot = mod.DeepseekV3RotaryEmbedding(config)

    def fn(x):
        q = torch.tensor(x, dtype=torch.float32)[None, None]
        q_pass, q_rot = torch.split(q, [nope, rope], dim=-1)
        cos, sin = rot(q, torch.arange(x.shape[0])[None] + offset)
        q_rot, _ = mod.apply_rotary_pos_emb_interleave(q_rot, q_rot, cos, sin)
        return torch.cat((q_pass, q_rot), dim=-1)[0, 0]
    return fn


def gptj_kernel(d=256, rotary_dim=64, offset=0, max_positions=70000):
    """GPT-J: embed_positions table (sin | cos), gathered at position_ids, rotate_every_two on (b, s, h, d)."""
    from transformers.models.gptj import modeling_gptj as mod
    table = mod.create_sinusoidal_positions(max_positions, rotary_dim)[None]

    def fn(x):
        seq = x.shape[0]
        q = torch.tensor(x, dtype=torch.float32)[None, :, None]        # (batch, seq, heads, d)
        pos = torch.arange(seq)[None] + offset
        sincos = torch.gather(table, 1, pos.unsqueeze(-1).repeat(1, 1, table.shape[-1]))
        sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)
        q_rot = mod.apply_rotary_pos_emb(q[..., :rotary_dim], sin, cos)
        return torch.cat([q_rot, q[..., rotary_dim:]], dim=-1)[0, :, 0]
    return fn


def meta_kernel(d=128, offset=0, theta=500000.0, end=8192):
    """Meta llama model.py: precompute_freqs_cis + apply_rotary_emb (torch.polar, view_as_complex)."""
    freqs = 1.0 / (theta ** (torch.arange(0, d, 2)[: (d // 2)].float() / d))
    t = torch.arange(end + offset, dtype=torch.float32)
    freqs_cis = torch.polar(torch.ones(len(t), d // 2), torch.outer(t, freqs))

    def fn(x):
        seq = x.shape[0]
        xq = torch.tensor(x, dtype=torch.float32)[None, :, None]       # (bsz, seqlen, heads, d)
        xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
        fc = freqs_cis[offset:offset + seq].view(1, seq, 1, d // 2)
        return torch.view_as_real(xq_ * fc).flatten(3).type_as(xq)[0, :, 0]
    return fn


def cache_kernel(d=128, base=10000.0, cache_rows=8192, offset=0, sign=1.0, scale=1.0, dtype=torch.float32,
                 angle_dtype=torch.float32):
    """A hand-written kernel: cos/sin cache precomputed once (float32), read at rows offset..offset+seq."""
    inv = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
    t = torch.arange(cache_rows, dtype=torch.float32)
    emb = torch.cat([torch.outer(t.to(angle_dtype), inv.to(angle_dtype))] * 2, dim=-1).float()
    cos_cache, sin_cache = emb.cos() * scale, sign * emb.sin() * scale

    def fn(x):
        seq = x.shape[0]
        if offset + seq > cache_rows:
            raise IndexError(f"cos/sin cache holds {cache_rows} positions, asked for {offset + seq}")
        q = torch.tensor(x).to(dtype)
        cos, sin = cos_cache[offset:offset + seq].to(dtype), sin_cache[offset:offset + seq].to(dtype)
        rh = torch.cat([-q[:, d // 2:], q[:, :d // 2]], dim=-1)
        return q * cos + rh * sin
    return fn


def torch64_kernel(d=128, base=10000.0, offset=0):
    inv = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float64) / d))

    def fn(x):
        q = torch.tensor(x)
        ang = torch.outer(torch.arange(x.shape[0], dtype=torch.float64) + offset, inv)
        emb = torch.cat([ang, ang], -1)
        return q * emb.cos() + torch.cat([-q[:, d // 2:], q[:, :d // 2]], -1) * emb.sin()
    return fn


def bf16_positions_kernel(d=128, base=10000.0, offset=0):
    """A bug seen in mixed-precision code: position_ids cast to bfloat16 before the angles (5000 -> 4992)."""
    inv = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))

    def fn(x):
        pos = (torch.arange(x.shape[0]) + offset).to(torch.bfloat16).float()
        emb = torch.cat([torch.outer(pos, inv)] * 2, -1)
        q = torch.tensor(x, dtype=torch.float32)
        return q * emb.cos() + torch.cat([-q[:, d // 2:], q[:, :d // 2]], -1) * emb.sin()
    return fn


def jax_kernel(d=128, base=10000.0, offset=0, dtype=None):
    import jax
    import jax.numpy as jnp

    @jax.jit
    def rope(x, positions):
        inv = 1.0 / (base ** (jnp.arange(0, d, 2, dtype=jnp.float32) / d))
        ang = positions[:, None].astype(jnp.float32) * inv[None]
        x1, x2 = x[:, : d // 2], x[:, d // 2:]
        c, s = jnp.cos(ang), jnp.sin(ang)
        return jnp.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)

    dt = dtype or jnp.float32
    return lambda x: rope(jnp.asarray(x, dt), jnp.arange(x.shape[0]) + offset)


def bhsd_only_kernel(d=128, offset=0):
    """Accepts (batch, heads, seq, d) only, as model code does (rotate_every_two indexes 4 axes)."""
    from transformers.models.gptj import modeling_gptj as mod
    table = mod.create_sinusoidal_positions(8192, d)

    def fn(q):
        q = torch.as_tensor(q, dtype=torch.float32)
        sin, cos = torch.split(table[offset:offset + q.shape[2]], d // 2, dim=-1)
        return mod.apply_rotary_pos_emb(q.transpose(1, 2), sin[None], cos[None]).transpose(1, 2)
    return fn


# ---- non-RoPE functions ---------------------------------------------------------------------------

def not_rope_cases(d=64):
    rng = np.random.default_rng(0)
    wpe = rng.standard_normal((4096, d)) * 0.1
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    slopes = 2.0 ** (-8 * np.arange(1, d + 1) / d)
    return [
        ("ALiBi-like bias on values (x - m*pos)", lambda x: x - slopes * np.arange(len(x))[:, None], d),
        ("ALiBi-like linear (x * (1 - m*pos))", lambda x: x * (1 - 1e-3 * np.arange(len(x))[:, None]), d),
        ("learned absolute PE added (x + wpe)", lambda x: x + wpe[:len(x)], d),
        ("identity", lambda x: x, d),
        ("random orthogonal mixing", lambda x: x @ Q.T, d),
        ("orthogonal mixing, same per row (x @ Q) + fixed rotation", lambda x: x @ Q, d),
        ("sinusoidal PE added (Vaswani)", lambda x: x + rr.sinusoidal(np.arange(len(x)), d), d),
        ("zeros", lambda x: np.zeros_like(x), d),
    ]


# ---- running ------------------------------------------------------------------------------------

RESULTS = []


def _first(msg):
    return " ".join(str(msg).split("\n")[:2])[:150]


def case(name, fn, d, want=None, expect=None, ident_kw=None, assert_kw=None, mismatch=None):
    """want: {field: value} identify must report (is_rope False -> must say not RoPE).
    expect: keywords for assert_rope_matches that must pass; mismatch: (keywords, words) that must fail naming words."""
    ident_kw = ident_kw or {}
    verdict, said = "ok", ""
    try:
        s = rr.identify(fn, d, **ident_kw) if want != "skip" else None
        said = _first(s)
        for k, v in (want if isinstance(want, dict) else {}).items():
            got = getattr(s, k)
            good = (math.isclose(got, v, rel_tol=1e-4) if isinstance(v, float) and got is not None
                    else got == v)
            if not good:
                verdict = "WRONG"
                said = f"{k}={got!r}, want {v!r} | " + said
        if expect is not None:
            try:
                rr.assert_rope_matches(fn, d, **(assert_kw or {}), **expect)
            except AssertionError as err:
                verdict, said = "ASSERT-FAILS", _first(err) + " | " + said
        if mismatch is not None:
            kw, words = mismatch
            try:
                rr.assert_rope_matches(fn, d, **{k: v for k, v in (assert_kw or {}).items() if k == "max_rows"}, **kw)
                verdict, said = "MISSED", "assert passed a planted mismatch | " + said
            except AssertionError as err:
                if not all(w in str(err) for w in words):
                    verdict, said = "UNNAMED", _first(err)
    except Exception as err:                                          # noqa: BLE001
        verdict = "ERROR" if want != "raises" else "ok"
        said = f"{type(err).__name__}: {_first(err)}"
        notes = getattr(err, "__notes__", [])
        if notes:
            said += " [note: " + notes[0][:90] + "]"
        if verdict == "ERROR" and "-v" in sys.argv:
            traceback.print_exc()
    RESULTS.append((name, verdict, said))
    print(f"{verdict:13s} {name:58s} {said}", flush=True)


def main():
    only = [a for a in sys.argv[1:] if not a.startswith("-")]
    run = lambda tag: not only or any(o in tag for o in only)  # noqa: E731

    D = 128
    L3 = dict(rope_type="llama3", rope_theta=500000.0, factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
              original_max_position_embeddings=8192)
    if run("llama"):
        for off in (0, 1, 4095, 5000, 65535):
            case(f"llama default 5e5 float32 offset {off}",
                 hf_kernel("llama", D, dict(rope_type="default", rope_theta=500000.0), off), D,
                 want=dict(pairing="half", rotary_dim=D, offset=off, rope_type="default", base=500000.0),
                 expect=dict(pairing="half", rotary_dim=D, offset=off, base=500000.0, rope_type="default"))
        case("llama linear x4 offset 5000", hf_kernel("llama", D, dict(rope_type="linear", rope_theta=1e4, factor=4.0), 5000),
             D, want=dict(offset=5000, rope_type="linear"), expect=dict(base=1e4, rope_type="linear", factor=4.0, offset=5000))
        yarn = dict(rope_type="yarn", rope_theta=1e4, factor=4.0, original_max_position_embeddings=4096)
        case("llama yarn x4 offset 5000", hf_kernel("llama", D, yarn, 5000, max_position_embeddings=16384), D,
             want=dict(offset=5000, rope_type="yarn"),
             expect=dict(base=1e4, rope_type="yarn", factor=4.0, original_max_position_embeddings=4096, offset=5000))
        case("llama yarn, attention factor dropped (planted)", hf_kernel("llama", D, dict(yarn, attention_factor=1.0),
             5000, max_position_embeddings=16384), D,
             mismatch=(dict(base=1e4, rope_type="yarn", factor=4.0, original_max_position_embeddings=4096), ["attention factor missing"]))
        case("llama llama3 offset 5000", hf_kernel("llama", D, L3, 5000), D, want=dict(offset=5000, rope_type="llama3"),
             expect=dict(base=5e5, rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                         original_max_position_embeddings=8192, offset=5000))
        case("llama llama3 offset 65535", hf_kernel("llama", D, L3, 65535), D, want=dict(offset=65535, rope_type="llama3"),
             expect=dict(base=5e5, rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                         original_max_position_embeddings=8192, offset=65535))
        dyn = dict(rope_type="dynamic", rope_theta=1e4, factor=2.0)
        case("llama dynamic (fresh module) offset 5000, hint", hf_kernel("llama", D, dyn, 5000, max_position_embeddings=2048),
             D, ident_kw=dict(base_hint=1e4), want=dict(offset=5000, rope_type="ntk"),   # dynamic at one length is ntk
             expect=dict(base=1e4, rope_type="dynamic", factor=2.0, max_position_embeddings=2048, offset=5000))
        case("llama dynamic (one stateful module) offset 5000, hint",
             hf_kernel("llama", D, dyn, 5000, fresh=False, max_position_embeddings=2048),
             D, ident_kw=dict(base_hint=1e4), want=dict(offset=5000, rope_type="ntk"),
             expect=dict(base=1e4, rope_type="dynamic", factor=2.0, max_position_embeddings=2048, offset=5000))
        case("llama dynamic below trained length (offset 0)", hf_kernel("llama", D, dyn, 0, max_position_embeddings=8192),
             D, want=dict(offset=0, rope_type="default"), expect=dict(base=1e4, rope_type="default", offset=0))
        r = D // 2
        sf = list(1.0 + 0.03 * np.arange(r))
        lr = dict(rope_type="longrope", rope_theta=1e4, short_factor=sf, long_factor=[2 * f for f in sf],
                  original_max_position_embeddings=4096)
        case("llama longrope short (offset 0), hint", hf_kernel("llama", D, lr, 0, max_position_embeddings=131072), D,
             ident_kw=dict(base_hint=1e4), want=dict(offset=0, rope_type="longrope"),
             expect=dict(base=1e4, rope_type="longrope", short_factor=sf, long_factor=[2 * f for f in sf],
                         original_max_position_embeddings=4096, max_position_embeddings=131072, offset=0))
        case("llama longrope long (offset 5000), hint", hf_kernel("llama", D, lr, 5000, max_position_embeddings=131072), D,
             ident_kw=dict(base_hint=1e4), want=dict(offset=5000, rope_type="longrope"),
             expect=dict(base=1e4, rope_type="longrope", short_factor=sf, long_factor=[2 * f for f in sf],
                         original_max_position_embeddings=4096, max_position_embeddings=131072, offset=5000))
    if run("neox") or run("phi") or run("glm") or run("cohere"):
        case("gpt_neox partial 0.25 offset 5000", hf_kernel("gpt_neox", D, dict(rope_type="default", rope_theta=1e4), 5000,
             rotary_factor=0.25), D, want=dict(pairing="half", rotary_dim=32, offset=5000, rope_type="default"),
             expect=dict(pairing="half", rotary_dim=32, offset=5000, base=1e4))
        case("phi partial 0.4 (d 80) offset 4095", hf_kernel("phi", 80, dict(rope_type="default", rope_theta=1e4), 4095,
             rotary_factor=0.4), 80, want=dict(pairing="half", rotary_dim=32, offset=4095, rope_type="default"),
             expect=dict(pairing="half", rotary_dim=32, offset=4095, base=1e4))
        case("glm partial 0.5 offset 5000", hf_kernel("glm", D, dict(rope_type="default", rope_theta=1e4), 5000,
             rotary_factor=0.5), D, want=dict(pairing="interleaved", rotary_dim=64, offset=5000, rope_type="default"),
             expect=dict(pairing="interleaved", rotary_dim=64, offset=5000, base=1e4))
        case("cohere interleaved offset 5000", hf_kernel("cohere", D, dict(rope_type="default", rope_theta=1e4), 5000), D,
             want=dict(pairing="interleaved", rotary_dim=D, offset=5000, rope_type="default"),
             expect=dict(pairing="interleaved", offset=5000, base=1e4))
    if run("gptj"):
        for off in (0, 5000):
            case(f"gptj interleaved rotary_dim 64 (d 256) offset {off}", gptj_kernel(offset=off), 256,
                 want=dict(pairing="interleaved", rotary_dim=64, offset=off, rope_type="default", base=1e4),
                 expect=dict(pairing="interleaved", rotary_dim=64, offset=off, base=1e4))
    if run("deepseek"):
        for off in (0, 5000):
            case(f"deepseek_v3 interleave->half, last 64 of 192, offset {off}", deepseek_kernel(off), 192,
                 want=dict(is_rope=True, rotary_dim=64, offset=off, rope_type="default"),
                 expect=dict(pairing="interleaved", rotary_dim=64, rotary_start=128, output_pairing="half",
                             offset=off, base=1e4),
                 mismatch=(dict(pairing="interleaved", rotary_dim=64, offset=off), ["different rotary_start", "output layout"]))
        case("deepseek_v3 rotary part alone (d 64), config= from_hf_config", deepseek_kernel(5000, nope=0), 64,
             want=dict(pairing="interleaved", rotary_start=0, output_pairing="half", offset=5000),
             expect=dict(config=rr.from_hf_config(dict(model_type="deepseek_v3", rope_theta=10000.0, hidden_size=512,
                                                        num_attention_heads=2, qk_rope_head_dim=64)),
                         output_pairing="half", offset=5000))
        ds_yarn = dict(rope_type="yarn", rope_theta=1e4, factor=40.0, original_max_position_embeddings=4096,
                       beta_fast=32.0, beta_slow=1.0, mscale=1.0, mscale_all_dim=1.0)
        case("deepseek_v3 yarn (mscale folded) offset 5000", deepseek_kernel(5000, ds_yarn), 192,
             want=dict(is_rope=True, rotary_dim=64, offset=5000, rope_type="yarn"),
             expect=dict(rotary_dim=64, rotary_start=128, output_pairing="half", offset=5000, base=1e4, rope_type="yarn",
                         factor=40.0, original_max_position_embeddings=4096, mscale=1.0, mscale_all_dim=1.0))
    if run("dtype"):
        for dt in (torch.bfloat16, torch.float16):
            name = str(dt).split(".")[1]
            for off in (0, 5000, 65535):
                case(f"llama {name} compute (cos/sin cast) offset {off}",
                     hf_kernel("llama", D, dict(rope_type="default", rope_theta=1e4), off, dtype=dt), D,
                     want=dict(pairing="half", rotary_dim=D, offset=off, rope_type="default", base=1e4),
                     expect=dict(pairing="half", rotary_dim=D, offset=off, base=1e4))   # cos.to(x.dtype): no defect
            l3 = dict(base=5e5, rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                      original_max_position_embeddings=8192)
            if dt == torch.float16:
                case(f"llama3 {name} compute offset 5000", hf_kernel("llama", D, L3, 5000, dtype=dt), D,
                     want=dict(rope_type="llama3", base=5e5, offset=5000), assert_kw=dict(phase_atol=0.02),
                     expect=dict(l3, offset=5000))
            else:   # bfloat16: the slowest pairs turn by less than the rounding over 4096 rows: not named
                case(f"llama3 {name} compute offset 5000", hf_kernel("llama", D, L3, 5000, dtype=dt), D,
                     want=dict(rope_type=None, offset=5000), assert_kw=dict(phase_atol=0.02),
                     expect=dict(l3, offset=5000))
            case(f"glm partial 0.5 {name} offset 5000", hf_kernel("glm", D, dict(rope_type="default", rope_theta=1e4), 5000,
                 dtype=dt, rotary_factor=0.5), D, want=dict(pairing="interleaved", rotary_dim=64, offset=5000,
                                                            rope_type="default"),
                 expect=dict(pairing="interleaved", rotary_dim=64, offset=5000, base=1e4), assert_kw=dict(phase_atol=0.02))
            case(f"gpt_neox partial 0.25 {name} offset 4095", hf_kernel("gpt_neox", D, dict(rope_type="default",
                 rope_theta=1e4), 4095, dtype=dt, rotary_factor=0.25), D,
                 want=dict(pairing="half", rotary_dim=32, offset=4095),
                 expect=dict(pairing="half", rotary_dim=32, offset=4095, base=1e4), assert_kw=dict(phase_atol=0.02))
            case(f"cache kernel {name} offset 100", cache_kernel(offset=100, dtype=dt), D,
                 want=dict(pairing="half", rotary_dim=D, offset=100), expect=dict(base=1e4, offset=100))
        case("cache kernel float32, angles in float16", cache_kernel(offset=100, angle_dtype=torch.float16), D,
             want=dict(pairing="half", rotary_dim=D, rope_type=None),
             mismatch=(dict(base=1e4, offset=100), ["angles computed in float16"]))
    if run("jax") and importlib.util.find_spec("jax") is None:
        print("skipped       jax cases: jax is not installed in this venv")
    elif run("jax"):
        for off in (0, 5000, 65535):
            case(f"jax jit float32 offset {off}", jax_kernel(offset=off), D,
                 want=dict(pairing="half", offset=off, rope_type="default", base=1e4),
                 expect=dict(pairing="half", offset=off, base=1e4))
        import jax.numpy as jnp
        case("jax jit bfloat16 input offset 5000", jax_kernel(offset=5000, dtype=jnp.bfloat16), D,
             want=dict(pairing="half", offset=5000, rope_type="default", base=1e4),
             expect=dict(pairing="half", offset=5000, base=1e4), assert_kw=dict(phase_atol=0.02))
    if run("bug"):
        for off in (300, 5000):              # bfloat16 holds integers exactly up to 256
            case(f"positions cast to bfloat16 (bug) offset {off}", bf16_positions_kernel(offset=off), D,
                 mismatch=(dict(offset=off, base=1e4), ["positions held in bfloat16"]))
        case("single pair (d=2) offset 5000", cache_kernel(d=2, offset=5000), 2, ident_kw=dict(max_rows=3192),
             want=dict(rotary_dim=2), assert_kw=dict(max_rows=3192), expect=dict(offset=5000, pairing="half"))
        case("d=127 (odd)", cache_kernel(), 127, want="raises")
    if run("meta"):
        for off in (0, 4095, 65535):
            case(f"meta torch.polar 5e5 offset {off}", meta_kernel(offset=off), D,
                 want=dict(pairing="interleaved", offset=off, rope_type="default", base=5e5),
                 expect=dict(pairing="interleaved", offset=off, base=5e5))
    if run("cache"):
        case("cos/sin cache 8192 read at 5000 (max_rows 3192)", cache_kernel(offset=5000), D,
             ident_kw=dict(max_rows=3192), assert_kw=dict(max_rows=3192),
             want=dict(offset=5000, rope_type="default"), expect=dict(offset=5000, base=1e4))
        case("cos/sin cache 8192 read at 5000 (max_rows default)", cache_kernel(offset=5000), D, want="raises")
        case("sin sign flipped (clockwise) offset 5000", cache_kernel(offset=5000, sign=-1.0), D,
             ident_kw=dict(max_rows=3192), assert_kw=dict(max_rows=3192), want=dict(offset=5000),
             mismatch=(dict(base=1e4, offset=5000), ["clockwise"]))
        att = 0.1 * math.log(4.0) + 1.0
        case("yarn mscale folded into cos/sin (default freqs)", cache_kernel(offset=7, scale=att), D,
             want=dict(offset=7, norm_scale=att), expect=dict(offset=7, base=1e4, norm_scale=att))
        case("torch float64 offset 1e6", torch64_kernel(offset=10**6), D,
             want=dict(offset=10**6, rope_type="default", angle_precision="float64"), expect=dict(offset=10**6, base=1e4))
    if run("notrope"):
        for name, fn, d in not_rope_cases():
            case(name, fn, d, want=dict(is_rope=False))
    if run("misuse"):
        k128 = hf_kernel("llama", D, dict(rope_type="default", rope_theta=1e4), 0)
        case("d=64 for a d=128 kernel", k128, 64, want="raises")
        case("d=256 for a d=128 kernel", k128, 256, want="raises")
        case("d=64 for a cache kernel of d=128", cache_kernel(), 64, want="raises")
        case("kernel returns (1, 1, seq, d)", lambda x: torch.tensor(x)[None, None], D, want="raises")
        case("kernel returns (seq, d/2)", lambda x: x[:, : D // 2], D, want="raises")
        case("kernel returns a tuple (q, k)", lambda x: (x, x), D, want="raises")
        case("kernel returns None", lambda x: None, D, want="raises")
        case("kernel raises", lambda x: 1 / 0, D, want="raises")
        case("kernel takes (b, h, s, d) only", bhsd_only_kernel(), D, want="raises")
        case("kernel takes torch tensors only", lambda x: x.float(), D, want="raises")
        pos = [0]

        def advancing(x):                     # a decode kernel whose cache position advances with every call
            y = cache_kernel(offset=pos[0])(x)
            pos[0] += len(x)
            return y
        case("kernel whose position advances every call", advancing, D, want="raises")
        one_pos = cache_kernel(offset=5000)
        case("rows treated as a batch at one position", lambda x: np.concatenate([one_pos(x[i:i + 1]) for i in
                                                                              range(len(x))]), D,
             want=dict(is_rope=True, linear=False))       # noted: "every row has the same angles: fn ignores the positions"
        case("kernel returns complex", lambda x: x.astype(complex), D, want="raises")
        case("kernel returns the transpose (d, seq) at d == seq", lambda x: x.T.copy(), 64, ident_kw=dict(seq=64),
             want=dict(is_rope=False))
    bad = [r for r in RESULTS if r[1] != "ok"]
    print(f"\n{len(RESULTS)} cases, {len(bad)} not ok")


if __name__ == "__main__":
    main()
