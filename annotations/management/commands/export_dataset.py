"""`export_dataset --campaign NAME --format jsonl|csv|hf|mtme|preferences --out DIR [--real-annotator-ids] [filters] [--json]`."""

import json
import sys
from pathlib import Path

from django.core.management.base import CommandError

from annotations.export import FORMATS, ExportFailed, ExportOptions, export_dataset
from annotations.models import Campaign
from workbench.commands import DataCommand


def _names(value: str | None) -> list[str] | None:
    if not value:
        return None
    return [name.strip() for name in value.split(",") if name.strip()] or None


class Command(DataCommand):
    help = (
        "Export a campaign's validated judgements, outputs and items with a HEDS 3.0 dataset card, heds.json "
        "(the HEDS form's JSON) and croissant.json (Croissant 1.1 + RAI); --format mtme writes an "
        "mt-metrics-eval test set, --format preferences chosen/rejected pairs."
    )

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True)
        parser.add_argument(
            "--format",
            default="jsonl",
            choices=FORMATS,
            help="jsonl, csv or hf (tables and card); mtme: mt-metrics-eval's data layout under OUT/<campaign>/; "
            "preferences: chosen/rejected pairs (pairwise, best-worst, RankME, cESA)",
        )
        parser.add_argument("--out", required=True, help="folder to write (created; must be empty)")
        parser.add_argument(
            "--real-annotator-ids", action="store_true", help="annotator ids as stored instead of pseudonyms"
        )
        parser.add_argument("--included-only", action="store_true", help="only annotators included by quality control")
        parser.add_argument("--min-consensus", type=float, help="only items whose consensus is at least X (0-1)")
        parser.add_argument(
            "--complete-units-only", action="store_true", help="only units judged by at least k (redundancy) annotators"
        )
        parser.add_argument("--systems", help="comma-separated subset of the campaign's systems")
        parser.add_argument("--criteria", help="comma-separated subset of the campaign's criteria")
        parser.add_argument(
            "--licence",
            "--license",
            dest="licence",
            default="",
            help="licence of the exported data, e.g. cc-by-4.0 (goes into the card)",
        )
        parser.add_argument(
            "--chunk-items",
            type=int,
            help="items read per chunk (default: about 10,000 judgements' worth, at most 500)",
        )
        parser.add_argument(
            "--annotator-figures",
            action="store_true",
            help="add annotators.jsonl (or .csv): quality-control inclusion and reliability per "
            "annotator; the same in every export, so it links the pseudonyms of two exports",
        )
        parser.add_argument("--json", action="store_true", help="print a JSON summary on stdout")

    def handle(self, *args, **options):
        campaign = Campaign.objects.select_related("dataset__project").filter(name=options["campaign"].strip()).first()
        if campaign is None:
            raise CommandError(f"no campaign called {options['campaign']!r}")
        export_options = ExportOptions(
            fmt=options["format"],
            real_annotator_ids=options["real_annotator_ids"],
            included_only=options["included_only"],
            min_consensus=options["min_consensus"],
            complete_units_only=options["complete_units_only"],
            systems=_names(options["systems"]),
            criteria=_names(options["criteria"]),
            licence=options["licence"],
            chunk_items=options["chunk_items"],
            annotator_figures=options["annotator_figures"],
        )

        def progress(fraction: float) -> None:
            sys.stderr.write(f"\rexporting: {100 * fraction:5.1f}%")
            sys.stderr.flush()

        try:
            result = export_dataset(
                campaign=campaign,
                out=Path(options["out"]),
                options=export_options,
                progress=progress if options["verbosity"] >= 1 else None,
            )
        except ExportFailed as exc:
            for problem in exc.problems[:-1]:
                self.stderr.write(problem)
            raise CommandError(exc.problems[-1]) from None
        if options["verbosity"] >= 1:
            sys.stderr.write("\n")
        if options["json"]:
            self.stdout.write(json.dumps(result.as_json()))
        else:
            self.stdout.write(
                f"exported {result.judgements} judgements and {result.outputs} outputs of "
                f"{campaign.name} to {result.out}"
            )
