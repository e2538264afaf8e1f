"""heds.json (the official HEDS 3.0 form's JSON), the card's HEDS 3.0 numbers, croissant.json
(validated and loaded by mlcroissant), intra-annotator agreement on repeats and gold-unit
contents, on test_export's small Likert campaign.

heds.json is checked against the form's field ids, numbers and option texts as transcribed in
fixtures/heds_form_fields.json (read from nlp-heds/nlp-heds.github.io index.html at the commit
it names); tests/browser/test_heds_form.py loads it in the form itself when a copy is at hand.
Expected figures are computed here from the rows the test writes.
"""

import json
import re
import statistics
from pathlib import Path

import pytest

from annotations.models import Annotator, Output
from annotations.models.quality import ControlJudgement, GoldUnit
from annotations.models.studies import JoinLink, JoinParticipant
from tests.annotations.export.test_export import WORKERS, _export, likert  # noqa: F401

pytestmark = pytest.mark.django_db

FORM = json.loads((Path(__file__).parent / "fixtures" / "heds_form_fields.json").read_text(encoding="utf-8"))
FIELDS = FORM["fields"]
CRITERIA_FIELD = "heds-criteria-criterion"
# The form's own checks (index.html): a non-blank answer; an integer field takes digits or N/A.
NON_BLANK = re.compile(r"^(.|\s)*\S(.|\s)*$")
INTEGER = re.compile(r"^([0-9]+|N/A|)$")

# Repeats: (worker, item, system, criterion, repeated score); the first answers are test_export's.
REPEATS = [
    ("w-alpha", "i1", "A", "fluency", 1),
    ("w-alpha", "i2", "B", "adequacy", 5),
    ("w-beta", "i1", "A", "fluency", None),  # None: the same score as the first answer
    ("w-beta", "i3", "C", "fluency", 2),
]


@pytest.fixture
def controlled(likert):  # noqa: F811
    campaign, rows = likert
    first = {(r["annotator"], r["item"], r["system"], r["criterion"]): r["score"] for r in rows}
    annotators = {a.name: a for a in Annotator.objects.filter(project=campaign.dataset.project)}
    alice = annotators.get("alice.smith") or next(a for a in annotators.values() if a.name not in WORKERS)
    annotators["w-delta"] = alice
    consistency = {}
    for worker, item, system, criterion, score in REPEATS:
        output = Output.objects.get(item__dataset=campaign.dataset, item__external_id=item, system__name=system)
        before = first[(worker, item, system, criterion)]
        again = before if score is None else score
        ControlJudgement.objects.create(
            campaign=campaign,
            annotator=annotators[worker],
            kind="repeat",
            item=output.item,
            output=output,
            criterion=criterion,
            answer={"score": again},
            origin="import",
        )
        consistency.setdefault(worker, []).append(abs(before - again))
    # self-consistency: 1 - mean |first - repeat| / (scale range 5 - 1), per annotator; then the mean.
    expected_intra = statistics.fmean(1 - statistics.fmean(d) / 4 for d in consistency.values())
    i0 = Output.objects.filter(item__dataset=campaign.dataset, item__external_id="i0").order_by("system__name")
    GoldUnit.objects.create(
        campaign=campaign,
        item=i0[0].item,
        outputs=[o.pk for o in i0[:1]],
        expected={"*": {"min": 4}},
        mode="loud",
        explanation="A fluent sentence scores at least 4.",
    )
    link = JoinLink.objects.create(campaign=campaign, token="tok-heds")
    JoinParticipant.objects.create(
        link=link, campaign=campaign, annotator=annotators["w-gamma"], platform="prolific", platform_id="PID-SECRET-7"
    )
    return campaign, rows, expected_intra


def test_heds_json_uses_the_forms_field_ids_and_value_formats(controlled, tmp_path):
    campaign, rows, expected_intra = controlled
    summary, out = _export(tmp_path)
    heds = json.loads((out / "heds.json").read_text(encoding="utf-8"))
    assert heds[CRITERIA_FIELD]["control"] == {"fluency": True, "adequacy": False}
    for key, entry in heds.items():
        if key == CRITERIA_FIELD:
            continue
        field = FIELDS.get(key)
        assert field is not None, f"{key} is not a field of the HEDS 3.0 form (commit {FORM['commit'][:12]})"
        assert entry["number"] == field["number"], key
        assert set(entry["control"]) == set()
        expected_keys = {"fluency", "adequacy"} if CRITERIA_FIELD in field["many"] else {""}
        assert set(entry["data"]) == expected_keys, key
        if field["type"] in ("Radio", "CheckBox"):
            assert all(v is True for v in entry["data"].values()), key
            assert set(entry["text"].values()) == {field["value"]}, key
        else:
            assert all(isinstance(v, str) and NON_BLANK.match(v) for v in entry["data"].values()), key
            if field["type"] == "IntegerInput":
                assert all(INTEGER.match(v) for v in entry["data"].values()), key

    def value(field_id, key=""):
        return heds[field_id]["data"][key]

    # 3.2.1: the four workers of the rows.
    assert value("heds-sample_evaluators_design-evaluators-number_of_evaluators") == str(
        len({r["annotator"] for r in rows})
    )
    assert value("heds-sample_evaluators_design-sample-number_of_system_outputs").startswith("24 (8 items")
    # 3.2.3 from the join links: the platform's name, never the visitor's id.
    assert "Prolific (1 visitor)" in value("heds-sample_evaluators_design-evaluators-recruitment_method")
    assert "heds-sample_evaluators_design-evaluators-training_practice" in heds  # the tutorial gold unit
    # 3.3.3.1: controls in use, no exclusion rule: "automatic quality checking".
    assert "heds-sample_evaluators_design-experimental_design-quality_assurance-method-2" in heds
    # 4.3.11: the export's headline agreement per criterion; 4.3.12: self-consistency on the repeats.
    for criterion in ("fluency", "adequacy"):
        head = summary["agreement"][criterion]["headline"]
        assert value("heds-criteria-criterion-response_elicitation-inter_annotator-agreement_score", criterion) == repr(
            head["value"]
        )
        score = value(
            "heds-criteria-criterion-response_elicitation-intra_annotator-intra_annotator_agreement_score", criterion
        )
        assert float(score) == pytest.approx(expected_intra, abs=1e-12)
        assert value("heds-criteria-criterion-evaluation_mode-absolute_or_relative-1", criterion) is True
    # Blanks stay out (the form asks for them): nothing known about ethics review.
    assert "heds-ethics-review_body" not in heds
    assert "heds-ethics-personal_data-2" in heds  # platform ids were collected
    text = json.dumps(heds) + (out / "README.md").read_text() + (out / "campaign.json").read_text()
    assert "PID-SECRET-7" not in text


def test_card_has_heds_3_numbers_intra_agreement_and_gold_contents(controlled, tmp_path):
    campaign, rows, expected_intra = controlled
    summary, out = _export(tmp_path)
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "HEDS 3.0 (Belz & Thomson, 2025)" in card
    assert f"- 3.2.1 Number of evaluators: {len({r['annotator'] for r in rows})}" in card
    assert "- 5.1 Ethics review body: **[BLANK" in card
    assert f"- 4.3.12.2 Intra-annotator agreement: score: {expected_intra!r}" in card
    assert "Gold units: 1 (1 tutorial, 0 silent)" in card
    config = json.loads((out / "campaign.json").read_text(encoding="utf-8"))
    assert config["intra_annotator_agreement"]["value"] == pytest.approx(expected_intra, abs=1e-12)
    assert config["intra_annotator_agreement"]["n_annotators"] == 2
    assert config["quality_control"]["gold_unit_contents"] == [
        {
            "item": "i0",
            "outputs": ["A"],
            "expected": {"*": {"min": 4}},
            "mode": "loud",
            "explanation": "A fluent sentence scores at least 4.",
        }
    ]
    assert config["recruitment"] == {"join_link_platforms": {"Prolific": 1}}


def test_platform_ids_only_with_real_annotator_ids(controlled, tmp_path):
    _, out = _export(tmp_path, "--real-annotator-ids")
    assert "PID-SECRET-7" in (out / "judgements.jsonl").read_text()


def test_croissant_validates_and_its_records_load(controlled, tmp_path):
    mlc = pytest.importorskip("mlcroissant", reason="mlcroissant (requirements-dev.txt) validates croissant.json")
    campaign, rows, _ = controlled
    summary, out = _export(tmp_path, "--licence", "cc-by-4.0")
    dataset = mlc.Dataset(jsonld=str(out / "croissant.json"))  # raises on any validation error
    meta = dataset.metadata
    assert not meta.ctx.issues.errors, meta.ctx.issues.report()
    judgements = list(dataset.records("judgements"))
    assert len(judgements) == summary["judgements"] == len(rows)
    loaded = sorted(
        (
            r["judgements/item"].decode(),
            r["judgements/system"].decode(),
            r["judgements/criterion"].decode(),
            r["judgements/score"],
        )
        for r in judgements
    )
    assert loaded == sorted((r["item"], r["system"], r["criterion"], float(r["score"])) for r in rows)
    outputs = list(dataset.records("outputs"))
    assert len(outputs) == 24
    doc = json.loads((out / "croissant.json").read_text())
    assert doc["conformsTo"][0] == "http://mlcommons.org/croissant/1.1"
    assert doc["rai:dataAnnotationPlatform"].endswith("via join links from Prolific")
    assert doc["rai:machineAnnotationTools"] == []
    assert "PID-SECRET-7" not in json.dumps(doc)
