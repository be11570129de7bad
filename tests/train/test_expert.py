"""Expert iteration (train/expert/backend.py): a generation on a tiny budget writes its labels, net
and Elo rows, and a run cut off mid-generation resumes at its next stage."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from treppen.apps import cli
from treppen.arena.strength import Strength

TINY = [
    "backend=expert", "expert_generations=2", "expert_deals=2", "expert_search=rollout,playouts=8",
    "expert_hidden=8", "expert_decks=1", "imitation_epochs=2", "imitation_batch_size=64",
]  # fmt: skip


def test_generations_write_labels_nets_and_ratings_and_resume(tmp_path, capsys) -> None:
    assert cli.main(["train", *TINY, "expert_generations=1", f"runs_dir={tmp_path}", "name=ex"]) == 0
    run = tmp_path / "ex"
    out = capsys.readouterr().out
    gen0 = run / "gen_0"
    with np.load(gen0 / "labels.npz") as labels:
        n = len(labels["actions"])
        assert n > 10 and labels["obs"].shape == (n, 969) and labels["hands"].shape == (n, 156)
        assert labels["masks"][np.arange(n), labels["actions"]].all()  # every label a legal move
        assert set(np.unique(labels["outcomes"])) <= {-1.0, 0.0, 1.0}
    with np.load(gen0 / "net.npz") as net:
        assert net["shape"].tolist() == [969, 8, 1]
    (row,) = [json.loads(line) for line in (run / "generations.jsonl").read_text().splitlines()]
    assert row["generation"] == 0 and row["search"].endswith(f"net={gen0 / 'net.npz'},own_playout=net")
    for key in ("search_vs_greedy", "policy_vs_greedy", "search_vs_previous"):
        assert row[key]["decks"] == 1 and row[key]["deals"] == 2
    # the last lines as every backend's: the Elo on greedy = 0, the next commands
    search = Strength(**row["search_vs_greedy"]).text()
    assert out.splitlines()[-7:] == [
        f"expert iteration: {run / 'generations.jsonl'}",
        "Elo of generation 0, greedy = 0, 1 duplicate decks:",
        f"  its search  {search}",
        f"  its net     {Strength(**row['policy_vs_greedy']).text()}",
        "next:",
        f"  play against it:   treppen play --opponents {row['search']} --rules treppenromme",
        f"  rate it (greedy = 0) against the zoo:   treppen tournament --agents {row['search']} ppo-2p search-2p "
        "greedy --players 2 --rules treppenromme --decks 100 --workers 2",
    ]

    # a damaged net is fitted again on --resume, and said so; the labels are kept
    net, labels = gen0 / "net.npz", gen0 / "labels.npz"
    stamp = labels.stat().st_mtime_ns
    net.write_bytes(net.read_bytes()[:100])
    assert cli.main(["train", "--resume", str(run)]) == 0
    out = capsys.readouterr().out
    assert f"doing the stages of 1 damaged file again: {net} (BadZipFile: File is not a zip file)\n" in out
    with np.load(net) as fitted:
        assert fitted["shape"].tolist() == [969, 8, 1]
    assert labels.stat().st_mtime_ns == stamp


def test_a_run_killed_mid_generation_resumes_at_its_next_stage(tmp_path) -> None:
    """Killed once generation 0's labels are written (while it fits or rates), the resumed run keeps
    them, finishes that generation and the next."""
    run = tmp_path / "killed"
    command = [sys.executable, "-m", "treppen.apps.cli", "train", *TINY, "expert_decks=2", f"runs_dir={tmp_path}"]
    proc = subprocess.Popen([*command, "name=killed"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    labels = run / "gen_0" / "labels.npz"
    watchdog = time.monotonic() + 300  # ends a hung run; not a measure of its speed
    while not labels.is_file():
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""  # the run failed before its labels
        if time.monotonic() > watchdog:
            proc.kill()
            pytest.fail("the run wrote no labels in 300 s: it hangs")
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    stamp = labels.stat().st_mtime_ns
    assert not (run / "generations.jsonl").is_file() or len((run / "generations.jsonl").read_text().splitlines()) < 2
    assert cli.main(["train", "--resume", str(run)]) == 0
    rows = [json.loads(line) for line in (run / "generations.jsonl").read_text().splitlines()]
    assert [r["generation"] for r in rows] == [0, 1]
    assert labels.stat().st_mtime_ns == stamp  # kept, not labelled again
    assert (run / "gen_1" / "net.npz").is_file() and (run / "gen_1" / "labels.npz").is_file()
    assert len(json.loads((run / "metadata.json").read_text())["resumes"]) == 1
