"""The network a search plays with (``net=FILE``, :mod:`treppen.agents.search_settings`).

Either net runs inside the search's kernels as the policy of its ``"net"`` playout seats
(:func:`treppen_env.agent_core.playout_kernels.net_choice`):

- the small policy/value net of expert iteration (:mod:`treppen_env.agent_core.policy_value_kernels`, a file of
  :meth:`treppen.train.expert.policy_value_torch.KernelNet.save`), whose value head may also value a playout
  (``value_turns``);
- the batched learner's action net (:mod:`treppen_env.agent_core.action_net_kernels`, a ``final_model.npz``
  of ``backend: kernel``, :func:`treppen.agents.action_net.is_action_net`), which scores the legal
  moves of the seat to move from that seat's observation and the heuristic's view of each move
  (the greedy heuristic's or the planner's, the feature set it was trained with).

The action net is also a prior: from the searcher's observation, its probabilities of the root's
searched moves decide which of them the search plays out (:func:`likely_moves`: the ``prior_k``
most probable, or those holding ``prior_mass`` of the probability; greedy's choice always).
"""

from __future__ import annotations

import os
import pickle
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from treppen.agents.action_net import ActionNetAgent, is_action_net
from treppen.agents.heuristic_features import view_values
from treppen.agents.search_settings import SearchSettings
from treppen_env.agent_core import playout_kernels, policy_value_kernels
from treppen_env.messages import PATH_LIMIT, shorten
from treppen_env.observation import KERNEL_CONSTS, KERNEL_OFFSETS
from treppen_env.rules import Rules

#: What reading a file that is no net raises (numpy, zipfile, pickle; ``ValueError``: numpy's for
#: bytes that are no array file, or weights that do not fit their shape).
UNREADABLE = (EOFError, KeyError, ValueError, OSError, zipfile.BadZipFile, pickle.UnpicklingError)


class SearchNet:
    """A search's network, loaded once per agent (see the module docstring).

    :param path: the small net's ``.npz`` or an action net's ``.npz``.
    :param rules: the game's rules (the action net's features, RULES §5).
    :raises FileNotFoundError: when there is no such file.
    :raises ValueError: naming the file, when it does not read as either net (empty, cut short,
        another file's arrays, a torch checkpoint, random bytes).
    """

    def __init__(self, path: str | os.PathLike[str], rules: Rules):
        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(
                f"no network at {str(path)!r} (an action net's final_model.npz or a KernelNet.save file)"
            )
        try:
            #: The action net as an agent (its probabilities), or None for the small net.
            self.policy = ActionNetAgent(self.path, rules=rules) if is_action_net(self.path) else None
            weights = (
                policy_value_kernels.load(self.path) if self.policy is None else (self.policy.w, self.policy.shape)
            )
        except UNREADABLE as err:
            raise ValueError(
                f"net={shorten(str(path), PATH_LIMIT)}: cannot read it ({type(err).__name__}: {shorten(str(err))}); "
                "give an action net's final_model.npz (backend: kernel) or a KernelNet.save file (backend: expert)"
            ) from None
        self.kind = playout_kernels.SMALL_NET if self.policy is None else playout_kernels.ACTION_NET
        #: The flat float32 weights and int64 shape the kernels read.
        self.w: np.ndarray = weights[0]
        self.shape: np.ndarray = weights[1]

    def require_action_net(self, setting: str) -> None:
        """Refuse ``setting`` unless this is an action net.

        :raises ValueError: naming the setting and the file.
        """
        if self.policy is None:
            raise ValueError(
                f"{setting} needs an action net's probabilities, and {str(self.path)!r} is the small net "
                "(KernelNet); give net=<a final_model.npz of backend: kernel>"
            )

    def check(self, settings: SearchSettings) -> None:
        """Refuse settings this net cannot serve.

        :raises ValueError: for ``value_turns`` with an action net (it has no win-score value head).
        """
        if self.policy is not None and settings.value_turns:
            raise ValueError(
                f"value_turns={settings.value_turns} needs the small net's value head; the action net "
                f"{str(self.path)!r} has none: give value_turns=0"
            )

    def scratch(self, settings: SearchSettings) -> playout_kernels.Scratch:
        """The playout scratch of a decision with this net (:func:`treppen_env.agent_core.playout_kernels.with_net`).

        :raises ValueError: as :meth:`check`.
        """
        self.check(settings)
        policy = self.policy
        return playout_kernels.with_net(
            kind=self.kind,
            w=self.w,
            shape=self.shape,
            features=playout_kernels.NetFeatures(
                table=np.zeros((0, 0), dtype=np.float32) if policy is None else policy.ctx.table,
                values=np.zeros(0) if policy is None else view_values(policy.features),
            ),
            observe=playout_kernels.ObservationLayout(offsets=KERNEL_OFFSETS, consts=KERNEL_CONSTS),
            value=playout_kernels.LeafValue(turns=settings.value_turns, weight=settings.value_weight),
            argmax=settings.net_pick == "argmax",
        )

    def probabilities(self, observation: dict[str, Any]) -> np.ndarray:
        """The action net's probability of every action of ``observation`` (float64 (898,))."""
        self.require_action_net("a prior")
        assert self.policy is not None
        return self.policy.action_probabilities(observation)


def likely_moves(choices: np.ndarray, probs: np.ndarray, k: int, mass: float) -> np.ndarray:
    """The searched moves a prior keeps, in their order: the ``k`` most probable (0: no limit) among
    the fewest most probable whose probabilities sum to at least ``mass`` of the searched moves'
    (1: no limit), and ``choices[0]`` (greedy's choice) always.

    :param choices: int64 (m,) the searched moves, greedy's first; ``probs``: float64 (898,).
    :return: int64 (<= m,), a subset of ``choices``.
    """
    p = probs[choices]
    order = sorted(range(choices.size), key=lambda i: (-p[i], i))
    keep = {0}
    total, kept = p.sum(), 0.0
    for rank, i in enumerate(order):
        if (k and rank >= k) or (mass < 1.0 and kept >= mass * total):
            break
        keep.add(i)
        kept += p[i]
    return choices[sorted(keep)]
