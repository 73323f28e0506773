"""A model config as :func:`rope_ref.from_hf_config` reads it: a dict of JSON values, checked once by load_config."""

from __future__ import annotations

import json
import numbers
import os
from collections.abc import Mapping

from ._validate import check_nbytes

_MAX_DEPTH = 32           # objects and arrays in a config: a section per layer type inside a text_config, ...


def load_config(config) -> dict:
    """``config`` (a mapping, or the path of a UTF-8 JSON file, its size checked first, no key repeated with another
    value) as a dict of JSON values nested at most _MAX_DEPTH deep, without cycles; anything else is refused."""
    if isinstance(config, (str, os.PathLike)):
        path = os.fspath(config)
        if not os.path.isfile(path):
            raise ValueError(f"config: no file at {path!r}; pass a config.json path or a dict")
        check_nbytes(os.path.getsize(path), "config", what=f"reading {path!r}")
        try:
            with open(path, "rb") as f:
                config = json.loads(f.read().decode("utf-8"), object_pairs_hook=_unique_keys)
        except (ValueError, RecursionError) as err:     # not UTF-8 or not JSON, or beyond Python's limits
            raise ValueError(f"config: {path!r} is not valid JSON as a config.json is (UTF-8 text, each key once, "
                             f"within Python's limits on nesting and digits): {err}") from None
        except OSError as err:
            raise ValueError(f"config: {path!r} cannot be read ({err.strerror or err})") from None
        if not isinstance(config, Mapping):
            raise ValueError(f"config: {path!r} holds a JSON {type(config).__name__}, expected an object")
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a dict or the path of a config.json, got {type(config).__name__}")
    stack = [(config, "config", ())]        # walked without recursion
    while stack:
        value, where, ancestors = stack.pop()
        if id(value) in ancestors:
            raise ValueError(f"{where} contains the config it is nested in (a cycle); a config is a tree, as JSON is")
        if len(ancestors) == _MAX_DEPTH:
            raise ValueError(f"{where} nests objects or arrays deeper than {_MAX_DEPTH} levels; a config's settings "
                             "are a few levels deep")
        for key, item in value.items() if isinstance(value, Mapping) else enumerate(value):
            if isinstance(item, (Mapping, list, tuple)):
                stack.append((item, f"{where}[{key!r}]", ancestors + (id(value),)))
            elif not (item is None or isinstance(item, (str, numbers.Real))):
                raise TypeError(f"{where}[{key!r}] is of type {type(item).__name__}, which JSON does not hold; a "
                                "config holds strings, numbers, true/false, null, lists and objects")
    return dict(config)


def _unique_keys(pairs) -> dict:
    """A JSON object as a dict; a key given twice with different values (JSON keeps the last) is a ValueError."""
    obj = dict(pairs)
    for key, value in pairs:
        if obj[key] != value:
            raise ValueError(f"key {key!r} appears twice in one object, as {value!r} and {obj[key]!r}")
    return obj
