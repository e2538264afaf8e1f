"""Gold units in every registered protocol (the test-only plugin included), as users run them: the
gold file imported with `quality --gold`, in the protocol's own expectation format (a score range,
a winner, a best and a worst, named by system); an annotator answering them right and wrong through
the real submission (`assignment_next`, `unit_submit`); the verdict and pass rate of `quality --json`
and the export's per-annotator figures showing it.

Nothing here names a protocol: the expectation is chosen by the keys the class declares
(`gold_expected_keys`), the answers are the class's own simulated answers (`simulated_answers`) to
impressions read from the texts shown. A protocol that cannot have gold units says so on its class
(`controls_refused`), and the test checks that the import is refused with that reason.
"""

import json
import random
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotations import protocols
from annotations.models import Annotator, Enrolment, Output
from annotations.models.quality import ControlJudgement, ControlUnit, GoldUnit
from annotations.selectors import assignment_payload, enrolment_for
from annotations.services.assignments import assignment_next
from annotations.services.campaigns import campaign_create
from annotations.services.submissions import unit_submit
from tests.annotations.factories import DatasetFactory, ItemFactory, OutputFactory, SystemFactory
from tests.protocol_plugin import campaign_settings, every_protocol

pytestmark = pytest.mark.django_db

WORDS = "the pub serves cheap food near the river and has a high customer rating in the city centre".split()
CRITERION = "quality"


def _run(*args) -> str:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue() + err.getvalue()


def _world(protocol: str):
    """A dataset with regular items (systems s0-s2, the campaign's) and two gold items whose outputs
    come from systems the campaign does not rate (g0, g1, ...), so no regular unit ever shows a gold
    item: each annotator meets both gold units, whatever order the engine draws."""
    rng = random.Random(3)
    dataset = DatasetFactory()
    regular = [SystemFactory(dataset=dataset, name=f"s{i}") for i in range(3)]
    size = protocols.get(protocol).unit_sizes[0]
    gold_systems = [SystemFactory(dataset=dataset, name=f"g{i}") for i in range(max(size, 2))]
    for i in range(6):
        item = ItemFactory(dataset=dataset, external_id=f"r{i}")
        for system in regular:
            OutputFactory(item=item, system=system, text=" ".join(rng.sample(WORDS, 9)).capitalize() + ".")
    for i in range(2):
        item = ItemFactory(dataset=dataset, external_id=f"gold{i}")
        for k, system in enumerate(gold_systems):
            OutputFactory(item=item, system=system, text=f"Gold {i} output {k}: " + " ".join(rng.sample(WORDS, 7)))
    campaign = campaign_create(
        dataset=dataset,
        name=f"gold-{protocol}",
        protocol=protocol,
        criteria=[CRITERION],
        redundancy=2,  # both annotators do every regular unit
        units_per_batch=4,
        systems=[s.name for s in regular],
        seed=5,
        **campaign_settings(protocol),
    )
    return campaign, [s.name for s in gold_systems[:size]]


def _impressions(outputs: list[dict], *, target: str, worst: str | None, right: bool):
    """0-100 opinion by text: answering right, the target output is the best (100) and `worst` the
    worst (0); answering wrong, the other way round. For a score range the whole unit is judged
    excellent (right) or worthless (wrong)."""

    def impression(output: dict) -> float:
        text = output["text"]
        if worst is None:  # a score range: every output of the unit alike
            return 100.0 if right else 0.0
        good = 100.0 if text == target else 0.0 if text == worst else 50.0
        return good if right else 100.0 - good

    return impression


def _answers(protocol, campaign, outputs, impression):
    return protocol.simulated_answers(campaign, CRITERION, outputs, impression, random.Random(0))


def _expectation(protocol, campaign, systems: list[str], texts: dict[str, str]) -> tuple[dict, str | None]:
    """The protocol's own expected answer for a gold unit showing `systems` (by name, as a gold file
    names them), and the system answering wrong must rank best (None for a score range)."""
    keys = protocol.gold_expected_keys
    if "winner" in keys:
        return {"winner": systems[0]}, systems[-1]
    if {"best", "worst"} <= keys:
        return {"best": systems[0], "worst": systems[-1]}, systems[-1]
    # A score range: at least the score the protocol gives an answer judging the output excellent.
    # (Scored through the protocol's own check, so MQM's computed score and RankME's magnitudes count.)
    shown = [{"id": k, "text": texts[name]} for k, name in enumerate(systems)]
    best = _answers(protocol, campaign, shown, lambda o: 100.0)
    worst = _answers(protocol, campaign, shown, lambda o: 0.0)

    def score(answer):
        checked = protocol.check_answer(
            answer, campaign=campaign, criterion=CRITERION, texts={k: texts[name] for k, name in enumerate(systems)}
        )
        return checked["score"]

    high, low = min(map(score, best)), max(map(score, worst))
    assert low < high, "an excellent answer must score above a worthless one"
    return {"min": high}, None


def _work(campaign, person: Annotator, gold_right: dict[int, bool], targets: dict[int, tuple[str, str | None]]):
    """Take and submit every unit the engine hands `person`; a gold unit is answered right or wrong
    as `gold_right[gold unit id]` says, a regular one with a middling opinion."""
    protocol = protocols.of(campaign)
    shown_gold = []
    for _ in range(200):
        assignment, _ = assignment_next(campaign=campaign, annotator=person)
        if assignment is None:
            break
        payload = assignment_payload(
            assignment=assignment, enrolment=enrolment_for(campaign=campaign, annotator=person)
        )
        control = ControlUnit.objects.filter(unit_id=assignment.unit_id).first()
        outputs = payload["item"]["outputs"]
        if control is not None and control.kind == ControlUnit.Kind.GOLD:
            shown_gold.append(control.gold_id)
            target, worst = targets[control.gold_id]
            impression = _impressions(outputs, target=target, worst=worst, right=gold_right[control.gold_id])
        else:
            impression = lambda output: 50.0  # noqa: E731
        result = unit_submit(
            annotator=person,
            assignment_id=assignment.pk,
            judgements=_answers(protocol, campaign, outputs, impression),
            shown_order=payload["shown_order"],
            time_spent_ms=5000,
        )
        assert not getattr(result, "retry", False)  # silent gold units are never sent back
    else:
        raise AssertionError("the engine kept handing out units")
    return shown_gold


@pytest.mark.parametrize("protocol", every_protocol())
def test_gold_units_in_every_protocol(protocol, registered, tmp_path):
    proto = protocols.get(protocol)
    campaign, systems = _world(protocol)
    texts = {
        (o.item.external_id, o.system.name): o.text
        for o in Output.objects.filter(
            item__dataset=campaign.dataset, item__external_id__startswith="gold"
        ).select_related("item", "system")
    }
    gold_file = tmp_path / "gold.jsonl"

    if proto.controls_refused:
        # By design (declared on the class): the gold file is refused with the protocol's reason.
        expected = {"*": {"min": 0}}
        gold_file.write_text(json.dumps({"item": "gold0", "systems": systems, "expected": expected}) + "\n")
        err = StringIO()
        with pytest.raises(CommandError, match="nothing was changed"):
            call_command("quality", "--campaign", campaign.name, "--gold", str(gold_file), stderr=err)
        assert f"line 1: {proto.controls_refused}" in err.getvalue()
        assert not GoldUnit.objects.filter(campaign=campaign).exists()
        return

    lines, targets_by_item = [], {}
    for item in ("gold0", "gold1"):
        spec, worst = _expectation(proto, campaign, systems, {s: texts[(item, s)] for s in systems})
        lines.append(json.dumps({"item": item, "systems": systems, "expected": {"*": spec}, "mode": "silent"}))
        targets_by_item[item] = (texts[(item, systems[0])], None if worst is None else texts[(item, worst)])
    gold_file.write_text("\n".join(lines) + "\n")
    assert "2 gold unit(s) added" in _run("quality", "--campaign", campaign.name, "--gold", str(gold_file))
    _run("quality", "--campaign", campaign.name, "--set", "min_controls_passed=0.75")
    units = {g.item.external_id: g.pk for g in GoldUnit.objects.filter(campaign=campaign).select_related("item")}
    targets = {units[item]: target for item, target in targets_by_item.items()}

    careful = Annotator.objects.create(project=campaign.dataset.project, name="careful")
    mixed = Annotator.objects.create(project=campaign.dataset.project, name="mixed")
    for seed, person in enumerate((careful, mixed)):
        Enrolment.objects.create(campaign=campaign, annotator=person, seed=40 + seed)
    shown = {
        careful.pk: _work(campaign, careful, {units["gold0"]: True, units["gold1"]: True}, targets),
        mixed.pk: _work(campaign, mixed, {units["gold0"]: True, units["gold1"]: False}, targets),
    }
    # Each annotator met both gold units once, among regular units.
    assert {k: sorted(v) for k, v in shown.items()} == {pk: sorted(units.values()) for pk in shown}
    rows = list(
        ControlJudgement.objects.filter(campaign=campaign, kind="gold")
        .order_by("annotator__name", "control__gold__item__external_id")
        .values_list("annotator__name", "control__gold__item__external_id", "passed")
    )
    assert rows == [
        ("careful", "gold0", True),
        ("careful", "gold1", True),
        ("mixed", "gold0", True),
        ("mixed", "gold1", False),
    ]

    out = StringIO()
    call_command("quality", "--campaign", campaign.name, "--json", stdout=out)
    report = json.loads(out.getvalue())["annotators"]
    assert report["careful"]["gold"] == {"judged": 2, "passed": 2}
    assert report["mixed"]["gold"] == {"judged": 2, "passed": 1}
    assert report["careful"]["controls_passed"] == 1.0 and report["mixed"]["controls_passed"] == 0.5
    # The verdict: the rule (controls passed >= 75 %) keeps the careful annotator and excludes the other.
    assert report["careful"]["included"] is True
    assert report["mixed"]["included"] is False and report["mixed"]["reasons"]

    out = tmp_path / "export"
    _run("export_dataset", "--campaign", campaign.name, "--out", str(out), "--annotator-figures")
    figures = [json.loads(line) for line in (out / "annotators.jsonl").read_text().splitlines() if line.strip()]
    assert sorted((f["controls_passed"], f["included"]) for f in figures) == [(0.5, False), (1.0, True)]
    config = json.loads((out / "campaign.json").read_text())
    exported = config["quality_control"]["gold_unit_contents"]
    assert sorted(g["item"] for g in exported) == ["gold0", "gold1"]
    # Gold answers are controls: none is exported as a judgement, and no gold system is.
    judgements = (out / "judgements.jsonl").read_text()
    assert '"g0"' not in judgements and '"gold0"' not in judgements
