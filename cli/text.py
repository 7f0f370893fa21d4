"""The CLI's words for errors: what a terminal user reads, and types next, for each error of
the family (``store.errors``).

Lower layers raise errors with fields (a sentence of facts, which object, a remedy, details);
this module turns a code or a remedy into terminal words — commands and flags. Slack says the
same facts in its own words (``bot.text.error_words.error_line``).
"""

from __future__ import annotations

from collections.abc import Callable

from store.errors import Remedy, StratusError

Hint = Callable[[StratusError], str]


def _explain(error: StratusError) -> str:
    """The ``policy explain`` command for the request the error is about, or where the rules
    live when it names none — never a bare command that needs arguments it does not give."""
    found = error.details
    if found.get("action") and found.get("resource") and found.get("namespace"):
        return (
            f"`stratus policy explain --action {found['action']} -n {found['namespace']} "
            f"--resource {found['resource']}` shows every rule that applies"
        )
    return "the rule named above is in the policy files (`$STRATUS_POLICY_DIR`)"


def _policy_files(error: StratusError) -> str:
    problems = getattr(error, "problems", None) or []
    where = str(getattr(problems[0], "path", "")) if problems else ""
    return (
        f"`stratus policy check {where}`"
        if where
        else '`stratus policy check "$STRATUS_POLICY_DIR"`'
    )


REMEDY_WORDS: dict[Remedy, Hint] = {
    Remedy.FORCE: lambda e: "to overwrite that change anyway, run the command again with --force",
    Remedy.RETRY: lambda e: "try again in a moment",
    Remedy.FIX_POLICY: _explain,
    Remedy.ASK_APPROVER: lambda e: (
        f"ask an approver to run `stratus proposals approve {e.subject}`"
        if e.subject
        # Without an object to name: where to find it.
        else "ask an approver to answer it (`stratus proposals list` shows what waits)"
    ),
    Remedy.PROPOSE_AGAIN: lambda e: "look at the new plan and run the command again",
    Remedy.RECONCILE: lambda e: (
        "run `stratus undo --list` in a moment: recovery reads the object and records the outcome"
    ),
    Remedy.VERIFY_AUDIT: lambda e: "`stratus audit verify` names what was changed",
    Remedy.CANCEL_OPEN: lambda e: (
        f"cancel it first: `stratus proposals cancel {e.details['open']}`"
        if e.details.get("open")
        else "cancel the open proposal first (`stratus proposals list` shows it)"
    ),
    Remedy.REVOKE_GRANT: lambda e: (
        (
            f"revoke it with `stratus policy revoke {e.subject}`; "
            if e.subject
            else "find it with `stratus policy grants` and revoke it; "
        )
        + "`stratus audit verify` names what was changed"
    ),
}

# Where one remedy means different things by error: a policy that does not load is fixed in
# its files (``policy explain`` cannot even read them), a denial is explained by the rules.
CODE_WORDS: dict[str, Hint] = {
    "policy": lambda e: f"fix the files; {_policy_files(e)} lists every problem",
    "policy_mismatch": lambda e: (
        "unset STRATUS_POLICY_DIR (or leave out --policy-dir) to run under the bot's policy, "
        "or set STRATUS_DB to another database"
    ),
    "incident_closed": lambda e: (
        f"look at it again with `stratus incidents look-again {e.subject}`"
        if e.details.get("reopenable")
        else f"`stratus incidents show {e.subject}` tells how it ended"
    ),
    "incident_open_elsewhere": lambda e: (
        f"follow that one: `stratus incidents show {e.details.get('open', e.subject)}`"
    ),
    "health_listen": lambda e: (
        "set STRATUS_HEALTH_PORT to a free port (0 picks one and prints it) or "
        "STRATUS_HEALTH_HOST to an address of this machine"
    ),
    "unknown_cluster": lambda e: (
        "name one of them with --cluster, or leave it out for the default (the clusters come "
        "from --context flags or $STRATUS_CLUSTERS)"
        if e.details.get("known")
        else "this Stratus serves one cluster: leave --cluster out, or set $STRATUS_CLUSTERS"
    ),
    "served_policy_gone": lambda e: (
        "restore the bot's policy files, or start the bot again with its policy "
        "(`stratus serve` records it)"
    ),
    # Writes made as the approver (policies.impersonation).
    "cluster_refused": lambda e: (
        f"the cluster refused this for {e.details.get('person') or 'stratus'}: their Kubernetes "
        f"user {e.details.get('user', '?')} lacks the right; propose it again for someone "
        "whose user has it to approve, or have the cluster's RBAC grant it"
    ),
    "impersonation": lambda e: (
        f"fix the file; `stratus impersonation check {e.subject or ''}` lists every problem"
    ),
    "approver_not_mapped": lambda e: (
        "you have no Kubernetes identity in the impersonation mapping; someone mapped must "
        f"approve (or add {e.details.get('person') or 'them'} to "
        f"{e.details.get('file') or '$STRATUS_IMPERSONATION'})"
    ),
    "not_mapped": lambda e: (
        f"add {e.details.get('person') or 'an `automatic` identity'} to "
        f"{e.details.get('file') or '$STRATUS_IMPERSONATION'} (`stratus impersonation check` "
        "validates it), or propose it again for someone who is mapped to approve"
    ),
}


def hint(error: StratusError) -> str:
    """What to do next at a terminal ('' when there is nothing to do)."""
    words = CODE_WORDS.get(error.code) or REMEDY_WORDS.get(error.remedy)
    return words(error) if words else ""


def error_line(error: StratusError, visible: Callable[[object], str] = str) -> str:
    """The error as the CLI prints it: its facts and, on the next line, the hint, each through
    ``visible`` (which makes text from the store or the cluster inert)."""
    then = hint(error)
    return visible(error.message) + (f"\n  hint: {visible(then)}" if then else "")


def rbac_header(
    command: str,
    *,
    part: str,
    managed: tuple[str, ...],
    secrets: tuple[str, ...],
    namespace: str,
    service_account: str,
) -> str:
    """The comment that heads ``stratus deploy rbac``'s YAML: how it was made, so a file
    generated from it says how to regenerate it rather than be edited by hand."""
    words = [command]
    if part != "all":
        words.append(f"--part {part}")
    words += [f"--namespace {n}" for n in managed]
    words += [f"--secrets-in {n}" for n in secrets]
    if namespace != "stratus":
        words.append(f"--stratus-namespace {namespace}")
    if service_account != "stratus":
        words.append(f"--service-account {service_account}")
    return (
        f"# Generated by `{' '.join(words)}` from the read layer and the action catalog\n"
        "# (tools/permissions.py); regenerate it rather than edit it. docs/deploy.md says why\n"
        "# each rule is there.\n"
    )


# ---------------------------------------------------------------- stratus serve's lifecycle
# (in-cluster leader election and stopping; docs/operations.md)


def lease_waiting(where: str, holder: str) -> str:
    return (
        f"standing by: the leader lease {where} is held by {holder or 'nobody yet'}; this "
        "Stratus connects to Slack and acts once it holds it"
    )


def lease_held(where: str, identity: str) -> str:
    return f"leading: holding the leader lease {where} as {identity}"


def lease_lost(where: str, why: str) -> str:
    """``why``: ``Elector.why_not_leading`` ("held by POD_…", "could not renew (…)")."""
    return (
        f"lost the leader lease {where} ({why}): stopped taking "
        "Slack's requests and writing, so that only one Stratus acts; restart it to stand by"
    )


def calls_left(count: int, seconds: float) -> str:
    noun = "call" if count == 1 else "calls"
    return (
        f"stopped after {seconds:g} s (STRATUS_SHUTDOWN_SECONDS) with {count} {noun} to the "
        "cluster, the model or the database still running: a write among them is left to "
        "recovery (its write-ahead record is in the database), which records it at the next "
        "start; an incident resumes from the database"
    )
