"""`agreement --campaign NAME [--criterion C] [--json]`: inter-annotator agreement.

Krippendorff's alpha (nominal, ordinal, interval), Fleiss' kappa, percent
agreement and bootstrap 95% intervals over units, per criterion; Cohen's kappa
per annotator pair, alpha per system and alpha without each annotator; with a
second wave (`create_campaign --wave-of`), `waves`: human1 vs human2 at segment
and system level and CV* between the waves. Only
complete judgements, of included annotators when quality control is in use.
"""

import json

from django.core.management.base import CommandError

from annotations.analysis.report import AnalysisError, agreement_report
from annotations.models import Campaign
from workbench.commands import DataCommand


class Command(DataCommand):
    help = "Inter-annotator agreement of a campaign (alpha, Fleiss' and Cohen's kappa, percent agreement)."

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--criterion")
        parser.add_argument(
            "--annotators",
            choices=["included", "all"],
            default="included",
            help="included annotators only (default; all when no quality control is in use)",
        )
        parser.add_argument("--bootstrap", type=int, default=200, help="bootstrap resamples of units (0 = none)")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--json", action="store_true", help="print the figures as JSON on stdout")

    def handle(self, *args, **o):
        campaign = Campaign.objects.filter(name=o["campaign"]).select_related("dataset").first()
        if campaign is None:
            raise CommandError(f"no campaign named {o['campaign']!r}")
        if not 0 <= o["seed"] < 2**32:
            raise CommandError("--seed must be between 0 and 2**32 - 1")
        if not 0 <= o["bootstrap"] <= 2000:
            raise CommandError("--bootstrap must be between 0 and 2000")
        try:
            result = agreement_report(
                campaign=campaign,
                criterion=o["criterion"],
                annotators=o["annotators"],
                bootstrap=o["bootstrap"],
                seed=o["seed"],
            )
        except AnalysisError as exc:
            raise CommandError(str(exc)) from None
        if o["json"]:
            self.stdout.write(json.dumps(result, ensure_ascii=False))
            return
        self.stdout.write(
            f"{campaign.name} ({campaign.protocol}); judgements used: "
            f"{result['judgements_used']['judgements']}, {result['judgements_used']['annotators']}"
        )
        for name, f in result["criteria"].items():
            head, a = f["headline"], f["krippendorff_alpha"]
            ci = f["ci95"].get(f"krippendorff_alpha_{head['level']}", [None, None])
            self.stdout.write(
                f"{name}: {head['label']} = {_num(head['value'])} (95% CI {_num(ci[0])}, "
                f"{_num(ci[1])}); {f['n_units']} units, {f['n_annotators']} annotators"
            )
            minor = set(f["not_headline"])
            others = [
                f"alpha {level} {_num(a[level])}"
                for level in ("nominal", "ordinal", "interval")
                if level != head["level"] and f"krippendorff_alpha.{level}" not in minor
            ]
            others += [
                f"{label} {_num(f[key])}"
                for key, label in (("fleiss_kappa", "Fleiss' kappa"), ("percent_agreement", "percent agreement"))
                if key not in minor
            ]
            if others:
                self.stdout.write("  also: " + "; ".join(others))
            pairs = f.get("pairwise_derived")
            if pairs:  # cESA: the preferences the scores of one screen imply
                self.stdout.write(
                    f"  pairs: {pairs['headline']['label']} = {_num(pairs['headline']['value'])}; "
                    f"{pairs['n_units']} pairs of outputs"
                )
        waves = result.get("waves")
        for name, f in (waves or {}).get("criteria", {}).items():
            self.stdout.write(
                f"{name}, {waves['human1']} vs {waves['human2']}: segment Pearson "
                f"{_num(f['segment']['pearson'])} ({f['segment']['n']} outputs), system Pearson "
                f"{_num(f['system']['pearson'])} ({f['system']['n']} systems), CV* "
                f"{_num(f['reproducibility']['cv_star_mean'])}"
            )


def _num(value) -> str:
    return "–" if value is None else f"{value:.4f}"
