"""The teaching layer: what the notebooks plot, the figures, the interactive views and widgets.

Needs matplotlib (and ipywidgets for :mod:`~rope_ref.teaching.widgets`); the oracle in
:mod:`rope_ref` does not.  Modules:

* ``quantities``        -- seeded q and k, the RoPE score, notebook 00's four-schemes task;
* ``precision``         -- angles computed in a narrow dtype, and what they cost (notebook 06);
* ``context_extension`` -- every scaling method on one model, side by side (notebook 05);
* ``style``             -- the one figure style, and byte-stable rendering;
* ``figures``           -- every static figure, and ``write_all`` (``python -m rope_ref figures``);
* ``views``             -- interactive views updated in place (the sliders' figures);
* ``widgets``           -- ipywidgets sliders over the views;
* ``example_kernels``   -- RoPE kernels written the way outside code writes them (notebook 07);
* ``site``              -- the course as static offline HTML (``python -m rope_ref site --out DIR``).
"""
