"""Reads for quality control: per-annotator figures, verdicts, and the one
"included annotators" filter that analysis and export use.

Figures are computed on demand from the stored judgements (regular ones with
status complete, plus control answers), so they always match the data; the
arithmetic lives in `annotations.quality.reliability` (pure).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from itertools import chain

from django.db.models import Q, QuerySet

from annotations import protocols
from annotations.analysis import agreement as ag
from annotations.models import Annotator, Assignment, Campaign, Item, JudgementBase
from annotations.models.quality import (
    AnnotatorDecision,
    CompletionCode,
    ControlJudgement,
    ControlUnit,
    GoldUnit,
    QualitySettings,
)
from annotations.protocols import Protocol
from annotations.quality import reliability
from annotations.quality.rules import Rules, Verdict, verdict
from annotations.selectors.figures_cache import cached
from annotations.selectors.outputs import output_identities

ALL, INCLUDED = "all", "included"


def quality_settings_get(*, campaign: Campaign) -> QualitySettings:
    """The campaign's settings (defaults, unsaved, when none were stored)."""
    found = QualitySettings.objects.filter(campaign=campaign).first()
    return found or QualitySettings(campaign=campaign)


def rules_of(*, campaign: Campaign) -> Rules:
    return Rules.from_dict(quality_settings_get(campaign=campaign).rules)


# --- the annotators' regular answers --------------------------------------------------


@dataclass
class _Answers:
    """Regular (complete) answers of one campaign, keyed for comparison by the protocol."""

    protocol: Protocol
    # annotator id -> {(unit key, criterion): value (Protocol.consensus_value)}
    by_annotator: dict = field(default_factory=lambda: defaultdict(dict))
    # annotator id -> values for straight-lining (Protocol.qc_habit: the score, or the screen position chosen)
    habits: dict = field(default_factory=lambda: defaultdict(list))
    # annotator id -> [time_spent_ms of each judgement]
    times: dict = field(default_factory=lambda: defaultdict(list))
    # annotator id -> criterion -> all scores (for z-scoring; scored protocols only)
    scores: dict = field(default_factory=lambda: defaultdict(lambda: defaultdict(list)))
    # (annotator, output id, criterion) -> what a degraded copy of the output is compared with
    # (Protocol.qc_originals)
    originals: dict = field(default_factory=lambda: defaultdict(list))

    # (output id, criterion) -> every annotator's originals, for outputs an annotator did not judge
    others: dict = field(default_factory=lambda: defaultdict(list))

    def originals_of(self, annotator: int, criterion: str):
        """output id -> that annotator's originals in this criterion, or, when they have none, the
        other annotators' (empty list: nobody's). A degraded copy is made of an output the annotator
        had not seen (annotations.quality.services.controls), whose original may never come to them."""
        return lambda output: (
            self.originals.get((annotator, output, criterion)) or self.others.get((output, criterion), [])
        )


def _regular_answers(campaign: Campaign, item_ids: list[int] | None = None) -> _Answers:
    """Every annotator's complete answers (everyone's: this is what decides who is included),
    on every item or on `item_ids` only."""
    from annotations.selectors.judgements import ALL, campaign_judgements  # lazy: own ALL clashes

    found = campaign_judgements(campaign=campaign, annotators=ALL, item_ids=item_ids)
    protocol = found.protocol
    answers = _Answers(protocol=protocol)
    # Bound once: this loop runs once per judgement of the campaign.
    unit_key, value_of, habit_of, originals_of = (
        protocol.unit_key,
        protocol.consensus_value,
        protocol.qc_habit,
        protocol.qc_originals,
    )
    by_annotator, habits, times, scores, originals, others = (
        answers.by_annotator,
        answers.habits,
        answers.times,
        answers.scores,
        answers.originals,
        answers.others,
    )
    scored = protocol.scored
    for row in found:
        annotator, criterion = row.annotator_id, row.criterion
        by_annotator[annotator][(unit_key(row), criterion)] = value_of(row)
        habits[annotator].append(habit_of(row))
        times[annotator].append(row.time_spent_ms)
        if scored:
            scores[annotator][criterion].append(row.score)
        for output, value in originals_of(row):
            originals[(annotator, output, criterion)].append(value)
            others[(output, criterion)].append(value)
    return answers


# --- control answers, put in comparable terms ----------------------------------------------


def _degraded_pair(cj: ControlJudgement, control: ControlUnit | None, answers: _Answers, campaign: Campaign):
    """(degraded value, original value, floor, passed) or None when the original answer is missing."""
    floor, _ = campaign.criterion_scale(cj.criterion)
    return answers.protocol.degraded_pair(
        cj, control, originals=answers.originals_of(cj.annotator_id, cj.criterion), floor=floor
    )


def _repeat_pair(cj: ControlJudgement, control: ControlUnit | None, answers: _Answers) -> list[tuple]:
    """(first answer, repeated answer) pairs of one repeat control judgement."""
    return answers.protocol.repeat_pairs(cj, control, answers.by_annotator.get(cj.annotator_id, {}))


# --- figures ---------------------------------------------------------------------------


def _campaign_annotators(campaign: Campaign) -> dict[int, str]:
    ids: set[int] = set()
    for model in (protocols.of(campaign).model, ControlJudgement):
        ids.update(model.objects.filter(campaign=campaign).values_list("annotator_id", flat=True).distinct())
    ids.update(Assignment.objects.filter(campaign=campaign).values_list("annotator_id", flat=True).distinct())
    return dict(Annotator.objects.filter(pk__in=ids).values_list("id", "name"))


def campaign_figures(*, campaign: Campaign) -> dict[int, reliability.Figures]:
    """Reliability figures of every annotator of the campaign, by annotator id.

    Cached like the analysis figures (`annotations.selectors.figures_cache.cached`): a new or changed
    judgement, control answer, gold unit, decision or setting changes the key. Computing them
    reads every judgement of the campaign (minutes at a million); reloads answer from the cache."""

    return cached(campaign, "quality-figures", {}, lambda: _campaign_figures(campaign))


def _annotator_items(campaign: Campaign, annotator_id: int) -> list[int]:
    """The items this annotator answered completely, and those of their control units (a degraded copy
    of an output they never judged is compared with the others' answers to it), in the order the
    campaign-wide read takes them."""

    judged = (
        protocols.of(campaign)
        .model.objects.filter(campaign=campaign, annotator_id=annotator_id, status=JudgementBase.Status.COMPLETE)
        .values("item_id")
    )
    controlled = ControlUnit.objects.filter(campaign=campaign, annotator_id=annotator_id).values("unit__item_id")
    return list(
        Item.objects.filter(Q(pk__in=judged) | Q(pk__in=controlled))
        .order_by("position", "id")
        .values_list("id", flat=True)
    )


def _campaign_figures(campaign: Campaign, only: int | None = None) -> dict[int, reliability.Figures]:
    """Every annotator's figures; with `only`, that annotator's alone, from the items they answered
    (each figure compares an annotator's answers with their own or with others' answers on the
    same units, so nothing outside those items changes it)."""
    if only is None:
        names = _campaign_annotators(campaign)
        answers = _regular_answers(campaign)
    else:
        names = dict(Annotator.objects.filter(pk=only).values_list("id", "name"))
        answers = _regular_answers(campaign, item_ids=_annotator_items(campaign, only))
    figures = {pk: reliability.Figures(annotator=name) for pk, name in names.items()}
    categorical = not answers.protocol.scored

    control_answers = ControlJudgement.objects.filter(campaign=campaign).order_by("id")
    control_units = ControlUnit.objects.filter(campaign=campaign)
    if only is not None:
        control_answers = control_answers.filter(annotator_id=only)
        control_units = control_units.filter(pk__in=control_answers.values("control_id"))
    controls = {c.pk: c for c in control_units.select_related("gold")}
    degraded: dict[int, list] = defaultdict(list)
    repeats: dict[int, list] = defaultdict(list)
    tutorial_tries: dict[int, int] = defaultdict(int)
    for cj in control_answers:
        fig = figures.get(cj.annotator_id)
        if fig is None:
            continue
        control = controls.get(cj.control_id)
        if cj.kind == ControlUnit.Kind.DEGRADED:
            pair = _degraded_pair(cj, control, answers, campaign)
            if pair is not None:
                value, original, floor, passed = pair
                degraded[cj.annotator_id].append(reliability.DegradedPair(cj.criterion, value, original, floor))
                fig.degraded_judged += 1
                fig.degraded_passed += bool(passed)
        elif cj.kind == ControlUnit.Kind.RELATIVE:
            if cj.passed is not None:  # known when answered (annotations.quality.services.answers)
                fig.relative_judged += 1
                fig.relative_passed += bool(cj.passed)
        elif cj.kind == ControlUnit.Kind.REPEAT:
            repeats[cj.annotator_id] += _repeat_pair(cj, control, answers)
        elif cj.kind == ControlUnit.Kind.GOLD:
            loud = control is not None and control.gold is not None and control.gold.mode == GoldUnit.Mode.LOUD
            if loud:
                tutorial_tries[cj.annotator_id] += 1
            elif cj.passed is not None:
                fig.gold_judged += 1
                fig.gold_passed += bool(cj.passed)

    assignment_times: dict[int, list] = defaultdict(list)
    done = Assignment.objects.filter(campaign=campaign, status=Assignment.Status.DONE)
    if only is not None:
        done = done.filter(annotator_id=only)
    for annotator, ms in done.values_list("annotator_id", "time_spent_ms"):
        assignment_times[annotator].append(ms)

    scale = None
    if answers.protocol.scored and campaign.criteria:
        low, high = campaign.criterion_scale(campaign.criteria[0])
        scale = (low, high)
    # Leave-one-out: everyone's answers per key.
    everyone: dict[tuple, dict[int, object]] = defaultdict(dict)
    for annotator, mine in answers.by_annotator.items():
        for key, value in mine.items():
            everyone[key][annotator] = value

    for pk, fig in figures.items():
        mine = answers.by_annotator.get(pk, {})
        fig.judgements = len(mine)
        if degraded[pk]:
            scores = {c: v for c, v in answers.scores.get(pk, {}).items()}
            fig.mann_whitney_p = reliability.degraded_test(degraded[pk], scores)
        fig.repeats_judged = len(repeats[pk])
        if answers.protocol.scored:
            fig.self_consistency = reliability.self_consistency(repeats[pk], scale=scale)
        else:
            fig.self_consistency = reliability.self_consistency(repeats[pk], categorical=True)
        times = [t for t in assignment_times.get(pk, []) if t is not None] or answers.times.get(pk, [])
        fig.median_seconds, fig.min_seconds = reliability.time_figures(times)
        others = {k: [v for a, v in everyone[k].items() if a != pk] for k in mine}
        fig.agreement_with_others = reliability.agreement_with_others(mine, others, categorical=categorical)
        fig.straight_lining = reliability.straight_lining(answers.habits.get(pk, []))
        fig.extra["tutorial_tries"] = tutorial_tries.get(pk, 0)
    return figures


# --- verdicts and the inclusion filter ----------------------------------------------------


@dataclass
class AnnotatorQuality:
    annotator_id: int
    figures: reliability.Figures
    rule_verdict: Verdict
    decision: AnnotatorDecision | None

    @property
    def included(self) -> bool:
        if self.decision is not None and self.decision.included is not None:
            return self.decision.included
        return self.rule_verdict.included

    @property
    def decided_by_hand(self) -> bool:
        return self.decision is not None and self.decision.included is not None

    def as_json(self) -> dict:
        """The `quality --json` entry (ARCHITECTURE.md keys first, then the details)."""
        f = self.figures
        return {
            "agreement_with_others": f.agreement_with_others,
            "controls_passed": f.controls_passed,
            "self_consistency": f.self_consistency,
            "median_seconds": f.median_seconds,
            "straight_lining": f.straight_lining,
            "included": self.included,
            "min_seconds": f.min_seconds,
            "mann_whitney_p": f.mann_whitney_p,
            "judgements": f.judgements,
            "degraded": {"judged": f.degraded_judged, "passed": f.degraded_passed},
            "gold": {"judged": f.gold_judged, "passed": f.gold_passed},
            "relative": {"judged": f.relative_judged, "passed": f.relative_passed},
            "repeats": f.repeats_judged,
            "tutorial_tries": f.extra.get("tutorial_tries", 0),
            "reasons": list(self.rule_verdict.reasons),
            "pending": list(self.rule_verdict.pending),
            "decision": None
            if not self.decided_by_hand
            else {
                "included": self.decision.included,
                "reason": self.decision.reason,
                "by": getattr(self.decision.decided_by, "username", None),
                "at": self.decision.created_at.isoformat(),
            },
        }


def latest_decisions(*, campaign: Campaign, annotator_id: int | None = None) -> dict[int, AnnotatorDecision]:
    """The hand decision in force for each annotator (or for `annotator_id` only), by annotator id."""
    latest: dict[int, AnnotatorDecision] = {}
    decisions = AnnotatorDecision.objects.filter(campaign=campaign)
    if annotator_id is not None:
        decisions = decisions.filter(annotator_id=annotator_id)
    for decision in decisions.select_related("decided_by").order_by("annotator_id", "-created_at", "-id"):
        latest.setdefault(decision.annotator_id, decision)
    return latest


def campaign_quality(*, campaign: Campaign) -> dict[int, AnnotatorQuality]:
    """Figures, rule verdict and hand decision of every annotator, by annotator id."""
    rules = rules_of(campaign=campaign)
    decisions = latest_decisions(campaign=campaign)
    return {
        pk: AnnotatorQuality(annotator_id=pk, figures=fig, rule_verdict=verdict(fig, rules), decision=decisions.get(pk))
        for pk, fig in campaign_figures(campaign=campaign).items()
    }


def annotator_quality(*, campaign: Campaign, annotator_id: int) -> AnnotatorQuality | None:
    """One annotator's standing, equal to `campaign_quality(...)[annotator_id]`, read from the items
    they answered only: a batch end's completion code asks for it, and reading the whole campaign
    there cost every batch end time that grows with the campaign (3.7 s at 200 annotators; 65 ms
    this way: bench/bench_batch_end.py)."""
    figures = _campaign_figures(campaign, only=annotator_id).get(annotator_id)
    if figures is None:
        return None
    decision = latest_decisions(campaign=campaign, annotator_id=annotator_id).get(annotator_id)
    return AnnotatorQuality(
        annotator_id=annotator_id,
        figures=figures,
        rule_verdict=verdict(figures, rules_of(campaign=campaign)),
        decision=decision,
    )


def included_annotators(
    *, campaign: Campaign, quality: dict[int, AnnotatorQuality] | None = None
) -> QuerySet[Annotator]:
    """The annotators whose judgements count when analysis and export ask for
    "included annotators only": everyone the rules keep, unless a researcher
    decided otherwise by hand. Excluded annotators' judgements stay stored."""
    quality = campaign_quality(campaign=campaign) if quality is None else quality
    return Annotator.objects.filter(pk__in=[pk for pk, q in quality.items() if q.included])


@dataclass(frozen=True)
class Inclusion:
    """Who counts under "included annotators only": the kept ids, the excluded names, and of how
    many annotators. THE count every surface prints ("n of m": the dashboard's figures through the
    reader, the quality page, the export): the annotators quality control has figures for."""

    keep: frozenset[int]
    excluded: tuple[str, ...]
    n_annotators: int

    @property
    def counted(self) -> str:
        return f"{self.n_annotators - len(self.excluded)} of {self.n_annotators}"


def inclusion(*, campaign: Campaign, quality: dict[int, AnnotatorQuality] | None = None) -> Inclusion:
    quality = campaign_quality(campaign=campaign) if quality is None else quality
    return Inclusion(
        keep=frozenset(pk for pk, q in quality.items() if q.included),
        excluded=tuple(sorted(q.figures.annotator for q in quality.values() if not q.included)),
        n_annotators=len(quality),
    )


def annotator_filter(*, campaign: Campaign, which: str = INCLUDED) -> tuple[QuerySet[Annotator] | None, str]:
    """(annotators to keep or None for all, a label for figures saying which filter was used)."""
    if which == ALL:
        return None, "all annotators"
    quality = campaign_quality(campaign=campaign)
    kept = inclusion(campaign=campaign, quality=quality)
    label = (
        f"included annotators only ({kept.counted}; excluded: {', '.join(kept.excluded) if kept.excluded else 'none'})"
    )
    return included_annotators(campaign=campaign, quality=quality), label


def completion_code_list(*, campaign: Campaign) -> QuerySet[CompletionCode]:
    return (
        CompletionCode.objects.filter(campaign=campaign)
        .select_related("annotator")
        .order_by("annotator__name", "batch")
    )


def latest_completion_code(*, campaign: Campaign, annotator) -> CompletionCode | None:
    """The annotator's code of their last batch in the campaign, if one was issued."""
    return CompletionCode.objects.filter(campaign=campaign, annotator=annotator).order_by("-batch").first()


def gold_unit_list(*, campaign: Campaign) -> QuerySet[GoldUnit]:
    return GoldUnit.objects.filter(campaign=campaign).select_related("item")


# Rows fed to campaign_agreement's tables at a time.
AGREEMENT_ROWS = 5_000


def campaign_agreement(*, campaign: Campaign) -> dict[str, dict]:
    """Per criterion, the headline agreement (the one definition, `annotations.analysis.agreement`)
    over all annotators and over the included ones: {criterion: {"all": headline, "included": headline}}.
    Cached like `campaign_figures`."""

    return cached(campaign, "quality-agreement", {}, lambda: _campaign_agreement(campaign))


def _campaign_agreement(campaign: Campaign) -> dict[str, dict]:
    from annotations.selectors.judgements import ALL, INCLUDED, campaign_judgements  # lazy: own INCLUDED clashes

    out: dict[str, dict] = {}
    identity = output_identities(dataset=campaign.dataset)
    judged: set[int] = set()
    for which in (ALL, INCLUDED):
        found = campaign_judgements(campaign=campaign, annotators=which)
        if which == INCLUDED and (found.keep is None or judged <= found.keep):
            # Nobody who judged is excluded: the same rows, the same figures; not read a second
            # time (the first visit of the quality page read every judgement twice, issue 46).
            for figures in out.values():
                figures[INCLUDED] = {**figures[ALL], "annotators": found.used}
            break
        builders, annotators = _criterion_tables(found, identity)
        if which == ALL:
            judged = annotators
        order = [c for c in campaign.criteria if c in builders] + sorted(
            c for c in builders if c not in campaign.criteria
        )
        for criterion in order:
            figures = ag.criterion_agreement(
                found.protocol,
                [],
                scale=campaign.criterion_scale(criterion),
                annotators=found.used,
                table=builders.pop(criterion).table(),
            )
            out.setdefault(criterion, {})[which] = figures["headline"]
    return out


def _criterion_tables(found, identity: dict) -> tuple[dict, set[int]]:
    """Each criterion's reliability table (and who judged), fed a chunk of rows at a time as the
    reader streams them: a few numbers a judgement, never every row held (issue 46)."""
    builders: dict[str, ag.TableBuilder] = {}
    annotators: set[int] = set()
    chunk: list = []
    for row in chain(found, [None]):  # None: the end, the last chunk fed
        if row is not None:
            annotators.add(row.annotator_id)
            chunk.append(row)
        if len(chunk) >= AGREEMENT_ROWS or (row is None and chunk):
            by_criterion: dict[str, list] = defaultdict(list)
            for r in chunk:
                by_criterion[r.criterion].append(r)
            for c, mine in by_criterion.items():
                if c not in builders:
                    builders[c] = ag.TableBuilder(found.protocol, identity=identity, batch=AGREEMENT_ROWS)
                builders[c].add(mine)
            chunk = []
    return builders, annotators


def quality_control_active(*, campaign: Campaign) -> bool:
    """Whether anything can include or exclude annotators of this campaign: settings or
    rules set, control answers, gold units, or decisions by hand."""
    return (
        QualitySettings.objects.filter(campaign=campaign).exists()
        or ControlJudgement.objects.filter(campaign=campaign).exists()
        or GoldUnit.objects.filter(campaign=campaign).exists()
        or AnnotatorDecision.objects.filter(campaign=campaign).exists()
    )


def annotators_judged(*, campaign: Campaign) -> set[int]:
    """Ids of the annotators with a counted (complete) judgement in the campaign."""
    model = protocols.of(campaign).model
    return set(
        model.objects.filter(campaign=campaign, status=JudgementBase.Status.COMPLETE)
        .values_list("annotator_id", flat=True)
        .distinct()
    )


def included_annotator_ids(*, campaign: Campaign) -> set[int] | None:
    """For the analysis readers (`annotations.selectors.outputs`): the ids of the included
    annotators, or None while quality control is not in use for the campaign (nobody
    can be excluded then, and figures say "no quality control yet")."""
    kept = campaign_inclusion(campaign=campaign)
    return None if kept is None else set(kept.keep)


def campaign_inclusion(*, campaign: Campaign) -> Inclusion | None:
    """`inclusion` for the analysis readers, or None while quality control is not in use."""
    if not quality_control_active(campaign=campaign):
        return None
    return inclusion(campaign=campaign)
