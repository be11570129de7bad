"""Tournaments with an ``llm`` seat against the scripted chat endpoint on 127.0.0.1 (tests/chat_server.py):
failed requests never crash the run or lose a deal, the counts land in every deal's result, and a
killed ``treppen tournament`` resumes to the same results and records."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from tests import chat_server
from treppen.apps.tournament import PROBE_DECISIONS
from treppen.arena.agent_stats import total_stats
from treppen.arena.results import RESULTS_FILE
from treppen.arena.tournament import run_tournament
from treppen_env import records


@pytest.fixture
def server():
    s = chat_server.start()
    yield s
    chat_server.stop(s)


def spec(server) -> str:
    return f"llm,base_url={server.url},model=scripted,timeout=0.5"


def llm_moves(game, llm_spec: str) -> int:
    """How many moves the seat of ``llm_spec`` made in the deal of the game record ``game`` (replayed)."""
    return sum(1 for step in records.replay(game) if step.index >= 0 and game["agents"][step.seat] == llm_spec)


def counts(record):
    return {k: v for k, v in record["agent_stats"]["llm"].items() if k != "latency_s"}


def test_failed_requests_fall_back_and_every_deal_is_kept(server, tmp_path):
    server.script = [("status", 500), ("slow", 2.0, "draw"), "I pass.", "no idea", ("status", 503), ("garbage",)]
    games = tmp_path / "games.jsonl"
    results = run_tournament({"llm": spec(server), "greedy": "greedy"}, decks=2, seed=4, out=tmp_path, record_to=games)
    assert len(results) == 4 and all(r["outcome"] for r in results)
    played = records.read(games)
    assert sorted(g["deal_id"] for g in played) == sorted(r["deal"] for r in results)
    for game in played:
        records.check(game)  # the fallbacks' moves were legal: every deal replays
    totals = total_stats(results)
    assert set(totals) == {"llm"}
    t = totals["llm"]
    assert (t["deals"], t["errors"], t["retries"], t["fallbacks"]) == (4, 4, 1, 5)
    assert t["replies"] + t["errors"] == len(server.requests)
    assert t["replies"] == t["decisions"] - 4 + 1  # each decision one reply, but failed ones; one retry
    moves = {g["deal_id"]: llm_moves(g, spec(server)) for g in played}
    assert {r["deal"]: r["agent_stats"]["llm"]["decisions"] for r in results} == moves
    assert t["prompt_tokens"] == 100 * t["replies"]


def test_a_killed_tournament_resumes_to_the_same_results(server, tmp_path):
    reference = run_tournament({"llm": spec(server), "greedy": "greedy"}, decks=2, seed=9, out=tmp_path / "ref")
    first_deal = counts(reference[0])
    out, games = tmp_path / "run", tmp_path / "rec"
    argv = [sys.executable, "-m", "treppen.apps.cli", "tournament", "--agents", f"llm={spec(server)}", "greedy"]
    argv += ["--decks", "2", "--seed", "9", "--out", str(out), "--record", str(games), "--boot", "0"]
    server.requests.clear()
    server.hold_at = PROBE_DECISIONS + 1 + first_deal["replies"] + first_deal["errors"] + 5  # within the second deal
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=os.environ)
    try:
        assert server.held.wait(120), proc.communicate(timeout=5)[0]
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(30)
    lines = (out / RESULTS_FILE).read_text().splitlines()
    assert len(lines) == 1 and len(records.read(games / "run.jsonl")) == 1
    server.hold_at = None
    server.release.set()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=os.environ)
    assert done.returncode == 0, done.stderr
    assert "resuming, 1 of 4 deals played" in done.stdout and "Model calls" in done.stdout
    resumed = [json.loads(line) for line in (out / RESULTS_FILE).read_text().splitlines()]
    assert len(resumed) == 4
    key = lambda r: r["deal"]  # noqa: E731
    for a, b in zip(sorted(resumed, key=key), sorted(reference, key=key), strict=True):
        assert {k: v for k, v in a.items() if k != "agent_stats"} == {k: v for k, v in b.items() if k != "agent_stats"}
        assert counts(a) == counts(b)
    played = records.read(games / "run.jsonl")
    assert sorted(g["deal_id"] for g in played) == sorted(r["deal"] for r in reference)
    for game in played:
        records.check(game)
        assert "sk-" not in json.dumps(game) and game["agents"].count(spec(server)) == 1
