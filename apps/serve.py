"""``treppen serve``: play, watch and replay deals in a local web page.

Starts the app of :mod:`treppen.apps.web` on uvicorn. It binds 127.0.0.1 unless ``--host`` says otherwise;
the page can seat only the agents given here. Requests must name the server as 127.0.0.1,
localhost, [::1], the ``--host`` address or an ``--allow-host`` name (see :class:`treppen.apps.web.LocalOnly`).
"""

from __future__ import annotations

import argparse

from treppen.agents.zoo import LEVELS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--opponents",
        nargs="+",
        default=list(LEVELS),
        metavar="SPEC",
        help="agents the page may seat: the levels easy (greedy), medium (the shipped policy) and hard (the "
        "search), random, greedy, a zoo agent, a model .zip, ... (default: easy medium hard)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument(
        "--record", default=None, metavar="DIR", help="append every finished deal to a record file in DIR"
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="another name the page may be opened by (e.g. this machine's name with --host 0.0.0.0); repeatable",
    )
    parser.add_argument("--max-sessions", type=int, default=64, help="games kept at once (default 64)")


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted.

    :raises ValueError: for a bad agent spec (or ``human``), port or session count.
    """
    import uvicorn

    from treppen.apps.web import create_app

    if not 0 <= args.port <= 65535:
        raise ValueError(f"--port {args.port} is not a port 0..65535")
    if args.max_sessions < 1:
        raise ValueError(f"--max-sessions {args.max_sessions}: need at least 1")
    hosts = [args.host, *args.allow_host]
    app = create_app(args.opponents, record_dir=args.record, max_sessions=args.max_sessions, hosts=hosts)
    print(f"treppen serve: open http://{args.host}:{args.port}/ (Ctrl-C stops)")
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0
