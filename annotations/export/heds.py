"""HEDS 3.0 (Belz & Thomson 2025): the answers the workbench knows, as `heds.json` in the official
form's own format and as the card's numbered lines.

The official form (nlp-heds/nlp-heds.github.io, index.html, read at commit 3239cd329afe) keeps one
localStorage entry per form field, keyed by the field's id, and its "download json" / "upload json"
buttons save and load exactly that object (`allStorageJSON`, `importJson`):

    {FIELD_ID: {"data": {MANY_KEY: value}, "control": {}, "number": "3.2.1"}, ...}

Text fields hold a string; a radio button or check-box option (id `GROUP-K`) holds `true` with its
option text under "text"; the criteria of section 4 are the "Many" field `heds-criteria-criterion`,
whose "control" names every criterion (the one shown is `true`), and each section-4 field keys its
"data" by criterion name. Questions the workbench cannot answer are left out (the form shows them
empty, asking to be completed); the card marks them BLANK.
"""

from __future__ import annotations

from dataclasses import dataclass

FORM_COMMIT = "3239cd329afedc89454a07611de1bd3ceac2dbd9"
FORM_URL = "https://nlp-heds.github.io/"
CRITERIA_FIELD = "heds-criteria-criterion"

# Option texts exactly as the form's <input value="..."> (checked by tests against the form).
EXPERTISE = "heds-sample_evaluators_design-evaluators-evaluators-expertise"
QA_METHOD = "heds-sample_evaluators_design-experimental_design-quality_assurance-method"
QA_OPTIONS = {
    2: "2. Automatic quality checking methods are used during and/or after evaluation",
    4: "4. Evaluators are excluded if they fail quality checks (often or badly enough)",
    7: "7. None of the above (no quality assurance methods used)",
}
ABSOLUTE_OR_RELATIVE = "heds-criteria-criterion-evaluation_mode-absolute_or_relative"
ABSOLUTE_OPTIONS = {1: "1. Absolute", 2: "2. Relative"}
SCALE_PRESENTED = "heds-criteria-criterion-response_elicitation-scale_presented_as"
SCALE_OPTIONS = {
    1: "1. Multiple-choice options",
    3: "3. Slider",
    4: "4. N/A (there is no rating instrument)",
    5: "5. Other (please describe)",
}
FORM_OF_RESPONSE = "heds-criteria-criterion-response_elicitation-form_of_response"
RESPONSE_OPTIONS = {
    2: "2. Direct quality estimation",
    3: "3. Relative quality estimation (including ranking)",
    6: "6. Evaluation through post-editing/annotation",
}
PERSONAL_DATA = "heds-ethics-personal_data"
PERSONAL_OPTIONS = {2: "2. Yes, personal data as defined by GDPR was evaluated and/or collected"}

RELATIVE = {"pairwise", "bws", "rankme", "cesa"}
# How each protocol scores an output from its judgements (Protocol.output_scores).
AGGREGATION = {
    "pairwise": "the share of its pairs it won, ties counting half",
    "bws": "(times best − times worst) / times shown",
    "rankme": "the mean of the annotators' magnitudes",
}
DEFAULT_AGGREGATION = "the mean of the annotators' scores"
ANNOTATION = {"esa", "mqm", "post_edit", "cesa"}


@dataclass
class Answer:
    number: str
    field: str  # the form's field id (a radio/check group for choices)
    question: str
    text: str | None = None  # a text field's answer
    option: int | None = None  # a choice: the option's number K (field id GROUP-K)
    option_text: str | None = None
    criterion: str | None = None

    @property
    def known(self) -> bool:
        return self.text is not None or self.option is not None

    def shown(self) -> str | None:
        return self.option_text if self.option is not None else self.text


def _choice(number, field, question, options: dict, k: int, criterion=None) -> Answer:
    return Answer(number, field, question, option=k, option_text=options[k], criterion=criterion)


def answers(*, campaign, configuration: dict, result, facts: dict) -> list[Answer]:
    """Every HEDS 3.0 question the card lists, answered where the workbench knows the answer.

    `facts`: items_total, qc_active, n_quality, n_included, platforms ({label: visitors}),
    intra (controls.intra_annotator), protocol_label."""
    c = configuration
    qc = c["quality_control"]
    a: list[Answer] = []
    add = a.append
    sec = "heds-paper_and_resources"
    add(Answer("1.1.1", f"{sec}-paper-link", "Link to the paper reporting the evaluation experiment"))
    add(
        Answer(
            "1.1.2",
            f"{sec}-paper-experiment_identification",
            "Which experiment in the paper this sheet is for",
            text=f"campaign {campaign.name} (dataset {campaign.dataset.name}, project {campaign.dataset.project.name}), "
            "run in the NLG evaluation workbench",
        )
    )
    add(Answer("1.2", f"{sec}-resources-links", "Where the resources are shared"))
    add(
        Answer(
            "1.3.1.1", f"{sec}-names_and_affiliations-person_completing_this_sheet-name", "Person completing the sheet"
        )
    )
    add(Answer("1.3.2.1", f"{sec}-names_and_affiliations-contact_author-name", "Contact author"))
    for number, key, q in (
        ("2.1", "input_types", "Input type(s)"),
        ("2.2", "output_types", "Output type(s)"),
        ("2.3", "tasks", "Task(s)"),
        ("2.4", "input_languages", "Input language(s)"),
        ("2.5", "output_languages", "Output language(s)"),
    ):
        add(Answer(number, f"heds-system-{key}", q))

    sec = "heds-sample_evaluators_design"
    n_systems = len(c["systems"])
    add(
        Answer(
            "3.1.1",
            f"{sec}-sample-number_of_system_outputs",
            "Number of system outputs evaluated",
            text=f"{result.outputs} ({result.items} items of {facts['items_total']} in the dataset, "
            f"{n_systems} systems: {', '.join(c['systems'])})",
        )
    )
    add(Answer("3.1.2", f"{sec}-sample-system_output_selection", "How the sample of outputs was selected"))
    add(Answer("3.1.3.1", f"{sec}-sample-statistical_power-method", "Statistical power: method"))
    add(Answer("3.2.1", f"{sec}-evaluators-number_of_evaluators", "Number of evaluators", text=str(result.annotators)))
    add(Answer("3.2.2.1", f"{sec}-evaluators-evaluators-expertise", "Evaluators have domain or task expertise"))
    add(Answer("3.2.2.2", f"{sec}-evaluators-evaluators-payment", "Evaluators were paid"))
    platforms = facts.get("platforms") or {}
    recruited = (
        "through the campaign's join links from "
        + ", ".join(f"{label} ({n} visitor{'s' if n != 1 else ''})" for label, n in sorted(platforms.items()))
        if platforms
        else None
    )
    add(Answer("3.2.3", f"{sec}-evaluators-recruitment_method", "How evaluators were recruited", text=recruited))
    loud = [g for g in qc.get("gold_unit_contents") or [] if g.get("mode") == "loud"]
    add(
        Answer(
            "3.2.4",
            f"{sec}-evaluators-training_practice",
            "Training and/or practice given to evaluators",
            text=f"{len(loud)} tutorial unit(s) shown first; a wrong answer is sent back with its explanation "
            "until it is right (gold unit contents in campaign.json)"
            if loud
            else None,
        )
    )
    background = facts.get("background")
    add(
        Answer(
            "3.2.5",
            f"{sec}-evaluators-characteristics",
            "Other characteristics of the evaluators",
            # The campaign's background questions, in aggregate (background.EXT has each answer).
            text="Background questions asked before the first unit: " + "; ".join(background) if background else None,
        )
    )
    add(Answer("3.3.1", f"{sec}-experimental_design-preregistered", "Was the experiment preregistered"))
    design = [
        f"{facts['protocol_label']} ({campaign.protocol}) in the workbench's annotation pages (or imported)",
        f"{c['redundancy']} annotator(s) per unit",
        f"allocation {c.get('allocation')}",
        "stopped early: " + (f"yes, {c['stopped']['reason']}" if c.get("stopped") else "no"),
        f"{c['units_per_batch']} units per batch",
        f"counterbalancing: {c['counterbalancing']}",
    ]
    if c.get("waves"):
        design.append("a second wave of annotators judged the same units (figures in the card)")
    add(
        Answer(
            "3.3.2",
            f"{sec}-experimental_design-collection_method",
            "How responses were collected",
            text="; ".join(design),
        )
    )
    controls = [
        f"degraded copies {qc['degraded_share']:g} of a batch",
        f"repeats {qc['repeat_share']:g}",
        f"gold / tutorial units {qc['gold_units']}",
    ]
    intra = facts.get("intra") or {}
    if facts["qc_active"]:
        excluding = bool(qc.get("rules")) or facts["n_included"] < facts["n_quality"]
        add(
            _choice(
                "3.3.3.1",
                QA_METHOD,
                "Quality assurance methods",
                QA_OPTIONS,
                4 if excluding else 2,
            )
        )
        add(
            Answer(
                "3.3.3.2",
                f"{sec}-experimental_design-quality_assurance-description",
                "Quality assurance: details",
                text=f"controls mixed into the batches: {', '.join(controls)}; {facts['n_included']} of "
                f"{facts['n_quality']} annotators included by the rules and decisions",
            )
        )
    else:
        add(_choice("3.3.3.1", QA_METHOD, "Quality assurance methods", QA_OPTIONS, 7))
        add(
            Answer(
                "3.3.3.2",
                f"{sec}-experimental_design-quality_assurance-description",
                "Quality assurance: details",
                text="no controls, rules or decisions in the workbench for this campaign",
            )
        )
    seen = [
        "the input" if c["show_source"] else None,
        "the reference(s)" if c["show_reference"] else None,
        "the system outputs of the unit, never the system names",
    ]
    add(
        Answer(
            "3.3.4.2",
            f"{sec}-experimental_design-what_evaluators_see-description",
            "What evaluators are shown",
            text=", ".join(s for s in seen if s)
            + (f"; instructions: {c['instructions']}" if c.get("instructions") else ""),
        )
    )
    add(Answer("3.3.7", f"{sec}-experimental_design-experimental_conditions", "Conditions of the evaluation"))

    figures = result.agreement
    for config in c["criteria_config"]:
        name = config["name"]
        f = figures.get(name) or {}
        head = f.get("headline") or {}
        s = "heds-criteria-criterion"
        add(Answer("4.1.1", f"{s}-criteria-quality_type", "Quality criterion: type", criterion=name))
        add(
            _choice(
                "4.2.2",
                ABSOLUTE_OR_RELATIVE,
                "Absolute or relative",
                ABSOLUTE_OPTIONS,
                2 if campaign.protocol in RELATIVE else 1,
                criterion=name,
            )
        )
        add(
            Answer(
                "4.3.1.1",
                f"{s}-response_elicitation-qc_name-participant_criterion_name",
                "Criterion name as given to participants",
                text=name,
                criterion=name,
            )
        )
        scored = config.get("scale_min") is not None or config.get("scale_max") is not None
        if scored and config.get("scale_min") is not None and config.get("scale_max") is not None:
            low, high = config["scale_min"], config["scale_max"]
            size = f"{int(high - low + 1)}" if float(low).is_integer() and float(high).is_integer() else "continuous"
            values = f"{low:g} to {high:g}" + (
                f" ({config.get('min_label')} … {config.get('max_label')})"
                if config.get("min_label") or config.get("max_label")
                else ""
            )
        else:
            size, values = None, None
        if campaign.protocol == "pairwise":
            size, values = "3", "A better, B better, tie"
        elif campaign.protocol == "bws":
            size, values = "2 choices per tuple", "best and worst output of the tuple"
        elif campaign.protocol == "rankme":
            size, values = "unbounded", "any positive magnitude relative to the anchor"
        add(Answer("4.3.3", f"{s}-response_elicitation-size_of_scale", "Size of scale", text=size, criterion=name))
        add(Answer("4.3.4", f"{s}-response_elicitation-list_or_range", "Scale values", text=values, criterion=name))
        widget = config.get("widget")
        k = 1 if campaign.protocol in ("pairwise", "bws") or widget == "radio" else 3 if widget == "slider" else 5
        add(_choice("4.3.5", SCALE_PRESENTED, "Scale presented as", SCALE_OPTIONS, k, criterion=name))
        add(
            Answer(
                "4.3.6",
                f"{s}-response_elicitation-task_description",
                "Task description (verbatim)",
                text=c.get("instructions") or None,
                criterion=name,
            )
        )
        add(
            Answer(
                "4.3.7",
                f"{s}-response_elicitation-verbatim_question",
                "Question or prompt (verbatim)",
                text=config.get("question") or None,
                criterion=name,
            )
        )
        k = 3 if campaign.protocol in RELATIVE else 6 if campaign.protocol in ANNOTATION else 2
        add(_choice("4.3.8", FORM_OF_RESPONSE, "Form of response elicitation", RESPONSE_OPTIONS, k, criterion=name))
        add(
            Answer(
                "4.3.9",
                f"{s}-response_elicitation-response_aggregation",
                "How responses are aggregated",
                text=f"per output: the {facts['protocol_label']} protocol's score ({AGGREGATION.get(campaign.protocol, DEFAULT_AGGREGATION)}); "
                "per system: the mean over its outputs",
                criterion=name,
            )
        )
        add(
            Answer(
                "4.3.11.1",
                f"{s}-response_elicitation-inter_annotator-agreement",
                "Inter-annotator agreement: method",
                text=f"{head.get('label', 'Krippendorff alpha')} over {f.get('n_units', 0)} units judged at least "
                f"twice by {f.get('n_annotators', 0)} annotators ({head.get('annotators', 'all annotators')})"
                if head
                else None,
                criterion=name,
            )
        )
        add(
            Answer(
                "4.3.11.2",
                f"{s}-response_elicitation-inter_annotator-agreement_score",
                "Inter-annotator agreement: score",
                text=None if head.get("value") is None else repr(head["value"]),
                criterion=name,
            )
        )
        has_intra = intra.get("value") is not None
        add(
            Answer(
                "4.3.12.1",
                f"{s}-response_elicitation-intra_annotator-intra_annotator_agreement",
                "Intra-annotator agreement: method",
                text=f"{intra['label']} ({intra['n_annotators']} annotators, {intra['n_repeats']} repeats; "
                "all criteria together)"
                if has_intra
                else None,
                criterion=name,
            )
        )
        add(
            Answer(
                "4.3.12.2",
                f"{s}-response_elicitation-intra_annotator-intra_annotator_agreement_score",
                "Intra-annotator agreement: score",
                text=repr(intra["value"]) if has_intra else None,
                criterion=name,
            )
        )
    add(Answer("5.1", "heds-ethics-review_body", "Ethics review body"))
    if platforms:
        add(
            _choice(
                "5.2",
                PERSONAL_DATA,
                "Personal data collected (crowd platform ids of the join-link visitors, kept in the workbench "
                "and exported only with --real-annotator-ids)",
                PERSONAL_OPTIONS,
                2,
            )
        )
    else:
        add(Answer("5.2", PERSONAL_DATA, "Personal data evaluated or collected"))
    add(Answer("5.3", "heds-ethics-special_category_data", "Special-category data"))
    add(Answer("5.4", "heds-ethics-impact_assessments", "Impact assessments"))
    return a


def form_json(answers: list[Answer], criteria: list[str]) -> dict:
    """The object the official form's "upload json" loads (and its "download json" writes)."""
    out: dict = {}
    if criteria:
        out[CRITERIA_FIELD] = {"data": {}, "control": {c: k == 0 for k, c in enumerate(criteria)}}
    for ans in answers:
        if not ans.known:
            continue
        key = ans.criterion if ans.criterion is not None else ""
        if ans.option is not None:
            field = f"{ans.field}-{ans.option}"
            entry = out.setdefault(field, {"data": {}, "control": {}, "text": {}, "number": ans.number})
            entry["data"][key] = True
            entry["text"][key] = ans.option_text
        else:
            entry = out.setdefault(ans.field, {"data": {}, "control": {}, "number": ans.number})
            entry["data"][key] = ans.text
    return out
