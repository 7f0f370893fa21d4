"""The links of a thread Slack lost, and who asked for a proposal (no socket): a relinked
incident is found from its old thread, its summary is posted again, its cards are listed to be
posted again; the status label comes from the requester."""

from __future__ import annotations

from pathlib import Path

from bot.links import Links, MessageRef
from bot.text import command_words
from store.db import Store


def test_a_relinked_thread_is_found_from_its_old_ts_and_its_cards_are_listed(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "db.sqlite")
    links = Links(store)
    old, new = MessageRef("C1", "1.000001"), MessageRef("C1", "2.000001")
    links.link_thread("inc-0123456789", old, "U1")
    links.link_card("prop-1", "inc-0123456789", MessageRef("C1", "1.000002"), old.ts)
    links.link_card("prop-2", "inc-0123456789", MessageRef("C1", "1.000003"), old.ts)
    links.link_summary("inc-0123456789", MessageRef("C1", "1.000004"))
    assert not links.continued("inc-0123456789")
    assert links.card_at(MessageRef("C1", "1.000003")) == "prop-2"

    links.relink_thread("inc-0123456789", old, new)
    assert links.thread("inc-0123456789") == new
    assert links.incident_at("C1", old.ts) is None
    assert links.gone_thread(old) == "inc-0123456789"
    assert links.continued("inc-0123456789")
    assert links.summary("inc-0123456789") is None  # it was in the old thread
    assert links.cards_in(old) == ["prop-1", "prop-2"]
    links.forget_card("prop-1")
    assert links.card("prop-1") is None and links.cards_in(old) == ["prop-2"]

    links.forget_thread("inc-0123456789", new)
    assert links.thread("inc-0123456789") is None and links.gone_thread(new) == "inc-0123456789"
    store.close()


def test_who_asked_comes_from_the_requester() -> None:
    assert command_words.asked_by("cli:dave") == "asked from a terminal by `dave`"
    assert command_words.asked_by("agent:stratus") == "proposed by Stratus"
    assert command_words.asked_by("U0DAVE") == "asked by <@U0DAVE>"
    assert "terminal" not in command_words.status_terminal_pending("prop-1", "scale", "U0DAVE")
