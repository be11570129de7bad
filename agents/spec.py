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
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

from treppen_env.messages import shorten

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
    if SEPARATOR not in text or path_test(Path(text).exists):
        return text, {}
    base, *items = text.split(SEPARATOR)
    if not base.strip():
        raise ValueError(f"agent spec {shorten(text)} has no name before its settings; write NAME,key=value,...")
    settings: dict[str, Any] = {}
    for item in items:
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key.isidentifier():
            raise ValueError(
                f"agent spec {shorten(text)}: setting {shorten(item)} is not key=value "
                "(write NAME,key=value,... with no spaces around the commas)"
            )
        if key in settings:
            raise ValueError(f"agent spec {shorten(text)}: setting {key!r} is given twice")
        settings[key] = parse_value(value)
    return base.strip(), settings


def path_test(test: Callable[[], bool]) -> bool:
    """``test()`` of a path (``path.exists``, ``path.is_dir``, ...), False for a name the system
    refuses (too long, a NUL character): a spec that is no path is no path."""
    try:
        return test()
    except (OSError, ValueError):
        return False


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


def _annotations_of(factory: Callable[..., Any]) -> dict[str, Any]:
    """The annotation of each keyword setting of ``factory``, by name: its parameters', and its
    ``Settings`` dataclass's fields' where it has one (as :func:`settings_of` reads them)."""
    found = {p.name: p.annotation for p in inspect.signature(factory).parameters.values()}
    settings_class = getattr(factory, "Settings", None)
    if isinstance(settings_class, type) and dataclasses.is_dataclass(settings_class):
        found.update({f.name: f.type for f in dataclasses.fields(settings_class)})
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
        names = ", ".join(shorten(k, 40) for k in unknown)
        raise ValueError(f"agent {shorten(name)} has no setting {names}; allowed: {listing}")
    annotations = _annotations_of(factory)
    out = {}
    for key, value in settings.items():
        default = allowed[key]
        kinds = _plain_types(annotations.get(key))
        if isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if kinds and not any(_is_a(value, kind) for kind in kinds) and not _number_for_int(value, kinds):
            expected = " or ".join(_TYPE_WORDS.get(k, k.__name__) for k in kinds)
            raise ValueError(f"agent {shorten(name)}: setting {key}={shorten(value)} must be {expected}")
        if not kinds and isinstance(default, (bool, int, float)) and not _is_a(value, type(default)):
            expected = _TYPE_WORDS.get(type(default), type(default).__name__)
            raise ValueError(f"agent {shorten(name)}: setting {key}={shorten(value)} must be {expected}")
        out[key] = value
    return out


#: The types a setting's annotation may name for :func:`check_settings` to check a value against it.
_PLAIN = {"int": int, "float": float, "str": str, "bool": bool, "None": type(None)}
_TYPE_WORDS = {bool: "true or false", type(None): "none"}


def _plain_types(annotation: Any) -> tuple[type, ...]:
    """The types of an annotation made only of ``int``, ``float``, ``str``, ``bool`` and ``None``
    (``"int | None"``: ``(int, NoneType)``); empty for any other (then the default's type is checked)."""
    if isinstance(annotation, str):
        names = [part.strip() for part in annotation.split("|")]
    else:
        parts = typing.get_args(annotation) if isinstance(annotation, types.UnionType) else (annotation,)
        names = ["None" if part in (None, type(None)) else getattr(part, "__name__", "?") for part in parts]
    return tuple(_PLAIN[n] for n in names) if all(n in _PLAIN for n in names) else ()


def _is_a(value: Any, kind: type) -> bool:
    """Whether a setting's ``value`` is of ``kind``: an int is a float, a bool is no number."""
    if isinstance(value, bool) and kind in (int, float):
        return False
    return isinstance(value, kind) or (kind is float and isinstance(value, int))


def _number_for_int(value: Any, kinds: tuple[type, ...]) -> bool:
    """A float where an int is expected: passed on, for the agent to name what it allows (``playouts=1.5
    must be a whole number of at least 1``)."""
    return isinstance(value, float) and int in kinds
