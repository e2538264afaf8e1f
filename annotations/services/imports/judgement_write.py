"""Writing a judgement import: what is already stored, and the insert of what is new.

A judgement already stored with the same value (same score, winner,
best/worst) is skipped, so re-importing a file is a no-op; one stored with a
different value is a line error (found by `judgements_import`). The rows'
shape is the protocol's (`annotations.protocols.imports`).
"""

from __future__ import annotations

from annotations.models import Campaign
from annotations.protocols.base import Protocol
from annotations.services.imports.common import chunks
from annotations.services.imports.judgement_validate import JudgementRecord


def stored_judgements(campaign: Campaign, protocol: Protocol, annotator_ids: dict[str, int]) -> dict[tuple, tuple]:
    """unit -> value of the judgements already stored for the file's annotators."""
    names = {pk: name for name, pk in annotator_ids.items()}
    stored: dict[tuple, tuple] = {}
    for chunk in chunks(list(names), 10_000):
        stored.update(protocol.stored_for_import(campaign, {pk: names[pk] for pk in chunk}))
    return stored


def judgements_write(
    campaign: Campaign, protocol: Protocol, records: list[JudgementRecord], annotators: dict[str, int]
) -> None:
    protocol.import_write(campaign, records, annotators)
