"""A shape the Slack fuzzer (test_bad_input_slack.py) found crashing the bot: a signed click
from a view whose block's ``elements`` was not a list made the gate, reading the buttons an
App Home view shows (``bot.authz.from_card``), raise — a 500 and a traceback. The door
(``bot.payloads``) now checks the parts of ``view.blocks`` the gate reads."""

from __future__ import annotations

import copy
import json

from bot import payloads
from tests.reliability.input_slack import home_click


def test_an_app_home_click_whose_view_lists_buttons_oddly_is_refused_at_the_door() -> None:
    click = json.loads(home_click("U0MALLORY", "prop-000000000000"))
    assert payloads.well_formed(click)
    for odd in (1.5, True, {"value": "x"}, "abc"):
        broken = copy.deepcopy(click)
        broken["view"]["blocks"][0]["elements"] = odd
        assert not payloads.well_formed(broken), odd
    for odd_block in (7, None, "b"):
        broken = copy.deepcopy(click)
        broken["view"]["blocks"] = [odd_block]
        assert not payloads.well_formed(broken), odd_block
