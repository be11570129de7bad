"""The ``treppen`` command line as a new user meets it: help, version and path errors."""

from __future__ import annotations

from importlib import metadata

import pytest

from treppen.apps import cli


def test_no_arguments_prints_the_help(capsys):
    assert cli.main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: treppen [-h] [--version]")
    for name in cli.SUBCOMMANDS:
        assert f"    {name} " in out


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"treppen {metadata.version('treppen')}\n"


def test_resume_of_a_missing_path_says_it_does_not_exist(tmp_path, capsys):
    missing = tmp_path / "no_such_run"
    assert cli.main(["train", "--resume", str(missing)]) == 2
    assert capsys.readouterr().err == f"treppen train: error: --resume {str(missing)!r}: the path does not exist\n"
    assert cli.main(["train", "--resume", str(tmp_path)]) == 2
    assert "is not a run folder (no config.yaml)" in capsys.readouterr().err


def _help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit):
        cli.main([*argv, "--help"])
    return " ".join(capsys.readouterr().out.split())  # argparse wraps lines to the terminal width


def test_play_help_names_run_folders_and_the_move_syntax(capsys):
    text = _help(["play"], capsys)
    assert "a level (easy: greedy, medium: the shipped policy, hard: the search" in text
    assert "a model .zip or a training run folder (default: hard)" in text
    for move in ("draw", "take 2", "meld 7S 7H 7D", "layoff 8H high", "discard KC", "? or help", "quit"):
        assert f" {move} " in text


def test_train_help_says_resume_extends_a_finished_run(capsys):
    assert "or a finished one further with a larger total_timesteps=N" in _help(["train"], capsys)
