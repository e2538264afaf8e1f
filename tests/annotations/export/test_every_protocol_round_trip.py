"""Every registered protocol (the test-only plugin included): a campaign's judgements exported
(`export_dataset`, judgements.jsonl) and imported into a new campaign (`import_judgements`) are the
same judgements, export again to the same lines, and give the same agreement figures."""

import io
import json
import random

import pytest
from django.core.management import call_command

from annotations import protocols
from annotations.analysis.report import agreement_report
from annotations.models import Output
from annotations.services.assignments import assignment_next
from annotations.services.campaigns import campaign_create
from annotations.services.submissions import unit_submit
from tests.annotations.factories import AnnotatorFactory, DatasetFactory, ItemFactory, OutputFactory, SystemFactory
from tests.protocol_plugin import campaign_settings, every_protocol

pytestmark = pytest.mark.django_db
MEANS = {"sys-a": 80, "sys-b": 50, "sys-c": 30}


def _judged(protocol: str):
    """A campaign of `protocol`, every unit judged by two simulated annotators (k = 2)."""
    dataset = DatasetFactory()
    systems = [SystemFactory(dataset=dataset, name=name) for name in MEANS]
    for i in range(4):
        item = ItemFactory(dataset=dataset, position=i, external_id=f"i{i}")
        for system in systems:
            OutputFactory(item=item, system=system, text=f"Output {i} of {system.name} reads like this.")
    campaign = campaign_create(
        dataset=dataset,
        name=f"source-{protocol}",
        protocol=protocol,
        criteria=["q"],
        redundancy=2,
        seed=2,
        **campaign_settings(protocol),
    )
    rng = random.Random(3)
    for annotator in (AnnotatorFactory(project=dataset.project, name=n) for n in ("ann-1", "ann-2")):
        while True:
            assignment, _ = assignment_next(campaign=campaign, annotator=annotator)
            if assignment is None:
                break
            by_id = {o.pk: o for o in Output.objects.filter(pk__in=assignment.shown_order).select_related("system")}
            outputs = [{"id": pk, "text": by_id[pk].text} for pk in assignment.shown_order]
            answers = protocols.get(protocol).simulated_answers(
                campaign,
                "q",
                outputs,
                lambda o: min(100.0, max(0.0, MEANS[by_id[o["id"]].system.name] + rng.gauss(0, 15))),
                rng,
            )
            unit_submit(
                annotator=annotator, assignment_id=assignment.pk, judgements=answers, shown_order=assignment.shown_order
            )
    return campaign


def _export(campaign, out) -> list[dict]:
    call_command(
        "export_dataset",
        "--campaign",
        campaign.name,
        "--format",
        "jsonl",
        "--out",
        str(out),
        "--json",
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    return [json.loads(line) for line in (out / "judgements.jsonl").read_text(encoding="utf-8").splitlines()]


def _comparable(lines: list[dict]) -> list[list[str]]:
    """Each annotator's lines (an export names annotators by pseudonyms of its own, and the
    provenance names the campaign): the judgements themselves."""
    by_annotator: dict[str, list[str]] = {}
    for line in lines:
        rest = {k: v for k, v in line.items() if k not in ("provenance", "annotator")}
        by_annotator.setdefault(line["annotator"], []).append(json.dumps(rest, sort_keys=True))
    return sorted(sorted(mine) for mine in by_annotator.values())


@pytest.mark.parametrize("protocol", every_protocol())
def test_export_import_round_trip_keeps_judgements_and_agreement(protocol, registered, tmp_path):
    source = _judged(protocol)
    lines = _export(source, tmp_path / "first")
    assert lines
    target = campaign_create(
        dataset=source.dataset,
        name=f"copy-{protocol}",
        protocol=protocol,
        criteria=["q"],
        redundancy=2,
        seed=2,
        **campaign_settings(protocol),
    )
    call_command(
        "import_judgements",
        str(tmp_path / "first" / "judgements.jsonl"),
        "--campaign",
        target.name,
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    assert _comparable(_export(target, tmp_path / "second")) == _comparable(lines)
    before, after = (agreement_report(campaign=c, bootstrap=50)["criteria"]["q"] for c in (source, target))
    assert after["krippendorff_alpha"] == before["krippendorff_alpha"]
    assert before["krippendorff_alpha"][protocols.get(protocol).agreement.level] is not None
