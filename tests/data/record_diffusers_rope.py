"""Record the rotary modules of diffusers' video and image transformers (not needed to run the tests).

Run where torch and diffusers are installed:
    python tests/data/record_diffusers_rope.py
No downloads: each rotary module is built alone with the published model's RoPE settings (they hold no weights,
except Mochi's learned frequencies, which are drawn here).  It writes ``diffusers_rope.npz`` (keys
``<case>/<name>``):

* ``sweep_cos``, ``sweep_sin`` ``(axes, 48, pairs)`` float32 (not Mochi): the module's cos and sin of every
  rotated pair with one axis at 0..47 and the others at 0 (one column per pair: tables repeated pair by pair
  read at their even columns, complex tables split) -- the ids passed (Flux, Flux.2), or the tokens of a
  48 x 48 x 48 latent video (frames, rows, columns after patching) the module is called on;
* ``pos`` ``(axes, rows)`` float64 and ``cos``, ``sin`` ``(rows, pairs)``: the same at the ids of a small grid
  moving every axis (3 x 5 x 6; Flux.2 3 x 3 x 3 x 3), the tokens (frame, row, column) of that 48^3 video;
* ``q`` ``(12, d)`` (seeded) and ``out``: q rotated at the small grid's first 12 rows by the family's own
  apply function (not Mochi); Flux and Flux.2 also ``out_bfloat16``: q in bfloat16 (a bfloat16 pipeline), the
  result of the apply function (float32 arithmetic, cast back to bfloat16) as float32;
* Mochi: ``pos_frequencies`` ``(3, heads, pairs)``, the learned parameter the module was given (cos/sin of head 0);
* ``flux_pipeline/image_ids`` ``(30, 3)``: ``FluxPipeline._prepare_latent_image_ids`` of a 5 x 6 packed latent;
  ``qwen_image_ids/image_cos``, ``image_sin`` ``(60, 64)`` and ``text_cos``, ``text_sin`` ``(4, 64)``:
  QwenEmbedRope's tables for a (2, 5, 6) latent video and 4 text tokens (for rope_ref.multiaxis's position ids).

and ``diffusers_rope.json``: versions and, per case, the module, its settings and the latent grid.
tests/test_identify_axes_diffusers.py replays them with numpy alone.
"""

import json
from pathlib import Path

import diffusers
import numpy as np
import torch
from diffusers.models.embeddings import apply_rotary_emb, get_3d_rotary_pos_embed
from diffusers.models.transformers import (transformer_flux, transformer_flux2, transformer_hunyuan_video,
                                           transformer_ltx, transformer_mochi, transformer_qwenimage,
                                           transformer_wan)

HERE = Path(__file__).parent
GRID = (3, 5, 6)                         # latent frames, rows, columns (after patching)
SWEEP = 48                               # each axis alone at 0..SWEEP-1 (the grid modules: a SWEEP^3 video)
Q_ROWS = 12                              # rows of q rotated


def grid_positions(frames, rows, cols):
    """(3, frames*rows*cols) float64: the (frame, row, column) of every token, frame by frame, row by row."""
    return np.stack([g.ravel() for g in np.meshgrid(np.arange(frames), np.arange(rows), np.arange(cols),
                                                    indexing="ij")]).astype(np.float64)


def query(rows, d):
    return torch.from_numpy(np.random.default_rng(4321).standard_normal((rows, d)).astype(np.float32))


def per_pair(cos, sin):
    """(rows, pairs) float32 cos/sin of repeat-interleaved (..., rows, d) tables (each column twice in place)."""
    cos, sin = cos.reshape(-1, cos.shape[-1]), sin.reshape(-1, sin.shape[-1])
    assert torch.equal(cos[:, 0::2], cos[:, 1::2]) and torch.equal(sin[:, 0::2], sin[:, 1::2])
    return cos[:, 0::2].float().numpy(), sin[:, 0::2].float().numpy()


def diffusers_apply(q, cos, sin):
    """embeddings.apply_rotary_emb (Flux, HunyuanVideo, CogVideoX, Wan's processors: pairs (2i, 2i + 1))."""
    return apply_rotary_emb(q[None, None], (cos, sin), use_real=True, use_real_unbind_dim=-1)[0, 0]


def on_grid(cos, sin, q_apply, d=128):
    """The recording of a module called on the (SWEEP,)*3 latent video, token (f, r, c) at row (f*S + r)*S + c, as
    per-pair (rows, pairs) tables ``cos``, ``sin``: the sweeps and the small grid's rows, q rotated by
    ``q_apply(q, rows)`` (q (Q_ROWS, d) at the small grid's first rows)."""
    small = grid_positions(*GRID).astype(np.int64)
    rows = (small[0] * SWEEP + small[1]) * SWEEP + small[2]
    steps = np.arange(SWEEP)
    sweep_rows = [steps * SWEEP * SWEEP, steps * SWEEP, steps]
    q = query(Q_ROWS, d)
    return {"pos": small.astype(np.float64), "cos": cos[rows], "sin": sin[rows],
            "sweep_cos": np.stack([cos[r] for r in sweep_rows]), "sweep_sin": np.stack([sin[r] for r in sweep_rows]),
            "q": q.numpy(), "out": q_apply(q, rows[:Q_ROWS]).float().numpy()}


def flux(axes_dim, theta, cls):
    """FluxPosEmbed / Flux2PosEmbed on ids (rows, axes): each axis alone 0..SWEEP-1 (text ids are (0, ...)),
    and the ids of a small grid moving every axis."""
    axes = len(axes_dim)
    module = cls(theta=theta, axes_dim=list(axes_dim))
    sizes = (3, 5, 6) if axes == 3 else (3, 3, 3, 3)
    ids = np.stack([g.ravel() for g in np.meshgrid(*map(np.arange, sizes), indexing="ij")]).astype(np.float64)
    cos, sin = module(torch.from_numpy(ids.T.copy()))
    q = query(Q_ROWS, sum(axes_dim))
    sweeps = [per_pair(*module(torch.from_numpy(np.outer(np.arange(SWEEP), np.eye(axes)[a]))))
              for a in range(axes)]
    return {"pos": ids, **dict(zip(("cos", "sin"), per_pair(cos, sin))),
            "sweep_cos": np.stack([c for c, _ in sweeps]), "sweep_sin": np.stack([s for _, s in sweeps]),
            "q": q.numpy(), "out": diffusers_apply(q, cos[:Q_ROWS], sin[:Q_ROWS]).numpy(),
            "out_bfloat16": diffusers_apply(q.bfloat16(), cos[:Q_ROWS], sin[:Q_ROWS]).float().numpy()}


def hunyuan_video():
    """HunyuanVideoRotaryPosEmbed(patch 1, rope_dim 16/56/56, theta 256)."""
    cos, sin = transformer_hunyuan_video.HunyuanVideoRotaryPosEmbed(1, 1, [16, 56, 56], 256.0)(
        torch.zeros(1, 1, SWEEP, SWEEP, SWEEP))
    return on_grid(*per_pair(cos, sin), lambda q, rows: diffusers_apply(q, cos[rows], sin[rows]))


def wan():
    """WanRotaryPosEmbed(head_dim 128, patch (1, 2, 2), max_seq_len 1024): t 128 - 4*21 = 44, h = w = 42."""
    cos, sin = transformer_wan.WanRotaryPosEmbed(128, (1, 2, 2), 1024)(torch.zeros(1, 1, SWEEP, 2 * SWEEP, 2 * SWEEP))
    cos, sin = cos[0, :, 0], sin[0, :, 0]
    return on_grid(*per_pair(cos, sin), lambda q, rows: diffusers_apply(q, cos[rows], sin[rows]))


def cogvideox():
    """get_3d_rotary_pos_embed(head_dim 64, crop = the grid, as CogVideoX's pipeline at its base size)."""
    cos, sin = get_3d_rotary_pos_embed(64, ((0, 0), (SWEEP, SWEEP)), (SWEEP, SWEEP), SWEEP, use_real=True)
    return on_grid(*per_pair(cos, sin), lambda q, rows: diffusers_apply(q, cos[rows], sin[rows]), d=64)


def qwen_image():
    """QwenEmbedRope(theta 10000, axes_dim 16/56/56, scale_rope=True): rows and columns centred on 0, frames
    from the module's frame index 0; apply_rotary_emb_qwen(use_real=False)."""
    module = transformer_qwenimage.QwenEmbedRope(theta=10000, axes_dim=[16, 56, 56], scale_rope=True)
    freqs, _ = module([(SWEEP, SWEEP, SWEEP)], device=torch.device("cpu"), max_txt_seq_len=4)
    apply = transformer_qwenimage.apply_rotary_emb_qwen
    return on_grid(freqs.real.numpy(), freqs.imag.numpy(),
                   lambda q, rows: apply(q[None, :, None], freqs[rows], use_real=False)[0, :, 0])


def mochi():
    """MochiRoPE (base 192 x 192) with drawn learned frequencies (3, 2 heads, 64 pairs), head 0, on the small
    grid (its positions are centred and scaled by sqrt(192^2 / (rows * columns)))."""
    pos_frequencies = torch.from_numpy(np.random.default_rng(7).normal(0, 0.01, (3, 2, 64)).astype(np.float32))
    cos, sin = transformer_mochi.MochiRoPE()(pos_frequencies, *GRID, device=torch.device("cpu"), dtype=torch.float32)
    return {"pos": grid_positions(*GRID), "cos": cos[:, 0].numpy(), "sin": sin[:, 0].numpy(),
            "pos_frequencies": pos_frequencies.numpy()}


def ltx_video():
    """LTXVideoRotaryPosEmbed(dim 128, LTX-Video's bases 20/2048/2048, theta 10000) with the pipeline's
    rope_interpolation_scale (8/25, 32, 32): positions normalised, then mapped to [-1, 1]; its own apply."""
    cos, sin = transformer_ltx.LTXVideoRotaryPosEmbed(128)(torch.zeros(1, 1, 128), SWEEP, SWEEP, SWEEP,
                                                            rope_interpolation_scale=(8 / 25, 32, 32))
    cos, sin = cos[0], sin[0]
    assert torch.equal(cos[:, :2], torch.ones_like(cos[:, :2])) and not sin[:, :2].any()     # padding
    return on_grid(*per_pair(cos[:, 2:], sin[:, 2:]),
                   lambda q, rows: transformer_ltx.apply_rotary_emb(q[None], (cos[None, rows], sin[None, rows]))[0])


def position_ids():
    """The ids the pipelines give these modules: FluxPipeline._prepare_latent_image_ids for a 5 x 6 latent (after
    packing), and QwenEmbedRope's tables of a (2, 5, 6) latent video and 4 text tokens (its ids are implicit)."""
    from diffusers.pipelines.flux.pipeline_flux import FluxPipeline
    flux_ids = FluxPipeline._prepare_latent_image_ids(1, 5, 6, torch.device("cpu"), torch.float32)
    module = transformer_qwenimage.QwenEmbedRope(theta=10000, axes_dim=[16, 56, 56], scale_rope=True)
    image, text = module([(2, 5, 6)], device=torch.device("cpu"), max_txt_seq_len=4)
    return {"flux_pipeline/image_ids": flux_ids.numpy(),
            "qwen_image_ids/image_cos": image.real.numpy(), "qwen_image_ids/image_sin": image.imag.numpy(),
            "qwen_image_ids/text_cos": text.real.numpy(), "qwen_image_ids/text_sin": text.imag.numpy()}


CASES = {
    "flux": (lambda: flux((16, 56, 56), 10000, transformer_flux.FluxPosEmbed),
             "FluxPosEmbed(theta=10000, axes_dim=[16, 56, 56]) (FLUX.1's axes_dims_rope), embeddings.apply_rotary_emb"),
    "flux2": (lambda: flux((32, 32, 32, 32), 2000, transformer_flux2.Flux2PosEmbed),
              "Flux2PosEmbed(theta=2000, axes_dim=[32, 32, 32, 32]) (FLUX.2's rope_theta, axes_dims_rope)"),
    "hunyuan_video": (hunyuan_video, "HunyuanVideoRotaryPosEmbed(1, 1, [16, 56, 56], theta=256)"),
    "wan": (wan, "WanRotaryPosEmbed(attention_head_dim=128, patch_size=(1, 2, 2), max_seq_len=1024)"),
    "cogvideox": (cogvideox, "get_3d_rotary_pos_embed(64, crops ((0, 0), (5, 6)), grid (5, 6), 3 frames)"),
    "qwen_image": (qwen_image, "QwenEmbedRope(theta=10000, axes_dim=[16, 56, 56], scale_rope=True), "
                               "apply_rotary_emb_qwen(use_real=False)"),
    "mochi": (mochi, "MochiRoPE(base_height=192, base_width=192) with pos_frequencies ~ N(0, 0.01)"),
    "ltx_video": (ltx_video, "LTXVideoRotaryPosEmbed(dim=128) with rope_interpolation_scale (8/25, 32, 32); "
                             "features 0, 1 padding (cos 1, sin 0)"),
}


def main():
    arrays, meta = {}, {}
    for case, (build, what) in CASES.items():
        with torch.no_grad():
            recorded = build()
        arrays.update({f"{case}/{k}": np.asarray(v) for k, v in recorded.items()})
        meta[case] = {"module": what, "pairs": int(recorded["cos"].shape[1]), "rows": int(recorded["pos"].shape[1])}
    with torch.no_grad():
        arrays.update(position_ids())
    np.savez_compressed(HERE / "diffusers_rope.npz", **arrays)
    info = {"diffusers": diffusers.__version__, "torch": torch.__version__, "latent_grid": GRID, "cases": meta}
    (HERE / "diffusers_rope.json").write_text(json.dumps(info, indent=1) + "\n")


if __name__ == "__main__":
    main()
