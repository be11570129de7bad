"""The model zoo: trained agents that ship inside the package, loaded by name (docs/ARCHITECTURE.md
"Agents").

Each agent lies in a folder ``zoo/<name>/`` of this package with its model card ``card.json`` and,
for a learned policy, its NumPy weights (the :mod:`treppen.agents.snapshot` format, played without
torch). The card is data that the code reads and ``treppen zoo list`` prints:

====================  ======================================================================
``name``              the agent's name, as :func:`treppen.agents.load` takes it (``ppo-2p``)
``description``       one line
``env``               the env version it was trained and rated on (:data:`treppen_env.ENV_VERSION`)
``rules``             the rules preset (and ``rules_options``) and ``num_players`` of its game
``spec``              the agent spec it plays: ``"{weights}"`` for the policy of its weights, or
                      a spec that names them (a search guided by the net, ``rollout,...``)
``weights``           the weights file in the folder (``policy.npz``), or null
``sha256``            the weights file's SHA-256, checked on every load
``build``             how ``treppen zoo build NAME`` rebuilds it: the training ``config`` (a
                      shipped name), its ``overrides`` and ``seed``
``commit``            the git commit it was built from; ``treppen_version``
``cpu_minutes``       the training's cost: user + system CPU time of the whole run
``elo``               its rating against greedy (greedy = 0): ``elo``, the 95% interval ``low``
                      and ``high``, ``score`` and ``likelihood`` of superiority, on the named
                      duplicate ``decks`` (their ``count`` and ``seed``), with the ``command``
                      that reproduces it
====================  ======================================================================

:func:`load` checks the weights' checksum (a corrupted file is an error naming the file and both
checksums) and warns when the card's env version is not this env's.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.resources
import json
import types
import typing
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from treppen_env.files import atomic_write_text
from treppen_env.messages import shorten
from treppen_env.version import ENV_VERSION

#: The card's file name in an agent's folder.
CARD = "card.json"
#: Difficulty levels of ``treppen play`` and ``treppen serve``, weakest first.
LEVELS = ("easy", "medium", "hard")


class ZooError(ValueError):
    """A zoo agent that is unknown, or whose weights do not match its card."""


@dataclass(frozen=True)
class ModelCard:
    """A zoo agent's card (see the module docstring for the fields).

    :param folder: the agent's folder (its card and weights).
    """

    name: str
    description: str
    env: str
    rules: str
    num_players: int
    spec: str
    folder: Path
    weights: str | None = None
    sha256: str | None = None
    rules_options: dict[str, Any] = field(default_factory=dict)
    level: str | None = None
    build: dict[str, Any] = field(default_factory=dict)
    commit: str | None = None
    treppen_version: str | None = None
    cpu_minutes: float | None = None
    elo: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def read(cls, folder: Path) -> ModelCard:
        """The card in ``folder``.

        :raises ZooError: naming the card's file, for one that cannot be read, is not JSON (its line
            named), or lacks a field, has one this class does not know or one of the wrong type.
        """
        path = folder / CARD
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as err:
            raise ZooError(f"model card {path}: cannot read it ({err})") from None
        except json.JSONDecodeError as err:
            raise ZooError(f"model card {path} line {err.lineno}: not JSON ({err.msg})") from None
        if not isinstance(data, dict):
            raise ZooError(f"model card {path}: a card is a JSON object of fields, not {type(data).__name__}")
        known = {f for f in cls.__dataclass_fields__ if f != "folder"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ZooError(f"model card {path}: unknown fields {unknown}; the fields: {sorted(known)}")
        missing = sorted(f for f in REQUIRED if f not in data)
        if missing:
            raise ZooError(f"model card {path}: missing fields {missing}")
        hints = typing.get_type_hints(cls)
        for key, value in data.items():
            if not _fits(value, hints[key]):
                kind = _type_name(hints[key])
                raise ZooError(f"model card {path}: field {key}={shorten(value)} is not of type {kind}")
        card = cls(folder=folder, **data)
        try:
            if "elo" in card.elo:  # the numbers the zoo's strength text reads (treppen.apps.zoo_command)
                e = card.elo
                float(e["elo"]), float(e["low"]), float(e["high"]), int(e["decks"]["count"])
        except (KeyError, TypeError, ValueError):
            raise ZooError(
                f"model card {path}: field elo={shorten(card.elo)} lacks numbers elo, low, high and decks.count"
            ) from None
        return card

    def to_dict(self) -> dict[str, Any]:
        """The card's fields as JSON data (without the folder)."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "folder"}

    def write(self) -> None:
        """Write the card to ``card.json`` in its folder, atomically (the old card stays whole until
        the new one is complete)."""
        atomic_write_text(self.folder / CARD, json.dumps(self.to_dict(), indent=2) + "\n")

    @property
    def weights_path(self) -> Path | None:
        """The weights file, or None for an agent without weights."""
        return None if self.weights is None else self.folder / self.weights

    def agent_spec(self) -> str:
        """The agent spec this card plays, its weights' path filled in."""
        path = self.weights_path
        return self.spec.replace("{weights}", "" if path is None else str(path))


#: The fields every card must have.
REQUIRED = tuple(
    f.name
    for f in dataclasses.fields(ModelCard)
    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING and f.name != "folder"
)


def zoo_folder() -> Path:
    """The folder of the shipped agents (``zoo/`` of this package)."""
    return Path(str(importlib.resources.files("treppen.agents") / "zoo"))


def cards(folder: Path | None = None) -> dict[str, ModelCard]:
    """Every zoo agent's card, by name (sorted). A card that cannot be read is left out with a
    warning naming its file and what is wrong; the other agents, and the built-in ones, still load."""
    root = zoo_folder() if folder is None else folder
    found = {}
    for path in sorted(root.glob(f"*/{CARD}")):
        try:
            card = ModelCard.read(path.parent)
        except ZooError as err:
            warnings.warn(f"{err}; that zoo agent is left out", stacklevel=2)
            continue
        found[card.name] = card
    return found


def _type_name(hint: Any) -> str:
    """``int``, ``str | None``: a card field's type as the card's docs write it."""
    return str(getattr(hint, "__name__", hint)).replace("typing.", "")


def _fits(value: Any, hint: Any) -> bool:
    """Whether a JSON ``value`` has the type ``hint`` of a card field (an int is a float; a bool is no number)."""
    options = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    for option in options:
        kind = typing.get_origin(option) or option
        if value is None and kind is type(None):
            return True
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            return True
        if kind is not type(None) and isinstance(value, kind) and not (isinstance(value, bool) and kind is not bool):
            return True
    return False


def card(name: str) -> ModelCard:
    """The card of the zoo agent ``name``.

    :raises ZooError: for an unknown name, listing the zoo's.
    """
    known = cards()
    if name not in known:
        raise ZooError(f"no zoo agent {name!r}; the zoo has {sorted(known)}")
    return known[name]


def sha256(path: Path) -> str:
    """The SHA-256 of a file (hex)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def verify(model: ModelCard) -> None:
    """Check the card's weights against its checksum and its env version against this env's.

    :raises ZooError: when the weights file is missing or its SHA-256 is not the card's.
    """
    check_weights(model)
    if model.env != ENV_VERSION:
        warnings.warn(
            f"zoo agent {model.name!r} was trained and rated on env {model.env}, this env is {ENV_VERSION}: "
            "its observations may mean other things now; rebuild it (treppen zoo build) before trusting it",
            stacklevel=3,
        )


def check_weights(model: ModelCard) -> None:
    """Check the card's weights file against its checksum.

    :raises ZooError: when the weights file is missing or its SHA-256 is not the card's.
    """
    path = model.weights_path
    if path is not None:
        if not path.is_file():
            raise ZooError(f"zoo agent {model.name!r}: its weights file {path} is missing")
        found = sha256(path)
        if found != model.sha256:
            raise ZooError(
                f"zoo agent {model.name!r}: the weights file {path} has SHA-256 {found}, its card says "
                f"{model.sha256}: the file is damaged or was replaced (rebuild it: treppen zoo build {model.name})"
            )


def level_card(level: str, num_players: int, rules: str) -> ModelCard | None:
    """The zoo agent of a difficulty level (:data:`LEVELS`: ``easy`` the greedy heuristic, ``medium``
    the shipped policy, ``hard`` the strongest search) for a table: the card of that level for the
    rules preset and the nearest player count (2 for 2 players, else 4, then any), or None when the
    zoo has none (``easy`` is the greedy heuristic, which needs no card).

    :raises ZooError: for an unknown level.
    """
    if level not in LEVELS:
        raise ZooError(f"unknown level {level!r}; the levels: {list(LEVELS)}")
    players = 2 if num_players == 2 else 4
    matches = [c for c in cards().values() if c.level == level and c.rules == rules]
    matches.sort(key=lambda c: (abs(c.num_players - players), c.name))
    return matches[0] if matches else None


#: A level's agent where the zoo has no card for it.
LEVEL_FALLBACK = {"easy": "greedy", "medium": "greedy", "hard": "rollout"}


def level_spec(level: str, num_players: int, rules: str) -> str:
    """The agent spec of a difficulty level at a table: the zoo agent of :func:`level_card`, else
    :data:`LEVEL_FALLBACK` (``greedy`` for ``easy``, the search ``rollout`` for ``hard``)."""
    found = level_card(level, num_players, rules)
    return LEVEL_FALLBACK[level] if found is None else found.name


def table_spec(spec: str, num_players: int, rules: str) -> str:
    """``spec`` for a table of ``num_players`` under the preset ``rules``: a difficulty level
    (:data:`LEVELS`) becomes its agent there (:func:`level_spec`), any other spec stays as it is."""
    return level_spec(spec, num_players, rules) if spec in LEVELS else spec
