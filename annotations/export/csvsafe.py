"""Spreadsheet formula neutralisation for CSV cells (OWASP "CSV injection").

A spreadsheet program treats a cell that starts with ``=``, ``+``, ``-`` or
``@`` (and, in some programs, a tab or a carriage return) as a formula and
runs it when the file is opened. Every such cell gets a leading apostrophe,
which spreadsheets display as "text" and hide; nothing else of the text
changes, so the original is the cell minus its first character. Numbers are
written as numbers (a negative score stays ``-3``, not text): only strings
are neutralised.

`SafeWriter`, `csv_text` and `csv_response` are the one CSV writer of the
workbench: every cell, header cells included, goes through `neutralise`.
"""

from __future__ import annotations

import csv
import io
import re
from urllib.parse import quote

from django.http import HttpResponse

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutralise(value: object) -> object:
    """The cell as written to CSV: strings that would start a formula get a leading apostrophe.

    >>> neutralise("=HYPERLINK(\\"http://x\\")")
    '\\'=HYPERLINK("http://x")'
    >>> neutralise(-3.5)
    -3.5
    """
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


class SafeWriter:
    """`csv.writer` that neutralises every cell it writes, header rows included.

    The one way the workbench writes CSV (downloads, exported tables, command
    output), so no column can be forgotten."""

    def __init__(self, file):
        self._writer = csv.writer(file)

    def writerow(self, row) -> None:
        self._writer.writerow([neutralise(value) for value in row])

    def writerows(self, rows) -> None:
        for row in rows:
            self.writerow(row)


def csv_text(header: list, rows) -> str:
    """A whole small CSV table as text, every cell neutralised."""
    buffer = io.StringIO()
    writer = SafeWriter(buffer)
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


def csv_response(filename: str, header: list, rows) -> HttpResponse:
    """A CSV download (`filename` without its .csv), every cell neutralised.

    The name comes from user data (a campaign's name): see `attachment_header`."""
    response = HttpResponse(csv_text(header, rows), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = attachment_header(f"{filename}.csv")
    return response


# Kept in the plain `filename=` fallback: what every client reads the same inside quotes.
_FALLBACK_UNSAFE = re.compile(r"[^A-Za-z0-9 ._()\[\]+-]")


def attachment_header(name: str) -> str:
    """`attachment; filename="ascii fallback"; filename*=UTF-8''percent-encoded` (RFC 6266,
    RFC 5987): a user-chosen name with quotes, backslashes, semicolons, CR/LF or non-ASCII
    letters can neither break the header nor the fallback, which browsers without filename*
    support read. Control characters become "_" in both."""
    name = _CONTROL.sub("_", name)[:200] or "download"
    fallback = _FALLBACK_UNSAFE.sub("_", name)
    encoded = quote(name, safe="")
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{encoded}"
