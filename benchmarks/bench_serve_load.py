"""Serving (a benchmark, not a test). Variants (the first word; without one, ``load``):

- ``load``: the page under load, many games and hint askers against one ``treppen serve`` process
  for a while, with the answer codes, latency percentiles and the server's peak memory (below);
- ``upload``: the server's peak memory while clients post the largest replay files it takes
  (:func:`upload_main`).

``load`` starts ``treppen serve`` on 127.0.0.1 (the default levels: easy, medium, hard), then runs
``--games`` threads that each play deals as the person would (a legal move from the page's groups,
``advance`` while the agents are to move; a finished deal starts a new one; the games cycle
through ``--levels``, indices of ``/api/config``'s agents, by default 0 and 2: half against
``easy`` (greedy), half against ``hard`` (the search)) and ``--hinters`` threads that ask for
hints in a loop, for ``--seconds``. A request not answered within ``--patience`` seconds counts
as unanswered. It prints per request kind the answer codes and the p50, p99 and max latency
(seconds), the hints the server cut short, the server's peak resident memory (``VmHWM``, MB) and
the load average beside the run, and writes them as JSON.

``--deadline-trials N`` first times N searches under ``deadline=0.5`` in this process while two
other threads keep both cores busy searching, and reports how far past the deadline they
returned (the tests check the deadline logic with a fake clock; this is its real-time figure).
Usage::

    python benchmarks/bench_serve_load.py [load] [--games 30] [--hinters 4] [--seconds 60] [--levels 0 2]
        [--deadline-trials 20] [--port 8766]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from harness import RESULTS, run_variant, write


def person_move(view: dict[str, Any]) -> int:
    """A legal move from the page's groups: draw, else the first take, meld or discard."""
    legal = view["legal"]
    if legal["draw"] is not None:
        return legal["draw"]
    if legal["take"]:
        return legal["take"][min(legal["take"])]
    return legal["melds"][0]["action"] if legal["melds"] else next(iter(legal["discards"].values()))


class Load:
    """Latencies and answer codes by request kind, shared by the client threads."""

    def __init__(self, base: str, deadline: float, patience: float):
        self.base, self.deadline, self.patience = base, deadline, patience
        self.times: dict[str, list[float]] = defaultdict(list)
        self.codes: dict[str, Counter[str]] = defaultdict(Counter)
        self.cut_short = 0
        self.lock = threading.Lock()

    def call(
        self, kind: str, path: str, body: dict[str, Any] | None = None, method: str | None = None
    ) -> tuple[int, dict[str, Any]]:
        """POST ``body`` as JSON to ``path`` (GET without one, or ``method``), timed under ``kind``:
        the status (0: unanswered within the patience) and the answer's JSON."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data, {"Content-Type": "application/json"}, method=method)
        start = time.perf_counter()
        try:
            with urllib.request.urlopen(request, timeout=self.patience) as response:
                answer, status = json.loads(response.read()), response.status
        except urllib.error.HTTPError as error:
            answer, status = json.loads(error.read()), error.code
        except (TimeoutError, urllib.error.URLError):  # no answer in time (or no connection)
            answer, status = {}, 0
        with self.lock:
            self.times[kind].append(time.perf_counter() - start)
            self.codes[kind]["unanswered" if status == 0 else str(status)] += 1
            self.cut_short += kind == "hint" and status == 200 and answer["search"]["cut_short"]
        return status, answer

    def step(self, view: dict[str, Any], seats: list[Any], hint: bool) -> dict[str, Any]:
        """One request of a person at ``view``: a new game when it is over (closing the finished
        one first, as the page does), else (a hint first with ``hint``) the person's move or an
        agent's; the table after it."""
        sid, version = view["session"], view["version"]
        if view["over"]:
            if sid is not None:
                self.call("close", f"/api/sessions/{sid}", method="DELETE")
            status, answer = self.call("new", "/api/sessions", {"seats": seats})
            return answer if status == 200 else view
        if view["your_turn"]:
            if hint:
                self.call("hint", f"/api/sessions/{sid}/hint", {"version": version})
            move = {"action": person_move(view), "version": version}
            status, answer = self.call("move", f"/api/sessions/{sid}/move", move)
        else:
            status, answer = self.call("advance", f"/api/sessions/{sid}/advance", {"version": version})
        if status == 200:
            return answer
        return self.call("view", f"/api/sessions/{sid}")[1]  # unanswered or refused: read the table again

    def player(self, level: int, hint: bool) -> None:
        """A person at a table with the agent ``level`` until the time is up (asking hints with ``hint``)."""
        seats = ["you", level]
        view: dict[str, Any] = {"over": True, "session": None, "version": 0}
        while time.monotonic() < self.deadline:
            view = self.step(view, seats, hint)

    def rows(self) -> dict[str, dict[str, Any]]:
        """Per request kind: count, answer codes, p50/p99/max seconds."""
        return {
            kind: {
                "count": len(ts),
                "codes": dict(sorted(self.codes[kind].items())),
                "p50_s": float(np.percentile(ts, 50)),
                "p99_s": float(np.percentile(ts, 99)),
                "max_s": float(max(ts)),
            }
            for kind, ts in sorted(self.times.items())
        }


def peak_mb(pid: int) -> float:
    """The peak resident memory of process ``pid`` (``VmHWM`` of ``/proc/PID/status``), MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for process {pid}")


def deadline_overruns(trials: int, deadline: float = 0.5) -> list[float]:
    """Seconds past ``deadline`` of ``trials`` searches (``rollout,deadline=…``, a mid-deal
    position) while two threads keep both cores busy with searches of their own."""
    from treppen import agents
    from treppen_env import raw_env

    env = raw_env(num_players=2)
    env.reset(seed=11)
    greedy = agents.load("greedy")
    for _ in range(12):
        env.step(greedy.act(env.observe(env.agent_selection)))
    obs = env.observe(env.agent_selection)
    agents.load("rollout,playouts=16").act(obs)  # the kernels loaded before timing
    stop = threading.Event()

    def burn(seed: int) -> None:
        busy = agents.load("rollout,seconds=0.2", seed=seed)
        while not stop.is_set():
            busy.act(obs)

    burners = [threading.Thread(target=burn, args=(k,)) for k in range(2)]
    for t in burners:
        t.start()
    try:
        overruns = []
        for k in range(trials):
            searcher = agents.load(f"rollout,deadline={deadline}", seed=k)
            start = time.monotonic()
            searcher.act(obs)
            overruns.append(time.monotonic() - start - deadline)
        return overruns
    finally:
        stop.set()
        for t in burners:
            t.join()


def serve_load(args: argparse.Namespace) -> dict[str, Any]:
    """Start the server, run the load, stop it; the figures."""
    base = f"http://127.0.0.1:{args.port}"
    command = [sys.executable, "-m", "treppen.apps.cli", "serve", "--port", str(args.port), "--max-sessions", "256"]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(120):
            try:
                with urllib.request.urlopen(base + "/api/config", timeout=5) as response:
                    agents = json.loads(response.read())["agents"]
                break
            except OSError:
                time.sleep(1)
        else:
            raise RuntimeError("treppen serve did not answer within 120 s")
        load = Load(base, time.monotonic() + args.seconds, args.patience)
        cycle = args.levels or list(range(len(agents)))
        threads = [threading.Thread(target=load.player, args=(cycle[k % len(cycle)], False)) for k in range(args.games)]
        threads += [threading.Thread(target=load.player, args=(cycle[0], True)) for _ in range(args.hinters)]
        load_before = os.getloadavg()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        memory = peak_mb(server.pid)
    finally:
        server.terminate()
        server.wait(30)
    return {
        "levels": [agents[i] for i in cycle],
        "requests": load.rows(),
        "hints_cut_short": load.cut_short,
        "peak_mb": memory,
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_serve_load load", description="the page under load")
    parser.add_argument("--games", type=int, default=30)
    parser.add_argument("--hinters", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument("--levels", type=int, nargs="+", default=[0, 2], help="the agents the games cycle through")
    parser.add_argument("--patience", type=float, default=30, help="seconds a client waits for an answer")
    parser.add_argument("--deadline-trials", type=int, default=0, help="time deadline searches under load first")
    parser.add_argument("--out", type=Path, default=RESULTS / "bench_serve_load.json")
    args = parser.parse_args(argv)
    doc: dict[str, Any] = {"games": args.games, "hinters": args.hinters, "seconds": args.seconds}
    if args.deadline_trials:
        overruns = deadline_overruns(args.deadline_trials)
        doc["deadline_overrun_s"] = {"trials": len(overruns), "median": float(np.median(overruns)),
                                     "max": max(overruns)}  # fmt: skip
        print(f"deadline 0.5 s, two busy threads: overrun median {np.median(overruns) * 1000:.1f} ms, "
              f"max {max(overruns) * 1000:.1f} ms over {len(overruns)} searches")  # fmt: skip
    if args.seconds > 0:
        doc.update(serve_load(args))
        print(f"levels {doc['levels']}, {args.games} games, {args.hinters} hint clients, {args.seconds:g} s")
        print(f"{'request':8s} {'count':>6s} {'p50 s':>7s} {'p99 s':>7s} {'max s':>7s}  answers")
        for kind, row in doc["requests"].items():
            codes = ", ".join(f"{code}: {n}" for code, n in row["codes"].items())
            print(f"{kind:8s} {row['count']:6d} {row['p50_s']:7.3f} {row['p99_s']:7.3f} {row['max_s']:7.3f}  {codes}")
        print(f"hints cut short: {doc['hints_cut_short']}   server peak memory: {doc['peak_mb']:.0f} MB")
        print(f"load average before {doc['loadavg_before']}, after {doc['loadavg_after']}")
    write(args.out, doc)
    return 0


# --- upload: memory under replay uploads

#: The server of ``upload``: the page with greedy as its only level, on the port given.
UPLOAD_SERVER = (
    "import sys, uvicorn; from treppen.apps.web import create_app; "
    "uvicorn.run(create_app(['greedy']), host='127.0.0.1', port=int(sys.argv[1]), log_level='warning')"
)


def largest_record_file(folder: Path) -> bytes:
    """Tournament deals (random against greedy) repeated to just under ``MAX_RECORD_BYTES``, each
    line a valid record."""
    from treppen.apps.web_replay import MAX_RECORD_BYTES
    from treppen.arena.tournament import run_tournament

    path = folder / "deals.jsonl"
    run_tournament({"random": "random", "greedy": "greedy"}, decks=4, record_to=path)
    lines = path.read_bytes().splitlines(keepends=True)
    out, size, i = [], 0, 0
    while size + len(lines[i % len(lines)]) <= MAX_RECORD_BYTES:
        out.append(lines[i % len(lines)])
        size += len(out[-1])
        i += 1
    return b"".join(out)


def memory_kb(pid: int) -> dict[str, int]:
    """``VmRSS`` and ``VmHWM`` (peak) of process ``pid`` in kB (``/proc/PID/status``, Linux only)."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0])
    return fields


def upload(url: str, content: bytes) -> tuple[int, float]:
    """Post ``content`` to the replay endpoint; the status and the seconds it took."""
    request = urllib.request.Request(url, data=content, headers={"Content-Type": "application/octet-stream"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=600) as response:
        json.load(response)
        return response.status, time.perf_counter() - started


def upload_main(argv: Sequence[str] | None = None) -> int:
    """Memory of ``treppen serve`` under replay uploads: peak server RSS while ``--uploads`` clients
    each post a record file of the largest size the server takes (:func:`largest_record_file`).
    The server runs in a child process on 127.0.0.1; its peak resident memory is read from
    ``/proc/PID/status`` (``VmHWM``) after the uploads. Target: under 500 MB with 4 uploads at once.
    ``bench_serve_load.py upload [--uploads 4] [--deal 2]``.
    """
    parser = argparse.ArgumentParser(prog="bench_serve_load upload", description="memory under replay uploads")
    parser.add_argument("--uploads", type=int, default=4, help="uploads at once (default 4)")
    parser.add_argument("--deal", type=int, default=2, help="the deal each upload asks for (default 2)")
    parser.add_argument("--out", type=Path, default=RESULTS / "bench_serve_upload.json")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        content = largest_record_file(Path(tmp))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    server = subprocess.Popen([sys.executable, "-c", UPLOAD_SERVER, str(port)])
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(200):
            try:
                urllib.request.urlopen(f"{base}/api/config", timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        idle = memory_kb(server.pid)
        url = f"{base}/api/replay?deal={args.deal}"
        with ThreadPoolExecutor(args.uploads) as pool:
            results = list(pool.map(lambda _: upload(url, content), range(args.uploads)))
        after = memory_kb(server.pid)
    finally:
        server.terminate()
        server.wait(10)
    print(f"{args.uploads} uploads of {len(content) / 2**20:.1f} MiB each at once: statuses {[s for s, _ in results]}")
    print(f"seconds per upload: {', '.join(f'{t:.1f}' for _, t in results)}")
    mib = {k: v / 1024 for k, v in after.items()}
    print(f"server RSS: {idle['VmRSS'] / 1024:.0f} MiB idle, peak {mib['VmHWM']:.0f} MiB, {mib['VmRSS']:.0f} MiB after")
    doc = {"uploads": args.uploads, "upload_mib": len(content) / 2**20, "seconds": [t for _, t in results],
           "idle_rss_mib": idle["VmRSS"] / 1024, "peak_rss_mib": mib["VmHWM"]}  # fmt: skip
    write(args.out, doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(run_variant({"load": main, "upload": upload_main}, default="load"))
