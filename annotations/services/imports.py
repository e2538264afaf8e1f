"""Atomic imports of datasets and judgements (contract in ARCHITECTURE.md).

INTERFACE STUB, filled in by the imports work: every import is one
transaction; on any bad line nothing is written and `ImportFailed` carries
one `LineError` per problem.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from workbench.exceptions import DomainError


@dataclass(frozen=True)
class LineError:
    line: int  # 1-based; 0 for a problem with the whole file
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}" if self.line else self.reason


class ImportFailed(DomainError):
    def __init__(self, errors: list[LineError]):
        self.errors = errors
        super().__init__("; ".join(str(e) for e in errors[:5]) + (" ..." if len(errors) > 5 else ""))


@dataclass
class DatasetImportResult:
    dataset: object
    items: int
    outputs: int
    created: bool = True
    unchanged: bool = False
    extra: dict = field(default_factory=dict)


@dataclass
class JudgementImportResult:
    campaign: object
    judgements: int
    unchanged: bool = False


def dataset_import(
    *,
    stream: BinaryIO | Path,
    dataset_name: str,
    project_name: str | None = None,
    fmt: str | None = None,
    filename: str | None = None,
    user=None,
) -> DatasetImportResult:
    raise NotImplementedError


def judgements_import(*, stream: BinaryIO | Path, campaign_name: str, user=None) -> JudgementImportResult:
    raise NotImplementedError
