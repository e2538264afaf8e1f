"""What a failed import reports: one `LineError` per problem, all in one `ImportFailed`."""

from __future__ import annotations

from dataclasses import dataclass

from workbench.exceptions import DomainError

MAX_REPORTED_ERRORS = 1000


@dataclass(frozen=True)
class LineError:
    line: int  # 1-based; 0 for a problem with the whole file
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}" if self.line else self.reason


class ImportFailed(DomainError):
    """Nothing was written; `errors` lists every problem found, by line."""

    def __init__(self, errors: list[LineError]):
        self.errors = errors
        super().__init__("; ".join(str(e) for e in errors[:5]) + (" ..." if len(errors) > 5 else ""))

    def messages(self) -> list[str]:
        return [str(e) for e in self.errors]

    def api_body(self) -> dict:
        return {"detail": self.api_detail(), "errors": self.messages()}


class Problems:
    """Collects line errors; keeps the first MAX_REPORTED_ERRORS and counts the rest."""

    def __init__(self, limit: int | None = MAX_REPORTED_ERRORS) -> None:
        # No limit where every refused line is written to a report (import_judgements --skip-invalid).
        self.limit = limit
        self.errors: list[LineError] = []
        self.hidden = 0

    def add(self, line: int, reason: str) -> None:
        if self.limit is None or len(self.errors) < self.limit:
            self.errors.append(LineError(line, reason))
        else:
            self.hidden += 1

    def __bool__(self) -> bool:
        return bool(self.errors)

    def raise_if_any(self) -> None:
        if self.errors:
            errors = sorted(self.errors, key=lambda e: e.line)
            if self.hidden:
                errors.append(LineError(0, f"... and {self.hidden} more problems not shown"))
            raise ImportFailed(errors)
