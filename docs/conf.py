"""Sphinx configuration of the docs site: the guide (Markdown, MyST), the rules, the architecture and
one API page per public module, class and function, built from the docstrings.

Build it with ``sphinx-build -W --keep-going -b html docs docs/_build/html`` (the ``docs`` extra);
CI builds it with warnings as errors.
"""

from __future__ import annotations

import os

# The kernels as the plain Python functions they are written as: autodoc documents them like any
# function, and the build compiles nothing.
os.environ["NUMBA_DISABLE_JIT"] = "1"

import treppen

project = "treppen"
author = "the treppen authors"
copyright = "2026, the treppen authors (MIT License)"  # the footer
release = treppen.__version__
extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
templates_path = ["_templates"]
html_theme = "furo"  # as Gymnasium's and PettingZoo's sites
html_title = f"treppen {release}"

autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
# Optional backends the docs build need not install: their modules still get pages.
autodoc_mock_imports = ["ray"]
napoleon_google_docstring = False
napoleon_numpy_docstring = False
myst_heading_anchors = 3
# Docstrings cite the repository's files ("docs/ARCHITECTURE.md", "RULES §4"), not Sphinx targets.
suppress_warnings = ["myst.header"]
