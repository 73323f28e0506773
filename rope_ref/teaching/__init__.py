"""The teaching layer: what the notebooks plot, the figures, the interactive views and widgets.

Needs matplotlib (and ipywidgets for :mod:`~rope_ref.teaching.widgets` only); the oracle in
:mod:`rope_ref` does not.  Modules:

* ``quantities``        -- seeded q and k, the RoPE score, notebook 00's four-schemes task;
* ``precision``         -- angles computed in a narrow dtype, and what they cost (notebook 06);
* ``context_extension`` -- every scaling method on one model, side by side (notebook 05);
* ``spectrum``          -- which features turn, positional heads, semantic channels (notebooks 08, 10);
* ``base_bound``        -- Men et al.'s base a context length needs (notebooks 08, 10);
* ``vision_rope``       -- RoPE for images and video: 2-D axial scores, M-RoPE bands and ids (notebook 09);
* ``style``             -- the one figure style, and byte-stable rendering;
* ``figures``           -- every static figure, and ``write_all`` (``python -m rope_ref figures``);
* ``views``             -- interactive views updated in place (the sliders' figures);
* ``widgets``           -- ipywidgets sliders over the views;
* ``example_kernels``   -- RoPE kernels written the way outside code writes them (notebook 07);
* ``site``              -- the course as static offline HTML (``python -m rope_ref site --out DIR``).
"""
