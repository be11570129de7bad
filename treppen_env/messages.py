"""Bad input, named clearly: values in error messages cut to a readable length (a 10,000-character
spec or a YAML anchor bomb must not become a megabyte of error), and the checks of values that
every entry point takes alike (seeds, counts)."""

from __future__ import annotations

import numbers
import reprlib
from typing import Any

#: Characters of a value shown in a message, about.
LIMIT = 80
#: Characters of a file's path shown in a message, about (paths are named whole unless absurd).
PATH_LIMIT = 300


def shorten(value: Any, limit: int = LIMIT) -> str:
    """``repr(value)`` for a message: nested containers and long text cut (``'aaa...aaa' (10000
    characters)``, ``[[[...], ...], ...]``), at most about ``limit`` characters."""
    cutter = reprlib.Repr()
    cutter.maxstring = cutter.maxother = limit
    cutter.maxlist = cutter.maxtuple = cutter.maxdict = cutter.maxset = 8
    cutter.maxlevel = 3
    text = cutter.repr(value)
    if isinstance(value, str) and len(value) > limit:
        text += f" ({len(value)} characters)"
    return text if len(text) <= limit + 20 else f"{text[:limit]}..."


def cut(message: str, limit: int = 2000) -> str:
    """``message`` with its middle cut when it is longer than ``limit`` characters (the start names
    what was wrong, the end what is allowed)."""
    if len(message) <= limit:
        return message
    half = limit // 2
    return f"{message[:half]} [... {len(message) - 2 * half} characters cut ...] {message[-half:]}"


def whole_number(value: Any, name: str, least: int = 0) -> int:
    """``value`` as a Python int (NumPy integers included, so that ``np.uint64(2**64 - 1) + 1``
    does not wrap around), at least ``least``.

    :raises ValueError: naming ``name`` and the value, for a bool, a float, text or a smaller number.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        raise ValueError(f"{name}={shorten(value)} must be a whole number of at least {least}")
    return int(value)
