"""Who is offered Force for an undo that meets a later change (``force_undo_refusal``): whoever
may undo the write — its approvers, or the admins for an auto-allowed one — and nobody else,
never a non-person. Pure: no store, no socket."""

from __future__ import annotations

from policies.authority import Asker, force_undo_refusal
from tests.policies.test_authority import ADMINS, ALLOWED, SRE_ASK


def test_force_is_offered_to_those_who_may_undo_the_write() -> None:
    alice = Asker(user="U0ALICE", groups=("S0SRE",))
    dave = Asker(user="U0DAVE")
    carol = Asker(user="U0CAROL")
    assert force_undo_refusal(alice, original=SRE_ASK, admins=ADMINS) is None
    assert force_undo_refusal(carol, original=ALLOWED, admins=ADMINS) is None
    why = force_undo_refusal(dave, original=SRE_ASK, admins=ADMINS)
    assert why is not None and "may not force this undo" in why and "rule sre" in why
    assert force_undo_refusal(alice, original=ALLOWED, admins=ADMINS) is not None
    for nobody in ("S0SRE", "*", "agent:stratus"):
        assert force_undo_refusal(Asker(user=nobody), original=None, admins=("*",)) is not None
