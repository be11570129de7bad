"""``treppen serve``: play, watch and replay deals in a local web page.

Starts the app of :mod:`treppen.apps.web` on uvicorn. It binds 127.0.0.1 unless ``--host`` says otherwise;
the page can seat only the agents given here. Requests must name the server as 127.0.0.1,
localhost, [::1], the ``--host`` address or an ``--allow-host`` name (see :class:`treppen.apps.web.LocalOnly`).
"""

from __future__ import annotations

import argparse

from treppen.agents.zoo import LEVELS
from treppen.apps.options import add_server_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--opponents",
        nargs="+",
        default=list(LEVELS),
        metavar="SPEC",
        help="agents the page may seat, the first chosen when it opens: the levels easy (greedy), medium (the "
        "shipped policy) and hard (the search), random, greedy, a zoo agent, a model .zip, ... "
        "(default: easy medium hard)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    add_server_arguments(parser, 8000, "port")
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="another name the page may be opened by (e.g. this machine's name with --host 0.0.0.0); repeatable",
    )


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted.

    :raises ValueError: for a bad agent spec (or ``human``).
    """
    import uvicorn

    from treppen.apps.web import create_app

    hosts = [args.host, *args.allow_host]
    app = create_app(args.opponents, record_dir=args.record, max_sessions=args.max_sessions, hosts=hosts)
    print(f"treppen serve: open http://{args.host}:{args.port}/ (Ctrl-C stops)")
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0
