"""The page under load (a benchmark, not a test): many games and hint askers against one
``treppen serve`` process for a while, with latency percentiles and the server's peak memory.

It starts ``treppen serve`` on 127.0.0.1 (the default levels: easy, medium, hard), then runs
``--games`` threads that each play deals as the person would (a legal move from the page's groups,
``advance`` while the agents are to move; a finished deal starts a new one, the games cycle through
the levels, or through ``--levels``, indices of ``/api/config``'s agents) and ``--hinters`` threads
that ask for hints in a loop, for ``--seconds``. It prints the p50 and p99 of each request kind
(seconds), the count of 5xx answers and the server's peak resident memory (``VmHWM``, MB), and
writes them as JSON. Usage::

    python benchmarks/bench_serve_load.py [--games 30] [--hinters 4] [--seconds 60] [--levels 0 1 2] [--port 8766]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from treppen_env.files import atomic_write_text


def person_move(view: dict[str, Any]) -> int:
    """A legal move from the page's groups: draw, else the first take, meld or discard."""
    legal = view["legal"]
    if legal["draw"] is not None:
        return legal["draw"]
    if legal["take"]:
        return legal["take"][min(legal["take"])]
    return legal["melds"][0]["action"] if legal["melds"] else next(iter(legal["discards"].values()))


class Load:
    """Latencies by request kind and 5xx answers, shared by the client threads."""

    def __init__(self, base: str, deadline: float):
        self.base, self.deadline = base, deadline
        self.times: dict[str, list[float]] = defaultdict(list)
        self.errors = 0
        self.lock = threading.Lock()

    def post(self, kind: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST ``body`` as JSON to ``path``, timed under ``kind``; the answer's JSON."""
        request = urllib.request.Request(
            self.base + path, json.dumps(body).encode(), {"Content-Type": "application/json"}, method="POST"
        )
        start = time.perf_counter()
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                answer, status = json.loads(response.read()), response.status
        except urllib.error.HTTPError as error:
            answer, status = json.loads(error.read()), error.code
        with self.lock:
            self.times[kind].append(time.perf_counter() - start)
            self.errors += status >= 500
        return answer

    def game(self, level: int) -> None:
        view = self.post("new", "/api/sessions", {"seats": ["you", level]})
        while time.monotonic() < self.deadline:
            sid, version = view["session"], view["version"]
            if view["over"]:
                view = self.post("new", "/api/sessions", {"seats": ["you", level]})
            elif view["your_turn"]:
                view = self.post("move", f"/api/sessions/{sid}/move", {"action": person_move(view), "version": version})
            else:
                view = self.post("advance", f"/api/sessions/{sid}/advance", {"version": version})

    def hinter(self) -> None:
        view = self.post("new", "/api/sessions", {"seats": ["you", 0]})
        while time.monotonic() < self.deadline:
            sid = view["session"]
            if view["over"]:
                view = self.post("new", "/api/sessions", {"seats": ["you", 0]})
            elif view["your_turn"]:
                self.post("hint", f"/api/sessions/{sid}/hint", {"version": view["version"]})
                move = {"action": person_move(view), "version": view["version"]}
                view = self.post("move", f"/api/sessions/{sid}/move", move)
            else:
                view = self.post("advance", f"/api/sessions/{sid}/advance", {"version": view["version"]})


def peak_mb(pid: int) -> float:
    """The peak resident memory of process ``pid`` (``VmHWM`` of ``/proc/PID/status``), MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for process {pid}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_serve_load", description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=30)
    parser.add_argument("--hinters", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument("--levels", type=int, nargs="+", help="the agents the games cycle through (default: all)")
    parser.add_argument("--out", type=Path, default=Path("runs/bench/bench_serve_load.json"))
    args = parser.parse_args(argv)
    base = f"http://127.0.0.1:{args.port}"
    command = [sys.executable, "-m", "treppen.apps.cli", "serve", "--port", str(args.port), "--max-sessions", "256"]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(120):
            try:
                with urllib.request.urlopen(base + "/api/config", timeout=5) as response:
                    levels = len(json.loads(response.read())["agents"])
                break
            except OSError:
                time.sleep(1)
        else:
            raise RuntimeError("treppen serve did not answer within 120 s")
        load = Load(base, time.monotonic() + args.seconds)
        cycle = args.levels or list(range(levels))
        threads = [threading.Thread(target=load.game, args=(cycle[k % len(cycle)],)) for k in range(args.games)]
        threads += [threading.Thread(target=load.hinter) for _ in range(args.hinters)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        memory = peak_mb(server.pid)
    finally:
        server.terminate()
        server.wait(30)
    rows = {
        kind: {"count": len(ts), "p50_s": float(np.percentile(ts, 50)), "p99_s": float(np.percentile(ts, 99))}
        for kind, ts in sorted(load.times.items())
    }
    for kind, row in rows.items():
        print(f"{kind:8s} {row['count']:6d} requests   p50 {row['p50_s']:.3f} s   p99 {row['p99_s']:.3f} s")
    print(f"5xx answers: {load.errors}   server peak memory: {memory:.0f} MB")
    doc = {"games": args.games, "hinters": args.hinters, "seconds": args.seconds, "requests": rows,
           "server_errors": load.errors, "peak_mb": memory}  # fmt: skip
    atomic_write_text(args.out, json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
