"""Writers of the exported tables: JSONL (also the Hugging Face data files) and CSV.

Rows are written as they come (nothing is kept); files are buffered by Python's io. A CSV table
flattens nested objects into dotted column names (`provenance.status`,
`human.fluency.mean`), writes lists as JSON text and neutralises cells that a spreadsheet would
run as a formula, header cells included (`csvsafe.SafeWriter`). Its header is taken from the first row: every row of a table has
the same keys.
"""

from __future__ import annotations

import json
from pathlib import Path

from annotations.export.csvsafe import SafeWriter


class JsonlTable:
    def __init__(self, path: Path):
        self.path = path
        self.rows = 0
        self._file = path.open("w", encoding="utf-8", newline="\n")

    def write(self, row: dict) -> None:
        self._file.write(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n")
        self.rows += 1

    def close(self) -> None:
        self._file.close()


class CsvTable:
    def __init__(self, path: Path, columns: list[str] | None = None):
        self.path = path
        self.rows = 0
        self._file = path.open("w", encoding="utf-8", newline="")
        self._writer = SafeWriter(self._file)
        self._columns = columns
        if columns is not None:
            self._writer.writerow(columns)

    def write(self, row: dict) -> None:
        flat = flatten(row)
        if self._columns is None:
            self._columns = list(flat)
            self._writer.writerow(self._columns)
        self._writer.writerow([cell(flat.get(column)) for column in self._columns])
        self.rows += 1

    def close(self) -> None:
        self._file.close()


def flatten(row: dict, prefix: str = "") -> dict:
    flat: dict = {}
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def cell(value) -> object:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    return value
