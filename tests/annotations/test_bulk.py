import pytest
from django.db import IntegrityError, transaction

from annotations.bulk import rows_insert
from annotations.models import Output, RatingJudgement
from annotations.services.imports import ImportFailed, judgements as judgements_importer, judgements_import
from tests.annotations.factories import AnnotatorFactory, CampaignFactory, ItemFactory, OutputFactory, SystemFactory


@pytest.mark.django_db
def test_rows_insert_copies_texts_with_copy_escapes_and_stamps():
    item = ItemFactory()
    systems = [SystemFactory(dataset=item.dataset) for _ in range(3)]
    texts = ["plain", "tab\tand\nnewline \\N", "ünïcode ✓"]
    assert (
        rows_insert(Output, ["item_id", "system_id", "text"], ((item.id, s.id, t) for s, t in zip(systems, texts))) == 3
    )
    stored = Output.objects.filter(item=item).order_by("system_id")
    assert [o.text for o in stored] == texts
    assert all(o.created_at is not None and o.updated_at is not None for o in stored)


@pytest.mark.django_db
def test_rows_insert_raises_djangos_integrity_error_and_db_checks_apply():
    output = OutputFactory()
    campaign = CampaignFactory(dataset=output.item.dataset)
    annotator = AnnotatorFactory(project=campaign.dataset.project)
    fields = [
        "campaign_id",
        "annotator_id",
        "item_id",
        "output_id",
        "criterion",
        "score",
        "scale_min",
        "scale_max",
        "shown_order",
        "origin",
    ]
    row = (campaign.id, annotator.id, output.item_id, output.id, "fluency", 3, 1, 5, [output.id], "import")
    with pytest.raises(IntegrityError), transaction.atomic():
        rows_insert(RatingJudgement, fields, [row, row])
    with pytest.raises(IntegrityError, match="rating_score_below_max"), transaction.atomic():
        rows_insert(RatingJudgement, fields, [(*row[:5], 7, *row[6:])])
    assert RatingJudgement.objects.count() == 0


@pytest.mark.django_db
def test_judgement_stored_concurrently_during_an_import_fails_it_cleanly(monkeypatch):
    item = ItemFactory()
    output = OutputFactory(item=item, system=SystemFactory(dataset=item.dataset, name="A"))
    campaign = CampaignFactory(dataset=output.item.dataset, name="c")
    line = (
        f'{{"item": "{output.item.external_id}", "system": "A", "annotator": "w", "criterion": "fluency", '
        '"score": 2}\n'
    ).encode()
    judgements_import(stream=line, campaign_name="c")
    # As if the judgement were submitted after the importer read the stored ones.
    monkeypatch.setattr(judgements_importer, "stored_judgements", lambda *args: {})
    with pytest.raises(ImportFailed, match="submitted concurrently"):
        judgements_import(stream=line, campaign_name="c")
    assert RatingJudgement.objects.filter(campaign=campaign).count() == 1
