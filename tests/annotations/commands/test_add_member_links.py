"""`add_member --create --links`: the same one-time login links as the members page."""

import io
import json
import re

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from annotations.models import LoginLink
from tests.annotations.factories import ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_links_in_json_for_the_accounts_created(settings):
    settings.WORKBENCH_BASE_URL = "https://eval.example.org/"
    ProjectFactory(name="p")
    UserFactory(username="existing")
    out = io.StringIO()
    call_command(
        "add_member",
        "--project",
        "p",
        "--role",
        "annotator",
        "--create",
        "--links",
        "--json",
        "existing",
        "ann1",
        "ann2",
        stdout=out,
        stderr=io.StringIO(),
    )
    summary = json.loads(out.getvalue())
    assert {k: v for k, v in summary.items() if k != "links"} == {"project": "p", "members": 3, "created": 2}
    assert set(summary["links"]) == {"ann1", "ann2"}
    for url in summary["links"].values():
        assert re.fullmatch(r"https://eval\.example\.org/login/[A-Za-z0-9_-]{40,}/", url)
    # A printed link logs its account in, once.
    path = summary["links"]["ann1"].removeprefix("https://eval.example.org")
    browser = Client()
    assert browser.post(path).status_code == 302
    assert browser.get("/annotate/").wsgi_request.user.username == "ann1"
    assert Client().post(path).status_code == 404


def test_links_in_text_and_links_need_create():
    ProjectFactory(name="p")
    out = io.StringIO()
    call_command("add_member", "--project", "p", "--role", "annotator", "--create", "--links", "ann", stdout=out)
    text = out.getvalue()
    assert "1 member(s) of p are now annotator (1 account(s) created)" in text
    assert re.search(r"^ann\thttp://127\.0\.0\.1:8000/login/[A-Za-z0-9_-]{40,}/$", text, re.M)
    with pytest.raises(CommandError, match="add --create"):
        call_command("add_member", "--project", "p", "--role", "annotator", "--links", "ann", stdout=io.StringIO())
    assert LoginLink.objects.count() == 1


def test_without_links_the_json_is_unchanged():
    ProjectFactory(name="p")
    out = io.StringIO()
    call_command("add_member", "--project", "p", "--role", "annotator", "--create", "--json", "ann", stdout=out)
    assert json.loads(out.getvalue()) == {"project": "p", "members": 1, "created": 1}
    assert not LoginLink.objects.exists()
