"""Label shards as Ray tasks across a cluster's nodes (``treppen label --ray-address ADDR``;
:func:`treppen.train.expert.labels.run_job`). Needs ``pip install 'treppen[ray]'``.

Each task labels one shard (with the function it is given: :func:`treppen.train.expert.labels.label_shard`,
the one the local threads run, so a seeded job gives the same shards) and returns its arrays to the process
that writes them; at most two tasks per CPU of the cluster are in flight. Ray runs a task again
when its worker or node is lost. At the end a line on stderr says how many shards each node
labelled.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from treppen.arena.ray_cluster import init_ray

if TYPE_CHECKING:  # labels.py imports this module when a job runs on Ray
    from treppen.train.expert.labels import LabelJob, Labeller

try:
    import ray
except ImportError as err:  # pragma: no cover - exercised without the extra
    raise ImportError("Ray is not installed: pip install 'treppen[ray]'") from err


@ray.remote(num_cpus=1)
def _label(label: Callable[[LabelJob, int], dict[str, Any]], job: LabelJob, k: int) -> tuple[str, int, dict[str, Any]]:
    """A Ray task: shard ``k`` of the job by ``label``; the node's id, ``k``, the arrays."""
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)
    node = ray.get_runtime_context().get_node_id()
    return node, k, label(job, k)


def on_ray(address: str, label: Callable[[LabelJob, int], dict[str, Any]]) -> Labeller:
    """Label shards as Ray tasks on the Ray instance at ``address``, each by ``label(job, k)`` (see the
    module docstring)."""

    def run(job: LabelJob, todo: Sequence[int]) -> Iterator[tuple[int, dict[str, Any]]]:
        if not todo:
            return
        started = init_ray(address)
        try:
            waiting = iter(todo)
            limit = max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))
            pending = [_label.remote(label, job, k) for _, k in zip(range(limit), waiting, strict=False)]
            per_node: Counter[str] = Counter()
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                node, k, arrays = ray.get(done[0])
                per_node[node] += 1
                yield k, arrays
                pending += [_label.remote(label, job, j) for _, j in zip(range(1), waiting, strict=False)]
            counts = ", ".join(f"{node[:8]} {n}" for node, n in sorted(per_node.items()))
            print(f"ray: {per_node.total()} shards on {len(per_node)} nodes: {counts}", file=sys.stderr)
        finally:
            if started:
                ray.shutdown()

    return run
