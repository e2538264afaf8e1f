"""`quality --campaign NAME [--json]`: per-annotator reliability and inclusion.

Also, in one place for scripts:
  --set KEY=VALUE ...          quality settings and exclusion rules, e.g. degraded_share=0.1
                               repeat_share=0.05 degrade_kinds=drop,fact degrade_strength=0.3
                               completion_codes=true max_p=0.01 min_controls_passed=0.8
                               min_median_seconds=3 exclude_straight_lining=false (none = rule off)
  --exclude NAME / --include NAME / --use-rules NAME  with --reason TEXT: decide by hand
  --gold FILE                  add gold / tutorial units from JSONL (atomic, `line N: reason`)
  --codes [--out FILE]         the completion codes issued, as CSV
  --verify-code CODE           whose code it is and whether it is a pass code
"""

import io
import json
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import CommandError
from django.db import transaction

from annotations.export.csvsafe import SafeWriter
from annotations.models import Annotator, Campaign
from annotations.quality import selectors, services
from annotations.quality.rules import Rules
from workbench.commands import DataCommand
from workbench.exceptions import DomainError

SETTINGS = {"degraded_share", "repeat_share", "degrade_kinds", "degrade_strength", "completion_codes"}
RULES = set(Rules().as_dict())


def _value(key: str, raw: str):
    text = raw.strip()
    if key == "degrade_kinds":
        return [k.strip() for k in text.split(",") if k.strip()]
    if text.lower() in ("none", "off", "null", ""):
        return None
    if text.lower() in ("true", "yes", "on"):
        return True
    if text.lower() in ("false", "no"):
        return False
    try:
        number = float(text)
    except ValueError:
        raise CommandError(f"--set {key}={raw}: not a number, true/false or none") from None
    return int(number) if key == "min_degraded" and number.is_integer() else number


def annotator_labels(annotators) -> dict[int, str]:
    """Names, with the namespace added where an account and an imported worker share one."""
    annotators = list(annotators)
    counts: dict[str, int] = {}
    for a in annotators:
        counts[a.name] = counts.get(a.name, 0) + 1
    return {
        a.pk: a.name if counts[a.name] == 1 else f"{a.name} ({getattr(a, 'namespace', 'import')})" for a in annotators
    }


class Command(DataCommand):
    help = "Per-annotator reliability (controls, self-consistency, time, agreement), inclusion and codes."

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--json", action="store_true", help="print the figures as JSON on stdout")
        parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
        decide = parser.add_mutually_exclusive_group()
        decide.add_argument("--exclude", metavar="ANNOTATOR")
        decide.add_argument("--include", metavar="ANNOTATOR")
        decide.add_argument("--use-rules", metavar="ANNOTATOR", help="drop the hand decision")
        parser.add_argument("--reason", default="")
        parser.add_argument("--gold", metavar="FILE", help="JSONL of gold / tutorial units")
        parser.add_argument("--codes", action="store_true", help="list the completion codes issued (CSV)")
        parser.add_argument("--out", help="with --codes: write the CSV here instead of stdout")
        parser.add_argument("--verify-code", metavar="CODE")

    def handle(self, *args, **options):
        campaign = Campaign.objects.select_related("dataset__project").filter(name=options["campaign"]).first()
        if campaign is None:
            raise CommandError(f"no campaign called {options['campaign']!r}")
        try:
            with transaction.atomic():
                self._changes(campaign, options)
        except ValidationError as exc:
            for message in exc.messages:
                self.stderr.write(message)
            raise CommandError("nothing was changed") from None
        except DomainError as exc:
            for error in getattr(exc, "errors", [exc]):
                self.stderr.write(str(error))
            raise CommandError("nothing was changed") from None

        if options["verify_code"]:
            result = services.completion_code_check(campaign=campaign, code=options["verify_code"])
            if options["json"]:
                self.stdout.write(json.dumps(result))
            elif result["verdict"] is None:
                self.stdout.write(f"{result['code']}: not a code of campaign {campaign.name}")
            else:
                self.stdout.write(
                    f"{result['code']}: {result['verdict'].upper()} code of {result['annotator']}, "
                    f"batch {result['batch'] + 1}"
                )
            return
        if options["codes"]:
            self._codes(campaign, options.get("out"))
            return
        self._report(campaign, as_json=options["json"])

    def _changes(self, campaign: Campaign, options) -> None:
        settings, rules = {}, {}
        for entry in options["set"]:
            key, sep, raw = entry.partition("=")
            key = key.strip()
            if not sep or key not in SETTINGS | RULES:
                raise CommandError(
                    f"--set {entry}: expected KEY=VALUE with KEY one of {', '.join(sorted(SETTINGS | RULES))}"
                )
            (settings if key in SETTINGS else rules)[key] = _value(key, raw)
        if rules:
            settings["rules"] = rules
        if settings:
            services.quality_settings_update(campaign=campaign, **settings)
        name = options["exclude"] or options["include"] or options["use_rules"]
        if name:
            annotator = self._annotator(campaign, name)
            included = False if options["exclude"] else True if options["include"] else None
            services.annotator_decide(
                campaign=campaign, annotator=annotator, included=included, reason=options["reason"]
            )
        if options["gold"]:
            path = Path(options["gold"])
            if not path.is_file():
                raise CommandError(f"{path}: no such file")
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise CommandError(f"{path}: {exc}") from None
            created = services.gold_units_import(campaign=campaign, text=text)
            self.stderr.write(f"{len(created)} gold unit(s) added")

    def _annotator(self, campaign: Campaign, name: str) -> Annotator:
        namespace = None
        if ":" in name and name.split(":", 1)[0] in ("account", "import"):
            namespace, name = name.split(":", 1)
        found = Annotator.objects.filter(project=campaign.dataset.project, name=name)
        if namespace:
            found = found.filter(namespace=namespace)
        found = list(found[:2])
        if not found:
            raise CommandError(f"no annotator called {name!r} in project {campaign.dataset.project.name!r}")
        if len(found) > 1:
            raise CommandError(
                f"{name!r} is both an account and an imported worker: say account:{name} or import:{name}"
            )
        return found[0]

    def _report(self, campaign: Campaign, *, as_json: bool) -> None:
        quality = selectors.campaign_quality(campaign=campaign)
        labels = annotator_labels(Annotator.objects.filter(pk__in=quality))
        rules = selectors.rules_of(campaign=campaign)
        if as_json:
            self.stdout.write(
                json.dumps(
                    {
                        "campaign": campaign.name,
                        "rules": rules.describe(),
                        "included": sum(q.included for q in quality.values()),
                        "annotators": {
                            labels[pk]: q.as_json() for pk, q in sorted(quality.items(), key=lambda x: labels[x[0]])
                        },
                    }
                )
            )
            return
        out = io.StringIO()
        out.write(
            f"campaign {campaign.name}: {len(quality)} annotators, "
            f"{sum(q.included for q in quality.values())} included\n"
        )
        out.write("rules: " + ("; ".join(rules.describe()) or "none") + "\n")
        header = ["annotator", "judged", "controls", "MW p", "self-cons", "median s", "agree", "straight", "included"]
        out.write("  ".join(f"{h:>10}" for h in header) + "\n")

        def fmt(value, spec="{:.2f}"):
            return "-" if value is None else spec.format(value)

        for pk, q in sorted(quality.items(), key=lambda x: labels[x[0]]):
            f = q.figures
            row = [
                labels[pk][:10],
                str(f.judgements),
                fmt(f.controls_passed, "{:.0%}"),
                fmt(f.mann_whitney_p, "{:.3g}"),
                fmt(f.self_consistency),
                fmt(f.median_seconds, "{:.1f}"),
                fmt(f.agreement_with_others),
                "-" if f.straight_lining is None else ("yes" if f.straight_lining else "no"),
                ("yes" if q.included else "NO") + (" (by hand)" if q.decided_by_hand else ""),
            ]
            out.write("  ".join(f"{c:>10}" for c in row) + "\n")
            for reason in q.rule_verdict.reasons:
                out.write(f"{'':>12}{reason}\n")
            if q.decided_by_hand:
                out.write(f"{'':>12}decided by hand: {q.decision.reason}\n")
        self.stdout.write(out.getvalue().rstrip("\n"))

    def _codes(self, campaign: Campaign, out_path: str | None) -> None:
        rows = selectors.completion_code_list(campaign=campaign)
        labels = annotator_labels(Annotator.objects.filter(pk__in=rows.values("annotator_id")))
        standing = selectors.campaign_quality(campaign=campaign)
        buffer = io.StringIO()
        writer = SafeWriter(buffer)  # every cell neutralised against spreadsheet formulas
        writer.writerow(["annotator", "batch", "code", "verdict", "included_now", "issued_at"])
        for row in rows:
            now = standing.get(row.annotator_id)
            writer.writerow(
                [
                    labels[row.annotator_id],
                    row.batch + 1,
                    row.code,
                    "pass" if row.passed else "fail",
                    "" if now is None else ("yes" if now.included else "no"),
                    row.created_at.isoformat(),
                ]
            )
        if out_path:
            Path(out_path).write_text(buffer.getvalue(), encoding="utf-8")
            self.stderr.write(f"{rows.count()} code(s) written to {out_path}")
        else:
            self.stdout.write(buffer.getvalue(), ending="")
