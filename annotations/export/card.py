"""The dataset card (README.md): the Human Evaluation Datasheet, HEDS 3.0 (Belz & Thomson 2025).

Sections follow HEDS 3.0 and its question numbers (1.1.1-5.4; the answers come from
`annotations.export.heds`, which also writes them as the official form's `heds.json`): 1 paper
and resources, 2 evaluated system, 3.1 sample, 3.2 evaluators, 3.3 experimental design, 4 quality
criteria (one subsection per criterion), 5 ethics. Every field the
workbench knows is filled in from the campaign; the others are left as clearly marked blanks
(`BLANK`) for the researchers. With `--format hf` the card starts with the YAML header that
Hugging Face `datasets` reads (configs `outputs` and `judgements`).
"""

from __future__ import annotations

import json
import re
import subprocess
from datetime import datetime, timezone
from pathlib import Path

from django.conf import settings

from annotations import protocols
from annotations.allocation.state import PARAM_BOUNDS  # the knobs in their documented order
from annotations.export.heds import FORM_URL
from annotations.models import Campaign
from annotations.models.quality import QualitySettings

BLANK = "**[BLANK: to be filled in by the researchers]**"
_LICENCE_ID = re.compile(r"^[a-z0-9][a-z0-9.+-]*$")


def workbench_version() -> str:
    version = settings.SPECTACULAR_SETTINGS.get("VERSION", "unknown")
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=Path(settings.BASE_DIR),
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return f"{version} (commit {commit})" if commit else version


def campaign_configuration(*, campaign: Campaign, systems: list[str], criteria: list[str]) -> dict:
    """campaign.json: everything needed to re-create the campaign (`create_campaign --from`, the same JSON
    in `POST /api/campaigns/`; annotations.services.campaign_files), plus what is only recorded."""
    # The model, not annotations.quality.selectors (which loads scipy.stats: ~60 MB for one row).

    qs = QualitySettings.objects.filter(campaign=campaign).first() or QualitySettings(campaign=campaign)
    config = {
        "name": campaign.name,
        "dataset": campaign.dataset.name,
        "protocol": campaign.protocol,
        "criteria": criteria,
        "criteria_config": [campaign.criterion_config(c) for c in criteria],
        "scale": [campaign.scale_min, campaign.scale_max],
        "systems": systems,
        "redundancy": campaign.redundancy,
        "instructions": campaign.instructions,
        "public_title": campaign.public_title,
        # The protocol's own settings, every declared one with its value (annotations.protocols.options).
        "options": {o.name: protocols.of(campaign).option(campaign, o.name) for o in protocols.of(campaign).options},
        "units_per_batch": campaign.units_per_batch,
        "show_source": campaign.show_source,
        "show_reference": campaign.show_reference,
        "assignment_timeout_minutes": campaign.assignment_timeout_minutes,
        "seed": campaign.seed,
        "counterbalancing": _counterbalancing(campaign),
        # annotations.allocation: how units were handed out, and whether (when, why) the campaign stopped early.
        "allocation": campaign.allocation,
        "allocation_params": dict(campaign.allocation_params or {}),
        "stopped": (
            {"at": campaign.stopped_at.isoformat(), "by": campaign.stopped_by, "reason": campaign.stop_reason}
            if campaign.stopped_at
            else None
        ),
        "quality_control": {
            "degraded_share": qs.degraded_share,
            "repeat_share": qs.repeat_share,
            "degrade_kinds": qs.degrade_kinds,
            "degrade_strength": qs.degrade_strength,
            "rules": qs.rules,
            "completion_codes": qs.completion_codes,
            "gold_units": campaign.gold_units.count(),
        },
    }
    if campaign.prefilled:
        # ESA^AI: where the suggested spans came from and the share shown without them.
        prefill = campaign.prefill
        config["prefill"] = {
            "run": prefill.run_id,
            "metric": prefill.metric,
            "signature": prefill.signature,
            "holdout": prefill.holdout,
            "held_back_outputs": len(prefill.held_back),
        }
    return config


def _counterbalancing(campaign: Campaign) -> str:
    if protocols.of(campaign).one_output_per_unit:
        return (
            "one output per screen; each annotator's units come in an order drawn from their own seed "
            f"(campaign seed {campaign.seed})"
        )
    return (
        "the outputs of a unit are shown in an order chosen per assignment that balances how often each "
        "system appears in each position for each annotator; the order shown is in `shown_order`"
    )


ALLOCATION_TEXT = {
    "overlap-first": "overlap-first (units already started were completed to k before new ones were opened, "
    "in the campaign's planned order)",
    "spread": "spread (each annotator walked the units in their own random order)",
    "adaptive": "adaptive (after a cold start, only units holding a system pair whose order was still undecided "
    "by a bootstrap interval were opened; annotations.allocation.adaptive)",
}


def _allocation_text(c: dict) -> str:
    text = ALLOCATION_TEXT.get(c.get("allocation"), str(c.get("allocation")))
    params = c.get("allocation_params") or {}
    if params:
        names = [k for k in PARAM_BOUNDS if k in params] + sorted(set(params) - set(PARAM_BOUNDS))
        text += "; parameters: " + ", ".join(
            f"{k} {params[k]:g}" if isinstance(params[k], (int, float)) else f"{k} {params[k]}" for k in names
        )
    return text


def _yaml_header(options, campaign: Campaign) -> str:
    licence = (options.licence or "").strip()
    lines = ["---"]
    if licence and _LICENCE_ID.match(licence.lower()):
        lines.append(f"license: {licence.lower()}")
    else:
        lines.append("license: other")
        if licence:
            lines.append(f"license_name: {json.dumps(licence[:200])}")
    lines += [f"pretty_name: {json.dumps(campaign.name)}", "configs:"]
    for name, default in (("outputs", True), ("judgements", False)):
        lines += [f"- config_name: {name}", "  data_files:", "  - split: train", f"    path: {name}.jsonl"]
        if default:
            lines.append("  default: true")
    lines.append("---")
    return "\n".join(lines) + "\n\n"


def _fmt(value) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


def _cell(text: str) -> str:
    """Text inside a Markdown table cell: a pipe would end the cell."""
    return _md(text).replace("|", "\\|")


def _num(value) -> str:
    return "unbounded" if value is None else f"{value:g}"


def _md(text: str) -> str:
    """Text from the database inside a Markdown card: one line, no HTML."""
    return (text or "").replace("\r", " ").replace("\n", " ").replace("<", "&lt;").replace(">", "&gt;")


def _system_scores(add, runs: list, systems: list[str]) -> None:
    """Each exported system's score per run: the one the rankings page and `correlate --level
    system` use (metrics.selectors.system_scores), labelled with what it is."""
    runs = [run for run in runs if run.systems.get("scores")]
    if not runs or not systems:
        return
    add("")
    add("### System scores")
    add("")
    add(
        "A system's score is the metric's own score over all of the system's outputs in the dataset, as the "
        "metric defines it (for BLEU and chrF the corpus score, as sacrebleu and WMT report it); the rankings "
        "page and `correlate --level system` use the same figures. Per column:"
    )
    add("")
    for run in runs:
        add(
            f"- `{_cell(run.key)}`: {_md(run.systems['aggregate'])}"
            + (f" (signature `{_md(run.signature)}`)" if run.signature else "")
        )
    add("")
    add("| system | " + " | ".join(f"`{_cell(run.key)}`" for run in runs) + " |")
    add("|---|" + "---|" * len(runs))
    for name in systems:
        add(f"| `{_cell(name)}` | " + " | ".join(_fmt(run.systems["scores"].get(name)) for run in runs) + " |")


def _rankings_section(add, rankings: dict | None) -> None:
    if not rankings or not rankings.get("criteria"):
        return
    add("## System rankings by the humans")
    add("")
    add(f"- Cluster (rank-sum): {_md(rankings['test'])}")
    add(f"- Paired cluster and rank range: {_md(rankings['paired_test'])}")
    add(
        f"- Judgements: {_md(rankings['judgements_used'].get('annotators', ''))}, all counted judgements of the "
        "campaign (not only this export's filters)"
    )
    add("")
    for c, rows in rankings["criteria"].items():
        add(f"### `{_cell(c)}`")
        add("")
        add(
            "| rank | system | score | cluster (rank-sum) | cluster (paired) | rank range (paired) |\n|---|---|---|---|---|---|"
        )
        for r in rows:
            low, high = r.get("rank_range", [None, None])
            add(
                f"| {r['rank']} | `{_cell(r['system'])}` | {_fmt(r['score'])} | {r['cluster']} | "
                f"{r.get('paired_cluster', '–')} | {low}–{high} |"
            )
        add("")
    rule = rankings.get("rule")
    if rule and rankings.get("rule_rankings"):
        add(f"### Rank ranges and clusters by rule `{_cell(rule['name'])}`")
        add("")
        add(f"- Rule: {_md(rule['label'])}")
        add(
            f"- Source: {_md(rule['source'])}; observations: {_md(rule['observations'])}"
            + (f"; seed {rule['seed']}, {rule['resamples']} resamples" if rule.get("seed") is not None else "")
        )
        add("")
        for c, rows in rankings["rule_rankings"].items():
            add(f"`{_cell(c)}`")
            add("")
            add("| rank | system | mean | rank range | cluster |\n|---|---|---|---|---|")
            for r in rows:
                add(
                    f"| {r['rank']} | `{_cell(r['system'])}` | {_fmt(r['mean'])} | {r['rank_range'][0]}–"
                    f"{r['rank_range'][1]} | {r['cluster']} |"
                )
            add("")


def _waves_section(add, waves: dict | None) -> None:
    if not waves:
        return
    add("## Second human wave")
    add("")
    add(
        f"- Waves: `{_cell(waves['human1'])}` (human1) and `{_cell(waves['human2'])}` (human2), the same units, "
        f"annotators disjoint ({waves['annotators_in_both']} annotator(s) found in both)"
    )
    add(
        "- Reproducibility: CV*, the small-sample coefficient of variation of each system's score over the two "
        "waves (Belz, Popovic & Mille 2022, Quantified Reproducibility Assessment), scale shifted to start at 0, "
        "mean over systems; lower is more reproducible"
    )
    add("")
    add(
        "| criterion | segment Pearson | segment Kendall | outputs | system Pearson | system Kendall | systems | "
        "CV* (mean) |\n|---|---|---|---|---|---|---|---|"
    )
    for c, f in waves["criteria"].items():
        seg, sys_, rep = f["segment"], f["system"], f["reproducibility"]
        add(
            f"| `{_cell(c)}` | {_fmt(seg['pearson'])} | {_fmt(seg['kendall'])} | {seg['n']} | "
            f"{_fmt(sys_['pearson'])} | {_fmt(sys_['kendall'])} | {sys_['n']} | {_fmt(rep['cv_star_mean'])} |"
        )
    add("")
    if "discrepancy_label" in waves:
        listed = [(c, r) for c, f in waves["criteria"].items() for r in f.get("discrepancies", [])]
        add(f"- Wave discrepancies: {len(listed)} {_md(waves['discrepancy_label'])}")
        if listed:
            add("")
            add("| criterion | item | system | human1 | human2 | difference |\n|---|---|---|---|---|---|")
            for c, r in listed:
                add(
                    f"| `{_cell(c)}` | `{_cell(str(r['item_ext']))}` | `{_cell(r['system'])}` | {_fmt(r['human1'])} | "
                    f"{_fmt(r['human2'])} | {_fmt(r['difference'])} |"
                )
        add("")


def card_text(
    *,
    campaign: Campaign,
    options,
    result,
    configuration: dict,
    runs: list,
    qc_active: bool,
    n_quality: int,
    n_included: int,
    items_total: int,
    ext: str,
    reliability_computed: bool = True,
    rankings: dict | None = None,
    waves: dict | None = None,
    heds: list | None = None,
    background: list[str] | None = None,
) -> str:
    c = configuration
    protocol = protocols.of(campaign)
    scale = c["scale"]
    lines: list[str] = []
    add = lines.append
    if options.fmt == "hf":
        lines.append(_yaml_header(options, campaign).rstrip("\n") + "\n")
    add(f"# {_md(campaign.name)}: human evaluation data")
    add("")
    add(
        f"Exported from the NLG evaluation workbench, version {workbench_version()}, on "
        f"{datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}. This card follows the Human Evaluation "
        "Datasheet, HEDS 3.0 (Belz & Thomson, 2025), with its question numbers. Fields marked "
        + BLANK
        + " are not known to the workbench."
    )
    add("")
    add(f"**Licence**: {_md(options.licence) if options.licence.strip() else BLANK}")
    add("")
    add("## Files")
    add("")
    add("| file | rows | what |\n|---|---|---|")
    add(
        f"| `dataset.{ext}` | {result.items} | one item a row: input, references, the outputs of the exported "
        "systems (the workbench's dataset import format) |"
    )
    add(
        f"| `judgements.{ext}` | {result.judgements} | one judgement a row (the workbench's judgement import "
        "format, plus `shown_order`, `time_spent_ms` and `provenance`: output text, status, origin, the day "
        "it was judged). `time_spent_ms` is measured on the "
        "workbench's server, from handing the unit out (or resuming it) to its submission, never taken from the "
        "annotator's browser; for imported judgements it is the figure imported (`provenance.time_measured_by`) |"
    )
    add(
        f"| `outputs.{ext}` | {result.outputs} | one output a row: its text, aggregated human scores per "
        "criterion, the item's consensus, metric scores with their signatures |"
    )
    if result.notes:
        where = "lines of `judgements.jsonl` with" if ext == "jsonl" else "rows of `notes.csv`:"
        add(
            f"| {'`notes.csv`' if ext == 'csv' else '(in `judgements.jsonl`)'} | {result.notes} | special answers "
            f"and comments, {where} `item`, `systems` (the unit's), `annotator`, and `criterion` + `special` (a special "
            "answer given instead of a judgement: left out of scores and agreement) or `comment` (the unit's free text) |"
        )
    if options.annotator_figures or options.real_annotator_ids:
        add(
            f"| `annotators.{ext}` | {result.annotators} | one annotator a row: quality-control inclusion and "
            "reliability figures |"
        )
    add("| `campaign.json` | – | the campaign's configuration |")
    add("")
    if ext == "csv":
        add(
            "CSV cells that a spreadsheet would run as a formula (starting with `=`, `+`, `-`, `@`, a tab or a "
            "carriage return) start with an added apostrophe `'`; remove it to get the original text. Nested "
            "values are dotted columns; lists are JSON."
        )
        add("")
    add(
        "Annotators are "
        + (
            "named by their ids in the workbench (`--real-annotator-ids`); visitors of study links by "
            "their crowd platform id (e.g. PROLIFIC_PID, MTurk workerId)."
            if options.real_annotator_ids
            else "pseudonymised: `annotator-` followed by an HMAC of the annotator under a key drawn "
            "for this export and not kept, stable within this export only. No name, username or "
            "email is exported. So that two exports of this campaign cannot be joined by anything "
            "but the judgements themselves, rows give the day a judgement was made (not the "
            "moment) and no per-annotator figures"
            + (
                "; `annotators." + ext + "` has those figures, and they are the same in every "
                "export: publish that table with one export only."
                if options.annotator_figures
                else " (`--annotator-figures` adds them as a table of their own)."
            )
            + " Two exports that hold the same judgements can still be aligned by those "
            "judgements (which outputs an annotator judged, how, and in how much time)."
        )
    )
    add("")

    answered = heds or []

    def numbered(prefix: str, criterion: str | None = None) -> None:
        """The HEDS 3.0 questions numbered `prefix`..., answered or BLANK."""
        for a in answered:
            if a.criterion == criterion and (a.number == prefix or a.number.startswith(prefix + ".")):
                add(f"- {a.number} {a.question}: {_md(a.shown()) if a.known else BLANK}")

    add("## 1. Paper and resources")
    add("")
    numbered("1")
    add(
        f"- Evaluation materials: this folder (campaign `{_md(campaign.name)}`, "
        f"dataset `{_md(campaign.dataset.name)}`, project `{_md(campaign.dataset.project.name)}`); `heds.json` "
        f'loads in the official HEDS 3.0 form ({FORM_URL}, "upload json") with these answers filled in'
    )
    add("")
    add("## 2. Evaluated system")
    add("")
    add(f"- Systems ({len(c['systems'])}): " + ", ".join(f"`{_md(s)}`" for s in c["systems"]))
    numbered("2")
    add("")
    add("## 3. Sample, evaluators and experimental design")
    add("")
    add("### 3.1 Sample of system outputs")
    add("")
    numbered("3.1")
    add(f"- Items in the dataset: {items_total}; exported: {result.items}; outputs exported: {result.outputs}")
    add("")
    add("### 3.2 Evaluators")
    add("")
    numbered("3.2")
    add(f"- Annotators whose judgements are exported: {result.annotators}")
    gold = c["quality_control"].get("gold_unit_contents") or []
    if gold:
        add(
            f"- Gold units: {len(gold)} ({sum(g['mode'] == 'loud' for g in gold)} tutorial, "
            f"{sum(g['mode'] != 'loud' for g in gold)} silent); their items, outputs (by system), expected answers "
            "and explanations are in `campaign.json` (`quality_control.gold_unit_contents`)"
        )
    if background:
        # The campaign's background questions, in aggregate (one annotator's answers are in
        # background.EXT under their pseudonym).
        add(f"- Background questions asked before the first unit (`background.{ext}`, per annotator):")
        lines.extend(f"  - {_md(line)}" for line in background)
    if qc_active:
        add(
            f"- Quality control: {n_included} of {n_quality} annotators included by the workbench's rules and "
            "decisions (controls: degraded copies share "
            f"{c['quality_control']['degraded_share']:g}, repeats share {c['quality_control']['repeat_share']:g}, "
            f"rules {json.dumps(c['quality_control']['rules'])})"
        )
    else:
        add(
            "- Quality control: not in use for this campaign (no controls, rules or decisions): every annotator "
            "counts as included"
        )
    if not reliability_computed:
        add(
            "- Annotator reliability figures (and intra-annotator agreement) were not computed for this "
            "export (a large campaign without quality control); `manage.py quality --campaign NAME` gives them"
        )
    add("")
    add("### 3.3 Experimental design")
    add("")
    numbered("3.3")
    add(f"- Protocol: {protocols.label(campaign.protocol)} (`{campaign.protocol}`)")
    add(f"- Scale: {scale[0]:g} to {scale[1]:g}" if None not in scale else "- Scale: unbounded")
    add(f"- Annotators per unit (redundancy k): {c['redundancy']}")
    lines += protocol.card_design(c, _fmt)
    add(f"- Counterbalancing: {c['counterbalancing']}")
    add(f"- Allocation: {_allocation_text(c)}")
    stopped = c.get("stopped")
    if stopped:
        who = "a researcher" if stopped["by"] == "researcher" else "adaptive allocation's stopping rule"
        add(f"- Stopped early on {stopped['at'][:16].replace('T', ' ')} UTC by {who}: {_md(stopped['reason'])}")
    else:
        add("- Stopped early: no")
    qc = c["quality_control"]
    add(
        f"- Controls mixed into the annotators' batches: degraded copies {qc['degraded_share']:g} of a batch"
        + (f" ({', '.join(qc['degrade_kinds'])}, strength {qc['degrade_strength']:g})" if qc["degrade_kinds"] else "")
        + f", repeats {qc['repeat_share']:g}, gold / tutorial units {qc['gold_units']}; their answers are "
        "never exported as judgements"
    )
    add(
        f"- Shown to annotators: input {'yes' if c['show_source'] else 'no'}, references "
        f"{'yes' if c['show_reference'] else 'no'}; system names never"
    )
    add(
        f"- Units per batch: {c['units_per_batch']}; timeout {c['assignment_timeout_minutes']} minutes; "
        f"seed {c['seed']}"
    )
    add(f"- Instructions: {_md(c['instructions']) or BLANK}")
    add("")
    add("### Filters applied to this export")
    add("")
    add("| filter | judgements before | judgements after | items before | items after |\n|---|---|---|---|---|")
    for step in result.filters:
        add(
            f"| {_cell(step['label'])} | {step['judgements_before']} | {step['judgements_after']} | "
            f"{step.get('items_before', '–')} | {step.get('items_after', '–')} |"
        )
    add("")
    add(
        "Consensus of a unit: ratings and ESA, 1 − (population s.d. of its scores) / (half the scale's range); "
        "pairwise, the majority share; best-worst, the mean majority share of best and of worst. An item's "
        "consensus is the mean over its units and criteria judged at least twice."
    )
    add("")
    add("## 4. Quality criteria")
    add("")
    for config in c["criteria_config"]:
        name = config["name"]
        figures = result.agreement.get(name, {})
        alphas = figures.get("krippendorff_alpha", {})
        add(f"### Criterion `{_md(name)}`")
        add("")
        numbered("4", criterion=name)
        add(
            f"- Scale: {_num(config.get('scale_min'))} to {_num(config.get('scale_max'))}, shown as "
            f"{config.get('widget')}"
            + (
                f" (labels: {_md(config.get('min_label'))} … {_md(config.get('max_label'))})"
                if config.get("min_label") or config.get("max_label")
                else ""
            )
            if protocol.scored
            else f"- Response: {protocols.label(campaign.protocol)}"
        )
        head = figures.get("headline") or {}
        others = [
            f"{level} {_fmt(value)}"
            for level, value in alphas.items()
            if level != head.get("level") and f"krippendorff_alpha.{level}" not in figures.get("not_headline", [])
        ]
        add(
            f"- Inter-annotator agreement on the exported judgements ({head.get('annotators', 'all annotators')}): "
            f"{_md(head.get('label', 'Krippendorff alpha'))} = {_fmt(head.get('value'))}"
            + (f" (unrounded {head['value']!r})" if isinstance(head.get("value"), float) else "")
            + " over "
            f"{figures.get('n_units', 0)} units judged at least twice, {figures.get('n_annotators', 0)} annotators, "
            f"{figures.get('n_judgements', 0)} judgements" + (f" (other levels: {', '.join(others)})" if others else "")
        )
        pairs = figures.get("pairwise_derived")
        if pairs:  # cESA: agreement on the preferences the scores of one screen imply
            add(
                f"- Agreement on the pairs derived from the scores: {_md(pairs['headline']['label'])} = "
                f"{_fmt(pairs['headline']['value'])} over {pairs.get('n_units', 0)} pairs of outputs judged at "
                "least twice"
            )
        add("")
    _rankings_section(add, rankings)
    _waves_section(add, waves)
    add("## Automatic metrics")
    add("")
    if runs:
        add(
            "| column | metric | signature | higher is better | score over all outputs | what the score is |\n"
            "|---|---|---|---|---|---|"
        )
        for run in runs:
            add(
                f"| `{_cell(run.key)}` | {_cell(run.metric)} | `{_cell(run.signature)}` | {_fmt(run.higher_is_better)} | "
                f"{_fmt(run.corpus.get('score'))} | {_cell(run.systems.get('aggregate') or BLANK)} |"
            )
        _system_scores(add, runs, c["systems"])
    else:
        add("No finished metric run on this dataset.")
    add("")
    add("## 5. Ethics")
    add("")
    numbered("5")
    add(
        f"- Annotator identities: {'exported as workbench ids and platform ids' if options.real_annotator_ids else 'pseudonymised'}"
    )
    add(f"- Consent and payment of the annotators: {BLANK}")
    add(f"- Risks and intended use: {BLANK}")
    add("")
    add("## Export options")
    add("")
    add("```json")
    add(json.dumps(options.as_json(), ensure_ascii=False, indent=2))
    add("```")
    return "\n".join(lines) + "\n"
