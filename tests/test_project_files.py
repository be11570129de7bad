"""The files every project has: LICENSE (the license pyproject names), CHANGELOG.md (Keep a
Changelog, a section for the current version) and CITATION.cff (the current version)."""

from __future__ import annotations

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
