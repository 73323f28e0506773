"""RoPE for images and video (notebook 09): 2-D axial RoPE's score against the offset of two patches and M-RoPE's
layouts in Qwen2-VL and Qwen3-VL, all from :mod:`rope_ref`."""

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, Rectangle

from .._validate import check_number, check_positive_int
from ..forms import rotate
from ..multiaxis import MROPE_AXES, axial_frequencies, grid_positions, mrope_frequencies
from .quantities import _qk, random_qk
from .style import PALETTE, VIEW_DPI, new_axes
from .views import View, _minus

#: the view's image: GRID x GRID patches, head dimension D_GRID, Heo et al.'s RoPE-Axial base 100.
GRID, D_GRID, BASE_GRID = 14, 64, 100.0
#: the published M-RoPE layouts the notebook compares (head_dim 128): sections, base (rope_theta), interleaved.
MROPE_MODELS = {"Qwen2-VL": ([16, 24, 24], 1e6, False), "Qwen3-VL": ([24, 20, 20], 5e6, True)}
AXIS_COLORS = PALETTE[:3]


def _axial_score(q, k, q_xy, k_xy) -> float:
    """q ``(d,)`` at patch q_xy = (x, y) against k ``(d,)`` at patch k_xy under 2-D axial RoPE (base BASE_GRID)."""
    positions = np.array([[q_xy[0], k_xy[0]], [q_xy[1], k_xy[1]]], dtype=np.float64)
    q_rotated, k_rotated = rotate(np.stack([q, k]), positions, inv_freq=axial_frequencies(q.size, base=BASE_GRID))
    return float(q_rotated @ k_rotated)


def relative_score_map(q, k, radius: int, *, base: float = BASE_GRID) -> np.ndarray:
    """The 2-D axial score (timm / Heo et al.: first half of the pairs on x, second on y) of q at patch (0, 0) and k
    at (dx, dy) for dx, dy in -radius..radius: float64 ``(2r+1, 2r+1)``, row dy, column dx."""
    q, k = (a.astype(np.float64) for a in _qk(q, k, one_d=True))
    if q.size % 4:
        raise ValueError(f"q and k must have d divisible by 4 (half the pairs on x, half on y), got d={q.size}")
    radius = check_positive_int(radius, "radius")
    size = 2 * radius + 1                               # k at (dx, dy) row by row: x (dx) first
    keys = rotate(np.broadcast_to(k, (size * size, k.size)), grid_positions(size, size, indexing="xy") - radius,
                  inv_freq=axial_frequencies(k.size, base=base))
    return (keys @ q).reshape(size, size)               # q at the origin is not rotated


def fig_mrope_layout() -> Figure:
    """Which pairs serve t, h and w: Qwen2-VL's contiguous sections against Qwen3-VL's interleaving (head_dim 128)."""
    d = 128
    fig, ax = new_axes(9, 2.9, gridlines=False)
    rows = [np.argmax(mrope_frequencies(d, sections, base=base, interleaved=interleaved) != 0, axis=1)   # pair -> axis
            for sections, base, interleaved in MROPE_MODELS.values()]
    ax.imshow(np.array(rows), cmap=ListedColormap(AXIS_COLORS), vmin=-0.5, vmax=2.5, aspect="auto",
              interpolation="nearest")
    ax.set_yticks(range(len(MROPE_MODELS)), [f"{name}\n{layout[0]}" for name, layout in MROPE_MODELS.items()])
    ax.set_xticks(sorted({0, d // 2 - 1, *np.cumsum(MROPE_MODELS["Qwen2-VL"][0][:2]).tolist(), d // 4}))
    ax.set_xticks(np.arange(-0.5, d // 2, 1), minor=True)
    ax.set_yticks(np.arange(-0.5, len(MROPE_MODELS), 1), minor=True)
    ax.grid(which="minor", color="white", lw=0.6)
    ax.tick_params(which="minor", length=0)
    ax.legend([Rectangle((0, 0), 1, 1, color=c) for c in AXIS_COLORS], [f"{a} ($p_{a[0]}$)" for a in MROPE_AXES],
              loc="upper center", ncols=3, bbox_to_anchor=(0.5, -0.32), frameon=False)
    ax.set(xlabel=r"pair $j$ (fast $\rightarrow$ slow: $\theta_j = \mathrm{base}^{-2j/d}$)",
           title=f"M-RoPE: the axis each of the {d // 2} pairs turns with (head_dim {d})")
    return fig


class GridScoreView(View):
    """A query patch and a key patch on a GRID x GRID image (left) and the 2-D axial score as a function of
    their offset (dx, dy) (right).  Moving the query (qx, qy) moves both patches and leaves the marker
    on the heat map, and the score, where they are: the score depends on (dx, dy) only."""

    radius = GRID - 1

    def build(self):
        self.q = self.k = random_qk(D_GRID)[0]          # a key with the query's content
        self.score_map = relative_score_map(self.q, self.k, self.radius)
        self.fig, (self.ax_grid, self.ax_map) = new_axes(9.5, 4.3, 1, 2, dpi=VIEW_DPI, gridlines=False,
                                                         width_ratios=[1, 1.2])
        ax = self.ax_grid
        lo, hi = -4, GRID + 3             # 4 patches around the image: a key further out is off the picture, not wrong
        ax.add_patch(Rectangle((-0.5, -0.5), GRID, GRID, facecolor="0.93", edgecolor="0.5", lw=1))
        for i in range(GRID + 1):
            ax.plot([i - 0.5, i - 0.5], [-0.5, GRID - 0.5], color="white", lw=0.8)
            ax.plot([-0.5, GRID - 0.5], [i - 0.5, i - 0.5], color="white", lw=0.8)
        self.q_patch = ax.add_patch(Rectangle((0, 0), 1, 1, color=PALETTE[0]))
        self.k_patch = ax.add_patch(Rectangle((0, 0), 1, 1, color=PALETTE[1]))
        self.arrow = ax.add_patch(FancyArrowPatch((0, 0), (1, 1), arrowstyle="-|>", mutation_scale=14, color="k"))
        ax.set(xlim=(lo - 0.5, hi + 0.5), ylim=(hi + 0.5, lo - 0.5), aspect="equal", xlabel="patch column $x$",
               ylabel="patch row $y$", title=f"{GRID} x {GRID} patches: query (blue), key (orange)")
        r = self.radius
        im = self.ax_map.imshow(self.score_map, extent=(-r - 0.5, r + 0.5, r + 0.5, -r - 0.5), cmap="viridis")
        self.fig.colorbar(im, ax=self.ax_map, label=r"$q_m \cdot k_n$")
        self.marker, = self.ax_map.plot([0], [0], "s", ms=9, mfc="none", mec="C3", mew=2)
        self.ax_map.set(xlabel=r"$\Delta x = x_n - x_m$", ylabel=r"$\Delta y = y_n - y_m$",
                        title="score against the offset only")
        self.title = self.fig.suptitle(" ")
        self.dynamic = (self.q_patch, self.k_patch, self.arrow, self.marker, self.title)

    def draw(self, qx: int = 3, qy: int = 4, dx: int = 2, dy: int = -1) -> str:
        r = self.radius
        qx, qy, dx, dy = (check_number(v, name, f"an integer in {lo}..{r}", lambda v: lo <= v <= r)
                          for name, v, lo in (("qx", qx, 0), ("qy", qy, 0), ("dx", dx, -r), ("dy", dy, -r)))
        kx, ky = qx + dx, qy + dy
        self.q_patch.set_xy((qx - 0.5, qy - 0.5))
        self.k_patch.set_xy((kx - 0.5, ky - 0.5))
        self.arrow.set_positions((qx, qy), (kx, ky))
        self.marker.set_data([dx], [dy])
        value = _axial_score(self.q, self.k, (qx, qy), (kx, ky))               # at absolute positions
        map_value = float(self.score_map[dy + r, dx + r])                      # from the offset alone
        self.title.set_text(_minus(f"query ({qx}, {qy}), key ({kx}, {ky}): offset ({dx}, {dy}), score {value:.4f}"))
        outside = "" if 0 <= kx < GRID and 0 <= ky < GRID else " (outside the image: RoPE does not mind)"
        return (f"query patch ({qx}, {qy}), key patch ({kx}, {ky}){outside}: q_m . k_n = {value:.6f}; "
                f"heat map at ({dx}, {dy}) = {map_value:.6f}")
