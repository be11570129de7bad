"""Agents that act from an observation: random, heuristic, search, learned and human (docs/ARCHITECTURE.md "Agents").

Every agent has ``act(observation) -> int`` (a legal action of the observation's mask) and
``reset(seed=None)``. :func:`load` builds one from a spec string, as the command line and the
tournaments name them: ``NAME[,key=value]...`` (:mod:`treppen.agents.spec`), e.g. ``greedy,epsilon=0.1``;
:mod:`treppen.agents.loader` holds how. Importing this package does not import torch:
:class:`PolicyAgent` imports sb3-contrib only when it loads a model.
"""

from __future__ import annotations

from treppen.agents.base import Agent, RandomAgent, legal_actions
from treppen.agents.greedy import GreedyAgent
from treppen.agents.human import HumanAgent
from treppen.agents.llm import LLMAgent
from treppen.agents.loader import SPECS, ExternalAgent, UnknownSpecError, load
from treppen.agents.planner import PlannerAgent
from treppen.agents.policy import PolicyAgent
from treppen.agents.policy_value_net import NetAgent
from treppen.agents.search import ISMCTSAgent, RolloutAgent

__all__ = [
    "SPECS",
    "Agent",
    "ExternalAgent",
    "GreedyAgent",
    "HumanAgent",
    "ISMCTSAgent",
    "LLMAgent",
    "NetAgent",
    "PlannerAgent",
    "PolicyAgent",
    "RandomAgent",
    "RolloutAgent",
    "UnknownSpecError",
    "legal_actions",
    "load",
]
