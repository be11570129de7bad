"""Training configuration: the keys every backend reads, and each backend's own section.

A config file holds the shared keys (:class:`TrainConfig`: the backend, the game, the seed, the run
folder) at its top level and the chosen backend's own keys in a section named for it::

    backend: kernel
    num_players: 2
    seed: 0
    kernel:
      n_envs: 256
      learning_rate: 0.001

A backend's keys are the fields of its class, :data:`CONFIGS`: :class:`SB3Config`,
:class:`RLlibConfig`, :class:`KernelConfig` and :class:`ExpertConfig`. A key that several backends
read is declared once, in the base they share: :class:`PPOBase` (PPO, the opponent pool,
checkpoints, evaluations: sb3, rllib and kernel), :class:`RecipeBase` (the policy, the imitation
warm start, keep-best: sb3 and rllib), :class:`FitKeys` (the imitation fit: sb3, rllib and expert)
and :class:`TargetKLKey` (sb3 and kernel), :class:`RayAddressKey` (rllib and kernel); :data:`READERS`
lists the backends that read each key.
In Python a config is one flat dataclass (``config.learning_rate``); the sections are its YAML
(:meth:`TrainConfig.to_dict`). Types and ranges are the fields' (checked by pydantic when a
config is loaded, :func:`treppen.train.common.config_files.load_config`), values that must agree
:meth:`TrainConfig.check`'s. A config file's key that it leaves out takes the value of its
backend's shipped config (:data:`BACKEND_CONFIGS`; :func:`treppen.train.common.config_files.backend_defaults`),
so ``backend: kernel`` alone is ``configs/kernel.yaml``; a field's default, which a dataclass built
in Python takes, is its backend's shipped config's value too (:data:`SHIPPED`, :func:`shipped_values`),
so each backend stands on its own file.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import importlib.resources
import time
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import yaml
from pydantic import BeforeValidator, Field, Strict

from treppen_env.messages import shorten
from treppen_env.rules import Rules, make_rules

Activation = Literal["tanh", "relu"]
OpponentKind = Literal["random", "greedy", "snapshot", "best", "agent"]
Policy = Literal["mlp", "action_features"]
FeatureSet = Literal["cards", "heuristic", "planner"]
ValueTarget = Literal["results", "search"]
VecEnv = Literal["subproc", "dummy", "kernel"]
Backend = Literal["sb3", "rllib", "kernel", "expert"]
Device = Literal["auto", "cpu", "cuda", "mps"]
ACTIVATIONS = typing.get_args(Activation)
#: Opponent kinds of the sb3 and rllib pools, each with an ``opponent_<kind>`` probability.
OPPONENT_KINDS = typing.get_args(OpponentKind)
POLICIES = typing.get_args(Policy)
#: What the policy sees of each legal action beside the state (:mod:`treppen.train.common.action_feature_net`,
#: :mod:`treppen.agents.action_net`).
FEATURE_SETS = typing.get_args(FeatureSet)
#: Value targets of the imitation warm start (:func:`treppen.train.common.imitation.collect`).
VALUE_TARGETS = typing.get_args(ValueTarget)
VEC_ENVS = typing.get_args(VecEnv)
#: The backends, what ``backend:`` chooses (docs/ARCHITECTURE.md "Layout", "Scale-out").
BACKENDS: dict[str, str] = {
    "sb3": "sb3-contrib's MaskablePPO on this machine, with the recipe (policy, imitation warm start, keep-best)",
    "rllib": "the same recipe on Ray RLlib's PPO, env runners on a local Ray or a cluster (the ray extra)",
    "kernel": "PPO over the batched env's rows, every opponent played inside the kernels (a GPU where present)",
    "expert": "expert iteration: a search labels positions, a small net inside the kernels learns from them",
}
#: Torch devices of ``backend: kernel``: ``auto`` takes a GPU where one is present.
DEVICES = typing.get_args(Device)


def _whole_number(value: Any) -> Any:
    """``value`` as an int when it is a whole number written as a float or as text (``1e5``,
    ``100000.0``; YAML 1.1 reads ``1e5`` without a dot as the string "1e5"), else as it is."""
    if isinstance(value, (float, str)):
        try:
            number = float(value)
        except ValueError:
            return value
        return int(number) if number.is_integer() else value
    return value


def _number(value: Any) -> Any:
    """``value`` as a float when it is a number written as text (YAML 1.1 reads ``1e-4`` as a string)."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


# Field types: no silent conversion (``true`` is not 1, 5 is not "5"), but ints are numbers and whole
# numbers written as floats are ints (``total_timesteps=1e5``).
Int = Annotated[int, Strict(), BeforeValidator(_whole_number)]
Count = Annotated[Int, Field(gt=0)]
"""A positive whole number."""
Steps = Annotated[Int, Field(ge=0)]
"""A whole number, 0 or more (0: never, or none)."""
Number = Annotated[float, Strict(), BeforeValidator(_number), Field(allow_inf_nan=False)]
Rate = Annotated[Number, Field(gt=0)]
Probability = Annotated[Number, Field(ge=0, le=1)]
Text = Annotated[str, Strict()]


def _steps_or_auto(value: Any) -> Any:
    """``value`` for :data:`StepsOrAuto`: ``auto`` or a whole number, 0 or more.

    :raises ValueError: for anything else.
    """
    value = _whole_number(value)
    if value == "auto" or (type(value) is int and value >= 0):
        return value
    raise ValueError("should be a whole number, 0 or more, or 'auto'")


StepsOrAuto = Annotated[int | Literal["auto"], BeforeValidator(_steps_or_auto)]
"""A whole number, 0 or more, or ``auto`` (a value that fits the machine)."""
Flag = Annotated[bool, Strict()]
#: The most ``total_timesteps`` a config takes (10**12: about 30 years at a million steps a second).
MAX_TIMESTEPS = 10**12

#: The package holding the shipped configs (the repository's ``configs/``).
CONFIG_PACKAGE = "treppen.configs"
#: The config ``treppen train`` runs when none is named and no override names a backend: the batched
#: learner's, ``configs/kernel.yaml`` (its model rates above the sb3 recipe's on fresh decks, in a
#: third of the time: docs/guide/training.md, "The plateau, measured").
DEFAULT_CONFIG = "kernel"
#: The sb3 backend's shipped recipe (imitation of the search, then MaskablePPO).
SB3_RECIPE = "selfplay"
#: The shipped config of each backend: what ``treppen train backend=NAME`` runs when no config is named.
BACKEND_CONFIGS = {"sb3": SB3_RECIPE, "rllib": "rllib_selfplay", "kernel": "kernel", "expert": "expert_iteration"}


@functools.cache
def shipped_values(backend: str) -> dict[str, Any]:
    """The values of ``backend``'s shipped config (:data:`BACKEND_CONFIGS`, e.g. ``configs/kernel.yaml``):
    its top level and its section as one mapping (shared: copy a value before changing it)."""
    text = (importlib.resources.files(CONFIG_PACKAGE) / f"{BACKEND_CONFIGS[backend]}.yaml").read_text()
    data = yaml.safe_load(text)
    return {**{k: v for k, v in data.items() if k not in (backend, "backend")}, **data.get(backend, {})}


class _Shipped:
    """The default of a key that its backend's shipped config sets (:data:`SHIPPED`)."""

    def __repr__(self) -> str:
        return "SHIPPED"


#: A field's default that :meth:`TrainConfig.__post_init__` replaces by the value of the config
#: class's backend's shipped config (one source for each value: the file).
SHIPPED: Any = _Shipped()


def shipped() -> Any:
    """The default factory of a key whose default is its backend's shipped config's value."""
    return SHIPPED


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


@dataclass
class TrainConfig:
    """The keys every backend reads (the top level of a config file); each backend's class adds its
    section (:data:`CONFIGS`)."""

    backend: ClassVar[Backend]
    """which learner trains (:data:`BACKENDS`): ``sb3`` (sb3-contrib's MaskablePPO on this machine),
    ``rllib`` (Ray RLlib's PPO, ``pip install 'treppen[ray]'``), ``kernel`` (PPO over the batched
    env's rows, :mod:`treppen.train.kernel.backend`) or ``expert`` (expert iteration,
    :mod:`treppen.train.expert.backend`); the class of the config, each with its own section"""

    # --- game
    num_players: Int = field(default_factory=shipped)
    """players at the table (2-4); a learner takes a random seat every deal (expert: the search
    takes every seat in turn)"""
    rules: Text = field(default_factory=shipped)
    """rules preset (RULES §8): ``treppenromme`` or ``rum500``"""
    rules_options: dict[Text, Any] = field(default_factory=shipped)
    """rules options overriding the preset, e.g. ``{max_turns: 200}`` (see ``treppen_env.rules.Rules``)"""

    # --- the run
    seed: Steps = field(default_factory=shipped)
    """seeds the run: the generators of Python, NumPy and torch, the deals and the opponents (a
    resumed sb3 or rllib run adds its step count, so that it replays no deals)"""
    torch_threads: Count = field(default_factory=shipped)
    """torch threads of the learner process (sb3's env workers always use 1)"""
    runs_dir: Text = "runs"
    """parent folder of run folders"""
    name: Text | None = None
    """run folder name; ``null`` gives ``<rules>_<players>p_<seed>_<timestamp>``"""
    progress: Flag = field(default_factory=shipped)
    """show progress bars (expert: its rating tournaments')"""

    @property
    def run_dir(self) -> Path:
        """``<runs_dir>/<name>`` (``name`` must be resolved first, see :func:`resolve_name`)."""
        if self.name is None:
            raise ValueError("run name not resolved yet; call resolve_name(config) first")
        return Path(self.runs_dir) / self.name

    def make_rules(self) -> Rules:
        """The rules of the run: preset ``rules`` with ``rules_options`` (RULES §8); the trainer
        builds them once and hands the object to the envs, evaluations and Elo ratings.

        :raises ValueError: for an unknown preset or option, or an impossible value.
        """
        key = (self.rules, tuple(sorted(self.rules_options.items())))
        built = self.__dict__.get("_rules")
        if built is None or built[0] != key:  # built once; again only after rules or rules_options change
            built = (key, make_rules(self.rules, **self.rules_options))
            self.__dict__["_rules"] = built
        return built[1]

    @classmethod
    def section(cls) -> tuple[str, ...]:
        """The keys of this backend's section (its fields beyond the shared ones), in file order."""
        return tuple(f.name for f in dataclasses.fields(cls) if f.name not in SHARED)

    def to_dict(self) -> dict[str, Any]:
        """The config as its YAML file holds it: ``backend``, the shared keys, and the section."""
        values = dataclasses.asdict(self)
        return {
            "backend": self.backend,
            **{key: values[key] for key in SHARED},
            self.backend: {key: values[key] for key in self.section()},
        }

    def __post_init__(self) -> None:
        """Set every key left at :data:`SHIPPED` to the value of the backend's shipped config.

        :raises TypeError: when that file does not set it (a key a backend reads is in its file).
        """
        for f in dataclasses.fields(self):
            if getattr(self, f.name) is SHIPPED:
                values = shipped_values(self.backend)
                if f.name not in values:
                    raise TypeError(f"configs/{BACKEND_CONFIGS[self.backend]}.yaml sets no {f.name}, which it reads")
                setattr(self, f.name, copy.deepcopy(values[f.name]))

    def check(self) -> None:
        """Check what the field types cannot: the rules and player count, and values that must agree
        with each other; every message names the key(s), the value(s) and a fix.

        :raises ValueError: on the first problem found.
        """
        self.make_rules().check_players(self.num_players)  # raises for a bad preset, option or player count
        _require(
            self.name is None or (self.name != "" and "/" not in self.name and self.name not in (".", "..")),
            f"name={shorten(self.name)} must be a plain folder name (or null for the default)",
        )


@dataclass
class FitKeys:
    """The imitation fit (sb3 and rllib: the warm start; expert: each generation's net)."""

    imitation_epochs: Count = field(default_factory=shipped)
    """passes over the labelled decisions in each fit (sb3, rllib: after each imitation round over
    all rounds so far; expert: each generation's net over every generation's labels)"""
    imitation_batch_size: Count = field(default_factory=shipped)
    """labelled decisions per gradient step of the fit"""
    imitation_learning_rate: Rate = field(default_factory=shipped)
    """Adam step size of the fit (sb3 and rllib: PPO then uses ``learning_rate``)"""


@dataclass
class TargetKLKey:
    """PPO's early stop by KL divergence (sb3 and kernel; RLlib's PPO has none)."""

    target_kl: Rate | None = field(default_factory=shipped)
    """stop an update's passes early once the approximate KL divergence to the rollout's policy
    exceeds ``1.5 * target_kl`` (sb3: checked after each minibatch; kernel: after each pass, its
    minibatches' mean); ``null`` for never"""


@dataclass
class PPOBase(TrainConfig):
    """PPO, the opponent pool, checkpoints and evaluations: the keys of sb3, rllib and kernel."""

    #: The opponent kinds of the pool, each with an ``opponent_<kind>`` key.
    OPPONENTS: ClassVar[tuple[str, ...]] = ("random", "greedy", "snapshot")

    # --- budget and parallelism
    total_timesteps: Annotated[Count, Field(le=MAX_TIMESTEPS)] = field(default_factory=shipped)
    """the learner's decisions to train for (SB3's ``total_timesteps``), at most :data:`MAX_TIMESTEPS`"""
    n_envs: Count = field(default_factory=shipped)
    """deals played side by side, the policy acting on all of them in one batch (sb3: envs; rllib:
    envs per env runner; kernel: rows of the batched env)"""

    # --- PPO
    learning_rate: Rate = field(default_factory=shipped)
    """Adam step size; much larger values risk NaN logits (docs/ARCHITECTURE.md "Training notes")"""
    n_steps: Count = field(default_factory=shipped)
    """steps per env per rollout; one update sees ``n_steps * n_envs`` learner decisions (rllib:
    one training iteration gathers ``n_steps * n_envs * num_players`` env steps of all seats over
    all runners, so that the learner's update sees about as many of its own decisions)"""
    batch_size: Count = field(default_factory=shipped)
    """minibatch size; must divide ``n_steps * n_envs`` (kernel: also a multiple of ``n_envs``,
    a minibatch being whole steps of every row)"""
    n_epochs: Count = field(default_factory=shipped)
    """passes over each rollout"""
    gamma: Annotated[Number, Field(gt=0, le=1)] = field(default_factory=shipped)
    """discount factor (episodes are ~100 learner decisions and reward comes at the end)"""
    gae_lambda: Probability = field(default_factory=shipped)
    """GAE bias/variance trade-off"""
    ent_coef: Annotated[Number, Field(ge=0)] = field(default_factory=shipped)
    """entropy bonus"""
    vf_coef: Rate = field(default_factory=shipped)
    """value-loss weight (sb3 and rllib: also of the imitation fit's value loss)"""
    clip_range: Rate = field(default_factory=shipped)
    """PPO ratio clipping"""
    max_grad_norm: Rate = field(default_factory=shipped)
    """gradient clipping (guards against exploding updates and NaN logits)"""

    # --- the network
    net_arch: Annotated[list[Count], Field(min_length=1)] = field(default_factory=shipped)
    """hidden layer sizes: of the policy and of the (separate) value network with ``policy: mlp``;
    the state embedding is ``net_arch[-1]`` wide (``policy: action_features``; kernel: the state's
    hidden units, the only entry it reads)"""
    action_dim: Count = field(default_factory=shipped)
    """width of an action's embedding, scored against the state (sb3 and rllib: ``policy:
    action_features`` only)"""
    features: FeatureSet = field(default_factory=shipped)
    """what the policy sees of each legal action beside the state: ``cards`` (its static features,
    the cards it moves), ``heuristic`` (also what the greedy heuristic computes about it,
    :mod:`treppen_env.agent_core.feature_kernels`) or ``planner`` (the same columns from the planner's
    view, :mod:`treppen_env.agent_core.planner_kernels`); sb3 and rllib: ``policy: action_features`` only"""

    # --- opponent pool
    opponent_random: Probability = field(default_factory=shipped)
    """probability that an opponent seat plays uniformly random legal moves for a deal"""
    opponent_greedy: Probability = field(default_factory=shipped)
    """probability that an opponent seat plays the greedy heuristic for a deal"""
    opponent_snapshot: Probability = field(default_factory=shipped)
    """probability that an opponent seat is a past snapshot of the learner (while the pool is
    empty, this share goes to the other kinds in proportion)"""
    snapshot_every: Count = field(default_factory=shipped)
    """steps between snapshots of the learner added to the pool"""
    pool_size: Count = field(default_factory=shipped)
    """snapshots kept in the pool (the oldest replaced first)"""

    # --- evaluation and checkpoints
    eval_every: Steps = field(default_factory=shipped)
    """steps between evaluations against random and greedy (0: only at the end)"""
    eval_deals: Count = field(default_factory=shipped)
    """deals per evaluation and opponent, fixed seeds, every deal from every seat"""
    elo_every: Steps = field(default_factory=shipped)
    """steps between Elo ratings: a duplicate tournament of the learner against random and greedy
    (greedy = 0), logged as ``eval/elo`` and appended to ``elo.jsonl`` (0: never)"""
    elo_decks: Count = field(default_factory=shipped)
    """decks per Elo rating; each is replayed for every pairing and seating (with 3 or 4 players a
    multiple of 2 or 6 balances the seating orders exactly, see ``arena.schedule``; ``elo_deals``
    is the deprecated old name)"""
    checkpoint_every: Steps = field(default_factory=shipped)
    """steps between checkpoints in ``checkpoints/`` (0: only at the end)"""

    def opponent_probs(self) -> dict[str, float]:
        """The probability of each opponent kind of :attr:`OPPONENTS`."""
        return {kind: getattr(self, f"opponent_{kind}") for kind in self.OPPONENTS}

    def check(self) -> None:
        super().check()
        rollout = self.n_steps * self.n_envs
        _require(
            self.batch_size > 1 and rollout % self.batch_size == 0,
            f"batch_size={self.batch_size} does not divide n_steps * n_envs = {self.n_steps} * {self.n_envs} = "
            f"{rollout} (SB3 would leave a truncated minibatch every epoch); pick a batch_size > 1 dividing "
            f"{rollout}, e.g. {_divisor_near(rollout, self.batch_size)}",
        )
        _require(
            self.learning_rate <= 0.01,
            f"learning_rate={self.learning_rate} is too large for PPO "
            "(NaN logits, docs/ARCHITECTURE.md 'Training notes'); use at most 0.01, typically 3e-4",
        )
        probs = self.opponent_probs()
        _require(
            abs(sum(probs.values()) - 1) < 1e-6,
            f"opponent probabilities {probs} sum to {sum(probs.values()):g}; make them sum to 1",
        )
        _require(
            self.opponent_random + self.opponent_greedy > 0,
            f"opponent_random={self.opponent_random} and opponent_greedy={self.opponent_greedy} are both 0; "
            "the pool starts empty, so give random or greedy some probability",
        )


@dataclass
class RecipeBase(FitKeys, PPOBase):
    """The recipe of sb3 and rllib: the policy, the imitation warm start, every opponent kind and keep-best."""

    OPPONENTS: ClassVar[tuple[str, ...]] = OPPONENT_KINDS

    # --- the policy
    policy: Policy = field(default_factory=shipped)
    """``mlp``: SB3's MlpPolicy (one logit per action from ``net_arch``); ``action_features``:
    every action scored from its features against the state (:mod:`treppen.train.sb3.policy_net`; its
    state embedding is ``net_arch[-1]`` wide)"""
    card_dim: Count = field(default_factory=shipped)
    """``action_features`` only: width of the card embeddings"""
    activation: Activation = field(default_factory=shipped)
    """``mlp`` only: the hidden activation, ``tanh`` or ``relu``"""

    # --- imitation warm start (train/common/imitation.py)
    imitation_decisions: Steps = field(default_factory=shipped)
    """teacher-labelled decisions recorded per imitation round before PPO (0: no warm start)"""
    imitation_rounds: Count = field(default_factory=shipped)
    """imitation rounds: round 0 the teacher plays, later rounds the student plays and the
    teacher labels its states (DAgger)"""
    imitation_teacher: Text = field(default_factory=shipped)
    """the teacher: any agent spec of ``agents.load`` (e.g. ``greedy``, a search agent at a
    labelling budget such as ``rollout,playouts=500``, or a model path)"""
    imitation_threads: Count = field(default_factory=shipped)
    """threads labelling each step's positions with a search teacher (its batch ``label`` call)"""
    imitation_value: ValueTarget = "results"
    """the value head's targets: ``results`` (the seat's discounted deal result) or ``search``
    (a search teacher's estimate of its chosen move, the deal result where it searched nothing)"""
    imitation_holdout: Count = field(default_factory=shipped)
    """teacher decisions on other deals on which agreement with the teacher is measured"""

    # --- the pool's other opponents
    opponent_best: Probability = field(default_factory=shipped)
    """probability that an opponent seat is the keep-best model (needs ``best_every``)"""
    opponent_agent: Probability = 0.0
    """probability that an opponent seat is one of ``opponent_agents``"""
    opponent_agents: list[Text] = field(default_factory=list)
    """further opponents as ``agents.load`` specs, e.g. ``[rollout, runs/old/final_model.zip]``"""

    # --- keep-best (train/common/keep_best.py)
    best_every: Steps = field(default_factory=shipped)
    """steps between gates of the learner against the best model so far, on duplicate decks; the
    best is kept in the run folder (0: no keep-best)"""
    best_decks: Count = field(default_factory=shipped)
    """duplicate decks per gate (each played in every seat rotation)"""
    best_threshold: Annotated[Number, Field(ge=0.5, le=1)] = field(default_factory=shipped)
    """score against the best (win 1, tie 0.5) that makes the learner the new best"""

    def check(self) -> None:
        super().check()
        _require(
            self.opponent_agent == 0 or len(self.opponent_agents) > 0,
            f"opponent_agent={self.opponent_agent} but opponent_agents is empty; name agent specs, e.g. [rollout]",
        )
        _require(
            self.opponent_best == 0 or self.best_every > 0,
            f"opponent_best={self.opponent_best} needs keep-best: set best_every (e.g. 50000)",
        )


@dataclass
class SB3Config(TargetKLKey, RecipeBase):
    """``backend: sb3``: the recipe on sb3-contrib's MaskablePPO (:mod:`treppen.train.sb3.backend`)."""

    backend: ClassVar[Backend] = "sb3"

    vec_env: VecEnv = field(default_factory=shipped)
    """``subproc``: one worker process per env (``SubprocVecEnv``); ``dummy``: all envs in the
    learner's process (``DummyVecEnv``; faster when an env step costs less than the pipe round
    trip, as on 2 cores, see benchmarks/bench_train.py); ``kernel``: the envs as rows of the batched
    env, stepped by one kernel call, random and greedy opponents inside it
    (:class:`treppen.train.sb3.kernel_vec_env.KernelVecEnv`). One env always runs in-process."""
    snapshot_deterministic: Flag = False
    """snapshots play their argmax action instead of sampling from their policy"""
    verbose: Steps = 0
    """SB3 verbosity (0 quiet, 1 prints rollout/train tables)"""


@dataclass
class RayAddressKey:
    """The Ray cluster (rllib: its env runners; kernel: its rollout workers)."""

    ray_address: Text | None = None
    """``auto`` or ``host:port`` joins a running cluster (``ray start --head`` on one machine,
    ``ray start --address`` on the others), ``local`` starts a Ray instance on 127.0.0.1; ``null``:
    rllib starts a local instance, kernel keeps its rollout workers in threads of its own process
    (``pip install 'treppen[ray]'`` for any other value)"""


@dataclass
class RLlibConfig(RayAddressKey, RecipeBase):
    """``backend: rllib``: the recipe on Ray RLlib's PPO (:mod:`treppen.train.rllib.backend`)."""

    backend: ClassVar[Backend] = "rllib"

    num_env_runners: Steps = 2
    """env runner processes (Ray actors, one CPU each) that play the self-play episodes"""


@dataclass
class KernelConfig(RayAddressKey, TargetKLKey, PPOBase):
    """``backend: kernel``: PPO over the batched env's rows, random, greedy and snapshot opponents
    inside the kernels (:mod:`treppen.train.kernel.backend`)."""

    backend: ClassVar[Backend] = "kernel"

    device: Device = "auto"
    """the torch device, ``auto`` (a CUDA GPU where one is present, else the CPU), ``cpu``, ``cuda`` or
    ``mps`` (Apple's GPU); one this machine does not have is refused before the run folder is made"""
    pick_init: Number = field(default_factory=shipped)
    """the initial logit weight of the heuristic's pick (``features: heuristic`` or ``planner``); a
    positive value starts the policy near that heuristic"""
    rollout_workers: StepsOrAuto = "auto"
    """rollout workers, each stepping its share of the ``n_envs`` rows while the learner updates
    on the rollout before (a policy lag of one update, corrected by PPO's ratio to the rollout's
    log-probabilities): processes on this machine, or with ``ray_address`` Ray actors of one CPU
    each; ``0``: rollouts and updates one after the other in the learner's process (no lag);
    ``auto``: the machine's cores less one, at least 1 and at most one per 32 rows (on Ray the
    cluster's CPUs)"""

    def check(self) -> None:
        super().check()
        _require(
            self.batch_size % self.n_envs == 0,
            f"batch_size={self.batch_size} must be a multiple of n_envs={self.n_envs} (backend kernel: a minibatch "
            f"is whole steps of every row); e.g. {self.n_envs * max(1, self.batch_size // self.n_envs)}",
        )
        _require(
            self.rollout_workers == "auto" or self.rollout_workers <= self.n_envs,
            f"rollout_workers={self.rollout_workers} exceeds n_envs={self.n_envs}: each worker steps at least one "
            f"row; use at most {self.n_envs}",
        )


@dataclass
class ExpertConfig(FitKeys, TrainConfig):
    """``backend: expert``: expert iteration (:mod:`treppen.train.expert.backend`)."""

    backend: ClassVar[Backend] = "expert"

    expert_generations: Count = 3
    """generations, each labelled by the search guided by the one before's net"""
    expert_deals: Count = field(default_factory=shipped)
    """deals the search plays (against greedy) per generation to label positions"""
    expert_search: Text = field(default_factory=shipped)
    """the labelling search's spec; a generation's net joins it as ``net=`` and ``expert_guide``"""
    expert_guide: Text = "own_playout=net"
    """how the net guides the search, spec settings (``own_playout=net``: the agent's own later
    turns played by the net; ``value_turns=K``: leaf values)"""
    expert_hidden: Count = 32
    """hidden units of the kernels' net (:class:`treppen.train.expert.policy_value_torch.KernelNet`)"""
    expert_decks: Count = field(default_factory=shipped)
    """duplicate decks of each generation's ratings (against greedy and the one before)"""


#: The config class of each backend (its fields: the shared keys and its section).
CONFIGS: dict[str, type[TrainConfig]] = {
    "sb3": SB3Config,
    "rllib": RLlibConfig,
    "kernel": KernelConfig,
    "expert": ExpertConfig,
}
#: The shared keys: a config file's top level.
SHARED = tuple(f.name for f in dataclasses.fields(TrainConfig))
#: The backends that read each section key, e.g. ``READERS["policy"] == ("sb3", "rllib")``.
READERS: dict[str, tuple[str, ...]] = {
    key: tuple(name for name, config in CONFIGS.items() if key in config.section())
    for key in dict.fromkeys(key for config in CONFIGS.values() for key in config.section())
}
#: The backend of a config file that names none (as before the batched learner became the default
#: config: such a file is an sb3 config).
DEFAULT_BACKEND: Backend = "sb3"


def resolve_name(config: TrainConfig) -> TrainConfig:
    """Fill in the default run name ``<rules>_<players>p_<seed>_<timestamp>`` when none is set."""
    if config.name is None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        config.name = f"{config.rules}_{config.num_players}p_{config.seed}_{stamp}"
    return config


def _divisor_near(n: int, target: int) -> int:
    """The divisor of ``n`` (at least 2) closest to ``target``."""
    divisors = [d for d in range(2, n + 1) if n % d == 0] or [n]
    return min(divisors, key=lambda d: (abs(d - target), d))
