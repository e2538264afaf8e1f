"""Parsing: import files, read a line at a time, into numbered JSON objects or CSV rows, one
error per bad line.

Kept free of database access; the importers check and write what these yield batch by batch.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from annotations.services.imports.errors import Problems
from workbench import strictjson

# Called now and then with the fraction of the file read so far (0-1).
Progress = Callable[[float], None] | None
PROGRESS_EVERY = 5000  # lines


def json_loads(text: str):
    """Strict JSON (`workbench.strictjson`): no deep nesting, duplicate keys,
    out-of-range numbers or lone surrogates; each is a `ValueError`."""
    return strictjson.loads(text)


def decoded_lines(stream, problems: Problems, *, hasher=None, progress: Progress = None) -> Iterator[tuple[int, str]]:
    """Physical lines of a binary file read one at a time, as (1-based number, text without its
    line end); a line that is not UTF-8 becomes an error.

    `stream` is a binary file (or a text one, already decoded); every byte read goes into
    `hasher` when given (the file's sha256). Lines end at LF only (a lone CR stays in its line).
    """
    size = _size_of(stream)
    read = 0
    number = 0
    while True:
        chunk = stream.readline()
        if not chunk:
            return
        if isinstance(chunk, str):
            chunk = chunk.encode("utf-8")
        if hasher is not None:
            hasher.update(chunk)
        if progress and size and number % PROGRESS_EVERY == 0:
            # The share read before this line: 0 first, never 1 until done.
            progress(min(1.0, read / size))
        read += len(chunk)
        number += 1
        if number == 1 and chunk.startswith(b"\xef\xbb\xbf"):
            chunk = chunk[3:]
        if chunk.endswith(b"\n"):
            chunk = chunk[:-1]
        if chunk.endswith(b"\r"):
            chunk = chunk[:-1]
        try:
            text = chunk.decode("utf-8")
        except UnicodeDecodeError as exc:
            bad = chunk[exc.start : exc.start + 1]
            problems.add(
                number, f"not valid UTF-8 (byte 0x{bad.hex()} at byte {exc.start + 1}); save the file as UTF-8"
            )
            continue
        yield number, text


def jsonl_stream(stream, problems: Problems, *, hasher=None, progress: Progress = None) -> Iterator[tuple[int, dict]]:
    """One JSON object a line, read one line at a time, so memory does not grow with the file;
    blank lines are skipped. `stream` and `hasher` as for `decoded_lines`: lines end at LF only
    (a lone CR stays in its line).
    """
    for number, text in decoded_lines(stream, problems, hasher=hasher, progress=progress):
        if not text.strip():
            continue
        try:
            value = json_loads(text)
        except ValueError as exc:
            problems.add(number, f"invalid JSON: {exc}")
            continue
        if not isinstance(value, dict):
            problems.add(number, f"expected a JSON object, got {type(value).__name__}")
            continue
        yield number, value


def _size_of(stream) -> int | None:
    """The file's size in bytes, for progress; None when it cannot be known (stdin)."""
    size = getattr(stream, "size", None)
    if isinstance(size, int):
        return size
    try:
        return os.fstat(stream.fileno()).st_size or None
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        pass
    try:
        return stream.getbuffer().nbytes  # BytesIO
    except (AttributeError, ValueError):
        return None


def csv_stream(
    stream, problems: Problems, *, hasher=None, delimiter: str = ",", progress: Progress = None
) -> Iterator[tuple[int, list[str] | dict]]:
    """A CSV file read one record at a time: first (line, header), then (line, row dict) for each
    row, each numbered by the line it starts on (memory does not grow with the file).

    Problems: a duplicate column, a row with another number of
    columns, malformed CSV, an empty file. After a line that is not UTF-8 no more records are
    parsed (they cannot be split reliably), but the rest of the file is still read for its other
    undecodable lines and its hash.
    """
    lines = decoded_lines(stream, problems, hasher=hasher, progress=progress)

    def texts() -> Iterator[str]:
        expected = 1
        for number, text in lines:
            if number != expected:
                return  # `decoded_lines` left out an undecodable line: stop splitting records
            expected += 1
            # The lines as `io.StringIO(text, newline="")` gave them to the csv module: a lone CR
            # also ends one there.
            if "\r" in text:
                *parts, last = text.split("\r")
                yield from (part + "\r" for part in parts)
                yield last + "\n"
            else:
                yield text + "\n"

    reader = csv.reader(texts(), delimiter=delimiter, strict=True)
    header: list[str] = []
    start = 1
    try:
        for record in reader:
            number = start
            start = reader.line_num + 1
            if not header:
                header = [h.strip() for h in record]
                if len(set(header)) != len(header):
                    dupes = sorted({h for h in header if header.count(h) > 1})
                    problems.add(number, f"duplicate column {', '.join(dupes)}")
                if header:
                    yield number, header
                continue
            if not any(cell.strip() for cell in record):
                continue
            if len(record) != len(header):
                problems.add(number, f"expected {len(header)} columns as in the header, got {len(record)}")
                continue
            yield number, dict(zip(header, record))
    except csv.Error as exc:
        problems.add(start, f"malformed CSV: {exc}")
    for _ in lines:
        pass  # the rest of the file: its undecodable lines and its hash
    if not header and not problems:
        problems.add(0, "the file is empty: expected a header line")


def has_nul(value) -> bool:
    """PostgreSQL text and jsonb cannot hold U+0000."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(has_nul(k) or has_nul(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(has_nul(v) for v in value)
    return False


@contextmanager
def opened(stream: BinaryIO | Path | str | bytes):
    """A binary file to read `stream` (a file, a path or bytes) from, closed afterwards when opened here."""
    if isinstance(stream, bytes):
        yield io.BytesIO(stream)
    elif isinstance(stream, (str, Path)):
        with open(stream, "rb") as file:
            yield file
    else:
        yield stream
