"""Checks of train/launch.py that run before a run folder is made: rollout workers that this machine
can run (at most 4 per core; more than the cores is a warning)."""

from __future__ import annotations

import warnings

import pytest

from treppen.train import launch
from treppen.train.common.config_files import config_path, load_config
from treppen.train.kernel import rollouts


def kernel_config(*overrides: str):
    return load_config(config_path("kernel"), ["n_envs=64", "batch_size=512", *overrides])


@pytest.fixture
def two_cores(monkeypatch):
    monkeypatch.setattr(rollouts, "usable_cores", lambda: 2)


def test_more_than_four_workers_a_core_are_refused(two_cores):
    with pytest.raises(ValueError) as err:
        launch.check_workers(kernel_config("rollout_workers=9"))
    assert str(err.value) == (
        "config key rollout_workers=9: this machine has 2 usable cores, room for at most 8 worker processes "
        "(4 per core); use rollout_workers=auto (the cores less one) or at most 8"
    )


def test_more_workers_than_cores_are_a_warning(two_cores):
    with pytest.warns(UserWarning) as caught:
        launch.check_workers(kernel_config("rollout_workers=8"))
    assert [str(w.message) for w in caught] == [
        "rollout_workers=8 is more than the 2 usable cores; the workers share them (rollout_workers=auto: the "
        "cores less one)"
    ]


@pytest.mark.parametrize("overrides", [["rollout_workers=2"], ["rollout_workers=auto"], ["ray_address=auto"]])
def test_workers_within_the_cores_or_on_ray_pass_quietly(two_cores, overrides):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert launch.check_workers(kernel_config(*overrides)) is None
