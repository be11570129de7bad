"""Kernel signatures (docs/ARCHITECTURE.md "Layout"): every Numba kernel of the project takes at most
8 parameters, each with a type hint, as is its result; longer rows of arrays travel in bundles
(named tuples such as the greedy heuristic's ``Decision``), never in plain tuples read by place.
The kernels are found by walking the sources for the ``@kernel`` decorator
(treppen_env/core/cache.py), so a kernel in a new file is checked too."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("treppen_env", "agents", "arena", "train", "apps", "benchmarks")
MAX_PARAMETERS = 8


def is_kernel(node: ast.FunctionDef) -> bool:
    return any(
        (isinstance(d, ast.Name) and d.id == "kernel") or (isinstance(d, ast.Attribute) and d.attr == "kernel")
        for d in node.decorator_list
    )


def kernels() -> dict[str, ast.FunctionDef]:
    """Every ``@kernel`` function of the sources: ``path:name`` -> its definition."""
    found = {}
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
                if isinstance(node, ast.FunctionDef) and is_kernel(node):
                    found[f"{path.relative_to(ROOT).as_posix()}:{node.name}"] = node
    return found


def parameters(node: ast.FunctionDef) -> list[ast.arg]:
    return [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]


def kernel_parameters() -> dict[str, int]:
    """Every ``@kernel`` function of the sources: ``path:name`` -> its number of parameters."""
    return {name: len(parameters(node)) for name, node in kernels().items()}


def test_the_walk_finds_the_kernels() -> None:
    found = kernel_parameters()
    assert len(found) > 90
    assert found["treppen_env/core/kernels.py:legal_mask"] == 6
    assert found["treppen_env/agent_core/search_kernels.py:ismcts"] == 8


def test_no_kernel_takes_more_than_8_parameters() -> None:
    long = {name: count for name, count in kernel_parameters().items() if count > MAX_PARAMETERS}
    assert long == {}


def test_every_kernel_has_type_hints() -> None:
    untyped = {
        name: [a.arg for a in parameters(node) if a.annotation is None] + (["return"] if node.returns is None else [])
        for name, node in kernels().items()
    }
    assert {name: missing for name, missing in untyped.items() if missing} == {}


def test_no_kernel_takes_a_plain_tuple() -> None:
    """A bundle is a named tuple, built and read by field name; a parameter typed ``tuple[...]`` is
    one read by place."""
    plain = {
        f"{name}({a.arg})"
        for name, node in kernels().items()
        for a in parameters(node)
        if a.annotation is not None and ast.unparse(a.annotation).startswith(("tuple[", "Tuple["))
    }
    assert plain == set()
