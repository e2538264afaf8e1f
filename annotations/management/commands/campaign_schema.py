"""`campaign_schema [--out FILE]`: the JSON Schema of campaign files (export_dataset's campaign.json,
create_campaign --from), generated from the protocols' option declarations."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotations.services.campaign_files import campaign_file_schema


def schema_text() -> str:
    return json.dumps(campaign_file_schema(), ensure_ascii=False, indent=2) + "\n"


class Command(BaseCommand):
    help = "Print the JSON Schema of campaign files (campaign.json)."

    def add_arguments(self, parser):
        parser.add_argument("--out", metavar="FILE", help="write it to FILE instead of stdout")

    def handle(self, *args, **options):
        text = schema_text()
        if options["out"]:
            try:
                Path(options["out"]).write_text(text, encoding="utf-8")
            except OSError as exc:
                raise CommandError(f"--out: {exc}") from None
        else:
            self.stdout.write(text, ending="")
