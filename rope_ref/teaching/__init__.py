"""The teaching layer: what the notebooks plot, the figures, the interactive views and widgets, the exercise
checkers and the course site (one module per topic: docs/architecture.md).  Needs matplotlib (and ipywidgets for
:mod:`~rope_ref.teaching.widgets` only); the oracle in :mod:`rope_ref` does not.
"""
