"""The import structure (docs/ARCHITECTURE.md "Layout"): imports only go down the package layers,
and no modules import each other in a circle. Every import counts, those inside functions too."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The packages from the bottom layer up: a package may import only those before it (and itself).
#: The repository's agents/, arena/, train/ and apps/ are imported as treppen.agents, ... (package-dir
#: in pyproject.toml maps the installed names onto the root folders).
LAYERS = ("treppen_env", "treppen.agents", "treppen.openspiel", "treppen.arena", "treppen.train", "treppen.apps")


def package_folder(package: str) -> Path:
    """The folder that the installed name ``package`` imports from."""
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.origin is not None, f"{package} is not installed"
    return Path(spec.origin).parent


def project_modules() -> dict[str, Path]:
    modules = {}
    for package in LAYERS:
        folder = package_folder(package)
        for path in sorted(folder.rglob("*.py")):
            parts = (package, *path.relative_to(folder).with_suffix("").parts)
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def layer_of(name: str) -> int:
    return max(i for i, package in enumerate(LAYERS) if name == package or name.startswith(package + "."))


def imports_of(path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules that ``path`` imports, anywhere in the file but in ``if TYPE_CHECKING:``
    blocks (``from a import b`` names module ``a.b`` when that is a module, else ``a``)."""
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):  # imports for type checkers only are not run
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            node.body = []
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [
                f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module for a in node.names
            ]
        else:
            continue
        found |= {name for name in names if name in modules}
    return found


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    return {name: imports_of(path, modules) - {name} for name, path in modules.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def upward(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    layer = {name: layer_of(name) for name in graph}
    return sorted((a, b) for a, targets in graph.items() for b in targets if layer[b] > layer[a])


def test_the_walk_sees_imports_inside_functions():
    graph = import_graph()
    assert "treppen.arena.plots" in graph["treppen.arena.results"]  # imported inside write_outputs
    assert "treppen.train.rllib.backend" in graph["treppen.train.launch"]  # imported inside train()
    assert set(graph) >= {
        "treppen_env.engine",
        "treppen.agents.snapshot",
        "treppen.arena.match",
        "treppen.train.common.rundir",
        "treppen.apps.cli",
    }


def test_the_installed_names_are_the_root_folders_without_links():
    assert {package: package_folder(package) for package in LAYERS[1:]} == {
        package: ROOT / package.removeprefix("treppen.") for package in LAYERS[1:]
    }
    listed = subprocess.run(["git", "ls-files", "-s"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert [line for line in listed.splitlines() if line.startswith("120000")] == []  # git's mode of a link


def test_the_rules_core_imports_no_agent_kernels_and_the_engine_no_search_hooks():
    graph = import_graph()
    rules = ["treppen_env.engine", *(name for name in graph if name.startswith("treppen_env.core"))]
    assert len(rules) > 5
    assert {name: sorted(t for t in graph[name] if t.startswith("treppen_env.agent_core")) for name in rules} == {
        name: [] for name in rules
    }
    assert "treppen_env.agent_core.search_kernels" in graph["treppen.agents.search"]  # the walk sees agent_core
    from treppen_env.engine import GameState

    assert [hook for hook in ("heuristic_inputs", "random_playout", "redeal") if hasattr(GameState, hook)] == []


def test_no_upward_imports():
    assert upward(import_graph()) == []


def test_no_import_circles():
    assert circles(import_graph()) == []


@pytest.mark.parametrize(
    ("graph", "expected_circles", "expected_upward"),
    [
        (
            {"treppen.agents.a": {"treppen.train.b"}, "treppen.train.b": {"treppen.agents.a"}},
            [["treppen.agents.a", "treppen.train.b"]],
            [("treppen.agents.a", "treppen.train.b")],
        ),
        (
            {
                "treppen.arena.a": {"treppen.arena.b"},
                "treppen.arena.b": {"treppen.arena.c"},
                "treppen.arena.c": {"treppen.arena.a"},
            },
            [["treppen.arena.a", "treppen.arena.b", "treppen.arena.c"]],
            [],
        ),
        ({"treppen.apps.a": {"treppen_env.b"}, "treppen_env.b": set()}, [], []),
    ],
)
def test_the_checks_catch_built_cases(graph, expected_circles, expected_upward):
    assert circles(graph) == expected_circles
    assert upward(graph) == expected_upward
