"""Config files: plain YAML read with clear errors, the shipped configs found by name, and a
config loaded (its sections, ``key=value`` overrides, the checks) and saved.

:func:`read_yaml` is the one YAML reader of a config (files and ``key=value`` override values):
plain data only, a key given twice refused. :func:`config_path` resolves ``treppen train --config
NAME``: a YAML file, or one of the configs installed with the package (:func:`shipped_configs`, the
repository's ``configs/``). :func:`load_config` reads a file and applies overrides into a config of
its backend's class (:mod:`treppen.train.common.config`): a file holds the shared keys at its top level
and the backend's own keys in a section named for it; ``key=value`` goes to the backend's section
(or the top level for a shared key, into the rules options for ``rules_options.max_turns=200``)
and ``section.key=value`` names the section. A key the backend does not read is refused before
anything runs, in one line naming the key, the backend and the backends that read it
(:data:`treppen.train.common.config.READERS`); so is the section of another backend. Files written before
the sections, with every key at the top level, load where each key is the backend's; a run
folder's saved flat ``config.yaml`` held every key of every backend, and there the keys its
backend does not read are dropped (``saved_run``). Types and ranges are checked by pydantic
(nested values included), values that must agree by :meth:`treppen.train.common.config.TrainConfig.check`;
every problem is a :class:`ValueError` naming the file, the key, the value (cut when long) and a
fix. :func:`save_config` writes the resolved config, shared keys and the section, so a run can be
resumed.
"""

from __future__ import annotations

import copy
import importlib.resources
import typing
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import TypeAdapter, ValidationError

from treppen.train.common.config import (
    BACKEND_CONFIGS,
    CONFIG_PACKAGE,
    CONFIGS,
    DEFAULT_BACKEND,
    DEFAULT_CONFIG,
    READERS,
    SHARED,
    TrainConfig,
    shipped_values,
)
from treppen_env.files import atomic_write_text
from treppen_env.messages import shorten
from treppen_env.rules import did_you_mean

#: Old config keys still read, with a DeprecationWarning: old name -> new name.
RENAMED = {"elo_deals": "elo_decks"}
#: Shared keys whose value is a mapping; dotted overrides (``rules_options.max_turns=200``) reach into them.
MAPPINGS = ("rules_options",)
#: Checks the types and ranges of every field of a backend's config, nested values included
#: (pydantic, built on first use).
_CHECKERS: dict[str, TypeAdapter[Any]] = {}


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


def read_config_file(path: str | Path) -> dict[str, Any]:
    """The mapping a config file holds (``{}`` for an empty file).

    :raises FileNotFoundError: when ``path`` does not exist.
    :raises ValueError: for a folder, text that is not plain YAML (:func:`read_yaml`) or YAML that
        is not a mapping.
    """
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"config {str(path)!r} is a folder; give a YAML file (e.g. configs/selfplay.yaml)")
    if not path.is_file():
        raise FileNotFoundError(f"config file {str(path)!r} not found")
    loaded = read_yaml(path.read_text(errors="replace"), f"config file {str(path)!r}")
    if loaded is not None and not isinstance(loaded, dict):
        raise ValueError(f"config file {str(path)!r} must hold a mapping of keys to values")
    return dict(loaded or {})


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
        f"config {shorten(str(config))}: no such file, and no shipped config of that name"
        f"{did_you_mean([name], shipped)} {sorted(shipped)}"
    )


def default_config(overrides: Sequence[str] = ()) -> Path:
    """The shipped config ``treppen train`` runs when none is named: that of the backend the
    overrides name (``backend=sb3``: ``configs/selfplay.yaml``, :data:`treppen.train.common.config.BACKEND_CONFIGS`),
    else :data:`treppen.train.common.config.DEFAULT_CONFIG` (``configs/kernel.yaml``, the batched learner).

    :raises ValueError: for a malformed override (:func:`parse_override`) or an unknown backend.
    """
    named = [value for parent, key, value in map(parse_override, overrides) if (parent, key) == ("", "backend")]
    if not named:
        return config_path(DEFAULT_CONFIG)
    backend = named[-1]
    if not isinstance(backend, str) or backend not in BACKEND_CONFIGS:
        raise ValueError(f"config key backend={shorten(backend)}: choose one of {list(BACKEND_CONFIGS)}")
    return config_path(BACKEND_CONFIGS[backend])


def load_config(
    path: str | Path | None = None, overrides: Sequence[str] | None = None, saved_run: bool = False
) -> TrainConfig:
    """Read a YAML config, apply ``key=value`` overrides and check the result.

    :param path: YAML file of shared keys and a backend section, each key it leaves out at its
        backend's default (:func:`backend_defaults`: the backend's shipped config); ``None`` for
        the defaults of ``backend: sb3`` (the recipe of ``configs/selfplay.yaml``).
    :param overrides: strings ``key=value``; values are parsed as plain YAML (so ``1e-4``,
        ``[128, 128]``, ``null``, ``true`` work); ``section.key=value`` names the section, and dotted
        keys reach into ``rules_options``.
    :param saved_run: ``path`` is a run folder's saved ``config.yaml``: one written before the
        sections, flat with every key of every backend, loads without the keys its backend does not read.
    :return: the checked config, of its backend's class (:data:`treppen.train.common.config.CONFIGS`).
    :raises ValueError: for a file that is not plain YAML (its line named; tags such as
        ``!!python/...`` and keys given twice are refused), unknown keys (listing the valid ones), a
        key or section the backend does not read, malformed overrides, values of the wrong type or
        impossible values; a message names the file.
    :raises FileNotFoundError: when ``path`` does not exist.
    """
    data = read_config_file(path) if path is not None else {}
    overrides = list(overrides or [])
    parsed = [parse_override(item) for item in overrides]
    try:
        return config_from_dict(data, parsed, saved_run)
    except ValueError as err:
        if path is None:
            raise
        given = f" with the overrides {shorten(' '.join(overrides), 160)}" if overrides else ""
        raise ValueError(f"config file {str(path)!r}{given}: {err}") from None


def load_run_config(run_dir: Path, overrides: Sequence[str] = ()) -> TrainConfig:
    """The saved config of the run folder ``run_dir`` (its ``config.yaml``, :func:`save_config`), with
    ``overrides``, as ``--resume`` reads it: checked to be a run's before anything else is read or written.

    :raises FileNotFoundError: when the folder holds no ``config.yaml``.
    :raises ValueError: naming the file, for one that is empty, does not read (not plain YAML, not a
        mapping) or is not a run's (a run's holds its ``name``), and as
        :func:`load_config` for its keys and values.
    """
    path = run_dir / "config.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"--resume {str(run_dir)!r} is not a run folder (no config.yaml)")
    data = read_config_file(path)
    if not data:
        raise ValueError(f"config file {str(path)!r} is empty, so it is no run's saved config; nothing was changed")
    if not isinstance(data.get("name"), str) or not data["name"]:
        raise ValueError(
            f"config file {str(path)!r} is not a run's saved config: it names no run (a run's has its name=); "
            "nothing was changed"
        )
    return load_config(path, overrides, saved_run=True)


def parse_override(item: str) -> tuple[str, str, Any]:
    """``key=value``, ``section.key=value`` or ``rules_options.key=value`` as (parent, key, value):
    the parent is ``""``, a backend's section or a mapping key.

    :raises ValueError: when ``item`` has no ``=``, its value is not YAML, or a dotted key's parent
        is neither a backend nor a mapping key.
    """
    key, sep, text = item.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ValueError(f"override {shorten(item)} is not of the form key=value, e.g. learning_rate=1e-4")
    value = read_yaml(text, f"override {shorten(item)}") if text.strip() else None
    parent, dot, child = key.partition(".")
    if not dot:
        return "", key, value
    if parent not in MAPPINGS and parent not in CONFIGS:
        raise ValueError(
            f"override {shorten(item)}: dotted keys work only for the mapping keys {list(MAPPINGS)} and the "
            f"backends' sections {list(CONFIGS)}"
        )
    return parent, child, value


def override_key(item: str) -> str:
    """The config key an override sets: ``kernel.pick_init=1`` sets ``pick_init``,
    ``rules_options.max_turns=200`` sets ``rules_options``."""
    key = item.partition("=")[0].strip()
    parent, dot, child = key.partition(".")
    return child if dot and parent in CONFIGS else parent


def config_from_dict(
    data: dict[str, Any], overrides: Sequence[tuple[str, str, Any]] = (), saved_run: bool = False
) -> TrainConfig:
    """Build and check the config of a raw mapping (a YAML file's content: shared keys and a section,
    or every key at the top level) and parsed overrides (:func:`parse_override`).

    :raises ValueError: for unknown keys (suggesting the near ones), a key or section the backend
        does not read (naming the backends that read it), a key given twice, wrong types (nested
        values included) or impossible values, naming the key, its value (cut when long) and what
        is allowed.
    """
    backend = next((value for parent, key, value in reversed(overrides) if (parent, key) == ("", "backend")), None)
    backend = data.get("backend", DEFAULT_BACKEND) if backend is None else backend
    if not isinstance(backend, str) or backend not in CONFIGS:
        raise ValueError(f"config key backend={shorten(backend)}: choose one of {list(CONFIGS)}")
    flat = _flatten(data, backend)
    for parent, key, value in overrides:
        if parent in MAPPINGS:
            nested = flat.get(parent)
            flat[parent] = {**(nested if isinstance(nested, dict) else {}), key: value}
        elif parent and parent != backend:
            raise ValueError(_foreign_section(parent, {key: value}, backend))
        elif key != "backend":
            flat[key] = value
    legacy = saved_run and not any(key in CONFIGS for key in data)  # a run's config.yaml from before the sections
    return _build(backend, flat, legacy)


def _flatten(data: dict[str, Any], backend: str) -> dict[str, Any]:
    """The keys of a file's top level and of its ``backend`` section, at one level.

    :raises ValueError: for the section of another backend, a section that is no mapping, a key
        given twice or a shared key in the section.
    """
    flat = {key: value for key, value in data.items() if key not in CONFIGS and key != "backend"}
    for name, section in data.items():
        if name not in CONFIGS:
            continue
        if name != backend:
            raise ValueError(_foreign_section(name, section, backend))
        if not isinstance(section, dict):
            raise ValueError(f"config section {name} must hold a mapping of keys to values")
        for key, value in section.items():
            if key in flat:
                raise ValueError(f"config key {key} is given twice, at the top level and in section {name}")
            if key in SHARED:
                raise ValueError(f"config key {name}.{key}: {key} is a shared key; give it at the top level")
            flat[key] = value
    return flat


def _foreign_section(name: str, section: Any, backend: str) -> str:
    """The refusal of section ``name`` (its first keys named) in a config of ``backend``."""
    keys = list(map(str, section)) if isinstance(section, dict) else []
    listed = f" ({', '.join(keys[:3])}{', ...' if len(keys) > 3 else ''})" if keys else ""
    return (
        f"config section {name}{listed} is for backend {name}; backend {backend} reads section {backend} "
        f"(its shipped config: --config {BACKEND_CONFIGS[backend]})"
    )


def _build(backend: str, flat: dict[str, Any], legacy: bool) -> TrainConfig:
    """The checked config of ``backend`` from its keys, all at one level."""
    cls = CONFIGS[backend]
    for old, new in RENAMED.items():
        if old in flat:
            warnings.warn(f"config key {old} is deprecated; use {new}", DeprecationWarning, stacklevel=3)
            if new in flat and flat[new] != flat[old]:
                raise ValueError(
                    f"config keys {old}={shorten(flat[old])} and {new}={shorten(flat[new])} disagree; give {new} only"
                )
            flat[new] = flat.pop(old)
    valid = (*SHARED, *cls.section())
    unknown = sorted(k for k in map(str, flat) if k not in valid and k not in READERS)
    if unknown:
        raise ValueError(
            f"unknown config key(s) [{', '.join(shorten(k, 40) for k in unknown[:10])}]"
            f"{did_you_mean(unknown, valid)}; valid keys of backend {backend}: {sorted(valid)}"
        )
    for key in [k for k in flat if k not in valid]:
        if legacy:  # the old dump held every key of every backend
            del flat[key]
            continue
        readers = READERS[key]
        who = f"{readers[0]} only" if len(readers) == 1 else f"for backends {', '.join(readers)}"
        raise ValueError(f"config key {key}={shorten(flat[key])} is {who}; backend {backend} does not read it")
    flat = {**backend_defaults(backend), **flat}
    if backend not in _CHECKERS:
        _CHECKERS[backend] = TypeAdapter(cls)
    checker = _CHECKERS[backend]
    try:
        config = checker.validate_python(flat)
    except ValidationError as err:
        raise ValueError(_type_error(err, cls)) from None
    config.check()
    return config


def backend_defaults(backend: str) -> dict[str, Any]:
    """The defaults of ``backend``'s keys: the values of its shipped config
    (:data:`treppen.train.common.config.BACKEND_CONFIGS`, e.g. ``configs/kernel.yaml``; a fresh copy), so that
    a config of one line, ``backend: kernel``, runs on the kernel's own settings. A key that the
    shipped config leaves out keeps its field's default."""
    return copy.deepcopy(shipped_values(backend))


def _type_error(err: ValidationError, cls: type[TrainConfig]) -> str:
    """The first problem pydantic found, as ``config key net_arch[0]=0: Input should be greater than 0``."""
    first = err.errors(include_url=False)[0]
    key, *inner = first["loc"]
    where = f"{key}" + "".join(f"[{part!r}]" for part in inner)
    message = first["msg"]
    if first["type"] == "literal_error":
        message = f"choose one of {list(typing.get_args(typing.get_type_hints(cls)[str(key)]))}"
    more = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
    return f"config key {where}={shorten(first['input'])}: {message}{more}"


def save_config(config: TrainConfig, path: Path) -> None:
    """Write the resolved config as YAML, shared keys and the backend's section (atomically: temp
    file, then ``os.replace``)."""
    atomic_write_text(path, yaml.safe_dump(config.to_dict(), sort_keys=False))
