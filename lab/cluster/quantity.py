"""Kubernetes resource quantities ("250m", "128Mi", "1.5") as numbers."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_QUANTITY = re.compile(r"^([+-]?[0-9.]+)([eE][+-]?[0-9]+|m|k|Ki|M|Mi|G|Gi|T|Ti|P|Pi|E|Ei)?$")
_FACTORS = {
    None: Decimal(1),
    "m": Decimal("0.001"),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}


def is_valid(text: object) -> bool:
    if isinstance(text, int | float) and not isinstance(text, bool):
        return True
    return isinstance(text, str) and _QUANTITY.match(text) is not None


def parse(text: object) -> Decimal:
    """The quantity's value in base units (cores, bytes); raises ValueError when malformed."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        return Decimal(str(text))
    match = _QUANTITY.match(str(text))
    if not match:
        raise ValueError(
            f"quantities must match the regular expression "
            f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {text!r}"
        )
    try:
        number = Decimal(match[1])
    except InvalidOperation as exc:
        raise ValueError(f"invalid quantity {text!r}") from exc
    suffix = match[2]
    if suffix and suffix[0] in "eE":
        return number * Decimal(10) ** int(suffix[1:])
    return number * _FACTORS[suffix]


def millicores(text: object) -> int:
    return int(parse(text) * 1000)


def mebibytes(text: object) -> float:
    return float(parse(text) / Decimal(2**20))
