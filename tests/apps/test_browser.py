"""The page of ``treppen serve`` in a real browser (play a deal, watch agents, replay a record):
Debian's chromium driven by Selenium (chromedriver).

uvicorn serves the app on 127.0.0.1 on a free port in a thread for the module. The tests are skipped
only where chromium or chromedriver is not installed (CI installs both, see ``.ci/run``).
Set ``TREPPEN_SCREENSHOTS=DIR`` to keep the screenshots (the page guide's docs/serve.png comes from here).
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

selenium = pytest.importorskip("selenium", reason="needs the test extra: pip install '.[test]'")
from selenium import webdriver  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER), reason="needs chromium and chromedriver (apt-get)")
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--window-size=1400,1000",
)  # fmt: skip


@contextmanager
def serve(record_dir: Path, opponents: tuple[str, ...] = ("greedy", "random")) -> Iterator[str]:
    """uvicorn with the app (seed 3) on 127.0.0.1, a free port; yields the base URL."""
    import uvicorn

    from treppen.apps.web import create_app

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(create_app(list(opponents), record_dir=record_dir, seed=3), log_level="warning")
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    WebDriverWait(None, 10, 0.05).until(lambda _: srv.started)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        srv.should_exit = True
        thread.join(10)
        sock.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The app for the module's tests; yields the base URL and the record folder."""
    record_dir = tmp_path_factory.mktemp("records")
    with serve(record_dir) as url:
        yield url, record_dir


@pytest.fixture
def hard_server(tmp_path_factory):
    """As :func:`server`, with the level ``hard`` (the search) as the only agent."""
    record_dir = tmp_path_factory.mktemp("records")
    with serve(record_dir, ("hard",)) as url:
        yield url, record_dir


@pytest.fixture
def fresh_server(tmp_path):
    """The app for one test: its first session's deal is the same whichever tests ran before."""
    with serve(tmp_path / "records") as url:
        yield url, tmp_path / "records"


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium')}")
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=CHROMEDRIVER))
    yield driver
    driver.quit()


def wait(driver, condition, timeout=20):
    return WebDriverWait(driver, timeout, poll_frequency=0.02).until(condition)


def body(driver, key):
    return driver.find_element(By.TAG_NAME, "body").get_attribute(f"data-{key}")


def click_card(driver, card):
    driver.find_element(By.CSS_SELECTOR, f'#hand .card[data-card="{card}"]').click()


def play_turn_part(driver) -> None:
    """One legal move by mouse: draw from the stock, then meld / lay off when the page offers it,
    else discard a card."""
    if body(driver, "phase") == "draw":
        driver.find_element(By.CSS_SELECTOR, "#stock.legal").click()
        return
    legal = driver.execute_script("return state.view.legal")
    if legal["melds"]:
        for card in legal["melds"][0]["cards"]:
            click_card(driver, card)
        driver.find_element(By.ID, "meld-button").click()
    elif legal["layoffs"]:
        click_card(driver, legal["layoffs"][0]["card"])
        driver.find_element(By.CSS_SELECTOR, f'button[data-layoff="{legal["layoffs"][0]["action"]}"]').click()
    else:
        driver.find_element(By.CSS_SELECTOR, "#hand .card[data-discard]").click()
        driver.find_element(By.ID, "discard-button").click()


def test_the_page_opens_on_a_table_with_how_to_play(server, browser, tmp_path):
    """Before Start the page shows an empty table and how to play, not a blank area; a started
    game's table takes its place, and the other tabs show it again until they show a table."""
    url, _ = server
    browser.get(f"{url}/?delay=0")
    wait(browser, lambda d: body(d, "ready") == "1")
    welcome = browser.find_element(By.ID, "welcome")
    assert welcome.is_displayed() and not browser.find_element(By.ID, "table").is_displayed()
    assert browser.find_element(By.ID, "welcome-title").text == "How to play"
    steps = [li.text for li in welcome.find_elements(By.CSS_SELECTOR, ".how-to li")]
    assert [s.split(":")[0].split(" ")[0] for s in steps] == ["Choose", "Draw", "Meld", "Discard", "Melds"]
    felt = welcome.find_element(By.CLASS_NAME, "felt")
    assert [c.text for c in felt.find_elements(By.CSS_SELECTOR, ".caption")] == ["stock", "staircase", "melds"]
    assert felt.size["height"] >= 150 and felt.value_of_css_property("background-color") == "rgba(31, 95, 58, 1)"
    shots = os.environ.get("TREPPEN_SCREENSHOTS")
    browser.save_screenshot(str(Path(shots or tmp_path) / "serve-landing.png"))
    browser.find_element(By.ID, "start").click()
    wait(browser, lambda d: d.find_element(By.ID, "table").is_displayed())
    assert not welcome.is_displayed()
    browser.find_element(By.ID, "tab-watch").click()
    assert welcome.is_displayed()


def test_the_page_opens_on_the_first_level(tmp_path, browser):
    """With the default opponents (the levels), every agent seat opens on easy, as the docs say
    (tests/apps/test_serve.py checks the docs)."""
    from treppen.agents.zoo import LEVELS
    from treppen.apps.zoo_command import level_label

    with serve(tmp_path, tuple(LEVELS)) as url:
        browser.get(url)
        wait(browser, lambda d: body(d, "ready") == "1")
        Select(browser.find_element(By.ID, "num-players")).select_by_value("3")
        seats = [Select(browser.find_element(By.ID, f"seat-{seat}")) for seat in (1, 2)]
        assert [s.first_selected_option.text for s in seats] == [level_label(LEVELS[0])] * 2
    assert LEVELS[0] == "easy"


def test_play_a_whole_deal_with_the_mouse(server, browser, tmp_path):
    url, record_dir = server
    browser.get(f"{url}/?delay=0")
    wait(browser, lambda d: body(d, "ready") == "1")
    Select(browser.find_element(By.ID, "seat-1")).select_by_visible_text("greedy")
    browser.find_element(By.ID, "start").click()
    moves = play_deal(browser, os.environ.get("TREPPEN_SCREENSHOTS"))
    assert browser.find_element(By.ID, "error").is_displayed() is False
    title = browser.find_element(By.ID, "summary-title").text
    assert title.startswith("Deal 1 over: ")
    rows = browser.find_elements(By.CSS_SELECTOR, "#summary-table tbody tr")
    assert [r.find_element(By.TAG_NAME, "td").text for r in rows] == ["you", "P1 greedy"]
    png = tmp_path / "summary.png"
    assert browser.save_screenshot(str(png)) and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if os.environ.get("TREPPEN_SCREENSHOTS"):
        shutil.copy(png, Path(os.environ["TREPPEN_SCREENSHOTS"]) / "serve-summary.png")
    from treppen_env import records

    (deal,) = [r for p in record_dir.iterdir() for r in records.read(p)]  # the server recorded the deal
    records.check(deal)
    assert deal["agents"] == ["human", "greedy"] and moves == sum(1 for _ in deal["actions"]) - _agent_moves(deal)


def play_deal(browser, shots: str | None = None) -> int:
    """Play the person's moves by mouse until the deal's summary shows; the moves made. With
    ``shots`` (a folder), a screenshot of the table in play is saved there."""
    summary = browser.find_element(By.ID, "summary")
    moves = 0
    while True:
        wait(browser, lambda d: summary.is_displayed() or body(d, "turn") == "you")
        if summary.is_displayed():
            return moves
        version = body(browser, "version")
        if (
            shots
            and moves > 12
            and body(browser, "phase") == "meld"
            and browser.find_elements(By.CSS_SELECTOR, ".meld")
        ):
            browser.save_screenshot(str(Path(shots) / "serve-play.png"))
            shots = None
        play_turn_part(browser)
        wait(browser, lambda d, v=version: body(d, "version") != v)
        moves += 1
        assert moves < 400, "the deal does not end"


def test_play_a_deal_against_hard(hard_server, browser):
    """The hard level (the search, under the page's deadline of 1 s a move) plays a whole deal."""
    url, record_dir = hard_server
    browser.get(f"{url}/?delay=0")
    wait(browser, lambda d: body(d, "ready") == "1")
    Select(browser.find_element(By.ID, "seat-1")).select_by_index(0)
    browser.find_element(By.ID, "start").click()
    moves = play_deal(browser)
    assert browser.find_element(By.ID, "error").is_displayed() is False
    assert browser.find_element(By.ID, "summary-title").text.startswith("Deal 1 over: ")
    rows = browser.find_elements(By.CSS_SELECTOR, "#summary-table tbody tr")
    assert [r.find_element(By.TAG_NAME, "td").text for r in rows] == ["you", "P1 search-2p"]
    from treppen_env import records

    (deal,) = [r for p in record_dir.iterdir() for r in records.read(p)]
    records.check(deal)
    assert deal["agents"] == ["human", "search-2p"] and moves == len(deal["actions"]) - _agent_moves(deal)


def _agent_moves(record) -> int:
    from treppen_env import records

    return sum(1 for step in records.replay(record) if step.seat == 1)


def test_replay_a_record_in_the_page(server, browser, tmp_path):
    from treppen.apps.web_views import OUTCOME_WORDS
    from treppen.arena.tournament import run_tournament
    from treppen_env import records

    url, _ = server
    path = tmp_path / "tournament.jsonl"  # as treppen tournament --record writes it
    run_tournament({"random": "random", "greedy": "greedy"}, decks=2, record_to=path)
    recs = records.read(path)
    browser.get(f"{url}/")
    wait(browser, lambda d: body(d, "ready") == "1")
    browser.find_element(By.ID, "tab-replay").click()
    browser.find_element(By.ID, "replay-file").send_keys(
        str(path)
    )  # the person picks the file; the page sends its content
    slider = browser.find_element(By.ID, "replay-slider")
    wait(browser, lambda d: slider.get_attribute("max") == str(len(recs[0]["actions"])))
    assert browser.find_element(By.ID, "replay-label").text == f"dealt ({len(recs[0]['actions'])} moves)"
    options = Select(browser.find_element(By.ID, "replay-deal")).options
    assert [o.text.split(":")[0] for o in options] == ["1", "2", "3", "4"]
    Select(browser.find_element(By.ID, "replay-deal")).select_by_value("2")
    n = len(recs[1]["actions"])
    wait(browser, lambda d: slider.get_attribute("max") == str(n))
    browser.find_element(By.ID, "replay-next").click()
    first = records.replay(recs[1])
    next(first)
    assert browser.find_element(By.ID, "replay-label").text == f"move 1 of {n}: P{next(first).seat} " + (
        f"{browser.execute_script('return state.replay.data.frames[1].move.move')}"
    )
    browser.execute_script(
        "const s = document.getElementById('replay-slider'); s.value = s.max; s.dispatchEvent(new Event('input'));"
    )
    status = browser.find_element(By.ID, "status").text
    points = " / ".join(map(str, recs[1]["deal_points"]))
    assert status == f"Deal over: {OUTCOME_WORDS[recs[1]['outcome']]}, points {points}"
    assert len(browser.find_elements(By.CSS_SELECTOR, "#log li")) == min(14, n)
    hands = browser.find_elements(By.CSS_SELECTOR, ".opponent")
    assert len(hands) == 2  # every hand is shown in a replay
    log = browser.find_elements(By.CSS_SELECTOR, "#log li")
    assert log[-1].get_attribute("value") == str(n) and not log[-1].text.startswith(f"{n}.")  # numbered once
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format": "treppen-record/1"')
    browser.find_element(By.ID, "replay-file").send_keys(str(bad))
    wait(browser, lambda d: d.find_element(By.ID, "error").is_displayed())
    assert "line 1, column" in browser.find_element(By.ID, "error").text
    assert not browser.find_element(By.ID, "table").is_displayed()  # the previous deal is gone


def test_the_hint_button_ranks_the_moves_in_play_and_in_a_replay(server, browser, tmp_path, monkeypatch):
    from tests.treppen_env.test_records import play_recorded
    from treppen.apps import web, web_replay
    from treppen_env import records

    for module in (web, web_replay):  # the server reads it at each hint: in play (web), in a replay (web_replay)
        monkeypatch.setattr(module, "HINT_SPEC", "rollout,playouts=20")
    url, _ = server
    browser.get(f"{url}/?delay=0")
    wait(browser, lambda d: body(d, "ready") == "1")
    browser.find_element(By.ID, "start").click()
    wait(browser, lambda d: body(d, "turn") == "you")
    panel = browser.find_element(By.ID, "hint-panel")
    assert not panel.is_displayed()
    browser.find_element(By.ID, "hint-button").click()
    wait(browser, lambda d: panel.is_displayed())
    rows = browser.find_elements(By.CSS_SELECTOR, "#hint-table tbody tr")
    top = browser.execute_script("return state.view.table.staircase.at(-1)")
    texts = [row.find_element(By.TAG_NAME, "td").text for row in rows]
    assert "draw" in texts and f"take 1 ({top})" in texts and all(t == "draw" or t.startswith("take ") for t in texts)
    assert [row.get_attribute("class").split() for row in rows] == [["best"]] + [[]] * (len(rows) - 1)
    assert browser.find_element(By.ID, "hint-agent").text == "rollout,playouts=20"
    version = body(browser, "version")
    browser.find_element(By.CSS_SELECTOR, "#stock.legal").click()  # a move: the hint was for the old table
    wait(browser, lambda d: body(d, "version") != version)
    assert not panel.is_displayed()

    _, _, recs = play_recorded(3)
    path = records.write(tmp_path / "deal.jsonl", recs)
    browser.find_element(By.ID, "tab-replay").click()
    browser.find_element(By.ID, "replay-file").send_keys(str(path))
    slider = browser.find_element(By.ID, "replay-slider")
    wait(browser, lambda d: slider.get_attribute("max") == str(len(recs[0]["actions"])))
    browser.find_element(By.ID, "replay-hint").click()
    wait(browser, lambda d: panel.is_displayed())
    rows = browser.find_elements(By.CSS_SELECTOR, "#hint-table tbody tr")
    (played,) = [row for row in rows if "played" in row.get_attribute("class").split()]
    assert played.get_attribute("data-action") == str(recs[0]["actions"][0])  # the first move: draw or take 1
    browser.execute_script(
        "const s = document.getElementById('replay-slider'); s.value = s.max; s.dispatchEvent(new Event('input'));"
    )
    assert not panel.is_displayed() and not browser.find_element(By.ID, "replay-hint").is_enabled()  # deal over


def test_watch_agents_with_play_pause_and_step(server, browser):
    url, _ = server
    browser.get(f"{url}/")
    wait(browser, lambda d: body(d, "ready") == "1")
    browser.find_element(By.ID, "tab-watch").click()
    Select(browser.find_element(By.ID, "seat-1")).select_by_visible_text("random")
    browser.find_element(By.ID, "start").click()
    wait(browser, lambda d: body(d, "version") == "0")
    assert len(browser.find_elements(By.CSS_SELECTOR, ".opponent .card:not(.back)")) == 14  # watching shows every hand

    def step_once():
        version = int(body(browser, "version"))
        browser.find_element(By.ID, "watch-step").click()
        wait(browser, lambda d: body(d, "version") == str(version + 1))

    step_once()
    step_once()
    browser.execute_script(
        "const s = document.getElementById('watch-speed'); s.value = 0; s.dispatchEvent(new Event('input'))"
    )
    browser.find_element(By.ID, "watch-play").click()
    wait(browser, lambda d: int(body(d, "version")) >= 4)  # a few moves in (a deal rarely ends in its first turn)
    browser.find_element(By.ID, "watch-play").click()  # pause
    assert browser.find_element(By.ID, "watch-play").text == "Play"
    wait(browser, lambda d: d.execute_script("return state.timer === null && !state.busy"))
    assert "(paused)" in browser.find_element(By.ID, "status").text
    step_once()
    browser.find_element(By.ID, "watch-play").click()
    wait(browser, lambda d: d.find_element(By.ID, "summary").is_displayed())
    assert browser.find_element(By.ID, "summary-title").text.startswith("Deal 1 over: ")
    assert browser.find_element(By.ID, "watch-play").text == "Play"  # nothing left to play
    assert browser.find_element(By.ID, "status").text.endswith("The deal is over.")
    assert not browser.find_element(By.ID, "take-hint").is_displayed()  # nothing is clickable when watching


def _inside(driver, element_id: str) -> dict:
    """The element's box and whether it lies inside the viewport (nothing scrolled)."""
    return driver.execute_script(
        "const r = document.getElementById(arguments[0]).getBoundingClientRect();"
        "return {top: r.top, bottom: r.bottom, left: r.left, right: r.right,"
        " inside: r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight && r.right <= innerWidth};",
        element_id,
    )


@pytest.mark.parametrize("size", [(1280, 900), (1024, 700), (390, 844)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_a_four_player_table_fits_the_screen(fresh_server, browser, size, tmp_path):
    """Four players, the person in seat 1: the hand and the move buttons are on screen without
    scrolling, and nothing scrolls sideways."""
    width, height = size
    url, _ = fresh_server
    metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600}
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    try:
        browser.get(f"{url}/?delay=0")
        wait(browser, lambda d: body(d, "ready") == "1")
        Select(browser.find_element(By.ID, "num-players")).select_by_value("4")
        Select(browser.find_element(By.ID, "your-seat")).select_by_value("1")
        assert browser.find_element(By.CSS_SELECTOR, "#seat-choices .seat-you").text == "P1 you"
        assert len(browser.find_elements(By.CSS_SELECTOR, "#seat-choices select")) == 3
        browser.find_element(By.ID, "start").click()
        parts = 0
        while True:  # a few turns in (the staircase grows), then the person's meld phase
            wait(browser, lambda d: body(d, "turn") == "you" or d.find_element(By.ID, "summary").is_displayed())
            assert not browser.find_element(By.ID, "summary").is_displayed(), "the seeded deal runs past 6 parts"
            if parts >= 6 and body(browser, "phase") == "meld":
                break
            version = body(browser, "version")
            play_turn_part(browser)
            wait(browser, lambda d, v=version: body(d, "version") != v)
            parts += 1
        assert browser.execute_script("return state.view.you") == 1
        browser.execute_script("window.scrollTo(0, 0)")  # clicks scroll the page; a person starts at the top
        png = tmp_path / f"table-{width}x{height}.png"
        browser.save_screenshot(str(png))
        if os.environ.get("TREPPEN_SCREENSHOTS"):
            shutil.copy(png, Path(os.environ["TREPPEN_SCREENSHOTS"]) / png.name)
        for element_id in ("hand", "meld-button", "discard-button"):
            box = _inside(browser, element_id)
            assert box["inside"], (element_id, box, size)
        scroll_width = browser.execute_script("return document.documentElement.scrollWidth")
        assert scroll_width <= width, f"the page scrolls sideways: {scroll_width} px wide at {width}"
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_the_favicon_is_served(server):
    import urllib.request

    url, _ = server
    with urllib.request.urlopen(f"{url}/favicon.ico") as response:
        assert response.headers["Content-Type"].startswith("image/svg+xml") and b"<svg" in response.read()


def test_a_watched_game_shows_each_finished_deal(server, browser):
    """A whole game: when a deal ends the summary shows over that deal's last table (the server
    has dealt the next one), and Next deal goes on with the new deal."""
    url, _ = server
    browser.get(f"{url}/")
    wait(browser, lambda d: body(d, "ready") == "1")
    browser.find_element(By.ID, "tab-watch").click()
    Select(browser.find_element(By.ID, "episode")).select_by_value("game")
    browser.find_element(By.ID, "start").click()
    wait(browser, lambda d: body(d, "version") == "0")
    browser.execute_script(
        "const s = document.getElementById('watch-speed'); s.value = 0; s.dispatchEvent(new Event('input'))"
    )
    browser.find_element(By.ID, "watch-play").click()
    wait(browser, lambda d: d.find_element(By.ID, "summary").is_displayed(), timeout=60)
    version = body(browser, "version")
    wait(browser, lambda d: d.execute_script("return state.timer === null && !state.busy"))
    assert body(browser, "version") == version  # the agents wait for Next deal
    assert browser.execute_script("return state.view.table.deal") == 2
    status = browser.find_element(By.ID, "status").text
    assert status.startswith("Deal 1, ") and "The deal is over: its last table" in status
    assert browser.find_element(By.ID, "summary-title").text.startswith("Deal 1 over: ")
    assert browser.find_element(By.ID, "summary-next").is_displayed()
    if os.environ.get("TREPPEN_SCREENSHOTS"):
        browser.save_screenshot(str(Path(os.environ["TREPPEN_SCREENSHOTS"]) / "serve-game-summary.png"))
    browser.find_element(By.ID, "summary-next").click()
    wait(browser, lambda d: d.find_element(By.ID, "status").text.startswith("Deal 2, "))
    wait(browser, lambda d: body(d, "version") != version)  # still playing: the agents go on
