"""Rebuilding the model zoo's agents from their cards (``treppen zoo build NAME``).

A card's ``build`` recipe names a shipped training config, its overrides and a seed
(:mod:`treppen.agents.zoo`). :func:`build` trains that run (in ``runs/zoo/<name>/``; an interrupted
build resumes it), exports the final policy as NumPy weights (:func:`treppen.train.sb3.pool.save_snapshot`),
rates them against greedy on the card's duplicate decks (:func:`treppen.arena.strength.rate_against`)
and writes the weights and the updated card (checksum, commit, cost, Elo) into the agent's folder,
atomically. A card without a ``build`` recipe (a search agent) is only rated again.
"""

from __future__ import annotations

import json
import resource
import subprocess
from pathlib import Path
from typing import Any

from treppen.agents import zoo
from treppen.arena.strength import rate_against
from treppen.train.common.config_files import config_path, load_config
from treppen.train.launch import train
from treppen_env.files import atomic_write, atomic_write_text
from treppen_env.version import ENV_VERSION

#: The decks a card is rated on when it names none.
DEFAULT_DECKS = {"count": 100, "seed": 2026}


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and its finished children."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def git_commit(where: Path) -> str | None:
    """The commit checked out at ``where``, or None outside a git checkout."""
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return done.stdout.strip() or None


def rating_command(card: zoo.ModelCard, decks: dict[str, int]) -> str:
    """The command that plays the card's rating tournament again."""
    return (
        f"treppen tournament --agents {card.name} greedy --players {card.num_players} --rules {card.rules} "
        f"--decks {decks['count']} --seed {decks['seed']}"
    )


def build(name: str, runs_dir: Path = Path("runs/zoo"), workers: int = 2, progress: bool = True) -> zoo.ModelCard:
    """Rebuild the zoo agent ``name`` from its card (see the module docstring).

    :param runs_dir: where the training run and the rating tournament are kept.
    :param workers: worker processes of the rating tournament.
    :return: the new card.
    :raises treppen.agents.zoo.ZooError: for an unknown name.
    """
    card = zoo.card(name)
    data: dict[str, Any] = card.to_dict()
    if card.build:
        recipe = card.build
        overrides = [*recipe.get("overrides", []), f"seed={recipe['seed']}", f"runs_dir={runs_dir}", f"name={name}"]
        config = load_config(config_path(recipe["config"]), [*overrides, f"progress={str(progress).lower()}"])
        run_dir = runs_dir / name
        start = cpu_seconds()
        run_dir = train(config, resume=(run_dir / "config.yaml").is_file())
        data["cpu_minutes"] = round((cpu_seconds() - start) / 60, 1)
        weights = card.folder / (card.weights or "policy.npz")
        _export(run_dir, weights)
        data["weights"], data["sha256"] = weights.name, zoo.sha256(weights)
    decks = dict(card.elo.get("decks", DEFAULT_DECKS))
    rated = zoo.ModelCard(**{**data, "folder": card.folder})
    strength = rate_against(
        rated.agent_spec(), "greedy", card.num_players, card.rules, decks["count"], decks["seed"], workers,
        runs_dir / f"{name}_rating", progress,
    )  # fmt: skip
    data["elo"] = {**strength.to_dict(), "decks": decks, "command": rating_command(card, decks)}
    data |= {"env": ENV_VERSION, "commit": git_commit(Path(__file__).parent), "treppen_version": _version()}
    atomic_write_text(card.folder / zoo.CARD, json.dumps(data, indent=2) + "\n")
    return zoo.ModelCard.read(card.folder)


def _export(run_dir: Path, weights: Path) -> None:
    """The run's final policy as NumPy weights (an SB3 run's ``final_model.zip``, or an RLlib run's
    ``final_policy.npz`` as it is)."""
    from treppen.train.sb3.pool import save_snapshot

    final_npz = run_dir / "final_policy.npz"
    if final_npz.is_file():
        atomic_write(weights, lambda tmp: Path(tmp).write_bytes(final_npz.read_bytes()), suffix=".npz")
        return
    from sb3_contrib import MaskablePPO

    from treppen.agents.policy import legacy_classes

    final = run_dir / "final_model.zip"
    save_snapshot(MaskablePPO.load(final, device="cpu", custom_objects=legacy_classes(final)).policy, weights)


def _version() -> str:
    from treppen import __version__

    return __version__
