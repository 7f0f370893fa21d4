"""What an undo does, as fields (``undo.effect``) and in Slack's words (``bot.text``): the
undo card's header and its dialog say the effect ("Set replicas of deployment/geo back to 0,
as before Stratus changed it"), not the write's old intent ("Undo: Scale … to 1")."""

from __future__ import annotations

import copy
from typing import Any

from bot.text import card_words, undo_words
from undo.effect import CREATE, DELETE, NOTHING, REPLACE, effect_of


def geo(replicas: int, image: str = "geo:1") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "geo", "namespace": "hotel", "resourceVersion": "7"},
        "spec": {
            "replicas": replicas,
            "template": {"spec": {"containers": [{"name": "app", "image": image}]}},
        },
        "status": {"readyReplicas": replicas},
    }


def words(now: dict[str, Any] | None, back: dict[str, Any] | None, forced: bool = False) -> str:
    effect = effect_of(now, back, label="deployment/geo")
    changes = [(c.path, c.back_to) for c in effect.changes]
    return card_words.undo_effect(effect.operation, effect.label, changes, forced=forced)


def test_one_field_goes_back_to_its_value() -> None:
    effect = effect_of(geo(1), geo(0), label="deployment/geo")
    assert effect.operation == REPLACE
    assert [(c.path, c.now, c.back_to) for c in effect.changes] == [("replicas", "1", "0")]
    assert words(geo(1), geo(0)) == (
        "Set replicas of deployment/geo back to 0, as before Stratus changed it"
    )


def test_server_fields_and_status_are_not_effects() -> None:
    moved = copy.deepcopy(geo(1))
    moved["metadata"]["resourceVersion"] = "99"
    moved["status"] = {"readyReplicas": 0}
    assert effect_of(moved, geo(1), label="deployment/geo").operation == NOTHING
    assert words(moved, geo(1)).startswith("Nothing to put back")


def test_containers_are_named_and_several_fields_listed() -> None:
    said = words(geo(1, "geo:2"), geo(0, "geo:1"))
    assert said == (
        "Set replicas back to 0 and containers[app].image back to geo:1 on deployment/geo, "
        "as before Stratus changed them"
    )
    assert words(geo(1), geo(0), forced=True).endswith("overwriting the change made since")


def test_a_field_the_write_added_is_removed() -> None:
    added = copy.deepcopy(geo(1))
    added["spec"]["template"]["spec"]["nodeSelector"] = {"disk": "ssd"}
    assert words(added, geo(1)) == (
        "Remove nodeSelector from deployment/geo, as before Stratus added it"
    )


def test_creates_and_deletes() -> None:
    assert effect_of(None, geo(1), label="deployment/geo").operation == CREATE
    assert effect_of(geo(1), None, label="deployment/geo").operation == DELETE
    assert words(None, geo(1)) == "Re-create deployment/geo, which Stratus deleted"
    assert words(geo(1), None) == "Delete deployment/geo, which Stratus created"


def test_the_dialog_quotes_the_effect_as_data() -> None:
    said = card_words.undo_confirm("Set env X of deployment/geo back to <!channel>")
    assert "<!channel>" not in said and "&lt;!channel&gt;" in said


def test_a_card_without_an_undo_button_does_not_claim_one() -> None:
    fields = card_words.card_fields(
        "deployment/geo in hotel",
        "low",
        True,
        "executed",
        undo_note=card_words.undo_field_of_undo("hotel"),
    )
    assert not any("exact undo available" in f for f in fields)
    assert any("/stratus investigate hotel" in f for f in fields)


def test_the_force_dialog_shows_the_changed_lines_and_fits_slack() -> None:
    diff = (
        "--- deployment/geo (as Stratus wrote it)\n+++ deployment/geo (now)\n@@ -1,3 +1,3 @@\n"
        " spec:\n-  replicas: 1\n+  replicas: 2\n" + "+  note: <!channel> ```x```\n" * 30
    )
    said = undo_words.force_confirm(diff)
    assert "-  replicas: 1\n+  replicas: 2" in said and "+++" not in said
    assert len(said) <= 300 and said.endswith("```") and said.count("```") == 2
    assert "<!channel>" not in said


def test_a_value_from_the_cluster_stays_on_one_visible_line() -> None:
    said = card_words.undo_effect("replace", "configmap/app", [("data.motd", "hi\n\u202eevil")])
    assert "\n" not in said and "\u202e" not in said and "[U+202E]" in said
