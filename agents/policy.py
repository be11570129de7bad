"""A learned agent: a saved sb3-contrib ``MaskablePPO`` model (docs/ARCHITECTURE.md "Agents").

``sb3_contrib`` (and so torch) is imported only when a model is loaded, so ``import agents`` stays
light. The mask is always passed to the policy (``predict(..., action_masks=...)``): without it a
MaskablePPO policy may pick illegal actions (sb3-contrib docs; docs/ARCHITECTURE.md "Training notes").
"""

from __future__ import annotations

import base64
import io
import json
import os
import pickle
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from treppen.agents.base import Agent, legal_actions
from treppen_env.actions import NUM_ACTIONS, action_to_str
from treppen_env.observation import OBS_SIZE


class PolicyAgent(Agent):
    """Plays a saved MaskablePPO model.

    :param model: path to the model's ``.zip`` file, or an already loaded ``MaskablePPO``.
    :param seed: seeds the agent's generator, used to sample when ``deterministic=False``
        (so sampling does not depend on torch's global generator).
    :param deterministic: play the most probable legal action (default) instead of sampling
        from the masked distribution.
    :param device: torch device to load the model on.
    :param torch_threads: when given, calls ``torch.set_num_threads`` with it (process-wide;
        1 is best for many small forward passes, e.g. opponents in worker processes). ``None``
        leaves torch's setting alone.
    :raises FileNotFoundError: when the model file does not exist.
    :raises ImportError: when sb3-contrib is not installed (``pip install treppen[train]``).
    :raises ValueError: when the model's spaces do not match the environment's.
    """

    name = "policy"

    def __init__(
        self,
        model: str | os.PathLike[str] | Any,
        seed: int | None = None,
        deterministic: bool = True,
        device: str = "cpu",
        torch_threads: int | None = None,
    ):
        super().__init__(seed)
        self.deterministic = deterministic
        self.path: Path | None = None
        if isinstance(model, (str, os.PathLike)):
            self.path = Path(model)
            model = _load_model(self.path, device)
        if torch_threads is not None:
            import torch

            torch.set_num_threads(torch_threads)
        self.model = model
        _check_spaces(model, self.path)

    def __repr__(self) -> str:
        source = str(self.path) if self.path is not None else type(self.model).__name__
        return f"PolicyAgent({source!r}, deterministic={self.deterministic})"

    def act(self, observation: dict[str, Any]) -> int:
        """The model's action for ``observation``, always predicted with its action mask.

        :raises RuntimeError: if the model returns an action outside the mask (NaN logits).
        """
        mask = np.asarray(observation["action_mask"])
        legal_actions(observation)  # raises when this agent is not to move
        if self.deterministic:
            action, _ = self.model.predict(
                np.asarray(observation["observation"], dtype=np.float32),
                action_masks=mask.astype(bool),
                deterministic=True,
            )
            action = int(np.asarray(action).reshape(-1)[0])
        else:
            probs = self.action_probabilities(observation)
            action = int(self.rng.choice(NUM_ACTIONS, p=probs / probs.sum()))
        if not mask[action]:
            raise RuntimeError(
                f"{self!r} chose illegal action {action_to_str(action)} ({action}) despite the mask; "
                "the policy's logits may be NaN (see docs/ARCHITECTURE.md 'Training notes')"
            )
        return action

    def action_probabilities(self, observation: dict[str, Any]) -> np.ndarray:
        """The policy's masked action distribution: float array of shape (898,), zero off the mask."""
        import torch

        policy = self.model.policy
        obs_tensor, _ = policy.obs_to_tensor(np.asarray(observation["observation"], dtype=np.float32))
        mask = np.asarray(observation["action_mask"], dtype=bool).reshape(1, -1)
        with torch.no_grad():
            dist = policy.get_distribution(obs_tensor, action_masks=mask)
            probs = dist.distribution.probs
        return probs.reshape(-1).cpu().numpy().astype(np.float64)


def _load_model(path: Path, device: str) -> Any:
    if not path.is_file():
        raise FileNotFoundError(f"no model file at {str(path)!r} (expected a MaskablePPO .zip)")
    try:
        from sb3_contrib import MaskablePPO
    except ImportError as err:
        raise ImportError(f"loading {str(path)!r} needs sb3-contrib and torch: pip install 'treppen[train]'") from err
    return MaskablePPO.load(path, device=device, custom_objects=legacy_classes(path))


#: Top-level packages of treppen 0.1, whose classes saved models name (treppen.agents since 0.2).
LEGACY_PACKAGES = ("agents", "arena", "train", "apps")
#: Modules that moved since models were saved naming their classes: old name -> today's (train/
#: in one package per backend, docs/ARCHITECTURE.md "Layout").
MOVED_MODULES = {"treppen.train.policy_net": "treppen.train.sb3.policy_net"}


class _LegacyUnpickler(pickle.Unpickler):
    """Unpickles an object of an older model file: classes of treppen 0.1's top-level packages
    (``train.policy_net``) and of modules that moved since (``treppen.train.policy_net``) come from
    their modules today (``treppen.train.sb3.policy_net``)."""

    renamed = False

    def find_class(self, module: str, name: str) -> Any:
        if module.split(".")[0] in LEGACY_PACKAGES:
            module, self.renamed = f"treppen.{module}", True
        if module in MOVED_MODULES:
            module, self.renamed = MOVED_MODULES[module], True
        return super().find_class(module, name)


def legacy_classes(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The objects of a MaskablePPO file that name a class by an older module (treppen 0.1's
    ``train.policy_net.ActionFeaturePolicy``, or ``treppen.train.policy_net.ActionFeaturePolicy``
    before train/ had a package per backend), loaded from its module today: ``custom_objects`` for
    SB3's ``load``, so models saved before the package rename or the move still load (an empty dict
    for newer files). Only entries whose pickle names such a module are unpickled here.
    """
    with zipfile.ZipFile(path) as archive:
        data = json.loads(archive.read("data"))
    found = {}
    for key, value in data.items():
        if not (isinstance(value, dict) and ":serialized:" in value):
            continue
        payload = base64.b64decode(value[":serialized:"])
        if not any(f"{package}.".encode() in payload for package in LEGACY_PACKAGES):
            continue
        unpickler = _LegacyUnpickler(io.BytesIO(payload))
        loaded = unpickler.load()
        if unpickler.renamed:
            found[key] = loaded
    return found


def _check_spaces(model: Any, path: Path | None) -> None:
    where = f" ({path})" if path is not None else ""
    obs_shape = getattr(model.observation_space, "shape", None)
    if obs_shape != (OBS_SIZE,):
        raise ValueError(
            f"model{where} expects observations of shape {obs_shape}; this environment gives "
            f"({OBS_SIZE},) - was it trained on another observation layout?"
        )
    n = getattr(model.action_space, "n", None)
    if n != NUM_ACTIONS:
        raise ValueError(f"model{where} has {n} actions; this environment has Discrete({NUM_ACTIONS})")
