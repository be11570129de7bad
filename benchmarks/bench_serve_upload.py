"""Memory of ``treppen serve`` under replay uploads (not a test): peak server RSS while
``--uploads`` clients each post a record file of the largest size the server takes.

Usage: ``python benchmarks/bench_serve_upload.py [--uploads 4] [--deal 2]``

The record file is a short tournament's deals (random against greedy), repeated until it is just
under ``apps.web_replay.MAX_RECORD_BYTES``. The server runs in a child process on 127.0.0.1; its peak
resident memory is read from ``/proc/PID/status`` (``VmHWM``, Linux only) after the uploads.
Target: under 500 MB with 4 uploads at once.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from treppen.apps.web_replay import MAX_RECORD_BYTES

SERVER = "import sys, uvicorn; from apps.web import create_app; uvicorn.run(create_app(['greedy']), host='127.0.0.1', port=int(sys.argv[1]), log_level='warning')"  # noqa: E501


def largest_record_file(folder: Path) -> bytes:
    """Tournament deals repeated to just under ``MAX_RECORD_BYTES`` (each line a valid record)."""
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
    """``VmRSS`` and ``VmHWM`` (peak) of process ``pid`` in kB."""
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


def main() -> int:
    parser = argparse.ArgumentParser(prog="bench_serve_upload", description=__doc__.splitlines()[0])
    parser.add_argument("--uploads", type=int, default=4, help="uploads at once (default 4)")
    parser.add_argument("--deal", type=int, default=2, help="the deal each upload asks for (default 2)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        content = largest_record_file(Path(tmp))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(port)])
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
