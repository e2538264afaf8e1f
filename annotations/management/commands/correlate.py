"""`correlate --campaign NAME --metric METRIC --criterion C [...]`: metric-human meta-evaluation.

Rating and ESA campaigns: Pearson, Spearman, Kendall tau-b or acc23 between a
metric's scores (its latest done run on the campaign's dataset) and the human
scores, at segment or system level, grouped as mt-metrics-eval's `average_by`;
bootstrap 95% interval over items; `--compare METRIC2` adds the PERM-BOTH
p-value that METRIC correlates better than METRIC2. `--method spa` is soft
pairwise accuracy at system level (mt-metrics-eval's pce.py; `--spa-seed`,
default 4 as there, and `--spa-permutations`), `--method pdp` pairwise
difference Pearson. `--compare-all` ranks every done run by the method and
prints {"clusters": [[metric, ...], ...], "p_values": {...}}: PERM-BOTH between
every pair, clusters as mt-metrics-eval's AssignRanks. When the campaign has a
second wave, the JSON adds "human_ceiling": the other wave scored like a
metric. Pairwise campaigns: the
share of pairs where the metric prefers the output most humans preferred. The
metric's direction (higher or lower is better) is respected.

An LLM judge's run (`llm-judge`) adds its bias probes under `probes` (annotations.analysis.judges).
`--method alt-test` runs the alternative annotator test (Calderon et al. 2025) of the run on the
criterion instead of a correlation: `--epsilon`, `--alt-scoring`, `--q-fdr`, `--min-instances`.
"""

import json

from django.core.management.base import CommandError

from annotations.analysis.report import CORRELATION_METHODS, AnalysisError, compare_all_report, correlate_report
from annotations.models import Campaign
from workbench.commands import DataCommand


class Command(DataCommand):
    help = "Correlation (or pairwise agreement) between a metric and human judgements."

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--metric", help="metric name (its newest done run) or a run id")
        parser.add_argument("--criterion", required=True)
        parser.add_argument("--level", choices=["segment", "system"], default="segment")
        parser.add_argument(
            "--method",
            choices=CORRELATION_METHODS,
            default="pearson",
            help="alt-test: the alternative annotator test (Calderon et al. 2025) of a judge run; "
            "error-free: error-free segment detection (WMT26; ESA campaigns); span-f1: a span metric's "
            "error spans (llm-judge spans mode, minwed, mincer) against the campaign's: character "
            "P/R/F1, WMT25's severity-weighted F1 and factgenie's span F1; span-gamma: factgenie's span "
            "gamma agreement of those spans (pygamma-agreement's soft gamma)",
        )
        parser.add_argument(
            "--epsilon",
            type=float,
            default=0.2,
            help="alt-test: the judge's cost-benefit allowance (0.2 crowd workers, 0.1 experts)",
        )
        parser.add_argument(
            "--alt-scoring",
            choices=["accuracy", "neg_rmse"],
            help="alt-test: how an annotation's agreement with the others is scored "
            "(default neg_rmse for scores, accuracy for pairs)",
        )
        parser.add_argument("--q-fdr", type=float, default=0.05, help="alt-test: false discovery rate")
        parser.add_argument(
            "--min-instances", type=int, default=30, help="alt-test: annotators with fewer instances are skipped"
        )
        parser.add_argument("--group-by", choices=["none", "item", "system"], default="none")
        parser.add_argument("--normalize", choices=["none", "z"], default="none")
        parser.add_argument("--min-votes", type=int, default=1)
        parser.add_argument("--min-consensus", type=float, default=0.0)
        parser.add_argument("--compare", metavar="METRIC2")
        parser.add_argument(
            "--compare-all",
            action="store_true",
            help="rank every done metric run into significance clusters (PERM-BOTH between pairs)",
        )
        parser.add_argument("--resamples", type=int, default=1000, help="PERM-BOTH resamples (--compare-all)")
        parser.add_argument(
            "--spa-permutations",
            type=int,
            default=1000,
            help="permutations of the SPA p-values (mt-metrics-eval: 1000)",
        )
        parser.add_argument("--spa-seed", type=int, default=4, help="seed of the SPA permutations (mt-metrics-eval: 4)")
        parser.add_argument("--annotators", choices=["included", "all"], default="included")
        parser.add_argument("--bootstrap", type=int, default=200)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--json", action="store_true", help="print the figures as JSON on stdout")

    def handle(self, *args, **o):
        campaign = Campaign.objects.filter(name=o["campaign"]).select_related("dataset").first()
        if campaign is None:
            raise CommandError(f"no campaign named {o['campaign']!r}")
        if not 0 <= o["min_consensus"] <= 1:
            raise CommandError("--min-consensus must be between 0 and 1")
        if o["min_votes"] < 0:
            raise CommandError("--min-votes must be 0 or more")
        if not 0 <= o["seed"] < 2**32:
            raise CommandError("--seed must be between 0 and 2**32 - 1")
        if not 0 <= o["bootstrap"] <= 2000:
            raise CommandError("--bootstrap must be between 0 and 2000")
        if not 0 <= o["epsilon"] < 1:
            raise CommandError("--epsilon must be between 0 and 1")
        if not 0 < o["q_fdr"] < 1:
            raise CommandError("--q-fdr must be between 0 and 1")
        if o["min_instances"] < 2:
            raise CommandError("--min-instances must be 2 or more")
        if not 1 <= o["spa_permutations"] <= 100_000:
            raise CommandError("--spa-permutations must be between 1 and 100000")
        if not 0 <= o["spa_seed"] < 2**32:
            raise CommandError("--spa-seed must be between 0 and 2**32 - 1")
        if not 1 <= o["resamples"] <= 100_000:
            raise CommandError("--resamples must be between 1 and 100000")
        if o["compare_all"]:
            if o["metric"] or o["compare"]:
                raise CommandError("--compare-all ranks every done run: leave out --metric and --compare")
            try:
                result = compare_all_report(
                    campaign=campaign,
                    criterion=o["criterion"],
                    level=o["level"],
                    method=o["method"],
                    group_by=o["group_by"],
                    normalize=o["normalize"],
                    annotators=o["annotators"],
                    seed=o["seed"],
                    resamples=o["resamples"],
                    spa_permutations=o["spa_permutations"],
                    spa_seed=o["spa_seed"],
                )
            except AnalysisError as exc:
                raise CommandError(str(exc)) from None
            if o["json"]:
                self.stdout.write(json.dumps(result, ensure_ascii=False))
                return
            for m in result["metrics"]:
                self.stdout.write(f"{m['rank']:>2} {m['metric']} {m['value']}")
            return
        if not o["metric"]:
            raise CommandError("give --metric METRIC (or --compare-all)")
        try:
            result = correlate_report(
                campaign=campaign,
                metric=o["metric"],
                criterion=o["criterion"],
                level=o["level"],
                method=o["method"],
                group_by=o["group_by"],
                normalize=o["normalize"],
                min_votes=o["min_votes"],
                min_consensus=o["min_consensus"],
                compare=o["compare"],
                annotators=o["annotators"],
                bootstrap=o["bootstrap"],
                seed=o["seed"],
                spa_permutations=o["spa_permutations"],
                spa_seed=o["spa_seed"],
                epsilon=o["epsilon"],
                alt_scoring=o["alt_scoring"],
                q_fdr=o["q_fdr"],
                min_instances=o["min_instances"],
            )
        except AnalysisError as exc:
            raise CommandError(str(exc)) from None
        if o["json"]:
            self.stdout.write(json.dumps(result, ensure_ascii=False))
            return
        if result.get("method") == "alt-test":
            verdict = {True: "passed", False: "failed", None: "not testable"}[result["passed"]]
            self.stdout.write(
                f"{result['metric']} vs {result['criterion']}: alt-test {verdict}, winning rate "
                f"{result['winning_rate']}, advantage probability {result['advantage_probability']} "
                f"(epsilon {result['epsilon']}, {result['annotators_tested']} annotators, "
                f"{result['instances']} instances)"
            )
            return
        if result.get("method") == "span-f1":
            o = result["overall"]
            self.stdout.write(
                f"{result['metric']} vs {result['criterion']}: span F1 {o['f1']} (precision "
                f"{o['precision']}, recall {o['recall']}, {o['outputs']} outputs; {result['label']})"
            )
            w, fg = o["wmt25"], o["factgenie"]
            self.stdout.write(
                f"severity-weighted span F1 {w['f1']} (precision {w['precision']}, recall {w['recall']}, "
                f"{w['annotations']} annotations; {result['wmt25_label']})"
            )
            self.stdout.write(
                f"factgenie span F1 hard {fg['hard']['f1']}, soft {fg['soft']['f1']} ({result['factgenie_label']})"
            )
            return
        if result.get("method") == "span-gamma":
            o = result["overall"]
            self.stdout.write(
                f"{result['metric']} vs {result['criterion']}: span gamma {o['gamma']} ({o['outputs']} outputs "
                f"both marked; s_empty {o['s_empty']} over {o['s_empty_outputs']} others; {result['label']})"
            )
            for name, f in result["per_system"].items():
                self.stdout.write(f"  {name}: span gamma {f['gamma']} ({f['outputs']} outputs)")
            return
        if result.get("method") == "error-free":
            h, b = result["held_out"], result["best_on_all"]
            self.stdout.write(
                f"{result['metric']} vs {result['criterion']}: error-free detection, held-out F1 {h['f1']} "
                f"(precision {h['precision']}, recall {h['recall']}, threshold {h['threshold']}, seed "
                f"{h['seed']}); best on all outputs F1 {b['f1']} at {b['threshold']} ({b['caveat']}); "
                f"{result['positives']} of {result['n']} outputs error-free"
            )
            return
        if "agreement" in result:
            self.stdout.write(
                f"{result['metric']} vs {result['criterion']}: agreement {result['agreement']} over {result['n']} pairs"
            )
            return
        line = (
            f"{result['metric']} vs {result['criterion']} ({result['level']}, group by {result['group_by']}): "
            f"{result['method']} {result[result['method']]} 95% CI {result['ci95']}, n {result['n']}"
        )
        if result.get("ci95_note"):
            line += f" ({result['ci95_note']})"
        if "p_value" in result:
            line += f"; vs {result['compare']}: p {result['p_value']} (PERM-BOTH)"
        if "pairs_test" in result:
            pairs = result["pairs_test"]
            line += (
                f", p {pairs['p_value']} (pairs permutation)"
                if "skipped" not in pairs
                else f"; pairs permutation not run: {pairs['skipped']}"
            )
        if result.get("system_scores"):
            used = result["system_scores"]
            line += f"\nsystem scores, {used['label']}: " + ", ".join(
                f"{name} {value}" for name, value in used["scores"].items()
            )
            if used["fallback"]:
                line += f" ({used['fallback']})"
        if result.get("human_ceiling"):
            h = result["human_ceiling"]
            line += f"\nother human wave {h['wave']} ({h['role']}): {result['method']} {h[result['method']]}"
        self.stdout.write(line)
