"""Tournaments with an ``llm`` seat against the scripted chat endpoint on 127.0.0.1 (tests/chat_server.py):
failed requests never crash the run or lose a deal, the counts land in every deal's result, a
killed ``treppen tournament`` resumes to the same results and records, an endpoint that cannot play
stops the run before its first deal, and a model its fallback mostly replaced is warned about and
marked."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from tests import chat_server
from treppen.apps import cli
from treppen.apps.tournament_command import PROBE_DECISIONS
from treppen.arena.agent_stats import FallbackWatch, fallback_warning, total_stats
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
    # the check of the endpoint, the estimate's decisions, the first deal, then within the second deal
    server.hold_at = 1 + PROBE_DECISIONS + 1 + first_deal["replies"] + first_deal["errors"] + 5
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


def test_an_endpoint_that_cannot_be_reached_stops_before_the_first_deal(tmp_path, capsys):
    started = time.perf_counter()
    argv = ["tournament", "--agents", "llm,base_url=http://127.0.0.1:9/v1,model=x", "greedy", "--decks", "2"]
    assert cli.main([*argv, "--out", str(tmp_path / "t")]) == 2
    assert time.perf_counter() - started < 30
    err = capsys.readouterr().err
    assert re.fullmatch(
        r"treppen tournament: error: agent 'llm': cannot connect to http://127.0.0.1:9/v1 \(.+\); "
        r"is the server running there\?\n",
        err,
    )
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize(
    ("entry", "cause"),
    [
        (("status", 401), r"refused the request for model 'scripted' with 401 \(.*\); the key in \$OPENAI_API_KEY"),
        (("status", 404), r"refused the request for model 'scripted' with 404 \(.*\); is model=scripted a name"),
        (("slow", 1.5, "yes"), r"gave no answer within timeout=0.5 s; is the server up there"),
    ],
    ids=["key", "model", "timeout"],
)
def test_an_endpoint_that_refuses_stops_before_the_first_deal(server, tmp_path, capsys, entry, cause):
    server.script = [entry]
    argv = ["tournament", "--agents", f"model={spec(server)}", "greedy", "--decks", "2", "--out", str(tmp_path / "t")]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert re.match(rf"treppen tournament: error: agent 'llm': {re.escape(server.url)} {cause}", err)
    assert len(server.requests) == 1 and not (tmp_path / "t").exists()  # asked once, nothing played


def test_a_model_replaced_by_its_fallback_is_warned_about_and_marked(server, tmp_path, capsys):
    """An endpoint that answers an HTML page to everything passes the check (it answers), but every
    decision falls back: the run warns once, and the Elo table marks the row."""
    server.default = ("html", "<html><body>It works!</body></html>")
    out = tmp_path / "t"
    argv = ["tournament", "--agents", f"model={spec(server)}", "greedy", "--decks", "2", "--out", str(out)]
    assert cli.main([*argv, "--boot", "0"]) == 0
    printed = capsys.readouterr()
    (warning,) = [line for line in printed.err.splitlines() if "warning" in line]
    assert re.fullmatch(
        r"warning: model: the fallback played (\d+) of \1 decisions \(100%, over --max-fallback 20%\) in 1 deals: "
        r"\1 of \1 requests failed; its Elo rates the fallback more than the model",
        warning,
    )
    assert re.search(r"│ +\d │ model \* +│", printed.out) and re.search(r"│ +\d │ greedy +│", printed.out)
    assert "*: the fallback played more than 20% of this agent's decisions" in " ".join(printed.out.split())
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(results) == 4
    for r in results:  # each deal keeps its counts
        counts = r["agent_stats"]["model"]
        assert counts["fallbacks"] == counts["decisions"] == counts["errors"] > 0 and counts["replies"] == 0
    # with a limit of 100% nothing is warned about or marked
    assert cli.main([*argv, "--boot", "0", "--max-fallback", "1"]) == 0
    printed = capsys.readouterr()
    assert "warning" not in printed.err and "*" not in printed.out


def test_the_warning_says_why_the_fallback_played():
    counts = {"deals": 3, "decisions": 90, "fallbacks": 60, "errors": 50, "timeouts": 48, "replies": 45}
    assert fallback_warning("qwen", counts, 0.2) == (
        "warning: qwen: the fallback played 60 of 90 decisions (67%, over --max-fallback 20%) in 3 deals: "
        "50 of 95 requests failed, 48 of them timed out (is timeout= shorter than the model takes?); "
        "10 decisions got two replies that named no legal move; its Elo rates the fallback more than the model"
    )
    unreadable = {"deals": 1, "decisions": 30, "fallbacks": 9, "errors": 0, "timeouts": 0, "replies": 69}
    assert fallback_warning("m", unreadable, 0.25).endswith(
        "(30%, over --max-fallback 25%) in 1 deals: 9 decisions got two replies that named no legal move; "
        "its Elo rates the fallback more than the model"
    )


def test_the_watch_warns_once_when_the_share_passes_the_limit(capsys):
    watch = FallbackWatch(0.2)
    deal = lambda fallbacks: {"agent_stats": {"m": {"decisions": 10, "fallbacks": fallbacks, "errors": fallbacks}}}  # noqa: E731
    watch(deal(1))
    watch({"deal": 7})  # a deal without an llm seat
    watch(deal(2))
    assert capsys.readouterr().err == ""  # 3 of 20: 15%
    watch(deal(9))  # 12 of 30: 40%
    watch(deal(9))
    err = capsys.readouterr().err
    assert err.count("warning") == 1 and "the fallback played 12 of 30 decisions (40%" in err
