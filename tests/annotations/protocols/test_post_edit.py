"""The post-edit protocol: HTER per output as sacrebleu's TER of (output, post-edit) on a real
dataset (ASSET: system simplifications, post-edited into two of the published reference
simplifications), the judgements' import <-> export round trip, the post-edits exported as
references and imported back into the dataset, agreement on HTER (krippendorff), the unit submit
of the REST API, and the direction of rankings and `correlate` (lower HTER is better)."""

import csv
import json
from collections import defaultdict
from io import StringIO
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient
from sacrebleu.metrics import TER

from annotations.models import (
    Campaign,
    Membership,
    Output,
    PostEditJudgement,
    Reference,
)
from annotations.services.campaigns import campaign_create
from tests.annotations.factories import (
    DatasetFactory,
    ItemFactory,
    MembershipFactory,
    OutputFactory,
    SystemFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


def run(*args) -> dict:
    out = StringIO()
    call_command(*args, "--json", stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())


def write_jsonl(path: Path, rows) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").rstrip("\n").split("\n")


def sacrebleu_ter(output: str, post_edit: str) -> float:
    """The reference: sacrebleu's own sentence TER (default options), the post-edit the only reference."""
    return TER().sentence_score(output, [post_edit]).score


@pytest.fixture
def asset(shared_data, tmp_path):
    """ASSET's 100 rated system simplifications as a dataset (system "rated"), and a post-edit
    campaign whose two annotators post-edited each into a published reference simplification
    (annotator pe-0 into asset.test.simp.0, pe-1 into asset.test.simp.1)."""
    folder = shared_data / "asset"
    originals = _lines(folder / "asset.test.orig")
    simp = [_lines(folder / f"asset.test.simp.{k}") for k in range(2)]
    with (folder / "human_ratings.csv").open(encoding="utf-8", newline="") as f:
        rated = {int(r["original_sentence_id"]): r["simplification"] for r in csv.DictReader(f)}
    dataset_file = write_jsonl(
        tmp_path / "asset.jsonl",
        (
            {"item": f"asset-{i}", "source": originals[i], "outputs": {"rated": text}}
            for i, text in sorted(rated.items())
        ),
    )
    run("import_dataset", str(dataset_file), "--dataset", "asset-pe", "--project", "asset-pe")
    run(
        "create_campaign",
        "--dataset",
        "asset-pe",
        "--name",
        "asset-post-edit",
        "--protocol",
        "post-edit",
        "--criteria",
        "post-edit",
        "--redundancy",
        "2",
    )
    lines = [
        {
            "item": f"asset-{i}",
            "system": "rated",
            "annotator": f"pe-{k}",
            "criterion": "post-edit",
            "post_edit": simp[k][i],
        }
        for i in sorted(rated)
        for k in range(2)
    ]
    judgements = write_jsonl(tmp_path / "post-edits.jsonl", lines)
    assert run("import_judgements", str(judgements), "--campaign", "asset-post-edit")["created"] == 200
    expected = {(f"asset-{i}", f"pe-{k}"): sacrebleu_ter(rated[i], simp[k][i]) for i in rated for k in range(2)}
    return {
        "campaign": Campaign.objects.get(name="asset-post-edit"),
        "rated": rated,
        "simp": simp,
        "lines": lines,
        "expected": expected,
    }


def test_hter_per_output_is_sacrebleus_ter_of_output_and_post_edit(asset, tmp_path):
    campaign, expected = asset["campaign"], asset["expected"]
    stored = {
        (j.item.external_id, j.annotator.name): (j.score, j.post_edit)
        for j in PostEditJudgement.objects.filter(campaign=campaign).select_related("item", "annotator")
    }
    assert len(stored) == 200
    for key, hter in expected.items():
        assert stored[key][0] == pytest.approx(hter, abs=1e-9), key
    # Not trivially zero: the references rewrite the simplifications.
    assert 10 < np.mean(list(expected.values())) < 100
    out = tmp_path / "export"
    run("export_dataset", "--campaign", "asset-post-edit", "--format", "jsonl", "--out", str(out))
    # outputs.jsonl: each output's human HTER, the mean over its two post-edits, as for other protocols.
    outputs = {row["item"]: row["human"]["post-edit"] for row in read_jsonl(out / "outputs.jsonl")}
    for i in asset["rated"]:
        item = f"asset-{i}"
        mean = (expected[(item, "pe-0")] + expected[(item, "pe-1")]) / 2
        assert outputs[item]["n"] == 2 and outputs[item]["mean"] == pytest.approx(mean, abs=1e-9)
        assert outputs[item]["consensus"] is None and outputs[item]["rating_mean"] is None
    # judgements.jsonl: the edited text as "post_edit", with item, system, annotator, criterion.
    rows = read_jsonl(out / "judgements.jsonl")
    assert len(rows) == 200
    assert {"item", "system", "annotator", "criterion", "post_edit", "score"} <= set(rows[0])
    texts = {(r["item"], r["post_edit"]) for r in rows}
    assert texts == {(line["item"], line["post_edit"]) for line in asset["lines"]}
    config = json.loads((out / "campaign.json").read_text())
    assert config["protocol"] == "post-edit"


def test_judgements_import_export_round_trip_and_post_edits_back_as_references(asset, tmp_path):
    first = tmp_path / "one"
    run("export_dataset", "--campaign", "asset-post-edit", "--format", "jsonl", "--out", str(first))
    # Re-created elsewhere from the exported files: the same HTER and the same agreement.
    run("import_dataset", str(first / "dataset.jsonl"), "--dataset", "asset-pe-2", "--project", "again")
    run(
        "create_campaign",
        "--dataset",
        "asset-pe-2",
        "--name",
        "asset-post-edit-2",
        "--protocol",
        "post-edit",
        "--criteria",
        "post-edit",
        "--redundancy",
        "2",
    )
    assert (
        run("import_judgements", str(first / "judgements.jsonl"), "--campaign", "asset-post-edit-2")["created"] == 200
    )
    # Imported again: nothing new, nothing refused (the HTER in the file is recomputed, and equal).
    assert run("import_judgements", str(first / "judgements.jsonl"), "--campaign", "asset-post-edit-2")["created"] == 0
    second = tmp_path / "two"
    run("export_dataset", "--campaign", "asset-post-edit-2", "--format", "jsonl", "--out", str(second))
    assert read_jsonl(first / "outputs.jsonl") == read_jsonl(second / "outputs.jsonl")

    # The same lines, but for the annotators' pseudonyms (salted per campaign) and the provenance.
    def same(folder):
        return [
            {k: v for k, v in r.items() if k not in ("annotator", "provenance")}
            for r in read_jsonl(folder / "judgements.jsonl")
        ]

    assert same(first) == same(second)
    one, two = (json.loads((d / "campaign.json").read_text())["agreement"] for d in (first, second))
    assert one == two

    # The post-edits as new references, with their provenance.
    references = read_jsonl(first / "references.jsonl")
    assert len(references) == 200
    pseudonyms = {r["annotator"] for r in read_jsonl(first / "judgements.jsonl")}
    judgement_ids = set(PostEditJudgement.objects.filter(campaign=asset["campaign"]).values_list("pk", flat=True))
    for ref in references:
        prov = ref["provenance"]
        assert prov["kind"] == "post-edit" and prov["campaign"] == "asset-post-edit"
        assert prov["annotator"] in pseudonyms and prov["judgement"] in judgement_ids
        assert prov["system"] == "rated" and prov["hter"] == pytest.approx(
            asset["expected"][(ref["item"], PostEditJudgement.objects.get(pk=prov["judgement"]).annotator.name)]
        )
    # ... imported back as the dataset's references: each item gains its two post-edits.
    dataset = asset["campaign"].dataset
    assert not Reference.objects.filter(item__dataset=dataset).exists()
    result = run("import_references", str(first / "references.jsonl"), "--dataset", "asset-pe", "--project", "asset-pe")
    simp = asset["simp"]
    # Where both post-editors wrote the same text (ASSET's simp.0 and simp.1 agree once), one reference.
    distinct = {(i, simp[k][i]) for i in asset["rated"] for k in range(2)}
    assert result == {"dataset": "asset-pe", "lines": 200, "created": len(distinct), "skipped": 200 - len(distinct)}
    got = defaultdict(set)
    for item, text in Reference.objects.filter(item__dataset=dataset).values_list("item__external_id", "text"):
        got[item].add(text)
    assert got == {f"asset-{i}": {simp[0][i], simp[1][i]} for i in asset["rated"]}
    # Twice: nothing added.
    assert (
        run("import_references", str(first / "references.jsonl"), "--dataset", "asset-pe", "--project", "asset-pe")[
            "created"
        ]
        == 0
    )


def test_a_bad_references_file_imports_nothing_and_names_each_line(asset, tmp_path):
    bad = write_jsonl(
        tmp_path / "bad.jsonl",
        [
            {"item": "asset-7", "reference": "fine"},
            {"item": "nope", "reference": "x"},
            {"item": "asset-7", "reference": "   "},
            {"item": "asset-7", "text": "x"},
        ],
    )
    err = StringIO()
    with pytest.raises(CommandError):
        call_command("import_references", str(bad), "--dataset", "asset-pe", stdout=StringIO(), stderr=err)
    assert err.getvalue().splitlines() == [
        "line 2: item 'nope' is not in dataset 'asset-pe'",
        "line 3: reference is empty",
        "line 4: unknown keys: text (allowed: item, reference, provenance)",
        "line 4: missing 'reference'",
    ]
    assert not Reference.objects.filter(item__dataset__name="asset-pe").exists()


def test_agreement_is_krippendorffs_alpha_on_hter(asset):
    from annotations.analysis.report import agreement_report

    expected = asset["expected"]
    items = sorted({item for item, _ in expected})
    data = np.array([[expected[(item, f"pe-{k}")] for item in items] for k in range(2)])
    alpha = krippendorff.alpha(reliability_data=data, level_of_measurement="interval")
    figures = agreement_report(campaign=asset["campaign"])["criteria"]["post-edit"]
    assert figures["headline"]["value"] == pytest.approx(alpha, abs=1e-9)
    assert "unit: output" in figures["headline"]["label"]


@pytest.fixture
def two_systems():
    """Two systems over six items: "close" needs one word changed, "far" most of them."""
    dataset = DatasetFactory(name="pe-toy")
    close, far = SystemFactory(dataset=dataset, name="close"), SystemFactory(dataset=dataset, name="far")
    post_edits = {}
    for i in range(6):
        item = ItemFactory(dataset=dataset, external_id=f"i{i}", position=i, source=f"source {i}")
        edited = f"the cat number {i} sat on the mat today"
        a = OutputFactory(item=item, system=close, text=f"the cat number {i} sat on a mat today")
        b = OutputFactory(item=item, system=far, text=f"dog {i} was here yesterday maybe")
        post_edits[a.pk] = post_edits[b.pk] = edited
    campaign = campaign_create(
        dataset=dataset,
        name="pe-toy",
        protocol="post-edit",
        criteria=["adequacy"],
        scale_min=0,
        scale_max=100,
        redundancy=1,
    )
    return dataset, campaign, post_edits


def test_the_api_takes_a_unit_and_computes_its_hter(two_systems):
    dataset, campaign, _ = two_systems
    user = UserFactory(username="editor")
    MembershipFactory(project=dataset.project, user=user, role=Membership.Role.ANNOTATOR)
    client = APIClient()
    client.force_authenticate(user)
    body = client.post(f"/api/campaigns/{campaign.pk}/next-assignment/").json()
    output = body["item"]["outputs"][0]
    url = f"/api/assignments/{body['id']}/submit/"
    edited = "the cat sat on the mat"
    for answer, why in (
        ({"post_edit": "  "}, "post_edit is empty"),
        ({"post_edit": 5, "rating": 50}, "post_edit must be a string"),
        ({"post_edit": edited}, "rating is required"),
        ({"post_edit": edited, "rating": 101}, "rating 101 is outside the scale 0 to 100"),
    ):
        bad = client.post(
            url, {"judgements": [{"criterion": "adequacy", "output": output["id"], **answer}]}, format="json"
        )
        assert bad.status_code == 400 and why in json.dumps(bad.json()), (answer, bad.content)
    assert not PostEditJudgement.objects.exists()
    # A score sent along (an exported line's HTER) is not taken: the server computes it.
    done = client.post(
        url,
        {
            "judgements": [
                {"criterion": "adequacy", "output": output["id"], "post_edit": edited, "rating": 40, "score": 0}
            ],
            "shown_order": body["shown_order"],
        },
        format="json",
    )
    assert done.status_code == 201, done.content
    stored = PostEditJudgement.objects.get()
    assert (stored.post_edit, stored.rating, stored.origin, stored.status) == (edited, 40.0, "api", "complete")
    assert stored.score == pytest.approx(sacrebleu_ter(stored.output.text, edited))


def test_rankings_and_correlate_take_lower_hter_as_better(two_systems, tmp_path):
    from annotations.analysis.report import correlate_report, ranking_report

    dataset, campaign, post_edits = two_systems
    lines = []
    outputs = {o.pk: o for o in Output.objects.filter(item__dataset=dataset).select_related("item", "system")}
    for pk, text in post_edits.items():
        o = outputs[pk]
        lines.append(
            {
                "item": o.item.external_id,
                "system": o.system.name,
                "annotator": "a",
                "criterion": "adequacy",
                "post_edit": text,
                "rating": 90 if o.system.name == "close" else 10,
            }
        )
    run("import_judgements", str(write_jsonl(tmp_path / "pe.jsonl", lines)), "--campaign", "pe-toy")
    ranking = ranking_report(campaign=campaign, bootstrap=0)["criteria"]["adequacy"]
    assert [r["system"] for r in ranking] == ["close", "far"]  # the fewer edits, the better
    assert ranking[0]["rank"] == 1 and ranking[1]["rank"] == 2
    # Every named cluster rule (the rankings command, API and page) orders them alike.
    from annotations.analysis import cluster_rules
    from annotations.analysis.report import rank_by_rule

    for rule in cluster_rules.RULES:
        ranked = rank_by_rule(campaign=campaign, criterion="adequacy", rule=rule, resamples=200)["systems"]
        assert [r["system"] for r in ranked] == ["close", "far"], rule
        assert ranked[0]["mean"] < ranked[1]["mean"], rule  # the mean stays the HTER
    # A metric that agrees with the post-editors (TER against the post-edits as references)
    # correlates positively once both are oriented: -TER against -HTER.
    write_jsonl(
        tmp_path / "refs.jsonl",
        [
            {"item": outputs[pk].item.external_id, "reference": text}
            for pk, text in post_edits.items()
            if outputs[pk].system.name == "close"
        ],
    )
    run("import_references", str(tmp_path / "refs.jsonl"), "--dataset", "pe-toy")
    call_command(
        "run_metric",
        "--dataset",
        "pe-toy",
        "--metric",
        "ter",
        "--sync",
        "--no-progress",
        stdout=StringIO(),
        stderr=StringIO(),
    )
    found = correlate_report(campaign=campaign, metric="ter", criterion="adequacy", method="pearson")
    ter = TER()
    hter = {pk: ter.sentence_score(outputs[pk].text, [post_edits[pk]]).score for pk in post_edits}
    # The metric's TER equals the HTER here (the references are the post-edits): Pearson 1.
    assert found["pearson"] == pytest.approx(1.0)
    assert "negated" in found["human_orientation"]
    assert max(hter.values()) > min(hter.values())


def test_a_reopened_unit_shows_its_post_edit_and_rating_and_a_revision_recomputes_the_hter(two_systems):
    """The revise page's draft holds the stored post-edit (post_edit.js puts it in the box) and the
    rating (not the HTER) for the scale; the revision is stored with its own HTER."""
    from django.test import Client
    from django.urls import reverse

    from annotations.services.assignments import assignment_next
    from annotations.services.handles import output_handle
    from annotations.services.projects import annotator_get_or_create
    from annotations.services.submissions import unit_submit

    dataset, campaign, post_edits = two_systems
    user = UserFactory(username="reviser")
    MembershipFactory(project=dataset.project, user=user, role=Membership.Role.ANNOTATOR)
    me = annotator_get_or_create(project=campaign.project, name=user.username, user=user)
    assignment, _ = assignment_next(campaign=campaign, annotator=me)
    output = assignment.unit.outputs[0]
    unit_submit(
        annotator=me,
        assignment_id=assignment.pk,
        time_spent_ms=1000,
        judgements=[{"criterion": "adequacy", "output": output, "post_edit": "a first edit", "rating": 30}],
    )
    client = Client()
    client.force_login(user)
    html = client.get(reverse("annotate-revise", args=[assignment.pk])).content.decode()
    config = json.loads(html.split('id="unit-config" type="application/json">')[1].split("</script>")[0])
    handle = output_handle(assignment.pk, output)
    assert config["draft"]["fields"] == {f"s-0-{handle}": "30"}
    assert config["draft"]["post_edits"] == {handle: "a first edit"}
    body = {
        "judgements": [{"criterion": "adequacy", "output": handle, "post_edit": post_edits[output], "rating": 70}],
        "shown_order": [handle],
    }
    response = client.post(
        reverse("annotate-revise-submit", args=[assignment.pk]), json.dumps(body), content_type="application/json"
    )
    assert response.status_code == 200, response.content
    (row,) = PostEditJudgement.objects.filter(assignment=assignment)
    assert (row.post_edit, row.rating) == (post_edits[output], 70.0)
    assert row.score == pytest.approx(sacrebleu_ter(Output.objects.get(pk=output).text, post_edits[output]))
