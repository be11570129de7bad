"""The kernels' network as an agent: its policy alone, played without search and without torch.

:class:`NetAgent` plays the most probable legal action of the policy head of a network saved by
:meth:`treppen.train.expert.policy_value_torch.KernelNet.save` (``.npz`` of ``w`` and ``shape``), computed by the
kernels of :mod:`treppen_env.agent_core.policy_value_kernels` from the observation alone; ``agents.load`` builds it from
such a file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from treppen.agents.base import Agent, legal_actions
from treppen_env.agent_core import policy_value_kernels


class NetAgent(Agent):
    """The policy of a kernels' network (see the module docstring).

    :param path: the network's ``.npz``.
    :param seed: seeds the agent's generator (sampling with ``deterministic=False``).
    :param deterministic: play the most probable legal action (default), else sample.
    :raises FileNotFoundError: when there is no such file; ``ValueError`` when it is no such net.
    """

    name = "net"

    def __init__(self, path: str | os.PathLike[str], seed: int | None = None, deterministic: bool = True):
        super().__init__(seed)
        self.path = Path(path)
        self.w, self.shape = policy_value_kernels.load(self.path)
        self.deterministic = deterministic
        hidden = int(self.shape[policy_value_kernels.SH_HIDDEN])
        self._h, self._scratch = np.zeros(hidden, np.float32), np.zeros(hidden, np.float32)
        self._logits = np.zeros(policy_value_kernels.NUM_ACTIONS)
        self._rng = np.zeros(1, dtype=np.uint64)

    def __repr__(self) -> str:
        return f"NetAgent({str(self.path)!r}, deterministic={self.deterministic})"

    def act(self, observation: dict[str, Any]) -> int:
        """The policy's action for ``observation`` (a legal one of its mask)."""
        legal_actions(observation)
        obs = np.asarray(observation["observation"], dtype=np.float32)
        mask = np.asarray(observation["action_mask"], dtype=np.int8)
        policy_value_kernels.hidden_units(self.w, self.shape, obs, self._h, self._scratch)
        policy_value_kernels.policy_logits(self.w, self.shape, self._h, mask, self._logits)
        if self.deterministic:
            return int(np.argmax(self._logits))
        self._rng[0] = np.uint64(self.rng.integers(2**63))
        return int(policy_value_kernels.sample_action(self._logits, self._rng))


def is_kernel_net(path: Path) -> bool:
    """Whether ``path`` is a ``.npz`` of the kernels' network (``w`` and ``shape``, and no
    ``features``: that is an action net, :mod:`treppen.agents.action_net`)."""
    with np.load(path) as data:
        return {"w", "shape"} <= set(data.files) and "features" not in data.files
