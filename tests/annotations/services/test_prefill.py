"""ESA^AI: campaigns pre-filled from a done run's spans, the annotators' decisions, and the analysis.

Expected figures are computed here from the answers given (character sets, numpy, scipy),
never read from the code under test."""

import json
from io import StringIO

import numpy as np
import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError
from scipy.stats import mannwhitneyu

from annotations.models import SpanSuggestion, SuggestionDecision
from annotations.selectors.units import assignment_payload
from annotations.services.assignments import assignment_next
from annotations.services.campaigns import campaign_create
from annotations.services.prefill import mined_spans, nli_spans
from annotations.services.submissions import unit_submit
from tests.annotations.analysis.judge_runs import judge_run
from tests.annotations.factories import (
    AnnotatorFactory,
    DatasetFactory,
    ItemFactory,
    OutputFactory,
    SystemFactory,
    campaign_form_data,
)

pytestmark = pytest.mark.django_db

TEXT = "alpha beta gamma delta epsilon zeta"


def at(word: str) -> tuple[int, int]:
    return TEXT.index(word), TEXT.index(word) + len(word)


def chars(*words) -> set[int]:
    return {k for w in words for k in range(*at(w))}


@pytest.fixture
def world():
    dataset = DatasetFactory(name="pre")
    system = SystemFactory(dataset=dataset, name="sys")
    outputs = [
        OutputFactory(item=ItemFactory(dataset=dataset, position=i, external_id=f"e{i:02d}"), system=system, text=TEXT)
        for i in range(20)
    ]
    spans = [
        {"start": at("beta")[0], "end": at("beta")[1], "severity": "minor"},
        {"start": at("gamma")[0], "end": at("delta")[1], "severity": "critical", "category": "Accuracy"},
        {"start": 30, "end": 99, "severity": "minor"},  # outside the text: dropped
        {"missing": True, "severity": "major"},
    ]
    run = judge_run(
        dataset,
        {o.pk: 0.5 for o in outputs},
        options={"mode": "spans"},
        extras={o.pk: {"spans": spans} for o in outputs},
    )
    return {"dataset": dataset, "outputs": outputs, "run": run}


def _campaign(world, holdout=0.25, name="esa-ai"):
    return campaign_create(
        dataset=world["dataset"],
        name=name,
        protocol="esa",
        criteria=["quality"],
        seed=11,
        prefill_run=world["run"].pk,
        prefill_holdout=holdout,
    )


def test_suggestions_copied_with_a_held_back_share(world):
    campaign = _campaign(world)
    prefill = campaign.prefill
    assert campaign.prefilled and prefill.metric == "llm-judge" and prefill.run_id == world["run"].pk
    assert len(prefill.held_back) == 5  # 0.25 of 20 outputs
    stored = SpanSuggestion.objects.filter(campaign=campaign)
    assert stored.count() == 20 * 3
    first = list(stored.filter(output=world["outputs"][0]).values_list("start", "end", "severity", "missing"))
    # critical is not offered (ESA's default severities are minor and major): the most severe below it.
    assert first == [
        (*at("beta"), "minor", False),
        (at("gamma")[0], at("delta")[1], "major", False),
        (None, None, "major", True),
    ]
    assert set(stored.filter(held_back=True).values_list("output_id", flat=True)) == set(prefill.held_back)
    # The annotator's payload: suggestions only on shown outputs, with no source nor score.
    annotator = AnnotatorFactory(project=world["dataset"].project)
    seen = {}
    for _ in range(20):
        assignment, _ = assignment_next(campaign=campaign, annotator=annotator)
        (output,) = assignment_payload(assignment=assignment)["item"]["outputs"]
        seen[output["id"]] = output["suggestions"]
        unit_submit(
            annotator=annotator,
            assignment_id=assignment.pk,
            judgements=[
                {
                    "criterion": "quality",
                    "output": output["id"],
                    "score": 50,
                    "spans": []
                    if output["id"] in prefill.held_back
                    else [
                        {"start": s["start"], "end": s["end"], "severity": s["severity"], "suggestion": k}
                        if not s["missing"]
                        else {"missing": True, "severity": s["severity"], "suggestion": k}
                        for k, s in enumerate(output["suggestions"])
                    ],
                }
            ],
        )
    assert all(seen[o] == [] for o in prefill.held_back)
    assert all(
        len(v) == 3 and set(v[0]) == {"start", "end", "severity", "missing"}
        for o, v in seen.items()
        if o not in prefill.held_back
    )
    assert SuggestionDecision.objects.filter(judgement__campaign=campaign, decision="accepted").count() == 15 * 3


def test_minwed_errors_and_nli_omissions_become_spans():
    extra = {
        "unit": "word",
        "errors": [
            {"position": 1, "type": "substitution", "ref": "bet", "hyp": "beta", "severity": 0.03},  # bin 2: minor
            {"position": 3, "type": "substitution", "ref": "d", "hyp": "delta", "severity": 0.15},  # bin 4: major
            {"position": 4, "type": "insertion", "ref": None, "hyp": "epsilon", "severity": 0.0},  # no gain: none
            {"position": None, "type": "deletion", "ref": "eta", "hyp": None, "severity": 0.4},  # missing content
        ],
    }
    assert mined_spans(extra, TEXT, ["minor", "major"]) == [
        {"start": at("beta")[0], "end": at("beta")[1], "severity": "minor", "missing": False, "category": ""},
        {"start": at("delta")[0], "end": at("delta")[1], "severity": "major", "missing": False, "category": ""},
        {"start": None, "end": None, "severity": "major", "missing": True, "category": ""},
    ]
    assert mined_spans(extra, TEXT, ["minor"])[1]["severity"] == "minor"
    assert (
        nli_spans({"omitted": ["a | b | c", "d | e | f"], "label": "omission"}, TEXT, ["minor", "major"])
        == [{"start": None, "end": None, "severity": "major", "missing": True, "category": ""}] * 2
    )


def test_campaign_from_a_minwed_run(world):
    o = world["outputs"][0]
    run = judge_run(
        world["dataset"],
        {o.pk: 1.0},
        metric="minwed",
        extras={
            o.pk: {"errors": [{"position": 2, "type": "substitution", "ref": "g", "hyp": "gamma", "severity": 0.5}]}
        },
    )
    campaign = campaign_create(dataset=world["dataset"], name="m", protocol="esa", criteria=["q"], prefill_run=run.pk)
    assert list(SpanSuggestion.objects.filter(campaign=campaign).values_list("output_id", "start", "end")) == [
        (o.pk, *at("gamma"))
    ]


def _cmd(*args):
    err = StringIO()
    with pytest.raises(CommandError) as exc:
        call_command("create_campaign", "--dataset", "pre", "--criteria", "q", *args, stdout=StringIO(), stderr=err)
    return str(exc.value) + " " + err.getvalue()


def test_bad_prefill_input_is_refused_in_one_line(world):
    bleu = judge_run(world["dataset"], {world["outputs"][0].pk: 1.0}, metric="bleu")
    run = str(world["run"].pk)
    assert "Only span protocols" in _cmd("--name", "a", "--protocol", "likert", "--scale", "1-5", "--prefill-run", run)
    assert "produced no spans" in _cmd("--name", "b", "--protocol", "esa", "--prefill-run", str(bleu.pk))
    assert "No done metric run 999999" in _cmd("--name", "c", "--protocol", "esa", "--prefill-run", "999999")
    assert "held-back share" in _cmd(
        "--name", "d", "--protocol", "esa", "--prefill-run", run, "--prefill-holdout", "1.5"
    )
    out = StringIO()
    call_command(
        "create_campaign",
        "--dataset",
        "pre",
        "--criteria",
        "q",
        "--name",
        "ok",
        "--protocol",
        "esa",
        "--prefill-run",
        run,
        "--prefill-holdout",
        "0.1",
        "--json",
        stdout=out,
    )
    assert json.loads(out.getvalue())["prefill"] == {
        "run": world["run"].pk,
        "metric": "llm-judge",
        "holdout": 0.1,
        "held_back_outputs": 2,
        "suggestions": 18 * 3,
    }


def test_decisions_agreement_and_automation_bias(world):
    campaign = _campaign(world)
    held = set(campaign.prefill.held_back)
    annotator = AnnotatorFactory(project=world["dataset"].project)
    scores = {"shown": [], "held_back": []}
    pairs = {"shown": [], "held_back": []}
    suggested = chars("beta", "gamma", "delta") | set(range(at("gamma")[1], at("delta")[0]))  # gamma..delta
    for k in range(20):
        assignment, _ = assignment_next(campaign=campaign, annotator=annotator)
        output = assignment.unit.outputs[0]
        if output in held:
            score, spans, marked = (
                60 + k,
                [{"start": at("gamma")[0], "end": at("gamma")[1], "severity": "minor"}],
                chars("gamma"),
            )
        else:
            if not scores["shown"]:
                # A span naming a suggestion the output does not have is refused.
                with pytest.raises(ValidationError, match="suggestion must name"):
                    unit_submit(
                        annotator=annotator,
                        assignment_id=assignment.pk,
                        judgements=[
                            {
                                "criterion": "quality",
                                "output": output,
                                "score": 1,
                                "spans": [{"start": 0, "end": 5, "severity": "minor", "suggestion": 7}],
                            }
                        ],
                    )
            # Accept beta, edit gamma..delta down to "delta" (major), delete the missing marker, add "zeta".
            score, marked = 30 + k, chars("beta", "delta", "zeta")
            spans = [
                {"start": at("beta")[0], "end": at("beta")[1], "severity": "minor", "suggestion": 0},
                {"start": at("delta")[0], "end": at("delta")[1], "severity": "major", "suggestion": 1},
                {"start": at("zeta")[0], "end": at("zeta")[1], "severity": "minor"},
            ]
        group = "held_back" if output in held else "shown"
        scores[group].append(score)
        pairs[group].append((suggested, marked, len(spans)))
        unit_submit(
            annotator=annotator,
            assignment_id=assignment.pk,
            judgements=[{"criterion": "quality", "output": output, "score": score, "spans": spans}],
        )
    out = StringIO()
    call_command("agreement", "--campaign", "esa-ai", "--json", stdout=out)
    fig = json.loads(out.getvalue())["criteria"]["quality"]["suggestions"]
    assert fig["decisions"] == {"accepted": 15, "edited": 15, "deleted": 15, "added": 15}
    for group in ("shown", "held_back"):
        tp = sum(len(s & h) for s, h, _ in pairs[group])
        fp = sum(len(s - h) for s, h, _ in pairs[group])
        fn = sum(len(h - s) for s, h, _ in pairs[group])
        a = fig["agreement_with_suggestions"][group]
        assert a["judgements"] == len(pairs[group])
        assert a["precision"] == pytest.approx(tp / (tp + fp)) and a["recall"] == pytest.approx(tp / (tp + fn))
        assert a["f1"] == pytest.approx(2 * tp / (2 * tp + fp + fn))
    bias = fig["automation_bias"]
    assert bias["score_difference"] == pytest.approx(np.mean(scores["shown"]) - np.mean(scores["held_back"]))
    assert bias["score_mannwhitney_p"] == pytest.approx(
        mannwhitneyu(scores["shown"], scores["held_back"], alternative="two-sided").pvalue
    )
    assert bias["spans_difference"] == pytest.approx(3 - 1)
    assert bias["f1_difference"] == pytest.approx(
        fig["agreement_with_suggestions"]["shown"]["f1"] - fig["agreement_with_suggestions"]["held_back"]["f1"]
    )
    # Held-back units record no decisions: nothing was suggested to them.
    assert not SuggestionDecision.objects.filter(judgement__output_id__in=held).exists()


def test_set_up_page_and_api_create_a_prefilled_campaign(client, world):
    from django.urls import reverse

    from annotations.models import Campaign, Membership
    from tests.annotations.factories import MembershipFactory, UserFactory

    user = UserFactory()
    MembershipFactory(project=world["dataset"].project, user=user, role=Membership.Role.RESEARCHER)
    client.force_login(user)
    url = reverse("campaign-new", args=[world["dataset"].project.pk])
    page = client.get(url).content.decode()
    assert f'value="{world["run"].pk}"' in page and "pre: llm-judge" in page  # the run is offered
    data = campaign_form_data(
        world["dataset"], name="from-page", protocol="esa", prefill_run=str(world["run"].pk), prefill_holdout="0.5"
    )
    assert client.post(url, data).status_code == 302
    campaign = Campaign.objects.get(name="from-page")
    assert campaign.prefilled and len(campaign.prefill.held_back) == 10
    # The API: the same fields; a bad share is a 400 with the field's message.
    body = {
        "dataset": world["dataset"].pk,
        "name": "from-api",
        "protocol": "esa",
        "criteria": ["quality"],
        "prefill_run": world["run"].pk,
        "prefill_holdout": 0.2,
    }
    assert client.post("/api/campaigns/", body, content_type="application/json").status_code == 201
    assert Campaign.objects.get(name="from-api").prefill.holdout == 0.2
    bad = client.post("/api/campaigns/", {**body, "name": "bad", "prefill_holdout": 3}, content_type="application/json")
    assert bad.status_code == 400 and "prefill_holdout" in bad.json().get("errors", bad.json())


def test_export_records_where_the_suggestions_came_from(world, tmp_path):
    campaign = _campaign(world, holdout=0.1)
    out = tmp_path / "export"
    call_command(
        "export_dataset", "--campaign", campaign.name, "--format", "jsonl", "--out", str(out), stdout=StringIO()
    )
    config = json.loads((out / "campaign.json").read_text())
    assert config["prefill"] == {
        "run": world["run"].pk,
        "metric": "llm-judge",
        "signature": world["run"].signature,
        "holdout": 0.1,
        "held_back_outputs": 2,
    }
    card = (out / "README.md").read_text()
    assert f"AI-suggested spans (ESA^AI): from llm-judge run {world['run'].pk}" in card


def test_next_assignment_api_carries_suggestions_and_nothing_of_their_source(client, world):
    from annotations.models import Membership
    from tests.annotations.factories import MembershipFactory, UserFactory

    campaign = _campaign(world, holdout=0.0)
    user = UserFactory()
    MembershipFactory(project=world["dataset"].project, user=user, role=Membership.Role.ANNOTATOR)
    client.force_login(user)
    response = client.post(f"/api/campaigns/{campaign.pk}/next-assignment/")
    assert response.status_code in (200, 201)
    (output,) = response.json()["item"]["outputs"]
    assert [(s["start"], s["end"], s["severity"]) for s in output["suggestions"]][:2] == [
        (*at("beta"), "minor"),
        (at("gamma")[0], at("delta")[1], "major"),
    ]
    body = response.content.decode()
    assert "llm-judge" not in body and world["run"].signature not in body and "category" not in body
