"""`manage.py score`: the same program as `python -m metrics.score` (see there for the flags, the
input rules and the output), under the management command's name. The light entry point starts
without Django, so its start-up is sacrebleu's."""

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
