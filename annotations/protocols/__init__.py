"""Human-evaluation protocols: one class each, looked up by name (see base.py)."""

from annotations.protocols.base import AgreementSpec, Protocol  # noqa: F401
from annotations.protocols.registry import (  # noqa: F401
    PROTOCOLS,
    choices,
    get,
    label,
    names,
    of,
    option_union,
    protocols,
    register,
    setup_fields,
    setup_hints,
)
from annotations.protocols.rows import JudgementRow  # noqa: F401
