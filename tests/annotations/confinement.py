"""Crawl every URL pattern of the URL conf with one client: what does each answer?

Reusable by any kind of annotator session (an account logged in, a token, a
join-link visitor's session): `crawl(client, ids)` walks
`get_resolver().url_patterns` recursively, fills each converter (`<int:pk>`,
`<int:member_pk>`, `<path:object_id>`...) with the id of a real object of the
project chosen by the route's own words (`datasets/<int:pk>/` gets the
dataset's id, `annotate/assignments/<int:pk>/` the crawler's assignment...),
GETs it and returns `{route: (url, response)}`. `expected_status` says what an
annotator may get back for each route name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.urls import URLPattern, URLResolver, get_resolver

CONVERTER = re.compile(r"<(?:(?P<conv>\w+):)?(?P<name>\w+)>")

# What an annotator reaches: their home, their campaigns' unit pages and the unit API.
ANNOTATOR_200 = {
    "annotate-home",
    "annotate-campaign",
    "annotate-unit",
    "api-campaign-list",
    "api-campaign-detail",
    "api-assignment-list",
    "api-campaign-my-completion-code",
}
# The unit API's writes and the page's posts: GET is not allowed, for anyone.
ANNOTATOR_POST_ONLY = {
    "api-campaign-next-assignment",
    "api-assignment-submit",
    "api-assignment-release",
    "api-assignment-draft",
    "annotate-submit",
    "annotate-draft",
    "annotate-release",
    "api-token",
    "annotate-revise-submit",
    "api-assignment-revise",
}
# The same for everyone, signed in or not: sign-in pages, API documentation, the icon.
PUBLIC = {
    "favicon",
    "schema",
    "api-docs",
    "api-redoc",
    "api-redoc-bundle",
    "login",
    "logout",
    "password_change",
    "password_change_done",
    "password-set",
}
# The documentation site (workbench.docs): the same for everyone, 404 where a page (or the site,
# before `make docs-site` builds it) does not exist.
DOCS = {"docs", "docs-page"}


@dataclass
class Ids:
    """Ids of real objects of the project, to fill the routes with."""

    project: int
    dataset: int
    item: int
    campaign: int
    assignment: int  # the crawler's own (pending) assignment
    membership: int
    import_job: int
    export_job: int
    metric_run: int


def _walk(patterns, prefix="", namespace=""):
    for pattern in patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            ns = pattern.namespace or namespace
            yield from _walk(pattern.url_patterns, route, ns)
        elif isinstance(pattern, URLPattern):
            yield route, pattern.name, namespace


def _fill(route: str, ids: Ids) -> str:
    """The route with each converter replaced by the id of the object the route's words name."""
    text = route.lstrip("^").rstrip("$").replace("\\Z", "").replace("\\/", "/")

    def value(match: re.Match) -> str:
        before = text[: match.start()]
        name = match.group("name")
        if name == "member_pk":
            return str(ids.membership)
        if match.group("conv") not in (None, "int"):
            return "1"  # admin's object ids, reset tokens...: any value
        words = [w for w in before.split("/") if w and not w.startswith("<")]
        last = words[-1] if words else ""
        return str(
            {
                "projects": ids.project,
                "datasets": ids.dataset,
                "items": ids.item,
                "campaigns": ids.campaign,
                "assignments": ids.assignment,
                "imports": ids.import_job,
                "exports": ids.export_job,
                "metric-runs": ids.metric_run,
            }.get(last, 1)
        )

    path = CONVERTER.sub(value, text)
    path = re.sub(r"\(\?P<\w+>[^)]*\)", "1", path)  # admin's regex routes
    return "/" + path.lstrip("^")


def routes(ids: Ids) -> list[tuple[str, str | None, str]]:
    """(route, name, url) for every pattern of the URL conf."""
    return [(route, name, _fill(route, ids)) for route, name, _ in _walk(get_resolver().url_patterns)]


def crawl(client, ids: Ids) -> dict[str, tuple[str, str | None, object]]:
    """GET every route with `client`: {route: (url, name, response)}."""
    return {route: (url, name, client.get(url)) for route, name, url in routes(ids)}


def is_login_redirect(response) -> bool:
    location = response.get("Location", "") if response.status_code in (301, 302) else ""
    return "/login/" in location


def verdict(name: str | None, route: str, response) -> str | None:
    """None if an annotator may get `response` for this route, else what is wrong."""
    status = response.status_code
    if route in ("admin/login/", "admin/logout/"):  # the admin's sign-in: the same for everyone
        return None if status in (200, 302, 405) else f"admin sign-in answered {status}"
    if route.startswith("admin/"):
        # Django's admin: no annotator is `is_staff`, so every page sends them to the admin's login.
        return None if is_login_redirect(response) or status == 404 else f"admin answered {status}"
    if name in PUBLIC:
        return None if status in (200, 302, 405) else f"public page answered {status}"
    if name in DOCS:
        return None if status in (200, 404) else f"documentation answered {status}"
    if name in ANNOTATOR_200:
        return None if status == 200 else f"expected 200, got {status}"
    if name in ANNOTATOR_POST_ONLY:
        return None if status == 405 else f"expected 405 (POST only), got {status}"
    if name == "annotate-background":  # its questions (200), or none to ask: back to the landing page
        return (
            None
            if status == 200 or (status == 302 and "/annotate/campaigns/" in response["Location"])
            else f"got {status}"
        )
    if name == "annotate-completion-code":  # no code yet: back to the unit page
        return (
            None
            if status == 200 or (status == 302 and "/annotate/campaigns/" in response["Location"])
            else f"got {status}"
        )
    if name == "annotate-revise":  # their own unit in progress: reopening it is its unit page
        return None if status == 302 and response["Location"].endswith("/unit/") else f"got {status}"
    if name == "project-list":  # the project list sends an annotator to their home
        return None if status == 302 and response["Location"].endswith("/annotate/") else f"got {status}"
    if name == "campaign-detail":  # the researchers' campaign page sends an annotator to the unit page
        return None if status == 302 and "/annotate/campaigns/" in response["Location"] else f"got {status}"
    # Everything else is for owners and researchers: as if it did not exist (or a POST-only form).
    return None if status in (404, 405) else f"expected 404, got {status}"
