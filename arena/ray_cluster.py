"""Ray for the command line (docs/ARCHITECTURE.md "Scale-out"): connecting to a Ray instance, and tournament deals
played as Ray tasks (``treppen tournament --ray-address ADDR``). Needs ``pip install 'treppen[ray]'``.

A cluster: ``ray start --head`` on one machine, ``ray start --address <head>:6379`` on the others
(each with treppen installed), then ``--ray-address auto`` (or ``<head>:6379``) on the head.
"""

from __future__ import annotations

import itertools
import os
import sys
import uuid
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from treppen.arena.interrupts import handlers_kept
from treppen.arena.match import build_agents, play_deal

try:
    import ray
except ImportError as err:  # pragma: no cover - exercised without the extra
    raise ImportError("Ray is not installed: pip install 'treppen[ray]'") from err

LOCAL = "local"
"""The address that starts a local Ray instance on 127.0.0.1 (as ``None`` does)."""


def init_ray(address: str | None, num_cpus: int | None = None) -> bool:
    """Connect to Ray, unless this process already is.

    :param address: ``None`` or ``"local"`` start a local instance on 127.0.0.1 (no dashboard; with
        ``RAY_AUTH_MODE=disabled`` unless set, so no auth token lands in the home folder);
        ``"auto"`` or ``"host:port"`` join a running cluster.
    :param num_cpus: CPUs of a local instance (default: all of the machine's).
    :return: whether this call connected (then the caller calls ``ray.shutdown()``).
    :raises ConnectionError: when no cluster answers at ``address``.

    The SIGINT and SIGTERM handlers stay the caller's (:func:`treppen.arena.interrupts.handlers_kept`):
    Ray's own SIGTERM handler would end the process at once, with nothing saved.
    """
    if ray.is_initialized():
        return False
    with handlers_kept():
        if address in (None, LOCAL):
            os.environ.setdefault("RAY_AUTH_MODE", "disabled")
            ray.init(
                address="local",
                num_cpus=num_cpus,
                include_dashboard=False,
                _node_ip_address="127.0.0.1",
                configure_logging=False,
            )
        else:
            ray.init(address=address, configure_logging=False)
    return True


_AGENTS: dict[str, Any] = {}
"""Per worker process: the agents of a tournament, by its token (loaded once per process)."""


@ray.remote(num_cpus=1)
def _play_deals(
    token: str, sources: dict[str, Any], specs: Sequence[Any], game_record: bool
) -> tuple[str, list[dict[str, Any]]]:
    """A Ray task: play ``specs`` with the agents of ``sources`` (specs or pickled agents); returns
    the id of the node it ran on and the records."""
    if token not in _AGENTS:
        _AGENTS.clear()
        _AGENTS[token] = build_agents(sources, specs[0].rules)  # one tournament: one game's rules
        if "torch" in sys.modules:
            sys.modules["torch"].set_num_threads(1)
    node = ray.get_runtime_context().get_node_id()
    return node, [play_deal(spec, _AGENTS[token], game_record) for spec in specs]


def play_on_ray(
    todo: Sequence[Any], agents: Mapping[str, Any], address: str | None, game_record: bool = False, chunk: int = 8
) -> Iterator[dict[str, Any]]:
    """Yield the records of the deals ``todo`` (:class:`treppen.arena.tournament.DealSpec`) as Ray tasks of
    ``chunk`` deals finish; at most two tasks per CPU of the cluster are in flight. At the end a
    line on stderr says how many deals each node played (``ray: 48 deals on 2 nodes: 1a2b3c4d 24,
    5e6f7a8b 24``, by the start of the node ids).

    :param agents: agent by name: ``agents.load`` specs (each worker loads them) or agents (pickled).
    :param address: see :func:`init_ray`.
    :param game_record: add each deal's game record (``arena.match.play_deal``).
    """
    if not todo:
        return
    started = init_ray(address)
    try:
        token = uuid.uuid4().hex
        sources = ray.put(dict(agents))
        chunks = iter([list(todo[i : i + chunk]) for i in range(0, len(todo), chunk)])
        limit = max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))
        pending = [_play_deals.remote(token, sources, c, game_record) for c in itertools.islice(chunks, limit)]
        per_node: Counter[str] = Counter()
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            node, records = ray.get(done[0])
            per_node[node] += len(records)
            yield from records
            pending += [_play_deals.remote(token, sources, c, game_record) for c in itertools.islice(chunks, 1)]
        counts = ", ".join(f"{node[:8]} {n}" for node, n in sorted(per_node.items()))
        print(f"ray: {per_node.total()} deals on {len(per_node)} nodes: {counts}", file=sys.stderr)
    finally:
        if started:
            ray.shutdown()
