"""`import_judgements FILE --campaign NAME [--format jsonl|mqm-tsv] [--map-annotator NAME=USERNAME ...]
[--skip-invalid [--report FILE]] [--json]`."""

import json
import sys
from pathlib import Path

from django.core.management.base import CommandError

from annotations.management.commands.import_dataset import report_failure
from annotations.services.imports import ImportFailed, judgements_import
from workbench.commands import DataCommand


class Command(DataCommand):
    help = "Atomically import judgements collected elsewhere (JSONL, one judgement a line)."

    def add_arguments(self, parser):
        parser.add_argument("file", help="JSONL file; '-' reads stdin")
        parser.add_argument("--campaign", required=True, help="campaign name")
        parser.add_argument(
            "--format",
            default="jsonl",
            choices=["jsonl", "mqm-tsv"],
            help="jsonl (default) or mqm-tsv: WMT's MQM ratings TSV (system doc doc_id seg_id "
            "rater source target category severity), for an MQM campaign",
        )
        parser.add_argument(
            "--map-annotator",
            action="append",
            default=[],
            metavar="NAME=USERNAME",
            help="the file's annotator NAME is the workbench account USERNAME (a project member); "
            "without it, imported names never attach to accounts",
        )
        parser.add_argument(
            "--skip-invalid",
            action="store_true",
            help="import the valid judgements and leave out the refused lines (by default one bad "
            "line fails the whole import); the refused lines go to --report with their reasons",
        )
        parser.add_argument(
            "--report",
            metavar="FILE",
            help="with --skip-invalid: where to write the refused lines, one 'line N: reason' each "
            "(default: FILE.refused.txt beside the input)",
        )
        parser.add_argument("--json", action="store_true", help="print a JSON summary on stdout")

    def handle(self, *args, **options):
        path = options["file"]
        if path == "-":
            stream = sys.stdin.buffer
        else:
            if not Path(path).is_file():
                raise CommandError(f"{path}: no such file")
            stream = Path(path)
        report = options["report"]
        if report and not options["skip_invalid"]:
            raise CommandError(
                "--report goes with --skip-invalid (without it, refused lines fail the import and are printed)"
            )
        if options["skip_invalid"] and not report:
            if path == "-":
                raise CommandError("--skip-invalid on stdin needs --report FILE")
            report = f"{path}.refused.txt"
        mapping = {}
        for entry in options["map_annotator"]:
            name, sep, username = entry.partition("=")
            if not sep or not name.strip() or not username.strip():
                raise CommandError(f"--map-annotator {entry!r}: expected NAME=USERNAME")
            mapping[name.strip()] = username.strip()
        try:
            result = judgements_import(
                stream=stream,
                campaign_name=options["campaign"],
                annotator_map=mapping,
                fmt=options["format"],
                skip_invalid=options["skip_invalid"],
            )
        except ImportFailed as exc:
            report_failure(self, exc, path)
        summary = result.as_json()
        if options["skip_invalid"]:
            # Never silent: every line left out is in the report, and the summary says how many.
            Path(report).write_text("".join(f"{e}\n" for e in result.skipped), encoding="utf-8")
            summary["skipped_lines"] = len(result.skipped)
            summary["report"] = str(report)
            if result.skipped:
                self.stderr.write(f"{len(result.skipped)} line(s) refused and left out: see {report}")
        if options["json"]:
            self.stdout.write(json.dumps(summary))
        else:
            state = "unchanged" if result.unchanged else "imported"
            self.stdout.write(
                f"{state}: campaign {summary['campaign']}: {summary['judgements']} judgements "
                f"({summary['created']} new)"
                + (
                    f"; {summary['skipped_lines']} line(s) left out, listed in {report}"
                    if options["skip_invalid"]
                    else ""
                )
            )
