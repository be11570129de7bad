"""A pytest plugin for CI's bounds-checked pass: the tests must reach every kernel of ``treppen_env``.

With ``-p kernel_coverage`` (``.ci`` on ``PYTHONPATH``), ``NUMBA_BOUNDSCHECK=1``, an empty kernel
cache (``NUMBA_CACHE_DIR`` a new folder) and one process (``-n 0``), every kernel the tests call is
compiled in this process with bounds checks on, and so is every kernel it calls: at the end of the
session each kernel dispatcher of every ``treppen_env`` module holds a compiled signature, or the
session fails naming the kernels no test reached. A kernel loaded from a filled cache compiles none
of its callees, so a reused cache can only make the check fail, never pass wrongly.
"""

from __future__ import annotations

import importlib
import pkgutil

import numba
import pytest
from numba.core.dispatcher import Dispatcher


def kernels() -> dict[str, Dispatcher]:
    """Every Numba dispatcher defined in a module of ``treppen_env``, by qualified name."""
    import treppen_env

    found = {}
    for info in pkgutil.walk_packages(treppen_env.__path__, "treppen_env."):
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if isinstance(value, Dispatcher) and value.py_func.__module__ == info.name:
                found[f"{info.name}.{value.py_func.__qualname__}"] = value
    return found


def pytest_configure(config: pytest.Config) -> None:
    if not numba.config.BOUNDSCHECK:
        raise pytest.UsageError("kernel_coverage checks the bounds-checked pass: set NUMBA_BOUNDSCHECK=1")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    found = kernels()
    missing = sorted(name for name, dispatcher in found.items() if not dispatcher.signatures)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    write = reporter.write_line if reporter else print
    if missing:
        write(f"kernel_coverage: {len(missing)} of {len(found)} kernels never compiled here: {', '.join(missing)}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    else:
        write(f"kernel_coverage: all {len(found)} kernels reached, each compiled here with bounds checks")
