"""Atomic imports of datasets and judgements (contract in ARCHITECTURE.md).

Every import reads, checks and writes the file in batches of lines inside one
transaction (memory does not grow with the file: JSONL and CSV/TSV are read a
line at a time; an MQM TSV's rows are grouped first, without their texts):
on any problem, even on the last line, nothing is written and `ImportFailed`
carries one `LineError` per problem (line numbers are 1-based physical lines).

One module per concern:

- `reading`: a binary file -> numbered lines, JSON objects or CSV rows, streamed (parsing);
- `dataset_parse`: the dataset formats (JSONL, wide CSV) -> item objects;
- `dataset_validate`, `judgement_validate`: each object -> a record or line errors;
- `dataset_write`, `judgement_write`: compare with what is stored, insert what is new;
- `datasets`, `judgements`: the services `dataset_import` / `judgements_import`
  tying the steps together in one transaction (and the dataset-name rule);
- `common`: checks both importers share; `errors`, `results`: what they report.
"""

from annotations.services.imports.datasets import DatasetNameTaken, dataset_import, dataset_name_check
from annotations.services.imports.errors import ImportFailed, LineError
from annotations.services.imports.judgements import judgements_import
from annotations.services.imports.results import DatasetImportResult, JudgementImportResult

__all__ = [
    "LineError",
    "ImportFailed",
    "DatasetNameTaken",
    "DatasetImportResult",
    "JudgementImportResult",
    "dataset_import",
    "dataset_name_check",
    "judgements_import",
]
