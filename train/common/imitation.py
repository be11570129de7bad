"""Imitation warm start: clone a teacher into the learner's policy before self-play.

Strong card-game agents start from imitation and improve by RL afterwards (Suphx, AlphaStar); we
have a free teacher, the greedy heuristic (or any ``agents.load`` spec). The steps:

1. :func:`collect` plays whole deals with every seat recorded: the observation, the action mask,
   the teacher's action (the label) and the seat's deal result (the value target, discounted by
   the seat's remaining decisions). In round 0 the teacher plays; in later rounds (DAgger) the
   student plays its own argmax action and the teacher only labels, so the student learns to
   recover from the states its own mistakes lead to.
2. :func:`fit` trains the student on the aggregated rounds: cross-entropy of the teacher's action
   under the masked distribution (illegal actions have probability 0, so they take no mass), plus
   ``vf_coef`` times the squared error of the value on the deal results.
3. :func:`agreement` measures how often the student's masked argmax equals the teacher's action,
   per decision kind (:data:`DECISION_KINDS`), on held-out deals.

:func:`warm_start` runs the rounds for ``treppen train`` (progress bar, TensorBoard scalars
``imitation/*``, one line per round in ``imitation.jsonl``, the student after every round in
``checkpoints/imitation_round_<r>.pt`` so an interrupted run resumes after the last round done).

The student is any :class:`Student`: the SB3 backend's policy
(:class:`treppen.train.sb3.student.PolicyStudent`) or the RLlib backend's module
(:class:`treppen.train.rllib.modules.ModuleStudent`); this module imports neither library.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch

from treppen import agents
from treppen.agents.base import Agent
from treppen.train.common.config import VALUE_TARGETS, RecipeBase
from treppen_env import raw_env
from treppen_env.actions import DISCARD_BASE, LAYOFF_BASE, MELD_BASE
from treppen_env.files import append_jsonl, atomic_write, read_jsonl
from treppen_env.rules import Rules, make_rules


class Student:
    """The policy imitation trains, a torch module as a backend wraps it: :meth:`evaluate` and
    :meth:`act` are the backend's; the training mode, the parameters and the state are the module's.

    :param module: the trained module (in place); ``optimizer``: the optimizer of its parameters.
    """

    def __init__(self, module: torch.nn.Module, optimizer: torch.optim.Optimizer):
        self.module, self.optimizer = module, optimizer

    def evaluate(self, obs: torch.Tensor, actions: torch.Tensor, masks: np.ndarray) -> tuple[Any, torch.Tensor]:
        """Values (B,) and log-probabilities (B,) of ``actions`` (int64 (B,)) for observations
        (float32 (B, 969)) under their legal masks (bool (B, 898))."""
        raise NotImplementedError

    def act(self, obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """The masked argmax actions (int64 (B,)) of observations (B, 969) and masks (B, 898)."""
        raise NotImplementedError

    def set_training_mode(self, mode: bool) -> None:
        self.module.train(mode)

    def parameters(self) -> Any:
        return self.module.parameters()

    def state_dict(self) -> dict[str, Any]:
        return self.module.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> Any:
        return self.module.load_state_dict(state)


#: Decision kinds agreement is reported for, by the teacher's action: the draw phase (stock or a
#: staircase depth, RULES §4.1), a meld, a lay-off (§4.3), a discard (§4.4).
DECISION_KINDS = ("draw", "meld", "layoff", "discard")


def decision_kind(actions: np.ndarray) -> np.ndarray:
    """Index into :data:`DECISION_KINDS` of each action (int array, any shape)."""
    actions = np.asarray(actions)
    return np.searchsorted(np.array([MELD_BASE, LAYOFF_BASE, DISCARD_BASE]), actions, side="right")


@dataclass
class Decisions:
    """Recorded decisions: ``obs`` float32 (N, 969), ``masks`` bool (N, 898), ``actions`` int64 (N,)
    (the teacher's), ``returns`` float32 (N,) (the seat's discounted deal result, reward units)."""

    obs: np.ndarray
    masks: np.ndarray
    actions: np.ndarray
    returns: np.ndarray

    def __len__(self) -> int:
        return len(self.actions)

    @staticmethod
    def concat(parts: list[Decisions]) -> Decisions:
        """All decisions of ``parts`` in one set."""
        joined = {field.name: np.concatenate([getattr(p, field.name) for p in parts]) for field in fields(Decisions)}
        return Decisions(**joined)


def collect(
    teacher: Callable[[], Agent],
    decisions: int,
    num_players: int = 2,
    rules: Rules | str = "treppenromme",
    seed: int = 0,
    student: Student | None = None,
    gamma: float = 1.0,
    tables: int = 16,
    progress: Callable[[int], None] | None = None,
    threads: int = 1,
    values: str = "results",
) -> Decisions:
    """Play deals until ``decisions`` decisions are recorded, every seat labelled by ``teacher``.

    :param teacher: builds the agent whose actions are the labels. A teacher with a batch
        labelling call (``label_values(observations)``, the search agents: each position searched
        on its own) labels each step's positions of all tables at once, split over ``threads``
        teachers; any other plays ``act``, one teacher per table, reset with a seed every deal.
    :param decisions: decisions to record (whole deals are played; the last deal's extra ones are kept).
    :param num_players: players per deal.
    :param rules: the game's rules (or a preset name).
    :param seed: seeds the deals (deal ``i`` uses ``seed * 1_000_003 + i``).
    :param student: a :class:`Student` that plays its argmax action instead of the teacher
        (DAgger); ``None``: the teacher plays.
    :param gamma: discount per decision of the seat for the value targets (the trainer's ``gamma``).
    :param tables: deals played side by side (the student sees them as one batch).
    :param progress: called with the number of new decisions after each step.
    :param threads: labelling threads of a batch-labelling teacher (its kernels release the GIL).
    :param values: the value targets: ``results``, the seat's discounted deal result; ``search``,
        a search teacher's estimate of its chosen move (:meth:`treppen.agents.search.SearchAgent.label_values`),
        the deal result where it searched nothing.
    :return: the decisions, in the order played.
    :raises ValueError: for ``values="search"`` with a teacher that is not a search agent, or
        another ``values``.
    """
    if values not in VALUE_TARGETS:
        raise ValueError(f"values={values!r}; choose one of {list(VALUE_TARGETS)}")
    envs = [raw_env(num_players=num_players, rules=rules) for _ in range(tables)]
    teachers, labeller = _teachers(teacher, tables, threads, seed)
    if values == "search" and labeller is None:
        raise ValueError(f"values='search' needs a search teacher; {teachers[0]!r} gives no estimates")
    obs_rows: list[np.ndarray] = []
    mask_rows: list[np.ndarray] = []
    labels: list[int] = []
    returns: list[float] = []
    seats: list[list[list[int]]] = [[[] for _ in range(num_players)] for _ in envs]  # rows per seat
    active = set(range(tables))
    next_deal = 0

    def start(k: int) -> None:
        nonlocal next_deal
        if len(labels) >= decisions:  # enough: let the deals in play finish, start no more
            active.discard(k)
            return
        deal_seed = seed * 1_000_003 + next_deal
        envs[k].reset(seed=deal_seed)
        if teachers:
            teachers[k].reset(seed=deal_seed)
        next_deal += 1

    with ThreadPoolExecutor(max(1, threads)) as pool:
        for k in range(tables):
            start(k)
        while active:
            batch = [(k, envs[k].observe(envs[k].agent_selection)) for k in sorted(active)]
            if labeller is not None:
                labelled, estimates = labeller([o for _, o in batch], pool)
            else:
                labelled, estimates = [teachers[k].act(o) for k, o in batch], [math.nan] * len(batch)
            if student is None:
                played = labelled
            else:
                obs = np.stack([o["observation"] for _, o in batch])
                masks = np.stack([o["action_mask"] for _, o in batch]).astype(bool)
                played = student.act(obs, masks).tolist()
            for (k, o), label, action, estimate in zip(batch, labelled, played, estimates, strict=True):
                env = envs[k]
                seats[k][env.game.current].append(len(labels))
                obs_rows.append(o["observation"])
                mask_rows.append(o["action_mask"])
                labels.append(label)
                returns.append(estimate if values == "search" else math.nan)
                env.step(int(action))
                if env.game.deal_over:
                    _deal_results(env, seats[k], returns, gamma)
                    start(k)
            if progress is not None:
                progress(len(batch))
    return Decisions(
        obs=np.stack(obs_rows).astype(np.float32),
        masks=np.stack(mask_rows).astype(bool),
        actions=np.array(labels, dtype=np.int64),
        returns=np.array(returns, dtype=np.float32),
    )


def _deal_results(env: Any, seats: list[list[int]], returns: list[float], gamma: float) -> None:
    """At a deal's end: each seat's rows (``seats[s]``, emptied) not valued yet get the seat's
    reward, discounted by ``gamma`` per later decision of the seat (the reward comes after its last)."""
    for s, agent in enumerate(env.possible_agents):
        rows = seats[s]
        for j, row in enumerate(rows):
            if math.isnan(returns[row]):
                returns[row] = env.rewards[agent] * gamma ** (len(rows) - 1 - j)
        rows.clear()


def _teachers(teacher: Callable[[], Agent], tables: int, threads: int, seed: int) -> tuple[list[Agent], Any]:
    """The per-table teachers (those that play ``act``), or the batch labeller of a search
    teacher, one teacher per thread (and no per-table ones)."""
    first = teacher()
    if not hasattr(first, "label_values"):
        return [first, *(teacher() for _ in range(tables - 1))], None
    return [], _Labeller([first, *(teacher() for _ in range(max(1, threads) - 1))], seed)


class _Labeller:
    """A batch-labelling teacher's ``label`` calls, the batch split over one teacher per thread."""

    def __init__(self, teachers: list[Agent], seed: int):
        self.teachers = teachers
        for i, t in enumerate(teachers):
            t.reset(seed=seed * 1_000_003 + i)

    def __call__(self, observations: list[dict[str, Any]], pool: ThreadPoolExecutor) -> tuple[list[int], list[float]]:
        """The labels and the search's estimates (NaN where nothing was searched)."""
        n = len(self.teachers)
        label = [t.label_values for t in self.teachers]  # type: ignore[attr-defined]
        parts = list(pool.map(lambda i: label[i](observations[i::n]), range(n)))
        actions, estimates = [0] * len(observations), [0.0] * len(observations)
        for i, (a, v) in enumerate(parts):
            actions[i::n], estimates[i::n] = a.tolist(), v.tolist()
        return actions, estimates


def make_teacher(spec: str, rules: Rules | str = "treppenromme") -> Agent:
    """The teacher agent of ``spec`` (any :func:`treppen.agents.load` spec, e.g. ``greedy`` or a search
    agent at a labelling budget, ``rollout,playouts=500``), told the rules.

    :raises ValueError: for an unknown spec.
    """
    return agents.load(spec, rules=make_rules(rules))


def fit(
    policy: Student,
    data: Decisions,
    epochs: int,
    batch_size: int = 256,
    learning_rate: float = 1e-3,
    vf_coef: float = 0.5,
    seed: int = 0,
    progress: Callable[[int], None] | None = None,
) -> dict[str, float]:
    """Train ``policy`` on ``data``: masked cross-entropy of the teacher's actions plus ``vf_coef``
    times the squared error of the value on the returns (with the policy's own optimizer).

    :param policy: the :class:`Student`.
    :param data: the decisions.
    :param epochs: passes over ``data``.
    :param batch_size: decisions per gradient step.
    :param learning_rate: the optimizer's step size during imitation.
    :param vf_coef: weight of the value loss.
    :param seed: seeds the shuffling.
    :param progress: called with the decisions of each minibatch.
    :return: mean ``loss`` (cross-entropy, nats) and ``value_loss`` over the last epoch.
    """
    rng = np.random.default_rng(seed)
    for group in policy.optimizer.param_groups:
        group["lr"] = learning_rate
    policy.set_training_mode(True)
    obs_all = torch.as_tensor(data.obs)
    actions_all = torch.as_tensor(data.actions)
    returns_all = torch.as_tensor(data.returns)
    stats: dict[str, list[float]] = {}
    for _ in range(epochs):
        stats = {"loss": [], "value_loss": []}
        order = rng.permutation(len(data))
        for start in range(0, len(order), batch_size):
            idx = torch.as_tensor(order[start : start + batch_size])
            values, log_prob = policy.evaluate(obs_all[idx], actions_all[idx], data.masks[idx.numpy()])
            ce = -log_prob.mean()
            value_loss = torch.nn.functional.mse_loss(values.flatten(), returns_all[idx])
            loss = ce + vf_coef * value_loss
            policy.optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
            policy.optimizer.step()
            stats["loss"].append(float(ce.detach()))
            stats["value_loss"].append(float(value_loss.detach()))
            if progress is not None:
                progress(len(idx))
    policy.set_training_mode(False)
    return {k: float(np.mean(v)) for k, v in stats.items()}


def agreement(policy: Student, data: Decisions, batch_size: int = 1024) -> dict[str, float]:
    """Share of ``data``'s decisions where the policy's masked argmax is the teacher's action:
    ``all`` and per decision kind (:data:`DECISION_KINDS`, by the teacher's action; NaN for a kind
    with no decision), plus ``decisions``."""
    chosen = np.concatenate(
        [
            policy.act(data.obs[i : i + batch_size], data.masks[i : i + batch_size])
            for i in range(0, len(data), batch_size)
        ]
    )
    same = chosen == data.actions
    kinds = decision_kind(data.actions)
    out = {"all": float(same.mean()), "decisions": float(len(data))}
    for k, name in enumerate(DECISION_KINDS):
        out[name] = float(same[kinds == k].mean()) if (kinds == k).any() else float("nan")
    return out


HOLDOUT_SEED = 7_777_777


def warm_start(policy: Student, config: RecipeBase, run_dir: Path) -> dict[str, float]:
    """The imitation rounds of ``treppen train`` on ``policy`` (in place); see the module docstring.

    Round 0 records ``config.imitation_decisions`` decisions of the teacher playing every seat;
    rounds 1 .. ``imitation_rounds - 1`` as many of the student playing (DAgger), labelled by the
    teacher; after each round the policy trains ``imitation_epochs`` epochs on all rounds so far.
    A run resumed mid-way reloads the last finished round's policy and collects the rounds left
    (the data of round 0 is collected again: it depends only on the seed).

    :param policy: the learner's policy as a :class:`Student`.
    :param config: the run's config (:class:`treppen.train.common.config.RecipeBase`: sb3 or rllib).
    :param run_dir: the run folder (``imitation.jsonl``, ``checkpoints/``, ``tb/imitation``).
    :return: the held-out agreement with the teacher after the last round (see :func:`agreement`).
    """
    from torch.utils.tensorboard import SummaryWriter

    c = config
    log_path = run_dir / "imitation.jsonl"
    done = _finished_rounds(log_path, run_dir, policy)
    if done and len(done) >= c.imitation_rounds:
        print(f"imitation: {len(done)} rounds done; held-out agreement {done[-1]['holdout']['all']:.3f}")
        return done[-1]["holdout"]
    rules = c.make_rules()
    rounds_left = range(len(done), c.imitation_rounds)
    bar = _ImitationBar(c.progress)
    # what the bar counts, known from the start: each collection's target, each fit's epochs over
    # the targets of the rounds it fits (round 0 again first when resuming: it depends on the seed only)
    targets = [c.imitation_holdout, *[c.imitation_decisions] * (bool(done) + len(rounds_left))]
    fitted = [c.imitation_epochs * c.imitation_decisions * (bool(done) + k + 1) for k in range(len(rounds_left))]
    bar.plan(sum(targets) + sum(fitted))

    def collect_for(decisions: int, seed: int, phase: str, student: Student | None = None) -> Decisions:
        bar.phase(phase)
        return collect(
            lambda: make_teacher(c.imitation_teacher, rules),
            decisions,
            num_players=c.num_players,
            rules=rules,
            seed=seed,
            gamma=c.gamma,
            student=student,
            progress=bar.part(decisions, decisions, f"{phase}; the deals in play finish"),
            threads=c.imitation_threads,
            values=c.imitation_value,
        )

    writer = SummaryWriter(str(run_dir / "tb" / "imitation"))
    try:
        bar.phase("compiling the kernels (the first run after an install)")
        make_teacher(c.imitation_teacher, rules).act(_first_observation(c.num_players, rules))
        bar.restart_clock()  # the rate and the time left count from here
        holdout = collect_for(c.imitation_holdout, HOLDOUT_SEED + c.seed, "held-out decisions: the teacher plays")
        parts = [collect_for(c.imitation_decisions, c.seed, "round 0: the teacher plays")] if done else []
        result: dict[str, float] = done[-1]["holdout"] if done else {}
        for r, units in zip(rounds_left, fitted, strict=True):
            who = "the teacher" if r == 0 else "the student"
            student = policy if r else None  # DAgger: the student plays from round 1
            parts.append(collect_for(c.imitation_decisions, c.seed + r, f"round {r}: {who} plays", student))
            data = Decisions.concat(parts)
            bar.phase(f"round {r}: fit {c.imitation_epochs} epochs on {len(data)} decisions")
            losses = fit(
                policy,
                data,
                c.imitation_epochs,
                c.imitation_batch_size,
                c.imitation_learning_rate,
                c.vf_coef,
                c.seed + r,
                progress=bar.part(units, c.imitation_epochs * len(data)),
            )
            result = agreement(policy, holdout)
            _log_round(writer, log_path, run_dir, policy, r, len(data), losses, result)
            bar.phase(f"round {r}: held-out agreement {result['all']:.3f}")
    finally:
        bar.close()
        writer.close()
    return result


def _first_observation(num_players: int, rules: Rules) -> dict[str, np.ndarray]:
    """The first position of a seeded deal: one teacher move on it compiles (or loads) the kernels."""
    env = raw_env(num_players=num_players, rules=rules)
    env.reset(seed=0)
    return env.observe(env.agent_selection)


def _finished_rounds(log_path: Path, run_dir: Path, policy: Student) -> list[dict[str, Any]]:
    """The rounds ``imitation.jsonl`` lists as done; the policy is loaded from the last of them."""
    done = read_jsonl(log_path)  # a line torn by a kill is cut from the file
    if done:
        policy.load_state_dict(torch.load(_round_path(run_dir, done[-1]["round"]), weights_only=True))
    return done


def _log_round(
    writer: Any,
    log_path: Path,
    run_dir: Path,
    policy: Student,
    round_: int,
    decisions: int,
    losses: dict[str, float],
    result: dict[str, float],
) -> None:
    """A finished round: TensorBoard ``imitation/*``, the policy file, a line of ``imitation.jsonl``."""
    for name, value in {**losses, **{f"agreement_{k}": v for k, v in result.items() if k != "decisions"}}.items():
        writer.add_scalar(f"imitation/{name}", value, round_)
    writer.flush()
    atomic_write(_round_path(run_dir, round_), lambda tmp: torch.save(policy.state_dict(), tmp), suffix=".pt")
    append_jsonl(log_path, {"round": round_, "decisions": decisions, **losses, "holdout": result})


class _ImitationBar:
    """The imitation progress bar, in decisions, with a total known from the start (:meth:`plan`).

    A collection of ``target`` decisions counts ``target`` (its deals in play then finish past the
    target; the bar says so and does not grow); a fit counts its epochs times the targets of the
    rounds it fits, each minibatch its share (the data hold those finished deals too). The
    postfix names the phase in progress.
    """

    def __init__(self, enabled: bool):
        from tqdm.auto import tqdm

        self.bar = tqdm(total=0, desc="imitation", unit="decision", disable=not enabled, dynamic_ncols=True)

    def plan(self, total: int) -> None:
        """Set the total, before anything is counted."""
        self.bar.reset(total=total)

    def restart_clock(self) -> None:
        """Count the rate (and the time left) from now: after the kernels compiled."""
        self.bar.reset(total=self.bar.total)

    def phase(self, text: str) -> None:
        """Name the phase in progress (shown at once)."""
        self.bar.set_postfix_str(text)

    def part(self, units: int, work: int, finishing: str | None = None) -> Callable[[int], None]:
        """The update function of one part of the plan: ``work`` items of progress count ``units``
        on the bar; past ``work`` nothing more counts, and ``finishing`` names the phase.

        :param units: what the part counts on the bar.
        :param work: the items its update function is called with, in all (a collection's target,
            a fit's epochs times its decisions).
        :param finishing: the phase once ``work`` is reached (a collection's deals in play finish).
        """
        done = counted = 0

        def update(n: int) -> None:
            nonlocal done, counted
            done += n
            now = units * min(done, work) // work if work else units
            if now > counted:
                self.bar.update(now - counted)
                counted = now
            if finishing is not None and done >= work:
                self.phase(finishing)

        return update

    def close(self) -> None:
        self.bar.close()


def _round_path(run_dir: Path, round_: int) -> Path:
    return run_dir / "checkpoints" / f"imitation_round_{round_}.pt"


def describe_agreement(result: dict[str, float]) -> str:
    """One line: held-out agreement with the teacher, overall and per decision kind."""
    kinds = ", ".join(f"{k} {result[k]:.3f}" for k in DECISION_KINDS if k in result and result[k] == result[k])
    return f"agreement with the teacher on {int(result['decisions'])} held-out decisions: {result['all']:.3f} ({kinds})"
