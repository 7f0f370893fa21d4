"""The impersonation mapping and whom a write is sent as: pure functions, no cluster.

Seen in issue 19: writes went out as Stratus's ServiceAccount whoever approved them, so the
cluster's RBAC could not tell people apart and its audit log named only the bot. The mapping
names a Kubernetes identity per person; these tests pin how it loads (errors at file:line),
whom each kind of decision is sent as, and the ClusterRole it needs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import stratus as stratus_cli
from policies import impersonation
from policies.impersonation import Accountable, Approval, ImpersonationError, NotMapped
from tools.identity import KubeIdentity

GOOD = """\
apiVersion: stratus/v1
kind: Impersonation
people:
  - who: U0ALICE
    user: alice@example.com
    groups: [hotel-operators]
  - who: cli:bob
    user: bob
groups:
  - who: S0SRE
    groups: [sre, oncall]
automatic:
  user: stratus-automation
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "impersonation.yaml"
    path.write_text(text)
    return path


def _problems(tmp_path: Path, text: str) -> list[str]:
    with pytest.raises(ImpersonationError) as raised:
        impersonation.parse(_write(tmp_path, text))
    return [str(p) for p in raised.value.problems]


def test_a_mapping_loads_people_groups_and_the_automatic_identity(tmp_path: Path) -> None:
    mapping = impersonation.parse(_write(tmp_path, GOOD))
    assert mapping.identity_of("U0ALICE", ["S0SRE", "S0OTHER"]) == KubeIdentity(
        "alice@example.com", ("hotel-operators", "sre", "oncall")
    )
    assert mapping.identity_of("cli:bob") == KubeIdentity("bob", ())
    # A group only adds groups: a person without an entry of their own is not mapped.
    assert mapping.identity_of("U0CAROL", ["S0SRE"]) is None
    assert mapping.automatic == KubeIdentity("stratus-automation", ())
    assert mapping.users() == ["alice@example.com", "bob", "stratus-automation"]
    assert mapping.kube_groups() == ["hotel-operators", "oncall", "sre"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (GOOD.replace("    user: bob\n", "    user: bob\n    user: eve\n"), ":9:"),
        (GOOD.replace("    user: bob\n", "    user: bob\n    role: admin\n"), "unknown key"),
        (GOOD.replace("groups: [hotel-operators]", "groups: hotel-operators"), ":6:"),
        (GOOD.replace("who: cli:bob", "who: U0ALICE"), "U0ALICE is mapped twice"),
        (GOOD.replace("who: U0ALICE", "who: '@alice'"), "is a handle"),
        (GOOD.replace("user: bob", "user: system:admin"), "cluster's own identities"),
        (GOOD.replace("[sre, oncall]", "[system:masters]"), "system:masters would skip"),
        (GOOD.replace("who: S0SRE", "who: U0SRE"), "not a Slack user-group id"),
        (GOOD.replace("kind: Impersonation", "kind: ApprovalPolicy"), "kind"),
    ],
)
def test_a_bad_mapping_is_refused_with_file_line_and_what_is_wrong(
    tmp_path: Path, text: str, expected: str
) -> None:
    problems = _problems(tmp_path, text)
    assert problems and all(str(tmp_path / "impersonation.yaml") in p for p in problems)
    assert any(expected in p for p in problems), problems


@pytest.mark.parametrize(
    ("text", "where", "expected"),
    [
        (GOOD.replace("user: bob", 'user: "*"'), ":8:5:", "name with `*` reads as a wildcard"),
        (GOOD.replace("user: bob", "user: bob*"), ":8:5:", "is not one user"),
        (GOOD.replace("[sre, oncall]", '[sre, "*"]'), ":11:19:", "is not one group"),
        (GOOD.replace("[hotel-operators]", "[ops-*]"), ":6:14:", "reads as a wildcard"),
        (GOOD.replace("user: stratus-automation", 'user: "*"'), ":13:3:", "is not one user"),
        (GOOD.replace("[sre, oncall]", "[sre, System:Masters]"), ":11:19:", "only by case"),
        (GOOD.replace("user: bob", "user: SYSTEM:admin"), ":8:5:", "only by case"),
        (GOOD.replace("[hotel-operators]", "[system:masters]"), ":6:14:", "own identities"),
    ],
)
def test_wildcards_and_case_variants_of_system_are_refused_where_they_are_written(
    tmp_path: Path, text: str, where: str, expected: str
) -> None:
    """Seen in issue 19: ``user: "*"`` passed ``check`` and ``rbac`` granted impersonate on
    ``resourceNames: ['*']``; ``System:Masters`` passed too. A scalar is placed at its key, a
    list's item at the item."""
    problems = _problems(tmp_path, text)
    assert len(problems) == 1, problems
    assert f"{tmp_path / 'impersonation.yaml'}{where}" in problems[0], problems
    assert expected in problems[0], problems


def test_duplicate_keys_are_refused_at_their_line(tmp_path: Path) -> None:
    problems = _problems(
        tmp_path,
        GOOD.replace("kind: Impersonation\n", "kind: Impersonation\nkind: Impersonation\n"),
    )
    assert any(":3:" in p for p in problems), problems


def test_whom_a_write_is_sent_as_for_each_kind_of_decision() -> None:
    alice, bob = Approval("U0ALICE", ("S0SRE",)), Approval("U0BOB")
    # People approved: the one whose vote completed it, then everyone else who approved.
    assert impersonation.accountable(
        outcome="ask",
        approvals=[bob, alice],
        grant_creator=None,
        requester="U0DAVE",
        is_person=True,
    ) == [Accountable("U0ALICE", ("S0SRE",), "approved"), Accountable("U0BOB", (), "approved")]
    # A grant allowed it: its creator.
    assert impersonation.accountable(
        outcome="allow", approvals=[], grant_creator=alice, requester="U0DAVE", is_person=True
    ) == [Accountable("U0ALICE", ("S0SRE",), "granted")]
    # A rule allowed it: the person who asked, or Stratus's automatic identity.
    assert impersonation.accountable(
        outcome="allow", approvals=[], grant_creator=None, requester="cli:bob", is_person=True
    ) == [Accountable("cli:bob", (), "requested")]
    assert impersonation.accountable(
        outcome="allow",
        approvals=[],
        grant_creator=None,
        requester="agent:planner",
        is_person=False,
    ) == [Accountable("", (), "automatic")]


def test_an_unmapped_approver_or_a_missing_automatic_identity_is_refused_before_sending(
    tmp_path: Path,
) -> None:
    mapping = impersonation.parse(_write(tmp_path, GOOD))
    chosen = impersonation.writer(mapping, [Accountable("U0ALICE", ("S0SRE",), "approved")])
    assert chosen.user == "alice@example.com" and "sre" in chosen.groups
    with pytest.raises(NotMapped) as unmapped:
        impersonation.writer(
            mapping,
            [Accountable("U0ALICE", (), "approved"), Accountable("U0CAROL", (), "approved")],
        )
    assert unmapped.value.details["person"] == "U0CAROL"
    assert "nothing was sent" in unmapped.value.message
    bare = impersonation.parse(_write(tmp_path, GOOD.split("automatic:", maxsplit=1)[0]))
    with pytest.raises(NotMapped) as automatic:
        impersonation.writer(bare, [Accountable("", (), "automatic")])
    assert automatic.value.details["why"] == "automatic"


def test_the_serviceaccount_is_granted_impersonate_on_exactly_the_mapped_names(
    tmp_path: Path,
) -> None:
    role = impersonation.cluster_role(impersonation.parse(_write(tmp_path, GOOD)))
    assert role["kind"] == "ClusterRole"
    assert role["rules"] == [
        {
            "apiGroups": [""],
            "resources": ["users"],
            "verbs": ["impersonate"],
            "resourceNames": ["alice@example.com", "bob", "stratus-automation"],
        },
        {
            "apiGroups": [""],
            "resources": ["groups"],
            "verbs": ["impersonate"],
            "resourceNames": ["hotel-operators", "oncall", "sre"],
        },
    ]
    # Every rule names what it allows: no wildcard, no other verb, nothing else impersonated.
    for rule in role["rules"]:
        assert "*" not in str(rule) and rule["verbs"] == ["impersonate"]


def test_headers_repeat_the_group_header_once_per_group() -> None:
    assert KubeIdentity("alice", ("a", "b")).headers() == [
        ("Impersonate-User", "alice"),
        ("Impersonate-Group", "a"),
        ("Impersonate-Group", "b"),
    ]


@pytest.mark.parametrize("command", ["check", "rbac"])
def test_the_terminal_refuses_a_wildcard_name_and_prints_no_role_for_it(
    tmp_path: Path, command: str
) -> None:
    path = _write(tmp_path, GOOD.replace("user: bob", 'user: "*"'))
    result = CliRunner().invoke(stratus_cli, ["impersonation", command, str(path)])
    assert result.exit_code == 1, result.output
    assert f"{path}:8:5: people.1.user: '*' is not one user" in result.output
    assert "resourceNames" not in result.output and "Traceback" not in result.output
