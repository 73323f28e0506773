"""A model config as :func:`rope_ref.from_hf_config` reads it: a dict of JSON values, made once by load_config."""

from __future__ import annotations

import json
import numbers
import os
from collections.abc import Mapping

_MAX_DEPTH = 32           # a config's settings are a few levels deep


def load_config(config) -> dict:
    """``config`` as a new dict of JSON values: a mapping, an object with ``to_dict()`` (a transformers config,
    duck-typed), or the path of a UTF-8 JSON file (a key repeated with another value refused; NaN and Infinity read
    as Python's json writes them).  A value JSON cannot hold is a TypeError naming its key."""
    if isinstance(config, (str, os.PathLike)):
        path = os.fspath(config)
        try:
            with open(path, "rb") as f:
                config = json.loads(f.read().decode("utf-8"), object_pairs_hook=_unique_keys)
        except (ValueError, RecursionError) as err:     # not UTF-8 or not JSON, or beyond Python's limits
            raise ValueError(f"config: {path!r} is not a JSON file of UTF-8 text with each key once: {err}") from None
        except OSError as err:
            raise ValueError(f"config: {path!r} cannot be read ({err.strerror or err})") from None
        if not isinstance(config, Mapping):
            raise ValueError(f"config: {path!r} holds a JSON {type(config).__name__}, expected an object")
    elif callable(getattr(config, "to_dict", None)):
        config = config.to_dict()
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a dict, an object with to_dict() or the path of a config.json, got "
                        f"{type(config).__name__}")
    return _plain(config, "config", ())


def _plain(value, where: str, parents: tuple):
    """A new copy of ``value`` made of dicts, lists, strings, numbers, booleans and None: a tree (no object inside
    itself) at most _MAX_DEPTH deep; ``parents``: the ids of the objects it is inside."""
    if id(value) in parents or len(parents) > _MAX_DEPTH:
        raise ValueError(f"{where[:200]}: a config is a tree of at most {_MAX_DEPTH} levels; it contains itself or "
                         "nests deeper")
    if isinstance(value, Mapping):
        return {key: _plain(item, f"{where}[{key!r}]", parents + (id(value),)) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item, f"{where}[{i}]", parents + (id(value),)) for i, item in enumerate(value)]
    if value is None or isinstance(value, (str, numbers.Real)):
        return value.item() if hasattr(value, "item") else value       # a NumPy number as Python's
    raise TypeError(f"{where} is of type {type(value).__name__}, which JSON does not hold; expected a string, "
                    "number, boolean, null, list or object")


def _unique_keys(pairs) -> dict:
    """A JSON object as a dict; a key given twice with different values (JSON keeps the last) is a ValueError.
    Values are compared by repr, so NaN (Python's json writes it; it is not equal to itself) equals NaN."""
    obj = dict(pairs)
    for key, value in pairs:
        if repr(obj[key]) != repr(value):
            raise ValueError(f"key {key!r} appears twice in one object, as {value!r} and {obj[key]!r}")
    return obj
