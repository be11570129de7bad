"""The kernels' decorator and their on-disk cache, keyed on every source a kernel is compiled from.

Numba compiles a kernel together with every kernel it calls and with the module constants it reads
(tables, layout slots), but its own cache (``cache=True``) checks only the kernel's own source file:
after an edit to a callee in another file, a caller would load its old machine code with the old
callee inside. So every kernel of the project is declared with :func:`kernel`, whose cache is keyed
on :data:`SOURCE_STAMP`: a hash of every source file the kernel modules are built from
(:func:`kernel_sources`: the modules of :mod:`treppen_env.core` and, transitively, every module of
:mod:`treppen_env` they import) and of the Python, NumPy, Numba and llvmlite versions and the bounds
check setting. An edit to any of them, an upgrade or a switch of branches changes the stamp, and
every kernel is then compiled afresh before it first runs; its new code replaces the old in the
cache. Nothing else changes: the cache lies where Numba puts it (``__pycache__`` beside the module,
a user-wide folder when that is not writable, or ``NUMBA_CACHE_DIR``).

Processes that start at once from an empty cache (``pytest -n 2``, ``--workers 2``) may each compile
a kernel; they write its cache entry one at a time (a lock file beside the entry), so no index ever
names another process's data.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import llvmlite
import numba
import numpy as np
from numba.core import caching
from numba.core.dispatcher import Dispatcher

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no lock between processes
    fcntl = None  # type: ignore[assignment]

#: The package whose sources the kernels are built from, and the folder of the kernel modules.
PACKAGE_DIR = Path(__file__).resolve().parent.parent
CORE_DIR = Path(__file__).resolve().parent


def _module_file(name: str) -> Path | None:
    """The source file of module ``name`` of the package (``treppen_env.x.y``), or None."""
    parts = name.split(".")
    if parts[0] != PACKAGE_DIR.name:
        return None
    base = PACKAGE_DIR.joinpath(*parts[1:])
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


#: An import statement on a line of its own, at any indentation: ``from MODULE import NAMES`` (NAMES
#: may be a parenthesized list over several lines) or ``import NAMES``. Read as text rather than
#: parsed (parsing every core module cost a third of a second at each import); a match inside a
#: docstring only adds a file to the stamp, never leaves one out.
_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import[ \t]+(\([^)]*\)|.*)|import[ \t]+(.*))$", re.MULTILINE)


def _names(text: str) -> list[str]:
    """The imported names of an import's name list (``a as b, c`` gives ``a, c``)."""
    text = re.sub(r"#[^\n]*", "", text).strip("() \t\n")
    return [part.split()[0] for part in text.split(",") if part.strip()]


def _imports(path: Path) -> Iterator[Path]:
    """The package's source files that ``path`` imports, at any level of its code (``from a
    import b`` names module ``a.b`` when that is a module, else ``a``)."""
    for found in _IMPORT.finditer(path.read_text(encoding="utf-8")):
        module, listed, plain = found.groups()
        if module is None:
            names = _names(plain)
        else:
            names = [
                module if _module_file(f"{module}.{name}") is None else f"{module}.{name}" for name in _names(listed)
            ]
        yield from (p for p in map(_module_file, names) if p is not None)


def kernel_sources() -> list[Path]:
    """The source files the kernels are compiled from: every module of :mod:`treppen_env.core`
    and every module of the package they import, directly or through each other (sorted)."""
    todo = sorted(CORE_DIR.glob("*.py"))
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        todo.extend(p for p in _imports(path) if p not in seen)
    return sorted(seen)


def _config(name: str) -> Any:
    """A Numba setting (``numba.config.NAME``, from the ``NUMBA_NAME`` environment variable)."""
    return getattr(numba.config, name)


def source_stamp() -> str:
    """The hash (hex) of :func:`kernel_sources` (their paths in the package and contents) and of
    the Python, NumPy, Numba and llvmlite versions and ``NUMBA_BOUNDSCHECK``."""
    digest = hashlib.sha256()
    versions = (sys.version, np.__version__, numba.__version__, llvmlite.__version__, _config("BOUNDSCHECK"))
    digest.update(repr(versions).encode())
    for path in kernel_sources():
        digest.update(path.relative_to(PACKAGE_DIR).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


#: The key of every kernel's cache entry in this process (:func:`source_stamp` at import).
SOURCE_STAMP = source_stamp()


class _Stamped:
    """A Numba cache locator whose freshness stamp is :data:`SOURCE_STAMP`, not the mtime of the
    kernel's own file: an entry written from other sources reads as stale."""

    def get_source_stamp(self) -> str:
        return SOURCE_STAMP


class _KernelCacheImpl(caching.CompileResultCacheImpl):
    """Numba's cache of compile results, found by Numba's own locators, stamped with
    :data:`SOURCE_STAMP`."""

    _locator_classes: list[type[object]] = [
        type(f"Stamped{c.__name__}", (_Stamped, c), {}) for c in caching.CompileResultCacheImpl._locator_classes
    ]


@contextlib.contextmanager
def _locked(path: str) -> Iterator[None]:
    """Hold an exclusive lock on the file ``path`` (created if missing) while the block runs."""
    if fcntl is None:  # pragma: no cover
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class KernelCache(caching.FunctionCache):
    """The on-disk cache of one kernel: keyed on :data:`SOURCE_STAMP`, written under a lock."""

    _impl_class = _KernelCacheImpl

    def save_overload(self, sig: Any, data: Any) -> None:
        """Save a compiled signature; one process at a time per kernel (the index lists every
        signature's data file, and two writers could otherwise give two signatures one file)."""
        self._impl.locator.ensure_cache_path()
        with _locked(os.path.join(self.cache_path, self._impl.filename_base + ".lock")):
            super().save_overload(sig, data)


def kernel(func: Callable[..., Any]) -> Callable[..., Any]:
    """Compile ``func`` as a Numba kernel (nopython, releasing the GIL), cached on disk by
    :class:`KernelCache`: the decorator of every kernel of the project."""
    dispatcher = numba.njit(nogil=True)(func)
    if isinstance(dispatcher, Dispatcher):  # not under NUMBA_DISABLE_JIT
        dispatcher._cache = KernelCache(func)  # type: ignore[attr-defined]
    return dispatcher
