"""The model zoo (treppen/agents/zoo.py): shipped agents load by name, their weights are checked
against their cards, a card of another env version warns, and the levels of treppen play and
treppen serve resolve per table."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from treppen import agents
from treppen.agents import belief_net, zoo
from treppen.apps.zoo_command import level_label
from treppen.arena.match import play_match
from treppen_env import ENV_VERSION, raw_env
from treppen_env.actions import NUM_ACTIONS
from treppen_env.observation import OBS_SIZE

SHIPPED = zoo.cards()


def make_zoo(root: Path, env: str = ENV_VERSION) -> Path:
    """A zoo of one agent, ``tiny``: a one-layer NumPy policy with its card."""
    folder = root / "tiny"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    weights = folder / "policy.npz"
    np.savez(weights, w0=rng.normal(size=(NUM_ACTIONS, OBS_SIZE)), b0=np.zeros(NUM_ACTIONS), layers=np.array(1),
             activation=np.array("tanh"), steps=np.array(0))  # fmt: skip
    card = {
        "name": "tiny", "description": "a test policy", "env": env, "rules": "treppenromme", "num_players": 2,
        "spec": "{weights}", "weights": "policy.npz", "sha256": zoo.sha256(weights), "level": "medium",
    }  # fmt: skip
    (folder / zoo.CARD).write_text(json.dumps(card))
    return root


@pytest.fixture
def tiny_zoo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = make_zoo(tmp_path / "zoo")
    monkeypatch.setattr(zoo, "zoo_folder", lambda: root)
    return root


def test_the_zoo_ships_policies_for_both_presets_and_player_counts() -> None:
    games = {(c.rules, c.num_players) for c in SHIPPED.values() if c.weights}
    assert games == {("treppenromme", 2), ("treppenromme", 4), ("rum500", 2), ("rum500", 4)}
    for card in SHIPPED.values():
        assert card.env == ENV_VERSION and "elo" in card.elo and card.elo["decks"]["count"] == 100, card.name
        assert card.weights is None or card.sha256 == zoo.sha256(card.weights_path), card.name


#: Two seeded deals of each shipped policy against itself: (outcome, deal points, actions) for seeds 0 and 1.
SELF_PLAY = {
    "ppo-2p": [("went_out", [78, 34], 23), ("went_out", [87, 30], 26)],
    "ppo-4p": [("went_out", [11, 39, 18, 156], 35), ("went_out", [22, 230, 12, 18], 47)],
    "ppo-rum500-2p": [("went_out", [104, 106], 38), ("went_out", [124, 86], 40)],
    "ppo-rum500-4p": [("went_out", [76, 46, -15, 71], 60), ("went_out", [26, 67, 40, 20], 47)],
}


@pytest.mark.parametrize("name", sorted(n for n, c in SHIPPED.items() if c.spec == "{weights}"))
def test_every_shipped_policy_plays_whole_legal_deals_of_its_game(name: str) -> None:
    card = SHIPPED[name]
    played = []
    for seed in range(2):
        seats = [agents.load(name, seed=seed) for _ in range(card.num_players)]
        result = play_match(raw_env(num_players=card.num_players, rules=card.rules), seats, seed=seed)
        played.append((result.outcome, result.deal_points, len(result.actions)))  # play_match checks legality
    assert played == SELF_PLAY[name]


def test_the_beliefs_card_plays_the_search_dealing_from_its_net() -> None:
    card = SHIPPED["beliefs-2p"]
    agent = agents.load("beliefs-2p", seed=0)
    assert isinstance(agent, agents.RolloutAgent) and agent.settings.beliefs == "net"
    assert Path(agent.settings.belief_net) == card.weights_path == belief_net.DEFAULT_FILE


def test_a_corrupted_weights_file_names_the_file_and_both_checksums(tiny_zoo: Path) -> None:
    assert isinstance(agents.load("tiny"), agents.Agent)
    weights = tiny_zoo / "tiny" / "policy.npz"
    expected = zoo.sha256(weights)
    with weights.open("r+b") as handle:
        handle.seek(100)
        handle.write(b"\0\1\2\3")
    with pytest.raises(zoo.ZooError) as err:
        agents.load("tiny")
    assert str(weights) in str(err.value) and expected in str(err.value) and zoo.sha256(weights) in str(err.value)
    weights.unlink()
    with pytest.raises(zoo.ZooError, match="missing"):
        agents.load("tiny")


def test_a_card_of_another_env_version_warns_naming_both(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_zoo(tmp_path / "zoo", env="treppen_v7")
    monkeypatch.setattr(zoo, "zoo_folder", lambda: root)
    with pytest.warns(UserWarning, match=rf"env treppen_v7, this env is {ENV_VERSION}"):
        agents.load("tiny")


def test_a_card_with_an_unknown_field_is_refused(tiny_zoo: Path) -> None:
    path = tiny_zoo / "tiny" / zoo.CARD
    path.write_text(json.dumps({**json.loads(path.read_text()), "colour": "blue"}))
    with pytest.raises(zoo.ZooError, match=r"unknown fields \['colour'\]"):
        zoo.ModelCard.read(path.parent)
    with pytest.warns(UserWarning, match=rf"model card {re.escape(str(path))}: unknown fields \['colour'\].*left out"):
        assert zoo.cards() == {}


def test_levels_resolve_per_table(tiny_zoo: Path) -> None:
    assert zoo.table_spec("medium", 2, "treppenromme") == "tiny"
    assert zoo.table_spec("medium", 4, "treppenromme") == "tiny"  # the nearest player count there is
    assert zoo.table_spec("medium", 2, "rum500") == "greedy"  # none for those rules
    assert zoo.table_spec("easy", 3, "treppenromme") == "greedy"
    assert zoo.table_spec("hard", 2, "treppenromme") == "rollout"
    assert zoo.table_spec("rollout,playouts=8", 3, "rum500") == "rollout,playouts=8"  # not a level
    assert level_label("medium") == "medium: tiny, not rated"
    with pytest.raises(zoo.ZooError, match="unknown level 'expert'"):
        zoo.level_spec("expert", 2, "treppenromme")


def test_unknown_zoo_names_are_listed(tiny_zoo: Path) -> None:
    with pytest.raises(zoo.ZooError, match=r"no zoo agent 'ppo-9p'; the zoo has \['tiny'\]"):
        zoo.card("ppo-9p")


def test_a_zoo_agent_plays_without_torch() -> None:
    name = next(n for n, c in SHIPPED.items() if c.weights)
    program = (
        "import sys\nfrom treppen import agents\nfrom treppen_env import raw_env\n"
        f"agent = agents.load({name!r})\nenv = raw_env(num_players={SHIPPED[name].num_players})\n"
        "env.reset(seed=0)\nagent.act(env.observe(env.agent_selection))\nprint('torch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "False"


def test_zoo_list_prints_every_card(tiny_zoo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from treppen.apps.cli import main

    card = json.loads((tiny_zoo / "tiny" / zoo.CARD).read_text())
    card["elo"] = {"elo": 140.4, "low": 59.6, "high": 219.5, "decks": {"count": 100, "seed": 7}}
    (tiny_zoo / "tiny" / zoo.CARD).write_text(json.dumps(card))
    assert main(["zoo", "list"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[:4] == [
        "tiny: a test policy",
        f"  game        treppenromme, 2 players ({ENV_VERSION}), level medium",
        f"  plays       the NumPy policy policy.npz (sha256 {card['sha256']})",  # not the card's raw {weights}
        "  strength    +140 [+60, +220] vs greedy (100 decks)",  # the one scale: greedy = 0
    ]
    assert level_label("medium") == "medium: tiny, +140 [+60, +220] vs greedy (100 decks)"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{"name": "broken", "descr', "line 1: not JSON"),  # truncated
        ("[1, 2]", "a card is a JSON object of fields, not list"),
        ('{"name": "broken"}', "missing fields ['description', 'env', 'num_players', 'rules', 'spec']"),
        (
            '{"name": "b", "description": "", "env": "x", "rules": "treppenromme", "num_players": "two", "spec": "x"}',
            "field num_players='two' is not of type int",
        ),
        (
            '{"name": "b", "description": "", "env": "x", "rules": "treppenromme", "num_players": 2, "spec": "x", '
            '"elo": {"elo": 1}}',
            "field elo={'elo': 1} lacks numbers",
        ),
    ],
)
def test_a_broken_card_leaves_out_only_its_agent(tiny_zoo: Path, capsys: pytest.CaptureFixture, text, words) -> None:
    """A broken card: the other zoo agents, the built-in agents and ``treppen zoo list`` still work."""
    from treppen.apps import cli

    path = tiny_zoo / "broken" / zoo.CARD
    path.parent.mkdir()
    path.write_text(text)
    with pytest.warns(UserWarning, match=re.escape(f"model card {path}")) as caught:
        assert list(zoo.cards()) == ["tiny"]
    assert words in str(caught[0].message) and "left out" in str(caught[0].message)
    with pytest.warns(UserWarning, match="left out"):
        assert type(agents.load("greedy")).__name__ == "GreedyAgent"
        assert type(agents.load("random")).__name__ == "RandomAgent"
        assert type(agents.load("tiny")).__name__ == "SnapshotAgent"
        assert cli.main(["zoo", "list"]) == 0
    assert capsys.readouterr().out.startswith("tiny: a test policy")


def test_a_zoo_folder_given_by_path_is_checked_as_by_name(tiny_zoo: Path, tmp_path: Path) -> None:
    """A copied zoo folder loads with its card's checks (checksum, env version)."""
    import shutil

    copy = tmp_path / "elsewhere" / "tiny"
    shutil.copytree(tiny_zoo / "tiny", copy)
    for spec in (copy, copy / "policy.npz", f"{copy},deterministic=false"):
        assert type(agents.load(spec)).__name__ == "SnapshotAgent"
    weights = copy / "policy.npz"
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0xFF
    weights.write_bytes(bytes(data))
    for spec in (copy, weights):
        with pytest.raises(zoo.ZooError, match=rf"weights file {re.escape(str(weights))} has SHA-256 [0-9a-f]{{64}}"):
            agents.load(spec)
    card = json.loads((copy / zoo.CARD).read_text())
    (copy / zoo.CARD).write_text(json.dumps({**card, "env": "treppen_v7", "sha256": zoo.sha256(weights)}))
    with pytest.warns(UserWarning, match=rf"env treppen_v7, this env is {ENV_VERSION}"):
        with pytest.raises(ValueError, match=rf"model file {re.escape(repr(str(weights)))}: cannot read it"):
            agents.load(copy)  # the checksum now matches the damaged file: numpy cannot read it, and says so


def test_zoo_rate_writes_the_elo_whose_command_plays_it_again(tiny_zoo: Path, tmp_path: Path) -> None:
    """``treppen zoo rate`` rates a card again on the decks named and rewrites only its ``elo``; the
    ``command`` it writes is the tournament that gives the same figure (greedy in the other seats of
    a 3-player table)."""
    from treppen.apps.cli import main

    path = tiny_zoo / "tiny" / zoo.CARD
    path.write_text(json.dumps({**json.loads(path.read_text()), "num_players": 3}))
    before = zoo.card("tiny").to_dict()
    runs = tmp_path / "runs"
    rate = ["zoo", "rate", "tiny", "--decks", "2", "--seed", "9001", "--runs-dir", str(runs), "--workers", "1"]
    assert main(rate) == 0
    after = zoo.card("tiny").to_dict()
    elo = after.pop("elo")
    assert after == {k: v for k, v in before.items() if k != "elo"}  # the weights, checksum, commit, cost stay
    command = "treppen tournament --agents tiny greedy greedy --players 3 --rules treppenromme --decks 2 --seed 9001"
    assert (elo["decks"], elo["seed"], elo["deals"], elo["command"]) == ({"count": 2, "seed": 9001}, 9001, 6, command)
    assert (runs / "tiny_rating_9001" / "results.jsonl").is_file()

    assert main([*command.split()[1:], "--out", str(tmp_path / "again")]) == 0
    ratings = json.loads((tmp_path / "again" / "ratings.json").read_text())
    i = ratings["agents"].index("tiny")
    assert (ratings["elo"][i], ratings["ci_low"][i], ratings["ci_high"][i]) == (elo["elo"], elo["low"], elo["high"])


def test_zoo_list_markdown_is_the_table_of_the_cards(tiny_zoo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from treppen.apps.cli import main

    assert main(["zoo", "list", "--markdown"]) == 0
    assert capsys.readouterr().out.splitlines()[2] == (
        "| `tiny` | a test policy | treppenromme | 2 | medium | not rated | - | none |"
    )
    path = tiny_zoo / "tiny" / zoo.CARD
    card = json.loads(path.read_text())
    card |= {"cpu_minutes": 3.5, "elo": {"elo": 140.4, "low": 59.6, "high": 219.5, "decks": {"count": 100, "seed": 7}}}
    path.write_text(json.dumps(card))
    assert main(["zoo", "list", "--markdown"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "| name | what it is | rules | players | level | Elo vs greedy | decks | training |",
        "|---|---|---|---|---|---|---|---|",
        "| `tiny` | a test policy | treppenromme | 2 | medium | +140 [+60, +220] | 100, seed 7 | 3.5 CPU minutes |",
    ]
