"""`python -m metrics.score --metric METRIC --hyp FILE [--ref FILE ...] [--src FILE] [--data FILE] [--option KEY=VALUE ...]
[--segments OUT.jsonl] [--skip-empty-refs] [--width N] [--json] [--list]`.

Scores plain text files the way sacrebleu's command line does, for any
registered metric, without touching the database and without setting up Django,
so that it starts as fast as sacrebleu's own CLI (`manage.py score` is the same
program behind the management command's name):

- one segment a line (split on "\\n" only; trailing whitespace removed, as
  sacrebleu does); `-` reads the hypotheses from stdin;
- each `--ref` file is one reference stream: several `--ref` files give each
  segment several references. An empty line is an empty reference, as in
  sacrebleu; with `--skip-empty-refs` it means "no reference from this file
  for this segment" (variable numbers of references), and a segment left
  without any reference is an error;
- `--data` is JSONL, one JSON list of [subject, predicate, object] triples a
  line (an empty line is an empty list);
- `--option KEY=VALUE` (repeatable) sets metric options, typed by the metric's defaults.

Long inputs are scored in chunks of `--chunk-size` segments (after the
metric's corpus state, e.g. its idf tables, is computed once over the whole
input, so the scores are those of one call) with progress on stderr:
done/total, rate and ETA. System-level metrics (distinct-n, ttr, self-bleu)
score the whole file in one call.

Output: with `--json`, `{"metric", "score", "signature", "segments", ...corpus extra}`;
otherwise one line `SIGNATURE = SCORE [details]`. `--segments OUT.jsonl` writes
`{"segment": i, "score": v, ...}` per input line, in order.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

from metrics.scorers import MetricError, available, get_metric
from metrics.scorers.base import Metric
from metrics.scorers.files import trusted_paths


class ScoreError(Exception):
    """Bad input: one line for the user, never a traceback."""


def read_lines(path: str, flag: str) -> list[str]:
    """Lines of a UTF-8 text file, as sacrebleu's CLI reads them."""
    try:
        if path == "-":
            stream = open(sys.stdin.fileno(), encoding="utf-8-sig", newline="\n", closefd=False)
        else:
            if not Path(path).is_file():
                raise ScoreError(f"{flag} {path}: no such file")
            stream = open(path, encoding="utf-8-sig", newline="\n")
        with stream:
            return [line.rstrip() for line in stream]
    except UnicodeDecodeError as exc:
        raise ScoreError(f"{flag} {path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ScoreError(f"{flag} {path}: {exc.strerror or exc}") from None


# Deeper than a list of triples needs; refused before the JSON parser can recurse.
_MAX_DATA_DEPTH = 8


def _nesting_depth(line: str) -> int:
    """Deepest bracket nesting outside JSON strings (a cheap pre-check)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in line:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def _has_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def read_triples(path: str) -> list[list[tuple[str, str, str]]]:
    """`--data` JSONL: one list of [subject, predicate, object] a line; any other
    line (not JSON, nested too deep, lone surrogates such as "\\ud800") is a `line N` error."""
    data = []
    for lineno, line in enumerate(read_lines(path, "--data"), 1):
        if not line.strip():
            data.append([])
            continue
        if _nesting_depth(line) > _MAX_DATA_DEPTH:
            raise ScoreError(
                f"--data {path} line {lineno}: nested deeper than {_MAX_DATA_DEPTH} levels; "
                "expected a list of [subject, predicate, object] string triples"
            )
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ScoreError(f"--data {path} line {lineno}: not JSON ({exc.msg})") from None
        except RecursionError:
            raise ScoreError(f"--data {path} line {lineno}: nested too deeply") from None
        if not isinstance(value, list) or not all(
            isinstance(t, list) and len(t) == 3 and all(isinstance(x, str) for x in t) for t in value
        ):
            raise ScoreError(
                f"--data {path} line {lineno}: expected a list of [subject, predicate, object] string triples"
            )
        if any(_has_lone_surrogate(x) for t in value for x in t):
            raise ScoreError(
                f"--data {path} line {lineno}: a string holds a lone surrogate (e.g. \\ud800), which is not text"
            )
        data.append([tuple(t) for t in value])
    return data


class Progress:
    """done/total, rate and ETA on stderr: redrawn in place on a terminal,
    one line every few seconds otherwise (logs)."""

    def __init__(self, stream, label: str, total: int) -> None:
        self.stream, self.label, self.total = stream, label, total
        self.start = self.last = time.monotonic()
        self.tty = bool(getattr(stream, "isatty", lambda: False)())

    def update(self, done: int) -> None:
        now = time.monotonic()
        if done < self.total and not self.tty and now - self.last < 5.0:
            return
        self.last = now
        elapsed = max(now - self.start, 1e-9)
        rate = done / elapsed
        eta = (self.total - done) / rate if rate > 0 else float("inf")
        eta_text = time.strftime("%H:%M:%S", time.gmtime(eta)) if math.isfinite(eta) else "?"
        line = (
            f"{self.label}: {done}/{self.total} segments ({100 * done / self.total:.0f}%), {rate:.1f}/s, ETA {eta_text}"
        )
        if self.tty:
            self.stream.write("\r" + line, ending="\n" if done >= self.total else "")
            self.stream.flush()
        else:
            self.stream.write(line)


def parse_options(pairs: list[str]) -> dict[str, str]:
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ScoreError(f"--option {pair!r}: expected KEY=VALUE")
        options[key.strip()] = value
    return options


def jsonable(value: Any) -> Any:
    """Plain JSON values: NaN/inf become null, numpy scalars and arrays plain numbers and lists."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "tolist"):  # numpy / torch scalars and arrays
        return jsonable(value.tolist())
    return value


def add_arguments(parser) -> None:
    """The flags, shared by `python -m metrics.score` and `manage.py score`."""
    parser.add_argument("--metric", help="metric name (see --list)")
    parser.add_argument("--hyp", help="system outputs, one segment a line ('-' for stdin)")
    parser.add_argument(
        "--ref",
        action="append",
        default=[],
        help="references, one file per reference stream; repeat for several references per segment",
    )
    parser.add_argument("--src", help="source texts, one a line (sari, yisi2, relbertscore ...)")
    parser.add_argument("--data", help="JSONL, one list of [subject, predicate, object] triples a line (nli)")
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="metric option (repeatable), e.g. --option tokenize=intl",
    )
    parser.add_argument("--segments", metavar="OUT.jsonl", help="write one JSON line per segment, in order")
    parser.add_argument(
        "--skip-empty-refs",
        action="store_true",
        help="an empty line in a --ref file means no reference there (default: an empty reference)",
    )
    parser.add_argument("--width", type=int, default=4, help="decimals in the text output (default 4)")
    parser.add_argument(
        "--chunk-size",
        type=int,
        default=1000,
        help="segments per scoring call; progress is shown when there is more than one",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    parser.add_argument("--json", action="store_true", help="print a JSON summary on stdout")
    parser.add_argument("--list", action="store_true", help="list the available metrics and exit")


def run(opts: dict, stdout, stderr) -> None:
    """Score as `opts` (the parsed flags) say; `stdout`/`stderr` take `write(text, ending="\\n")`.
    Bad input raises ScoreError with one line."""
    # The operator's own command on their own files: option paths need not lie in
    # WORKBENCH_DATA_DIRS / WORKBENCH_MODEL_DIRS (those guard runs that web users start).
    # They must still be regular files within WORKBENCH_METRIC_FILE_MAX_BYTES.

    with trusted_paths():
        _run(opts, stdout, stderr)


def _run(opts: dict, stdout, stderr) -> None:
    if opts["list"]:
        names = available()
        stdout.write(json.dumps({"metrics": names}) if opts["json"] else "\n".join(names))
        return
    if not opts["metric"]:
        raise ScoreError("--metric is required (see --list for the names)")
    if not opts["hyp"]:
        raise ScoreError("--hyp is required")
    try:
        metric = get_metric(opts["metric"], **parse_options(opts["option"]))
    except MetricError as exc:
        raise ScoreError(str(exc)) from None
    except ImportError as exc:  # a registered metric whose module or library is not installed
        raise ScoreError(f"metric {opts['metric']!r} cannot be loaded: {exc}") from None

    hyps = read_lines(opts["hyp"], "--hyp")
    if not hyps:
        raise ScoreError(f"--hyp {opts['hyp']}: no lines to score")
    n = len(hyps)

    def check_count(count: int, flag: str, path: str) -> None:
        if count != n:
            raise ScoreError(f"{flag} {path} has {count} lines but --hyp {opts['hyp']} has {n}")

    refs = None
    if opts["ref"]:
        streams = []
        for path in opts["ref"]:
            lines = read_lines(path, "--ref")
            check_count(len(lines), "--ref", path)
            streams.append(lines)
        skip = opts["skip_empty_refs"]
        refs = [[s[i] for s in streams if not (skip and s[i] == "")] for i in range(n)]
    elif metric.needs_refs:
        raise ScoreError(f"{metric.name} needs references: give one or more --ref files")

    srcs = None
    if opts["src"]:
        srcs = read_lines(opts["src"], "--src")
        check_count(len(srcs), "--src", opts["src"])
    elif metric.needs_source and "source" not in metric.optional_inputs:
        raise ScoreError(f"{metric.name} needs source texts: give --src FILE")

    data = None
    if opts["data"]:
        data = read_triples(opts["data"])
        check_count(len(data), "--data", opts["data"])
    elif metric.needs_data and "data" not in metric.optional_inputs:
        raise ScoreError(f"{metric.name} needs input data: give --data FILE (JSONL of triples)")

    if not 1 <= opts["chunk_size"] <= 1_000_000:
        raise ScoreError("--chunk-size must be from 1 to 1000000")
    if not 0 <= opts["width"] <= 20:
        raise ScoreError("--width must be from 0 to 20")
    try:
        # No segment file asked for: the corpus score from summed statistics where the metric has them.
        totals = None if opts["segments"] else _totals(metric, hyps, refs, srcs, data, opts, stderr)
        if totals is not None:
            corpus = metric.score_from_stats(totals)
        else:
            segments = _score(metric, hyps, refs, srcs, data, opts, stderr)
            corpus = metric.corpus_score(segments)
        signature = metric.signature()
    except MetricError as exc:
        raise ScoreError(str(exc)) from None
    if totals is None and len(segments) != n:  # a metric bug, but never write misaligned segment files
        raise ScoreError(f"{metric.name} returned {len(segments)} results for {n} segments")

    if opts["segments"]:
        _write_segments(opts["segments"], segments)

    if opts["json"]:
        summary = {k: v for k, v in corpus.extra.items() if k not in ("metric", "score", "signature", "segments")}
        summary = {"metric": metric.name, "score": corpus.score, "signature": signature, "segments": n, **summary}
        stdout.write(json.dumps(jsonable(summary), ensure_ascii=False))
    else:
        value = "nan" if not math.isfinite(corpus.score) else f"{corpus.score:.{opts['width']}f}"
        line = f"{signature} = {value}"
        if isinstance(corpus.extra.get("verbose"), str):
            line += f" {corpus.extra['verbose']}"
        stdout.write(line)


def _totals(metric, hyps, refs, srcs, data, opts, stderr) -> list[float] | None:
    """The corpus's summed statistics, chunk by chunk as `_score` goes; None when the metric has no
    such shortcut (`Metric.segment_totals`)."""

    if type(metric).segment_totals is Metric.segment_totals:  # before the corpus state, which may be costly
        return None
    metric.load_corpus_state(metric.corpus_state(hyps, refs, srcs, data))
    n, size = len(hyps), opts["chunk_size"]
    progress = None if opts["no_progress"] or n <= size else Progress(stderr, f"score {metric.name}", n)
    totals = None
    for end, inputs in _chunks(size, hyps, refs, srcs, data):
        chunk = metric.segment_totals(*inputs)
        if chunk is None:
            return None
        totals = chunk if totals is None else [a + b for a, b in zip(totals, chunk)]
        if progress is not None:
            progress.update(end)
    return totals


def _score(metric, hyps, refs, srcs, data, opts, stderr) -> list:
    """One call, or chunks after the corpus state is computed over everything
    (the contract of `Metric.corpus_state`: the same scores as one call)."""
    metric.load_corpus_state(metric.corpus_state(hyps, refs, srcs, data))
    n, size = len(hyps), opts["chunk_size"]
    # A metric comparing the outputs of an item (pairwise judge) sees them all at once.
    if metric.level == "system" or n <= size or getattr(metric, "needs_items", False):
        return metric.score(hyps, refs, srcs, data)
    progress = None if opts["no_progress"] else Progress(stderr, f"score {metric.name}", n)
    segments: list = []
    for _, inputs in _chunks(size, hyps, refs, srcs, data):
        segments.extend(metric.score(*inputs))
        if progress is not None:
            progress.update(len(segments))
    return segments


def _chunks(size: int, *inputs):
    """(end, the inputs' slices) for each run of `size` segments; an absent input (None) stays None."""
    n = len(inputs[0])
    for start in range(0, n, size):
        end = min(start + size, n)
        yield end, [None if values is None else values[start:end] for values in inputs]


def _write_segments(path: str, segments) -> None:
    try:
        with open(path, "w", encoding="utf-8") as out:
            for i, seg in enumerate(segments):
                row = {"segment": i, **{k: v for k, v in seg.as_dict().items() if k != "segment"}}
                out.write(json.dumps(jsonable(row), ensure_ascii=False) + "\n")
    except OSError as exc:
        raise ScoreError(f"--segments {path}: {exc.strerror or exc}") from None


class _Lines:
    """`write(text, ending="\\n")` over a text stream, as Django's OutputWrapper offers."""

    def __init__(self, stream) -> None:
        self.stream = stream

    def write(self, text: str, ending: str = "\n") -> None:
        self.stream.write(text if text.endswith(ending) else text + ending)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m metrics.score",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    opts = vars(parser.parse_args(argv))
    try:
        run(opts, _Lines(sys.stdout), _Lines(sys.stderr))
    except ScoreError as exc:
        sys.stderr.write(f"score: {exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
