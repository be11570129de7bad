"""The small policy/value network that runs inside the kernels (:mod:`treppen_env.agent_core.policy_value_kernels`): its
torch module, its export to the kernels' flat weights, and its training on labelled positions.

:class:`KernelNet` computes what the kernel computes: ``tanh`` hidden layers over the observation,
masked policy logits, and a ``tanh`` value of the hidden units and the other seats' hands (a
determinized world is fully known). :meth:`KernelNet.export` writes the flat float32 weights and
shape the kernels read (``.npz`` with ``w`` and ``shape``); the kernel's outputs equal the module's
within 1e-5 (tests/train/test_kernel_net.py). :func:`fit` trains the policy on move labels (the
search's chosen moves) and the value on deal results.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

from treppen_env.agent_core import policy_value_kernels
from treppen_env.files import atomic_write
from treppen_env.observation import OBS_SIZE


class KernelNet(nn.Module):
    """The kernels' network (see the module docstring).

    :param hidden: hidden units ``H``; ``depth``: hidden layers (at least 1).
    """

    def __init__(self, hidden: int = 32, depth: int = 1):
        super().__init__()
        if hidden < 1 or depth < 1:
            raise ValueError(f"hidden={hidden} and depth={depth} must be at least 1")
        self.hidden, self.depth = hidden, depth
        self.layers = nn.ModuleList(nn.Linear(OBS_SIZE if k == 0 else hidden, hidden) for k in range(depth))
        self.policy = nn.Linear(hidden, policy_value_kernels.NUM_ACTIONS)
        self.value_head = nn.Linear(hidden + policy_value_kernels.VALUE_EXTRA, 1)

    def body(self, obs: torch.Tensor) -> torch.Tensor:
        h = obs
        for layer in self.layers:
            h = torch.tanh(layer(h))
        return h

    def forward(self, obs: torch.Tensor, masks: torch.Tensor, hands: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Masked logits (B, 898), -inf off the mask, and values (B,) in [-1, 1].

        :param obs: float32 (B, 969); ``masks``: bool (B, 898); ``hands``: float32 (B, 156), the
            other seats' hands (relative seats 1..3, 52 card bits each).
        """
        h = self.body(obs)
        logits = self.policy(h).masked_fill(~masks, -torch.inf)
        value = torch.tanh(self.value_head(torch.cat([h, hands], dim=1))).squeeze(1)
        return logits, value

    def export(self) -> tuple[np.ndarray, np.ndarray]:
        """The kernels' flat float32 weights and int64 shape
        (:func:`treppen_env.agent_core.policy_value_kernels.layout`)."""
        places = policy_value_kernels.layout(OBS_SIZE, self.hidden, self.depth)
        w = np.zeros(places["size"][0], dtype=np.float32)

        def put(name: str, tensor: torch.Tensor) -> None:
            start, shape = places[name]
            w[start : start + int(np.prod(shape))] = tensor.detach().cpu().numpy().reshape(-1)

        for k, layer in enumerate(self.layers):
            assert isinstance(layer, nn.Linear)
            put(f"w{k}", layer.weight.T)  # (in, H): a row per input
            put(f"b{k}", layer.bias)
        put("pw", self.policy.weight)
        put("pb", self.policy.bias)
        put("vw", self.value_head.weight[0])
        put("vb", self.value_head.bias)
        return w, np.array([OBS_SIZE, self.hidden, self.depth], dtype=np.int64)

    def save(self, path: str | Path) -> Path:
        """Write the exported weights as ``.npz`` (atomically)."""
        w, shape = self.export()
        return atomic_write(path, lambda tmp: np.savez(tmp, w=w, shape=shape), suffix=".npz")


def fit(
    net: KernelNet,
    obs: np.ndarray,
    masks: np.ndarray,
    actions: np.ndarray,
    hands: np.ndarray,
    outcomes: np.ndarray,
    epochs: int = 4,
    batch_size: int = 256,
    learning_rate: float = 1e-3,
    seed: int = 0,
) -> dict[str, float]:
    """Train the policy on move labels (cross-entropy) and the value on deal results (squared error).

    :param obs: float32 (B, 969); ``masks``: bool (B, 898); ``actions``: int64 (B,), the labels;
        ``hands``: float32 (B, 156); ``outcomes``: float32 (B,), the mover's score against the others
        as ``2 * score - 1``.
    :return: the last epoch's mean ``policy_loss``, ``value_loss`` and label ``agreement``.
    """
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(net.parameters(), lr=learning_rate)
    tensors = [torch.as_tensor(x) for x in (obs, masks, actions, hands, outcomes)]
    n = len(actions)
    stats: dict[str, float] = {}
    for _ in range(epochs):
        order = torch.randperm(n, generator=generator)
        totals = np.zeros(3)
        for start in range(0, n, batch_size):
            idx = order[start : start + batch_size]
            o, m, a, h, z = (t[idx] for t in tensors)
            logits, value = net(o, m, h)
            policy_loss = nn.functional.cross_entropy(logits, a)
            value_loss = ((value - z) ** 2).mean()
            optimizer.zero_grad()
            (policy_loss + value_loss).backward()
            optimizer.step()
            totals += [
                policy_loss.item() * len(idx),
                value_loss.item() * len(idx),
                float((logits.argmax(1) == a).sum()),
            ]
        names = ("policy_loss", "value_loss", "agreement")
        stats = {k: round(float(v), 4) for k, v in zip(names, totals / n, strict=True)}
    return stats
