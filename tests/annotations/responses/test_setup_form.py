"""The campaign set-up page takes the options every protocol offers (issue 41): special answers
comma-separated, the free-text prompts, background questions as JSON, the adaptive criterion;
the campaign page shows them back, escaped."""

import json

import pytest
from django.urls import reverse

from annotations.models import Campaign

pytestmark = pytest.mark.django_db


def _data(dataset, **extra):
    return {
        "dataset": dataset.pk,
        "protocol": "esa",
        "redundancy": 1,
        "units_per_batch": 5,
        "assignment_timeout_minutes": 30,
        "criteria-TOTAL_FORMS": 2,
        "criteria-INITIAL_FORMS": 0,
        "criteria-MIN_NUM_FORMS": 1,
        "criteria-MAX_NUM_FORMS": 20,
        "criteria-0-name": "quality",
        "criteria-0-scale_min": 0,
        "criteria-0-scale_max": 100,
        "criteria-1-name": "fluency",
        "criteria-1-scale_min": 0,
        "criteria-1-scale_max": 100,
        **extra,
    }


def test_the_set_up_page_sets_the_common_options(client, researcher, project, dataset):
    url = reverse("campaign-new", args=[project.pk])
    client.force_login(researcher)
    page = client.get(url).content.decode()
    for name in ("special_answers", "unit_text", "span_text", "background", "adaptive_criterion"):
        assert f'name="{name}"' in page
    questions = [{"name": "native", "label": "Native <language>", "type": "choice", "choices": ["en", "de"]}]
    client.post(
        url,
        _data(
            dataset,
            name="wmt-like",
            special_answers="[missing], [instructions fault]",
            unit_text="Comment",
            span_text="Why?",
            background=json.dumps(questions),
            adaptive_criterion="fluency",
        ),
    )
    campaign = Campaign.objects.get(name="wmt-like")
    assert campaign.options["special_answers"] == ["[missing]", "[instructions fault]"]
    assert (campaign.options["unit_text"], campaign.options["span_text"]) == ("Comment", "Why?")
    assert campaign.options["background"][0]["choices"] == ["en", "de"]
    assert campaign.options["adaptive_criterion"] == "fluency"
    detail = client.get(reverse("campaign-detail", args=[campaign.pk])).content.decode()
    assert "[missing], [instructions fault]" in detail and "Native &lt;language&gt; (choice)" in detail

    bad = client.post(url, _data(dataset, name="bad", adaptive_criterion="style"))
    assert "options.adaptive_criterion: &#x27;style&#x27; is not among the criteria" in bad.content.decode()
    assert not Campaign.objects.filter(name="bad").exists()


def test_the_set_up_page_chooses_the_document_context(client, researcher, project, dataset):
    url = reverse("campaign-new", args=[project.pk])
    client.force_login(researcher)
    page = client.get(url).content.decode()
    assert '<select name="context"' in page and '<option value="window">' in page
    assert 'name="context_size"' in page
    client.post(url, _data(dataset, name="in-context", context="window", context_size=3))
    campaign = Campaign.objects.get(name="in-context")
    assert (campaign.options["context"], campaign.options["context_size"]) == ("window", 3)
    detail = client.get(reverse("campaign-detail", args=[campaign.pk])).content.decode()
    assert "window: up to 3 segment(s) before and after" in detail
    # Left as it is: no context, as before the option existed.
    client.post(url, _data(dataset, name="plain"))
    assert Campaign.objects.get(name="plain").options["context"] == "none"
    refused = client.post(url, _data(dataset, name="bad", context="pages")).content.decode()
    assert "pages" in refused and not Campaign.objects.filter(name="bad").exists()


def test_the_set_up_page_chooses_document_mode(client, researcher, project, dataset):
    """Issue 41: context=document and its doc_max_segments on the set-up page, shown on the campaign page."""
    url = reverse("campaign-new", args=[project.pk])
    client.force_login(researcher)
    page = client.get(url).content.decode()
    assert '<option value="document">' in page and 'name="doc_max_segments"' in page
    client.post(url, _data(dataset, name="whole", context="document", doc_max_segments=4))
    campaign = Campaign.objects.get(name="whole")
    assert (campaign.options["context"], campaign.options["doc_max_segments"]) == ("document", 4)
    detail = client.get(reverse("campaign-detail", args=[campaign.pk])).content.decode()
    assert "document: every segment of a document judged on one screen" in detail
    assert "more than 4 segments split into consecutive parts" in detail
