"""`quality` and control-flagged lines in `import_judgements`, as scripts use them."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotations.models import RatingJudgement
from annotations.models.quality import AnnotatorDecision, CompletionCode, ControlJudgement, GoldUnit
from annotations.quality.services import completion_code_issue
from tests.annotations.factories import CampaignFactory, ItemFactory, OutputFactory, SystemFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign():
    campaign = CampaignFactory(name="cmd", criteria=["quality"], scale_min=0, scale_max=100)
    systems = [SystemFactory(dataset=campaign.dataset, name=f"s{i}") for i in range(2)]
    for i in range(3):
        item = ItemFactory(dataset=campaign.dataset, external_id=f"i{i}")
        for system in systems:
            OutputFactory(item=item, system=system, text=f"text {i} {system.name}")
    return campaign


def run(*args) -> str:
    out, err = StringIO(), StringIO()
    call_command("quality", *args, stdout=out, stderr=err)
    return out.getvalue() + err.getvalue()


def test_settings_decisions_gold_and_codes(campaign, tmp_path):
    run("--campaign", "cmd", "--set", "degraded_share=0.1", "--set", "max_p=none", "--set", "degrade_kinds=drop,invert")
    settings = campaign.quality_settings
    assert settings.degraded_share == 0.1 and settings.degrade_kinds == ["drop", "invert"]
    assert settings.rules["max_p"] is None
    with pytest.raises(CommandError, match="KEY one of"):
        run("--campaign", "cmd", "--set", "bogus=1")
    with pytest.raises(CommandError, match="nothing was changed"):
        run("--campaign", "cmd", "--set", "degraded_share=0.9")
    with pytest.raises(CommandError, match="no campaign"):
        run("--campaign", "nope")

    lines = tmp_path / "j.jsonl"
    lines.write_text(
        "".join(
            json.dumps(x) + "\n"
            for x in [
                {"item": "i0", "system": "s0", "annotator": "w1", "criterion": "quality", "score": 80},
                {
                    "item": "i0",
                    "system": "s0",
                    "annotator": "w1",
                    "criterion": "quality",
                    "score": 20,
                    "control": "degraded",
                },
                {
                    "item": "i0",
                    "system": "s0",
                    "annotator": "w1",
                    "criterion": "quality",
                    "score": 75,
                    "control": "repeat",
                },
                {
                    "item": "i1",
                    "system": "s1",
                    "annotator": "w1",
                    "criterion": "quality",
                    "score": 90,
                    "control": "gold",
                    "expected": {"min": 60},
                },
            ]
        )
    )
    out = StringIO()
    call_command("import_judgements", str(lines), "--campaign", "cmd", "--json", stdout=out)
    assert json.loads(out.getvalue())["controls"] == 3
    assert RatingJudgement.objects.count() == 1 and ControlJudgement.objects.count() == 3
    call_command("import_judgements", str(lines), "--campaign", "cmd", stdout=StringIO())  # again: nothing new
    assert ControlJudgement.objects.count() == 3
    assert GoldUnit.objects.get().expected == {"quality": {"min": 60.0}}

    with pytest.raises(CommandError):
        run("--campaign", "cmd", "--exclude", "w1")  # a reason is required
    run("--campaign", "cmd", "--exclude", "w1", "--reason", "bot")
    report = json.loads(run("--campaign", "cmd", "--json"))
    w1 = report["annotators"]["w1"]
    assert w1["included"] is False and w1["decision"]["reason"] == "bot"
    assert w1["degraded"] == {"judged": 1, "passed": 1} and w1["gold"] == {"judged": 1, "passed": 1}
    assert w1["self_consistency"] == pytest.approx(1 - 5 / 100)
    assert AnnotatorDecision.objects.count() == 1

    gold = tmp_path / "gold.jsonl"
    gold.write_text(
        '{"item": "i2", "systems": ["s0"], "expected": {"*": {"max": 30}}, "mode": "loud"}\n'
        '{"item": "zz", "systems": ["s0"], "expected": {}}\nnot json\n'
    )
    with pytest.raises(CommandError):
        run("--campaign", "cmd", "--gold", str(gold))
    assert GoldUnit.objects.count() == 1  # atomic: nothing from the bad file
    gold.write_text(
        '{"item": "i2", "systems": ["s0"], "expected": {"*": {"max": 30}}, "mode": "loud", '
        '"explanation": "Too short."}\n'
    )
    assert "1 gold unit(s) added" in run("--campaign", "cmd", "--gold", str(gold))

    code = completion_code_issue(campaign=campaign, annotator=RatingJudgement.objects.get().annotator, batch=0)
    csv_text = run("--campaign", "cmd", "--codes")
    assert f"w1,1,{code.code},fail,no" in csv_text
    assert "FAIL code of w1, batch 1" in run("--campaign", "cmd", "--verify-code", code.code.lower())
    assert "not a code" in run("--campaign", "cmd", "--verify-code", "00000-00000")
    assert CompletionCode.objects.count() == 1


def test_control_lines_are_checked_like_any_line(campaign, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        "".join(
            json.dumps(x) + "\n"
            for x in [
                {
                    "item": "i0",
                    "system": "s0",
                    "annotator": "w",
                    "criterion": "quality",
                    "score": 50,
                    "control": "weird",
                },
                {
                    "item": "i0",
                    "system": "s0",
                    "annotator": "w",
                    "criterion": "quality",
                    "score": 500,
                    "control": "repeat",
                },
                {"item": "i0", "system": "s0", "annotator": "w", "criterion": "quality", "score": 5, "control": "gold"},
                {
                    "item": "i0",
                    "system": "s9",
                    "annotator": "w",
                    "criterion": "quality",
                    "score": 5,
                    "control": "degraded",
                },
            ]
        )
    )
    err = StringIO()
    with pytest.raises(CommandError, match="4 problem"):
        call_command("import_judgements", str(bad), "--campaign", "cmd", stderr=err)
    messages = err.getvalue()
    assert "line 1: control must be one of degraded, repeat, gold" in messages
    assert "line 2: score 500 is outside the scale" in messages
    assert 'line 3: a gold control needs "expected"' in messages
    assert "line 4: system: no output of system 's9'" in messages
    assert not ControlJudgement.objects.exists()


def test_pairwise_and_bestworst_degraded_controls_from_a_file(tmp_path):
    pairwise = CampaignFactory(name="pw", protocol="pairwise", criteria=["q"], scale_min=None, scale_max=None)
    systems = [SystemFactory(dataset=pairwise.dataset, name=f"s{i}") for i in range(4)]
    item = ItemFactory(dataset=pairwise.dataset, external_id="i0")
    for system in systems:
        OutputFactory(item=item, system=system)
    lines = tmp_path / "pw.jsonl"
    lines.write_text(
        "".join(
            json.dumps(x) + "\n"
            for x in [
                {
                    "item": "i0",
                    "annotator": "w",
                    "criterion": "q",
                    "a": "s0",
                    "b": "s0",
                    "winner": "b",
                    "control": "degraded",
                    "degraded": "a",
                },
                {
                    "item": "i0",
                    "annotator": "w",
                    "criterion": "q",
                    "a": "s1",
                    "b": "s1",
                    "winner": "b",
                    "control": "degraded",
                    "degraded": "b",
                },
            ]
        )
    )
    call_command("import_judgements", str(lines), "--campaign", "pw", stdout=StringIO())
    report = json.loads(run("--campaign", "pw", "--json"))
    assert report["annotators"]["w"]["degraded"] == {"judged": 2, "passed": 1}

    CampaignFactory(name="bw", dataset=pairwise.dataset, protocol="bws", criteria=["q"], scale_min=None, scale_max=None)
    lines.write_text(
        "".join(
            json.dumps(x) + "\n"
            for x in [
                {
                    "item": "i0",
                    "annotator": "w",
                    "criterion": "q",
                    "outputs": ["s0", "s1", "s2", "s3"],
                    "best": "s0",
                    "worst": "s3",
                },
                {
                    "item": "i0",
                    "annotator": "w",
                    "criterion": "q",
                    "outputs": ["s0", "s1", "s2", "s3"],
                    "best": "s1",
                    "worst": "s0",
                    "control": "degraded",
                    "degraded": "s0",
                },
            ]
        )
    )
    call_command("import_judgements", str(lines), "--campaign", "bw", stdout=StringIO())
    report = json.loads(run("--campaign", "bw", "--json"))
    assert report["annotators"]["w"]["degraded"] == {"judged": 1, "passed": 1}
