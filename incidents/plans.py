"""An attempt of several steps shown and approved as a plan.

When an attempt begins, every step is planned at once (``planned``): the diff and the digest
it would have now, and what the policy would decide for it. The thread shows the whole plan,
each card says "step k of n", and where every matching rule says ``approve_plan: true`` the
first card offers **Approve plan**: one vote on the first step that also binds the digests of
the later steps its author may approve (``approve_plan``). A later step whose digest still
matches when it is proposed is approved in that person's name (``coverage`` decides,
``proposals.answer.approve_with_plan`` checks the sealed vote again); a step whose object moved
since, or whose rule asks it alone, is asked alone. The plan approval lapses when its attempt
ends: only the running attempt's steps are ever covered.

The decisions are pure functions of the incident and its proposals; ``planned`` and
``approve_plan`` are the thin parts that call the proposal service.
"""

from __future__ import annotations

from datetime import datetime

from agents.model import Candidate, Step
from incidents.model import Attempt, Incident, PlannedStep
from policies.approvals import ApprovalRequest
from policies.approvals import refusal as approval_refusal
from policies.approvers import named
from proposals.errors import AnswerRefused, NoChange
from proposals.model import Proposal, ProposalState, plan_refusal, plan_vote
from proposals.service import ProposalService
from store.errors import StratusError

P = ProposalState


# ---------------------------------------------------------------------- pure decisions


def position(incident: Incident | None, proposal_id: str) -> tuple[int, int] | None:
    """``(k, n)``: the proposal is step k of an attempt of n steps (None: not a step of an
    attempt of several)."""
    if incident is None or not proposal_id:
        return None
    for attempt in incident.attempts:
        number = attempt.step_number(proposal_id)
        if number is not None and len(attempt.candidate.steps) > 1:
            return number, len(attempt.candidate.steps)
    return None


def coverable(step: PlannedStep) -> bool:
    """Whether a plan approval may stand for this planned step: it was planned (it has a
    digest), and the policy asks for it with a rule that opts in, for one approval. An allowed
    step runs anyway; a denied or always-asked one never rides on a plan."""
    decision = step.decision
    return (
        bool(step.digest)
        and decision is not None
        and decision.outcome == "ask"
        and decision.approve_plan
        and decision.min_approvals <= 1
    )


def plan_card(attempt: Attempt | None) -> str | None:
    """The proposal that carries the plan's approval: the attempt's first step proposed (a
    first step that already looked as wanted was skipped, so the next one leads)."""
    if attempt is None:
        return None
    return attempt.proposals[0] if attempt.proposals else None


def later_steps(attempt: Attempt, proposal_id: str) -> list[PlannedStep]:
    """The planned steps after ``proposal_id``'s."""
    number = attempt.step_number(proposal_id) or 0
    return [step for step in attempt.plan if step.number > number]


def plan_offered(incident: Incident | None, proposal: Proposal) -> bool:
    """Whether ``proposal``'s card offers Approve plan: it is the first step of the running
    attempt and waits for a person, the policy lets a plan approval answer it, and at least
    one later step could be covered."""
    if incident is None or not incident.is_open:
        return False
    attempt = incident.current
    if attempt is None or attempt.finished_at is not None or attempt.undo_proposals:
        return False
    if plan_card(attempt) != proposal.id or attempt.proposals[-1] != proposal.id:
        return False
    if attempt.last_step_skipped:
        return False
    if proposal.state != P.AWAITING_APPROVAL or proposal.tampered:
        return False
    if not proposal.decision.approve_plan or proposal.decision.min_approvals > 1:
        return False
    return any(coverable(step) for step in later_steps(attempt, proposal.id))


def coverage(incident: Incident, proposal: Proposal, first: Proposal | None) -> tuple[bool, str]:
    """Is this step covered by the plan approval on ``first`` (the attempt's plan card)?
    ``(True, "")``: approve it with the plan. ``(False, why)``: ask it alone, and say why when
    a plan was approved (``why`` is empty when there is no plan approval to speak of)."""
    attempt = incident.current
    if attempt is None or attempt.finished_at is not None or not incident.is_open:
        return False, ""  # the plan approval lapsed with its attempt
    if first is None or first.id == proposal.id or first.id != plan_card(attempt):
        return False, ""
    if proposal.id not in attempt.proposals or proposal.state != P.AWAITING_APPROVAL:
        return False, ""
    vote = plan_vote(first)
    if vote is None:
        return False, ""
    why = plan_refusal(proposal, first, vote)
    return (True, "") if why is None else (False, why)


def approvers_named(attempt: Attempt) -> list[str]:
    """Every user group or user the plan's decisions name (to look up a clicker's groups)."""
    found: list[str] = []
    for step in attempt.plan:
        if step.decision is not None:
            found += [n for n in named(step.decision.approver_lists) if n not in found]
    return found


def step_refusal(step: PlannedStep, *, user: str, groups: tuple[str, ...], now: datetime) -> str:
    """Why ``user`` may not approve this planned step ("" when they may)."""
    if step.decision is None or step.facts is None:
        return "it could not be planned"
    request = ApprovalRequest(
        proposal_id=f"step {step.number}",
        facts=step.facts.policy_facts(),
        decision=step.decision.policy_decision(),
        digest=step.digest,
        created_at=now,
    )
    return approval_refusal(request, user, groups, now) or ""


# ---------------------------------------------------------------------- acting


def _dry_run(
    service: ProposalService, step: Step, *, namespace: str, requester: str, cluster: str
) -> Proposal:
    """The step as it would be proposed now: planned, dry-run on the server, nothing stored."""
    return service.propose(
        action=step.action,
        kind=step.kind,
        name=step.name,
        namespace="" if step.kind == "Node" else namespace,
        params=step.params,
        requester=requester,
        dry_run=True,
        cluster=cluster,
    )


def planned(
    service: ProposalService,
    candidate: Candidate,
    *,
    namespace: str,
    requester: str,
    cluster: str = "",
) -> list[PlannedStep]:
    """Every step of ``candidate`` as it would be proposed now (a dry run each: nothing is
    stored). A step that cannot be planned yet keeps no digest and is asked alone."""
    steps: list[PlannedStep] = []
    for number, step in enumerate(candidate.steps, start=1):
        target = f"{step.kind.lower()}/{step.name}"
        try:
            dry = _dry_run(service, step, namespace=namespace, requester=requester, cluster=cluster)
        except StratusError as why:
            steps.append(
                PlannedStep(
                    number=number,
                    action=step.action,
                    target=target,
                    params=dict(step.params),
                    intent=f"{step.action} {target}",
                    note=why.message,
                )
            )
            continue
        steps.append(
            PlannedStep(
                number=number,
                action=step.action,
                target=target,
                # As the dry run built them: a restart's stamp is fixed here, so the step
                # proposed later has the digest the plan was approved with.
                params={**step.params, **dry.params},
                intent=dry.intent,
                diff=dry.plan.diff,
                digest=dry.plan.digest,
                decision=dry.decision,
                facts=dry.facts,
            )
        )
    return steps


def with_plan(
    service: ProposalService, incident: Incident, proposal: Proposal
) -> tuple[Proposal, str]:
    """A later step the attempt's plan approval covers is approved with it; one it does not
    cover (its object moved, its rule asks it alone) is asked alone. Returns the proposal as
    it now is, and the note that says which ("" when there is no plan approval to speak of)."""
    first_id = plan_card(incident.current)
    if proposal.state != P.AWAITING_APPROVAL or first_id is None or first_id == proposal.id:
        return proposal, ""
    try:
        covered, why = coverage(incident, proposal, service.get(first_id))
        if not covered:
            return proposal, (
                f"{proposal.id} is asked alone, not with the plan: {why}" if why else ""
            )
        approved = service.approve_with_plan(proposal.id, plan_proposal_id=first_id)
    except StratusError as error:
        # The approver lost the right since, or the first step's record was tampered with:
        # nothing stands in for a person, so the step is asked alone.
        return (
            service.get(proposal.id),
            f"{proposal.id} is asked alone, not with the plan: {error.message}",
        )
    by = ", ".join(approved.approvals())
    return approved, f"{proposal.id} ({proposal.intent}) approved with the plan by {by}"


def changes_nothing(
    service: ProposalService,
    candidate: Candidate,
    *,
    namespace: str,
    requester: str,
    cluster: str = "",
) -> str | None:
    """Why no step of ``candidate`` would change anything now (each step's "already looks
    like that", from a dry run), or None when one would — or cannot be planned, which an
    attempt reports as its own failure. A candidate that changes nothing is never an attempt
    (issue 22): it would be judged "same", undone as nothing, and leave a step with no
    proposal behind it."""
    reasons: list[str] = []
    for step in candidate.steps:
        try:
            _dry_run(service, step, namespace=namespace, requester=requester, cluster=cluster)
        except NoChange as why:
            reasons.append(why.message)
            continue
        except StratusError:
            return None
        return None
    return "; ".join(reasons) or None


def approve_plan(
    service: ProposalService,
    incident: Incident | None,
    proposal: Proposal,
    *,
    user: str,
    groups: tuple[str, ...],
    now: datetime,
) -> Proposal:
    """Approve ``proposal`` (the first step) and, in the same sealed vote, every later step
    of the plan that a plan approval may cover — only if ``user`` may approve each of them.
    Refused (``AnswerRefused``) when the card offers no plan approval."""
    if incident is None or not plan_offered(incident, proposal):
        raise AnswerRefused(
            f"'Approve plan' is not available on {proposal.id}; approve once instead",
            subject=proposal.id,
        )
    attempt = incident.current
    assert attempt is not None
    covered = [step for step in later_steps(attempt, proposal.id) if coverable(step)]
    for step in covered:
        why = step_refusal(step, user=user, groups=groups, now=now)
        if why:
            raise AnswerRefused(
                f"{user} may not approve step {step.number} ({step.intent}): {why}; "
                "approve once instead",
                subject=proposal.id,
            )
    return service.answer(
        proposal.id,
        user=user,
        choice="plan",
        groups=groups,
        plan=tuple(step.digest for step in covered),
    )
