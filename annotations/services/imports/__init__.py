"""Atomic imports of datasets and judgements (contract in ARCHITECTURE.md).

Every import reads and checks the WHOLE file first, then writes in one
transaction: on any problem nothing is written and `ImportFailed` carries one
`LineError` per problem (line numbers are 1-based physical lines).

One module per concern:

- `reading`: bytes -> numbered JSON objects or CSV rows (parsing);
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
