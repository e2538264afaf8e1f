"""`create_campaign --dataset NAME --name NAME --protocol likert|rankme|pairwise|bws|esa|cesa|mqm --criteria a,b
[--scale MIN-MAX] [--redundancy K] [--systems s1,s2] [--instructions TEXT | --instructions-file F]
[--typology FILE] [--mqm-weights "Major:5 Minor:1 ..."] [--json]`.

`create_campaign --wave-of CAMPAIGN --name NAME`: a second wave of CAMPAIGN (its settings and
units, annotators disjoint from its own)."""
import json
import re
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from annotations import protocols
from annotations.models import Campaign, Dataset
from annotations.protocols.mqm_scoring import TypologyError, typology_parse
from annotations.services.campaigns import campaign_create, criteria_parse, scale_parse
from annotations.services.waves import wave_create


# Service fields -> the flags that set them, for error messages.
FLAGS = {"scale_min": "scale", "scale_max": "scale", "anchor_value": "anchor", "tuple_size": "tuple-size",
         "units_per_batch": "units-per-batch", "pair_rounds": "pair-rounds",
         "assignment_timeout_minutes": "timeout-minutes", "allocation_params": "adaptive-*",
         "prefill_run": "prefill-run", "prefill_holdout": "prefill-holdout",
         "mqm_weights": "mqm-weights"}
ADAPTIVE_FLAGS = ("min_per_system", "alpha", "stable_checks", "check_every")


class Command(BaseCommand):
    help = "Create an annotation campaign over a dataset."

    def add_arguments(self, parser):
        parser.add_argument("--dataset", help="required unless --wave-of")
        parser.add_argument("--name", required=True)
        parser.add_argument("--protocol", choices=protocols.names(), help="required unless --wave-of")
        parser.add_argument("--criteria", help="comma-separated, e.g. fluency,adequacy (required unless --wave-of)")
        parser.add_argument("--wave-of", metavar="CAMPAIGN",
                            help="a second wave of CAMPAIGN: the same units and settings, other annotators")
        parser.add_argument("--scale", help="MIN-MAX, e.g. 1-5, 0-100 or -3-3 (Likert; optional for RankME; "
                                                "ESA defaults to 0-100)")
        parser.add_argument("--redundancy", type=int, default=1, help="annotators per unit (k)")
        parser.add_argument("--systems", help="comma-separated system names (default: all systems)")
        parser.add_argument("--anchor", type=float, help="RankME: magnitude of the anchor (default 100)")
        parser.add_argument("--tuple-size", type=int, help="best-worst: outputs per tuple (default 4); "
                                                           "RankME: outputs side by side, 3-5 (default 3); "
                                                           "cESA: outputs side by side, 2-5 (default 3)")
        parser.add_argument("--severities", help="ESA and cESA: comma-separated, from minor,major,critical "
                                                  "(default minor,major); MQM: from neutral,minor,major,critical "
                                                  "(default neutral,minor,major)")
        parser.add_argument("--typology", help="MQM: JSON file, a list of categories {name, key?, description?, "
                                                "children?} (default: WMT's MQM core typology)")
        parser.add_argument("--mqm-weights", help='MQM: e.g. "Major:5 Minor:1 Neutral:0 Major/Non-translation!:25 '
                                                   'Minor/Fluency/Punctuation:0.1" (the default; most specific '
                                                   "match wins, as mt-metrics-eval's score_mqm.py)")
        parser.add_argument("--units-per-batch", type=int, default=10)
        parser.add_argument("--pair-rounds", type=int, default=0,
                            help="pairwise: 0 = all pairs; r = r balanced rounds per item")
        parser.add_argument("--timeout-minutes", type=int, default=60,
                            help="an unfinished unit goes back to the pool after this")
        parser.add_argument("--show-reference", action="store_true", help="show the references to annotators")
        parser.add_argument("--hide-source", action="store_true", help="do not show the input to annotators")
        parser.add_argument("--seed", type=int, help="seed of the unit plan (default: random, recorded)")
        parser.add_argument("--allocation", choices=Campaign.Allocation.values, default="overlap-first",
                            help="how units are handed out: overlap-first (default: started units reach k "
                                 "first), spread (each annotator's own order), adaptive (only undecided "
                                 "system pairs, may stop early)")
        parser.add_argument("--adaptive-min-per-system", type=int,
                            help="adaptive: cold start, every system in this many judged units (default 10)")
        parser.add_argument("--adaptive-alpha", type=float,
                            help="adaptive: significance level of a decided pair (default 0.05)")
        parser.add_argument("--adaptive-stable-checks", type=int,
                            help="adaptive: stop after the ranking and clusters stayed the same this many "
                                 "checks (default 3)")
        parser.add_argument("--adaptive-check-every", type=int,
                            help="adaptive: units completed between two checks (default 20)")
        parser.add_argument("--prefill-run", type=int, metavar="RUN_ID",
                            help="ESA (span protocols): start from this done run's spans as suggestions "
                                 "(llm-judge spans mode, minwed/mincer errors, nli omitted facts)")
        parser.add_argument("--prefill-holdout", type=float, default=0.0, metavar="SHARE",
                            help="with --prefill-run: the random share of outputs shown without suggestions "
                                 "(0 to under 1, e.g. 0.2), to measure automation bias")
        group = parser.add_mutually_exclusive_group()
        parser.add_argument("--public-title", default="", help="the title annotators and crowd workers see "
                                                                "(default: the campaign's name)")
        group.add_argument("--instructions", default="")
        group.add_argument("--instructions-file", help="UTF-8 text file holding the instructions")
        parser.add_argument("--json", action="store_true", help="print a JSON summary on stdout")
        parser.add_argument("--no-progress", action="store_true",
                            help="no progress lines on stderr while the units are planned")

    def create_parser(self, prog_name, subcommand, **kwargs):
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        # argparse takes '-3-3' for an option: keep negative numbers as values.
        parser._negative_number_matcher = re.compile(r"^-\d[\d.]*(-+\d[\d.]*)?$")
        parser._has_negative_number_optionals = []
        return parser

    _shown = False

    def _progress(self, done: int, total: int) -> None:
        if total < 2 * 10_000:  # one batch or two: no bar
            return
        width = 30
        filled = width * done // total
        self.stderr.write(f"\rplanning units [{'#' * filled}{'.' * (width - filled)}] {done:,} / {total:,}",
                          ending="")
        self.stderr.flush()
        self._shown = True

    def handle(self, *args, **options):
        if options["wave_of"]:
            return self._wave(options)
        missing = [f"--{f}" for f in ("dataset", "protocol", "criteria") if not options[f]]
        if missing:
            raise CommandError(f"the following arguments are required: {', '.join(missing)} (or --wave-of)")
        dataset = Dataset.objects.filter(name=options["dataset"]).first()
        if dataset is None:
            raise CommandError(f"no dataset called {options['dataset']!r}")
        instructions = options["instructions"]
        if options["instructions_file"]:
            try:
                instructions = Path(options["instructions_file"]).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise CommandError(f"--instructions-file: {exc}") from None
        adaptive = {name: options[f"adaptive_{name}"] for name in ADAPTIVE_FLAGS
                     if options[f"adaptive_{name}"] is not None}
        typology = None
        if options["typology"]:
            try:
                typology = typology_parse(Path(options["typology"]).read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError) as exc:
                raise CommandError(f"--typology: {exc}") from None
            except TypologyError as exc:
                raise CommandError(f"--typology {options['typology']}: {exc}") from None
        try:
            scale = scale_parse(options["scale"]) if options["scale"] else (None, None)
            campaign = campaign_create(
                dataset=dataset, name=options["name"], protocol=options["protocol"],
                criteria=criteria_parse(options["criteria"]), scale_min=scale[0], scale_max=scale[1],
                redundancy=options["redundancy"], instructions=instructions, anchor_value=options["anchor"],
                public_title=options["public_title"],
                tuple_size=options["tuple_size"], systems=criteria_parse(options["systems"] or ""),
                severities=criteria_parse(options["severities"] or "") or None,
                units_per_batch=options["units_per_batch"], pair_rounds=options["pair_rounds"],
                assignment_timeout_minutes=options["timeout_minutes"], show_reference=options["show_reference"],
                show_source=not options["hide_source"], seed=options["seed"],
                allocation=options["allocation"], allocation_params=adaptive or None,
                # Planned here, whatever the size (no worker needed), with a progress line
                # (WORKBENCH_CAMPAIGN_MAX_UNITS still applies).
                plan="sync", progress=None if options["no_progress"] else self._progress,
                prefill_run=options["prefill_run"], prefill_holdout=options["prefill_holdout"],
                typology=typology, mqm_weights=options["mqm_weights"],
            )
        except ValidationError as exc:
            if hasattr(exc, "error_dict"):
                messages = [f"--{FLAGS.get(k, k)}: {m}" for k, ms in exc.message_dict.items() for m in ms]
            else:
                messages = exc.messages
            for message in messages:
                self.stderr.write(message)
            raise CommandError(f"campaign {options['name']!r} not created") from None
        if self._shown:
            self.stderr.write("")
        self._summary(campaign, options)

    def _wave(self, options):
        first = Campaign.objects.filter(name=options["wave_of"]).select_related("dataset", "wave_of").first()
        if first is None:
            raise CommandError(f"no campaign named {options['wave_of']!r}")
        fixed = [f"--{f.replace('_', '-')}" for f in ("dataset", "protocol", "criteria", "scale", "systems", "seed")
                 if options[f] not in (None, "")]
        if fixed:
            raise CommandError(f"a second wave takes every setting from {first.name!r}: leave out {', '.join(fixed)}")
        try:
            campaign = wave_create(first=first, name=options["name"])
        except ValidationError as exc:
            messages = [m for ms in getattr(exc, "message_dict", {"": exc.messages}).values() for m in ms]
            for message in messages:
                self.stderr.write(message)
            raise CommandError(f"second wave {options['name']!r} not created") from None
        self._summary(campaign, options)

    def _summary(self, campaign, options):
        dataset = campaign.dataset
        summary = {
            "campaign": campaign.name, "id": campaign.pk, "dataset": dataset.name, "protocol": campaign.protocol,
            "criteria": campaign.criteria, "scale": [campaign.scale_min, campaign.scale_max],
            "redundancy": campaign.redundancy, "systems": sorted(s.name for s in campaign.systems.all()),
            "units": campaign.units.count(), "seed": campaign.seed,
            "wave_of": campaign.wave_of.name if campaign.wave_of_id else None,
            "allocation": campaign.allocation, "allocation_params": campaign.allocation_params,
        }
        if campaign.prefilled:
            prefill = campaign.prefill
            summary["prefill"] = {"run": prefill.run_id, "metric": prefill.metric, "holdout": prefill.holdout,
                                  "held_back_outputs": len(prefill.held_back),
                                  "suggestions": campaign.span_suggestions.filter(held_back=False).count()}
        if campaign.mqm_weights:
            summary.update(severities=campaign.severities, mqm_weights=campaign.mqm_weights,
                           categories=len(campaign.typology))
        if options["json"]:
            self.stdout.write(json.dumps(summary))
        else:
            self.stdout.write(f"created campaign {campaign.name} ({campaign.protocol}) on {dataset.name}"
                              + (f", second wave of {campaign.wave_of.name}" if campaign.wave_of_id else ""))
