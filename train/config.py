"""Training configuration: the :class:`TrainConfig` dataclass, YAML loading and ``key=value`` overrides.

A config file is a flat YAML mapping of :class:`TrainConfig` fields (``rules_options`` is the only
nested one). ``load_config(path, overrides)`` reads it, applies overrides such as
``learning_rate=1e-4`` or ``rules_options.max_turns=200`` (values parsed as plain YAML: no tags,
no key given twice), and checks every value; problems raise :class:`ValueError` naming the file,
the key, the value (cut when long) and a fix.
The resolved config is written back to ``<run_dir>/config.yaml`` so a run can be resumed. The
defaults of the fields are the default recipe's, ``configs/selfplay.yaml`` (what ``treppen train``
runs), where that file sets them. Types and ranges are checked by pydantic, nested values included.

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

import copy
import dataclasses
import importlib.resources
import time
import typing
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BeforeValidator, Field, Strict, TypeAdapter, ValidationError

from treppen_env.messages import shorten
from treppen_env.rules import Rules, did_you_mean, make_rules

Activation = Literal["tanh", "relu"]
OpponentKind = Literal["random", "greedy", "snapshot", "best", "agent"]
Policy = Literal["mlp", "action_features"]
FeatureSet = Literal["cards", "heuristic"]
ValueTarget = Literal["results", "search"]
VecEnv = Literal["subproc", "dummy", "kernel"]
Backend = Literal["sb3", "rllib", "expert", "kernel"]
Device = Literal["auto", "cpu", "cuda"]
ACTIVATIONS = typing.get_args(Activation)
#: Opponent kinds of the pool, each with an ``opponent_<kind>`` probability.
OPPONENT_KINDS = typing.get_args(OpponentKind)
POLICIES = typing.get_args(Policy)
#: What the action-feature policy's action head sees beside the state (:mod:`treppen.train.policy_net`).
FEATURE_SETS = typing.get_args(FeatureSet)
#: Value targets of the imitation warm start (:func:`treppen.train.imitation.collect`).
VALUE_TARGETS = typing.get_args(ValueTarget)
VEC_ENVS = typing.get_args(VecEnv)
BACKENDS = typing.get_args(Backend)
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
Flag = Annotated[bool, Strict()]


#: The package holding the shipped configs (the repository's ``configs/``).
CONFIG_PACKAGE = "treppen.configs"
#: The config ``treppen train`` runs when none is named.
DEFAULT_CONFIG = "selfplay"


class _PlainLoader(yaml.SafeLoader):
    """YAML's safe loader (no tags beyond plain data) that also refuses a key given twice in a mapping."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # "<<: *anchor" merges keys; later ones win
                continue
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {shorten(key)} is given twice", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep)


def read_yaml(text: str, where: str) -> Any:
    """Parse ``text`` as plain YAML: mappings, lists, numbers, text, true/false, null.

    :param where: names the text in messages (``config file 'a.yaml'``, ``override 'x=1'``).
    :raises ValueError: naming ``where``, the line and the problem, for text that is not YAML, a tag
        (``!!python/object/apply:...`` is refused, never run) or a key given twice.
    """
    try:
        return yaml.load(text, Loader=_PlainLoader)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        at = f" line {mark.line + 1}" if mark is not None else ""
        problem = err.problem or err.context or "not YAML"
        if "constructor for the tag" in problem:
            problem += " (plain YAML only: mappings, lists, numbers, text, true/false, null)"
        raise ValueError(f"{where}{at}: {problem}") from None
    except yaml.YAMLError as err:
        raise ValueError(f"{where}: not YAML ({shorten(str(err))})") from None


#: The default recipe, ``configs/selfplay.yaml``: the defaults of the :class:`TrainConfig` fields it
#: sets (one source for each value; the fields it leaves out have their defaults written below).
RECIPE: dict[str, Any] = read_yaml(
    (importlib.resources.files(CONFIG_PACKAGE) / f"{DEFAULT_CONFIG}.yaml").read_text(), f"{DEFAULT_CONFIG}.yaml"
)


def recipe(key: str) -> Callable[[], Any]:
    """The default factory of a field whose default is the recipe's value of ``key`` (a fresh copy each time)."""
    value = RECIPE[key]
    return lambda: copy.deepcopy(value)


@dataclass
class TrainConfig:
    """Everything a self-play run needs; each field maps to one YAML key. A field's default is the
    default recipe's value (``recipe(key)``: ``configs/selfplay.yaml``, what ``treppen train`` runs)
    where that file sets it."""

    # --- backend (docs/ARCHITECTURE.md "Scale-out")
    backend: Backend = "sb3"
    """``sb3``: sb3-contrib MaskablePPO on this machine; ``rllib``: Ray RLlib PPO (``pip install
    'treppen[ray]'``), env runners on a local Ray instance or a cluster"""
    ray_address: Text | None = None
    """rllib: ``null`` starts a local Ray instance on 127.0.0.1; ``auto`` or ``host:port`` joins a
    running cluster (``ray start --head`` on one machine, ``ray start --address`` on the others)"""
    num_env_runners: Steps = 2
    """rllib: env runner processes (Ray actors, one CPU each) that play the self-play episodes"""

    # --- game
    num_players: Int = field(default_factory=recipe("num_players"))
    """players at the table (2-4); the learner takes a random seat every episode"""
    rules: Text = field(default_factory=recipe("rules"))
    """rules preset (RULES §8): ``treppenromme`` or ``rum500``"""
    rules_options: dict[Text, Any] = field(default_factory=recipe("rules_options"))
    """rules options overriding the preset, e.g. ``{max_turns: 200}`` (see ``treppen_env.rules.Rules``)"""

    # --- budget and parallelism
    total_timesteps: Count = field(default_factory=recipe("total_timesteps"))
    """learner decisions to train for (SB3 ``total_timesteps``)"""
    n_envs: Count = field(default_factory=recipe("n_envs"))
    """environments stepped side by side; the policy acts on all of them in one batch (rllib: envs
    per env runner)"""
    vec_env: VecEnv = field(default_factory=recipe("vec_env"))
    """``subproc``: one worker process per env (``SubprocVecEnv``); ``dummy``: all envs in the
    learner's process (``DummyVecEnv``; faster when an env step costs less than the pipe round
    trip, as on 2 cores, see benchmarks/bench_train.py); ``kernel``: the envs as rows of the batched
    env, stepped by one kernel call, random and greedy opponents inside it
    (:class:`treppen.train.kernel_vec.KernelVecEnv`). One env always runs in-process (sb3 only)."""
    seed: Steps = field(default_factory=recipe("seed"))
    """seeds Python, NumPy, torch, the envs and the opponent pool"""
    torch_threads: Count = field(default_factory=recipe("torch_threads"))
    """torch threads of the learner process (the env workers always use 1)"""

    # --- PPO (sb3-contrib MaskablePPO)
    learning_rate: Rate = field(default_factory=recipe("learning_rate"))
    """Adam step size; much larger values risk NaN logits (docs/ARCHITECTURE.md "Training notes")"""
    n_steps: Count = field(default_factory=recipe("n_steps"))
    """steps per env per rollout; one update sees ``n_steps * n_envs`` learner transitions (rllib:
    one training iteration gathers ``n_steps * n_envs * num_players`` env steps of all seats over
    all runners, so that the learner's update sees about as many of its own decisions)"""
    batch_size: Count = field(default_factory=recipe("batch_size"))
    """minibatch size; must divide ``n_steps * n_envs``"""
    n_epochs: Count = field(default_factory=recipe("n_epochs"))
    """passes over each rollout"""
    gamma: Annotated[Number, Field(gt=0, le=1)] = field(default_factory=recipe("gamma"))
    """discount factor (episodes are ~100 learner decisions and reward comes at the end)"""
    gae_lambda: Probability = field(default_factory=recipe("gae_lambda"))
    """GAE bias/variance trade-off"""
    ent_coef: Annotated[Number, Field(ge=0)] = field(default_factory=recipe("ent_coef"))
    """entropy bonus"""
    vf_coef: Rate = field(default_factory=recipe("vf_coef"))
    """value-loss weight"""
    clip_range: Rate = field(default_factory=recipe("clip_range"))
    """PPO ratio clipping"""
    max_grad_norm: Rate = field(default_factory=recipe("max_grad_norm"))
    """gradient clipping (guards against exploding updates and NaN logits)"""
    target_kl: Rate | None = field(default_factory=recipe("target_kl"))
    """stop an update's epochs early past this KL divergence; ``null`` for never (sb3 only; rllib
    ignores it)"""
    net_arch: Annotated[list[Count], Field(min_length=1)] = field(default_factory=recipe("net_arch"))
    """hidden layer sizes of the policy and of the (separate) value network"""
    activation: Activation = field(default_factory=recipe("activation"))
    """hidden activation: ``tanh`` or ``relu``"""
    policy: Policy = field(default_factory=recipe("policy"))
    """``mlp``: SB3's MlpPolicy (one logit per action from ``net_arch``); ``action_features``:
    every action scored from its features against the state (:mod:`treppen.train.policy_net`; its state
    embedding is ``net_arch[-1]`` wide)"""
    card_dim: Count = field(default_factory=recipe("card_dim"))
    """``action_features`` only: width of the card embeddings"""
    action_dim: Count = field(default_factory=recipe("action_dim"))
    """``action_features`` only: width of the static action embedding"""
    features: FeatureSet = field(default_factory=recipe("features"))
    """``action_features`` only: what the action head sees beside the state, ``cards`` (the
    cards each action moves) or ``heuristic`` (also what the greedy heuristic computes about each
    legal action: :mod:`treppen_env.agent_core.features`)"""

    # --- expert iteration (backend: expert, train/expert.py)
    expert_generations: Count = 3
    """``expert`` only: generations, each labelled by the search guided by the one before's net"""
    expert_deals: Count = 40
    """``expert`` only: deals the search plays (against greedy) per generation to label positions"""
    expert_search: Text = "rollout,playouts=300"
    """``expert`` only: the labelling search's spec; a generation's net joins it as ``net=`` and
    ``expert_guide``"""
    expert_guide: Text = "own_playout=net"
    """``expert`` only: how the net guides the search, spec settings (``own_playout=net``: the
    agent's own later turns played by the net; ``value_turns=K``: leaf values)"""
    expert_hidden: Count = 32
    """``expert`` only: hidden units of the kernels' net (:class:`treppen.train.kernel_net.KernelNet`)"""
    expert_decks: Count = 20
    """``expert`` only: duplicate decks of each generation's ratings (against greedy and the one before)"""

    # --- the batched learner (backend: kernel, train/kernel_ppo.py): PPO over the rows of the
    # batched env with the opponents inside the kernels; it reads n_envs (rows), n_steps, batch_size
    # (a multiple of n_envs), n_epochs, the PPO keys, net_arch[-1] (state units), action_dim,
    # features, the opponent_random/greedy/snapshot shares and the pool, eval, Elo and checkpoint keys
    device: Device = "auto"
    """``kernel`` only: the torch device, ``auto`` (a GPU where one is present, else the CPU), ``cpu`` or ``cuda``"""
    pick_init: Number = 0.0
    """``kernel`` only: the initial logit weight of the heuristic's pick (``features: heuristic``);
    a positive value starts the policy near the greedy heuristic"""

    # --- imitation warm start (train/imitation.py)
    imitation_decisions: Steps = field(default_factory=recipe("imitation_decisions"))
    """teacher-labelled decisions recorded per imitation round before PPO (0: no warm start)"""
    imitation_rounds: Count = field(default_factory=recipe("imitation_rounds"))
    """imitation rounds: round 0 the teacher plays, later rounds the student plays and the
    teacher labels its states (DAgger)"""
    imitation_teacher: Text = field(default_factory=recipe("imitation_teacher"))
    """the teacher: any agent spec of ``agents.load`` (e.g. ``greedy``, a search agent at a
    labelling budget such as ``rollout,playouts=500``, or a model path)"""
    imitation_threads: Count = field(default_factory=recipe("imitation_threads"))
    """threads labelling each step's positions with a search teacher (its batch ``label`` call)"""
    imitation_value: ValueTarget = "results"
    """the value head's targets: ``results`` (the seat's discounted deal result) or ``search``
    (a search teacher's estimate of its chosen move, the deal result where it searched nothing)"""
    imitation_epochs: Count = field(default_factory=recipe("imitation_epochs"))
    """passes over all rounds' decisions after each round"""
    imitation_batch_size: Count = field(default_factory=recipe("imitation_batch_size"))
    """decisions per imitation gradient step"""
    imitation_learning_rate: Rate = field(default_factory=recipe("imitation_learning_rate"))
    """Adam step size during imitation (PPO then uses ``learning_rate``)"""
    imitation_holdout: Count = field(default_factory=recipe("imitation_holdout"))
    """teacher decisions on other deals on which agreement with the teacher is measured"""

    # --- opponent pool
    opponent_random: Probability = field(default_factory=recipe("opponent_random"))
    """probability that an opponent seat is a RandomAgent for an episode"""
    opponent_greedy: Probability = field(default_factory=recipe("opponent_greedy"))
    """probability that an opponent seat is a GreedyAgent for an episode"""
    opponent_snapshot: Probability = field(default_factory=recipe("opponent_snapshot"))
    """probability that an opponent seat is a past snapshot of the learner (while the pool is
    empty, this share goes to random and greedy in proportion)"""
    opponent_best: Probability = field(default_factory=recipe("opponent_best"))
    """probability that an opponent seat is the keep-best model (needs ``best_every``)"""
    opponent_agent: Probability = 0.0
    """probability that an opponent seat is one of ``opponent_agents``"""
    opponent_agents: list[Text] = field(default_factory=list)
    """further opponents as ``agents.load`` specs, e.g. ``[rollout, runs/old/final_model.zip]``"""
    snapshot_every: Count = field(default_factory=recipe("snapshot_every"))
    """steps between snapshots of the learner added to the pool"""
    pool_size: Count = field(default_factory=recipe("pool_size"))
    """snapshots kept in the pool (oldest dropped first)"""
    snapshot_deterministic: Flag = False
    """snapshots play their argmax action instead of sampling from their policy (sb3 only)"""

    # --- keep-best (train/keep_best.py)
    best_every: Steps = field(default_factory=recipe("best_every"))
    """steps between gates of the learner against the best model so far, on duplicate decks; the
    best is kept as ``best_model.zip`` (0: no keep-best)"""
    best_decks: Count = field(default_factory=recipe("best_decks"))
    """duplicate decks per gate (each played in every seat rotation)"""
    best_threshold: Annotated[Number, Field(ge=0.5, le=1)] = field(default_factory=recipe("best_threshold"))
    """score against the best (win 1, tie 0.5) that makes the learner the new best"""

    # --- evaluation, checkpoints, output
    eval_every: Steps = field(default_factory=recipe("eval_every"))
    """steps between evaluations against random and greedy (0: only at the end)"""
    eval_deals: Count = field(default_factory=recipe("eval_deals"))
    """deals per evaluation and opponent, fixed seeds, every deal from every seat"""
    elo_every: Steps = field(default_factory=recipe("elo_every"))
    """steps between Elo ratings: a duplicate tournament of the learner against random (0 Elo) and
    greedy, logged as ``eval/elo`` and appended to ``elo.jsonl`` (0: never)"""
    elo_decks: Count = field(default_factory=recipe("elo_decks"))
    """decks per Elo rating; each is replayed for every pairing and seating (with 3 or 4 players a
    multiple of 2 or 6 balances the seating orders exactly, see ``arena.schedule``; ``elo_deals``
    is the deprecated old name)"""
    checkpoint_every: Steps = field(default_factory=recipe("checkpoint_every"))
    """steps between checkpoints ``checkpoints/model_<steps>_steps.zip`` (0: only at the end)"""
    runs_dir: Text = "runs"
    """parent folder of run folders"""
    name: Text | None = None
    """run folder name; ``null`` gives ``<rules>_<players>p_<seed>_<timestamp>``"""
    progress: Flag = True
    """show a progress bar"""
    verbose: Steps = 0
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
#: Fields whose value is a mapping; dotted overrides (``rules_options.max_turns=200``) reach into them.
MAPPINGS = ("rules_options",)
#: Checks the types and ranges of every field, nested values included (pydantic, built on first use).
_CHECKER: TypeAdapter[TrainConfig] | None = None


def resolve_name(config: TrainConfig) -> TrainConfig:
    """Fill in the default run name ``<rules>_<players>p_<seed>_<timestamp>`` when none is set."""
    if config.name is None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        config.name = f"{config.rules}_{config.num_players}p_{config.seed}_{stamp}"
    return config


def shipped_configs() -> dict[str, Path]:
    """The configs installed with the package, by name (``selfplay``, ``selfplay_long``, ...)."""
    folder = importlib.resources.files(CONFIG_PACKAGE)
    return {Path(f.name).stem: Path(str(f)) for f in folder.iterdir() if f.name.endswith(".yaml")}


def config_path(config: str | Path) -> Path:
    """The config file ``config`` names: a path to a YAML file, or the name of a shipped config
    (``selfplay`` or ``selfplay.yaml``, :func:`shipped_configs`).

    :raises FileNotFoundError: for neither, listing the shipped names.
    :raises ValueError: for a folder.
    """
    path = Path(config)
    if path.is_file():
        return path
    if path.is_dir():
        raise ValueError(f"config {shorten(str(config))} is a folder; give a YAML file or a shipped config name")
    shipped = shipped_configs()
    name = path.name.removesuffix(".yaml")
    if len(path.parts) == 1 and name in shipped:
        return shipped[name]
    if len(path.parts) > 1 and path.parts[-2] == "configs" and name in shipped:  # configs/NAME.yaml
        return shipped[name]
    raise FileNotFoundError(
        f"config {shorten(str(config))}: no such file, and no shipped config of that name {sorted(shipped)}"
    )


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> TrainConfig:
    """Read a YAML config, apply ``key=value`` overrides and check the result.

    :param path: YAML file of TrainConfig fields; ``None`` for the defaults (the recipe of
        ``configs/selfplay.yaml``).
    :param overrides: strings ``key=value``; values are parsed as plain YAML (:func:`read_yaml`: so
        ``1e-4``, ``[128, 128]``, ``null``, ``true`` work) and dotted keys reach into ``rules_options``.
    :return: the checked config.
    :raises ValueError: for a file that is not plain YAML (its line named; tags such as
        ``!!python/...`` and keys given twice are refused), unknown keys (listing the valid ones),
        malformed overrides, values of the wrong type or impossible values; a message names the file.
    :raises FileNotFoundError: when ``path`` does not exist.
    """
    data: dict[str, Any] = {}
    if path is not None:
        path = Path(path)
        if path.is_dir():
            raise ValueError(f"config {str(path)!r} is a folder; give a YAML file (e.g. configs/selfplay.yaml)")
        if not path.is_file():
            raise FileNotFoundError(f"config file {str(path)!r} not found")
        loaded = read_yaml(path.read_text(errors="replace"), f"config file {str(path)!r}")
        if loaded is not None and not isinstance(loaded, dict):
            raise ValueError(f"config file {str(path)!r} must hold a mapping of keys to values")
        data = dict(loaded or {})
    for item in overrides or []:
        apply_override(data, item)
    try:
        return config_from_dict(data)
    except ValueError as err:
        if path is None:
            raise
        given = f" with the overrides {shorten(' '.join(overrides), 160)}" if overrides else ""
        raise ValueError(f"config file {str(path)!r}{given}: {err}") from None


def apply_override(data: dict[str, Any], item: str) -> None:
    """Apply one ``key=value`` (or ``parent.key=value``) override to a raw config dict, in place.

    :raises ValueError: when ``item`` has no ``=``, its value is not YAML, or a dotted key's parent
        is not a mapping field.
    """
    key, sep, text = item.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ValueError(f"override {shorten(item)} is not of the form key=value, e.g. learning_rate=1e-4")
    value = read_yaml(text, f"override {shorten(item)}") if text.strip() else None
    parent, dot, child = key.partition(".")
    if not dot:
        data[key] = value
        return
    if parent not in MAPPINGS:
        raise ValueError(f"override {shorten(item)}: dotted keys work only for the mapping fields {list(MAPPINGS)}")
    nested = data.get(parent)
    data[parent] = {**(nested if isinstance(nested, dict) else {}), child: value}


def config_from_dict(data: dict[str, Any]) -> TrainConfig:
    """Build and check a TrainConfig from a raw dict (YAML content plus overrides).

    :raises ValueError: for unknown keys (suggesting the near ones), wrong types (nested values
        included) or impossible values, naming the key, its value (cut when long) and what is allowed.
    """
    global _CHECKER
    data = dict(data)
    for old, new in RENAMED.items():
        if old in data:
            warnings.warn(f"config key {old} is deprecated; use {new}", DeprecationWarning, stacklevel=2)
            if new in data and data[new] != data[old]:
                raise ValueError(
                    f"config keys {old}={shorten(data[old])} and {new}={shorten(data[new])} disagree; give {new} only"
                )
            data[new] = data.pop(old)
    unknown = sorted(set(map(str, data)) - set(FIELDS))
    if unknown:
        raise ValueError(
            f"unknown config key(s) [{', '.join(shorten(k, 40) for k in unknown[:10])}]"
            f"{did_you_mean(unknown, FIELDS)}; valid keys: {sorted(FIELDS)}"
        )
    _CHECKER = _CHECKER or TypeAdapter(TrainConfig)
    try:
        config = _CHECKER.validate_python(data)
    except ValidationError as err:
        raise ValueError(_type_error(err)) from None
    validate(config)
    return config


def _type_error(err: ValidationError) -> str:
    """The first problem pydantic found, as ``config key net_arch[0]=0: Input should be greater than 0``."""
    first = err.errors(include_url=False)[0]
    key, *inner = first["loc"]
    where = f"{key}" + "".join(f"[{part!r}]" for part in inner)
    message = first["msg"]
    if first["type"] == "literal_error":
        message = f"choose one of {list(typing.get_args(typing.get_type_hints(TrainConfig)[str(key)]))}"
    more = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
    return f"config key {where}={shorten(first['input'])}: {message}{more}"


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


def validate(config: TrainConfig) -> None:
    """Check what the field types cannot: the rules and player count, and values that must agree
    with each other; every message names the key(s), the value(s) and a fix.

    :raises ValueError: on the first problem found.
    """
    c = config
    c.make_rules().check_players(c.num_players)  # raises for a bad preset, option or player count
    rollout = c.n_steps * c.n_envs
    _require(
        c.batch_size > 1 and rollout % c.batch_size == 0,
        f"batch_size={c.batch_size} does not divide n_steps * n_envs = {c.n_steps} * {c.n_envs} = {rollout}"
        f" (SB3 would leave a truncated minibatch every epoch); pick a batch_size > 1 dividing "
        f"{rollout}, e.g. {_divisor_near(rollout, c.batch_size)}",
    )
    _require(
        c.learning_rate <= 0.01,
        f"learning_rate={c.learning_rate} is too large for PPO "
        "(NaN logits, docs/ARCHITECTURE.md 'Training notes'); use at most 0.01, typically 3e-4",
    )
    _require(
        c.ray_address is None or c.backend == "rllib",
        f"ray_address={shorten(c.ray_address)} needs backend=rllib (the sb3 backend runs on this machine)",
    )
    _require(
        c.backend != "rllib" or not c.snapshot_deterministic,
        "snapshot_deterministic=True is sb3 only (rllib snapshots sample from their policy); set it to false",
    )
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
    probs = {k: getattr(c, f"opponent_{k}") for k in OPPONENT_KINDS}
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
    _require(
        c.opponent_random + c.opponent_greedy > 0,
        f"opponent_random={c.opponent_random} and opponent_greedy={c.opponent_greedy} are both 0; "
        "the pool starts empty, so give random or greedy some probability",
    )
    _require(
        c.name is None or (c.name != "" and "/" not in c.name and c.name not in (".", "..")),
        f"name={shorten(c.name)} must be a plain folder name (or null for the default)",
    )


def _divisor_near(n: int, target: int) -> int:
    """The divisor of ``n`` (at least 2) closest to ``target``."""
    divisors = [d for d in range(2, n + 1) if n % d == 0] or [n]
    return min(divisors, key=lambda d: (abs(d - target), d))


def save_config(config: TrainConfig, path: Path) -> None:
    """Write the resolved config as YAML (atomically: temp file, then ``os.replace``)."""
    from treppen_env.files import atomic_write_text

    atomic_write_text(path, yaml.safe_dump(config.to_dict(), sort_keys=False))
