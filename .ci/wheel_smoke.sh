#!/usr/bin/env bash
# The wheel outside the clone: build it, install it in a fresh venv in a temporary folder, and from
# an empty folder run a tiny training run on the default config, a two-deck tournament with a zoo
# agent, one zoo agent's deal in Python (no torch imported) and the web page.
set -euo pipefail
cd "$(dirname "$0")/.."
work="$(mktemp -d)"
# (the server's pid only once it runs: "kill 0" would end this script's whole process group, CI with it)
trap 'if [ -n "${server:-}" ]; then kill "$server" 2>/dev/null || true; fi; rm -rf "$work"' EXIT

python3 -m pip wheel --quiet --no-deps -w "$work/dist" .
python3 -m venv "$work/venv"
. "$work/venv/bin/activate"
python -m pip install --quiet --upgrade pip
pip install --quiet torch==2.13.0
pip install --quiet "$(ls "$work"/dist/treppen-*.whl)[train,serve]"
mkdir "$work/empty" && cd "$work/empty"

python - <<'PY'
import treppen, treppen_env
from pathlib import Path
for module in (treppen, treppen_env):
    assert "site-packages" in module.__file__, f"{module.__name__} comes from {module.__file__}, not the wheel"
print("installed:", Path(treppen.__file__).parent)
PY
treppen zoo list >zoo.txt
head -3 zoo.txt
# a tiny run of the default config (the shipped configs/kernel.yaml, the batched learner)
treppen train total_timesteps=256 n_envs=16 n_steps=8 batch_size=64 n_epochs=1 eval_deals=2 elo_every=0 \
    checkpoint_every=256 snapshot_every=256 progress=false | tee train.log
grep -q "site-packages/treppen/configs/kernel.yaml" train.log
treppen tournament --agents greedy ppo-2p --decks 2 --out tournament
python - <<'PY'
import sys
from treppen import agents
from treppen.arena.match import play_match
from treppen_env import raw_env

result = play_match(raw_env(num_players=2), [agents.load("ppo-2p", seed=0), agents.load("greedy")], seed=0)
assert "torch" not in sys.modules, "a zoo agent must play without torch"
print("ppo-2p deal:", result.outcome, result.deal_points)
PY
treppen serve --port 8765 >serve.log 2>&1 &
server=$!
for _ in $(seq 60); do curl -sf http://127.0.0.1:8765/api/config >config.json && break; sleep 1; done
grep -q '"hard' config.json
curl -sf http://127.0.0.1:8765/ | grep -q "<html"
echo "wheel smoke test passed"
