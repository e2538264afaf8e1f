"""Relative attention checks in files (issue 41): `import_judgements` reads `"control": "relative"` lines
(one a screen: the clean outputs' answers by system, the damaged copy's beside them, `degraded` naming the
system damaged), decides them as the pages do (the copy below every clean output; best-worst: the copy
chosen as worst), refuses malformed ones with `line N:` reasons, and the export writes them back
(controls.jsonl) in the same form, checks answered in the workbench included, so they import again."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotations.export.service import ExportOptions, export_dataset
from annotations.models import Output
from annotations.models.quality import ControlJudgement, ControlUnit
from annotations.quality.selectors import campaign_quality
from annotations.services.campaigns import campaign_create
from annotations.services.projects import annotator_get_or_create
from annotations.services.submissions import unit_submit
from tests.annotations.factories import DatasetFactory, ItemFactory, OutputFactory, SystemFactory
from tests.annotations.quality.test_relative_checks import _answers, _campaign, _next_relative
from tests.protocol_plugin import campaign_settings

pytestmark = pytest.mark.django_db


def _dataset():
    dataset = DatasetFactory()
    systems = [SystemFactory(dataset=dataset, name=n) for n in ("sA", "sB", "sC")]
    for i in range(2):
        item = ItemFactory(dataset=dataset, position=i, external_id=f"i{i}", source=f"Quelle {i}.")
        for s in systems:
            OutputFactory(item=item, system=s, text=f"{s.name} says sentence {i} quite well")
    return dataset


def _new(protocol, dataset, name):
    return campaign_create(
        dataset=dataset, name=name, protocol=protocol, criteria=["quality"], redundancy=1, **campaign_settings(protocol)
    )


def _import(tmp_path, campaign, lines):
    path = tmp_path / f"{campaign.name}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    err = StringIO()
    call_command("import_judgements", str(path), "--campaign", campaign.name, stdout=StringIO(), stderr=err)
    return err.getvalue()


def _stored(campaign):
    system = dict(Output.objects.values_list("pk", "system__name"))
    return sorted(
        (cj.item.external_id, cj.criterion, system[cj.output_id], json.dumps(cj.answer, sort_keys=True), cj.passed)
        for cj in ControlJudgement.objects.filter(campaign=campaign, kind="relative").select_related("item")
    )


BASE = {"item": "i0", "annotator": "w", "criterion": "quality", "control": "relative"}


def test_cesa_relative_checks_import_decide_and_round_trip(tmp_path):
    dataset = _dataset()
    campaign = _new("cesa", dataset, "cesa-file")
    sb = Output.objects.get(item__external_id="i0", system__name="sB").pk
    lines = [
        # sB's output damaged, shown beside sA and sC: scored lowest, passed.
        {
            **BASE,
            "scores": {"sA": 80, "sC": 70},
            "degraded": "sB",
            "degraded_score": 20,
            "degraded_spans": [{"start": 0, "end": 2, "severity": "major"}],
        },
        # sA damaged and shown beside its own clean output: scored above sC, failed.
        {
            **BASE,
            "annotator": "v",
            "scores": {"sA": 60, "sC": 50},
            "degraded": "sA",
            "degraded_score": 55,
            "spans": {"sC": [{"start": 0, "end": 2, "severity": "minor"}]},
        },
    ]
    _import(tmp_path, campaign, lines)
    cjs = {cj.annotator.name: cj for cj in ControlJudgement.objects.filter(campaign=campaign)}
    assert {n: (cj.kind, cj.passed) for n, cj in cjs.items()} == {"w": ("relative", True), "v": ("relative", False)}
    assert cjs["w"].output_id == sb and cjs["w"].answer["scores"]["0"] == 20  # the copy's score, apart
    figures = campaign_quality(campaign=campaign)
    assert figures[cjs["w"].annotator_id].as_json()["relative"] == {"judged": 1, "passed": 1}
    assert figures[cjs["v"].annotator_id].as_json()["relative"] == {"judged": 1, "passed": 0}
    _import(tmp_path, campaign, lines)  # the same file again: nothing new
    assert ControlJudgement.objects.filter(campaign=campaign).count() == 2

    out = tmp_path / "out"
    export_dataset(campaign=campaign, out=out, options=ExportOptions(real_annotator_ids=True))
    exported = [json.loads(x) for x in (out / "controls.jsonl").read_text().splitlines()]
    assert sorted(exported, key=lambda x: x["annotator"]) == sorted(
        [{**line, "passed": passed} for line, passed in zip(lines, (True, False))], key=lambda x: x["annotator"]
    )
    again = _new("cesa", dataset, "cesa-again")
    _import(tmp_path, again, exported)
    assert _stored(again) == _stored(campaign)


def test_bws_relative_checks_from_a_file(tmp_path):
    campaign = _new("bws", _dataset(), "bws-file")
    line = {**BASE, "outputs": ["sA", "sC"], "degraded": "sB", "best": "sA", "worst": "degraded"}
    _import(tmp_path, campaign, [line, {**line, "annotator": "v", "worst": "sC", "best": "degraded"}])
    assert {cj.annotator.name: cj.passed for cj in ControlJudgement.objects.filter(campaign=campaign)} == {
        "w": True,
        "v": False,
    }
    out = tmp_path / "out"
    export_dataset(campaign=campaign, out=out, options=ExportOptions(real_annotator_ids=True))
    exported = {x["annotator"]: x for x in map(json.loads, (out / "controls.jsonl").read_text().splitlines())}
    assert exported["w"] == {**line, "passed": True}


@pytest.mark.parametrize(
    "line, reason",
    [
        ({"scores": {"sA": 80}, "degraded": "sB"}, "missing field 'degraded_score' for a cesa relative check"),
        ({"scores": {"sA": 80}, "degraded_score": 5}, "missing field 'degraded' for a cesa relative check"),
        ({"scores": ["sA"], "degraded": "sB", "degraded_score": 5}, "scores must map the systems of the clean outputs"),
        ({"scores": {"sA": 80}, "degraded": "s9", "degraded_score": 5}, "degraded: no output of system 's9'"),
        ({"scores": {"sZ": 80}, "degraded": "sB", "degraded_score": 5}, "scores: no output of system 'sZ'"),
        ({"scores": {"sA": 80}, "degraded": "sB", "degraded_score": 500}, "score 500 is outside the scale"),
        ({"scores": {"sA": 80}, "degraded": "sB", "degraded_score": 5, "winner": "a"}, "unknown field 'winner'"),
        (
            {"scores": {"sA": 80}, "degraded": "sB", "degraded_score": 5, "spans": {"sC": []}},
            "spans must map systems named in scores",
        ),
    ],
)
def test_malformed_relative_lines_are_line_errors(tmp_path, line, reason):
    campaign = _new("cesa", _dataset(), "cesa-bad")
    good = {**BASE, "scores": {"sA": 80}, "degraded": "sB", "degraded_score": 5}
    with pytest.raises(CommandError):
        _import(tmp_path, campaign, [good, {**BASE, **line}])
    path = tmp_path / "again.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({**BASE, **line}) + "\n")
    err = StringIO()
    with pytest.raises(CommandError):
        call_command("import_judgements", str(path), "--campaign", campaign.name, stderr=err)
    assert f"line 2: {reason}" in err.getvalue()
    assert not ControlJudgement.objects.exists()


@pytest.mark.parametrize("protocol", ["esa", "pairwise"])
def test_protocols_without_relative_lines_refuse_them(tmp_path, protocol):
    campaign = _new(protocol, _dataset(), f"{protocol}-rel")
    path = tmp_path / "rel.jsonl"
    path.write_text(json.dumps({**BASE, "scores": {"sA": 80}, "degraded": "sB", "degraded_score": 5}) + "\n")
    err = StringIO()
    with pytest.raises(CommandError):
        call_command("import_judgements", str(path), "--campaign", campaign.name, stderr=err)
    expected = {
        "esa": "relative checks are for protocols with several outputs a screen",
        "pairwise": '"control": "degraded"',
    }
    assert "line 1: " in err.getvalue() and expected[protocol] in err.getvalue()


def test_checks_answered_in_the_workbench_export_as_lines_that_import_again(tmp_path):
    """A cESA check shown in the browser (alias ids; the copy may be of an output shown clean beside it)
    comes out with systems named and imports into another campaign with the same verdict."""
    campaign = _campaign("cesa")
    annotator = annotator_get_or_create(project=campaign.project, name="ann")

    def regular(assignment):
        texts = dict(Output.objects.filter(pk__in=assignment.shown_order).values_list("id", "text"))
        answers = _answers(campaign, assignment, texts, lambda o: 50 + 10 * assignment.shown_order.index(o["id"]))
        unit_submit(
            annotator=annotator, assignment_id=assignment.pk, judgements=answers, shown_order=assignment.shown_order
        )

    assignment = _next_relative(campaign, annotator, regular)
    control = ControlUnit.objects.get(unit_id=assignment.unit_id)
    texts = {int(a): e["text"] for a, e in control.aliases.items()}
    answers = _answers(campaign, assignment, texts, lambda o: 5 if o["id"] == control.degraded_alias else 70)
    unit_submit(
        annotator=annotator, assignment_id=assignment.pk, judgements=answers, shown_order=assignment.shown_order
    )
    out = tmp_path / "out"
    export_dataset(campaign=campaign, out=out, options=ExportOptions())
    (line,) = [json.loads(x) for x in (out / "controls.jsonl").read_text().splitlines()]
    damaged = Output.objects.get(pk=control.real_output(control.degraded_alias))
    assert line["degraded"] == damaged.system.name and line["degraded_score"] == 5 and line["passed"] is True
    # The systems shown (the copy's own clean output may be one of them, named once).
    clean = {Output.objects.get(pk=control.real_output(int(a))).system.name for a in control.aliases}
    assert set(line["scores"]) | {line["degraded"]} == clean and set(line["scores"].values()) == {70}
    again = campaign_create(dataset=campaign.dataset, name="again", protocol="cesa", criteria=["quality"], redundancy=1)
    path = tmp_path / "controls.jsonl"
    path.write_text((out / "controls.jsonl").read_text())
    call_command("import_judgements", str(path), "--campaign", "again", stdout=StringIO())
    (cj,) = ControlJudgement.objects.filter(campaign=again)
    assert (cj.kind, cj.passed, cj.output_id) == ("relative", True, damaged.pk)


@pytest.mark.parametrize("copy_score, passes", [(10, True), (90, False)])
def test_rankme_relative_checks_from_a_file(tmp_path, copy_score, passes):
    campaign = _new("rankme", _dataset(), "rankme-file")
    line = {**BASE, "scores": {"sA": 60, "sC": 50}, "degraded": "sB", "degraded_score": copy_score}
    _import(tmp_path, campaign, [line])
    (cj,) = ControlJudgement.objects.filter(campaign=campaign)
    assert (cj.kind, cj.passed) == ("relative", passes)
