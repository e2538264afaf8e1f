"""An llm-judge run is a metric like the others in the analysis: `correlate` (system level:
the judge's mean per system against the humans' means, as scipy computes it), the rankings
page and the meta-evaluation page."""

import json
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.urls import reverse
from scipy import stats

from annotations.models import Campaign, Membership
from metrics.models import OutputScore
from tests.annotations.analysis.metric_runs import score_dataset
from tests.annotations.factories import MembershipFactory, UserFactory
from tests.annotations.test_real_data import write_jsonl

pytestmark = pytest.mark.django_db

WORDS = "the cat sat on a mat with some red hats today while dogs ran across green fields".split()
HUMAN = {"alpha": 5, "beta": 4, "gamma": 3, "delta": 2}


def _run(*args) -> dict:
    out = StringIO()
    call_command(*args, "--json", stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())


@pytest.fixture
def campaign(tmp_path) -> Campaign:
    rng = np.random.default_rng(1)
    rows = [
        {
            "item": f"i{i}",
            "source": " ".join(rng.choice(WORDS, 6)),
            "outputs": {s: " ".join(rng.choice(WORDS, 3 + 2 * k)) for k, s in enumerate(HUMAN)},
        }
        for i in range(6)
    ]
    _run("import_dataset", str(write_jsonl(tmp_path / "d.jsonl", rows)), "--dataset", "jdg", "--project", "jdg")
    _run(
        "create_campaign",
        "--dataset",
        "jdg",
        "--name",
        "jdg",
        "--protocol",
        "likert",
        "--criteria",
        "adequacy",
        "--scale",
        "1-5",
    )
    judgements = [
        {
            "item": f"i{i}",
            "system": s,
            "annotator": a,
            "criterion": "adequacy",
            "score": float(h - (a == "b" and i % 2)),
        }
        for i in range(6)
        for s, h in HUMAN.items()
        for a in ("a", "b")
    ]
    _run("import_judgements", str(write_jsonl(tmp_path / "j.jsonl", judgements)), "--campaign", "jdg")
    return Campaign.objects.get(name="jdg")


def test_judge_runs_in_correlate_rankings_and_meta_evaluation(campaign, judge_models, client):
    runs = {
        mode: score_dataset("jdg", "llm-judge", model=judge_models["llama"], device="cpu", mode=mode)
        for mode in ("score", "pairwise")
    }
    for mode, run in runs.items():
        assert run.status == "done", run.error
        stored = OutputScore.objects.filter(run=run).values_list("output__system__name", "score")
        judge = {s: float(np.mean([v for name, v in stored if name == s])) for s in HUMAN}
        result = _run(
            "correlate",
            "--campaign",
            "jdg",
            "--metric",
            str(run.pk),
            "--criterion",
            "adequacy",
            "--level",
            "system",
            "--bootstrap",
            "0",
        )
        systems = sorted(HUMAN)
        expected = stats.pearsonr([HUMAN[s] - 0.25 for s in systems], [judge[s] for s in systems]).statistic
        assert result["pearson"] == pytest.approx(expected, abs=1e-9)
        segment = _run(
            "correlate", "--campaign", "jdg", "--metric", str(run.pk), "--criterion", "adequacy", "--bootstrap", "0"
        )
        assert -1 <= segment["pearson"] <= 1
        if mode == "pairwise":
            # The position probe reads what the judge stored: 6 items x C(4, 2) pairs, each once. The
            # judge's definition (a pair flips when (preference > .5) != (swapped > .5)) gives the
            # same answer from both outputs' entries, so counting every entry counts each pair twice.
            entries = [
                e
                for extra in OutputScore.objects.filter(run=run).values_list("extra", flat=True)
                for e in extra["pairs"]
            ]
            assert len(entries) == 2 * 36
            position = segment["probes"]["position"]
            assert position["pairs"] == 36
            assert position["flipped"] == sum((e["preference"] > 0.5) != (e["swapped"] > 0.5) for e in entries) / 2
            assert position["first_position_wins"] == pytest.approx(
                sum((e["preference"] > 0.5) + (e["swapped"] < 0.5) for e in entries) / (2 * len(entries))
            )
        else:
            assert segment["probes"]["position"] is None
    user = UserFactory()
    MembershipFactory(project=campaign.dataset.project, user=user, role=Membership.Role.RESEARCHER)
    client.force_login(user)
    rankings = client.get(reverse("analysis-rankings", args=[campaign.pk])).content.decode()
    assert "llm-judge" in rankings and runs["pairwise"].signature in rankings
    meta = client.get(reverse("analysis-meta", args=[campaign.pk]))
    assert meta.status_code == 200 and "llm-judge" in meta.content.decode()
