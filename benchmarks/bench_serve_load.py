"""Serving (a benchmark, not a test). Variants (the first word; without one, ``load``):

- ``load``: the page under load, many games and hint askers against one ``treppen serve`` process
  for a while, with latency percentiles and the server's peak memory (below);
- ``upload``: the server's peak memory while clients post the largest replay files it takes
  (:func:`upload_main`).

``load`` starts ``treppen serve`` on 127.0.0.1 (the default levels: easy, medium, hard), then runs
``--games`` threads that each play deals as the person would (a legal move from the page's groups,
``advance`` while the agents are to move; a finished deal starts a new one, the games cycle through
the levels, or through ``--levels``, indices of ``/api/config``'s agents) and ``--hinters`` threads
that ask for hints in a loop, for ``--seconds``. It prints the p50 and p99 of each request kind
(seconds), the count of 5xx answers and the server's peak resident memory (``VmHWM``, MB), and
writes them as JSON. Usage::

    python benchmarks/bench_serve_load.py [load] [--games 30] [--hinters 4] [--seconds 60] [--levels 0 1 2]
        [--port 8766]
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import defaultdict
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_serve_load load", description="the page under load")
    parser.add_argument("--games", type=int, default=30)
    parser.add_argument("--hinters", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument("--levels", type=int, nargs="+", help="the agents the games cycle through (default: all)")
    parser.add_argument("--out", type=Path, default=RESULTS / "bench_serve_load.json")
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
