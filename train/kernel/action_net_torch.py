"""The policy of ``backend: kernel``: legal actions as feature rows, the action net in torch, its
masked log-probabilities, and its export to the kernels (:mod:`treppen_env.agent_core.action_net_kernels`).

A position's legal actions are ``n`` rows of ``F`` features (:func:`treppen.agents.action_net.legal_rows`:
the static action table of :func:`treppen.agents.action_features.action_table`, and with
``features: heuristic`` the greedy heuristic's view of each action, :mod:`treppen_env.agent_core.feature_kernels`;
with ``features: planner`` the planner's),
a batch's positions one after another (flat, ``(N, F)``, with each position's count). The state is
read through the observation's nonzero entries only (:func:`nonzero_entries`). :class:`ActionNet`
scores each row against the state, as the kernels do (the formulas are in
:mod:`treppen_env.agent_core.action_net_kernels`), into logits padded to the most legal actions of a
position in the batch: a frozen copy plays any seat inside the kernels and equals the torch logits
within 1e-5 (tests/train/test_kernel_ppo.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import nn

from treppen.agents.action_features import ACTION_FEATURES
from treppen.agents.action_net import legal_rows, load_weights, num_features
from treppen.agents.heuristic_features import VIEWS
from treppen_env.agent_core import action_net_kernels
from treppen_env.agent_core.feature_kernels import H_PICK
from treppen_env.files import atomic_write
from treppen_env.observation import OBS_SIZE


class Entries(NamedTuple):
    """The nonzero entries of a batch of observations, row by row (as ``nonzero`` lists them).

    :ivar cols: int64 (E,), the entries' columns; ``values``: float32 (E,), their values.
    :ivar counts: int64 (B,), the entries of each observation.
    """

    cols: Any
    values: Any
    counts: Any

    def map(self, convert: Callable[[Any], Any]) -> Entries:
        """The entries with ``convert`` applied to each field (e.g. NumPy to torch)."""
        return Entries(cols=convert(self.cols), values=convert(self.values), counts=convert(self.counts))


def nonzero_entries(obs: np.ndarray) -> Entries:
    """The nonzero entries (NumPy arrays) of observations, float32 (B, 969)
    (:func:`treppen_env.agent_core.action_net_kernels.nonzero_entries`)."""
    cols, values, counts = action_net_kernels.nonzero_entries(obs)
    return Entries(cols=cols, values=values, counts=counts)


class ActionNet(nn.Module):
    """Logits of padded legal-action rows and the state's value (see the module docstring).

    :param hidden: the state's hidden units ``H``; ``action_dim``: an action's units ``D``.
    :param features: ``cards``, ``heuristic`` or ``planner`` (the columns of :func:`num_features`).
    :param pick_init: the initial weight of the heuristic's pick column (``features: heuristic`` or
        ``planner``): a positive value starts the policy near that heuristic.
    """

    def __init__(self, hidden: int = 256, action_dim: int = 64, features: str = "heuristic", pick_init: float = 0.0):
        super().__init__()
        self.hidden, self.action_dim, self.features = hidden, action_dim, features
        f = num_features(features)
        bound = OBS_SIZE**-0.5  # nn.Linear's initialisation, the weights stored (inputs, H)
        self.w0 = nn.Parameter(torch.empty(OBS_SIZE, hidden).uniform_(-bound, bound))
        self.b0 = nn.Parameter(torch.empty(hidden).uniform_(-bound, bound))
        self.state_in = nn.Linear(hidden, action_dim)  # Wh, ba
        self.action_in = nn.Linear(f, action_dim, bias=False)  # Wa
        self.action_out = nn.Linear(action_dim, 1, bias=False)  # wo
        self.linear = nn.Linear(f, 1, bias=False)  # u
        self.value_head = nn.Linear(hidden, 1)
        nn.init.normal_(self.action_out.weight, std=0.01)  # a near-uniform policy at the start
        nn.init.zeros_(self.linear.weight)
        if features in VIEWS and pick_init:
            with torch.no_grad():
                self.linear.weight[0, ACTION_FEATURES + H_PICK] = pick_init

    def forward(
        self, obs: torch.Tensor, feats: torch.Tensor, counts: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Masked logits (B, K), -inf after each position's legal actions, and values (B,).

        :param obs: float32 (B, 969); ``feats``: float32 (N, F), the positions' legal rows one after
            another (:class:`treppen.agents.action_net.LegalRows`); ``counts``: int64 (B,), their number.
        """
        rows, cols = obs.nonzero(as_tuple=True)
        entries = Entries(cols=cols, values=obs[rows, cols], counts=torch.bincount(rows, minlength=obs.shape[0]))
        return self.score(entries, feats, counts)

    def score(self, entries: Entries, feats: torch.Tensor, counts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`forward` from the observations' nonzero :class:`Entries` (torch tensors); ``K`` is
        the most legal actions of a position (at least 1)."""
        h = torch.tanh(self.body(entries))
        rows = torch.repeat_interleave(torch.arange(len(counts), device=counts.device), counts)
        ks = torch.arange(len(rows), device=counts.device) - (torch.cumsum(counts, 0) - counts)[rows]
        z = torch.relu(self.action_in(feats) + self.state_in(h)[rows])
        scores = (self.action_out(z) + self.linear(feats)).squeeze(-1)
        width = max(int(counts.max()), 1) if len(counts) else 1
        logits = torch.full((len(counts), width), -torch.inf, dtype=scores.dtype, device=scores.device)
        return logits.index_put((rows, ks), scores), self.value_head(h).squeeze(-1)

    def body(self, entries: Entries) -> torch.Tensor:
        """The state's hidden units before ``tanh`` (B, H): the weight rows of the observations'
        nonzero entries only (about 40 of 969), summed by ``embedding_bag``, plus the bias."""
        offsets = torch.cumsum(entries.counts, 0) - entries.counts
        summed = nn.functional.embedding_bag(
            entries.cols, self.w0, offsets, mode="sum", per_sample_weights=entries.values
        )
        return summed + self.b0

    def shape(self) -> np.ndarray:
        """The kernels' int64 shape: observation size, H, F, D."""
        return np.array([OBS_SIZE, self.hidden, num_features(self.features), self.action_dim], dtype=np.int64)

    def _tensors(self) -> dict[str, torch.Tensor]:
        """The tensors of the flat layout, each as the kernels read it (rows = inputs)."""
        return {
            "w0": self.w0,
            "b0": self.b0,
            "wh": self.state_in.weight.T,
            "ba": self.state_in.bias,
            "wa": self.action_in.weight.T,
            "wo": self.action_out.weight[0],
            "u": self.linear.weight[0],
            "vw": self.value_head.weight[0],
            "vb": self.value_head.bias,
        }

    def export(self) -> np.ndarray:
        """The flat float32 weights of :func:`treppen_env.agent_core.action_net_kernels.layout`."""
        places = action_net_kernels.layout(*self.shape().tolist())
        w = np.zeros(places["size"][0], dtype=np.float32)
        for name, tensor in self._tensors().items():
            start, shape = places[name]
            w[start : start + int(np.prod(shape))] = tensor.detach().cpu().numpy().reshape(-1)
        return w

    def load_flat(self, w: np.ndarray) -> None:
        """Set the weights from flat float32 weights of this net's shape (the inverse of :meth:`export`)."""
        places = action_net_kernels.layout(*self.shape().tolist())
        with torch.no_grad():
            for name, tensor in self._tensors().items():
                start, shape = places[name]
                tensor.copy_(torch.tensor(w[start : start + int(np.prod(shape))].reshape(shape)))

    def save(self, path: str | Path) -> Path:
        """Write ``.npz`` (atomically): the flat weights ``w``, ``shape`` and ``features``."""
        w, shape = self.export(), self.shape()
        return atomic_write(
            path, lambda tmp: np.savez(tmp, w=w, shape=shape, features=np.array(self.features)), suffix=".npz"
        )

    @classmethod
    def load(cls, path: str | Path) -> ActionNet:
        """The net saved by :meth:`save`.

        :raises FileNotFoundError: when there is no such file.
        :raises ValueError: when the weights do not fit the shape.
        """
        w, shape, features = load_weights(path)
        net = cls(int(shape[action_net_kernels.SH_HIDDEN]), int(shape[action_net_kernels.SH_ACTION]), features)
        net.load_flat(w)
        return net


def masked_log_probs(
    logits: torch.Tensor, valid: torch.Tensor, index: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probabilities of the chosen rows ``index`` (int64 (B,)) and the entropies (B,) of the
    softmax over each row's valid entries: ``where(valid, logits, -inf)``, ``log_softmax``, ``gather``.

    :param logits: float (B, K); ``valid``: bool (B, K), at least one entry per row.
    """
    logp = torch.log_softmax(logits.masked_fill(~valid, -torch.inf), dim=1)
    chosen = logp.gather(1, index[:, None]).squeeze(1)
    finite = logp.masked_fill(~valid, 0.0)  # no 0 * -inf, in the forward pass nor in the gradient
    entropy = -(finite.exp().masked_fill(~valid, 0.0) * finite).sum(1)
    return chosen, entropy


def legal_mask(counts: torch.Tensor, width: int) -> torch.Tensor:
    """bool (B, ``width``): True at each position's first ``counts`` (int64 (B,)) entries, where
    :meth:`ActionNet.score` puts its logits."""
    return torch.arange(width, device=counts.device)[None, :] < counts[:, None]


class PredictModel:
    """A trained :class:`ActionNet` behind SB3's ``predict(obs, action_masks=..., deterministic=...)``
    and spaces, so the run's evaluation and Elo callbacks (:mod:`treppen.train.common.periodic_ratings`) and
    :class:`treppen.agents.policy.PolicyAgent` play it.

    :param net: the net; ``ctx``: :func:`feature_context`; ``logger``: anything with ``record(key, value)``.
    """

    def __init__(self, net: ActionNet, ctx: tuple[np.ndarray, ...], logger: Any = None):
        import gymnasium as gym

        from treppen_env.actions import NUM_ACTIONS

        self.net, self.ctx, self.logger = net, ctx, logger
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (OBS_SIZE,), np.float32)
        self.action_space: gym.spaces.Space[Any] = gym.spaces.Discrete(NUM_ACTIONS)

    def predict(self, obs: np.ndarray, action_masks: Any = None, deterministic: bool = True, **_: Any) -> tuple:
        """The most probable legal action of each observation (float32 (B, 969) or (969,)); the
        masks (bool (B, 898)) are required."""
        if action_masks is None:
            raise ValueError("the kernel policy needs action_masks")
        single = np.asarray(obs).ndim == 1
        obs = np.ascontiguousarray(np.atleast_2d(obs), dtype=np.float32)
        masks = np.ascontiguousarray(np.atleast_2d(action_masks) != 0).view(np.int8)
        rows = legal_rows(obs, masks, self.ctx, self.net.features)
        device = next(self.net.parameters()).device
        with torch.no_grad():
            logits, _ = self.net(
                torch.from_numpy(obs).to(device),
                torch.from_numpy(rows.feats).to(device),
                torch.from_numpy(rows.counts).to(device),
            )
        actions = rows.acts[rows.offsets[:-1] + logits.argmax(1).cpu().numpy()]
        return (actions[0] if single else actions), None
