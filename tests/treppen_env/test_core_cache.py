"""The kernels' on-disk cache: a later process (a worker of a vector env, a tournament or Ray)
loads the compiled kernels instead of compiling them again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

_PLAY = """
import json
import numba
import numpy as np
from treppen_env.core import kernels as K
from treppen_env.engine import GameState
from treppen_env.observation import encode
from treppen_env.rules import make_rules

for preset in ("treppenromme", "rum500"):
    state = GameState(make_rules(preset), 3, np.random.default_rng(0))
    state.deal(0)
    rng = np.random.default_rng(1)
    while not state.deal_over:
        encode(state, state.current)
        state.apply(int(rng.choice(state.legal_actions())))
stats = [d.stats for d in vars(K).values() if isinstance(d, numba.core.registry.CPUDispatcher)]
print(json.dumps({"hits": sum(sum(s.cache_hits.values()) for s in stats),
                  "misses": sum(sum(s.cache_misses.values()) for s in stats)}))
"""


def run_play(cache: Path) -> dict:
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(root)}
    env.pop("NUMBA_DISABLE_JIT", None)
    done = subprocess.run([sys.executable, "-c", _PLAY], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_later_process_loads_the_kernels_from_the_cache(tmp_path: Path) -> None:
    first = run_play(tmp_path)
    assert first["misses"] > 0  # a fresh cache: the first process compiles and writes it
    later = run_play(tmp_path)
    assert later == {"hits": later["hits"], "misses": 0} and later["hits"] > 0
    assert any(tmp_path.rglob("*.nbi")), "the cache index files lie in NUMBA_CACHE_DIR"
