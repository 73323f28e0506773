"""A diffusion transformer's axial RoPE from its diffusers ``config.json`` (``_class_name``): each class's rotary
module (diffusers 0.42) gives axis ``a`` its own ``dim_a`` features and frequencies ``theta^(-2k/dim_a)``
(``get_1d_rotary_pos_embed``), concatenated in axis order, with interleaved pairs: ``RopeConfig.axial_sections``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ._validate import check_base, check_pairing, check_positive_int, closest_name
from .rope_config import RopeConfig


@dataclass(frozen=True)
class AxialFamily:
    """How one diffusers transformer class splits its heads into axes, and its ``__init__`` defaults."""

    head_dim: int = 128                 # the class's default attention_head_dim
    axes_key: str | None = None         # config key of the feature dims per axis (twice the pairs)
    axes_dims: tuple | Callable = ()    # their default; or, without a key, the module's split of head_dim
    theta: float = 10000.0              # the class's default theta, or the one its code fixes
    theta_key: str | None = None        # config key of theta; None: fixed by the code
    needs: str | None = None            # a flag that must be true for the model to apply RoPE


#: diffusers ``_class_name`` -> AxialFamily, read off diffusers 0.42.1's classes.
DIFFUSERS_FAMILIES = {
    "FluxTransformer2DModel": AxialFamily(axes_key="axes_dims_rope", axes_dims=(16, 56, 56)),
    "Flux2Transformer2DModel": AxialFamily(axes_key="axes_dims_rope", axes_dims=(32, 32, 32, 32), theta=2000.0,
                                           theta_key="rope_theta"),
    "HunyuanVideoTransformer3DModel": AxialFamily(axes_key="rope_axes_dim", axes_dims=(16, 56, 56), theta=256.0,
                                                  theta_key="rope_theta"),
    "QwenImageTransformer2DModel": AxialFamily(axes_key="axes_dims_rope", axes_dims=(16, 56, 56)),
    # WanRotaryPosEmbed: h = w = 2 floor(d/6) features, t the rest; get_3d_rotary_pos_embed: t = d/4, h = w = 3d/8
    "WanTransformer3DModel": AxialFamily(axes_dims=lambda d: (d - 4 * (d // 6), 2 * (d // 6), 2 * (d // 6))),
    "CogVideoXTransformer3DModel": AxialFamily(head_dim=64, axes_dims=lambda d: (d // 4, d // 8 * 3, d // 8 * 3),
                                               needs="use_rotary_positional_embeddings"),
}


def diffusers_rope_config(cfg, *, pairing=None, layer_type=None) -> RopeConfig:
    """The axial RoPE of the diffusers transformer ``cfg`` (a config.json dict with ``_class_name``)."""
    name = cfg["_class_name"]
    family = DIFFUSERS_FAMILIES.get(name) if isinstance(name, str) else None
    if family is None:
        raise ValueError(f"config has _class_name={name!r}, not a diffusers transformer rope_ref reads; known: "
                         f"{sorted(DIFFUSERS_FAMILIES)}{closest_name(str(name), DIFFUSERS_FAMILIES)}")
    if layer_type is not None:
        raise ValueError(f"layer_type={layer_type!r} was given, but {name} has one RoPE for every layer")
    if family.needs and not cfg.get(family.needs):
        raise ValueError(f"config has _class_name={name!r} with {family.needs}={cfg.get(family.needs)!r}: that "
                         "model applies no RoPE")
    head_dim = check_positive_int(cfg.get("attention_head_dim", family.head_dim), "config['attention_head_dim']")
    where = f"config[{family.axes_key!r}]" if family.axes_key else f"{name}'s split of attention_head_dim"
    dims = cfg.get(family.axes_key, family.axes_dims) if family.axes_key else family.axes_dims(head_dim)
    if isinstance(dims, (str, bytes)) or not hasattr(dims, "__len__") or \
            not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 and n % 2 == 0 for n in dims):
        raise ValueError(f"{where} must be positive even feature dims, one per axis, got {dims!r}")
    if sum(dims) != head_dim:
        raise ValueError(f"{where} = {list(dims)} sums to {sum(dims)} features; expected attention_head_dim = "
                         f"{head_dim} (the module's cos/sin cover the whole head)")
    theta = cfg.get(family.theta_key, family.theta) if family.theta_key else family.theta
    base = check_base(theta, f"rope_theta ({f'config[{family.theta_key!r}]' if family.theta_key else name})")
    return RopeConfig(model_type=name, head_dim=head_dim, rotary_dim=head_dim,
                      pairing="interleaved" if pairing is None else check_pairing(pairing), base=base,
                      rope_type="default", axial_sections=tuple(n // 2 for n in dims))
