"""Training configuration: the :class:`TrainConfig` dataclass, YAML loading and ``key=value`` overrides.

A config file is a flat YAML mapping of :class:`TrainConfig` fields (``rules_options`` is the only
nested one). ``load_config(path, overrides)`` reads it, applies overrides such as
``learning_rate=1e-4`` or ``rules_options.max_turns=200`` (values parsed by ``yaml.safe_load``),
and checks every value; problems raise :class:`ValueError` naming the key, the value and a fix.
The resolved config is written back to ``<run_dir>/config.yaml`` so a run can be resumed.

One format serves both RL backends (``backend: sb3`` or ``backend: rllib``): the same recipe
(policy, imitation warm start, PPO, opponent pool, keep-best, evaluations) runs on either;
``backend: expert`` is expert iteration (:mod:`treppen.train.expert`: the ``expert_*`` keys, the
``imitation_epochs``, ``imitation_batch_size`` and ``imitation_learning_rate`` of its net, the
game and the seed); ``backend: kernel`` is PPO over the batched env's rows
(:mod:`treppen.train.kernel_ppo`: ``device`` and ``pick_init``, and the keys named in its block below).
The backend-specific keys:

- rllib only: ``ray_address``, ``num_env_runners`` (``n_envs`` is then the envs of each runner);
- sb3 only: ``vec_env``, ``target_kl`` (RLlib's PPO has no early stop by KL: ignored there),
  ``snapshot_deterministic`` (rllib snapshots sample: ``true`` is an error there), ``verbose``.
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import math
import time
import types
import typing
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from treppen_env.rules import Rules, did_you_mean, make_rules

ACTIVATIONS = ("tanh", "relu")
#: Opponent kinds of the pool, each with an ``opponent_<kind>`` probability.
OPPONENT_KINDS = ("random", "greedy", "snapshot", "best", "agent")
POLICIES = ("mlp", "action_features")
#: What the action-feature policy's action head sees beside the state (:mod:`treppen.train.policy_net`).
FEATURE_SETS = ("cards", "heuristic")
#: Value targets of the imitation warm start (:func:`treppen.train.imitation.collect`).
VALUE_TARGETS = ("results", "search")
VEC_ENVS = ("subproc", "dummy", "kernel")
BACKENDS = ("sb3", "rllib", "expert", "kernel")
#: Torch devices of ``backend: kernel``: ``auto`` takes a GPU where one is present.
DEVICES = ("auto", "cpu", "cuda")


@dataclass
class TrainConfig:
    """Everything a self-play run needs; each field maps to one YAML key."""

    # --- backend (docs/ARCHITECTURE.md "Scale-out")
    backend: str = "sb3"
    """``sb3``: sb3-contrib MaskablePPO on this machine; ``rllib``: Ray RLlib PPO (``pip install
    'treppen[ray]'``), env runners on a local Ray instance or a cluster"""
    ray_address: str | None = None
    """rllib: ``null`` starts a local Ray instance on 127.0.0.1; ``auto`` or ``host:port`` joins a
    running cluster (``ray start --head`` on one machine, ``ray start --address`` on the others)"""
    num_env_runners: int = 2
    """rllib: env runner processes (Ray actors, one CPU each) that play the self-play episodes"""

    # --- game
    num_players: int = 2
    """players at the table (2-4); the learner takes a random seat every episode"""
    rules: str = "treppenromme"
    """rules preset (RULES §8): ``treppenromme`` or ``rum500``"""
    rules_options: dict[str, Any] = field(default_factory=dict)
    """rules options overriding the preset, e.g. ``{max_turns: 200}`` (see ``treppen_env.rules.Rules``)"""

    # --- budget and parallelism
    total_timesteps: int = 200_000
    """learner decisions to train for (SB3 ``total_timesteps``)"""
    n_envs: int = 2
    """environments stepped side by side; the policy acts on all of them in one batch (rllib: envs
    per env runner)"""
    vec_env: str = "subproc"
    """``subproc``: one worker process per env (``SubprocVecEnv``); ``dummy``: all envs in the
    learner's process (``DummyVecEnv``; faster when an env step costs less than the pipe round
    trip, as on 2 cores, see benchmarks/bench_train.py); ``kernel``: the envs as rows of the batched
    env, stepped by one kernel call, random and greedy opponents inside it
    (:class:`treppen.train.kernel_vec.KernelVecEnv`). One env always runs in-process (sb3 only)."""
    seed: int = 0
    """seeds Python, NumPy, torch, the envs and the opponent pool"""
    torch_threads: int = 1
    """torch threads of the learner process (the env workers always use 1)"""

    # --- PPO (sb3-contrib MaskablePPO)
    learning_rate: float = 3e-4
    """Adam step size; much larger values risk NaN logits (docs/ARCHITECTURE.md "Training notes")"""
    n_steps: int = 1024
    """steps per env per rollout; one update sees ``n_steps * n_envs`` learner transitions (rllib:
    one training iteration gathers ``n_steps * n_envs * num_players`` env steps of all seats over
    all runners, so that the learner's update sees about as many of its own decisions)"""
    batch_size: int = 256
    """minibatch size; must divide ``n_steps * n_envs``"""
    n_epochs: int = 4
    """passes over each rollout"""
    gamma: float = 0.995
    """discount factor (episodes are ~100 learner decisions and reward comes at the end)"""
    gae_lambda: float = 0.95
    """GAE bias/variance trade-off"""
    ent_coef: float = 0.01
    """entropy bonus"""
    vf_coef: float = 0.5
    """value-loss weight"""
    clip_range: float = 0.2
    """PPO ratio clipping"""
    max_grad_norm: float = 0.5
    """gradient clipping (guards against exploding updates and NaN logits)"""
    target_kl: float | None = None
    """stop an update's epochs early past this KL divergence; ``null`` for never (sb3 only; rllib
    ignores it)"""
    net_arch: list[int] = field(default_factory=lambda: [256, 256])
    """hidden layer sizes of the policy and of the (separate) value network"""
    activation: str = "tanh"
    """hidden activation: ``tanh`` or ``relu``"""
    policy: str = "mlp"
    """``mlp``: SB3's MlpPolicy (one logit per action from ``net_arch``); ``action_features``:
    every action scored from its features against the state (:mod:`treppen.train.policy_net`; its state
    embedding is ``net_arch[-1]`` wide)"""
    card_dim: int = 64
    """``action_features`` only: width of the card embeddings"""
    action_dim: int = 64
    """``action_features`` only: width of the static action embedding"""
    features: str = "heuristic"
    """``action_features`` only: what the action head sees beside the state, ``cards`` (the
    cards each action moves) or ``heuristic`` (also what the greedy heuristic computes about each
    legal action: :mod:`treppen_env.core.features`)"""

    # --- expert iteration (backend: expert, train/expert.py)
    expert_generations: int = 3
    """``expert`` only: generations, each labelled by the search guided by the one before's net"""
    expert_deals: int = 40
    """``expert`` only: deals the search plays (against greedy) per generation to label positions"""
    expert_search: str = "rollout,playouts=300"
    """``expert`` only: the labelling search's spec; a generation's net joins it as ``net=`` and
    ``expert_guide``"""
    expert_guide: str = "own_playout=net"
    """``expert`` only: how the net guides the search, spec settings (``own_playout=net``: the
    agent's own later turns played by the net; ``value_turns=K``: leaf values)"""
    expert_hidden: int = 32
    """``expert`` only: hidden units of the kernels' net (:class:`treppen.train.kernel_net.KernelNet`)"""
    expert_decks: int = 20
    """``expert`` only: duplicate decks of each generation's ratings (against greedy and the one before)"""

    # --- the batched learner (backend: kernel, train/kernel_ppo.py): PPO over the rows of the
    # batched env with the opponents inside the kernels; it reads n_envs (rows), n_steps, batch_size
    # (a multiple of n_envs), n_epochs, the PPO keys, net_arch[-1] (state units), action_dim,
    # features, the opponent_random/greedy/snapshot shares and the pool, eval, Elo and checkpoint keys
    device: str = "auto"
    """``kernel`` only: the torch device, ``auto`` (a GPU where one is present, else the CPU), ``cpu`` or ``cuda``"""
    pick_init: float = 0.0
    """``kernel`` only: the initial logit weight of the heuristic's pick (``features: heuristic``);
    a positive value starts the policy near the greedy heuristic"""

    # --- imitation warm start (train/imitation.py)
    imitation_decisions: int = 0
    """teacher-labelled decisions recorded per imitation round before PPO (0: no warm start)"""
    imitation_rounds: int = 3
    """imitation rounds: round 0 the teacher plays, later rounds the student plays and the
    teacher labels its states (DAgger)"""
    imitation_teacher: str = "greedy"
    """the teacher: any agent spec of ``agents.load`` (e.g. ``greedy``, a search agent at a
    labelling budget such as ``rollout,playouts=500``, or a model path)"""
    imitation_threads: int = 2
    """threads labelling each step's positions with a search teacher (its batch ``label`` call)"""
    imitation_value: str = "results"
    """the value head's targets: ``results`` (the seat's discounted deal result) or ``search``
    (a search teacher's estimate of its chosen move, the deal result where it searched nothing)"""
    imitation_epochs: int = 4
    """passes over all rounds' decisions after each round"""
    imitation_batch_size: int = 256
    """decisions per imitation gradient step"""
    imitation_learning_rate: float = 1e-3
    """Adam step size during imitation (PPO then uses ``learning_rate``)"""
    imitation_holdout: int = 3000
    """teacher decisions on other deals on which agreement with the teacher is measured"""

    # --- opponent pool
    opponent_random: float = 0.2
    """probability that an opponent seat is a RandomAgent for an episode"""
    opponent_greedy: float = 0.4
    """probability that an opponent seat is a GreedyAgent for an episode"""
    opponent_snapshot: float = 0.4
    """probability that an opponent seat is a past snapshot of the learner (while the pool is
    empty, this share goes to random and greedy in proportion)"""
    opponent_best: float = 0.0
    """probability that an opponent seat is the keep-best model (needs ``best_every``)"""
    opponent_agent: float = 0.0
    """probability that an opponent seat is one of ``opponent_agents``"""
    opponent_agents: list[str] = field(default_factory=list)
    """further opponents as ``agents.load`` specs, e.g. ``[rollout, runs/old/final_model.zip]``"""
    snapshot_every: int = 20_000
    """steps between snapshots of the learner added to the pool"""
    pool_size: int = 10
    """snapshots kept in the pool (oldest dropped first)"""
    snapshot_deterministic: bool = False
    """snapshots play their argmax action instead of sampling from their policy (sb3 only)"""

    # --- keep-best (train/keep_best.py)
    best_every: int = 0
    """steps between gates of the learner against the best model so far, on duplicate decks; the
    best is kept as ``best_model.zip`` (0: no keep-best)"""
    best_decks: int = 20
    """duplicate decks per gate (each played in every seat rotation)"""
    best_threshold: float = 0.55
    """score against the best (win 1, tie 0.5) that makes the learner the new best"""

    # --- evaluation, checkpoints, output
    eval_every: int = 25_000
    """steps between evaluations against random and greedy (0: only at the end)"""
    eval_deals: int = 200
    """deals per evaluation and opponent, fixed seeds, every deal from every seat"""
    elo_every: int = 0
    """steps between Elo ratings: a duplicate tournament of the learner against random (0 Elo) and
    greedy, logged as ``eval/elo`` and appended to ``elo.jsonl`` (0: never)"""
    elo_decks: int = 20
    """decks per Elo rating; each is replayed for every pairing and seating (with 3 or 4 players a
    multiple of 2 or 6 balances the seating orders exactly, see ``arena.schedule``; ``elo_deals``
    is the deprecated old name)"""
    checkpoint_every: int = 25_000
    """steps between checkpoints ``checkpoints/model_<steps>_steps.zip`` (0: only at the end)"""
    runs_dir: str = "runs"
    """parent folder of run folders"""
    name: str | None = None
    """run folder name; ``null`` gives ``<rules>_<players>p_<seed>_<timestamp>``"""
    progress: bool = True
    """show a progress bar"""
    verbose: int = 0
    """SB3 verbosity (0 quiet, 1 prints rollout/train tables; sb3 only)"""

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

    def to_dict(self) -> dict[str, Any]:
        """Plain dict of all fields (YAML-safe)."""
        return dataclasses.asdict(self)


FIELDS = {f.name: f for f in dataclasses.fields(TrainConfig)}
#: Old config keys still read, with a DeprecationWarning: old name -> new name.
RENAMED = {"elo_deals": "elo_decks"}
_HINTS = typing.get_type_hints(TrainConfig)


def resolve_name(config: TrainConfig) -> TrainConfig:
    """Fill in the default run name ``<rules>_<players>p_<seed>_<timestamp>`` when none is set."""
    if config.name is None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        config.name = f"{config.rules}_{config.num_players}p_{config.seed}_{stamp}"
    return config


#: The package holding the shipped configs (the repository's ``configs/``).
CONFIG_PACKAGE = "treppen.configs"
#: The config ``treppen train`` runs when none is named.
DEFAULT_CONFIG = "selfplay"


def shipped_configs() -> dict[str, Path]:
    """The configs installed with the package, by name (``selfplay``, ``selfplay_long``, ...)."""
    folder = importlib.resources.files(CONFIG_PACKAGE)
    return {Path(f.name).stem: Path(str(f)) for f in folder.iterdir() if f.name.endswith(".yaml")}


def config_path(config: str | Path) -> Path:
    """The config file ``config`` names: a path to a YAML file, or the name of a shipped config
    (``selfplay`` or ``selfplay.yaml``, :func:`shipped_configs`).

    :raises FileNotFoundError: for neither, listing the shipped names.
    """
    path = Path(config)
    if path.is_file():
        return path
    shipped = shipped_configs()
    name = path.name.removesuffix(".yaml")
    if len(path.parts) == 1 and name in shipped:
        return shipped[name]
    if len(path.parts) > 1 and path.parts[-2] == "configs" and name in shipped:  # configs/NAME.yaml
        return shipped[name]
    raise FileNotFoundError(
        f"config {str(config)!r}: no such file, and no shipped config of that name {sorted(shipped)}"
    )


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> TrainConfig:
    """Read a YAML config, apply ``key=value`` overrides and check the result.

    :param path: YAML file of TrainConfig fields; ``None`` for the defaults.
    :param overrides: strings ``key=value``; values are parsed by ``yaml.safe_load`` (so ``1e-4``,
        ``[128, 128]``, ``null``, ``true`` work) and dotted keys reach into ``rules_options``.
    :return: the checked config.
    :raises ValueError: for unknown keys (listing the valid ones), malformed overrides, values of the
        wrong type or impossible values.
    :raises FileNotFoundError: when ``path`` does not exist.
    """
    data: dict[str, Any] = {}
    if path is not None:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"config file {str(path)!r} not found")
        loaded = yaml.safe_load(path.read_text())
        if loaded is not None and not isinstance(loaded, dict):
            raise ValueError(f"config file {str(path)!r} must hold a mapping of keys to values")
        data = dict(loaded or {})
    for item in overrides or []:
        apply_override(data, item)
    return config_from_dict(data)


def apply_override(data: dict[str, Any], item: str) -> None:
    """Apply one ``key=value`` (or ``parent.key=value``) override to a raw config dict, in place.

    :raises ValueError: when ``item`` has no ``=``, or a dotted key's parent is not a mapping field.
    """
    key, sep, text = item.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ValueError(f"override {item!r} is not of the form key=value, e.g. learning_rate=1e-4")
    try:
        value = yaml.safe_load(text) if text.strip() else None
    except yaml.YAMLError as err:
        raise ValueError(f"override {item!r}: cannot parse value {text!r} ({err})") from None
    parent, dot, child = key.partition(".")
    if not dot:
        data[key] = value
        return
    if parent not in FIELDS or _HINTS[parent] != dict[str, Any]:
        mappings = [n for n in FIELDS if _HINTS[n] == dict[str, Any]]
        raise ValueError(f"override {item!r}: dotted keys work only for the mapping fields {mappings}")
    nested = data.get(parent)
    data[parent] = {**(nested or {}), child: value}


def config_from_dict(data: dict[str, Any]) -> TrainConfig:
    """Build and check a TrainConfig from a raw dict (YAML content plus overrides).

    :raises ValueError: for unknown keys, wrong types or impossible values.
    """
    data = dict(data)
    for old, new in RENAMED.items():
        if old in data:
            warnings.warn(f"config key {old} is deprecated; use {new}", DeprecationWarning, stacklevel=2)
            if new in data and data[new] != data[old]:
                raise ValueError(f"config keys {old}={data[old]!r} and {new}={data[new]!r} disagree; give {new} only")
            data[new] = data.pop(old)
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        raise ValueError(
            f"unknown config key(s) {unknown}{did_you_mean(unknown, FIELDS)}; valid keys: {sorted(FIELDS)}"
        )
    values = {key: _coerce(key, value) for key, value in data.items()}
    config = TrainConfig(**values)
    validate(config)
    return config


def _whole_number(value: Any) -> int | None:
    """``value`` as an int when it is a whole number written as a float (``1e5``, ``100000.0``)."""
    try:
        number = float(value)  # YAML 1.1 reads 1e5 (no dot) as the string "1e5"
    except (TypeError, ValueError):
        return None
    return int(number) if number.is_integer() else None


def _coerce(key: str, value: Any) -> Any:
    """Check ``value`` against the type of field ``key``; ints are accepted for floats, and whole
    numbers written as floats (``total_timesteps=1e5``) for ints."""
    hint = _HINTS[key]
    options = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    if value is None and type(None) in options:
        return None
    for option in options:
        origin = typing.get_origin(option) or option
        if origin is float and isinstance(value, str):  # YAML 1.1 reads 1e-4 (no dot) as a string
            try:
                return float(value)
            except ValueError:
                continue
        if origin is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if origin is int and isinstance(value, int) and not isinstance(value, bool):
            return value
        if origin is int and isinstance(value, (float, str)) and _whole_number(value) is not None:
            return _whole_number(value)
        if origin in (str, bool, dict) and isinstance(value, origin):
            return dict(value) if origin is dict else value
        if origin is list and isinstance(value, list):
            return list(value)
    names = " or ".join("null" if o is type(None) else (typing.get_origin(o) or o).__name__ for o in options)
    raise ValueError(f"config key {key}={value!r} has the wrong type; expected {names}")


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


def validate(config: TrainConfig) -> None:
    """Check the values of a config; every message names the key(s), the value(s) and a fix.

    :raises ValueError: on the first problem found.
    """
    c = config
    c.make_rules().check_players(c.num_players)  # raises for a bad preset, option or player count
    for key in (
        "total_timesteps",
        "n_envs",
        "n_steps",
        "batch_size",
        "n_epochs",
        "eval_deals",
        "elo_decks",
        "snapshot_every",
        "pool_size",
        "torch_threads",
        "card_dim",
        "action_dim",
        "imitation_rounds",
        "imitation_threads",
        "imitation_epochs",
        "imitation_batch_size",
        "imitation_holdout",
        "best_decks",
    ):
        value = getattr(c, key)
        _require(value > 0, f"config key {key}={value} must be a positive integer")
    for key in ("imitation_decisions", "best_every", "eval_every", "elo_every", "checkpoint_every", "seed", "verbose"):
        value = getattr(c, key)
        _require(value >= 0, f"config key {key}={value} must be 0 or more")
    rollout = c.n_steps * c.n_envs
    _require(
        c.batch_size > 1 and rollout % c.batch_size == 0,
        f"batch_size={c.batch_size} does not divide n_steps * n_envs = {c.n_steps} * {c.n_envs} = {rollout}"
        f" (SB3 would leave a truncated minibatch every epoch); pick a batch_size > 1 dividing "
        f"{rollout}, e.g. {_divisor_near(rollout, c.batch_size)}",
    )
    for key in ("learning_rate", "imitation_learning_rate", "clip_range", "max_grad_norm", "vf_coef"):
        value = getattr(c, key)
        _require(math.isfinite(value) and value > 0, f"config key {key}={value} must be a positive number")
    _require(
        c.learning_rate <= 0.01,
        f"learning_rate={c.learning_rate} is too large for PPO "
        "(NaN logits, docs/ARCHITECTURE.md 'Training notes'); use at most 0.01, typically 3e-4",
    )
    _require(0 < c.gamma <= 1, f"gamma={c.gamma} must be in (0, 1]")
    _require(0 <= c.gae_lambda <= 1, f"gae_lambda={c.gae_lambda} must be in [0, 1]")
    _require(c.ent_coef >= 0, f"ent_coef={c.ent_coef} must be 0 or more")
    _require(c.target_kl is None or c.target_kl > 0, f"target_kl={c.target_kl} must be positive or null")
    _require(
        len(c.net_arch) > 0 and all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in c.net_arch),
        f"net_arch={c.net_arch!r} must be a non-empty list of positive layer sizes, e.g. [256, 256]",
    )
    _require(c.backend in BACKENDS, f"backend={c.backend!r}; choose one of {list(BACKENDS)}")
    _require(
        min(c.expert_generations, c.expert_deals, c.expert_hidden, c.expert_decks) >= 1,
        "expert_generations, expert_deals, expert_hidden and expert_decks must be at least 1",
    )
    _require(c.num_env_runners >= 0, f"config key num_env_runners={c.num_env_runners} must be 0 or more")
    _require(
        c.ray_address is None or c.backend == "rllib",
        f"ray_address={c.ray_address!r} needs backend=rllib (the sb3 backend runs on this machine)",
    )
    _require(
        c.backend != "rllib" or not c.snapshot_deterministic,
        "snapshot_deterministic=True is sb3 only (rllib snapshots sample from their policy); set it to false",
    )
    _require(c.device in DEVICES, f"device={c.device!r}; choose one of {list(DEVICES)}")
    if c.backend == "kernel":
        _require(
            c.batch_size % c.n_envs == 0,
            f"batch_size={c.batch_size} must be a multiple of n_envs={c.n_envs} (backend kernel: a minibatch is "
            f"whole steps of every row); e.g. {c.n_envs * max(1, c.batch_size // c.n_envs)}",
        )
        _require(
            c.opponent_best == 0 and c.opponent_agent == 0 and not c.imitation_decisions,
            "backend kernel plays random, greedy and snapshot opponents and has no imitation warm start; "
            "set opponent_best=0, opponent_agent=0 and imitation_decisions=0",
        )
    _require(c.vec_env in VEC_ENVS, f"vec_env={c.vec_env!r}; choose one of {list(VEC_ENVS)}")
    _require(c.policy in POLICIES, f"policy={c.policy!r}; choose one of {list(POLICIES)}")
    _require(c.features in FEATURE_SETS, f"features={c.features!r}; choose one of {list(FEATURE_SETS)}")
    _require(
        c.imitation_value in VALUE_TARGETS,
        f"imitation_value={c.imitation_value!r}; choose one of {list(VALUE_TARGETS)}",
    )
    _require(c.activation in ACTIVATIONS, f"activation={c.activation!r}; choose one of {list(ACTIVATIONS)}")
    probs = {k: getattr(c, f"opponent_{k}") for k in OPPONENT_KINDS}
    _require(all(0 <= p <= 1 for p in probs.values()), f"opponent probabilities {probs} must be in [0, 1]")
    _require(
        abs(sum(probs.values()) - 1) < 1e-6,
        f"opponent probabilities {probs} sum to {sum(probs.values()):g}; make them sum to 1",
    )
    _require(
        c.opponent_agent == 0 or len(c.opponent_agents) > 0,
        f"opponent_agent={c.opponent_agent} but opponent_agents is empty; name agent specs, e.g. [rollout]",
    )
    _require(
        c.opponent_best == 0 or c.best_every > 0,
        f"opponent_best={c.opponent_best} needs keep-best: set best_every (e.g. 50000)",
    )
    _require(0.5 <= c.best_threshold <= 1, f"best_threshold={c.best_threshold} must be in [0.5, 1]")
    _require(
        c.opponent_random + c.opponent_greedy > 0,
        f"opponent_random={c.opponent_random} and opponent_greedy={c.opponent_greedy} are both 0; "
        "the pool starts empty, so give random or greedy some probability",
    )
    _require(
        c.name is None or (c.name != "" and "/" not in c.name and c.name not in (".", "..")),
        f"name={c.name!r} must be a plain folder name (or null for the default)",
    )


def _divisor_near(n: int, target: int) -> int:
    """The divisor of ``n`` (at least 2) closest to ``target``."""
    divisors = [d for d in range(2, n + 1) if n % d == 0] or [n]
    return min(divisors, key=lambda d: (abs(d - target), d))


def save_config(config: TrainConfig, path: Path) -> None:
    """Write the resolved config as YAML (atomically: temp file, then ``os.replace``)."""
    from treppen_env.files import atomic_write_text

    atomic_write_text(path, yaml.safe_dump(config.to_dict(), sort_keys=False))
