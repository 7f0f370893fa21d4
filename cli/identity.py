"""Who is at the terminal: the CLI's identity, from the operating system.

The identity is ``cli:<OS user>`` — the real user id of the process, not ``$USER``, which any
caller sets. ``STRATUS_ACTOR`` overrides the name for a shared service account or a test, but
the result is still ``cli:<name>`` (it can never become a Slack ID, an agent or one of
Stratus's own machine identities), and every use of the override is written to the audit log
naming the OS user who claimed it.
"""

from __future__ import annotations

import os
import pwd
import re
from dataclasses import dataclass

from store.errors import Remedy, StratusError

ENV = "STRATUS_ACTOR"
PREFIX = "cli:"
_NAME = re.compile(r"^[A-Za-z0-9][-A-Za-z0-9._]{0,62}$")


class IdentityError(StratusError):
    code = "identity"
    default_remedy = Remedy.FIX_CONFIG


@dataclass(frozen=True)
class Identity:
    actor: str  # cli:<name>
    os_user: str
    claimed: bool  # True when STRATUS_ACTOR chose the name


def os_user() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return f"uid-{os.getuid()}"


def current() -> Identity:
    real = os_user()
    if ENV not in os.environ:
        return Identity(PREFIX + real, real, False)
    claimed = os.environ[ENV].strip()
    if not claimed:
        # An unexpanded variable in a service account's unit would otherwise act as
        # whoever runs the process, under rules written for the name it meant to claim.
        raise IdentityError(
            f"${ENV} is set but empty; set it to the name to act as, or unset it to act as "
            f"cli:{real}"
        )
    name = claimed.removeprefix(PREFIX)
    if not _NAME.fullmatch(name) or name.lower().startswith("stratus"):
        raise IdentityError(
            f"${ENV}={claimed!r} is not a usable name: letters, digits, '-', '.' and '_', "
            "and not one of Stratus's own identities (stratus…)"
        )
    return Identity(PREFIX + name, real, name != real)
