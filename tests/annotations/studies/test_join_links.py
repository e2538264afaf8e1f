"""Study links without a browser: joining, identity, cap, expiry, revocation, rate limit,
confinement of the join session to its campaign, the command and the API."""

import io
import json
import re
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone
from rest_framework.test import APIClient

from annotations.models import Annotator, Assignment, Campaign
from annotations.models.studies import JoinLink, JoinParticipant
from annotations.services.campaigns import campaign_create
from annotations.studies.selectors import completion_redirect_url
from annotations.studies.services import join_link_create, join_link_revoke

pytestmark = pytest.mark.django_db

PID = "5f0c1e2d3b4a596877665544"
PROLIFIC = {"PROLIFIC_PID": PID, "STUDY_ID": "64a0b1c2d3e4f5a6b7c8d9e0", "SESSION_ID": "sess-1"}


@pytest.fixture
def campaign(dataset):
    return campaign_create(
        dataset=dataset,
        name="Crowd",
        protocol="likert",
        criteria=["fluency"],
        scale_min=1,
        scale_max=5,
        redundancy=2,
        units_per_batch=2,
        instructions="Rate **fluency**.",
    )


@pytest.fixture
def other_campaign(dataset):
    return campaign_create(
        dataset=dataset, name="Other", protocol="likert", criteria=["fluency"], scale_min=1, scale_max=5, redundancy=1
    )


@pytest.fixture
def link(campaign):
    return join_link_create(campaign=campaign, completion_url="https://app.prolific.com/submissions/complete?cc={code}")


def _join_url(link, **params) -> str:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return reverse("join", args=[link.token]) + (f"?{query}" if query else "")


def _start(client, link, params=PROLIFIC):
    """The join page's Start button: a POST carrying the platform ids."""
    return client.post(reverse("join", args=[link.token]), params)


def _submit_current(client, campaign, score=4):
    html = client.get(reverse("annotate-unit", args=[campaign.pk])).content.decode()
    config = json.loads(
        re.search(r'<script id="unit-config" type="application/json">(.*?)</script>', html, re.S).group(1)
    )
    return client.post(
        config["submit_url"],
        json.dumps(
            {
                "judgements": [{"criterion": "fluency", "output": config["outputs"][0]["id"], "score": score}],
                "shown_order": config["shown_order"],
            }
        ),
        content_type="application/json",
    )


def test_get_shows_the_study_and_post_gives_an_anonymous_identity(client, campaign, link):
    page = client.get(_join_url(link, **PROLIFIC))
    html = page.content.decode()
    assert page.status_code == 200 and "Crowd" in html and "<strong>fluency</strong>" in html
    assert f'value="{PID}"' in html and 'id="start"' in html
    assert not Annotator.objects.filter(project=campaign.project).exists()  # the GET took nothing
    started = _start(client, link)
    assert started.status_code == 302 and started["Location"] == reverse("annotate-unit", args=[campaign.pk])
    participant = JoinParticipant.objects.get()
    annotator = participant.annotator
    assert annotator.namespace == Annotator.Namespace.IMPORT and annotator.user_id is None
    assert PID not in annotator.name and annotator.name.startswith("prolific-")
    assert (participant.platform, participant.platform_id, participant.study_id, participant.session_id) == (
        "prolific",
        PID,
        PROLIFIC["STUDY_ID"],
        "sess-1",
    )
    assert Assignment.objects.get(annotator=annotator, status="pending").campaign == campaign
    unit = client.get(started["Location"])
    assert unit.status_code == 200 and 'id="unit-config"' in unit.content.decode()


def test_the_same_pid_in_another_browser_resumes_identity_and_pending_unit(client, campaign, link):
    from django.test import Client

    _start(client, link)
    first = Assignment.objects.get(status="pending")
    other = Client()
    assert "Continue" in other.get(_join_url(link, **PROLIFIC)).content.decode()
    other.post(reverse("join", args=[link.token]), {**PROLIFIC, "SESSION_ID": "sess-2"})
    assert Annotator.objects.filter(project=campaign.project).count() == 1
    assert list(Assignment.objects.filter(status="pending")) == [first]
    assert JoinParticipant.objects.get().session_id == "sess-2"  # the new session is noted
    html = other.get(reverse("annotate-unit", args=[campaign.pk])).content.decode()
    config = json.loads(
        re.search(r'<script id="unit-config" type="application/json">(.*?)</script>', html, re.S).group(1)
    )
    assert config["assignment"] == first.pk


def test_missing_or_malformed_participant_id(client, link):
    asked = client.get(_join_url(link))
    assert asked.status_code == 200 and 'name="annotator"' in asked.content.decode()
    assert client.post(reverse("join", args=[link.token]), {}).status_code == 400
    bad = client.get(_join_url(link, PROLIFIC_PID="<script>x</script>"))
    assert bad.status_code == 400 and "PROLIFIC_PID must be" in bad.content.decode()
    assert "<script>x" not in bad.content.decode()
    assert not JoinParticipant.objects.exists()
    generic = client.post(reverse("join", args=[link.token]), {"annotator": "volunteer-7"})
    assert generic.status_code == 302 and JoinParticipant.objects.get().platform == "generic"


def test_unknown_revoked_and_expired_links_answer_404(client, campaign, link):
    assert client.get(reverse("join", args=["no-such-token"]) + f"?PROLIFIC_PID={PID}").status_code == 404
    _start(client, link)
    assert client.get(reverse("annotate-unit", args=[campaign.pk])).status_code == 200
    join_link_revoke(link=link)
    assert client.get(_join_url(link, **PROLIFIC)).status_code == 404
    assert _start(client, link).status_code == 404
    # The bound session ends with its link.
    assert client.get(reverse("annotate-unit", args=[campaign.pk])).status_code == 404
    expired = join_link_create(campaign=campaign)
    JoinLink.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert client.get(_join_url(expired, **PROLIFIC)).status_code == 404


def test_a_participant_of_a_revoked_link_continues_through_another_live_link(client, campaign, link):
    # Issue 46: the README says any live link of the study continues; it answered 404.
    from django.test import Client

    _start(client, link)
    first = Assignment.objects.get(status="pending")
    join_link_revoke(link=link)
    assert client.get(reverse("annotate-unit", args=[campaign.pk])).status_code == 404
    live = join_link_create(campaign=campaign)
    for browser in (client, Client()):
        assert _start(browser, live).status_code == 302
        page = browser.get(reverse("annotate-unit", args=[campaign.pk]))
        assert page.status_code == 200, page.status_code
        config = json.loads(
            re.search(
                r'<script id="unit-config" type="application/json">(.*?)</script>', page.content.decode(), re.S
            ).group(1)
        )
        assert config["assignment"] == first.pk  # the same participant, the same pending unit
    assert JoinParticipant.objects.count() == 1 and _submit_current(client, campaign).status_code == 201
    # Revoking the live link too ends the sessions that came through it.
    join_link_revoke(link=live)
    assert client.get(reverse("annotate-unit", args=[campaign.pk])).status_code == 404


def test_without_the_guard_one_browser_can_be_several_participants(client, campaign, link):
    # The documented default (docs: crowd studies): ids are taken as given.
    assert _start(client, link).status_code == 302
    assert _start(client, link, {"PROLIFIC_PID": "a" * 24}).status_code == 302
    assert _start(client, link, {"workerId": PID}).status_code == 302
    assert JoinParticipant.objects.count() == 3


def test_one_per_browser_refuses_a_second_id_in_the_same_browser(client, campaign):
    from django.test import Client

    link = join_link_create(campaign=campaign, one_per_browser=True)
    assert _start(client, link).status_code == 302
    for params in ({"PROLIFIC_PID": "a" * 24}, {"annotator": "someone-else"}):
        refused = _start(client, link, params)
        assert refused.status_code == 403 and "already takes part" in refused.content.decode()
        assert client.get(_join_url(link, **params)).status_code == 403
    # The same id again in this browser continues; another browser with another id is welcome.
    assert _start(client, link).status_code == 302
    assert _start(Client(), link, {"PROLIFIC_PID": "b" * 24}).status_code == 302
    assert JoinParticipant.objects.count() == 2


@pytest.mark.parametrize("params", [{"workerId": PID}, {"annotator": PID}])
def test_one_per_browser_is_one_participant_per_id_whichever_parameter(client, campaign, params):
    from django.test import Client

    link = join_link_create(campaign=campaign, one_per_browser=True)
    assert _start(client, link).status_code == 302  # as PROLIFIC_PID
    assert _start(Client(), link, params).status_code == 302  # another browser, the id elsewhere
    assert JoinParticipant.objects.count() == 1


def test_one_per_browser_through_the_api_and_the_command(campaign, researcher):
    api = APIClient()
    api.force_authenticate(researcher)
    body = api.post(f"/api/campaigns/{campaign.pk}/join-links/", {"one_per_browser": True}, format="json").json()
    assert body["one_per_browser"] is True and JoinLink.objects.get(pk=body["id"]).one_per_browser
    out = io.StringIO()
    call_command("create_join_link", "--campaign", campaign.name, "--one-per-browser", "--json", stdout=out)
    assert JoinLink.objects.get(token=json.loads(out.getvalue())["token"]).one_per_browser


def test_cap_refuses_new_participants_and_lets_returning_ones_in(client, campaign):
    from django.test import Client

    link = join_link_create(campaign=campaign, max_annotators=1)
    assert _start(client, link).status_code == 302
    newcomer = Client()
    full = newcomer.get(_join_url(link, PROLIFIC_PID="aaaaaaaaaaaaaaaaaaaaaaaa"))
    assert full.status_code == 403 and "This study is full" in full.content.decode()
    assert _start(newcomer, link, {"PROLIFIC_PID": "aaaaaaaaaaaaaaaaaaaaaaaa"}).status_code == 403
    assert JoinParticipant.objects.count() == 1
    assert _start(Client(), link).status_code == 302  # the same PID again


def test_mturk_preview_takes_nothing_and_completion_posts_to_mturk(client, campaign):
    link = join_link_create(campaign=campaign, completion_url="https://example.org/unused")
    preview = client.get(_join_url(link, assignmentId="ASSIGNMENT_ID_NOT_AVAILABLE", hitId="H1"))
    assert preview.status_code == 200 and "preview" in preview.content.decode().lower()
    assert 'id="start"' not in preview.content.decode() and not Annotator.objects.exists()
    bad = client.get(
        _join_url(link, workerId="W1", assignmentId="A1", hitId="H1", turkSubmitTo="https://evil.example.com")
    )
    assert bad.status_code == 400
    params = {
        "workerId": "AWORKER1",
        "assignmentId": "ASSIGN1",
        "hitId": "HIT1",
        "turkSubmitTo": "https://workersandbox.mturk.com",
    }
    assert _start(client, link, params).status_code == 302
    participant = JoinParticipant.objects.get()
    assert (participant.platform, participant.platform_id, participant.session_id) == ("mturk", "AWORKER1", "ASSIGN1")
    for _ in range(2):
        answer = _submit_current(client, campaign)
        assert answer.status_code == 201, answer.content
        if answer.json()["next"] != reverse("join-done"):
            assert answer.json()["unit"]  # the next unit, handed out by this answer (the page draws it)
    assert answer.json()["next"] == reverse("join-done")
    done = client.get(reverse("join-done")).content.decode()
    assert 'action="https://workersandbox.mturk.com/mturk/externalSubmit"' in done
    assert 'name="assignmentId" value="ASSIGN1"' in done


def test_prolific_completion_page_follows_the_link_with_the_code(client, campaign, link):
    from annotations.models.quality import CompletionCode

    _start(client, link)
    first = _submit_current(client, campaign)
    assert first.json()["next"] == reverse("annotate-unit", args=[campaign.pk]) and first.json()["unit"]
    assert _submit_current(client, campaign).json()["next"] == reverse("join-done")
    code = CompletionCode.objects.get()
    assert code.passed
    # A page of our own that follows the completion link (studies.js), not a redirect: a redirect that
    # ends a form POST's chain would be blocked by CSP form-action 'self' (tests/browser/test_join_completion.py).
    done = client.get(reverse("join-done"))
    html = done.content.decode()
    assert done.status_code == 200 and "form-action 'self'" in done["Content-Security-Policy"]
    assert f'href="https://app.prolific.com/submissions/complete?cc={code.code}" data-autofollow' in html
    assert f">{code.code}</output>" in html and "js/studies.js" in html
    # The batch is over: no more units for this visitor (landing and start both send them back).
    assert client.post(reverse("annotate-campaign", args=[campaign.pk]))["Location"] == reverse("join-done")
    assert Assignment.objects.filter(annotator=code.annotator).count() == 2


@pytest.mark.parametrize(
    "url,code,expected",
    [
        (
            "https://app.prolific.com/submissions/complete?cc={code}",
            "ABCDE-12345",
            "https://app.prolific.com/submissions/complete?cc=ABCDE-12345",
        ),
        (
            "https://app.prolific.com/submissions/complete",
            "ABCDE-12345",
            "https://app.prolific.com/submissions/complete?cc=ABCDE-12345",
        ),
        ("https://example.org/done?study=7#end", "X", "https://example.org/done?study=7&cc=X#end"),
        ("https://example.org/{code}/ok", "A B", "https://example.org/A%20B/ok"),
    ],
)
def test_completion_url(url, code, expected):
    assert completion_redirect_url(link=JoinLink(completion_url=url), code=code) == expected


def test_join_requests_are_rate_limited_per_address(client, link, settings, fresh_throttles):
    settings.WORKBENCH_JOIN_RATE = 3
    url = _join_url(link, **PROLIFIC)
    assert [client.get(url).status_code for _ in range(3)] == [200, 200, 200]
    refused = client.get(url)
    assert refused.status_code == 429 and "Too many requests" in refused.content.decode()
    assert client.get(url, REMOTE_ADDR="10.1.2.3").status_code == 200  # another address has its own count


# --- confinement --------------------------------------------------------------------------


def _patterns(resolver: URLResolver, prefix: str = ""):
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            yield from _patterns(entry, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern), entry.name


def _concrete(route: str, value: int) -> str | None:
    """A path for a route: every <int:...> / <str:...> / <slug:...> argument set to `value`."""
    if route.startswith("^") or "(?P" in route:
        route = re.sub(r"\(\?P<[^>]+>[^)]*\)", str(value), route.lstrip("^").rstrip("$"))
        route = route.replace("\\", "")
    path = re.sub(r"<(?:[a-z]+:)?[a-z_]+>", str(value), route)
    return None if any(ch in path for ch in "^$()[]*+?") else "/" + path


def test_a_join_session_reaches_only_its_campaigns_annotate_pages(client, campaign, other_campaign, link):
    _start(client, link)
    assignment = Assignment.objects.get(status="pending")
    # The unit page links nowhere the visitor cannot go: no project list behind the brand.
    unit_page = client.get(reverse("annotate-unit", args=[campaign.pk])).content.decode()
    assert f'href="{reverse("project-list")}"' not in unit_page and "NLG Workbench" in unit_page
    ok = set()
    seen = 0
    for route, name in _patterns(get_resolver()):
        for value in {campaign.pk, other_campaign.pk, assignment.pk, 1}:
            path = _concrete(route, value)
            if path is None:
                continue
            seen += 1
            response = client.get(path)
            assert response.status_code in (200, 302, 404, 405), (path, response.status_code)
            if response.status_code == 302:
                assert response["Location"] in (
                    reverse("annotate-campaign", args=[campaign.pk]),
                    reverse("join-done"),
                    reverse("annotate-unit", args=[campaign.pk]),
                ), path
            if response.status_code == 200:
                ok.add(path)
    assert seen > 80
    assert ok == {reverse("annotate-campaign", args=[campaign.pk]), reverse("annotate-unit", args=[campaign.pk])}
    # The API and other campaigns, even with the join session's own assignment.
    assert client.post(f"/api/campaigns/{campaign.pk}/next-assignment/").status_code == 404
    assert client.post(reverse("annotate-campaign", args=[other_campaign.pk])).status_code == 404
    assert client.get(f"/api/assignments/?campaign={campaign.pk}").status_code == 404


def test_logged_in_annotators_keep_working_and_never_get_a_join_identity(client, annotator, campaign):
    client.force_login(annotator)
    assert client.get(reverse("annotate-campaign", args=[campaign.pk])).status_code == 200
    assert not Assignment.objects.exists()  # the landing page handed out nothing
    assert client.post(reverse("annotate-campaign", args=[campaign.pk]))["Location"] == reverse(
        "annotate-unit", args=[campaign.pk]
    )
    assert Assignment.objects.get().annotator.user == annotator
    assert client.get(reverse("project-list"))["Location"] == reverse("annotate-home")  # annotators go home
    assert client.get(reverse("annotate-home")).status_code == 200


def test_someone_elses_assignment_is_404_to_a_join_session(client, annotator, campaign, link):
    from django.test import Client

    member = Client()
    member.force_login(annotator)
    member.post(reverse("annotate-campaign", args=[campaign.pk]))
    theirs = Assignment.objects.get()
    _start(client, link)
    for name in ("annotate-submit", "annotate-draft", "annotate-release"):
        assert client.post(reverse(name, args=[theirs.pk]), "{}", content_type="application/json").status_code == 404


# --- command and API ------------------------------------------------------------------------


def test_create_join_link_command_json(campaign, settings):
    settings.WORKBENCH_BASE_URL = "https://eval.example.org"
    out = io.StringIO()
    call_command(
        "create_join_link",
        "--campaign",
        "Crowd",
        "--completion-url",
        "https://app.prolific.com/submissions/complete?cc={code}",
        "--max-annotators",
        "30",
        "--expires",
        "2099-01-31T12:00:00Z",
        "--json",
        stdout=out,
    )
    printed = json.loads(out.getvalue())
    link = JoinLink.objects.get()
    assert printed["token"] == link.token and len(link.token) >= 32
    assert printed["url"] == f"https://eval.example.org/join/{link.token}/"
    assert link.max_annotators == 30 and link.expires_at.year == 2099
    assert campaign.quality_settings.completion_codes  # a completion URL turns the codes on
    from django.core.management.base import CommandError

    for bad in (
        ["--campaign", "nope"],
        ["--campaign", "Crowd", "--expires", "tomorrow"],
        ["--campaign", "Crowd", "--completion-url", "javascript:alert(1)"],
        ["--campaign", "Crowd", "--max-annotators", "0"],
    ):
        with pytest.raises(CommandError):
            call_command("create_join_link", *bad, stdout=io.StringIO())


def test_api_is_for_staff(campaign, researcher, annotator, outsider):
    url = f"/api/campaigns/{campaign.pk}/join-links/"
    api = APIClient()
    api.force_authenticate(researcher)
    created = api.post(url, {"completion_url": "https://example.org/done", "max_annotators": 5}, format="json")
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["url"].endswith(f"/join/{body['token']}/") and body["state"] == "active"
    assert api.post(url, {"completion_url": "ftp://x"}, format="json").status_code == 400
    assert [row["id"] for row in api.get(url).json()] == [body["id"]]
    for user, code in ((annotator, 404), (outsider, 404)):  # annotators: as if it did not exist
        other = APIClient()
        other.force_authenticate(user)
        assert other.get(url).status_code == code
        assert other.post(url, {}, format="json").status_code == code
        assert other.delete(f"/api/join-links/{body['id']}/").status_code == code
    assert APIClient().get(url).status_code in (401, 403)
    revoked = api.delete(f"/api/join-links/{body['id']}/")
    assert revoked.status_code == 200 and revoked.json()["state"] == "revoked"
    assert api.post(f"/api/join-links/{body['id']}/").json()["state"] == "revoked"


def test_campaign_page_creates_lists_and_revokes_links(client, campaign, researcher, annotator):
    client.force_login(researcher)
    client.post(
        reverse("campaign-join-link-new", args=[campaign.pk]),
        {"completion_url": "https://app.prolific.com/submissions/complete?cc={code}", "max_annotators": "3"},
    )
    link = JoinLink.objects.get()
    html = client.get(reverse("campaign-detail", args=[campaign.pk])).content.decode()
    assert "Study links" in html and f"/join/{link.token}/" in html
    client.post(reverse("join-link-revoke", args=[link.pk]))
    link.refresh_from_db()
    assert link.revoked_at is not None
    client.force_login(annotator)
    assert client.post(reverse("campaign-join-link-new", args=[campaign.pk]), {}).status_code == 404
    assert JoinLink.objects.count() == 1 and Campaign.objects.count() == 1


def test_study_wide_pass_and_fail_codes_replace_the_annotators_own(client, campaign):
    from annotations.models.quality import CompletionCode
    from annotations.studies.selectors import completion_value

    link = join_link_create(
        campaign=campaign,
        completion_url="https://app.prolific.com/submissions/complete",
        pass_code="C1PASS7",
        fail_code="C1FAIL7",
    )
    _start(client, link)
    for _ in range(2):
        answer = _submit_current(client, campaign)
        if answer.json().get("next_method") == "POST":
            client.post(answer.json()["next"])
    assert CompletionCode.objects.get().passed
    done = client.get(reverse("join-done"))
    # A page that follows its link (studies.js), not a redirect: see test_join_completion.py (browser).
    assert done.status_code == 200 and "data-autofollow" in done.content.decode()
    assert 'href="https://app.prolific.com/submissions/complete?cc=C1PASS7"' in done.content.decode()
    assert ">C1PASS7</output>" in done.content.decode()
    assert completion_value(link=link, code=CompletionCode(code="AAAAA-BBBBB", passed=False)) == "C1FAIL7"
    no_fail = JoinLink(pass_code="C1PASS7")
    assert completion_value(link=no_fail, code=CompletionCode(code="AAAAA-BBBBB", passed=False)) == "AAAAA-BBBBB"
    with pytest.raises(Exception, match="completion code"):
        join_link_create(campaign=campaign, pass_code="no spaces allowed")


def test_mturk_frame_opens_the_study_in_a_tab_and_completion_may_post_to_mturk(client, campaign):
    link = join_link_create(campaign=campaign, completion_url="https://example.org/unused")
    params = dict(workerId="AWORKER2", assignmentId="ASSIGN2", hitId="HIT2", turkSubmitTo="https://www.mturk.com")
    framed = client.get(_join_url(link, **params), HTTP_SEC_FETCH_DEST="iframe")
    html = framed.content.decode()
    assert 'id="open-tab"' in html and 'target="_blank"' in html and 'id="start"' not in html
    assert "frame-ancestors https://www.mturk.com https://workersandbox.mturk.com" in framed["Content-Security-Policy"]
    assert "X-Frame-Options" not in framed
    # Other pages still refuse every frame.
    client.post(reverse("join", args=[link.token]), params)
    unit = client.get(reverse("annotate-unit", args=[campaign.pk]))
    assert "frame-ancestors 'none'" in unit["Content-Security-Policy"] and unit["X-Frame-Options"] == "DENY"
    assert "https://www.mturk.com" in client.get(reverse("join-done"))["Content-Security-Policy"]


def test_crowd_workers_see_the_public_title_not_the_campaign_name(client, dataset, owner):
    """Issue 38: the internal name ("Crowd-sysA-vs-sysB") was the study's title on the join and annotate
    pages. A public title (form, API, `create_campaign --public-title`) is what annotators see."""
    call_command(
        "create_campaign",
        "--dataset",
        dataset.name,
        "--name",
        "Crowd-sysA-vs-sysB",
        "--protocol",
        "likert",
        "--criteria",
        "fluency",
        "--scale",
        "1-5",
        "--public-title",
        "Rate short texts",
        stdout=io.StringIO(),
    )
    campaign = Campaign.objects.get(name="Crowd-sysA-vs-sysB")
    assert campaign.public_title == "Rate short texts"
    link = join_link_create(campaign=campaign)
    join = client.get(_join_url(link, **PROLIFIC)).content.decode()
    assert "Rate short texts" in join and "Crowd-sysA-vs-sysB" not in join
    unit = client.get(_start(client, link)["Location"]).content.decode()
    assert '<h1 class="work-title">Rate short texts</h1>' in unit and "Crowd-sysA-vs-sysB" not in unit
    api = APIClient()
    api.force_authenticate(owner)
    made = api.post(
        "/api/campaigns/",
        {
            "dataset": dataset.pk,
            "name": "api-made",
            "protocol": "likert",
            "criteria": ["fluency"],
            "scale_min": 1,
            "scale_max": 5,
            "public_title": "A reading study",
        },
        format="json",
    )
    assert made.status_code == 201, made.content
    assert made.json()["public_title"] == "A reading study"
    assert Campaign.objects.get(name="api-made").annotator_title == "A reading study"


def test_a_closed_link_says_so_to_the_participant_and_looks_alike_whatever_the_reason(client, campaign, link, settings):
    """A participant whose link expired got the staff 404 ("...a project you are not a member of. Back to
    your projects") or, under `make run` (debug), Django's list of URL patterns. Now one message for
    unknown, revoked and expired links alike (which one is not told), still a 404."""
    settings.DEBUG = True  # make run's mode: the technical 404 page is what a raised Http404 shows there
    expired = join_link_create(campaign=campaign)
    JoinLink.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    join_link_revoke(link=link)
    bodies = []
    for url in (
        reverse("join", args=["no-such-token"]) + f"?PROLIFIC_PID={PID}",
        _join_url(link, **PROLIFIC),
        _join_url(expired, **PROLIFIC),
    ):
        response = client.get(url)
        assert response.status_code == 404
        body = response.content.decode()
        assert "This study link is not open" in body and "URLconf" not in body and "your projects" not in body
        bodies.append(body)
    assert bodies[0] == bodies[1] == bodies[2]  # nothing tells an expired link from an unknown one
