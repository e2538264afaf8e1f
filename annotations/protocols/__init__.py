"""Human-evaluation protocols: one class each, looked up by name (see base.py)."""
from annotations.protocols.base import AgreementSpec, JudgementRow, Protocol  # noqa: F401
from annotations.protocols.registry import choices, get, names, of, register, setup_fields  # noqa: F401
