"""What the README and the guides say agrees with its sources: the zoo's figures with the cards
(agents/zoo/*/card.json), and every reference to a section of a markdown file with a
heading of that file.

A figure taken from a card is written after the card's name, within the sentence:
`` `ppo-2p` (the default recipe, 15.8 CPU minutes of training) +69 [+19, +123] over greedy on 100
decks of seed 9001``. The table of every card (``treppen zoo list --markdown``) appears whole in the
README and the zoo guide.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from treppen.agents import zoo
from treppen.apps.zoo_command import markdown_table
from treppen.arena.scale import rating_text

ROOT = Path(__file__).resolve().parents[1]
CARDS = zoo.cards()
#: The files whose figures are checked: the README and the guides.
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs" / "guide").glob("*.md"))]
#: The files that quote the cards (each must, at least once).
QUOTING = ["README.md", "docs/guide/agents.md", "docs/guide/getting_started.md", "docs/guide/training.md"]

#: A rating with its interval as the docs write it: ``+69 [+19, +123]``, negatives with - or −.
RATING = r"[+\-−]\d+ \[[+\-−]?\d+, [+\-−]?\d+\]"
#: The figures of a quote: what each is called, its pattern and how a card gives it.
FIGURES = {
    "Elo": (RATING, lambda c: rating_text(c.elo["elo"], c.elo["low"], c.elo["high"])),
    "CPU minutes": (r"(\d+(?:\.\d+)?) CPU minutes", lambda c: str(c.cpu_minutes)),
    "decks": (r"(\d+) (?:duplicate )?decks", lambda c: str(c.elo["decks"]["count"])),
    "seed": (r"seed (\d+)", lambda c: str(c.elo["decks"]["seed"])),
}


def quotes(text: str, cards: dict[str, zoo.ModelCard]) -> list[tuple[str, str, str, str]]:
    """Every figure quoted from a card in ``text``: ``(name, figure, written, card's)``. A quote is
    the first figure of each kind after the card's name in backticks, up to the end of its sentence,
    a ``;``, a table cell or the next card's name."""
    names = "|".join(re.escape(n) for n in sorted(cards, key=len, reverse=True))
    found = []
    for m in re.finditer(rf"`({names})`", text):
        rest = text[m.end() :]
        end = re.search(rf"\.\s|;|\||\n\s*\n|`(?:{names})`", rest)
        tail = rest[: end.start() if end else len(rest)]
        for figure, (pattern, of_card) in FIGURES.items():
            written = re.search(pattern, tail)
            if written:
                value = written.group(written.re.groups).replace("−", "-")
                found.append((m.group(1), figure, value, of_card(cards[m.group(1)])))
    return found


def test_quotes_find_a_figure_that_is_not_the_cards() -> None:
    card = CARDS["ppo-2p"]
    good = rating_text(card.elo["elo"], card.elo["low"], card.elo["high"])
    text = f"`ppo-2p` (the recipe, {card.cpu_minutes} CPU minutes) {good} on 100 decks of seed 7. `ppo-2p` +1 [0, +2]"
    seed = str(card.elo["decks"]["seed"])
    assert quotes(text, CARDS) == [
        ("ppo-2p", "Elo", good, good),
        ("ppo-2p", "CPU minutes", str(card.cpu_minutes), str(card.cpu_minutes)),
        ("ppo-2p", "decks", "100", "100"),
        ("ppo-2p", "seed", "7", seed),
        ("ppo-2p", "Elo", "+1 [0, +2]", good),
    ]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_docs_quote_the_cards_figures(path: Path) -> None:
    found = quotes(path.read_text(encoding="utf-8"), CARDS)
    wrong = [f"`{name}` {figure}: written {written}, the card's {card}" for name, figure, written, card in found]
    assert [w for w, (*_, written, card) in zip(wrong, found, strict=True) if written != card] == []
    assert bool(found) == (str(path.relative_to(ROOT)) in QUOTING)


@pytest.mark.parametrize("path", ["README.md", "docs/guide/zoo.md"])
def test_the_table_of_the_cards_is_the_cards(path: str) -> None:
    """The table is ``treppen zoo list --markdown``'s; after rating or building a card, paste it in."""
    assert markdown_table(CARDS.values()) in (ROOT / path).read_text(encoding="utf-8")


def test_the_readme_names_the_decks_of_its_figures() -> None:
    """The seed and the count of decks of the README's headline figures are the cards' (and no
    seed a default was chosen on, 2026)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Headline figures\n", 1)[1].split("\n## ", 1)[0]
    seeds = {str(c.elo["decks"]["seed"]) for c in CARDS.values()}
    counts = {str(c.elo["decks"]["count"]) for c in CARDS.values()}
    assert set(re.findall(r"seed (\d+)", section)) == seeds == {"9001"}
    assert set(re.findall(r"(\d+),? (?:duplicate decks|seed)", section)) == counts == {"100"}


#: A reference to a section of a markdown file: ``docs/ARCHITECTURE.md "Agents"``, ``README
#: "Your own agent"``, ``README, "A" and "B"``.
SECTION_REF = re.compile(r'(README(?:\.md)?|[\w./-]+\.md)((?:,? (?:and )?"[^"\n]{2,80}")+)')


def section_refs() -> list[tuple[str, int, str, str]]:
    """Every section reference in the project's markdown, Python and YAML files (tracked by git):
    ``(file, line, markdown file, heading)``; the markdown file as named (README is README.md;
    a bare name is looked for beside the citing file, then in docs/ and docs/guide/)."""
    tracked = subprocess.run(
        ["git", "ls-files", "*.md", "*.py", "*.yaml"], cwd=ROOT, capture_output=True, text=True
    ).stdout
    refs = []
    for name in tracked.split():
        text = (ROOT / name).read_text(encoding="utf-8")
        for m in SECTION_REF.finditer(text):
            target = "README.md" if m.group(1).startswith("README") else m.group(1)
            places = [Path(target), Path(name).parent / target, Path("docs") / target, Path("docs/guide") / target]
            cited = next((str(p) for p in places if (ROOT / p).is_file()), target)
            line = text.count("\n", 0, m.start()) + 1
            refs += [(name, line, cited, heading) for heading in re.findall(r'"([^"]+)"', m.group(2))]
    return refs


def test_every_section_reference_names_a_heading() -> None:
    """A section cited by name (``docs/ARCHITECTURE.md "Agents"``) is a heading of that file, its
    backticks aside."""
    refs = section_refs()
    headings: dict[str, set[str]] = {}
    for _, _, cited, _ in refs:
        if cited not in headings:
            text = (ROOT / cited).read_text(encoding="utf-8") if (ROOT / cited).is_file() else ""
            headings[cited] = {h.replace("`", "").strip() for h in re.findall(r"^#+ (.+)$", text, re.M)}
    dangling = [
        f'{name}:{line}: {cited} "{title}"' for name, line, cited, title in refs if title not in headings[cited]
    ]
    assert len(refs) > 50 and dangling == []
