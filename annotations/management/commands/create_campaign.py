"""`create_campaign --dataset NAME --name NAME --protocol likert|rankme|pairwise|bws --criteria a,b
[--scale MIN-MAX] [--redundancy K] [--instructions TEXT | --instructions-file F] [--json]`."""
import json
import re
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from annotations.models import Campaign, Dataset
from annotations.services.campaigns import campaign_create, criteria_parse, scale_parse


# Service fields -> the flags that set them, for error messages.
FLAGS = {"scale_min": "scale", "scale_max": "scale", "anchor_value": "anchor", "tuple_size": "tuple-size"}


class Command(BaseCommand):
    help = "Create an annotation campaign over a dataset."

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--name", required=True)
        parser.add_argument("--protocol", required=True, choices=Campaign.Protocol.values)
        parser.add_argument("--criteria", required=True, help="comma-separated, e.g. fluency,adequacy")
        parser.add_argument("--scale", help="MIN-MAX, e.g. 1-5, 0-100 or -3-3 (Likert; optional for RankME)")
        parser.add_argument("--redundancy", type=int, default=1, help="judgements wanted per unit")
        parser.add_argument("--anchor", type=float, help="RankME: magnitude of the anchor output")
        parser.add_argument("--tuple-size", type=int, default=4, help="best-worst: outputs per tuple")
        group = parser.add_mutually_exclusive_group()
        group.add_argument("--instructions", default="")
        group.add_argument("--instructions-file", help="UTF-8 text file holding the instructions")
        parser.add_argument("--json", action="store_true", help="print a JSON summary on stdout")

    def create_parser(self, prog_name, subcommand, **kwargs):
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        # argparse takes '-3-3' for an option: keep negative numbers as values.
        parser._negative_number_matcher = re.compile(r"^-\d[\d.]*(-+\d[\d.]*)?$")
        parser._has_negative_number_optionals = []
        return parser

    def handle(self, *args, **options):
        dataset = Dataset.objects.filter(name=options["dataset"]).first()
        if dataset is None:
            raise CommandError(f"no dataset called {options['dataset']!r}")
        instructions = options["instructions"]
        if options["instructions_file"]:
            try:
                instructions = Path(options["instructions_file"]).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise CommandError(f"--instructions-file: {exc}") from None
        try:
            scale = scale_parse(options["scale"]) if options["scale"] else (None, None)
            campaign = campaign_create(
                dataset=dataset, name=options["name"], protocol=options["protocol"],
                criteria=criteria_parse(options["criteria"]), scale_min=scale[0], scale_max=scale[1],
                redundancy=options["redundancy"], instructions=instructions, anchor_value=options["anchor"],
                tuple_size=options["tuple_size"],
            )
        except ValidationError as exc:
            if hasattr(exc, "error_dict"):
                messages = [f"--{FLAGS.get(k, k)}: {m}" for k, ms in exc.message_dict.items() for m in ms]
            else:
                messages = exc.messages
            for message in messages:
                self.stderr.write(message)
            raise CommandError(f"campaign {options['name']!r} not created") from None
        summary = {
            "campaign": campaign.name, "id": campaign.pk, "dataset": dataset.name, "protocol": campaign.protocol,
            "criteria": campaign.criteria, "scale": [campaign.scale_min, campaign.scale_max],
            "redundancy": campaign.redundancy,
        }
        if options["json"]:
            self.stdout.write(json.dumps(summary))
        else:
            self.stdout.write(f"created campaign {campaign.name} ({campaign.protocol}) on {dataset.name}")
