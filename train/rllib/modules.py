"""RLlib pieces of ``backend: rllib`` that run inside Ray's env runners and learner (docs/ARCHITECTURE.md "Scale-out").

- :class:`TreppenRLlibEnv`: the AEC env through RLlib's ``PettingZooEnv`` wrapper, with the
  observation dict's ``observation`` key renamed ``observations`` (the key RLlib's action-masking
  modules expect) and a ``render()`` PettingZoo accepts (the wrapper passes ``render_mode``).
- :class:`MaskedPolicyModule`: the trained PPO module (new API stack): the SB3 backend's networks
  (an MLP policy with a separate value MLP, or the action-feature net of
  :mod:`treppen.train.common.action_feature_net`); illegal actions get logit ``FLOAT_MIN`` before RLlib
  builds the distribution, in every forward pass (sampling, inference and the PPO loss).
  :class:`ModuleStudent` is it as the imitation warm start's student.
- :class:`AgentModule`: an untrained module that plays one of the project's agents (random,
  greedy or an ``opponent_agents`` spec) from the observation, for the self-play opponents.
- :class:`SeatMapping`: the per-episode ``policy_mapping_fn``: the learner takes one seat, every
  other seat draws one of the opponent kinds of the SB3 backend's pool
  (:data:`treppen.train.common.config.OPPONENT_KINDS`): random, greedy, a frozen snapshot of the learner, the
  keep-best model or a named agent.

Importing this module imports Ray; :mod:`treppen.agents` never does.
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Hashable
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI
from ray.rllib.core.rl_module.rl_module import RLModule
from ray.rllib.core.rl_module.torch import TorchRLModule
from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv
from ray.rllib.utils.torch_utils import FLOAT_MIN
from torch import nn

import treppen_env
from treppen.train.common.config import OPPONENT_KINDS
from treppen.train.common.imitation import Student
from treppen_env.rules import make_rules

LEARNER = "learner"
RANDOM = "random"
GREEDY = "greedy"
BEST = "best"
OBS_KEY = "observations"
"""The observation key of RLlib's action-masking modules (the env's own key is ``observation``)."""


def snapshot_id(slot: int) -> str:
    """Module id of snapshot slot ``slot`` (``snapshot_<slot>``)."""
    return f"snapshot_{slot}"


def named_agent_id(index: int) -> str:
    """Module id of the ``index``-th ``opponent_agents`` spec (``agent_<index>``)."""
    return f"agent_{index}"


class TreppenRLlibEnv(PettingZooEnv):
    """``PettingZooEnv(treppen_env.env(...))`` with observations ``{"observations", "action_mask"}``.

    Each step returns the observation of the agent to move only; at the end of a deal every agent
    gets its final reward (RLlib's multi-agent contract, 2-4 players).

    :param config: RLlib's ``env_config``: ``num_players`` and ``rules`` (a :class:`~treppen_env.rules.Rules`).
    """

    def __init__(self, config: dict[str, Any] | None = None):
        config = dict(config or {})
        env = treppen_env.env(
            num_players=config.get("num_players", 2), rules=config.get("rules", "treppenromme"), render_mode="ansi"
        )
        super().__init__(env)
        spaces: dict[Any, gym.Space] = {
            agent: _rename_space(env.observation_space(agent)) for agent in env.possible_agents
        }
        self.observation_spaces = spaces
        self.observation_space = gym.spaces.Dict(spaces)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, infos = super().reset(seed=seed, options=options)
        return _rename(obs), infos

    def step(self, action):
        obs, rewards, terminateds, truncateds, infos = super().step(action)
        return _rename(obs), rewards, terminateds, truncateds, infos

    def render(self) -> str | None:  # type: ignore[override]
        """The table as text (RLlib's wrapper passes an argument PettingZoo's ``render()`` lacks)."""
        return self.env.render()


def _rename_space(space: Any) -> gym.spaces.Dict:
    return gym.spaces.Dict({OBS_KEY: space["observation"], "action_mask": space["action_mask"]})


def _rename(obs: dict[str, dict[str, np.ndarray]]) -> dict[str, dict[str, np.ndarray]]:
    return {agent: {OBS_KEY: o["observation"], "action_mask": o["action_mask"]} for agent, o in obs.items()}


def mlp(sizes: list[int], activation: str) -> nn.Sequential:
    """Linear layers of ``sizes`` with ``activation`` (``tanh`` or ``relu``) between them."""
    layers: list[nn.Module] = []
    for i, (n_in, n_out) in enumerate(itertools.pairwise(sizes)):
        layers.append(nn.Linear(n_in, n_out))
        if i < len(sizes) - 2:
            layers.append(nn.Tanh() if activation == "tanh" else nn.ReLU())
    return nn.Sequential(*layers)


class MaskedPolicyModule(TorchRLModule, ValueFunctionAPI):
    """PPO module over ``{"observations", "action_mask"}``: masked policy logits and a value.

    ``model_config["policy"]`` picks the network, as the SB3 backend's ``policy`` key does:

    - ``mlp``: ``self.pi``, an MLP (``net_arch`` hidden sizes, ``activation``) from observations
      (B, OBS_SIZE) float32 to logits (B, 898), and a separate value MLP ``self.vf``;
    - ``action_features``: the action-feature net, :class:`treppen.train.common.action_feature_net.ActionFeatureNet`
      (``self.net``; ``rules``, ``card_dim``, ``action_dim``, state embedding
      ``net_arch[-1]`` wide) and a linear value of its state embedding (``self.value``).

    Illegal actions get ``FLOAT_MIN`` logits, so they are never sampled and carry no probability in
    the PPO loss or the entropy.
    """

    def setup(self) -> None:
        config = _model_config(self)
        hidden = list(config.get("net_arch", [256, 256]))
        self.kind = config.get("policy", "mlp")
        if self.kind == "action_features":
            from treppen.train.common.action_feature_net import ActionFeatureNet

            self.net = ActionFeatureNet(
                config.get("rules", "treppenromme"),
                card_dim=config.get("card_dim", 64),
                hidden=hidden[-1],
                action_dim=config.get("action_dim", 64),
                features=config.get("features", "cards"),
            )
            self.value = nn.Linear(hidden[-1], 1)
            return
        activation = config.get("activation", "tanh")
        obs_space, action_space = self.observation_space, self.action_space
        assert isinstance(obs_space, gym.spaces.Dict) and isinstance(action_space, gym.spaces.Discrete)
        obs_size = gym.spaces.flatdim(obs_space[OBS_KEY])
        self.pi = mlp([obs_size, *hidden, int(action_space.n)], activation)
        self.vf = mlp([obs_size, *hidden, 1], activation)

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        obs = batch[Columns.OBS]
        x = obs[OBS_KEY]
        legal = obs["action_mask"].bool()
        logits = self.net(x, legal)[0] if self.kind == "action_features" else self.pi(x)
        return {Columns.ACTION_DIST_INPUTS: logits.masked_fill(~legal, FLOAT_MIN)}

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> torch.Tensor:
        x = batch[Columns.OBS][OBS_KEY]
        if self.kind == "action_features":
            return self.value(self.net.encode(x)[1]).squeeze(-1)
        return self.vf(x).squeeze(-1)


class ModuleStudent(Student):
    """The learner's module as the imitation warm start's student
    (:class:`treppen.train.common.imitation.Student`): it trains the module itself, with an Adam
    optimizer of its own.

    :param module: the :class:`MaskedPolicyModule`, trained in place.
    :param learning_rate: the optimizer's step size (imitation sets its own per fit).
    """

    def __init__(self, module: MaskedPolicyModule, learning_rate: float):
        super().__init__(module, torch.optim.Adam(module.parameters(), lr=learning_rate, eps=1e-5))

    def _batch(self, obs: Any, masks: np.ndarray) -> dict[str, Any]:
        legal = torch.as_tensor(np.asarray(masks, dtype=bool))
        return {Columns.OBS: {OBS_KEY: torch.as_tensor(obs, dtype=torch.float32), "action_mask": legal}}

    def evaluate(self, obs: torch.Tensor, actions: torch.Tensor, masks: np.ndarray) -> tuple[Any, torch.Tensor]:
        batch = self._batch(obs, masks)
        module: Any = self.module
        logits = module._forward(batch)[Columns.ACTION_DIST_INPUTS]
        log_prob = torch.log_softmax(logits, dim=1).gather(1, actions[:, None]).squeeze(1)
        return module.compute_values(batch), log_prob

    def act(self, obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        module: Any = self.module
        with torch.no_grad():
            logits = module._forward(self._batch(obs, masks))[Columns.ACTION_DIST_INPUTS]
        return logits.argmax(dim=1).numpy()


class AgentModule(RLModule):
    """An untrained module playing a project agent: ``model_config = {"agent": spec, "rules":
    Rules, "seed": int}`` with ``spec`` ``random``, ``greedy`` or any ``agents.load`` spec (a model
    file must exist on every node). It outputs actions directly."""

    def setup(self) -> None:
        from treppen.train.common.pool_agents import make_agent

        config = _model_config(self)
        rules = make_rules(config.get("rules", "treppenromme"))
        self.agent = make_agent(config.get("agent", RANDOM), seed=config.get("seed"), rules=rules)

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        obs = batch[Columns.OBS]
        observations, masks = _numpy(obs[OBS_KEY]), _numpy(obs["action_mask"])
        actions = [
            self.agent.act({"observation": o, "action_mask": m}) for o, m in zip(observations, masks, strict=True)
        ]
        return {Columns.ACTIONS: np.asarray(actions, dtype=np.int64)}

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        raise NotImplementedError(f"{self.agent!r} is a fixed opponent; it is not trained")

    def get_state(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return {}

    def set_state(self, state: dict[str, Any]) -> None:
        pass


def _numpy(x: Any) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


class SeatMapping:
    """RLlib's ``policy_mapping_fn`` for self-play, drawn per episode from the episode id.

    The learner (module ``learner``) takes seat ``h % num_players`` with ``h`` a stable hash of the
    episode id; every other seat draws an opponent kind of :data:`treppen.train.common.config.OPPONENT_KINDS` with
    the given probabilities: ``random``, ``greedy`` and ``best`` are modules of those names,
    ``snapshot`` is ``snapshot_<k>`` (``k`` uniform over the ``snapshots`` slots) and ``agent`` is
    ``agent_<k>`` (``k`` uniform over the ``agents`` specs). Stable: an agent keeps its module for
    the whole episode (RLlib may ask more than once).

    :param num_players: seats (2-4).
    :param probs: probability per opponent kind (normalised; missing kinds have 0).
    :param snapshots: number of snapshot slots (0: no ``snapshot`` kind).
    :param agents: number of ``opponent_agents`` specs (0: no ``agent`` kind).
    :raises ValueError: for an unknown kind, or no probability left.
    """

    def __init__(self, num_players: int, probs: dict[str, float], snapshots: int, agents: int = 0):
        unknown = sorted(set(probs) - set(OPPONENT_KINDS))
        if unknown:
            raise ValueError(f"unknown opponent kind(s) {unknown}; choose from {list(OPPONENT_KINDS)}")
        self.num_players = num_players
        self.slots = {"snapshot": (snapshots, snapshot_id), "agent": (agents, named_agent_id)}
        empty = {kind for kind, (count, _) in self.slots.items() if count == 0}
        weights = np.array([0.0 if k in empty else probs.get(k, 0.0) for k in OPPONENT_KINDS])
        if not weights.sum() > 0:
            raise ValueError(f"opponent probabilities {probs} leave no opponent kind to draw")
        self.probs = weights / weights.sum()

    def __call__(self, agent_id: Hashable, episode: Any, **kwargs: Any) -> str:
        h = zlib.crc32(str(episode.id_).encode())
        seat = int(str(agent_id).rsplit("_", 1)[-1])
        if seat == h % self.num_players:
            return LEARNER
        rng = np.random.default_rng([h, seat])
        kind = OPPONENT_KINDS[int(rng.choice(len(OPPONENT_KINDS), p=self.probs))]
        if kind in self.slots:
            count, module_id = self.slots[kind]
            return module_id(int(rng.integers(count)))
        return kind


def _model_config(module: RLModule) -> dict[str, Any]:
    """A module's ``model_config`` as the dict our specs give (RLlib also allows its dataclass)."""
    config = module.model_config
    return config if isinstance(config, dict) else {}
