"""Notebooks are stored without outputs (they run in CI through nbmake, see pyproject.toml)."""

from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))
#: The notebooks that read a run folder or a tournament's results (or make one when none is given).
READ_RUNS = [p for p in NOTEBOOKS if p.name in ("02_agent_behaviour.ipynb", "03_tournament.ipynb")]


def test_the_notebooks_exist():
    assert [p.name for p in NOTEBOOKS] == [
        "01_environment.ipynb",
        "02_agent_behaviour.ipynb",
        "03_tournament.ipynb",
        "04_move_analysis.ipynb",
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stored_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, "a notebook without code"
    assert all(c.outputs == [] and c.execution_count is None for c in code)


@pytest.mark.parametrize("path", READ_RUNS, ids=lambda p: p.name)
def test_example_paths_resolve_from_the_repository_root(path, monkeypatch):
    """The kernel runs in notebooks/; RUN_DIR and RESULTS_DIR examples are relative to the repository."""
    nb = nbformat.read(path, as_version=4)
    (line,) = [x for c in nb.cells for x in c.source.splitlines() if x.startswith("REPO = ")]
    monkeypatch.chdir(path.parent)
    scope: dict = {"Path": Path}
    exec(line, scope)
    assert scope["REPO"] == path.parent.parent.resolve()
    assert any("REPO / RUN_DIR" in c.source or "REPO / RESULTS_DIR" in c.source for c in nb.cells)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_ends_with_a_check_of_what_it_showed(path):
    """A notebook fails in CI (nbmake) when what it shows changes, not only when a cell raises."""
    last = nbformat.read(path, as_version=4).cells[-1]
    assert last.cell_type == "code" and last.source.startswith("# Checks of what this notebook showed")
    assert last.source.count("assert ") >= 3
