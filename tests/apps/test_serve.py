"""``treppen serve``'s API through the ASGI test client: whole deals, illegal, stale and bad requests."""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from starlette.testclient import TestClient

from treppen.apps import serve, web
from treppen.apps.web import MAX_JSON_BYTES, create_app
from treppen.apps.web_replay import MAX_REPLAY_STEPS
from treppen_env import records
from treppen_env.actions import action_to_str, parse_action

ROOT = Path(__file__).resolve().parents[2]
BASE = "http://127.0.0.1:8000"
RECORD = {"Content-Type": "application/octet-stream"}
JSON = {"Content-Type": "application/json"}


@pytest.fixture
def client(tmp_path):
    app = create_app(["greedy", "random"], record_dir=tmp_path / "rec", max_sessions=4, seed=5)
    with TestClient(app, base_url=BASE) as c:
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
        "labels": ["greedy", "random"],
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
    points = " / ".join(map(str, end["summary"]["deal_points"]))
    assert end["log"][-1]["move"] == f"deal 1 over: {end['summary']['outcome_text']}; {points}"
    last = end["log"][-2]["seat"]  # the move that ends the deal shows what the end scored
    before = views[-2]["table"]["players"][last]["points"]
    assert end["log"][-2]["points"] == end["summary"]["deal_points"][last] - before
    assert end["summary"]["totals"] == [p["total"] for p in end["table"]["players"]] and end["episode"] == "deal"
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
    ends = [v for u, v in itertools.pairwise(views) if v["summary"] and u["summary"] != v["summary"]]
    for v in ends[:-1]:
        ended = v["summary"]["table"]  # the next deal is dealt at once; the summary keeps the last table
        assert v["table"]["deal"] == v["summary"]["deal"] + 1 and v["table"]["phase"] == "draw"
        assert ended["phase"] == "deal_over" and ended["deal"] == v["summary"]["deal"]
        assert [p["total"] for p in ended["players"]] == v["summary"]["totals"]
    logs = [e for v in views for e in v["log"]]
    takes = [e["move"] for e in logs if e["move"].startswith("take ")]
    assert takes and all(re.fullmatch(r"take (\d+) \(([2-9TJQKA][SHDC] ?)+\)", t) for t in takes)
    assert all("_" not in e["move"] for e in logs if e["seat"] is None)


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


def test_an_agent_that_cannot_move_is_played_by_greedy():
    """A seat whose agent raises (a model endpoint that is down) moves by the greedy heuristic; the
    log says why, and the watched game goes on to its end."""
    app = create_app(["tests.apps.failing_agents:Raising", "greedy"], seed=5)
    with TestClient(app, base_url=BASE) as client:
        end = play_through(client, new(client, (0, 1), mode="watch"))[-1]
    raising = [e["move"] for e in end["log"] if e["seat"] == 0]
    assert end["over"] and end["summary"]["deal"] == 1
    assert raising and all(
        m.endswith(" (greedy's move: the agent failed: the model's endpoint is down)") for m in raising
    )


def test_a_record_that_cannot_be_written_undoes_the_move(tmp_path):
    """The record folder's place is taken by a file: the move that ends the deal is refused (500,
    naming the file and why) and undone; with the folder back, the same move ends the deal."""
    folder = tmp_path / "rec"
    app = create_app(["greedy"], record_dir=folder, seed=5)
    with TestClient(app, base_url=BASE) as client:
        view = new(client, (0, 0), mode="watch")
        folder.write_text("not a folder")
        for _ in range(2000):
            r = client.post(f"/api/sessions/{view['session']}/advance", json={"version": view["version"]})
            if r.status_code != 200:
                break
            view = r.json()
        assert r.status_code == 500 and r.json()["error"].startswith(
            f"the deal's record cannot be written to '{folder}/"
        )
        assert client.get(f"/api/sessions/{view['session']}").json() == view
        folder.unlink()
        r = client.post(f"/api/sessions/{view['session']}/advance", json={"version": view["version"]})
        assert r.status_code == 200 and r.json()["over"] and r.json()["records"] == 1
    (path,) = folder.iterdir()
    assert len(records.read(path)) == 1


def test_the_docs_name_the_level_the_page_opens_on():
    """The page's seats open on the first agent the server offers (tests/apps/test_browser.py);
    with serve's default opponents that is easy, and the README and the getting-started guide say so."""
    parser = argparse.ArgumentParser()
    serve.add_arguments(parser)
    first = parser.parse_args([]).opponents[0]
    assert first == "easy"
    for doc in ("README.md", "docs/guide/getting_started.md"):
        (line,) = [line for line in (ROOT / doc).read_text().splitlines() if line.startswith("treppen serve ")]
        assert line.endswith(f"(it opens on {first})"), (doc, line)


def test_bad_and_stale_sessions(client):
    for sid in ("nope", "x" * 500):
        r = client.get(f"/api/sessions/{sid}")
        assert r.status_code == 404 and "expired or never existed" in r.json()["error"]
        assert client.post(f"/api/sessions/{sid}/move", json={"action": 0, "version": 0}).status_code == 404
    assert client.get("/api/sessions/%2e%2e%2fetc").status_code == 404
    view = new(client)
    assert client.delete(f"/api/sessions/{view['session']}").json() == {"deleted": True}
    assert client.get(f"/api/sessions/{view['session']}").status_code == 404
    r = client.delete(f"/api/sessions/{view['session']}")
    assert r.status_code == 404 and "expired or never existed" in r.json()["error"]


def test_a_full_server_drops_idle_games_never_live_ones(client, monkeypatch):
    store = client.app.state.treppen.sessions
    games = [new(client) for _ in range(4)]  # max_sessions=4, all just played
    loads = []
    monkeypatch.setattr(web.agents, "load", lambda *a, **k: loads.append(a))  # counts agents built
    for _ in range(3):
        r = client.post("/api/sessions", json={"seats": ["you", 0]})
        assert r.status_code == 429 and r.json()["error"].startswith("the server is full: 4 games, each played")
    assert loads == []  # refused before it dealt or loaded an agent
    monkeypatch.undo()
    assert all(client.get(f"/api/sessions/{g['session']}").status_code == 200 for g in games)
    sessions = {g["session"]: store.get(g["session"]) for g in games}
    sessions[games[1]["session"]].last_used -= 400  # idle for more than 5 minutes
    sessions[games[2]["session"]].last_used -= 600
    new(client)  # takes the place of the game idle the longest
    assert client.get(f"/api/sessions/{games[2]['session']}").status_code == 404
    assert [client.get(f"/api/sessions/{games[i]['session']}").status_code for i in (0, 1, 3)] == [200] * 3


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
    paths = ("/api/sessions", f"/api/sessions/{sid}/move", f"/api/sessions/{sid}/advance", f"/api/sessions/{sid}/hint")
    for path in (*paths, "/api/replay", "/api/replay/hint?step=1"):
        for body in bodies:
            headers = RECORD if path.startswith("/api/replay") else JSON
            assert 400 <= client.post(path, content=body, headers=headers).status_code < 500, (path, body)
    huge = b'{"seats": [' + b" " * MAX_JSON_BYTES + b"]}"
    assert client.post("/api/sessions", content=huge, headers=JSON).status_code == 413
    assert client.get("/api/config").status_code == 200


def deal_records():
    from tests.treppen_env.test_records import play_recorded

    _, _, recs = play_recorded(3, num_players=2, episode="game", target=300)
    return recs


def test_replay_a_record_file(client):
    recs = deal_records()
    text = "".join(json.dumps(r) + "\n" for r in recs).encode()
    for content in (text, gzip.compress(text)):
        r = client.post("/api/replay?deal=2", content=content, headers=RECORD)
        assert r.status_code == 200, r.json()
        data = r.json()
        assert data["count"] == 3 and data["deal"] == 2 and data["record"] == recs[1]
        assert [d["deal_points"] for d in data["deals"]] == [rec["deal_points"] for rec in recs]
        frames = data["frames"]
        assert len(frames) == len(recs[1]["actions"]) + 1 and frames[0]["move"] is None
        assert frames[1]["move"]["move"] and all(p["hand"] is not None for p in frames[0]["table"]["players"])
        assert frames[-1]["table"]["phase"] == "deal_over"
    assert "holds deals 1..3" in client.post("/api/replay?deal=4", content=text, headers=RECORD).json()["error"]
    assert "must be a deal number" in client.post("/api/replay?deal=-1", content=text, headers=RECORD).json()["error"]
    tampered = {**recs[0], "actions": [*recs[0]["actions"][:5], 897, *recs[0]["actions"][6:]]}
    r = client.post("/api/replay", content=json.dumps(tampered).encode(), headers=RECORD)
    assert r.status_code == 400 and r.json()["error"].startswith("deal 1, step 5 (player")
    r = client.post("/api/replay", content=gzip.compress(b"x")[:-3], headers=RECORD)
    assert r.status_code == 400 and "does not unpack" in r.json()["error"]
    endless = {**recs[0], "actions": [0] * (MAX_REPLAY_STEPS + 1)}
    r = client.post("/api/replay", content=json.dumps(endless).encode(), headers=RECORD)
    assert (
        r.status_code == 413
        and r.json()["error"] == f"deal 1 has 5001 moves; the page shows at most {MAX_REPLAY_STEPS}"
    )
    r = client.post("/api/replay", content=b'{"format": "treppen-record/1"}', headers=RECORD)
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
    from treppen.apps.cli import main

    assert main(["serve", "--opponents", "greedy", "human"]) == 2
    assert "'human' cannot be a server opponent" in capsys.readouterr().err
    assert main(["serve", "--port", "70000"]) == 2
    assert capsys.readouterr().err == "treppen serve: error: argument --port: '70000' is not a port 0..65535\n"


NESTED = b"[" * 5000 + b"]" * 5000


@pytest.mark.parametrize(
    ("path", "body", "headers", "status", "message"),
    [
        ("/api/sessions", NESTED, JSON, 400, "the request body is JSON nested too deeply"),
        ("/api/replay", NESTED, RECORD, 400, "the file, line 1: JSON nested too deeply for a record"),
        ("/api/replay?deal=%C2%B2", b"{}", RECORD, 400, "deal='²' must be a deal number 1, 2, ..."),
        ("/api/replay?deal=0", b"{}", RECORD, 400, "deal='0' must be a deal number"),
        ("/api/sessions", b'{"seats": ["you", 0]}', {"Content-Type": "text/plain"}, 415, "takes application/json"),
        ("/api/sessions", b'{"seats": ["you", 0]}', {}, 415, "Content-Type 'missing'"),
        ("/api/replay", b"{}", {"Content-Type": "multipart/form-data"}, 415, "takes application/octet-stream"),
        ("/api/sessions", b"{}", {**JSON, "Content-Length": b"\xb2"}, 413, "request body too large"),
    ],
)
def test_malformed_requests_name_what_is_wrong(client, path, body, headers, status, message):
    r = client.post(path, content=body, headers=headers)
    assert r.status_code == status and message in r.json()["error"], r.json()


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("game_deal", "abc", "game_deal 'abc' must be a deal number 1, 2, ..."),
        ("game_deal", [1], "game_deal '[1]' must be a deal number"),
        ("game_deal", 0, "game_deal '0' must be a deal number"),
        ("totals", ["a", "b"], "totals must be a list of 2 integers"),
        ("totals", 5, "totals must be a list of 2 integers"),
        ("totals", [1, 2, 3], "totals must be a list of 2 integers"),
    ],
)
def test_bad_game_keys_in_a_replayed_record(client, key, value, message):
    record = {**deal_records()[1], key: value}
    r = client.post("/api/replay", content=json.dumps(record).encode(), headers=RECORD)
    assert r.status_code == 400 and r.json()["error"].startswith(f"the file, line 1: {message}")


def test_a_truncated_line_names_line_and_column(client):
    line = json.dumps(deal_records()[0])
    r = client.post("/api/replay", content=(line + "\n" + line[:100]).encode(), headers=RECORD)
    assert r.status_code == 400
    assert re.fullmatch(
        r"the file, line 2, column \d+: not a JSON object \(Unterminated string starting at\)", r.json()["error"]
    )


def test_other_sites_and_rebound_names_are_refused(client):
    evil = {"Origin": "http://evil.example", **JSON}
    r = client.post("/api/sessions", json={"seats": ["you", 0]}, headers={"Origin": "http://evil.example"})
    assert r.status_code == 403 and r.json()["error"].startswith("cross-origin request from 'http://evil.example'")
    for origin in ("null", "http://127.0.0.1:9999", "http://localhost:8000"):
        assert client.post("/api/sessions", json={"seats": ["you", 0]}, headers={"Origin": origin}).status_code == 403
    r = client.get("/api/config", headers={"Host": "evil.example"})
    assert r.status_code == 403 and r.json()["error"].startswith("Host 'evil.example' is not this server")
    r = client.post("/api/sessions", content=b'{"seats": ["you", 0]}', headers={**evil, "Host": "evil.example"})
    assert r.status_code == 403
    view = new(client)
    r = client.delete(f"/api/sessions/{view['session']}", headers={"Origin": "http://evil.example"})
    assert r.status_code == 403 and client.get(f"/api/sessions/{view['session']}").status_code == 200
    same = client.post("/api/sessions", json={"seats": ["you", 0]}, headers={"Origin": BASE})
    assert same.status_code == 200  # the page's own origin
    for host in ("localhost:8000", "[::1]:8000", "127.0.0.1"):
        assert client.get("/api/config", headers={"Host": host}).status_code == 200, host
    assert client.get("/api/config", headers={"Host": "[::1"}).status_code == 403  # malformed


def test_the_served_host_name_is_allowed(tmp_path):
    with TestClient(create_app(["greedy"], hosts=["box.lan"]), base_url="http://box.lan:8000") as c:
        assert c.get("/api/config").status_code == 200
        assert c.post("/api/sessions", json={"seats": ["you", 0]}, headers={"Origin": "http://box.lan:8000"}).is_success
        assert c.get("/api/config", headers={"Host": "other.lan"}).status_code == 403


def _malformed_bodies(rng: np.random.Generator, sid: str, record: dict) -> list[tuple[str, bytes]]:
    """A few hundred malformed requests: broken JSON, wrong types in each field, bad records."""
    junk = [None, True, -1, 2**70, 1.5, "x" * 300, "²", [], [[]], {}, {"a": 1}, [0] * 50, "you", "\u0000"]
    requests: list[tuple[str, bytes]] = []
    for _ in range(120):
        path = ["/api/sessions", f"/api/sessions/{sid}/move", f"/api/sessions/{sid}/advance"][int(rng.integers(3))]
        keys = ["seats", "mode", "rules", "episode", "action", "version"]
        body = {str(rng.choice(keys)): junk[int(rng.integers(len(junk)))] for _ in range(int(rng.integers(1, 4)))}
        requests.append((path, json.dumps(body).encode()))
    record_keys = [*record, "totals", "game_deal"]
    for _ in range(120):
        broken = dict(record)
        for _ in range(int(rng.integers(1, 3))):
            broken[str(rng.choice(record_keys))] = junk[int(rng.integers(len(junk)))]
        requests.append((f"/api/replay?deal={int(rng.integers(0, 3))}", json.dumps(broken).encode()))
    text = json.dumps(record).encode()
    for _ in range(60):
        cut = int(rng.integers(1, len(text)))
        requests.append(("/api/replay", text[:cut] + rng.bytes(int(rng.integers(0, 8)))))
        requests.append(("/api/sessions", b"[" * int(rng.integers(1, 3000)) + rng.bytes(int(rng.integers(0, 8)))))
    return requests


def test_a_seeded_fuzz_of_malformed_bodies_gets_no_server_error(client):
    rng = np.random.default_rng(19)
    sid = new(client)["session"]
    requests = _malformed_bodies(rng, sid, deal_records()[0])
    assert len(requests) == 360
    codes: Counter[tuple[str, int]] = Counter()
    for path, body in requests:
        r = client.post(path, content=body, headers=RECORD if path.startswith("/api/replay") else JSON)
        assert r.status_code < 500, (path, body[:200], r.text)
        if r.status_code >= 400:
            assert r.json()["error"], (path, body[:200])
        codes[path.split("?")[0].replace(sid, "{id}"), r.status_code] += 1
    assert codes == {  # 5 of the broken records still replay
        ("/api/sessions", 400): 92,
        ("/api/sessions/{id}/move", 400): 47,
        ("/api/sessions/{id}/advance", 400): 41,
        ("/api/replay", 400): 175,
        ("/api/replay", 200): 5,
    }


def test_serve_allows_more_host_names():
    import argparse

    from treppen.apps.serve import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--host", "0.0.0.0", "--allow-host", "box.lan", "--allow-host", "box"])
    assert args.allow_host == ["box.lan", "box"]


def test_a_long_file_lists_its_first_deals_and_replays_any(client):
    from treppen.apps import web_replay

    line = (json.dumps(deal_records()[0]) + "\n").encode()
    r = client.post(
        f"/api/replay?deal={web_replay.MAX_LISTED + 5}", content=line * (web_replay.MAX_LISTED + 10), headers=RECORD
    )
    data = r.json()
    assert (
        r.status_code == 200
        and data["count"] == web_replay.MAX_LISTED + 10
        and len(data["deals"]) == web_replay.MAX_LISTED
    )
    assert data["deal"] == web_replay.MAX_LISTED + 5 and data["frames"]


def test_oversized_lines_and_gzip_bombs_are_refused(client):
    from treppen.apps import web_replay

    r = client.post("/api/replay", content=b"{" + b" " * web_replay.MAX_RECORD_LINE, headers=RECORD)
    assert r.status_code == 413 and r.json()["error"].startswith("line 1 is longer than")
    bomb = gzip.compress((b" " * 1023 + b"\n") * (web_replay.MAX_RECORD_BYTES // 1024 + 1))
    assert len(bomb) < 1024 * 1024
    r = client.post("/api/replay", content=bomb, headers=RECORD)
    assert r.status_code == 413 and r.json()["error"].startswith("the unpacked record file is larger than")


HINT_BUDGET = 20
ESTIMATE_KEYS = ["action", "move", "playouts", "win_rate", "win_se", "margin", "margin_se", "greedy", "text"]


@pytest.fixture
def small_hints(monkeypatch):
    """Hints searched with a tiny budget; the rules each hint's agent was built with, in order."""
    from treppen import agents
    from treppen.apps import web, web_replay

    seen: list[str] = []

    def analyser(spec, seed, rules):
        seen.append(rules.name)
        return agents.load(spec, seed=seed, rules=rules)

    for module in (web, web_replay):  # the session's hint (web) and the replay's (web_replay)
        monkeypatch.setattr(module, "HINT_SPEC", f"rollout,playouts={HINT_BUDGET}")
        monkeypatch.setattr(module, "analyser", analyser)
    return seen


def your_turn(client, view):
    """The view once the agents have moved up to the person's turn."""
    while not view["your_turn"]:
        view = client.post(f"/api/sessions/{view['session']}/advance", json={"version": view["version"]}).json()
    return view


def test_a_hint_ranks_the_persons_moves(client, small_hints):
    view = your_turn(client, new(client))
    sid = view["session"]
    r = client.post(f"/api/sessions/{sid}/hint", json={"version": view["version"]})
    assert r.status_code == 200, r.json()
    hint = r.json()
    assert list(hint) == ["version", "agent", "estimates", "beliefs", "search"] and small_hints == ["treppenromme"]
    assert hint["search"] == {"playouts": HINT_BUDGET, "budget": HINT_BUDGET, "cut_short": False}
    (beliefs,) = hint["beliefs"]  # the one opponent: the cards it most likely holds
    assert beliefs["seat"] == 1 and 0 < len(beliefs["cards"]) <= 8
    probs = [c["p"] for c in beliefs["cards"]]
    assert probs == sorted(probs, reverse=True) and all(0 < p <= 1 for p in probs)
    own = next(p["hand"] for p in view["table"]["players"] if p["seat"] == view["you"])
    assert not {c["card"] for c in beliefs["cards"]} & set(own)  # never the person's own cards
    assert hint["version"] == view["version"] and hint["agent"] == f"rollout,playouts={HINT_BUDGET}"
    estimates = hint["estimates"]
    assert all(list(e) == ESTIMATE_KEYS for e in estimates) and sum(e["playouts"] for e in estimates) == HINT_BUDGET
    legal = view["legal"]
    assert {e["action"] for e in estimates} <= {legal["draw"], *legal["take"].values()}
    staircase = view["table"]["staircase"]
    take = next(e for e in estimates if e["move"] == "take 1")
    assert take["text"] == f"take 1 ({staircase[-1]})"
    assert client.get(f"/api/sessions/{sid}").json() == view  # a hint changes nothing
    other = your_turn(client, new(client, rules="rum500"))
    assert client.post(f"/api/sessions/{other['session']}/hint", json={"version": other["version"]}).is_success
    assert small_hints == ["treppenromme", "rum500"]  # the session's rules reach the search


def test_hints_only_for_the_persons_turn_on_the_current_table(client, small_hints):
    view = new(client)
    sid = view["session"]
    for version in (None, "0", -1, True):
        r = client.post(f"/api/sessions/{sid}/hint", json={"version": version})
        assert r.status_code == 400 and r.json()["error"].startswith("'version' must be an integer in 0..")
    r = client.post(f"/api/sessions/{sid}/hint", json={"version": 1})
    assert r.status_code == 409 and r.json()["error"] == "stale request: the table is at version 0, not 1"
    watch = new(client, (0, 1), mode="watch")
    r = client.post(f"/api/sessions/{watch['session']}/hint", json={"version": 0})
    assert r.status_code == 409 and r.json()["error"] == "a hint is for your own turn in play mode"
    assert client.post("/api/sessions/nope/hint", json={"version": 0}).status_code == 404
    assert small_hints == []


def test_a_hint_for_a_replayed_position(client, small_hints):
    recs = deal_records()
    text = "".join(json.dumps(r) + "\n" for r in recs).encode()
    record = recs[1]
    r = client.post("/api/replay/hint?deal=2&step=1", content=gzip.compress(text), headers=RECORD)
    assert r.status_code == 200, r.json()
    hint = r.json()
    assert list(hint) == ["deal", "step", "agent", "played", "estimates", "beliefs", "search"]
    assert small_hints == [record["rules"]] and [b["seat"] for b in hint["beliefs"]] == [1]
    assert (hint["deal"], hint["step"], hint["agent"]) == (2, 1, f"rollout,playouts={HINT_BUDGET}")
    first = record["actions"][0]
    assert hint["played"]["action"] == first and hint["played"]["move"].startswith(action_to_str(first))
    assert all(list(e) == ESTIMATE_KEYS for e in hint["estimates"])
    assert sum(e["playouts"] for e in hint["estimates"]) == HINT_BUDGET
    n = len(record["actions"])
    r = client.post(f"/api/replay/hint?deal=2&step={n + 1}", content=text, headers=RECORD)
    assert r.status_code == 400
    assert r.json()["error"] == f"deal 2, step {n + 1}: the deal is over after its {n} moves; choose a step 1..{n}"
    for query, message in [
        ("deal=2&step=0", "step='0' must be a move number 1, 2, ... (1 = the first)"),
        ("deal=2", "step='' must be a move number 1, 2, ... (1 = the first)"),
        ("deal=4&step=1", "deal 4: the file holds deals 1..3"),
        (f"deal=2&step={n + 2}", f"deal 2, step {n + 2}: the deal has moves 1..{n}"),
    ]:
        r = client.post(f"/api/replay/hint?{query}", content=text, headers=RECORD)
        assert r.status_code == 400 and r.json()["error"] == message, query
    r = client.post("/api/replay/hint?step=1", content=text, headers=JSON)
    assert r.status_code == 415
