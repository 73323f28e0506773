"""TODO(integration): remove with the last import of it (rope_attention); cast_back now lives in _validate."""

from ._validate import cast_back  # noqa: F401
