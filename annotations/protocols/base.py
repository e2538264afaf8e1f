"""What every human-evaluation protocol provides, and the typed judgement row they all read.

One class per protocol (`annotations.protocols.<name>`), registered in
`annotations.protocols.registry`; the rest of the code asks the registry and
never branches on a protocol's name (STYLE.md 14). A protocol owns:

- its judgement model and the fields of its rows (`model`, `fields`);
- what a unit is and how units are planned (`plan_item`);
- the agreement unit and value (`agreement_triples`, `agreement`): the one
  definition every surface (dashboard, `agreement`, quality page, card) uses;
- the human score of an output (`output_scores`) and, for choice protocols,
  the system-level wins behind Bradley-Terry (`wins`);
- its export row (`export_fields`), aggregated human scores and unit consensus
  (`output_stats`, `unit_consensus`) and its lines of the dataset card (`card_design`);
- quality control's comparisons: an answer's straight-lining habit (`qc_habit`), a degraded
  copy against the original (`qc_originals`, `degraded_pair`, `degraded_shown`), a repeat
  against the first answer (`repeat_pairs`), a control unit's answer (`control_answer`,
  `gold_answers`);
- every conversion of one answer: to the stored row and back (`judgement_row`, `stored_answer`),
  to the page's draft (`draft_answer`), from a control's record and file line
  (`control_submission`, `control_file_answer`), its gold check (`gold_problems`), its spans
  (`spans_of`);
- its value for adaptive allocation (`allocation_observations`) and its simulated annotator
  (`simulated_answers`, the demo and the tests);
- its page (`template`, `script`, `script_registers`);
- the shape of its lines in `import_judgements` (the `ImportShape` mixin, annotations.protocols.imports).

Protocols are registered by dotted path in the setting WORKBENCH_PROTOCOLS (registry.py); a
campaign stores the name, so adding one needs no migration.

Adding a protocol: docs/architecture.md, "Add a protocol".
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from django.core.exceptions import ValidationError

from annotations.models import JudgementBase
from annotations.protocols.common_options import (
    COMMON,
    CONTEXT_DOCUMENT,
    DOCUMENT_REFUSAL,
    RELATIVE,
    RELATIVE_NAMES,
    RELATIVE_REFUSAL,
    SPAN_TEXT,
    context_summary,
)
from annotations.protocols.errors import AnswerError
from annotations.protocols.imports import ImportShape
from annotations.protocols.options import Option, OptionsInvalid, options_clean
from annotations.protocols.rows import JudgementRow
from annotations.protocols.stats import degraded_passed, pstdev, stdev, zscore_by_annotator
from workbench.lazy import lazy_module

# numpy is imported on first use, not by every web worker at start-up (workbench.lazy, issue 45).
np = lazy_module("numpy")

# Levels of Krippendorff's alpha every surface may show, headline first per protocol.
LEVELS = ("nominal", "ordinal", "interval")
RAW, Z = "raw", "z"


# The damaged copy's key in an imported relative check's answer (output ids start at 1).
RELATIVE_COPY = 0


@dataclass(frozen=True)
class AgreementSpec:
    """What a protocol's agreement figure measures; every surface prints this label."""

    level: str  # headline level of Krippendorff's alpha
    variant: str  # RAW, or Z: values z-scored per annotator and criterion first
    unit: str  # what several annotators judge alike
    value: str  # what is compared

    def label(self) -> str:
        variant = "per-annotator z-scores" if self.variant == Z else "raw values"
        return f"Krippendorff's alpha ({self.level}, {variant}; unit: {self.unit})"


class Protocol(ImportShape):
    """Base class: subclasses set the attributes and override what differs."""

    name: str = ""
    label: str = ""
    # Its guide in the documentation site (relative to /docs/): the campaign set-up page links it.
    guide: str = "reference/protocols/"
    model = None  # the judgement model
    # Fields read for a row beyond the common ones, in JudgementRow's names.
    fields: tuple[tuple[str, str], ...] = ()
    # Answers name an output each (ratings, ESA) or answer for the whole unit (pairwise, best-worst).
    per_output: bool = True
    # Scores on a scale (Likert, ESA) or unbounded magnitudes (RankME); None for choices.
    scored: bool = True
    # `correlate` on this protocol reports metric-human agreement on the judged pairs
    # (ARCHITECTURE.md: "for pairwise campaigns, metric-human agreement") instead of a correlation.
    correlate_as_pair_agreement: bool = False
    agreement: AgreementSpec
    template: str = ""  # the unit's template partial
    script: str = ""  # its JS module under static/
    # Modules its script needs, loaded before it (static paths; the span protocols: the span marker).
    scripts_first: tuple[str, ...] = ()
    # The name its script registers with annotate.js (`Annotate.register`): its own, unless the
    # protocol reuses another protocol's page module unchanged (a Likert variant on likert.js).
    script_registers: str = ""
    shortcuts: str = ""  # its lines of the keyboard-shortcuts panel (a template partial)
    # How the page names the outputs of a unit, by position ("AB": A and B); "" numbers them 1, 2, ...
    output_labels: str = ""
    # Which way the human score of an output (`output_scores`) points: False for error rates
    # (post-editing's HTER). Rankings put the best first and `correlate` orients it as it orients
    # a metric, so a good metric correlates positively whichever way either points.
    higher_is_better: bool = True

    # ---- campaign settings ----------------------------------------------------------------
    # Whether judgements are on a rating scale at all, whether a campaign must name one, and
    # the scale used when it names none (also what the set-up form puts in a criterion's scale
    # when the protocol is chosen; `form_scale` where the form suggests one the protocol does not impose).
    has_scale: bool = True
    scale_required: bool = False
    default_scale: tuple[float, float] | None = None
    # The lowest human score of an output (`output_scores`) where the campaign has no scale: what
    # CV* shifts scores by so that they start at 0 (analysis/waves.py).
    score_floor: float = 0.0
    form_scale: tuple[float, float] | None = None
    # ESA-style spans with severities, and the RankME anchor shown beside the outputs.
    has_spans: bool = False
    shows_anchor: bool = False
    # Scores of several outputs on one screen that also give pairwise preferences (cESA): the
    # analysis adds the pairwise protocol's figures over `pair_rows`, labelled with this.
    derives_pairs: bool = False
    derived_pairs_label: str = ""

    # The protocol's own settings, stored in `Campaign.options` (annotations.protocols.options):
    # the form, the API, `create_campaign`, campaign.json, its JSON Schema and the card derive
    # their fields from this declaration.
    options: tuple[Option, ...] = ()
    # Set-up form fields of the protocol that are not stored options (ESA^AI's prefill run).
    extra_setup_fields: tuple[str, ...] = ()
    # The REST endpoint that lists and takes this protocol's judgements one by one.
    api_path: str = ""

    # Screens of several outputs where one may be a degraded copy of another (relative attention
    # checks, issue 41 part 5): such a protocol gets the options `relative_checks` and
    # `relative_damage` and says when a check passed (`relative_passed`).
    relative_checks: bool = False
    # Whether a campaign may show whole documents (option context=document, issue 41): every segment
    # of a document judged on one screen, each output's answer stored as a per-output judgement of its
    # own segment. Protocols that score each output on its own offer it; choices over a tuple do not.
    documents: bool = False

    def __init_subclass__(cls, **kwargs):
        # Every protocol offers the common settings (annotations.protocols.common_options) after its
        # own; a subclass that starts from its parent's options (cESA from ESA) gets them once.
        super().__init_subclass__(**kwargs)
        common = COMMON + ((SPAN_TEXT,) if cls.has_spans else ()) + (RELATIVE if cls.relative_checks else ())
        names = {o.name for o in common} | set(RELATIVE_NAMES)
        cls.options = tuple(o for o in cls.options if o.name not in names) + common

    @property
    def client_name(self) -> str:
        """The protocol the page's script starts (the page config's `protocol`)."""
        return self.script_registers or self.name

    @property
    def setup_fields(self) -> tuple[str, ...]:
        """The protocol's own fields of the campaign set-up form (shown only when it is chosen)."""
        return tuple(o.name for o in self.options) + self.extra_setup_fields

    def option_declared(self, name: str) -> Option | None:
        return next((o for o in self.options if o.name == name), None)

    def option(self, campaign, name: str):
        """A campaign's value of one of this protocol's options (its default when the campaign
        predates the option). Reads the loaded row: no query."""
        value = (campaign.options or {}).get(name)
        if value is None:
            declared = self.option_declared(name)
            value = None if declared is None else declared.default
        return value

    def options_check(self, given) -> dict:
        """A campaign's options (a JSON object), checked and completed with the defaults; a
        ValidationError under "options" with one "options.NAME: reason" line per problem."""

        refused = [
            f"options.{name}: {self.option_refusal(name)}"
            for name in (given if isinstance(given, Mapping) else ())
            if self.option_refusal(name)
        ]
        if refused:
            raise ValidationError({"options": refused})
        try:
            cleaned = options_clean(self.options, given, protocol=self.name)
            self.options_relate(cleaned)
        except OptionsInvalid as exc:
            raise ValidationError({"options": exc.problems}) from None
        if cleaned.get("context") == CONTEXT_DOCUMENT and not self.documents:
            from annotations.protocols import registry  # lazy: the registry imports every protocol class

            offered = ", ".join(p.name for p in registry.protocols().values() if p.documents)
            raise ValidationError(
                {"options": [f"options.context: {DOCUMENT_REFUSAL.format(protocol=self.name, offered=offered)}"]}
            )
        return cleaned

    def option_refusal(self, name: str) -> str:
        """Why this protocol has no option `name` that protocols of another capability declare
        (relative attention checks need several outputs on a screen); "" for any other name."""
        if name in RELATIVE_NAMES and not self.relative_checks:
            from annotations.protocols import registry  # lazy: the registry imports every protocol class

            offered = ", ".join(p.name for p in registry.protocols().values() if p.relative_checks)
            return RELATIVE_REFUSAL.format(protocol=self.name, offered=offered)
        return ""

    def allocation_criterion(self, campaign) -> str:
        """The criterion adaptive allocation ranks by: the campaign's `adaptive_criterion` when it is
        one of its criteria, else the first."""
        chosen = self.option(campaign, "adaptive_criterion")
        criteria = list(campaign.criteria or [""])
        return chosen if chosen in criteria else criteria[0]

    def notes_offered(self, campaign) -> bool:
        """Whether the campaign offers special answers or a free-text field per unit (no query)."""
        return bool(self.option(campaign, "unit_text") or self.option(campaign, "special_answers"))

    def options_relate(self, options: dict) -> None:
        """Checks between options (MQM: a weight for every severity offered); OptionsInvalid."""

    def settings_summary(self, campaign) -> list[tuple[str, str]]:
        """(label, value) rows the campaign page shows for this protocol's own settings."""
        rows = [
            (o.title or o.label, o.format(self.option(campaign, o.name)))
            for o in self.options
            if o.format(self.option(campaign, o.name))
        ]
        context = context_summary(campaign.options or {})
        return rows + ([("Document context", context)] if context else [])

    def anchor(self, campaign) -> float | None:
        """The magnitude of the anchor output shown beside the outputs (`shows_anchor` protocols)."""
        return None

    def client_settings(self, campaign) -> dict:
        """The protocol's own settings an annotation page or client needs (no system names)."""
        return {}

    def outputs_per_unit(self, campaign) -> int:
        """How many outputs one screen shows (the set-up preview builds a unit this size)."""
        return 1 if self.per_output else self.option(campaign, "tuple_size") or 4

    def settings_check(self, *, scale: tuple) -> dict:
        """The protocol's part of a campaign's scale, defaults filled in; ValidationError
        (keyed by the setting) for what this protocol does not allow."""

        low, high = scale
        if low is None and self.default_scale is not None:
            low, high = self.default_scale
        if not self.has_scale and low is not None:
            raise ValidationError({"scale_min": f"A {self.name} campaign has no rating scale."})
        return {"scale_min": low, "scale_max": high}

    def criterion_scale_check(self, criterion: str, low, high) -> None:
        """A criterion's own scale: refused by protocols without scales, required by some."""

        if not self.has_scale and low is not None:
            raise ValidationError({"criteria_config": f"{criterion}: a {self.name} campaign has no rating scale."})
        if self.scale_required and low is None:
            raise ValidationError(
                {"scale_min": f"{criterion}: a Likert / direct-assessment criterion needs a scale, e.g. 1-5 or 0-100."}
            )

    def judged_outputs(self, judgements, output_ids: set[int]) -> set[int]:
        """Which of a unit's outputs these judgements (a queryset of one annotator, item and
        criterion) cover."""
        return set(judgements.filter(output_id__in=output_ids).values_list("output_id", flat=True))

    # ---- units --------------------------------------------------------------------------

    def plan_item(
        self, campaign, item_index: int, outputs: list[tuple[int, int]], rng: random.Random
    ) -> Iterator[list[tuple[int, int]]]:
        """The units of one item: groups of (output id, system id)."""
        for output in outputs:
            yield [output]

    def document_screens(self, campaign, systems: list[int], rng: random.Random) -> list[list[int]]:
        """Which systems share a document unit (context=document): each system alone by default; a
        protocol showing several outputs per screen (cESA) groups them. `systems` sorted ids."""
        return [[s] for s in systems]

    def plan_document(
        self, campaign, segments: list[tuple[int, list[tuple[int, int]]]], rng: random.Random
    ) -> Iterator[tuple[int, list[tuple[int, int]]]]:
        """The units of one document (context=document): `segments` its items in document order, each
        (item id, [(output id, system id), ...]). Yields (first item id, outputs) per unit: the document,
        or consecutive parts of at most `doc_max_segments` segments of about equal length (split at
        segment boundaries, in order), for each group of `document_screens`. The outputs are listed
        segment by segment and, within a segment, by system id: the engine finds the segments by that
        order (`document_segments`) and orders the systems per screen (counterbalancing)."""
        most = max(1, int(self.option(campaign, "doc_max_segments") or 12))
        systems = sorted({s for _, outputs in segments for _, s in outputs})
        parts = chunks_even(segments, most, largest=most)
        for screen in self.document_screens(campaign, systems, rng):
            chosen = set(screen)
            for part in parts:
                group = [
                    output
                    for _, outputs in part
                    for output in sorted(outputs, key=lambda o: o[1])
                    if output[1] in chosen
                ]
                if group:
                    first = next(item for item, outputs in part if any(s in chosen for _, s in outputs))
                    yield first, group

    def units_of_item(self, campaign, n_outputs: int) -> int:
        """How many units `plan_item` makes of an item with `n_outputs` outputs, without making
        them: the size of a campaign is known (and capped) before it is planned."""
        return n_outputs

    # ---- agreement ---------------------------------------------------------------------------

    def agreement_triples(self, rows: Iterable[JudgementRow]) -> Iterator[tuple[object, int, float]]:
        """(unit key, annotator id, value) for one criterion's rows; values before any z-scoring."""
        for r in rows:
            yield r.output_id, r.annotator_id, float(r.score)

    def agreement_unit_identity(self, key, identity: Mapping[int, tuple]) -> tuple[tuple, bool]:
        """The unit `key` of `agreement_triples` in the data's own terms (each output as
        `identity[output id]`: item external id, system name), and whether its values change
        sign there. Units are ordered by it before any resampling, so a bootstrap draws the
        same units from the same data however and in whatever order it was imported."""
        return output_identity(identity, key), False

    # ---- one answer, converted (the submit, the revise page, control units) --------------------
    # An answer is the dict a submission sends (output ids); these turn it into the stored row and
    # back, into the page's draft and out of a control's record, so no caller takes it apart by shape.

    def judgement_row(self, campaign, base: dict, answer: Mapping, order: Sequence[int]) -> tuple:
        """(unsaved judgement, its spans or None) for one checked answer (`check_answer`) of a unit:
        `base` the common fields, `order` the unit's outputs as shown."""
        low, high = campaign.criterion_scale(answer["criterion"])
        return self.model(
            **base,
            criterion=answer["criterion"],
            output_id=answer["output"],
            score=answer["score"],
            scale_min=low,
            scale_max=high,
        ), None

    def stored_answer(self, judgement, *, order: Sequence[int], campaign) -> dict:
        """A stored judgement as the submission that stored it sent it (the revise page starts there)."""
        return {"criterion": judgement.criterion, "output": judgement.output_id, "score": judgement.score}

    def control_submission(self, criterion: str, record: Mapping, order: Sequence[int]) -> list[dict]:
        """A control unit's stored answer for one criterion (built by `control_answer`) as a
        submission's answers, in the order shown."""
        return [
            {"criterion": criterion, "output": int(output), "score": score}
            for output, score in (record.get("scores") or {}).items()
        ]

    def draft_answer(self, answer: Mapping, draft: dict, *, index: int, page_id) -> None:
        """Put one answer into the draft `annotate.js` restores (`fields` by input name, `touched`);
        `index` is the criterion's position, `page_id(output id)` the id the page names an output by."""
        name = f"s-{index}-{page_id(answer['output'])}"
        draft["fields"][name] = input_number(answer["score"])
        draft["touched"].append(name)

    # Whether the campaign's quality control can add control units (degraded copies, repeats, gold)
    # to it: a protocol whose answer cannot be judged on an unseen copy says no, and
    # quality_settings_update / gold_unit_create refuse controls for it with this reason.
    controls_refused: str = ""

    def controls_refusal(self, campaign) -> str:
        """Why this campaign can have no control units ("": it can): the protocol's own reason. In
        document mode degraded copies, repeats and relative checks copy a whole document unit, so
        they look like the regular ones (annotations.quality.services.controls)."""
        return self.controls_refused

    def gold_refusal(self, campaign) -> str:
        """Why this campaign can have no gold units ("": it can): the protocol's reason for every
        control. In document mode a gold unit is a whole document
        (annotations.quality.services.gold_units)."""
        return self.controls_refused

    # Quality-control files: how a degraded line of a protocol answering for the whole unit says
    # which output was damaged.
    degraded_file_hint: str = ""

    def control_file_answer(
        self, obj: Mapping, *, control: str, item_id: int, lookup, check, errors: list[str]
    ) -> tuple[dict, int | None, dict[str, int]] | None:
        """The answer of a quality-control file line (`obj`, keys already checked): (the control's
        answer record, the output it is about or None, {system name: output id} it names), or None
        with `errors`. `lookup.output(item, system, errors, what)`, `lookup.text(output)`;
        `check(answer, texts)` the protocol's `check_answer` (None and errors when refused)."""
        output_id = lookup.output(item_id, obj["system"], errors, "system")
        answer = {"score": obj.get("score")}
        texts = None
        if self.has_spans:
            answer["spans"] = obj.get("spans", [])
            # A degraded copy's text is not stored: its offsets are checked for order only.
            if output_id is not None and control != "degraded":
                answer["output"] = output_id
                texts = {output_id: lookup.text(output_id)}
        checked = check(answer, texts)
        record = {}
        if checked is not None:
            record["score"] = checked["score"]
            if self.has_spans:
                record["spans"] = obj.get("spans", [])
        return record, output_id, ({obj["system"]: output_id} if output_id is not None else {})

    # Relative attention checks in files (`"control": "relative"`, annotations.quality.imports and the
    # export's controls.jsonl), one line a screen: `degraded` names the system whose output was shown
    # damaged (its clean output may be on the screen too), and the protocol's keys the answer. Scored
    # protocols: `"scores": {system: score}` of the clean outputs and `"degraded_score"` of the copy;
    # span protocols optionally `"spans": {system: [span, ...]}` and `"degraded_spans"`. In the stored
    # answer the copy is `RELATIVE_COPY` (output ids start at 1), the other keys real output ids.
    relative_file_keys: frozenset = frozenset({"scores", "degraded_score"})
    relative_file_optional: frozenset = frozenset({"spans", "degraded_spans"})
    # Why a relative line cannot be imported for this protocol ("": it can).
    relative_file_refused: str = ""

    def relative_file_answer(
        self, obj: Mapping, *, item_id: int, lookup, check, errors: list[str]
    ) -> tuple[dict, int] | None:
        """A relative check line's answer as `control_answer` records it (output ids for alias ids, the
        copy as RELATIVE_COPY) and the output that was damaged; None with `errors`."""
        scores, spans = obj["scores"], obj.get("spans", {})
        if not isinstance(scores, dict) or not scores:
            errors.append("scores must map the systems of the clean outputs to their scores")
            return None
        if not self.has_spans and ({"spans", "degraded_spans"} & set(obj)):
            errors.append(f"a {self.name} relative check has no spans")
            return None
        if not isinstance(spans, dict) or not set(spans) <= set(scores):
            errors.append("spans must map systems named in scores to their spans")
            return None
        names = {system: lookup.output(item_id, system, errors, "scores") for system in scores}
        damaged = lookup.output(item_id, obj["degraded"], errors, "degraded")
        if errors:
            return None
        entries = [(output_id, scores[system], spans.get(system, []), False) for system, output_id in names.items()]
        entries.append((damaged, obj["degraded_score"], obj.get("degraded_spans", []), True))
        record: dict = {"scores": {}}
        for output_id, score, marked, copy in entries:
            answer, texts = {"score": score}, None
            if self.has_spans:
                answer["spans"] = marked
                # A degraded copy's text is not stored: its offsets are checked for order only.
                if not copy:
                    answer["output"], texts = output_id, {output_id: lookup.text(output_id)}
            checked = check(answer, texts)
            if checked is None:
                return None
            key = str(RELATIVE_COPY if copy else output_id)
            record["scores"][key] = checked["score"]
            if self.has_spans:
                record.setdefault("spans", {})[key] = marked
        return record, damaged

    def relative_file_line(self, answer: Mapping, name: Callable[[int], str], copy: int) -> dict:
        """A relative check's answer (`control_answer`'s record) as a file line's keys, the inverse of
        `relative_file_answer`; `name(id)` the system of an id of the answer, `copy` the copy's id."""
        line: dict = {"scores": {}}
        for key, score in (answer.get("scores") or {}).items():
            if int(key) == copy:
                line["degraded_score"] = score
            else:
                line["scores"][name(int(key))] = score
        if self.has_spans:
            for key, marked in (answer.get("spans") or {}).items():
                if not marked:
                    continue
                if int(key) == copy:
                    line["degraded_spans"] = marked
                else:
                    line.setdefault("spans", {})[name(int(key))] = marked
        return line

    def gold_problems(self, spec: Mapping, answer: Mapping) -> list[str]:
        """What is wrong with a control's `answer` against a gold unit's expectation `spec` (none: it
        passed). Scores: the expected range."""
        problems = []
        if "min" in spec or "max" in spec:
            score = answer.get("score")
            low, high = spec.get("min", -math.inf), spec.get("max", math.inf)
            if score is None or not low <= score <= high:
                bounds = (
                    f"{low:g} to {high:g}"
                    if "min" in spec and "max" in spec
                    else f"at least {low:g}"
                    if "min" in spec
                    else f"at most {high:g}"
                )
                problems.append(f"the score is outside the expected range ({bounds})")
        return problems

    def spans_of(self, judgement) -> list[dict]:
        """A stored judgement's error spans (`span_record` each); none for protocols without spans."""
        return []

    # ---- allocation ----------------------------------------------------------------------------

    def allocation_observations(self, campaign, criterion: str) -> list[tuple[int, str, float]]:
        """(item id, system id as text, value) of every complete judgement of `criterion`, higher
        = better: what adaptive allocation compares systems by (annotations.allocation). Scored
        protocols: each output's score, read from the protocol's own judgement model."""

        return [
            (item, str(system), float(score))
            for item, system, score in self.model.objects.filter(
                campaign=campaign,
                criterion=criterion,
                status=JudgementBase.Status.COMPLETE,
            ).values_list("item_id", "output__system_id", "score")
        ]

    # ---- simulated annotators (the demo's finished campaigns, tests) ----------------------------

    def simulated_answers(self, campaign, criterion: str, outputs: Sequence[Mapping], impression, rng) -> list[dict]:
        """A simulated annotator's answers to one question of a unit, in the unit API's shape (output
        ids): `outputs` as the annotator's payload shows them (`id`, `text`), `impression(output)` the
        annotator's 0-100 opinion of one (drawn once per output, in order), `rng` their random.Random.
        Default: a score per output, the impression put on the criterion's scale (magnitudes: twice
        the impression, at least 1), plus `simulated_extra`."""
        low, high = campaign.criterion_scale(criterion)
        answers = []
        for output in outputs:
            value = impression(output)
            answer = {"criterion": criterion, "output": output["id"]}
            if self.has_scale:
                answer["score"] = (
                    float(round(max(1.0, 2 * value)))
                    if low is None or high is None
                    else float(round(low + (high - low) * value / 100))
                )
            answer.update(self.simulated_extra(campaign, output, value, rng))
            answers.append(answer)
        return answers

    def simulated_extra(self, campaign, output: Mapping, value: float, rng) -> dict:
        """What a simulated answer adds to the score of one output (span protocols: spans)."""
        return {}

    # ---- human scores ------------------------------------------------------------------------

    def output_scores(self, rows: list[JudgementRow], *, normalize: str = "none") -> dict[int, float]:
        """Segment-level human score of each output, for one criterion: mean of its ratings
        (after per-annotator z-scoring with normalize="z")."""
        if not rows:
            return {}
        values = np.array([r.score for r in rows], dtype=float)
        if normalize == "z" or self.agreement.variant == Z:
            values = zscore_by_annotator(np.array([r.annotator_id for r in rows]), values)
        sums: dict[int, list] = defaultdict(list)
        for r, v in zip(rows, values):
            sums[r.output_id].append(v)
        return {o: float(np.mean(v)) for o, v in sums.items()}

    # A document's own total beside the mean of its segments' scores (analysis.documents), under this
    # name; "" for none. MQM: the document's penalty.
    document_total_name: str = ""

    def document_total(self, segment_scores: list[float]) -> float | None:
        """A document's total from its segments' human scores (`output_scores`); None: no total."""
        return None

    def pair_rows(self, rows: Iterable[JudgementRow]) -> list[JudgementRow]:
        """Pairwise rows (a_id < b_id, winner) implied by the answers (`derives_pairs` protocols)."""
        return []

    def pairs_protocol(self) -> Protocol | None:
        """The protocol whose figures (agreement, win rates) the `pair_rows` get (`derives_pairs`)."""
        return None

    def wins(self, rows: list[JudgementRow], system_of: dict[int, str]) -> list[tuple[str, str]]:
        """(winner system, loser system) pairs for Bradley-Terry; empty for scored protocols."""
        return []

    # ---- export -------------------------------------------------------------------------------

    def unit_key(self, row: JudgementRow) -> tuple:
        """What several annotators judge alike, for counting judges of a unit (export filters)."""
        return (row.output_id,)

    def consensus_value(self, row: JudgementRow):
        """The answer, comparable across annotators of the same unit."""
        return row.score

    # Keys of an output's aggregated human scores per criterion in outputs.jsonl, the same for every
    # output of a campaign (tables have fixed columns); `stat_counts` start at 0, the others at None.
    stat_keys: tuple[str, ...] = ("n", "mean", "sd", "consensus")
    stat_counts: frozenset = frozenset({"n"})
    # JudgementRow attributes a judgements.jsonl row carries after `score` (the import format).
    export_extra: tuple[str, ...] = ()
    # Whether a unit shows one output (the card's counterbalancing line); others show several side by side.
    one_output_per_unit: bool = True

    def export_fields(
        self, row: JudgementRow, *, name, annotator: str, text, shown: list[int]
    ) -> tuple[dict, dict, list[int]]:
        """The protocol's part of a judgements.jsonl row, between "item" and "time_spent_ms", in the
        judgement import format: (fields, output texts for the provenance, the shown order as output
        ids). `name` and `text` give an output's system name and text; `shown` is the stored order."""
        fields = {"system": name(row.output_id), "annotator": annotator, "criterion": row.criterion, "score": row.score}
        fields.update((key, getattr(row, key)) for key in self.export_extra)
        return fields, {"output_text": text(row.output_id)}, shown

    def empty_stats(self) -> dict:
        return {key: 0 if key in self.stat_counts else None for key in self.stat_keys}

    def output_stats(
        self, rows: Iterable[JudgementRow], *, output_ids: list[int], criteria: list[str], scales: dict[str, tuple]
    ) -> dict[int, dict[str, dict]]:
        """output id -> criterion -> aggregated human scores, for the outputs of one item: n, mean,
        sd (sample standard deviation, n >= 2) and the unit's consensus."""
        stats = {o: {c: self.empty_stats() for c in criteria} for o in output_ids}
        scores: dict[tuple, list] = defaultdict(list)
        for r in rows:
            scores[(r.output_id, r.criterion)].append(r.score)
        for (output, criterion), values in scores.items():
            entry = stats.get(output, {}).get(criterion)
            if entry is None:
                continue
            entry["n"] = len(values)
            entry["mean"] = sum(values) / len(values)
            entry["sd"] = stdev(values) if len(values) > 1 else None
            entry["consensus"] = self.unit_consensus(values, scales.get(criterion, (None, None)))
        return stats

    def unit_consensus(self, values: list, scale: tuple = (None, None)) -> float | None:
        """How far the annotators of one unit agree, from 0 to 1 (None: judged once, or no bounded
        scale): 1 - s / ((hi - lo) / 2), s the population standard deviation of the unit's scores
        (1: everyone gave the same score; 0: half at each end of the scale)."""
        if len(values) < 2:
            return None
        low, high = scale
        if low is None or high is None or high <= low:
            return None
        return max(0.0, 1.0 - pstdev(values) / ((high - low) / 2))

    def card_design(self, config: dict, fmt) -> list[str]:
        """The protocol's own lines in the dataset card's "3.3 Experimental design" (`config`:
        campaign.json, its `options` completed with the defaults; `fmt` formats a number for the card):
        one line per declared option, then `card_extra`."""
        given = config.get("options") or {}
        lines = []
        for o in self.options:
            value = given.get(o.name, o.default)
            text = fmt(value) if isinstance(value, float) and o.summary is None else o.format(value)
            if text:
                lines.append(f"- {o.title or o.label}: {text}")
        context = context_summary(given)
        if context:
            lines.append(f"- Document context: {context}")
        return lines + self.card_extra(config, fmt)

    def card_extra(self, config: dict, fmt) -> list[str]:
        """Card lines beyond the options (what the protocol's design means)."""
        return []

    # ---- quality control -----------------------------------------------------------------------
    # Regular answers are keyed (unit_key, criterion) and compared by consensus_value.
    # A control line of an imported file names its answer with these keys (beyond item, annotator,
    # criterion, control); a gold unit's expected answer with `gold_expected_keys`.
    file_answer_keys: frozenset = frozenset({"system", "score"})
    # Of those, the keys a control line may leave out (ESA: no spans; MQM: the score, computed).
    file_answer_optional: frozenset = frozenset({"spans"})
    gold_expected_keys: frozenset = frozenset({"min", "max"})

    def qc_habit(self, row: JudgementRow):
        """What straight-lining looks for in one answer: the score (or the screen position chosen)."""
        return row.score

    def qc_originals(self, row: JudgementRow) -> list[tuple[int, object]]:
        """(output id, value) of a regular answer that a degraded copy of that output is compared with
        (a list, not a generator: called once per judgement of the campaign)."""
        return [(row.output_id, row.score)]

    def degraded_pair(self, cj, control, *, originals, floor) -> tuple | None:
        """(degraded value, original value, floor, passed) for one answer `cj` (a ControlJudgement) to a
        degraded copy, or None when the annotator's original answer is missing. `control`: the
        ControlUnit (None for an imported control, which names the real output); `originals(output
        id)`: that annotator's qc_originals values for the output in this criterion; `floor`: the
        bottom of the criterion's scale."""
        if control is not None:
            alias = control.degraded_alias
            real, score = control.real_output(alias), cj.answer.get("scores", {}).get(str(alias))
        else:
            real, score = cj.output_id, cj.answer.get("score")
        original = (originals(real) or [None])[0]
        if score is None or original is None:
            return None
        return score, original, floor, degraded_passed(score, original, floor=floor)

    def repeat_pairs(self, cj, control, mine: dict) -> list[tuple]:
        """(first answer, repeated answer) pairs of one repeat control answer; `mine`: the annotator's
        regular answers by (unit_key, criterion)."""
        pairs = []
        if control is not None:
            for alias, score in (cj.answer.get("scores") or {}).items():
                first = mine.get(((control.real_output(int(alias)),), cj.criterion))
                if first is not None:
                    pairs.append((first, score))
        else:
            first = mine.get(((cj.output_id,), cj.criterion))
            if first is not None and cj.answer.get("score") is not None:
                pairs.append((first, cj.answer["score"]))
        return pairs

    def control_answer(self, answer: dict, judgement, spans) -> None:
        """Add one validated (unsaved) judgement of a control unit, in alias ids, to the control's
        answer for its criterion (`answer`, updated in place)."""
        answer.setdefault("scores", {})[str(judgement.output_id)] = judgement.score

    def gold_answers(self, answer: dict, real) -> list[dict]:
        """A control's answer in the terms of `annotations.quality.gold.gold_check`, one per output
        answered; `real(alias)` is the real output id behind an alias."""
        return [
            {"score": score, "spans": (answer.get("spans") or {}).get(alias, [])}
            for alias, score in answer.get("scores", {}).items()
        ]

    def relative_passed(self, answer: Mapping, degraded: int) -> bool | None:
        """Whether a relative attention check passed: the answer (`control_answer`'s record, alias
        ids) scores the degraded copy `degraded` below every clean output of the screen; None when
        the answer does not say (an output left unscored)."""
        scores = {int(a): s for a, s in (answer.get("scores") or {}).items()}
        if degraded not in scores or len(scores) < 2:
            return None
        mine = scores.pop(degraded)
        if self.higher_is_better:
            return all(mine < s for s in scores.values())
        return all(mine > s for s in scores.values())

    def degraded_shown(self, outputs: list[int], victim: int) -> list[tuple[int, bool]]:
        """(output id, shown damaged) of a degraded control built from a unit's outputs: the unit
        as it was, with the victim damaged."""
        return [(o, o == victim) for o in outputs]

    def __repr__(self) -> str:
        return f"<protocol {self.name}>"

    # ==== validation of one answer ===================================================================
    # The only place the rules of an answer live: the REST endpoints, the page's unit submit,
    # `import_judgements`, gold units and quality-control imports all call `check_answer` (callers
    # that name outputs by system or alias map them to output ids first), so one bad answer gets
    # the same reason on every path; each caller keeps its own error format around it.

    # Keys of an answer beyond "criterion" as the pages and the unit API send it (output ids).
    answer_keys: frozenset = frozenset({"output", "score"})
    # How many outputs a unit of this protocol shows (gold units are checked against it).
    unit_sizes: tuple[int, int] = (1, 1)
    # (has_spans, above: answers carry error spans, checked against the output's text.)
    # The implied rank is stored with every magnitude of a unit (RankME).
    magnitudes_ranked: bool = False

    def check_criterion(self, criterion, *, campaign) -> str:
        if not isinstance(criterion, str) or criterion not in campaign.criteria:
            raise AnswerError(
                "criterion",
                "criterion",
                criterion=criterion,
                campaign=campaign.name,
                choices=", ".join(campaign.criteria),
            )
        return criterion

    def check_score(self, score, *, campaign, criterion: str) -> float:
        """A finite number on the criterion's scale."""
        # Numbers only: HTML-form strings are converted by the caller's serializer.
        if isinstance(score, bool) or not isinstance(score, (int, float, Decimal)):
            raise AnswerError("score_type", "score", value=score)
        score = float(score)
        if not math.isfinite(score):
            raise AnswerError("score_finite", "score")
        low, high = campaign.criterion_scale(criterion)
        if (low is not None and score < low) or (high is not None and score > high):
            scale = f"{'-inf' if low is None else f'{low:g}'} to {'inf' if high is None else f'{high:g}'}"
            raise AnswerError("score_scale", "score", score=score, scale=scale)
        return score

    def check_output(self, output, unit_outputs: Sequence[int] | None) -> int:
        """An output id of the unit (any id when the caller already resolved the outputs)."""
        if (
            isinstance(output, bool)
            or not isinstance(output, int)
            or (unit_outputs is not None and output not in unit_outputs)
        ):
            raise AnswerError("output", "output", value=output)
        return output

    def check_answer(
        self,
        answer: Mapping,
        *,
        campaign,
        criterion,
        unit_outputs: Sequence[int] | None = None,
        texts: Mapping[int, str] | None = None,
    ) -> dict:
        """The answer to one question (`criterion`) of a unit, normalised, or `AnswerError`.

        `answer` holds the protocol's keys in output ids (ratings and ESA:
        `output`, `score`, optional `rank` / `spans`; pairwise: `winner`, `a`
        and `b` when known; best-worst: `best`, `worst`, `outputs` defaulting
        to `unit_outputs`). `unit_outputs`: the outputs the unit shows (None:
        already checked by the caller); `texts`: output id -> text, for span offsets.
        """
        criterion = self.check_criterion(criterion, campaign=campaign)
        return {
            "criterion": criterion,
            **self.check_value(answer, campaign=campaign, criterion=criterion, unit_outputs=unit_outputs, texts=texts),
        }

    def check_value(self, answer: Mapping, *, campaign, criterion: str, unit_outputs, texts) -> dict:
        """The protocol's part of `check_answer` (the criterion already checked)."""
        out = {}
        if "output" in answer or unit_outputs is not None:
            out["output"] = self.check_output(answer.get("output"), unit_outputs)
        out["score"] = self.check_score(answer.get("score"), campaign=campaign, criterion=criterion)
        if answer.get("rank") is not None:  # ratings imported with their rank
            out["rank"] = self.check_rank(answer["rank"])
        return out

    def check_rank(self, rank) -> int | None:
        """The rank stored with a rating (optional; the pages compute it)."""
        if rank is None:
            return None
        if isinstance(rank, bool) or not isinstance(rank, int) or not 1 <= rank <= 32767:
            raise AnswerError("rank", "rank", value=rank)
        return rank

    def check_expected_bound(self, value, *, campaign, criterion: str) -> float:
        """A gold unit's expected `min` / `max` score: on the criterion's scale, like an answer."""
        return self.check_score(value, campaign=campaign, criterion=criterion)


def input_number(value) -> str:
    """A stored score as the page's inputs hold it ("4", not "4.0")."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def chunks_even(values: list, size: int, largest: int = 5) -> list[list]:
    """Split into groups of about `size` (never more than `largest` unless
    `size` is larger) whose sizes differ by at most one: 4 outputs at size 3
    make one group of 4 rather than two of 2."""
    n = len(values)
    if n == 0:
        return []
    groups = max(1, n // size, math.ceil(n / max(size, largest)))
    base, extra = divmod(n, groups)
    out, start = [], 0
    for g in range(groups):
        length = base + (1 if g < extra else 0)
        out.append(values[start : start + length])
        start += length
    return out


def document_segments(systems: Sequence[int]) -> list[int]:
    """The segment boundaries of a unit's outputs as `plan_document` lists them (segment by segment,
    by system id within one): the start index of each segment. A segment unit is one segment."""
    starts = [0] if systems else []
    for i in range(1, len(systems)):
        if systems[i] <= systems[i - 1]:
            starts.append(i)
    return starts


def output_identity(identity: Mapping[int, tuple], output_id: int) -> tuple:
    """An output in the data's own terms; an output unknown to `identity` (none in practice)
    after every known one, by id."""
    found = identity.get(output_id)
    return (0, *found) if found is not None else (1, str(output_id))
