"""Each protocol's part of the page is its own template partial, shortcuts partial and script:
the files exist for every registered protocol, and the work page and the set-up preview load
annotate.js plus that protocol's script only."""

import re
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.templatetags.static import static
from django.urls import reverse

from annotations import protocols
from annotations.services.campaigns import campaign_create
from tests.annotations.factories import campaign_form_data
from tests.protocol_plugin import campaign_settings, every_protocol

SCRIPT_SRC = re.compile(r'<script src="([^"]+)"')


def _scripts(html: str) -> set[str]:
    return set(SCRIPT_SRC.findall(html))


def _expected(protocol) -> set[str]:
    return {static("js/annotate.js"), static(protocol.script)}


def _loads_in_order(html: str, protocol) -> bool:
    """annotate.js, then the modules the protocol's script needs (the span marker), then the script."""
    wanted = [static("js/annotate.js"), *(static(s) for s in protocol.scripts_first), static(protocol.script)]
    found = SCRIPT_SRC.findall(html)
    return all(w in found for w in wanted) and [found.index(w) for w in wanted] == sorted(
        found.index(w) for w in wanted
    )


@pytest.mark.parametrize("name", every_protocol())
def test_every_protocol_has_its_partials_and_a_script_that_registers_it(name, registered):
    from django.template.loader import get_template

    protocol = protocols.get(name)
    assert protocol.template.startswith("annotate/protocols/") and protocol.shortcuts
    get_template(protocol.template)  # TemplateDoesNotExist / TemplateSyntaxError otherwise
    get_template(protocol.shortcuts)
    path = finders.find(protocol.script)
    assert path, f"{protocol.script} is not in static/"
    assert all(finders.find(first) for first in protocol.scripts_first)
    # The module registers under the protocol's own name (or the one whose module it reuses):
    # annotate.js starts the one named in the page's config.
    assert f'window.Annotate.register("{protocol.client_name}",' in Path(path).read_text()


@pytest.mark.parametrize("name", every_protocol())
def test_the_work_page_loads_annotate_js_and_its_protocol_script_only(client, annotator, dataset, name, registered):
    extra = campaign_settings(name)
    campaign = campaign_create(
        dataset=dataset, name=f"C {name}", protocol=name, criteria=["quality"], redundancy=1, seed=3, **extra
    )
    client.force_login(annotator)
    html = client.post(reverse("annotate-campaign", args=[campaign.pk]), follow=True).content.decode()
    protocol = protocols.get(name)
    mine = {s for s in _scripts(html) if "/js/annotate.js" in s or "/js/protocols/" in s}
    assert mine == _expected(protocol) and _loads_in_order(html, protocol)
    assert f'class="unit unit-{name}"' in html and '"protocol": "' + protocol.client_name + '"' in html
    if name == "pairwise":  # output_labels: the pair is A and B, tuples are numbered
        assert "Output A" in html and "Output B" in html
    elif name in ("rankme", "bws", "cesa"):
        assert "Output 1" in html and "Output A" not in html


def test_the_set_up_preview_loads_the_previewed_protocols_script(client, researcher, project, dataset):
    url = reverse("campaign-new", args=[project.pk])
    client.force_login(researcher)
    assert not {s for s in _scripts(client.get(url).content.decode()) if "/js/protocols/" in s}
    systems = [s.pk for s in dataset.systems.all()]
    data = campaign_form_data(dataset, name="Preview ESA", protocol="esa", systems=systems, action="preview")
    html = client.post(url, data).content.decode()
    assert 'id="esa-text"' in html
    mine = {s for s in _scripts(html) if "/js/annotate.js" in s or "/js/protocols/" in s}
    assert mine == _expected(protocols.get("esa")) and _loads_in_order(html, protocols.get("esa"))


def test_the_set_up_preview_of_a_cesa_campaign_shows_its_outputs_side_by_side(client, researcher, project, dataset):
    url = reverse("campaign-new", args=[project.pk])
    client.force_login(researcher)
    systems = [s.pk for s in dataset.systems.all()]
    data = campaign_form_data(
        dataset, name="Preview cESA", protocol="cesa", tuple_size=2, systems=systems, action="preview"
    )
    html = client.post(url, data).content.decode()
    assert html.count("data-span-card") == 2 and 'id="esa-text-1"' in html and 'id="esa-text-2"' in html
    assert "Output 1" in html and "Output 2" in html
    mine = {s for s in _scripts(html) if "/js/annotate.js" in s or "/js/protocols/" in s}
    assert mine == _expected(protocols.get("cesa")) and _loads_in_order(html, protocols.get("cesa"))
    # Six outputs side by side is not cESA: the form says why.
    html = client.post(url, {**data, "tuple_size": 6}).content.decode()
    assert "options.tuple_size: must be between 2 and 5" in html
