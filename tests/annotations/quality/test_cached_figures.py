"""Quality figures are cached like the analysis figures and follow new judgements at once."""

import pytest
from django.core.cache import cache

from annotations.demo.simulated import campaign_simulate
from annotations.models import Campaign, RatingJudgement
from annotations.quality import selectors
from tests.annotations.export.conftest import run, write_jsonl

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign(tmp_path):
    cache.clear()
    rows = [
        {
            "item": f"i{n}",
            "references": [f"the cat sat on mat {n}"],
            "outputs": {"A": f"the cat sat on the mat {n}", "B": f"a cat is on a mat {n}"},
        }
        for n in range(8)
    ]
    run("import_dataset", str(write_jsonl(tmp_path / "d.jsonl", rows)), "--dataset", "q", "--project", "q")
    run(
        "create_campaign",
        "--dataset",
        "q",
        "--name",
        "q-likert",
        "--protocol",
        "likert",
        "--criteria",
        "fluency",
        "--scale",
        "1-5",
        "--redundancy",
        "2",
    )
    return Campaign.objects.get(name="q-likert")


def test_reloads_answer_from_the_cache_and_a_new_judgement_is_seen(campaign, django_assert_max_num_queries):
    campaign_simulate(campaign, annotators=2, seed=3)
    first = selectors.campaign_quality(campaign=campaign)
    assert {q.figures.judgements for q in first.values()} == {16}
    # Warm: the cache key's few aggregate queries and the decisions, no judgement read.
    with django_assert_max_num_queries(12) as captured:
        again = selectors.campaign_quality(campaign=campaign)
    assert not any(
        'annotations_ratingjudgement" WHERE' in q["sql"] and "MAX(" not in q["sql"] for q in captured.captured_queries
    )
    assert {pk: q.figures.agreement_with_others for pk, q in again.items()} == {
        pk: q.figures.agreement_with_others for pk, q in first.items()
    }

    # A third annotator's judgements: the figures follow at once (new annotator, new counts).
    campaign.redundancy = 3
    campaign.save(update_fields=["redundancy"])
    campaign.units.update(redundancy=3)
    campaign_simulate(campaign, annotators=3, seed=4)  # simulated-3 takes the third slot of every unit
    after = selectors.campaign_quality(campaign=campaign)
    assert len(after) == 3
    assert RatingJudgement.objects.filter(campaign=campaign).count() == 48
    assert sorted(q.figures.judgements for q in after.values()) == [16, 16, 16]
