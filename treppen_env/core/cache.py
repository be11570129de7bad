"""The kernels' decorator and their on-disk cache, keyed on every source a kernel is compiled from.

Numba compiles a kernel together with every kernel it calls and with the module constants it reads
(tables, layout slots), but its own cache (``cache=True``) checks only the kernel's own source file:
after an edit to a callee in another file, a caller would load its old machine code with the old
callee inside. So every kernel of the project is declared with :func:`kernel`, whose cache is keyed
on its package's stamp (:data:`STAMPS`). The kernels live in two packages: the rules core
(:mod:`treppen_env.core`) and what agents compute (:mod:`treppen_env.agent_core`, which imports the
core, never the reverse). A package's stamp is a hash of every source file its kernels are built
from (:func:`kernel_sources`: the package's modules and, transitively, every module of
:mod:`treppen_env` they import) and of the Python, NumPy, Numba and llvmlite versions and the bounds
check setting. An edit to any of them, an upgrade or a switch of branches changes the stamp, and
that package's kernels are then compiled afresh before they first run; their new code replaces the
old in the cache. So an edit to a search file recompiles the agents' kernels and no rules kernel,
and an edit to a module no kernel is built from (the engine's Python, the env) recompiles none.
Nothing else changes: the cache lies where Numba puts it (``__pycache__`` beside the module, a
user-wide folder when that is not writable, or ``NUMBA_CACHE_DIR``).

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

#: The package whose sources the kernels are built from, and the folders of its two kernel
#: packages: the rules core and what agents compute.
PACKAGE_DIR = Path(__file__).resolve().parent.parent
CORE_DIR = Path(__file__).resolve().parent
AGENT_DIR = PACKAGE_DIR / "agent_core"
KERNEL_DIRS = (CORE_DIR, AGENT_DIR)


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


#: A block ``if TYPE_CHECKING:`` (its indented lines): imports for type checkers only, never run.
_TYPE_CHECKING = re.compile(
    r"^([ \t]*)if (?:typing\.)?TYPE_CHECKING:[^\n]*\n(?:\1[ \t]+[^\n]*\n|[ \t]*\n)*", re.MULTILINE
)


def _names(text: str) -> list[str]:
    """The imported names of an import's name list (``a as b, c`` gives ``a, c``)."""
    text = re.sub(r"#[^\n]*", "", text).strip("() \t\n")
    return [part.split()[0] for part in text.split(",") if part.strip()]


def _imports(path: Path) -> Iterator[Path]:
    """The package's source files that ``path`` imports, at any level of its code but in ``if
    TYPE_CHECKING:`` blocks (``from a import b`` names module ``a.b`` when that is a module, else
    ``a``)."""
    for found in _IMPORT.finditer(_TYPE_CHECKING.sub("", path.read_text(encoding="utf-8"))):
        module, listed, plain = found.groups()
        if module is None:
            names = _names(plain)
        else:
            names = [
                module if _module_file(f"{module}.{name}") is None else f"{module}.{name}" for name in _names(listed)
            ]
        yield from (p for p in map(_module_file, names) if p is not None)


def kernel_sources(package: Path | None = None) -> list[Path]:
    """The source files the kernels of ``package`` (:data:`CORE_DIR` or :data:`AGENT_DIR`; both
    when None) are compiled from: every module of the package and every module of
    :mod:`treppen_env` they import, directly or through each other (sorted)."""
    todo = sorted(p for folder in ((package,) if package else KERNEL_DIRS) for p in folder.glob("*.py"))
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


def source_stamp(package: Path) -> str:
    """The hash (hex) of the kernel package ``package``'s :func:`kernel_sources` (their paths in
    :mod:`treppen_env` and contents) and of the Python, NumPy, Numba and llvmlite versions and
    ``NUMBA_BOUNDSCHECK``."""
    digest = hashlib.sha256()
    versions = (sys.version, np.__version__, numba.__version__, llvmlite.__version__, _config("BOUNDSCHECK"))
    digest.update(repr(versions).encode())
    for path in kernel_sources(package):
        digest.update(path.relative_to(PACKAGE_DIR).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


#: The key of every kernel's cache entry in this process, per kernel package (:func:`source_stamp`
#: at import: the sources the process's kernels are compiled from).
STAMPS = {package: source_stamp(package) for package in KERNEL_DIRS}


def package_of(py_file: str) -> Path:
    """The kernel package whose stamp keys the kernels of the source file ``py_file``: the rules
    core for its own modules, what agents compute for every other kernel (its sources include the
    core's that it imports)."""
    return CORE_DIR if Path(py_file).resolve().parent == CORE_DIR else AGENT_DIR


class _Stamped:
    """A Numba cache locator whose freshness stamp is its kernel package's :data:`STAMPS` entry,
    not the mtime of the kernel's own file: an entry written from other sources reads as stale."""

    _py_file: str

    def get_source_stamp(self) -> str:
        return STAMPS[package_of(self._py_file)]


class _KernelCacheImpl(caching.CompileResultCacheImpl):
    """Numba's cache of compile results, found by Numba's own locators, stamped with its kernel
    package's :func:`source_stamp`."""

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


class _KernelIndex(caching.IndexDataCacheFile):
    """Numba's index of a kernel's cache entries. An index that cannot be read back, because the
    types it pickled name a module that is no longer there (written before a module was renamed or
    removed), reads as empty: the kernel compiles afresh and its new index replaces the old."""

    def _load_index(self) -> dict[Any, Any]:
        try:
            return super()._load_index()
        except (ImportError, AttributeError):
            return {}


class KernelCache(caching.FunctionCache):
    """The on-disk cache of one kernel: keyed on its package's :func:`source_stamp`, written under
    a lock; an index naming modules that are gone is a miss (:class:`_KernelIndex`)."""

    _impl_class = _KernelCacheImpl

    def __init__(self, py_func: Callable[..., Any]):
        super().__init__(py_func)
        self._cache_file.__class__ = _KernelIndex

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
