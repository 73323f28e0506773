"""Structure: which features pair up, where the pairs are written, and each row's 2x2 blocks [[cos, -sin],
[sin, cos]] (eq 34), read from the matrices fn applies to each row (docs/identify_internals.md, "1. Structure")."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .tolerances import STRUCTURE_RTOL


@dataclass
class Structure:
    """The pairs fn rotates and the blocks it applies to them (a rotary embedding's shape, before angles)."""

    pairs: list                  # (i, j) input features of each pair, in pairing order
    pairing: str                 # "interleaved", "half" or "other"
    rotary_dim: int
    rotary_start: int            # first rotated feature
    out: tuple                   # (oa, ob): the output features each pair is written to
    output_pairing: str | None   # None: written in place
    output_pairs: list | None
    cos: np.ndarray              # (seq, pairs): scaled cos of each pair's angle at each row
    sin: np.ndarray
    norm_scale: float            # median |output| / |input| of a pair
    scale_error: float           # max relative spread of that scale over rows and pairs
    notes: list = field(default_factory=list)


def read_structure(matrices) -> Structure | str:
    """The :class:`Structure` of the matrices ``(seq, d, d)`` fn applies to each row, or why it is not RoPE (a str)."""
    perm = _output_order(matrices)
    if perm is not None:
        matrices = matrices[:, perm]
    pairs, passthrough, why = _find_pairs(matrices)
    if pairs is None:
        return why
    if passthrough and np.abs(matrices[:, passthrough, passthrough] - 1).max() > STRUCTURE_RTOL:
        return f"features {passthrough[:6]} are scaled, not rotated or passed through"
    if not pairs:
        return "no pair of features is rotated at any row: fn leaves every feature in place (it ignores the positions)"
    notes, n, d = [], len(pairs), matrices.shape[-1]
    r = 2 * n
    rotated = sorted(i for p in pairs for i in p)
    start = rotated[0] if rotated == list(range(rotated[0], rotated[0] + r)) else 0
    proportional = n < d // 2 and sorted(pairs) == [(p, p + d // 2) for p in range(n)]    # Gemma 4's, in naming
    if rotated != list(range(start, start + r)) and not proportional:
        notes.append(f"the rotated features are not {r} consecutive ones: passthrough features {passthrough[:8]}")
    elif start:
        notes.append(f"the rotated features are {start}..{start + r - 1}, not the leading {r} (rotary_start={start})")
    pairing, pairs = _order_pairs(pairs, r, start)
    out_pairing = out_pairs = None
    if perm is not None:
        out_pairs = [(int(perm[i]), int(perm[j])) for i, j in pairs]
        out_pairing = _order_pairs(sorted(out_pairs), r, start)[0] if sorted(perm[rotated]) == rotated else "other"
        shown = ", ".join(f"{p} -> {o}" for p, o in zip(pairs[:2], out_pairs[:2]))
        notes.append(f"the rotated pairs are written to other features ({out_pairing} layout): {shown}, ...; "
                     "q.k is unchanged only if q and k are written alike")
    ia, ib = np.array(pairs).T
    out = (ia, ib) if perm is None else (perm[ia], perm[ib])
    c1, c2 = matrices[:, ia, ia], matrices[:, ib, ib]
    s1, s2 = matrices[:, ib, ia], -matrices[:, ia, ib]
    unlike = np.abs(c1 - c2).max(0) + np.abs(s1 - s2).max(0)         # per pair
    if unlike.max() > STRUCTURE_RTOL * np.abs(matrices).max():
        return ("a pair's 2x2 block is not a (scaled) rotation [[c, -s], [s, c]] (eq 34) "
                f"(pair {pairs[int(np.argmax(unlike))]})")
    c, s = (c1 + c2) / 2, (s1 + s2) / 2
    scales = np.hypot(c, s)                                # (seq, pairs)
    norm_scale = float(np.median(scales))
    if norm_scale == 0:
        return "fn maps the rotated features to zero"
    scale_error = float(np.abs(scales / norm_scale - 1).max())
    if scale_error > STRUCTURE_RTOL:
        return f"the norm of a pair changes with position by up to {scale_error:.1%}"
    return Structure(pairs=pairs, pairing=pairing, rotary_dim=r, rotary_start=start, out=out, cos=c, sin=s,
                     output_pairing=out_pairing, output_pairs=out_pairs, norm_scale=norm_scale, scale_error=scale_error,
                     notes=notes)


def _find_pairs(matrices):
    """``(pairs, passthrough, reason)`` from the off-diagonal entries non-zero at some row: a feature with no partner
    passes through, one with one forms a pair; more is not RoPE (``reason``, pairs None)."""
    off = _depends(matrices) & ~np.eye(matrices.shape[-1], dtype=bool)
    linked = off | off.T
    crowded = np.flatnonzero(linked.sum(axis=1) > 1)
    if crowded.size:
        partners = np.flatnonzero(linked[crowded[0]]).tolist()
        return None, None, f"feature {crowded[0]} mixes with features {partners[:6]}: not pairwise rotations"
    pairs = [(int(j), int(k)) for j, k in np.argwhere(np.triu(linked))]
    return pairs, np.flatnonzero(~linked.any(axis=1)).tolist(), ""


def _depends(matrices) -> np.ndarray:
    """``dep[i, j]``: output i depends on input j at some row (structural zeros are exact, even in float16)."""
    return np.abs(matrices).max(axis=0) > 1e-12 * max(np.abs(matrices).max(), 1e-300)


def _output_order(matrices):
    """perm with matrices[:, perm] mapping every pair onto itself, when a kernel writes its pairs elsewhere (eq 34
    then a permutation, as DeepSeek's apply_rotary_pos_emb_interleave); None when in place, or not pairs."""
    d = matrices.shape[-1]
    dep = _depends(matrices)
    if np.array_equal(dep, dep.T):
        return None
    perm = np.full(d, -1)
    for j in range(d):
        outs = np.flatnonzero(dep[:, j])
        ins = np.flatnonzero(dep[outs].any(axis=0))
        if len(outs) == 1 and outs[0] == j and len(ins) == 1:
            perm[j] = j                                          # passed through in place
        elif len(outs) == 2 and len(ins) == 2 and dep[np.ix_(outs, ins)].all():
            if j == ins[0]:                                      # once per pair (j, k), j < k
                k, (a, b) = ins[1], outs
                block = matrices[:, [a, b]][:, :, [j, k]]        # [[c, -s], [s, c]] when a holds x_j cos
                straight = np.abs(block[:, 0, 0] - block[:, 1, 1]) + np.abs(block[:, 1, 0] + block[:, 0, 1])
                swapped = np.abs(block[:, 1, 0] - block[:, 0, 1]) + np.abs(block[:, 0, 0] + block[:, 1, 1])
                perm[[j, k]] = (a, b) if straight.max() <= swapped.max() else (b, a)
        else:
            return None
    return perm if len(set(perm.tolist())) == d else None


def _order_pairs(pairs, r, start=0):
    """Pairing name within the rotated features start..start + r - 1, and the pairs in that order."""
    if pairs == [(start + 2 * p, start + 2 * p + 1) for p in range(r // 2)]:
        return "interleaved", pairs
    if sorted(pairs) == [(start + p, start + p + r // 2) for p in range(r // 2)]:
        return "half", sorted(pairs)
    return "other", sorted(pairs)

