"""The kernels' on-disk cache (treppen_env/core/cache.py): a later process loads the compiled kernels
instead of compiling them again, an edit to any core source recompiles every kernel that could hold
the old code (a callee in another file included), and processes that start at once from an empty
cache compile safely side by side."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from numba.core.dispatcher import Dispatcher

from treppen_env.core import cache

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("treppen_env", "agents", "arena", "train", "apps")

# Shuffles a deck in a playout kernel (playout.shuffle calls generator.random_below, in another file);
# with "deal" in argv, first plays one seeded random deal of each preset with observations (the
# rules kernels). Prints the results and the kernels' cache hits and misses.
_PLAY = """
import json, sys
import numba
import numpy as np
from treppen_env.core import kernels
from treppen_env.agent_core import playout_kernels
from treppen_env.engine import GameState
from treppen_env.observation import encode
from treppen_env.rules import make_rules

actions = []
for preset in ("treppenromme", "rum500") if "deal" in sys.argv else ():
    state = GameState(make_rules(preset), 3, np.random.default_rng(0))
    state.deal(0)
    rng = np.random.default_rng(1)
    while not state.deal_over:
        encode(state, state.current)
        actions.append(int(rng.choice(state.legal_actions())))
        state.apply(actions[-1])
deck = np.arange(52, dtype=np.int8)
playout_kernels.shuffle(deck, np.ones(1, dtype=np.uint64))
def misses(*modules):
    return sum(sum(d.stats.cache_misses.values()) for m in modules for d in vars(m).values()
               if isinstance(d, numba.core.registry.CPUDispatcher))
stats = [d.stats for m in (kernels, playout_kernels) for d in vars(m).values()
         if isinstance(d, numba.core.registry.CPUDispatcher)]
out = {"actions": actions, "deck": deck.tolist(), "file": kernels.__file__,
       "hits": sum(sum(s.cache_hits.values()) for s in stats),
       "misses": sum(sum(s.cache_misses.values()) for s in stats)}
if "by-package" in sys.argv:  # the rules core's kernels apart from the agents' (treppen_env/agent_core)
    out = {"rules_misses": misses(kernels), "agent_misses": misses(playout_kernels)}
print(json.dumps(out))
"""


def _env(package_root: Path, cache_dir: Path | None) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(package_root)}
    env.pop("NUMBA_DISABLE_JIT", None)
    env.pop("NUMBA_CACHE_DIR", None)
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = str(cache_dir)
    return env


def run_play(cache_dir: Path | None, package_root: Path = ROOT, *args: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", _PLAY, *args],
        env=_env(package_root, cache_dir),
        cwd=package_root,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def copy_package(tmp_path: Path) -> Path:
    """A copy of treppen_env (without caches) under ``tmp_path / "src"``; returns that folder."""
    src = tmp_path / "src"
    shutil.copytree(ROOT / "treppen_env", src / "treppen_env", ignore=shutil.ignore_patterns("__pycache__"))
    return src


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} is not once in {path}"
    path.write_text(text.replace(old, new))


def test_a_later_process_loads_the_kernels_from_the_cache(tmp_path: Path) -> None:
    first = run_play(tmp_path, ROOT, "deal")
    assert first["misses"] > 0  # a fresh cache: the first process compiles and writes it
    later = run_play(tmp_path, ROOT, "deal")
    assert later == {**first, "hits": later["hits"], "misses": 0} and later["hits"] > 0
    assert Path(first["file"]).is_relative_to(ROOT)
    assert any(tmp_path.rglob("*.nbi")), "the cache index files lie in NUMBA_CACHE_DIR"


def test_an_index_naming_a_module_that_is_gone_is_compiled_afresh(tmp_path: Path) -> None:
    """A cache written before a module was renamed: its indexes pickled types of a module that no
    longer imports. Each such kernel compiles again (a miss, not an error) and rewrites its index."""
    first = run_play(tmp_path, ROOT)
    indexes = list(tmp_path.rglob("*.nbi"))
    for index in indexes:
        with index.open("rb") as handle:
            version = pickle.load(handle)  # the index's header, then the pickled (stamp, overloads)
        index.write_bytes(pickle.dumps(version) + b"cmodule_renamed_since\nBundle\n.")
    again = run_play(tmp_path, ROOT)
    assert again["deck"] == first["deck"] and again["misses"] == first["misses"] > 0
    assert run_play(tmp_path, ROOT)["misses"] == 0  # the rewritten indexes read


@pytest.mark.parametrize("where", ["NUMBA_CACHE_DIR", "__pycache__ beside the sources"])
def test_an_edit_to_a_callee_in_another_file_reaches_its_callers(tmp_path: Path, where: str) -> None:
    src = copy_package(tmp_path)
    cache_dir = tmp_path / "cache" if where == "NUMBA_CACHE_DIR" else None
    before = run_play(cache_dir, src)
    assert before["misses"] > 0 and Path(before["file"]).is_relative_to(src)
    # an edit outside the kernels' sources (the env wrapper) keeps every cached kernel
    with (src / "treppen_env" / "aec.py").open("a") as handle:
        handle.write("# edited\n")
    assert run_play(cache_dir, src)["misses"] == 0
    # generator.random_below now always draws 0: the Fisher-Yates shuffle in playout_kernels.py, compiled with
    # it, must leave the deck as it was, and the random deals play other actions
    edit(
        src / "treppen_env" / "core" / "generator.py",
        "    return int(random_unit(rng) * n)",
        "    return 0 * int(random_unit(rng) * n)",
    )
    after = run_play(cache_dir, src)
    assert after["misses"] > 0
    assert after["deck"] == [*range(1, 52), 0]  # each step swaps card k with position 0
    assert before["deck"] != after["deck"]


def test_an_edit_to_the_engine_or_a_search_file_recompiles_no_rules_kernel(tmp_path: Path) -> None:
    src, cache_dir = copy_package(tmp_path), tmp_path / "cache"
    first = run_play(cache_dir, src, "deal", "by-package")
    assert first["rules_misses"] > 0 and first["agent_misses"] > 0
    # the engine's Python: no kernel is built from it
    with (src / "treppen_env" / "engine.py").open("a") as handle:
        handle.write("# edited\n")
    assert run_play(cache_dir, src, "deal", "by-package") == {"rules_misses": 0, "agent_misses": 0}
    # a search file: the agents' kernels compile afresh, the rules kernels load from the cache
    with (src / "treppen_env" / "agent_core" / "search_kernels.py").open("a") as handle:
        handle.write("# edited\n")
    after = run_play(cache_dir, src, "deal", "by-package")
    assert after["rules_misses"] == 0 and after["agent_misses"] > 0


def test_processes_that_start_at_once_from_an_empty_cache_agree(tmp_path: Path) -> None:
    env = _env(ROOT, tmp_path)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _PLAY, "deal"],
            env=env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        outs.append(json.loads(out.strip().splitlines()[-1]))
    later = run_play(tmp_path, ROOT, "deal")
    assert later["misses"] == 0, "every kernel was cached once by the two processes"
    assert outs[0]["actions"] == outs[1]["actions"] == later["actions"]
    assert outs[0]["deck"] == outs[1]["deck"] == later["deck"]
    assert not list(tmp_path.rglob("*.tmp.*")), "no half-written cache file is left"


#: The modules of the ray extra (no kernels in them): imported only where Ray is installed.
RAY_MODULES = {
    "arena.ray_cluster",
    "train.expert.ray_labels",
    "train.kernel.ray_workers",
    "train.rllib.backend",
    "train.rllib.modules",
}


def _project_kernels() -> list[Dispatcher]:
    """Every kernel defined in the project's modules; a module that fails to import fails the test."""
    found = []
    skip = RAY_MODULES if importlib.util.find_spec("ray") is None else set()
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            if name not in skip:
                module = importlib.import_module(name)
                found += [d for d in vars(module).values() if isinstance(d, Dispatcher) and d.__module__ == name]
    return found


def test_every_kernel_is_keyed_on_the_sources_it_is_compiled_from() -> None:
    kernels = _project_kernels()
    assert len(kernels) == 169  # every @kernel in treppen_env, agents, arena, train and apps
    sources = set(cache.kernel_sources())
    for kernel in kernels:
        assert isinstance(kernel._cache, cache.KernelCache), kernel.py_func.__qualname__
        assert Path(kernel.py_func.__code__.co_filename).resolve() in sources, kernel.py_func.__qualname__
    # what the kernels read from outside treppen_env/core: the melds' bitsets, the card points and
    # the action blocks (greedy), the observation layout (reader), the rules
    names = {str(p.relative_to(cache.PACKAGE_DIR)) for p in sources}
    assert {"melds.py", "cards.py", "actions.py", "observation.py", "rules.py", "agent_core/greedy_kernels.py"} <= names
    assert {"aec.py", "records.py", "render.py"}.isdisjoint(names)


def test_the_stamp_holds_the_versions_and_every_source() -> None:
    assert cache.STAMPS == {folder: cache.source_stamp(folder) for folder in (cache.CORE_DIR, cache.AGENT_DIR)}
    assert {len(stamp) for stamp in cache.STAMPS.values()} == {64} and len(set(cache.STAMPS.values())) == 2


def test_each_kernel_package_is_stamped_on_its_own_sources() -> None:
    rules = {str(p.relative_to(cache.PACKAGE_DIR)) for p in cache.kernel_sources(cache.CORE_DIR)}
    agents = {str(p.relative_to(cache.PACKAGE_DIR)) for p in cache.kernel_sources(cache.AGENT_DIR)}
    assert not any(name.startswith("agent_core/") for name in rules)  # the core imports no agent kernel
    assert {"core/kernels.py", "core/layout.py", "agent_core/search_kernels.py", "observation.py"} <= agents
    assert "engine.py" not in rules | agents  # the engine's Python (observation.py names it for types only)
    folders = {
        cache.package_of(str(cache.PACKAGE_DIR / name)) for name in ("core/kernels.py", "core/vector_kernels.py")
    }
    assert folders == {cache.CORE_DIR}
    assert cache.package_of(str(cache.PACKAGE_DIR / "agent_core" / "search_kernels.py")) == cache.AGENT_DIR
