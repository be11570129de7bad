"""Agent specs with settings: ``BASE[,key=value]...`` (docs/ARCHITECTURE.md "Agents").

One syntax for every agent that takes settings, on the command line and in code, free of shell
quoting: a base spec, then comma-separated ``key=value`` settings that become constructor
keyword arguments::

    greedy,epsilon=0.1
    ismcts,seconds=0.25,seed=7
    rollout,playouts=8,playout=greedy
    runs/exp1/final_model.zip,deterministic=false

Values are read as ``true``/``false`` (bool, any case), ``none`` (None), an int, a float, or else
kept as text. The base is whatever precedes the first comma (a built-in name, a model path, a
third-party ``package.module:ClassName``); an existing path that contains commas is taken whole.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

SEPARATOR = ","


def parse_value(text: str) -> bool | int | float | str | None:
    """``"true"``/``"false"`` -> bool, ``"none"`` -> None, then int, then float, else the text."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if low == "none":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text.strip()


def parse_spec(spec: str | os.PathLike[str]) -> tuple[str, dict[str, Any]]:
    """Split ``spec`` into its base and its settings.

    :param spec: ``BASE[,key=value]...``.
    :return: ``(base, settings)``; ``("ismcts", {"seconds": 0.25})`` for ``"ismcts,seconds=0.25"``.
    :raises ValueError: for an empty base, a setting without ``=``, an empty or repeated key.
    """
    text = os.fspath(spec).strip()
    if SEPARATOR not in text or Path(text).exists():
        return text, {}
    base, *items = text.split(SEPARATOR)
    if not base.strip():
        raise ValueError(f"agent spec {text!r} has no name before its settings; write NAME,key=value,...")
    settings: dict[str, Any] = {}
    for item in items:
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key.isidentifier():
            raise ValueError(
                f"agent spec {text!r}: setting {item!r} is not key=value "
                "(write NAME,key=value,... with no spaces around the commas)"
            )
        if key in settings:
            raise ValueError(f"agent spec {text!r}: setting {key!r} is given twice")
        settings[key] = parse_value(value)
    return base.strip(), settings


def settings_of(factory: Callable[..., Any]) -> dict[str, Any]:
    """The keyword settings ``factory`` accepts and their defaults (``inspect.Parameter.empty`` if none).

    A factory with a dataclass of settings as its ``Settings`` (the search agents',
    :mod:`treppen.agents.search_settings`) takes that dataclass's fields by name instead of a
    ``settings`` object: its fields are the settings, with their defaults.
    """
    params = inspect.signature(factory).parameters.values()
    found = {
        p.name: p.default for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self"
    }
    settings_class = getattr(factory, "Settings", None)
    if isinstance(settings_class, type) and dataclasses.is_dataclass(settings_class):
        del found["settings"]
        found.update({f.name: f.default for f in dataclasses.fields(settings_class)})
    return found


def check_settings(name: str, factory: Callable[..., Any], settings: dict[str, Any]) -> dict[str, Any]:
    """Check ``settings`` against the keywords of ``factory`` and convert ints given for floats.

    :param name: the agent's name, for messages.
    :return: the settings, ready to pass as keyword arguments.
    :raises ValueError: naming an unknown key (and listing the allowed ones with their defaults) or
        a value of the wrong type (a bool where an int is expected, text where a number is, ...).
    """
    allowed = settings_of(factory)
    unknown = sorted(set(settings) - set(allowed))
    if unknown:
        listing = ", ".join(k if d is inspect.Parameter.empty else f"{k}={d!r}" for k, d in allowed.items())
        raise ValueError(f"agent {name!r} has no setting {', '.join(map(repr, unknown))}; allowed: {listing}")
    out = {}
    for key, value in settings.items():
        default = allowed[key]
        if isinstance(default, bool) and not isinstance(value, bool):
            raise ValueError(f"agent {name!r}: setting {key}={value!r} must be true or false")
        if isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        elif isinstance(default, (int, float)) and not isinstance(default, bool):
            if not isinstance(value, type(default)) or isinstance(value, bool):
                raise ValueError(f"agent {name!r}: setting {key}={value!r} must be {type(default).__name__}")
        out[key] = value
    return out
