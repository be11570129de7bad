"""Config files: plain YAML read with clear errors, and the shipped configs found by name.

:func:`read_yaml` is the one YAML reader of a config (files, ``key=value`` override values, the
default recipe): plain data only, a key given twice refused. :func:`config_path` resolves
``treppen train --config NAME``: a YAML file, or one of the configs installed with the package
(:func:`shipped_configs`, the repository's ``configs/``).
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path
from typing import Any

import yaml

from treppen_env.messages import shorten

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
        f"config {shorten(str(config))}: no such file, and no shipped config of that name {sorted(shipped)}"
    )
