"""The files every project has: LICENSE (the license pyproject names), CHANGELOG.md (Keep a
Changelog, a section for the current version) and CITATION.cff (the current version)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import yaml

import treppen

ROOT = Path(__file__).resolve().parents[1]


def test_the_license_file_is_the_one_pyproject_names() -> None:
    assert re.search(r'^license = "MIT"$', (ROOT / "pyproject.toml").read_text(), re.M)
    assert (ROOT / "LICENSE").read_text().startswith("MIT License\n")


def test_the_changelog_and_citation_name_the_current_version() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert "[Keep a Changelog](https://keepachangelog.com/en/1.1.0/)" in changelog
    versions = re.findall(r"^## (\S+)", changelog, re.M)
    assert versions[:2] == ["Unreleased", treppen.__version__]
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert citation["cff-version"] == "1.2.0" and citation["version"] == treppen.__version__
    assert citation["license"] == "MIT" and citation["authors"]


def test_every_package_says_what_it_holds() -> None:
    """The docs site's API pages open with each package's docstring (an empty one left
    ``treppen.train`` without a description)."""
    packages = [
        p.parent
        for root in ("treppen_env", "agents", "openspiel", "arena", "train", "apps")
        for p in (ROOT / root).rglob("__init__.py")
    ]
    empty = [
        str(p.relative_to(ROOT)) for p in packages if not ast.get_docstring(ast.parse((p / "__init__.py").read_text()))
    ]
    assert len(packages) >= 7 and empty == []
