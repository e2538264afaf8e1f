"""`score --metric METRIC --hyp FILE [--ref FILE ...] [--src FILE] [--data FILE] [--option KEY=VALUE ...]
[--segments OUT.jsonl] [--skip-empty-refs] [--width N] [--json] [--list]`.

Scores plain text files the way sacrebleu's command line does, for any
registered metric, without touching the database:

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

from django.core.management.base import BaseCommand, CommandError

from metrics.score import (  # noqa: F401  (run_metric and tests import these from here)
    Progress,
    ScoreError,
    add_arguments,
    jsonable,
    parse_options,
    read_lines,
    read_triples,
    run,
)


class Command(BaseCommand):
    help = "Score plain text files with any metric (one segment a line), like sacrebleu's command line."
    # Pure computation: no database, so no system checks (they would query nothing useful).
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        add_arguments(parser)

    def handle(self, *args, **opts):
        try:
            run(opts, self.stdout, self.stderr)
        except ScoreError as exc:
            raise CommandError(str(exc)) from None
