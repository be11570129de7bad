"""The ``treppen`` command line as a new user meets it: help, version and path errors."""

from __future__ import annotations

import argparse
from importlib import metadata
from pathlib import Path

import pytest

from treppen.apps import cli, options


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


#: Values every checked option refuses: a value (a count, seed, port, seconds or choice), a folder, an
#: output folder (an empty path).
BAD_VALUES = {"value": ("-1", "nan", "9" * 10_000), "folder": (__file__, "x" * 10_000), "out": ("", "  ")}


def _checked_options(parser: argparse.ArgumentParser, command: list[str]) -> list[tuple[list[str], str, str]]:
    """(command, option, kind of value) for every option of ``parser`` and its subcommands that
    converts or restricts its value (a ``type`` other than text or a path, or ``choices``)."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _checked_options(sub, [*command, name])
        elif action.option_strings and (action.type not in (None, str, Path) or action.choices):
            kind = {options.record_folder: "folder", options.out_folder: "out"}.get(action.type, "value")
            found.append((command, action.option_strings[-1], kind))
    return found


def test_every_refused_option_is_named_in_one_line(capsys):
    """Each subcommand's checked options refuse bad values (a negative number, NaN, a 10,000-digit
    number; a file as a folder, a name too long) with one line naming the option (argparse's
    ``argument --seed: ...``), the value cut short."""
    checked = [found for name in cli.SUBCOMMANDS for found in _checked_options(cli.build_parser([name]), [])]
    assert (
        len(checked) >= 25 and (["mcp"], "--seed", "value") in checked and (["serve"], "--record", "folder") in checked
    )
    for command, option, kind in checked:
        for bad in BAD_VALUES[kind]:
            assert cli.main([*command, option, bad]) == 2, (command, option, bad)
            err = capsys.readouterr().err
            assert err.startswith(f"treppen {' '.join(command)}: error: argument {option}: "), err
            assert err.count("\n") == 1 and len(err) < 600, (command, option, len(err))


def test_a_share_option_takes_0_to_1_only():
    assert [options.share(text) for text in ("0", "0.2", "1")] == [0.0, 0.2, 1.0]
    for text in ("-0.1", "1.5", "nan", "inf", "20%"):
        with pytest.raises(argparse.ArgumentTypeError, match=r"is not a share from 0 to 1 \(0\.2: 20%\)"):
            options.share(text)
