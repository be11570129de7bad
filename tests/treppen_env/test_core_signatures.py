"""Kernel signatures (docs/ARCHITECTURE.md "Layout"): every Numba kernel of the project takes at most
8 parameters; longer rows of arrays travel in bundles (named tuples such as the greedy heuristic's
``Decision``). The kernels are found by walking the sources for the ``@kernel`` decorator
(treppen_env/core/cache.py), so a kernel in a new file is checked too."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("treppen_env", "agents", "arena", "train", "apps", "benchmarks")
MAX_PARAMETERS = 8
#: The kernels that still take more (issue 32: bundles for the rules tables, the search settings
#: and the scratch), with their counts today: none may grow, and none may join them.
STILL_LONG = {
    "benchmarks/bench_net.py:evaluate_all": 10,
    "treppen_env/agent_core/beliefs.py:card_counts": 10,
    "treppen_env/agent_core/features.py:action_features": 13,
    "treppen_env/agent_core/features.py:action_scores": 14,
    "treppen_env/agent_core/greedy.py:_context": 10,
    "treppen_env/agent_core/greedy.py:decision": 11,
    "treppen_env/agent_core/greedy.py:greedy_move": 12,
    "treppen_env/agent_core/greedy.py:state_inputs": 9,
    "treppen_env/agent_core/playout.py:play_to_end": 10,
    "treppen_env/agent_core/playout.py:finish": 11,
    "treppen_env/agent_core/playout.py:policy_move": 10,
    "treppen_env/agent_core/playout.py:redeal": 9,
    "treppen_env/agent_core/playout.py:playouts": 11,
    "treppen_env/agent_core/search.py:greedy_lays": 9,
    "treppen_env/agent_core/search.py:candidates": 10,
    "treppen_env/agent_core/search.py:flat_monte_carlo": 20,
    "treppen_env/agent_core/search.py:_descend": 9,
    "treppen_env/agent_core/search.py:_select_prior": 9,
    "treppen_env/agent_core/search.py:_unsearched": 13,
    "treppen_env/agent_core/search.py:ismcts": 24,
    "treppen_env/agent_core/seats.py:_kernel_move": 10,
    "treppen_env/agent_core/seats.py:step_rows": 23,
}


def is_kernel(node: ast.FunctionDef) -> bool:
    return any(
        (isinstance(d, ast.Name) and d.id == "kernel") or (isinstance(d, ast.Attribute) and d.attr == "kernel")
        for d in node.decorator_list
    )


def kernel_parameters() -> dict[str, int]:
    """Every ``@kernel`` function of the sources: ``path:name`` -> its number of parameters."""
    found = {}
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
                if isinstance(node, ast.FunctionDef) and is_kernel(node):
                    args = node.args
                    count = len(args.posonlyargs) + len(args.args) + len(args.kwonlyargs)
                    found[f"{path.relative_to(ROOT).as_posix()}:{node.name}"] = count
    return found


def test_the_walk_finds_the_kernels() -> None:
    found = kernel_parameters()
    assert len(found) > 90
    assert found["treppen_env/core/kernels.py:legal_mask"] == 6
    assert found["treppen_env/agent_core/search.py:ismcts"] == 24


def test_no_kernel_takes_more_than_8_parameters() -> None:
    long = {name: count for name, count in kernel_parameters().items() if count > MAX_PARAMETERS}
    assert long == STILL_LONG
