"""What a successful import reports (the `--json` summaries of the commands)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class DatasetImportResult:
    dataset: object
    items: int  # items in the file
    outputs: int  # outputs in the file
    created: bool = True  # the dataset was created by this import
    unchanged: bool = False  # nothing new: the file was already imported
    extra: dict = field(default_factory=dict)  # *_created counts, sha256

    def as_json(self, detail: bool = False) -> dict:
        return {
            "dataset": self.dataset.name,
            "items": self.items,
            "outputs": self.outputs,
            "created": self.created,
            "unchanged": self.unchanged,
            **self.extra,
        }


@dataclass
class JudgementImportResult:
    campaign: object
    judgements: int  # judgements in the file
    unchanged: bool = False
    created: int = 0  # judgements written (the others were already stored)
    annotators_created: int = 0
    controls: int = 0  # lines flagged "control" (quality control), counted in `judgements` too
    skipped: list = field(default_factory=list)  # LineErrors left out (--skip-invalid only)

    def as_json(self, detail: bool = False) -> dict:
        """`detail`: with every refused line ("line N: reason"), for the API and the import page."""
        summary = {
            "campaign": self.campaign.name,
            "judgements": self.judgements,
            "created": self.created,
            "unchanged": self.unchanged,
            "annotators_created": self.annotators_created,
        }
        if self.controls:
            summary["controls"] = self.controls
        if self.skipped:
            summary["skipped_lines"] = len(self.skipped)
            if detail:
                summary["skipped"] = [str(e) for e in self.skipped]
        return summary
