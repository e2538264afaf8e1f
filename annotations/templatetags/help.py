"""Help links: each page's matching page of the documentation site served at /docs/.

`{% help_url %}` gives the address for the current page, looked up by its URL name in HELP_PAGES
(a rule lives once: add a page's entry here, not in its template); `{% protocol_guides %}` lists
every protocol with its guide, read from the protocol classes (`Protocol.guide`), for the
campaign set-up page. A join-link visitor gets no Help link: their session reaches only their
campaign's annotate pages (annotations.studies.middleware), so the link would lead nowhere.
"""

from __future__ import annotations

from django import template
from django.urls import reverse

from annotations.protocols.registry import protocols
from annotations.studies.session import join_binding

register = template.Library()

# URL name (or its prefix before the first "-", tried second) -> docs page, relative to /docs/.
HELP_PAGES = {
    "project-list": "tutorials/first-study/",
    "project-detail": "tutorials/first-study/",
    "project-members": "how-to/accounts/",
    "login-link": "how-to/accounts/",
    "password-set": "how-to/accounts/",
    "login": "how-to/accounts/",
    "dataset-detail": "reference/file-formats/",
    "dataset-upload": "reference/file-formats/",
    "import-job-detail": "reference/file-formats/",
    "item-detail": "reference/metrics/",
    "campaign-new": "tutorials/first-study/#create-the-campaign",
    "campaign-detail": "reference/protocols/",
    "campaign-judgements": "reference/protocols/",
    "campaign-join-link-new": "tutorials/crowd-study/",
    "campaign-wave-new": "tutorials/meta-evaluation/#a-second-wave",
    "campaign-quality": "how-to/quality-control/",
    "campaign-quality-gold": "how-to/quality-control/",
    "campaign-quality-settings": "how-to/quality-control/",
    "campaign-quality-verify": "how-to/quality-control/",
    "campaign-quality-decide": "how-to/quality-control/",
    "campaign-export": "how-to/exports/",
    "export-job-detail": "how-to/exports/",
    "analysis-meta": "tutorials/meta-evaluation/",
    "analysis-scatter": "tutorials/meta-evaluation/",
    "analysis-errors": "tutorials/asr-severity/",
    "analysis-dashboard": "explanation/agreement/",
    "analysis-rankings": "reference/analysis/",
    "analysis-disagreement": "reference/analysis/",
    "analysis-facts": "reference/analysis/",
    "annotate": "reference/protocols/#the-annotators-pages",
    # prefixes: any other page of the kind
    "campaign": "reference/protocols/",
    "analysis": "reference/analysis/",
    "export": "how-to/exports/",
}


def help_path(url_name: str | None) -> str:
    """The docs page (relative to /docs/) for a page's URL name; the home page for the others."""
    if not url_name:
        return ""
    return HELP_PAGES.get(url_name) or HELP_PAGES.get(url_name.split("-")[0], "")


@register.simple_tag(takes_context=True)
def help_url(context) -> str:
    request = context.get("request")
    if request is None or join_binding(request) is not None:
        return ""
    match = getattr(request, "resolver_match", None)
    return reverse("docs") + help_path(match.url_name if match else None)


@register.simple_tag
def protocol_guides() -> list[dict[str, str]]:
    return [{"name": p.name, "label": p.label, "url": reverse("docs") + p.guide} for p in protocols().values()]
