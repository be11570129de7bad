"""The page's searches under load (apps.web_limits): the limiter's fair queue, 503 with
Retry-After for a hint that cannot start, a move at the floor budget, and an idle server's hint
equal to its spec's analysis (docs/guide/page.md)."""

from __future__ import annotations

import asyncio
import copy

import pytest
from starlette.testclient import TestClient

from tests.apps.test_serve import BASE, HINT_BUDGET, RECORD, new, person_move, your_turn
from treppen.apps import web, web_limits, web_replay
from treppen.apps.analyse import analyse_position, analyser
from treppen.apps.web_limits import Limiter
from treppen.apps.web_views import beliefs_view, hint_view


def test_two_sessions_asking_get_alternate_service() -> None:
    """One slot, held; session a asks three times before b asks twice: a, b, a, b, a."""
    served: list[str] = []

    async def ask(limiter: Limiter, session: str) -> None:
        assert await limiter.acquire(session, wait=10)
        served.append(session)
        await asyncio.sleep(0)
        limiter.release()

    async def main() -> None:
        limiter = Limiter(1)
        assert await limiter.acquire("holder", wait=0)
        tasks = []
        for session in "aaabb":
            tasks.append(asyncio.create_task(ask(limiter, session)))
            await asyncio.sleep(0)  # queued in this order
        assert limiter.waiting == 5
        limiter.release()
        await asyncio.gather(*tasks)
        assert (limiter.busy, limiter.waiting) == (0, 0)

    asyncio.run(main())
    assert served == ["a", "b", "a", "b", "a"]


def test_a_request_that_cannot_start_in_time_leaves_the_queue() -> None:
    async def main() -> None:
        limiter = Limiter(2)
        assert await limiter.acquire("a", wait=0) and await limiter.acquire("b", wait=0)
        assert not await limiter.acquire("c", wait=0.01)
        assert (limiter.busy, limiter.waiting) == (2, 0)
        limiter.release()
        assert await limiter.acquire("c", wait=0) and limiter.busy == 2

    asyncio.run(main())
    with pytest.raises(ValueError, match="slots=0 must be at least 1"):
        Limiter(0)


@pytest.fixture
def busy(tmp_path, monkeypatch):
    """A server whose only search slot is taken, and no time to wait for it."""
    monkeypatch.setattr(web_limits, "MIN_SEARCH", 600.0)  # no time to wait for a slot
    monkeypatch.setattr(web_replay, "HINT_SPEC", f"rollout,playouts={HINT_BUDGET}")
    app = web.create_app(["greedy", f"rollout,playouts={HINT_BUDGET}"], search_slots=1, seed=5)
    app.state.limiter.busy = 1
    with TestClient(app, base_url=BASE) as client:
        yield client


def test_overload_gives_503_with_retry_after_not_a_timeout(busy) -> None:
    view = your_turn(busy, new(busy))
    r = busy.post(f"/api/sessions/{view['session']}/hint", json={"version": view["version"]})
    assert r.status_code == 503 and r.headers["Retry-After"] == "2"
    assert r.json() == {"error": "the server is busy: every search slot is taken; try again in 2 s"}
    text = b'{"format": "treppen-record/1"}\n'  # refused before the file is read
    r = busy.post("/api/replay/hint?step=1", content=text, headers=RECORD)
    assert r.status_code == 503 and r.headers["Retry-After"] == "2"
    assert busy.app.state.limiter.waiting == 0  # nobody left waiting


def test_overload_moves_a_search_agent_at_its_floor_budget(busy) -> None:
    """The searching agent's move does not wait: deadline 0, one determinization per searched
    move, outside the limiter; the person's and greedy's moves never touch the limiter."""
    view = new(busy, ("you", 1))
    session = busy.app.state.treppen.sessions.get(view["session"])
    searcher = session.players[1]
    advances = 0
    for _ in range(6):
        if view["your_turn"]:
            r = busy.post(
                f"/api/sessions/{view['session']}/move", json={"action": person_move(view), "version": view["version"]}
            )
        else:
            r = busy.post(f"/api/sessions/{view['session']}/advance", json={"version": view["version"]})
            advances += 1
        assert r.status_code == 200
        view = r.json()
    assert advances >= 2 and searcher.settings.deadline == 0.0 and searcher.simulations in (0, 16, 32)
    assert (busy.app.state.limiter.busy, busy.app.state.limiter.waiting) == (1, 0)


def test_a_hint_on_an_idle_server_is_its_specs_analysis(tmp_path, monkeypatch) -> None:
    """Same seed, same playouts: the deadline does not touch a search that ends before it."""
    spec = f"rollout,playouts={HINT_BUDGET},beliefs=greedy"
    monkeypatch.setattr(web, "HINT_SPEC", spec)
    monkeypatch.setattr(web, "HINT_DEADLINE", 600.0)
    seeds: list[int] = []

    def seeded(spec: str, seed: int, rules):
        seeds.append(seed)
        return analyser(spec, seed, rules)

    monkeypatch.setattr(web, "analyser", seeded)
    with TestClient(web.create_app(["greedy"], seed=5), base_url=BASE) as client:
        view = your_turn(client, new(client))
        for _ in range(3):  # a few moves in, so that the opponent's moves shape the beliefs
            view = client.post(
                f"/api/sessions/{view['session']}/move", json={"action": person_move(view), "version": view["version"]}
            ).json()
            view = your_turn(client, view)
        hint = client.post(f"/api/sessions/{view['session']}/hint", json={"version": view["version"]}).json()
        session = client.app.state.treppen.sessions.get(view["session"])
        plain = analyser(spec, seeds[-1], session.env.rules)
        plain.history = copy.deepcopy(session.history)
        found = analyse_position(session.env, plain)
    assert hint["estimates"] == hint_view(found, session.env.game) and hint["beliefs"] == beliefs_view(
        found.beliefs, len(session.env.game.stock)
    )
    assert hint["search"] == {"playouts": HINT_BUDGET, "budget": HINT_BUDGET, "cut_short": False}
