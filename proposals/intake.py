"""Proposals from an outside agent (an MCP client): checked, limited and deduplicated, then
proposed through the one propose use-case every surface uses.

Before anything is read or planned: the call is checked against the catalog's schema (each
error names its field), the target against the write scope, and the client's limits —
proposals per minute and open proposals at once — against what it already asked for. The
same change asked again while the first is still open is that first proposal, not a second
card. The decisions are pure functions of the client's recent proposals (``admit``), so they
are tested without a cluster; ``propose_for`` reads those from the store and proposes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from policies import clients
from proposals import propose, undoing
from proposals.core import Deps, UndoRequest
from proposals.errors import TurnLost
from proposals.model import OPEN, Proposal, ProposalState
from store.errors import Remedy, StratusError
from store.locks import Lease, LeaseLocks, holder_name
from tools import errors, schemas
from tools.actions import Action
from tools.objects import ObjectRef

log = logging.getLogger(__name__)
WINDOW = timedelta(minutes=1)
WAITING = frozenset({ProposalState.AWAITING_APPROVAL})
# Proposals one card gathers (approval fatigue): a Slack message holds 50 blocks.
MAX_BATCH = 3
# One ask of a client at a time, from reading its proposals to the proposal stored: limits
# and repeats are decided on what it already has, and two asks at once must not both see
# room (an outside tester made ten proposals past a limit of three with ten parallel calls).
# The lock is a lease in the store, so the stdio gateway and ``stratus serve`` share it; a
# holder that dies lets go when its lease runs out.
TURN_TTL = 120.0
TURN_WAIT = 60.0


class LimitReached(StratusError, code="limit_reached", remedy=Remedy.RETRY, retryable=True):
    """A client asked for more than its limits allow; ``details`` say which and how many."""


class NotYours(StratusError, code="not_yours", remedy=Remedy.FIX_INPUT):
    """An id that is not one of the caller's own proposals or writes. It says nothing more:
    not whether the id exists, nor whose it is."""


@dataclass(frozen=True)
class Ask:
    """What a client asks for, as parsed by its surface."""

    action: str
    kind: str
    name: str
    namespace: str
    params: dict[str, Any]
    intent: str = ""
    incident_id: str | None = None


@dataclass(frozen=True)
class Quota:
    per_minute: int
    open_at_once: int
    # Whether the client may propose what cannot be undone (a pod or PVC deleted): off unless
    # its entry says so, so every write an agent causes has an undo entry.
    irreversible: bool = False
    # The SHA-256 of the token it asks with (its entry's): recorded on what it proposes, so a
    # proposal stands only while the client holds that token (``clients.revocation``).
    token_sha256: str = ""
    # Whether it may propose writes to nodes: a node is shared by every namespace, while an
    # agent's write is verified in the one namespace it names (an outside tester cordoned a
    # node "verified healthy" in an empty namespace). Off unless its entry says so.
    nodes: bool = False


@dataclass(frozen=True)
class Proposed:
    proposal: Proposal
    repeated: bool  # the same change was already open: this is that proposal


def comparable(params: dict[str, Any]) -> dict[str, Any]:
    """Parameters as two asks of the same change share them (a stamp differs every time)."""
    return {k: v for k, v in params.items() if k not in schemas.STAMPED}


def same_change(proposal: Proposal, built: Action) -> bool:
    ref = built.ref()
    asked = built.model_dump(mode="json", exclude={"kind", "target", "namespace"})
    return (
        proposal.action == built.name
        and proposal.target.kind == ref.kind
        and proposal.target.name == ref.name
        and proposal.target.namespace == ref.namespace
        and comparable(proposal.params) == comparable(asked)
    )


def admit(recent: list[Proposal], built: Action, quota: Quota, *, now: datetime) -> Proposal | None:
    """The open proposal of the same change (asked again: it is the answer), None to go on
    and propose, or ``LimitReached``. ``recent``: the client's own proposals, newest first."""
    open_ones = [p for p in recent if p.state in OPEN]
    for proposal in open_ones:
        if same_change(proposal, built):
            return proposal
    if len(open_ones) >= quota.open_at_once:
        raise LimitReached(
            f"{len(open_ones)} of this client's proposals are still open (at most "
            f"{quota.open_at_once}); wait for a decision before proposing more",
            details={"limit": "open_proposals", "allowed": quota.open_at_once},
        )
    within = [p for p in recent if p.created_at > now - WINDOW]
    if len(within) >= quota.per_minute:
        raise LimitReached(
            f"{len(within)} proposals in the last minute (at most {quota.per_minute}); "
            "try again in a minute",
            details={"limit": "proposals_per_minute", "allowed": quota.per_minute},
        )
    return None


@dataclass(frozen=True)
class Checked:
    """An ask that passed the schema, the write scope, the client's limits and is no repeat:
    what ``propose_checked`` proposes (an outside agent's incident may be opened in between)."""

    action: str
    ref: ObjectRef
    params: dict[str, Any]
    requester: str
    agent_intent: str  # as the agent said it, one printable line (``_quoted``)
    client_token: str = ""  # the token's SHA-256 it asked with (``Quota.token_sha256``)


def check(deps: Deps, ask: Ask, *, requester: str, quota: Quota) -> Checked | Proposed:
    """Check, limit and deduplicate a client's ask before anything is planned: the checked ask,
    or the open proposal of the same change (a repeat), or a refusal naming the field."""
    cls, built = schemas.checked(
        action=ask.action,
        kind=ask.kind,
        name=ask.name,
        namespace="" if ask.kind == "Node" else ask.namespace,
        given=ask.params,
    )
    if not cls.reversible and not quota.irreversible:
        raise schemas.FieldInvalid(
            "action",
            f"{cls.name} cannot be undone, and this client may only propose writes that can",
        )
    if ask.kind == "Node" and not quota.nodes:
        raise schemas.FieldInvalid(
            "target",
            "a node is shared by every namespace, and an agent's write is verified in the one "
            "namespace it names; this client may only propose writes to namespaced objects",
        )
    try:
        deps.executor.scope.check(built.ref())
    except errors.OutOfScope as exc:
        raise schemas.FieldInvalid("namespace", exc.message) from exc
    recent = deps.repo.find(requester=requester, limit=max(quota.per_minute, 50) + 50)
    existing = admit(recent, built, quota, now=deps.clock.now())
    if existing is not None:
        return Proposed(existing, repeated=True)
    return Checked(
        action=cls.name,
        ref=built.ref(),
        params=comparable(built.model_dump(mode="json", exclude={"kind", "target", "namespace"})),
        requester=requester,
        agent_intent=_quoted(ask.intent),
        client_token=quota.token_sha256,
    )


def propose_checked(
    deps: Deps, checked: Checked, *, incident_id: str | None, turn: Lease | None = None
) -> Proposal:
    """Propose a checked ask (plan, server dry-run, policy) exactly as every other surface;
    stored only while ``turn`` (the client's, when given) is still held."""
    return propose.propose(
        dataclasses.replace(deps, turn=turn, client_token=checked.client_token),
        action=checked.action,
        kind=checked.ref.kind,
        name=checked.ref.name,
        namespace=checked.ref.namespace,
        params=checked.params,
        requester=checked.requester,
        incident_id=incident_id,
        agent_intent=checked.agent_intent,
    )


@dataclass(frozen=True)
class TurnConfig:
    """How a client's turn is held: its lease's time-to-live, how long an ask waits for it,
    and how often the lease is renewed while an ask runs (default: a third of the TTL)."""

    ttl: float = TURN_TTL
    wait: float = TURN_WAIT
    heartbeat: float | None = None

    @property
    def renew_every(self) -> float:
        return self.heartbeat if self.heartbeat is not None else self.ttl / 3


# The default: a TTL of TURN_TTL, renewed every third of it, waited for up to TURN_WAIT.
TURNS = TurnConfig()


def new_turn(requester: str, config: TurnConfig = TURNS) -> Lease:
    """The lease one ask of ``requester`` will hold as its turn (not taken yet)."""
    return Lease(f"intake:{requester}", holder_name(requester), config.ttl)


def take_turn(deps: Deps, lease: Lease) -> bool:
    """One try at the turn, without waiting: a caller that must not block a thread (the
    gateway's event loop) polls this between sleeps of its own."""
    return LeaseLocks(deps.store).try_acquire(lease.resource, lease.holder, lease.ttl) is None


def give_back(deps: Deps, lease: Lease) -> None:
    LeaseLocks(deps.store).release(lease.resource, lease.holder)


def one_at_a_time() -> LimitReached:
    return LimitReached(
        "this client's other proposals are still being planned; try again in a moment",
        details={"limit": "one_at_a_time", "allowed": 1},
    )


@contextlib.contextmanager
def turn(
    deps: Deps, requester: str, *, held: Lease | None = None, config: TurnConfig = TURNS
) -> Iterator[Lease]:
    """The client's turn: its asks are decided one after another. ``check`` and
    ``propose_checked`` are called inside it (``propose_for`` and ``undo_for`` take it).

    ``held``: a turn the caller already took (``take_turn``, waiting without a thread of
    its own); else this waits for it, up to ``config.wait``. While the ask runs its lease is
    renewed (a heartbeat every ``config.renew_every``), and the proposal is stored only if it
    is still held (``core.open_proposal``; else ``TurnLost``): an ask that outlived its lease
    — the heartbeat could not run, the process stalled — never stores a second copy."""
    locks = LeaseLocks(deps.store)
    lease = held if held is not None else new_turn(requester, config)
    if held is None:
        if locks.acquire(lease.resource, lease.holder, ttl=lease.ttl, wait=config.wait):
            raise one_at_a_time()
    elif not locks.renew(lease.resource, lease.holder, lease.ttl):
        raise TurnLost(
            f"{requester}'s turn ran out before this ask began; ask again",
            details={"limit": "turn", "ttl": lease.ttl},
        )
    try:
        with _heartbeat(locks, lease, every=config.renew_every):
            yield lease
    finally:
        if held is None:
            locks.release(lease.resource, lease.holder)


@contextlib.contextmanager
def _heartbeat(locks: LeaseLocks, lease: Lease, *, every: float) -> Iterator[None]:
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(every):
            try:
                if not locks.renew(lease.resource, lease.holder, lease.ttl):
                    return  # lost: the check before storing refuses the ask
            except StratusError:
                log.warning("could not renew the turn %s", lease.resource, exc_info=True)

    thread = threading.Thread(target=beat, name=f"turn:{lease.resource}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


class Waiting:
    """Asks waiting for their client's turn in this process: at most one per client. A
    second one is refused at once (``one_at_a_time``, retryable) instead of waiting too —
    one client's stalled ask must not pile up waits that others' calls queue behind."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: set[str] = set()

    @contextlib.contextmanager
    def one(self, requester: str) -> Iterator[None]:
        with self._lock:
            if requester in self._waiting:
                raise one_at_a_time()
            self._waiting.add(requester)
        try:
            yield
        finally:
            with self._lock:
                self._waiting.discard(requester)


def propose_for(
    deps: Deps,
    ask: Ask,
    *,
    requester: str,
    quota: Quota,
    held: Lease | None = None,
    config: TurnConfig = TURNS,
) -> Proposed:
    """Check, limit and deduplicate a client's ask, then propose it (plan, server dry-run,
    policy) exactly as every other surface does — in the client's turn."""
    with turn(deps, requester, held=held, config=config) as lease:
        checked = check(deps, ask, requester=requester, quota=quota)
        if isinstance(checked, Proposed):
            return checked
        made = propose_checked(deps, checked, incident_id=ask.incident_id, turn=lease)
        return Proposed(made, repeated=False)


def said(requester: str, intent: str) -> str:
    """The agent's intent as it is shown: quoted, marked untrusted, one printable line."""
    return f"{requester} says (untrusted): “{_quoted(intent)}”"


def own(deps: Deps, proposal_id: str, *, requester: str) -> Proposal:
    """The caller's own proposal, or ``NotYours`` (also for an id that does not exist)."""
    try:
        proposal = deps.repo.get(proposal_id)
    except StratusError as exc:
        raise NotYours(f"no proposal {proposal_id!r} of yours") from exc
    if proposal.requester != requester:
        raise NotYours(f"no proposal {proposal_id!r} of yours")
    return proposal


def undo_for(
    deps: Deps,
    entry_id: str,
    *,
    requester: str,
    quota: Quota,
    held: Lease | None = None,
    config: TurnConfig = TURNS,
) -> Proposed:
    """Propose the undo of a write one of the caller's own proposals made (in the client's
    turn, like every ask)."""
    with turn(deps, requester, held=held, config=config) as lease:
        turned = dataclasses.replace(deps, turn=lease, client_token=quota.token_sha256)
        return _undo_for(turned, entry_id, requester=requester, quota=quota)


def _undo_for(deps: Deps, entry_id: str, *, requester: str, quota: Quota) -> Proposed:
    try:
        entry = undoing.undo_target(deps, UndoRequest(entry_id=entry_id))
    except StratusError as exc:
        raise NotYours(f"no undo entry {entry_id!r} of yours") from exc
    origin = entry.execution.proposal_id
    if origin is None or own_or_none(deps, origin, requester=requester) is None:
        raise NotYours(f"no undo entry {entry_id!r} of yours")
    recent = deps.repo.find(requester=requester, limit=max(quota.per_minute, 50) + 50)
    for proposal in recent:
        if proposal.undo_entry == entry.id and proposal.state in OPEN:
            return Proposed(proposal, repeated=True)
    open_ones = [p for p in recent if p.state in OPEN]
    if len(open_ones) >= quota.open_at_once:
        raise LimitReached(
            f"{len(open_ones)} of this client's proposals are still open (at most "
            f"{quota.open_at_once})",
            details={"limit": "open_proposals", "allowed": quota.open_at_once},
        )
    return Proposed(
        undoing.propose_undo(deps, UndoRequest(entry_id=entry.id), requester=requester),
        repeated=False,
    )


def batch_head(
    proposal: Proposal, others: list[Proposal], on_cards: Mapping[str, int]
) -> str | None:
    """Approval fatigue: the proposal whose card ``proposal`` joins instead of asking the same
    people again — the oldest of the same MCP client's proposals still waiting in the same
    incident (or none) for the same approvers, with a card that holds fewer than
    ``MAX_BATCH``. ``on_cards``: proposal id → how many proposals its card shows."""
    if not proposal.requester.startswith(clients.PREFIX) or proposal.state not in WAITING:
        return None
    fellows = [
        p
        for p in others
        if p.id != proposal.id
        and p.requester == proposal.requester
        and p.incident_id == proposal.incident_id
        and p.state in WAITING
        and p.decision.approvers == proposal.decision.approvers
        and p.decision.min_approvals == proposal.decision.min_approvals
        and p.created_at <= proposal.created_at
        and 0 < on_cards.get(p.id, 0) < MAX_BATCH
    ]
    return min(fellows, key=lambda p: (p.created_at, p.id)).id if fellows else None


def own_or_none(deps: Deps, proposal_id: str, *, requester: str) -> Proposal | None:
    try:
        return own(deps, proposal_id, requester=requester)
    except NotYours:
        return None


def _quoted(text: str) -> str:
    """An agent's own words as one printable line (they are shown, never obeyed)."""
    flat = " ".join(text.split())
    return "".join(ch for ch in flat if ch.isprintable()).replace("“", '"').replace("”", '"')[:300]
