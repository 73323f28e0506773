"""Audit rope_ref.from_hf_config against every transformers family that has a *RotaryEmbedding module.

Not needed to run the tests.  Run where torch and transformers are installed, importing this worktree:
    PYTHONPATH=. python tests/data/audit_families.py [model_type ...] > tests/data/audit_families.txt

For each family (a transformers/models/<dir>/modeling_<dir>.py that defines a class ending in
``RotaryEmbedding``) it builds the family's v5 config class with its defaults
(``AutoConfig.for_model``), the family's rotary module and calls the family's ``apply_rotary_pos_emb``
(or ``apply_rotary_pos_emb_interleave`` when the config says ``rope_interleave``) on a fixed float32
query at positions offset .. offset+3 for offsets 0, 7, 5000, then compares with
``from_hf_config(config.to_dict()).rotate``; modules that apply M-RoPE (a ``mrope_section`` attribute) are
called with (temporal, height, width) ids that differ by axis, ``from_hf_config(...).rotate`` with the same.
MLA configs (``qk_rope_head_dim``) use ``apply_rotary_pos_emb_interleave`` unless ``rope_interleave`` is
False, as their attention does.  When the apply function refuses a query wider than the
module's cos/sin (the attention splits the head), the first ``rotary_dim`` features are rotated and
the rest passed through, as the attention of phi, stablelm and persimmon does.  Then the same for
rope_scaling variants (linear, dynamic, yarn with and without mscale, llama3, longrope).

Verdicts:
  ok                 from_hf_config(...).rotate equals the module within float32 tolerance, every case
  MISMATCH           it reads the config but disagrees with the module (the line says where)
  refused: ...       from_hf_config raises ValueError; with ``pairing=`` forced, which pairing would match
  not audited: ...   no text rotary module this script can drive generically (vision, complex
                     freqs_cis, ...): the reason
Last run: transformers 5.25.0, torch 2.13.0+cpu (tests/data/audit_families.txt).
What the module + apply function compute is what the attention does only where the attention calls
them this way; the families from_hf_config supports were also read by hand (tests/data/README.md).
"""

import importlib
import inspect
import math
import sys
import traceback
import warnings
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers import CONFIG_MAPPING

import rope_ref as rr

warnings.filterwarnings("ignore")
transformers.logging.set_verbosity_error()
OFFSETS = (0, 7, 5000)
ROWS = 4
MODELS = Path(transformers.__file__).parent / "models"


def positions(offset, mrope):
    """Row ids at offset..offset+3, or for M-RoPE modules (t, h, w) ids that differ by axis (3, 4)."""
    r = np.arange(ROWS)
    return np.stack([offset + r, offset + 2 * r + 1, offset + 3 * r + 2]) if mrope else offset + r


def is_mrope(module):
    return getattr(module, "mrope_section", None) is not None


def query(width):
    return np.random.default_rng(1234).standard_normal((ROWS, width)).astype(np.float32)


def families():
    out = []
    for f in sorted(MODELS.glob("*/modeling_*.py")):
        src = f.read_text()
        if "RotaryEmbedding(" in src and f.stem == f"modeling_{f.parent.name}":
            out.append(f.parent.name)
    return out


def config_types(dirname):
    """The config model_type(s) whose config class lives in models/<dirname>."""
    return [mt for mt, cls in CONFIG_MAPPING.items() if cls.__module__.split(".")[-2] == dirname]


def rotary_classes(modeling):
    names = [n for n in dir(modeling) if n.endswith("RotaryEmbedding") and isinstance(getattr(modeling, n), type)]
    names = [n for n in names if getattr(modeling, n).__module__ == modeling.__name__]
    return sorted(names, key=lambda n: ("Vision" in n or "Audio" in n or "Text" not in n and False, len(n)))


def text_config(config):
    try:
        return config.get_text_config()
    except Exception:
        return config


def head_width(config):
    if getattr(config, "qk_rope_head_dim", None):      # MLA: the rotary module covers the rotated part only
        return config.qk_rope_head_dim
    hd = getattr(config, "head_dim", None)
    if hd:
        return hd
    return config.hidden_size // config.num_attention_heads


def hf_outputs(modeling, config, module, width, layer_type=None):
    """{offset: (4, width) float32} from the module and the family's apply function."""
    apply = getattr(modeling, "apply_rotary_pos_emb", None)
    interleave = getattr(modeling, "apply_rotary_pos_emb_interleave", None)
    # MLA attention (qk_rope_head_dim) calls the interleave form unless rope_interleave says otherwise
    mla = getattr(config, "qk_rope_head_dim", None) is not None
    use_interleave = interleave is not None and (apply is None or getattr(config, "rope_interleave", None) or
                                                 mla and getattr(config, "rope_interleave", None) is None)
    fn = interleave if use_interleave else apply
    complex_fn = getattr(modeling, "apply_rotary_emb", None)
    if fn is None and complex_fn is not None and list(inspect.signature(complex_fn).parameters)[:3] == \
            ["xq", "xk", "freqs_cis"]:       # llama4, deepseek_v2: complex freqs_cis, pairs (x_2i, x_2i+1)
        return complex_outputs(modeling, module, complex_fn, width, layer_type)
    if fn is None:
        raise NotImplementedError("no apply_rotary_pos_emb in the modeling file")
    # transformers >= 5.25 wraps apply functions in a module (use_kernelized_func): its forward is the function
    params = list(inspect.signature(getattr(fn, "forward", fn)).parameters)
    if params[:4] != ["q", "k", "cos", "sin"] and params[:3] != ["x", "cos", "sin"]:
        raise NotImplementedError(f"apply function takes {params}")
    q = torch.from_numpy(query(width))[None, None]
    how = "interleave-apply" if use_interleave else "apply"
    outs = {}
    one_tensor = params[:3] == ["x", "cos", "sin"]
    for offset in OFFSETS:
        p = torch.from_numpy(positions(offset, is_mrope(module)))
        pos = p[:, None] if p.ndim == 2 else p[None]              # M-RoPE: (3, batch 1, rows)
        kw = {"layer_type": layer_type} if layer_type is not None else {}
        cos, sin = module(q, pos, **kw)
        if one_tensor:                                            # Gemma 4: apply_rotary_pos_emb(x, cos, sin)
            outs[offset] = fn(q, cos, sin)[0, 0].numpy()
            continue
        r = cos.shape[-1]
        if r == width:
            out = fn(q, q, cos, sin)[0]
        else:
            try:
                out = fn(q, q, cos, sin)[0]
                how = how.split(" (")[0] + " (apply splits)"
            except RuntimeError:
                rot = fn(q[..., :r], q[..., :r], cos, sin)[0]
                out = torch.cat([rot, q[..., r:]], dim=-1)
                how = how.split(" (")[0] + " (attention splits, first r)"
        outs[offset] = out[0, 0].numpy()
    return outs, how


def complex_outputs(modeling, module, fn, width, layer_type=None):
    heads_second = "deepseek_v2" in modeling.__name__            # (b, h, s, d); llama4: (b, s, h, d)
    outs = {}
    for offset in OFFSETS:
        q = torch.from_numpy(query(width))[None, None] if heads_second else torch.from_numpy(query(width))[None, :, None]
        pos = torch.arange(offset, offset + ROWS)[None]
        freqs = module(q, pos)
        out = fn(q, q, freqs)[0]
        outs[offset] = (out[0, 0] if heads_second else out[0, :, 0]).numpy()
    return outs, "complex apply_rotary_emb"


def compare(rcfg, outs, width):
    """Largest |rope_ref - module| over offsets, and whether it is within the float32 bound."""
    q = query(width).astype(np.float64)
    worst, ok = 0.0, True
    for offset, want in outs.items():
        ids = positions(offset, rcfg.axes is not None)
        got = rcfg.rotate(q, ids)
        pos = ids.max(axis=0) if ids.ndim == 2 else ids
        if rcfg.output_pairing == "half":        # MLA's apply_rotary_pos_emb_interleave: half layout out
            got = rr.to_half(got)
        theta = np.abs(rcfg.inv_freq(int(pos.max()) + 1)).max()     # clockwise configs: negative
        tol = (4 * 2.0 ** -24 * (pos[:, None] * theta + 1) * np.abs(q).max() * 1.5 + 1e-6) * max(rcfg.attention_factor, 1)
        err = np.abs(got - want)
        worst = max(worst, float(err.max()))
        ok &= bool(np.all(err <= tol))
    return ok, worst


def read(cfg_dict, layer_type=None, pairing=None):
    kw = {"pairing": pairing} if pairing else {}
    if layer_type is not None:
        kw["layer_type"] = layer_type
    return rr.from_hf_config(cfg_dict, **kw)


def verdict_for(modeling, config, module, layer_type=None, cfg_dict=None):
    cfg_dict = config.to_dict() if cfg_dict is None else cfg_dict
    try:
        rcfg = read(cfg_dict, layer_type)
        width = rcfg.head_dim
    except ValueError as err:
        width = head_width(config)
        msg = str(err).split(";")[0]
        if width is None:
            return f"refused: {msg}"
        try:
            outs, how = hf_outputs(modeling, config, module, width, layer_type)
        except Exception as e:
            return f"refused: {msg} | module: {type(e).__name__}: {str(e)[:80]}"
        fits = []
        for p in ("half", "interleaved"):
            try:
                if compare(read(cfg_dict, layer_type, p), outs, width)[0]:
                    fits.append(p)
            except Exception as e:
                pass
        return f"refused: {msg} | {how}; pairing= that matches: {fits or 'none'}"
    outs, how = hf_outputs(modeling, config, module, width, layer_type)
    ok, worst = compare(rcfg, outs, width)
    desc = f"{rcfg.pairing} r={rcfg.rotary_dim}/{rcfg.head_dim} base={rcfg.base:g} {rcfg.rope_type}"
    return ("ok" if ok else "MISMATCH") + f" ({desc}; max err {worst:.2g}; {how})"


VARIANTS = {
    "linear": {"rope_type": "linear", "factor": 2.0},
    "dynamic": {"rope_type": "dynamic", "factor": 2.0},
    "yarn": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024},
    "yarn-mscale": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024, "mscale": 0.707,
                    "mscale_all_dim": 1.0, "beta_fast": 32, "beta_slow": 1},
    "llama3": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 1024},
    "longrope": {"rope_type": "longrope", "original_max_position_embeddings": 1024},
    "alpha": {"rope_type": "dynamic", "factor": 1.0, "alpha": 1000.0},     # HunYuan's fixed-alpha NTK
}


def variant_config(model_type, base_config, name, rotary_pairs):
    rope = dict(VARIANTS[name])
    base = dict(base_config.rope_parameters)
    rope["rope_theta"] = base.get("rope_theta", 10000.0)
    if "partial_rotary_factor" in base:
        rope["partial_rotary_factor"] = base["partial_rotary_factor"]
    if name == "longrope":
        rng = np.random.default_rng(5)
        rope["short_factor"] = (1 + rng.random(rotary_pairs)).round(3).tolist()
        rope["long_factor"] = (1 + 8 * rng.random(rotary_pairs)).round(3).tolist()
    if model_type == "phimoe":            # its module reads these for every rope_type but default
        rope.update(short_mscale=1.243, long_mscale=1.243)
    kw = {k: v for k, v in base_config.to_dict().items() if k not in ("rope_parameters", "rope_scaling", "model_type",
                                                                       "transformers_version", "architectures")}
    kw.update(rope_parameters=rope, max_position_embeddings=4096)
    settable = not isinstance(getattr(type(base_config), "head_dim", None), property)     # Falcon derives it
    mla = getattr(base_config, "qk_rope_head_dim", None) is not None      # head_dim may alias qk_rope_head_dim
    if settable and not mla and kw.get("head_dim") is None and "hidden_size" in kw:   # transformers' yarn/dynamic/longrope read head_dim
        kw["head_dim"] = kw["hidden_size"] // kw["num_attention_heads"]
    return CONFIG_MAPPING[model_type](**kw)


OVERRIDES = {"glm4_moe": {"head_dim": 128},   # its defaults (4096 / 96 heads) give an odd rotary_dim
             "granitemoehybrid": {"position_embedding_type": "rope"},   # default None: no RoPE at all
             "esm": {"position_embedding_type": "rotary"},              # default "absolute": no RoPE
             # GLM-4V's text classes: defaults whose sections [8, 12, 12] do not fit the rotated half (GLM-4.1V's
             # config.json sets partial_rotary_factor 0.5 with head_dim 128)
             "glm4v_text": {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                                                "partial_rotary_factor": 0.5}},
             "glm4v_moe_text": {"head_dim": 128}}


def audit(dirname):
    try:
        modeling = importlib.import_module(f"transformers.models.{dirname}.modeling_{dirname}")
    except Exception as e:
        return [(dirname, f"not audited: import fails ({type(e).__name__})")]
    rows = []
    for mt in config_types(dirname) or [dirname]:
        try:
            config = CONFIG_MAPPING[mt](**OVERRIDES.get(mt, {}))
        except Exception as e:
            rows.append((mt, f"not audited: config class fails ({type(e).__name__}: {str(e)[:60]})"))
            continue
        tconf = text_config(config)
        module, cls_used = None, None
        for name in rotary_classes(modeling):
            for c in ((tconf, config) if tconf is not config else (config,)):
                try:
                    module = getattr(modeling, name)(config=c)
                    cls_used, config_used = name, c
                    break
                except Exception:
                    continue
            if module is not None:
                break
        if module is None:
            rows.append((mt, "not audited: no rotary class builds from the config"))
            continue
        label = mt if config_used is config else f"{mt} (text_config: {config_used.model_type})"
        rp = getattr(config_used, "rope_parameters", None) or {}
        if any(isinstance(v, dict) for v in rp.values()):
            for lt in sorted(k for k, v in rp.items() if isinstance(v, dict)):
                try:
                    rows.append((f"{label} [{lt}]", verdict_for(modeling, config_used, module, lt, config.to_dict())))
                except Exception as e:
                    rows.append((f"{label} [{lt}]", f"not audited: {type(e).__name__}: {str(e)[:100]}"))
            continue
        try:
            base_verdict = verdict_for(modeling, config_used, module, None, config.to_dict())
        except Exception as e:
            rows.append((label, f"not audited: {type(e).__name__}: {str(e)[:100]}"))
            continue
        rows.append((label, base_verdict))
        if not base_verdict.startswith("ok") or config_used is not config:
            continue
        pairs = rr.from_hf_config(config.to_dict()).rotary_dim // 2
        for v in [v for v in VARIANTS if v != "alpha" or mt.startswith("hunyuan")]:
            try:
                vc = variant_config(mt, config, v, pairs)
                vmod = getattr(modeling, cls_used)(config=vc)
                rows.append((f"{label} +{v}", verdict_for(modeling, vc, vmod)))
            except Exception as e:
                rows.append((f"{label} +{v}", f"not audited: {type(e).__name__}: {str(e)[:100]}"))
    return rows


def main(argv):
    dirs = argv or families()
    print(f"# transformers {transformers.__version__}, torch {torch.__version__}; {len(dirs)} families")
    for d in dirs:
        try:
            rows = audit(d)
        except Exception as e:
            rows = [(d, f"not audited: {type(e).__name__}: {str(e)[:100]}")]
            traceback.print_exc(file=sys.stderr)
        for name, verdict in rows:
            print(f"{name:45s} {verdict}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
