"""`import_dataset FILE --dataset NAME [--project NAME] [--format jsonl|csv|mqm-tsv] [--max-text-chars N] [--json]`."""

import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotations.services.imports import ImportFailed, dataset_import
from workbench.commands import DataCommand


class Command(DataCommand):
    help = "Atomically import items, references and system outputs from a JSONL or CSV file."

    def add_arguments(self, parser):
        parser.add_argument("file", help="JSONL (one item a line) or wide CSV file; '-' reads stdin")
        parser.add_argument("--dataset", required=True, help="dataset name (created if absent)")
        parser.add_argument("--project", help="project name (created if absent; 'default' when omitted)")
        parser.add_argument(
            "--format",
            choices=["jsonl", "csv", "mqm-tsv"],
            help="file format (default: from the extension); mqm-tsv: WMT's MQM ratings TSV, read "
            "for its items (seg_id, source) and outputs (system, target without <v> marks)",
        )
        parser.add_argument(
            "--max-text-chars", type=int, help="longest accepted text (default: settings.WORKBENCH_MAX_TEXT_CHARS)"
        )
        parser.add_argument("--json", action="store_true", help="print a JSON summary on stdout")

    def handle(self, *args, **options):
        if options["max_text_chars"] is not None and options["max_text_chars"] < 1:
            raise CommandError("--max-text-chars must be at least 1")
        path = options["file"]
        if path == "-":
            stream, filename = sys.stdin.buffer, None
        else:
            if not Path(path).is_file():
                raise CommandError(f"{path}: no such file")
            stream, filename = Path(path), path
        try:
            result = dataset_import(
                stream=stream,
                filename=filename,
                dataset_name=options["dataset"],
                project_name=options["project"],
                fmt=options["format"],
                max_text_chars=options["max_text_chars"],
            )
        except ImportFailed as exc:
            report_failure(self, exc, path)
        summary = result.as_json()
        if options["json"]:
            self.stdout.write(json.dumps(summary))
        else:
            state = "unchanged" if result.unchanged else "imported"
            self.stdout.write(
                f"{state}: dataset {summary['dataset']}: {summary['items']} items, "
                f"{summary['outputs']} outputs ({summary['items_created']} items and "
                f"{summary['outputs_created']} outputs new)"
            )


def report_failure(command: BaseCommand, exc: ImportFailed, path: str):
    """One `line N: reason` per problem on stderr, then a non-zero exit."""
    for error in exc.errors:
        command.stderr.write(str(error))
    raise CommandError(f"{path}: {len(exc.errors)} problem(s); nothing was imported")
