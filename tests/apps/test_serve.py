"""``treppen serve``'s API through the ASGI test client: whole deals, illegal, stale and bad requests."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
from starlette.testclient import TestClient

from apps.web import MAX_JSON_BYTES, MAX_REPLAY_STEPS, create_app
from treppen_env import records
from treppen_env.actions import parse_action


@pytest.fixture
def client(tmp_path):
    with TestClient(create_app(["greedy", "random"], record_dir=tmp_path / "rec", max_sessions=4, seed=5)) as c:
        yield c


def new(client, seats=("you", 0), **kwargs):
    response = client.post("/api/sessions", json={"seats": list(seats), **kwargs})
    assert response.status_code == 200, response.json()
    return response.json()


def person_move(view) -> int:
    """A legal move from the page's groups: draw, else the first meld, else the first discard."""
    legal = view["legal"]
    if legal["draw"] is not None:
        return legal["draw"]
    if legal["take"]:
        return legal["take"][min(legal["take"])]
    return legal["melds"][0]["action"] if legal["melds"] else next(iter(legal["discards"].values()))


def play_through(client, view, limit=2000):
    """Play the person's moves and let the agents move until the episode is over; return the views."""
    views = [view]
    for _ in range(limit):
        if view["over"]:
            return views
        sid = view["session"]
        if view["your_turn"]:
            r = client.post(f"/api/sessions/{sid}/move", json={"action": person_move(view), "version": view["version"]})
        else:
            r = client.post(f"/api/sessions/{sid}/advance", json={"version": view["version"]})
        assert r.status_code == 200, r.json()
        view = r.json()
        views.append(view)
    raise AssertionError("the deal did not end")


def test_config_offers_only_the_server_agents(client):
    config = client.get("/api/config").json()
    assert config == {
        "agents": ["greedy", "random"],
        "rules": ["rum500", "treppenromme"],
        "episodes": ["deal", "game"],
        "min_players": 2,
        "max_players": 4,
    }
    page = client.get("/")
    assert page.status_code == 200 and "<title>Treppenrommé</title>" in page.text
    assert client.get("/static/app.js").status_code == 200


def test_a_whole_deal_through_the_api(client, tmp_path):
    view = new(client, ("you", 0, 1))
    assert view["mode"] == "play" and view["you"] == 0 and view["table"]["num_players"] == 3
    players = view["table"]["players"]
    assert len(players[0]["hand"]) == 7 and players[1]["hand"] is None and players[2]["hand"] is None  # hidden
    assert [p["name"] for p in players] == ["you", "greedy", "random"]
    views = play_through(client, view)
    end = views[-1]
    assert end["over"] and end["summary"]["deal"] == 1 and end["records"] == 1
    assert sum(v["your_turn"] for v in views) > 0 and sum(v["agent_to_move"] for v in views) > 0
    assert [v["version"] for v in views] == list(range(len(views)))  # one move a request
    assert end["log"][-1]["move"].startswith("deal 1 over: ")
    for v in views[:-1]:  # the person never sees another hand before the deal is over
        assert all(p["hand"] is None for p in v["table"]["players"][1:])
    assert [len(p["hand"]) for p in end["table"]["players"]] == [p["hand_size"] for p in end["table"]["players"]]
    (path,) = (tmp_path / "rec").iterdir()
    (record,) = records.read(path)
    records.check(record)
    assert record["agents"] == ["human", "greedy", "random"] and record["source"] == "serve"
    assert record["deal_points"] == end["summary"]["deal_points"]
    assert len(record["actions"]) == len(views) - 1
    download = client.get(f"/api/sessions/{end['session']}/record")
    assert records.loads(download.text) == [record]
    r = client.post(f"/api/sessions/{end['session']}/advance", json={"version": end["version"]})
    assert r.status_code == 409 and r.json()["error"] == "the game is over; start a new one"


def test_a_game_of_deals_and_watching(client):
    view = new(client, (1, 1), mode="watch", episode="game", rules="rum500")
    assert view["you"] is None and all(p["hand"] is not None for p in view["table"]["players"])  # watching shows all
    views = play_through(client, view, limit=20000)
    summaries = {v["summary"]["deal"]: v["summary"] for v in views if v["summary"]}
    last = views[-1]["summary"]
    assert last["game_over"] and len(summaries) == last["deal"] >= 2 and max(last["totals"]) >= 500
    assert np.sum([s["deal_points"] for s in summaries.values()], axis=0).tolist() == last["totals"]


def test_an_illegal_move_is_refused_and_the_game_goes_on(client):
    view = new(client)
    sid = view["session"]
    assert view["your_turn"] and view["table"]["phase"] == "draw"
    bad = parse_action("discard " + view["table"]["players"][0]["hand"][0])
    r = client.post(f"/api/sessions/{sid}/move", json={"action": bad, "version": view["version"]})
    assert r.status_code == 400
    assert r.json()["error"].startswith("illegal move: illegal action discard")
    assert "in the draw phase: draw from the stock or take from the staircase first (RULES §4.1)" in r.json()["error"]
    for action in (-1, 898, 10**6, 1.5, "0", None, True, [0]):
        r = client.post(f"/api/sessions/{sid}/move", json={"action": action, "version": view["version"]})
        assert r.status_code == 400, action
        assert "must be an integer in 0..897" in r.json()["error"], action
    same = client.get(f"/api/sessions/{sid}").json()
    assert same["version"] == view["version"] and same["table"] == view["table"]
    r = client.post(f"/api/sessions/{sid}/move", json={"action": view["legal"]["draw"], "version": view["version"]})
    assert r.status_code == 200 and r.json()["table"]["phase"] == "meld"


def test_stale_and_out_of_turn_moves(client):
    view = new(client)
    sid = view["session"]
    draw = {"action": view["legal"]["draw"], "version": view["version"]}
    assert client.post(f"/api/sessions/{sid}/move", json=draw).status_code == 200
    stale = client.post(f"/api/sessions/{sid}/move", json=draw)  # the same click again: an old table
    assert stale.status_code == 409 and stale.json()["error"].startswith("stale move: the table is at version 1")
    r = client.post(f"/api/sessions/{sid}/advance", json={"version": 1})
    assert r.status_code == 409 and r.json()["error"] == "it is your turn, not an agent's"
    view = client.get(f"/api/sessions/{sid}").json()
    discard = next(iter(view["legal"]["discards"].values()))
    view = client.post(f"/api/sessions/{sid}/move", json={"action": discard, "version": 1}).json()
    assert view["agent_to_move"]
    r = client.post(f"/api/sessions/{sid}/move", json={"action": 0, "version": view["version"]})
    assert r.status_code == 409 and r.json()["error"] == "it is not your turn"


def test_bad_and_stale_sessions(client):
    for sid in ("nope", "x" * 500):
        r = client.get(f"/api/sessions/{sid}")
        assert r.status_code == 404 and "expired or never existed" in r.json()["error"]
        assert client.post(f"/api/sessions/{sid}/move", json={"action": 0, "version": 0}).status_code == 404
    assert client.get("/api/sessions/%2e%2e%2fetc").status_code == 404
    view = new(client)
    assert client.delete(f"/api/sessions/{view['session']}").status_code == 200
    assert client.get(f"/api/sessions/{view['session']}").status_code == 404
    first = new(client)
    others = [new(client) for _ in range(4)]  # max_sessions=4: the least recently used goes
    assert client.get(f"/api/sessions/{first['session']}").status_code == 404
    assert all(client.get(f"/api/sessions/{v['session']}").status_code == 200 for v in others)


def test_two_tabs_play_two_games(client):
    a, b = new(client), new(client)
    assert a["session"] != b["session"]
    client.post(f"/api/sessions/{a['session']}/move", json={"action": a["legal"]["draw"], "version": 0})
    assert client.get(f"/api/sessions/{a['session']}").json()["version"] == 1
    assert client.get(f"/api/sessions/{b['session']}").json()["version"] == 0


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"seats": ["you", 2]}, "seat 1: '2' is neither 'you' nor an agent 0..1"),
        ({"seats": ["you", "/etc/passwd"]}, "seat 1: '/etc/passwd' is neither"),
        ({"seats": ["you", True]}, "seat 1: 'True' is neither"),
        ({"seats": ["you", {"spec": "greedy"}]}, "is neither"),
        ({"seats": ["you"]}, "'seats' must be a list of 2..4 entries"),
        ({"seats": ["you", 0, 0, 0, 0]}, "'seats' must be a list of 2..4 entries"),
        ({"seats": "you,0"}, "'seats' must be a list"),
        ({"seats": ["you", "you"]}, "play mode needs exactly one seat 'you'; got 2"),
        ({"seats": ["you", 0], "mode": "watch"}, "watch mode needs no seat 'you'; got 1"),
        ({"seats": [0, 1], "mode": "admin"}, "'mode' must be one of ['play', 'watch']"),
        ({"seats": [0, 1], "mode": "watch", "rules": "poker"}, "'rules' must be one of"),
        ({"seats": ["you", 0], "episode": 3}, "'episode' must be one of ['deal', 'game']; got 3"),
    ],
)
def test_bad_new_game_requests(client, body, message):
    r = client.post("/api/sessions", json=body)
    assert r.status_code == 400 and message in r.json()["error"]


def test_garbage_never_crashes_the_server(client):
    sid = new(client)["session"]
    rng = np.random.default_rng(0)
    bodies = [b"", b"{", b"[]", b"null", b'"x"', b"\xff\xfe", json.dumps({"action": [1] * 50}).encode()]
    bodies += [rng.bytes(int(rng.integers(1, 200))) for _ in range(20)]
    for path in ("/api/sessions", f"/api/sessions/{sid}/move", f"/api/sessions/{sid}/advance", "/api/replay"):
        for body in bodies:
            assert 400 <= client.post(path, content=body).status_code < 500, (path, body)
    huge = b'{"seats": [' + b" " * MAX_JSON_BYTES + b"]}"
    assert client.post("/api/sessions", content=huge).status_code == 413
    assert client.get("/api/config").status_code == 200


def deal_records():
    from tests.treppen_env.test_records import play_recorded

    _, _, recs = play_recorded(3, num_players=2, episode="game", target=300)
    return recs


def test_replay_a_record_file(client):
    recs = deal_records()
    text = "".join(json.dumps(r) + "\n" for r in recs).encode()
    for content in (text, gzip.compress(text)):
        r = client.post("/api/replay?deal=2", content=content)
        assert r.status_code == 200, r.json()
        data = r.json()
        assert data["count"] == 3 and data["deal"] == 2 and data["record"] == recs[1]
        assert [d["deal_points"] for d in data["deals"]] == [rec["deal_points"] for rec in recs]
        frames = data["frames"]
        assert len(frames) == len(recs[1]["actions"]) + 1 and frames[0]["move"] is None
        assert frames[1]["move"]["move"] and all(p["hand"] is not None for p in frames[0]["table"]["players"])
        assert frames[-1]["table"]["phase"] == "deal_over"
    assert "holds deals 1..3" in client.post("/api/replay?deal=4", content=text).json()["error"]
    assert "must be a deal number" in client.post("/api/replay?deal=-1", content=text).json()["error"]
    tampered = {**recs[0], "actions": [*recs[0]["actions"][:5], 897, *recs[0]["actions"][6:]]}
    r = client.post("/api/replay", content=json.dumps(tampered).encode())
    assert r.status_code == 400 and r.json()["error"].startswith("deal 1, step 5 (player")
    r = client.post("/api/replay", content=gzip.compress(b"x")[:-3])
    assert r.status_code == 400 and "does not unpack" in r.json()["error"]
    endless = {**recs[0], "actions": [0] * (MAX_REPLAY_STEPS + 1)}
    r = client.post("/api/replay", content=json.dumps(endless).encode())
    assert (
        r.status_code == 413
        and r.json()["error"] == f"deal 1 has 5001 moves; the page shows at most {MAX_REPLAY_STEPS}"
    )
    r = client.post("/api/replay", content=b'{"format": "treppen-record/1"}')
    assert r.status_code == 400 and r.json()["error"].startswith("the file, line 1: missing keys")


def test_the_server_refuses_bad_opponents():
    with pytest.raises(ValueError, match="'human' cannot be a server opponent"):
        create_app(["greedy", "human"])
    with pytest.raises(ValueError, match="unknown agent spec 'nobody'"):
        create_app(["nobody"])


def test_concurrent_clicks_play_one_move(client):
    """Eight requests for the same table at once (a double click, two scripts): one move is played,
    the others are stale; nothing fails on the server."""
    from concurrent.futures import ThreadPoolExecutor

    view = new(client, (0, 1), mode="watch")
    sid = view["session"]
    with ThreadPoolExecutor(8) as pool:
        codes = list(
            pool.map(lambda _: client.post(f"/api/sessions/{sid}/advance", json={"version": 0}).status_code, range(8))
        )
    assert sorted(codes) == [200] + [409] * 7
    assert client.get(f"/api/sessions/{sid}").json()["version"] == 1


def test_serve_command_refuses_bad_settings(capsys):
    from apps.cli import main

    assert main(["serve", "--opponents", "greedy", "human"]) == 2
    assert "'human' cannot be a server opponent" in capsys.readouterr().err
    assert main(["serve", "--port", "70000"]) == 2
    assert "--port 70000 is not a port" in capsys.readouterr().err
