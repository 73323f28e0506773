"""A model config as :func:`rope_ref.from_hf_config` reads it: JSON values, arrays as tuples, read by load_config."""

import json
import numbers
import os
from collections.abc import Mapping
from pathlib import Path


def load_config(config) -> dict:
    """``config`` as a new dict of JSON values: a mapping, an object with ``to_dict()`` (a transformers config,
    duck-typed), or the path of a UTF-8 JSON file (a key repeated with another value refused; NaN as json writes it)."""
    if isinstance(config, (str, os.PathLike)):
        path = os.fspath(config)
        try:
            config = json.loads(Path(path).read_bytes().decode("utf-8"), object_pairs_hook=_unique_keys)
        except (ValueError, RecursionError, OSError) as err:    # not UTF-8, not JSON, beyond Python's limits, unread
            raise ValueError(f"config: {path!r} is not a readable UTF-8 JSON file with each key once: {err}") from None
        if not isinstance(config, Mapping):
            raise ValueError(f"config: {path!r} holds a JSON {type(config).__name__}, expected an object")
    elif callable(getattr(config, "to_dict", None)):
        config = config.to_dict()
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a dict, an object with to_dict() or a path, got {type(config).__name__}")
    return _plain(config, "config", ())


def _plain(value, where: str, parents: tuple):
    """A new copy of ``value`` of dicts, tuples, str, numbers, bools and None; ``parents``: ids of those around it."""
    if id(value) in parents:
        raise ValueError(f"{where[:200]} is an object that contains itself; a config is a tree")
    if isinstance(value, Mapping):
        return {key: _plain(item, f"{where}[{key!r}]", parents + (id(value),)) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return tuple(_plain(item, f"{where}[{i}]", parents + (id(value),)) for i, item in enumerate(value))
    if value is None or isinstance(value, (str, numbers.Real)):
        return value.item() if hasattr(value, "item") else value       # a NumPy number as Python's
    raise TypeError(f"{where} is a {type(value).__name__}, expected a JSON value (str, number, bool, None, list, dict)")


def _unique_keys(pairs) -> dict:
    """A JSON object as a dict; a key given twice with different values (JSON keeps the last) is a ValueError.
    Values are compared by repr, so NaN (Python's json writes it; it is not equal to itself) equals NaN."""
    obj = dict(pairs)
    for key, value in pairs:
        if repr(obj[key]) != repr(value):
            raise ValueError(f"key {key!r} appears twice in one object, as {value!r} and {obj[key]!r}")
    return obj
