"""Second waves: create_campaign --wave-of, disjoint annotators, human1 vs human2 in agreement /
correlate JSON, the meta-evaluation page and the export card."""

import json
from io import StringIO

import numpy as np
import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from scipy import stats

from annotations.analysis import waves as wv
from annotations.models import Annotator, Campaign, Membership
from annotations.services.assignments import assignment_next
from annotations.services.waves import WaveConflict
from tests.annotations.analysis.metric_runs import score_dataset
from tests.annotations.analysis.test_protocols import SYSTEMS, _likert, dataset  # noqa: F401
from tests.annotations.factories import MembershipFactory, UserFactory
from tests.annotations.test_real_data import write_jsonl

pytestmark = pytest.mark.django_db


def run(*args) -> dict:
    out = StringIO()
    call_command(*args, "--json", stdout=out)
    return json.loads(out.getvalue())


def _second_wave(tmp_path, first):
    """Simulated annotators ann4-ann6: the first wave's mean per output, moved by -1, 0 or +1."""
    rng = np.random.default_rng(5)
    mean = {}
    for j in first:
        mean.setdefault((j["item"], j["system"]), []).append(j["score"])
    judgements = []
    for (item, system), scores in sorted(mean.items()):
        for a in ("ann4", "ann5", "ann6"):
            score = float(np.clip(round(np.mean(scores)) + rng.integers(-1, 2), 1, 5))
            judgements.append({"item": item, "system": system, "annotator": a, "criterion": "adequacy", "score": score})
    run("import_judgements", str(write_jsonl(tmp_path / "j2.jsonl", judgements)), "--campaign", "likert-2")
    return judgements


def _per_output(judgements):
    out = {}
    for j in judgements:
        out.setdefault((j["system"], j["item"]), []).append(j["score"])
    return {k: float(np.mean(v)) for k, v in out.items()}


@pytest.fixture
def waves(dataset, tmp_path):  # noqa: F811
    cache.clear()
    first = _likert(tmp_path)
    score_dataset("toy", "bleu")
    score_dataset("toy", "chrf")
    created = run("create_campaign", "--wave-of", "likert", "--name", "likert-2")
    assert created["wave_of"] == "likert" and created["criteria"] == ["adequacy"]
    second = _second_wave(tmp_path, first)
    return first, second


def test_wave_has_the_same_units_and_settings(waves):
    a, b = Campaign.objects.get(name="likert"), Campaign.objects.get(name="likert-2")
    assert b.wave_of == a and (b.scale_min, b.scale_max, b.seed, b.redundancy) == (
        a.scale_min,
        a.scale_max,
        a.seed,
        a.redundancy,
    )
    units = lambda c: sorted((u.item_id, tuple(u.outputs), u.position) for u in c.units.all())  # noqa: E731
    assert units(a) == units(b) and units(a)


def test_wave_command_refusals(waves):
    with pytest.raises(CommandError, match="no campaign named"):
        run("create_campaign", "--wave-of", "nope", "--name", "x")
    with pytest.raises(CommandError, match="not created"):
        run("create_campaign", "--wave-of", "likert", "--name", "x")  # it already has one
    with pytest.raises(CommandError, match="not created"):
        run("create_campaign", "--wave-of", "likert-2", "--name", "y")  # a wave of a wave
    with pytest.raises(CommandError, match="leave out --protocol"):
        run("create_campaign", "--wave-of", "likert", "--name", "z", "--protocol", "esa")
    with pytest.raises(CommandError, match="required: --dataset"):
        run("create_campaign", "--name", "w")


def test_engine_refuses_an_annotator_of_the_other_wave(waves):
    first, second = Campaign.objects.get(name="likert"), Campaign.objects.get(name="likert-2")
    project = first.dataset.project
    user = UserFactory()
    annotator = Annotator.objects.create(
        project=project, name=user.username, user=user, namespace=Annotator.Namespace.ACCOUNT
    )
    assert assignment_next(campaign=first, annotator=annotator)[0] is not None
    with pytest.raises(WaveConflict, match="already annotated the first wave of this campaign"):
        assignment_next(campaign=second, annotator=annotator)
    # An imported worker of the first wave is refused too (no enrolment, only judgements).
    imported = Annotator.objects.get(project=project, name="ann1", namespace=Annotator.Namespace.IMPORT)
    with pytest.raises(WaveConflict):
        assignment_next(campaign=second, annotator=imported)
    # ... and a second-wave worker cannot start on the first wave.
    ann4 = Annotator.objects.get(project=project, name="ann4", namespace=Annotator.Namespace.IMPORT)
    with pytest.raises(WaveConflict, match="another wave"):
        assignment_next(campaign=first, annotator=ann4)
    fresh = Annotator.objects.create(project=project, name="fresh")
    assert assignment_next(campaign=second, annotator=fresh)[0] is not None


def test_human1_vs_human2_in_agreement_and_correlate_json(waves, client):
    first, second = waves
    h1, h2 = _per_output(first), _per_output(second)
    keys = sorted(h1)
    seg = stats.pearsonr([h1[k] for k in keys], [h2[k] for k in keys])[0]
    sys1 = {s: np.mean([h1[k] for k in keys if k[0] == s]) for s in SYSTEMS}
    sys2 = {s: np.mean([h2[k] for k in keys if k[0] == s]) for s in SYSTEMS}
    sys_r = stats.pearsonr([sys1[s] for s in SYSTEMS], [sys2[s] for s in SYSTEMS])[0]
    # CV* of each system over the two waves, the 1-5 scale shifted to start at 0 (Belz et al. 2022).
    cv = np.mean([wv.cv_star([sys1[s] - 1, sys2[s] - 1]) for s in SYSTEMS])

    result = run("agreement", "--campaign", "likert", "--bootstrap", "0")
    w = result["waves"]
    assert (w["human1"], w["human2"], w["annotators_in_both"]) == ("likert", "likert-2", 0)
    f = w["criteria"]["adequacy"]
    assert f["segment"]["n"] == 48 and f["segment"]["pearson"] == pytest.approx(seg, abs=1e-12)
    assert f["system"]["pearson"] == pytest.approx(sys_r, abs=1e-12)
    assert f["reproducibility"]["cv_star_mean"] == pytest.approx(cv, abs=1e-12)
    assert f["reproducibility"]["shift"] == 1.0
    # The same figures from the second wave's side.
    assert run("agreement", "--campaign", "likert-2", "--bootstrap", "0")["waves"] == w

    corr = run("correlate", "--campaign", "likert", "--metric", "bleu", "--criterion", "adequacy", "--bootstrap", "0")
    ceiling = corr["human_ceiling"]
    assert ceiling["wave"] == "likert-2" and ceiling["role"] == "human2"
    assert ceiling["pearson"] == pytest.approx(seg, abs=1e-12)
    system = run(
        "correlate",
        "--campaign",
        "likert",
        "--metric",
        "bleu",
        "--criterion",
        "adequacy",
        "--level",
        "system",
        "--bootstrap",
        "0",
    )
    assert system["human_ceiling"]["pearson"] == pytest.approx(sys_r, abs=1e-12)
    spa = run("correlate", "--campaign", "likert", "--metric", "bleu", "--criterion", "adequacy", "--method", "spa")
    assert 0 <= spa["human_ceiling"]["spa"] <= 1

    # The meta-evaluation page: the human row and the waves' table.
    user = UserFactory()
    MembershipFactory(
        project=Campaign.objects.get(name="likert").dataset.project, user=user, role=Membership.Role.RESEARCHER
    )
    client.force_login(user)
    response = client.get(reverse("analysis-meta", args=[Campaign.objects.get(name="likert").pk]))
    data = response.context["data"]
    assert data["waves"]["role"] == "human2"
    assert data["waves"]["cells"][0]["value"] == pytest.approx(seg, abs=1e-12)  # segment Pearson column
    body = response.content.decode()
    assert 'id="meta-human-row"' in body and "Human wave 2 (likert-2)" in body and 'id="meta-waves-table"' in body
    assert f"{cv:.2f}" in body
    assert (
        "human2:likert-2"
        in client.get(
            reverse("analysis-meta", args=[Campaign.objects.get(name="likert").pk]), {"format": "csv"}
        ).content.decode()
    )


def test_export_card_reports_the_second_wave_and_both_clusters(waves, tmp_path):
    out = tmp_path / "export"
    call_command("export_dataset", "--campaign", "likert", "--out", str(out), stdout=StringIO(), stderr=StringIO())
    card = (out / "README.md").read_text()
    assert "## Second human wave" in card and "CV*" in card and "`likert-2` (human2)" in card
    assert "rank range (paired)" in card and "paired Wilcoxon signed-rank" in card
    config = json.loads((out / "campaign.json").read_text())
    assert config["waves"]["human2"] == "likert-2"
    assert config["waves"]["criteria"]["adequacy"]["reproducibility"]["cv_star_mean"] is not None


def test_wave_api_and_form(dataset, tmp_path, client):  # noqa: F811
    _likert(tmp_path)
    campaign = Campaign.objects.get(name="likert")
    user = UserFactory()
    MembershipFactory(project=campaign.dataset.project, user=user, role=Membership.Role.RESEARCHER)
    client.force_login(user)
    page = client.get(reverse("campaign-detail", args=[campaign.pk])).content.decode()
    assert 'id="wave-form"' in page
    response = client.post(
        f"/api/campaigns/{campaign.pk}/waves/", {"name": "api wave"}, content_type="application/json"
    )
    assert response.status_code == 201 and response.json()["name"] == "api wave"
    again = client.post(f"/api/campaigns/{campaign.pk}/waves/", {"name": "x"}, content_type="application/json")
    assert again.status_code == 400 and "already has a second wave" in again.content.decode()
    wave = Campaign.objects.get(name="api wave")
    assert "second wave of" in client.get(reverse("campaign-detail", args=[wave.pk])).content.decode()
    annotator = UserFactory()
    MembershipFactory(project=campaign.dataset.project, user=annotator, role=Membership.Role.ANNOTATOR)
    client.force_login(annotator)
    assert (
        client.post(f"/api/campaigns/{campaign.pk}/waves/", {"name": "y"}, content_type="application/json").status_code
        == 404
    )
    assert client.post(reverse("campaign-wave-new", args=[campaign.pk]), {"name": "y"}).status_code == 404


def test_the_unit_page_tells_a_first_wave_annotator_why(waves, client):
    first, second = Campaign.objects.get(name="likert"), Campaign.objects.get(name="likert-2")
    user = UserFactory()
    MembershipFactory(project=first.dataset.project, user=user, role=Membership.Role.ANNOTATOR)
    client.force_login(user)
    started = client.post(reverse("annotate-campaign", args=[first.pk]))
    assert started.status_code == 302 and started["Location"].endswith("/unit/")
    refused = client.post(reverse("annotate-campaign", args=[second.pk]))
    assert refused.status_code == 400
    assert "a second wave needs different annotators" in refused.content.decode()
    api = client.post(f"/api/campaigns/{second.pk}/next-assignment/")
    assert api.status_code == 400 and "second wave needs different annotators" in api.json()["detail"]


def test_a_wave_of_an_mqm_campaign_keeps_its_typology_and_weights(dataset, tmp_path):  # noqa: F811
    typology = [
        {"name": "Meaning", "key": "w", "children": [{"name": "Wrong"}, {"name": "Odd"}]},
        {"name": "Form", "key": "f"},
    ]
    (tmp_path / "typology.json").write_text(json.dumps(typology), encoding="utf-8")
    run(
        "create_campaign",
        "--dataset",
        "toy",
        "--name",
        "mqm",
        "--protocol",
        "mqm",
        "--criteria",
        "mqm",
        "--typology",
        str(tmp_path / "typology.json"),
        "--severities",
        "minor,major,critical",
        "--mqm-weights",
        "Major:5 Minor:1 Critical:10 Minor/Form:0.5",
    )
    run("create_campaign", "--wave-of", "mqm", "--name", "mqm-2")
    first, second = Campaign.objects.get(name="mqm"), Campaign.objects.get(name="mqm-2")
    assert second.wave_of == first and second.options["severities"] == ["minor", "major", "critical"]
    # Not the defaults (WMT's MQM core typology, score_mqm.py's weights): the first wave's own.
    assert [n["name"] for n in second.options["typology"]] == ["Meaning", "Form"] and second.options[
        "typology"
    ] == first.options["typology"]
    assert second.options["mqm_weights"] == "Major:5 Minor:1 Critical:10 Minor/Form:0.5" == first.options["mqm_weights"]
