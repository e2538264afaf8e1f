"""Export of validated datasets with provenance and a HEDS dataset card (see `service.py`)."""

from annotations.export.service import (
    FORMATS,
    ExportFailed,
    ExportOptions,
    ExportResult,
    export_dataset,
    export_options_check,
)

__all__ = ["FORMATS", "ExportFailed", "ExportOptions", "ExportResult", "export_dataset", "export_options_check"]
