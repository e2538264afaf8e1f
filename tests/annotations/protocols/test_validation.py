"""One rule, one message, every path: the same bad answer is refused with the same reason by
the REST one-judgement endpoint (400), the page's unit submit (400, `judgement N: reason`),
`import_judgements` (`line N: reason`, non-zero exit), a gold-unit import (`quality --gold`,
`line N: ...reason`) and a quality-control import (`import_judgements` with `"control"`),
wherever the rule applies to that path.

The expected reasons are written out here, not read from the code: they are the contract.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.test import APIClient

from annotations.models import Assignment, Campaign, JudgementBase, Membership, Output
from annotations.models.quality import ControlJudgement, GoldUnit
from annotations.services.campaigns import campaign_create
from annotations.services.handles import output_handle
from tests.annotations.factories import (
    DatasetFactory,
    ItemFactory,
    MembershipFactory,
    OutputFactory,
    ProjectFactory,
    SystemFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

# Every output text is 12 characters long, so a span's reason does not depend on the output.
TEXTS = {"A": "The cat sat.", "B": "A dog ran up", "C": "Birds flew!!"}
ENDPOINT = {
    "likert": "ratings",
    "rankme": "ratings",
    "pairwise": "pairwise",
    "bws": "bestworst",
    "esa": "spans",
    "cesa": "spans",
    "mqm": "spans",
}  # MQM's own rules: test_mqm_api.py


@dataclass
class World:
    campaign: Campaign
    assignment: Assignment
    outputs: list[int]  # the unit's outputs, in the order shown
    system: dict[int, str]  # output id -> system name
    api: APIClient
    page: object  # django test client, logged in as the annotator


@pytest.fixture
def make(client, tmp_path):
    """A campaign of `protocol` on one item with outputs of systems A, B, C, and the annotator's
    pending assignment, taken by opening the campaign's page."""
    project = ProjectFactory(name="validation")
    user = MembershipFactory(project=project, user=UserFactory(username="vera"), role=Membership.Role.ANNOTATOR).user
    dataset = DatasetFactory(project=project, name="v-data")
    item = ItemFactory(dataset=dataset, external_id="i1", position=0, source="a source")
    for name, text in TEXTS.items():
        OutputFactory(item=item, system=SystemFactory(dataset=dataset, name=name), text=text)

    def build(protocol: str, **options) -> World:
        campaign = campaign_create(
            dataset=dataset, name=f"v-{protocol}", protocol=protocol, criteria=["quality"], **options
        )
        client.force_login(user)
        assert client.post(reverse("annotate-campaign", args=[campaign.pk]), follow=True).status_code == 200
        assignment = Assignment.objects.select_related("unit").get(campaign=campaign, annotator__user=user)
        api = APIClient()
        api.force_authenticate(user)
        system = dict(Output.objects.filter(item=item).values_list("id", "system__name"))
        return World(campaign, assignment, list(assignment.shown_order), system, api, client)

    return build


# --- the five paths ---------------------------------------------------------------------------


def _messages(body) -> list[str]:
    if isinstance(body, dict):
        return [m for value in body.values() for m in _messages(value)]
    if isinstance(body, list):
        return [m for value in body for m in _messages(value)]
    return [str(body)]


OUTPUT_KEYS = ("output", "output_a", "output_b", "best", "worst", "outputs", "shown_order")


def _handles(w: World, answer):
    """The answer as the annotator sends it: outputs named by the handles their unit showed
    (annotations.services.handles); anything else (another id, a bad value) as it is."""

    def one(value):
        return output_handle(w.assignment.pk, value) if isinstance(value, int) and value in w.outputs else value

    if not isinstance(answer, dict):
        return answer
    return {
        k: ([one(v) for v in value] if isinstance(value, list) else one(value)) if k in OUTPUT_KEYS else value
        for k, value in answer.items()
    }


def via_api(w: World, body: dict) -> list[str]:
    response = w.api.post(
        f"/api/judgements/{ENDPOINT[w.campaign.protocol]}/",
        {"campaign": w.campaign.pk, **_handles(w, body)},
        format="json",
    )
    assert response.status_code == 400, response.content
    return _messages(response.json())


def via_page(w: World, answers: list[dict]) -> list[str]:
    response = w.page.post(
        reverse("annotate-submit", args=[w.assignment.pk]),
        json.dumps(
            {
                "judgements": [_handles(w, a) for a in answers],
                "shown_order": _handles(w, {"shown_order": w.assignment.shown_order})["shown_order"],
            }
        ),
        content_type="application/json",
    )
    assert response.status_code == 400, response.content
    return response.json()["errors"]


def _refused(tmp_path, line: dict, command: str, *args: str) -> list[str]:
    """Run a command on a one-line JSONL file; it must fail (non-zero exit); its stderr lines."""
    path = tmp_path / "line.jsonl"
    path.write_text(json.dumps(line) + "\n")
    err = StringIO()
    with pytest.raises(CommandError):
        call_command(command, *[str(path) if a == "FILE" else a for a in args], stderr=err, stdout=StringIO())
    return err.getvalue().splitlines()


def _stored(w: World) -> int:
    return sum(m.objects.filter(campaign=w.campaign).count() for m in JudgementBase.__subclasses__())


def via_import(w: World, tmp_path, line: dict) -> list[str]:
    lines = _refused(
        tmp_path, {"item": "i1", "annotator": "w1", **line}, "import_judgements", "FILE", "--campaign", w.campaign.name
    )
    assert _stored(w) == 0
    return lines


def via_control_import(w: World, tmp_path, line: dict) -> list[str]:
    lines = _refused(
        tmp_path,
        {"item": "i1", "annotator": "w1", "control": "repeat", **line},
        "import_judgements",
        "FILE",
        "--campaign",
        w.campaign.name,
    )
    assert not ControlJudgement.objects.exists()
    return lines


def via_gold_import(w: World, tmp_path, systems: list[str], expected: dict) -> list[str]:
    lines = _refused(
        tmp_path,
        {"item": "i1", "systems": systems, "expected": expected},
        "quality",
        "--campaign",
        w.campaign.name,
        "--gold",
        "FILE",
    )
    assert not GoldUnit.objects.exists()
    return lines


def refused_alike(reason: str, *, api=None, page=None, imported=None, control=None, gold=None) -> None:
    """Each path that was tried refused with `reason`, in that path's format."""
    if api is not None:
        assert api == [reason]
    if page is not None:
        assert page == [f"judgement 1: {reason}"]
    for lines in (imported, control):
        if lines is not None:
            assert lines == [f"line 1: {reason}"]
    if gold is not None:
        # Gold expectations are reported per criterion key: `line 1: *: reason` (or the criterion's name).
        assert len(gold) == 1 and gold[0].startswith("line 1: ") and gold[0].endswith(reason)


def _system_line(w: World, output: int, **values) -> dict:
    return {"system": w.system[output], "criterion": "quality", **values}


# --- the rules ------------------------------------------------------------------------------------


def test_unknown_criterion(make, tmp_path):
    w = make("likert", scale_min=1, scale_max=5)
    out = w.outputs[0]
    reason = "unknown criterion 'style'; campaign 'v-likert' has quality"
    refused_alike(
        reason,
        api=via_api(w, {"criterion": "style", "output": out, "score": 3}),
        page=via_page(w, [{"criterion": "style", "output": out, "score": 3}]),
        imported=via_import(w, tmp_path, _system_line(w, out, criterion="style", score=3)),
        control=via_control_import(w, tmp_path, _system_line(w, out, criterion="style", score=3)),
        gold=via_gold_import(w, tmp_path, [w.system[out]], {"style": {"min": 1}}),
    )


def test_score_outside_the_criterion_scale(make, tmp_path):
    w = make("likert", scale_min=1, scale_max=5)
    out = w.outputs[0]
    reason = "score 9 is outside the scale 1 to 5"
    refused_alike(
        reason,
        api=via_api(w, {"criterion": "quality", "output": out, "score": 9}),
        page=via_page(w, [{"criterion": "quality", "output": out, "score": 9}]),
        imported=via_import(w, tmp_path, _system_line(w, out, score=9)),
        control=via_control_import(w, tmp_path, _system_line(w, out, score=9)),
        # An expected range outside the scale could never be met.
        gold=via_gold_import(w, tmp_path, [w.system[out]], {"*": {"max": 9}}),
    )


def test_score_must_be_a_number(make, tmp_path):
    w = make("likert", scale_min=1, scale_max=5)
    out = w.outputs[0]
    reason = "score must be a number, got 'good'"
    refused_alike(
        reason,
        api=via_api(w, {"criterion": "quality", "output": out, "score": "good"}),
        page=via_page(w, [{"criterion": "quality", "output": out, "score": "good"}]),
        imported=via_import(w, tmp_path, _system_line(w, out, score="good")),
        control=via_control_import(w, tmp_path, _system_line(w, out, score="good")),
        gold=via_gold_import(w, tmp_path, [w.system[out]], {"*": {"min": "good"}}),
    )


def test_score_on_a_per_criterion_scale(make, tmp_path):
    """A criterion with its own scale: every path reads that one (the control import read the campaign's)."""
    w = make(
        "likert", scale_min=1, scale_max=5, criteria_config=[{"name": "quality", "scale_min": 0, "scale_max": 100}]
    )
    out = w.outputs[0]
    reason = "score 101 is outside the scale 0 to 100"
    refused_alike(
        reason,
        api=via_api(w, {"criterion": "quality", "output": out, "score": 101}),
        page=via_page(w, [{"criterion": "quality", "output": out, "score": 101}]),
        imported=via_import(w, tmp_path, _system_line(w, out, score=101)),
        control=via_control_import(w, tmp_path, _system_line(w, out, score=101)),
    )


def test_rankme_magnitude_must_be_positive(make, tmp_path):
    w = make("rankme", tuple_size=3)
    out = w.outputs[0]
    reason = "RankME magnitudes must be above 0, got -2"
    refused_alike(
        reason,
        api=via_api(w, {"criterion": "quality", "output": out, "score": -2}),
        page=via_page(w, [{"criterion": "quality", "output": out, "score": -2}]),
        imported=via_import(w, tmp_path, _system_line(w, out, score=-2)),
        control=via_control_import(w, tmp_path, _system_line(w, out, score=-2)),
    )


def test_pairwise_winner(make, tmp_path):
    w = make("pairwise")
    a, b = w.outputs
    reason = "winner must be 'a', 'b' or 'tie', got 'left'"
    line = {"criterion": "quality", "a": w.system[a], "b": w.system[b], "winner": "left"}
    refused_alike(
        reason,
        api=via_api(w, {"criterion": "quality", "output_a": a, "output_b": b, "winner": "left"}),
        page=via_page(w, [{"criterion": "quality", "winner": "left"}]),
        imported=via_import(w, tmp_path, line),
        control=via_control_import(w, tmp_path, line),
    )


def test_pairwise_compares_two_different_outputs(make, tmp_path):
    w = make("pairwise")
    a = w.outputs[0]
    reason = "a and b must be two different outputs"
    line = {"criterion": "quality", "a": w.system[a], "b": w.system[a], "winner": "a"}
    refused_alike(
        reason,
        api=via_api(w, {"criterion": "quality", "output_a": a, "output_b": a, "winner": "a"}),
        imported=via_import(w, tmp_path, line),
        control=via_control_import(w, tmp_path, line),
    )


def test_best_and_worst_must_differ(make, tmp_path):
    w = make("bws", tuple_size=3)
    ids, names = w.outputs, [w.system[o] for o in w.outputs]
    reason = "best and worst must be different outputs"
    line = {"criterion": "quality", "outputs": names, "best": names[0], "worst": names[0]}
    refused_alike(
        reason,
        api=via_api(w, {"criterion": "quality", "outputs": ids, "best": ids[0], "worst": ids[0]}),
        page=via_page(w, [{"criterion": "quality", "best": ids[0], "worst": ids[0]}]),
        imported=via_import(w, tmp_path, line),
        control=via_control_import(w, tmp_path, line),
        gold=via_gold_import(w, tmp_path, names, {"*": {"best": names[0], "worst": names[0]}}),
    )


def test_best_and_worst_must_be_outputs_of_the_tuple(make, tmp_path):
    w = make("bws", tuple_size=3)
    ids, names = w.outputs, [w.system[o] for o in w.outputs]
    reason = "best and worst must be outputs of the tuple"
    line = {"criterion": "quality", "outputs": names[:2], "best": names[2], "worst": names[0]}
    refused_alike(
        reason,
        # The third output is the same item's: only the tuple sent leaves it out.
        api=via_api(w, {"criterion": "quality", "outputs": ids[:2], "best": ids[2], "worst": ids[0]}),
        page=via_page(w, [{"criterion": "quality", "best": 10**9, "worst": ids[0]}]),
        imported=via_import(w, tmp_path, line),
        control=via_control_import(w, tmp_path, line),
    )


# ESA (one output per unit) and contrastive ESA (the three outputs on one screen): the same rules.
SPAN_PROTOCOLS = ("esa", "cesa")


def _esa(make, protocol="esa"):
    w = make(protocol)
    # cESA: an output in the middle of the screen; ESA: the unit's only output.
    return w, w.outputs[len(w.outputs) // 2]


def _unit_answers(w: World, out: int, bad: dict) -> list[dict]:
    """The page's unit submit: the bad answer first, good ones for the screen's other outputs."""
    return [bad] + [{"criterion": "quality", "output": o, "score": 50, "spans": []} for o in w.outputs if o != out]


def _gold_systems(w: World, out: int) -> list[str]:
    return [w.system[out]] + [w.system[o] for o in w.outputs if o != out][: len(w.outputs) > 1]


@pytest.mark.parametrize("protocol", SPAN_PROTOCOLS)
def test_span_outside_the_output_text(make, tmp_path, protocol):
    w, out = _esa(make, protocol)
    span = {"start": 4, "end": 40, "severity": "minor"}
    reason = "span 1: need 0 <= start < end <= 12 (the output's length), got 4-40"
    bad = {"criterion": "quality", "output": out, "score": 50, "spans": [span]}
    refused_alike(
        reason,
        api=via_api(w, bad),
        page=via_page(w, _unit_answers(w, out, bad)),
        imported=via_import(w, tmp_path, _system_line(w, out, score=50, spans=[span])),
        # The control import did not check offsets against the text before.
        control=via_control_import(w, tmp_path, _system_line(w, out, score=50, spans=[span])),
        gold=via_gold_import(w, tmp_path, _gold_systems(w, out), {"*": {"spans": [{"start": 4, "end": 40}]}}),
    )


@pytest.mark.parametrize("protocol", SPAN_PROTOCOLS)
def test_span_severity_must_be_the_campaigns(make, tmp_path, protocol):
    w, out = _esa(make, protocol)
    # "critical" is a severity the workbench knows, but not one this campaign offers.
    span = {"start": 0, "end": 3, "severity": "critical"}
    reason = "span 1: severity must be one of minor, major, got 'critical'"
    refused_alike(
        reason,
        api=via_api(w, {"criterion": "quality", "output": out, "score": 50, "spans": [span]}),
        page=via_page(w, _unit_answers(w, out, {"criterion": "quality", "output": out, "score": 50, "spans": [span]})),
        imported=via_import(w, tmp_path, _system_line(w, out, score=50, spans=[span])),
        control=via_control_import(w, tmp_path, _system_line(w, out, score=50, spans=[span])),
    )


@pytest.mark.parametrize("protocol", SPAN_PROTOCOLS)
def test_missing_content_marker_has_no_offsets(make, tmp_path, protocol):
    w, out = _esa(make, protocol)
    span = {"missing": True, "start": 1, "end": 3, "severity": "major"}
    reason = "span 1: a missing-content marker has no start or end"
    refused_alike(
        reason,
        api=via_api(w, {"criterion": "quality", "output": out, "score": 50, "spans": [span]}),
        page=via_page(w, _unit_answers(w, out, {"criterion": "quality", "output": out, "score": 50, "spans": [span]})),
        imported=via_import(w, tmp_path, _system_line(w, out, score=50, spans=[span])),
        control=via_control_import(w, tmp_path, _system_line(w, out, score=50, spans=[span])),
    )


def test_good_answers_pass_every_path(make, tmp_path):
    """The same paths accept a valid answer (so the refusals above are about the rule)."""
    w, out = _esa(make)
    span = {"start": 4, "end": 7, "severity": "minor"}
    path = tmp_path / "ok.jsonl"
    path.write_text(
        json.dumps({"item": "i1", "annotator": "w1", **_system_line(w, out, score=50, spans=[span])})
        + "\n"
        + json.dumps(
            {"item": "i1", "annotator": "w2", "control": "repeat", **_system_line(w, out, score=50, spans=[span])}
        )
        + "\n"
    )
    call_command("import_judgements", str(path), "--campaign", w.campaign.name, stdout=StringIO())
    gold = tmp_path / "gold.jsonl"
    gold.write_text(
        json.dumps(
            {
                "item": "i1",
                "systems": [w.system[out]],
                "expected": {"*": {"spans": [{"start": 4, "end": 12}], "min": 0, "max": 60}},
            }
        )
    )
    call_command("quality", "--campaign", w.campaign.name, "--gold", str(gold), stderr=StringIO())
    assert GoldUnit.objects.count() == 1 and ControlJudgement.objects.count() == 1
    response = w.page.post(
        reverse("annotate-submit", args=[w.assignment.pk]),
        json.dumps(
            {"judgements": [_handles(w, {"criterion": "quality", "output": out, "score": 50, "spans": [span]})]}
        ),
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
