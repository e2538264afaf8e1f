"""Help links: every page links its guide in the documentation site the workbench serves at
/docs/, and the link answers 200 with that page (the site built by `build_docs`, as `make run`
and `make test` build it). The campaign set-up page links each protocol's guide."""

import re
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotations.export import ExportOptions
from annotations.export.jobs import export_job_create
from annotations.models import Item
from annotations.protocols.registry import PROTOCOLS
from annotations.services.campaigns import campaign_create
from annotations.templatetags.help import HELP_PAGES

pytestmark = pytest.mark.django_db

HELP = re.compile(r'<a href="(?P<href>[^"]*)" rel="help"')


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> Path:
    """The real site, built once with MkDocs --strict by the command `make run` uses."""
    out = tmp_path_factory.mktemp("docs") / "site"
    call_command("build_docs", out=str(out))
    return out


@pytest.fixture
def docs_site(settings, built_site):
    settings.WORKBENCH_DOCS_SITE = built_site
    return built_site


@pytest.fixture
def world(researcher, annotator, dataset):
    campaign = campaign_create(
        dataset=dataset,
        name="Rate me",
        protocol="likert",
        criteria=["fluency"],
        scale_min=1,
        scale_max=5,
        redundancy=1,
        units_per_batch=4,
    )
    job = export_job_create(user=researcher, campaign=campaign, options=ExportOptions())
    return campaign, job


def _researcher_pages(campaign, job) -> list[str]:
    project, dataset = campaign.dataset.project, campaign.dataset
    item = Item.objects.filter(dataset=dataset).first()
    by_campaign = [
        "campaign-detail",
        "campaign-judgements",
        "campaign-quality",
        "campaign-export",
        "analysis-dashboard",
        "analysis-scatter",
        "analysis-rankings",
        "analysis-meta",
        "analysis-disagreement",
        "analysis-errors",
        "analysis-facts",
    ]
    return [reverse(name, args=[campaign.pk]) for name in by_campaign] + [
        reverse("project-list"),
        reverse("project-detail", args=[project.pk]),
        reverse("project-members", args=[project.pk]),
        reverse("campaign-new", args=[project.pk]),
        reverse("dataset-detail", args=[dataset.pk]),
        reverse("dataset-upload"),
        reverse("item-detail", args=[item.pk]),
        reverse("export-job-detail", args=[job.pk]),
        reverse("annotate-home"),
    ]


def _help_link(client, url: str) -> str:
    page = client.get(url)
    assert page.status_code == 200, (url, page.status_code)
    links = HELP.findall(page.content.decode())
    assert len(links) == 1, f"{url}: {len(links)} Help links"
    return links[0]


def _answers_200(client, href: str) -> None:
    assert href.startswith("/docs/"), href
    got = client.get(href.split("#")[0])
    assert got.status_code == 200, (href, got.status_code)
    assert b"<html" in b"".join(got.streaming_content if got.streaming else [got.content])


def test_every_researcher_page_links_its_guide_and_the_guide_answers(client, owner, world, docs_site):
    client.force_login(owner)
    seen = {}
    for url in _researcher_pages(*world):
        seen[url] = _help_link(client, url)
        _answers_200(client, seen[url])
    # the guides differ by page: the quality page does not send people to the home page
    assert seen[reverse("campaign-quality", args=[world[0].pk])] == "/docs/how-to/quality-control/"


def test_the_annotator_pages_and_the_login_page_link_their_guide(client, annotator, world, docs_site):
    _answers_200(client, _help_link(client, reverse("login")))
    client.force_login(annotator)
    for url in [reverse("annotate-home"), reverse("annotate-campaign", args=[world[0].pk])]:
        _answers_200(client, _help_link(client, url))


def test_every_help_page_and_protocol_guide_exists_in_the_site(client, docs_site):
    for path in list(HELP_PAGES.values()) + [p.guide for p in PROTOCOLS.values()]:
        _answers_200(client, "/docs/" + path)


def test_the_set_up_page_links_each_protocol_to_its_guide(client, owner, project, dataset, docs_site):
    client.force_login(owner)
    page = client.get(reverse("campaign-new", args=[project.pk])).content.decode()
    for name, protocol in PROTOCOLS.items():
        match = re.search(rf'<a href="(?P<href>[^"]+)" data-protocol="{name}">', page)
        assert match, f"no guide link for {name}"
        assert match.group("href") == "/docs/" + protocol.guide
        _answers_200(client, match.group("href"))


def test_the_docs_view_serves_only_the_site(client, docs_site, settings, tmp_path):
    assert client.get("/docs/tutorials/first-study").status_code == 302  # to the folder's address
    assert client.get("/docs/no-such-page/").status_code == 404
    assert client.get("/docs/../settings.py").status_code == 404
    assert client.get("/docs/%2e%2e/%2e%2e/manage.py").status_code == 404
    settings.WORKBENCH_DOCS_SITE = tmp_path / "not-built"
    missing = client.get("/docs/")
    assert missing.status_code == 404


def test_the_site_runs_no_inline_script(built_site):
    """The workbench's Content-Security-Policy (`script-src 'self'`) covers /docs/ too: every
    script of the built site must be a file (Material's inline ones are moved out or left out by
    docs/overrides/)."""
    inline = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>")
    offenders = [
        str(page.relative_to(built_site))
        for page in built_site.rglob("*.html")
        if inline.search(page.read_text(encoding="utf-8"))
    ]
    assert offenders == []
