"""`create_campaign --dataset NAME --name NAME --protocol likert|rankme|pairwise|bws|esa|cesa|mqm --criteria a,b
[--scale MIN-MAX] [--redundancy K] [--systems s1,s2] [--instructions TEXT | --instructions-file F]
[--option KEY=VALUE ...] [--json]`: the protocol's own settings (annotations.protocols.options) with
`--option`, or their older flags (`--anchor`, `--tuple-size`, `--severities`, `--typology FILE`,
`--mqm-weights`, `--pair-rounds`), generated from the protocols' declarations.

`create_campaign --from campaign.json [--name NAME] [--dataset NAME]`: the campaign a campaign file
(export_dataset's campaign.json) describes (annotations.services.campaign_files).

`create_campaign --wave-of CAMPAIGN --name NAME`: a second wave of CAMPAIGN (its settings and
units, annotators disjoint from its own)."""

import json
import re
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import CommandError

from annotations import protocols
from annotations.models import Campaign, Dataset
from annotations.protocols.options import JSON, OptionError, options_it_has
from annotations.services.campaign_files import campaign_create_from_file
from annotations.services.campaigns import campaign_create, criteria_parse, scale_parse
from annotations.services.waves import wave_create
from workbench.commands import DataCommand

# Service fields -> the flags that set them, for error messages.
FLAGS = {
    "scale_min": "scale",
    "scale_max": "scale",
    "units_per_batch": "units-per-batch",
    "assignment_timeout_minutes": "timeout-minutes",
    "allocation_params": "adaptive-*",
    "prefill_run": "prefill-run",
    "prefill_holdout": "prefill-holdout",
}
ADAPTIVE_FLAGS = ("min_per_system", "alpha", "stable_checks", "check_every")


class Command(DataCommand):
    help = "Create an annotation campaign over a dataset."

    def add_arguments(self, parser):
        parser.add_argument("--dataset", help="required unless --wave-of")
        parser.add_argument("--name", help="required unless --from")
        parser.add_argument("--protocol", choices=protocols.names(), help="required unless --wave-of or --from")
        parser.add_argument("--criteria", help="comma-separated, e.g. fluency,adequacy (required unless --wave-of)")
        parser.add_argument(
            "--wave-of",
            metavar="CAMPAIGN",
            help="a second wave of CAMPAIGN: the same units and settings, other annotators",
        )
        parser.add_argument(
            "--scale", help="MIN-MAX, e.g. 1-5, 0-100 or -3-3 (Likert; optional for RankME; ESA defaults to 0-100)"
        )
        parser.add_argument("--redundancy", type=int, default=1, help="annotators per unit (k)")
        parser.add_argument("--systems", help="comma-separated system names (default: all systems)")
        parser.add_argument(
            "--option",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="a setting of the protocol (repeatable): numbers as numbers, lists "
            "comma-separated, JSON for JSON values (@FILE reads the value from FILE); "
            "see `campaign_schema` or docs/reference/campaign-files.md",
        )
        parser.add_argument(
            "--from",
            dest="from_file",
            metavar="FILE",
            help="create the campaign a campaign file describes (export_dataset's "
            "campaign.json); --name and --dataset replace the file's",
        )
        # The older flags of the protocols' options, from their declarations.
        for option in protocols.option_union():
            if option.flag:
                users = [(p, protocols.get(p).option_declared(option.name)) for p in protocols.names()]
                helps = dict.fromkeys(f"{name}: {o.help}" for name, o in users if o is not None)
                parser.add_argument(
                    f"--{option.flag}",
                    dest=f"option_{option.name}",
                    metavar="FILE" if option.type == JSON else "VALUE",
                    help=f"{' '.join(helps)} (same as --option "
                    f"{option.name}={'@FILE' if option.type == JSON else 'VALUE'})",
                )
        parser.add_argument("--units-per-batch", type=int, default=10)
        parser.add_argument(
            "--timeout-minutes", type=int, default=60, help="an unfinished unit goes back to the pool after this"
        )
        parser.add_argument("--show-reference", action="store_true", help="show the references to annotators")
        parser.add_argument("--hide-source", action="store_true", help="do not show the input to annotators")
        parser.add_argument("--seed", type=int, help="seed of the unit plan (default: random, recorded)")
        parser.add_argument(
            "--allocation",
            choices=Campaign.Allocation.values,
            default="overlap-first",
            help="how units are handed out: overlap-first (default: started units reach k "
            "first), spread (each annotator's own order), adaptive (only undecided "
            "system pairs, may stop early)",
        )
        parser.add_argument(
            "--adaptive-min-per-system",
            type=int,
            help="adaptive: cold start, every system in this many judged units (default 10)",
        )
        parser.add_argument(
            "--adaptive-alpha", type=float, help="adaptive: significance level of a decided pair (default 0.05)"
        )
        parser.add_argument(
            "--adaptive-stable-checks",
            type=int,
            help="adaptive: stop after the ranking and clusters stayed the same this many checks (default 3)",
        )
        parser.add_argument(
            "--adaptive-check-every", type=int, help="adaptive: units completed between two checks (default 20)"
        )
        parser.add_argument(
            "--prefill-run",
            type=int,
            metavar="RUN_ID",
            help="ESA (span protocols): start from this done run's spans as suggestions "
            "(llm-judge spans mode, minwed/mincer errors, nli omitted facts)",
        )
        parser.add_argument(
            "--prefill-holdout",
            type=float,
            default=0.0,
            metavar="SHARE",
            help="with --prefill-run: the random share of outputs shown without suggestions "
            "(0 to under 1, e.g. 0.2), to measure automation bias",
        )
        group = parser.add_mutually_exclusive_group()
        parser.add_argument(
            "--public-title",
            default="",
            help="the title annotators and crowd workers see (default: the campaign's name)",
        )
        group.add_argument("--instructions", default="")
        group.add_argument("--instructions-file", help="UTF-8 text file holding the instructions")
        parser.add_argument("--json", action="store_true", help="print a JSON summary on stdout")
        parser.add_argument(
            "--no-progress", action="store_true", help="no progress lines on stderr while the units are planned"
        )

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
        self.stderr.write(f"\rplanning units [{'#' * filled}{'.' * (width - filled)}] {done:,} / {total:,}", ending="")
        self.stderr.flush()
        self._shown = True

    def handle(self, *args, **options):
        if options["wave_of"]:
            if not options["name"]:
                raise CommandError("the following arguments are required: --name")
            return self._wave(options)
        if options["from_file"]:
            return self._from_file(options)
        if not options["name"]:
            raise CommandError("the following arguments are required: --name (or --from)")
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
        adaptive = {
            name: options[f"adaptive_{name}"] for name in ADAPTIVE_FLAGS if options[f"adaptive_{name}"] is not None
        }
        given = self._options(options)
        try:
            scale = scale_parse(options["scale"]) if options["scale"] else (None, None)
            campaign = campaign_create(
                dataset=dataset,
                name=options["name"],
                protocol=options["protocol"],
                criteria=criteria_parse(options["criteria"]),
                scale_min=scale[0],
                scale_max=scale[1],
                redundancy=options["redundancy"],
                instructions=instructions,
                options=given,
                public_title=options["public_title"],
                systems=criteria_parse(options["systems"] or ""),
                units_per_batch=options["units_per_batch"],
                assignment_timeout_minutes=options["timeout_minutes"],
                show_reference=options["show_reference"],
                show_source=not options["hide_source"],
                seed=options["seed"],
                allocation=options["allocation"],
                allocation_params=adaptive or None,
                # Planned here, whatever the size (no worker needed), with a progress line
                # (WORKBENCH_CAMPAIGN_MAX_UNITS still applies).
                plan="sync",
                progress=None if options["no_progress"] else self._progress,
                prefill_run=options["prefill_run"],
                prefill_holdout=options["prefill_holdout"],
            )
        except ValidationError as exc:
            self._refused(exc, options["name"])
        if self._shown:
            self.stderr.write("")
        self._summary(campaign, options)

    def _refused(self, exc: ValidationError, name):
        if hasattr(exc, "error_dict"):
            # Options' messages name themselves ("options.tuple_size: ..."); the others get their flag.
            messages = [
                m if k == "options" else f"--{FLAGS.get(k, k.replace('_', '-'))}: {m}"
                for k, ms in exc.message_dict.items()
                for m in ms
            ]
        else:
            messages = exc.messages
        for message in messages:
            self.stderr.write(message)
        raise CommandError(f"campaign {name!r} not created") from None

    def _options(self, options) -> dict:
        """The protocol's options from `--option KEY=VALUE` and the older flags, as given (text);
        typed and checked by the protocol's declaration."""
        protocol = protocols.get(options["protocol"])
        texts: dict[str, tuple[str, str]] = {}
        for option in protocols.option_union():
            if options.get(f"option_{option.name}") is not None:
                texts[option.name] = (f"--{option.flag}", options[f"option_{option.name}"])
                if option.type == JSON:  # the flag names a file
                    texts[option.name] = (f"--{option.flag}", "@" + options[f"option_{option.name}"])
        for pair in options["option"]:
            key, sep, value = pair.partition("=")
            if not sep or not key.strip():
                raise CommandError(f"--option {pair!r}: expected KEY=VALUE")
            texts[key.strip()] = (f"--option {key.strip()}", value)
        given, problems = {}, []
        for key, (where, text) in texts.items():
            declared = protocol.option_declared(key)
            if declared is None:
                problems.append(
                    f"options.{key} ({where}): "
                    + (
                        protocol.option_refusal(key)
                        or f"not a setting of {protocol.name} campaigns ({options_it_has(protocol.options)})"
                    )
                )
                continue
            if text.startswith("@"):
                try:
                    text = Path(text[1:]).read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError) as exc:
                    problems.append(f"options.{key} ({where}): {exc}")
                    continue
            try:
                given[key] = declared.parse_text(text)
            except OptionError as exc:
                problems.append(f"options.{key} ({where}): {exc}")
        if problems:
            for problem in problems:
                self.stderr.write(problem)
            raise CommandError(f"campaign {options['name']!r} not created")
        return given

    def _from_file(self, options):
        ignored = [
            f"--{f.replace('_', '-')}"
            for f in ("protocol", "criteria", "scale", "systems", "seed")
            if options[f] not in (None, "")
        ] + [f"--{o.flag}" for o in protocols.option_union() if o.flag and options.get(f"option_{o.name}") is not None]
        if options["option"]:
            ignored.append("--option")
        if ignored:
            raise CommandError(
                f"--from takes every setting from the file (edit it to change one): leave out {', '.join(ignored)}"
            )
        try:
            config = json.loads(Path(options["from_file"]).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"--from: {exc}") from None
        except json.JSONDecodeError as exc:
            raise CommandError(
                f"--from {options['from_file']}: line {exc.lineno} column {exc.colno}: {exc.msg}"
            ) from None
        name = options["name"] or (config.get("name") if isinstance(config, dict) else None)
        try:
            campaign = campaign_create_from_file(
                config=config,
                datasets=Dataset.objects.all(),
                name=options["name"],
                dataset=options["dataset"],
                plan="sync",
                progress=None if options["no_progress"] else self._progress,
            )
        except ValidationError as exc:
            self._refused(exc, name)
        if self._shown:
            self.stderr.write("")
        self._summary(campaign, options)

    def _wave(self, options):
        first = Campaign.objects.filter(name=options["wave_of"]).select_related("dataset", "wave_of").first()
        if first is None:
            raise CommandError(f"no campaign named {options['wave_of']!r}")
        fixed = [
            f"--{f.replace('_', '-')}"
            for f in ("dataset", "protocol", "criteria", "scale", "systems", "seed")
            if options[f] not in (None, "")
        ] + (["--from"] if options["from_file"] else [])
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
            "campaign": campaign.name,
            "id": campaign.pk,
            "dataset": dataset.name,
            "protocol": campaign.protocol,
            "criteria": campaign.criteria,
            "scale": [campaign.scale_min, campaign.scale_max],
            "redundancy": campaign.redundancy,
            "systems": sorted(s.name for s in campaign.systems.all()),
            "units": campaign.units.count(),
            "seed": campaign.seed,
            "wave_of": campaign.wave_of.name if campaign.wave_of_id else None,
            "allocation": campaign.allocation,
            "allocation_params": campaign.allocation_params,
        }
        if campaign.prefilled:
            prefill = campaign.prefill
            summary["prefill"] = {
                "run": prefill.run_id,
                "metric": prefill.metric,
                "holdout": prefill.holdout,
                "held_back_outputs": len(prefill.held_back),
                "suggestions": campaign.span_suggestions.filter(held_back=False).count(),
            }
        protocol = protocols.of(campaign)
        summary["options"] = {o.name: protocol.option(campaign, o.name) for o in protocol.options}
        if options["json"]:
            self.stdout.write(json.dumps(summary))
        else:
            self.stdout.write(
                f"created campaign {campaign.name} ({campaign.protocol}) on {dataset.name}"
                + (f", second wave of {campaign.wave_of.name}" if campaign.wave_of_id else "")
            )
