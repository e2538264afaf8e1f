"""The post-edit protocol on the set-up page (the fixtures of tests/annotations/views/conftest.py)."""

import pytest

from annotations.models import Campaign
from tests.annotations.factories import campaign_form_data

pytestmark = pytest.mark.django_db


def test_the_set_up_form_previews_and_creates_a_post_edit_campaign(client, researcher, project, dataset):
    """The browser's set-up page: the preview shows the text box and loads post_edit.js; a criterion
    without a scale is allowed (no rating asked)."""
    from django.templatetags.static import static
    from django.urls import reverse

    url = reverse("campaign-new", args=[project.pk])
    client.force_login(researcher)
    data = campaign_form_data(
        dataset,
        {"name": "post-edit", "scale_min": "", "scale_max": ""},
        name="PE set up",
        protocol="post-edit",
        systems=[s.pk for s in dataset.systems.all()],
        action="preview",
    )
    html = client.post(url, data).content.decode()
    assert "data-post-edit=" in html and "<textarea" in html and 'type="range"' not in html
    assert static("js/protocols/post_edit.js") in html
    data.pop("action")
    response = client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    campaign = Campaign.objects.get(name="PE set up")
    assert campaign.protocol == "post-edit" and campaign.criterion_scale("post-edit") == (None, None)


def test_the_judgements_page_of_a_post_edit_campaign_lists_them(client, researcher, dataset):
    from django.urls import reverse

    from annotations.services.campaigns import campaign_create
    from annotations.services.imports import judgements_import

    campaign_create(dataset=dataset, name="PE list", protocol="post-edit", criteria=["post-edit"], redundancy=1)
    judgements_import(
        stream=b'{"item": "item-1", "system": "sysA", "annotator": "w1", "criterion": "post-edit", '
        b'"post_edit": "cat on the mat"}\n',
        campaign_name="PE list",
    )
    client.force_login(researcher)
    campaign = Campaign.objects.get(name="PE list")
    response = client.get(reverse("campaign-judgements", args=[campaign.pk]))
    assert response.status_code == 200
    # HTER of "cat on mat" against "cat on the mat": one insertion over four words, 25.
    assert "25" in response.content.decode()
