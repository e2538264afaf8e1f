"""`rankings --campaign C --criterion Q --rule RULE [--json]`: each system's mean, rank range and
cluster under a named cluster rule (annotations.analysis.cluster_rules):

  wmt25            WMT25's clusters.txt: adjacent systems, one-sided Wilcoxon, waves as separate observations
  wmt25-ranges     WMT25's ranking table: rank ranges by walking to the first significant neighbour
  wmt26            WMT26's draft: one-sided bootstrap of the mean difference (--resamples, --seed)
  pairwise-ranges  rank ranges from one-sided Wilcoxon tests of every pair
  mann-whitney     rank-sum clusters

`--alpha` is the significance level (default 0.05); `--system S` (repeatable) ranks those systems
only, as if the others had not been evaluated. The JSON names the rule, its label and its source.
"""

import json

from django.core.management.base import CommandError

from annotations.analysis import cluster_rules as cr
from annotations.analysis.report import AnalysisError, rank_by_rule
from annotations.models import Campaign
from workbench.commands import DataCommand


class Command(DataCommand):
    help = "System rankings with rank ranges and clusters under a named rule (WMT25, WMT26 draft, ...)."

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--criterion", required=True)
        parser.add_argument("--rule", choices=list(cr.RULES), default=cr.DEFAULT_RULE)
        parser.add_argument("--alpha", type=float, default=cr.DEFAULT_ALPHA, help="significance level")
        parser.add_argument(
            "--resamples",
            type=int,
            default=cr.DEFAULT_RESAMPLES,
            help="bootstrap resamples (wmt26; the draft uses 100)",
        )
        parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap draws (wmt26), recorded")
        parser.add_argument("--system", action="append", help="rank these systems only (repeatable)")
        parser.add_argument("--annotators", choices=["included", "all"], default="included")
        parser.add_argument("--normalize", choices=["none", "z"], default="none")
        parser.add_argument("--json", action="store_true", help="print the figures as JSON on stdout")

    def handle(self, *args, **o):
        campaign = Campaign.objects.filter(name=o["campaign"]).select_related("dataset").first()
        if campaign is None:
            raise CommandError(f"no campaign named {o['campaign']!r}")
        if not 0 <= o["seed"] < 2**32:
            raise CommandError("--seed must be between 0 and 2**32 - 1")
        try:
            result = rank_by_rule(
                campaign=campaign,
                criterion=o["criterion"],
                rule=o["rule"],
                alpha=o["alpha"],
                resamples=o["resamples"],
                seed=o["seed"],
                annotators=o["annotators"],
                normalize=o["normalize"],
                systems=o["system"],
            )
        except AnalysisError as exc:
            raise CommandError(str(exc)) from None
        if o["json"]:
            self.stdout.write(json.dumps(result, ensure_ascii=False))
            return
        rule = result["rule"]
        self.stdout.write(f"{rule['name']}: {rule['label']}\nsource: {rule['source']}")
        for r in result["systems"]:
            lo, hi = r["rank_range"]
            self.stdout.write(f"{r['cluster']:>3} {lo:>3}-{hi:<3} {r['mean']:10.3f}  {r['system']}")
