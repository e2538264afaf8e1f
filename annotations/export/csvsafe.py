"""Spreadsheet formula neutralisation for CSV cells (OWASP "CSV injection").

A spreadsheet program treats a cell that starts with ``=``, ``+``, ``-`` or
``@`` (and, in some programs, a tab or a carriage return) as a formula and
runs it when the file is opened. Every such cell gets a leading apostrophe,
which spreadsheets display as "text" and hide; nothing else of the text
changes, so the original is the cell minus its first character. Numbers are
written as numbers (a negative score stays ``-3``, not text): only strings
are neutralised.
"""
from __future__ import annotations

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
