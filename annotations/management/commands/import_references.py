"""`import_references FILE --dataset NAME [--project NAME] [--json]`: add references to a dataset's
items, e.g. the post-edits of a post-edit campaign (`export_dataset`'s `references.jsonl`)."""

import json
import sys
from pathlib import Path

from django.core.management.base import CommandError

from annotations.management.commands.import_dataset import report_failure
from annotations.services.imports import ImportFailed
from annotations.services.references import references_import
from workbench.commands import DataCommand


class Command(DataCommand):
    help = (
        'Atomically add references to a dataset\'s items (JSONL: {"item", "reference"[, "provenance"]} '
        "a line); references an item already has are skipped."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="JSONL file (e.g. references.jsonl of export_dataset); '-' reads stdin")
        parser.add_argument("--dataset", required=True, help="dataset name")
        parser.add_argument("--project", default=None, help="project name, when several datasets share the name")
        parser.add_argument("--json", action="store_true", help="print a JSON summary on stdout")

    def handle(self, *args, **options):
        path = options["file"]
        if path == "-":
            stream = sys.stdin.buffer
        elif not Path(path).is_file():
            raise CommandError(f"{path}: no such file")
        else:
            stream = Path(path)
        try:
            result = references_import(stream=stream, dataset_name=options["dataset"], project_name=options["project"])
        except ImportFailed as exc:
            report_failure(self, exc, path)
        summary = result.as_json()
        if options["json"]:
            self.stdout.write(json.dumps(summary))
        else:
            self.stdout.write(
                f"dataset {summary['dataset']}: {summary['created']} reference(s) added, "
                f"{summary['skipped']} already there"
            )
