"""Annotators in bulk and one-time login links (annotations.services.accounts, .login_links)."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import connection
from django.utils import timezone

from annotations.models import LoginLink, Membership
from annotations.services.accounts import annotators_add_bulk, usernames_parse
from annotations.services.login_links import login_link_create, login_link_redeem, login_link_refusal
from tests.annotations.factories import MembershipFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db
User = get_user_model()


@pytest.fixture
def project():
    return ProjectFactory(name="study")


@pytest.fixture
def owner(project):
    return MembershipFactory(project=project, user=UserFactory(username="olivia"), role="owner").user


def test_parse_lines_commas_and_a_csv_username_column():
    assert usernames_parse("ann\n\n  bob , cat\nann\n") == [(1, "ann"), (3, "bob"), (3, "cat")]
    assert usernames_parse("email,username\nx@example.org,ann\ny@example.org,bob\n") == [(2, "ann"), (3, "bob")]


def test_bulk_creates_accounts_without_password_adds_annotators_and_issues_links(project, owner):
    existing = UserFactory(username="bob")
    result = annotators_add_bulk(project=project, text="ann\nbob, cat", created_by=owner)
    assert result.created == ["ann", "cat"] and result.added == ["bob"]
    assert set(result.links) == {"ann", "cat"}  # an existing account gets no link unless asked
    for name in ("ann", "cat"):
        assert not User.objects.get(username=name).has_usable_password()
    roles = dict(Membership.objects.filter(project=project).values_list("user__username", "role"))
    assert roles == {"olivia": "owner", "ann": "annotator", "bob": "annotator", "cat": "annotator"}
    assert existing.has_usable_password()


def test_bulk_is_atomic_and_reports_every_bad_line(project, owner):
    text = "ann\nbad name!\nbob\n" + "x" * 151 + "\n"
    with pytest.raises(ValidationError) as caught:
        annotators_add_bulk(project=project, text=text, created_by=owner)
    messages = caught.value.messages
    assert len(messages) == 2
    assert messages[0].startswith("line 2: bad name!: ") and messages[1].startswith("line 4: ")
    assert "150 characters" in messages[1]
    # Nothing of the good lines was written.
    assert not User.objects.filter(username__in=["ann", "bob"]).exists()
    assert Membership.objects.filter(project=project).count() == 1
    assert not LoginLink.objects.exists()


def test_bulk_keeps_an_owners_role_and_refuses_an_empty_paste(project, owner):
    result = annotators_add_bulk(project=project, text="olivia\nann", created_by=owner)
    assert result.unchanged == ["olivia"] and result.created == ["ann"]
    assert Membership.objects.get(project=project, user=owner).role == "owner"
    with pytest.raises(ValidationError, match="No usernames"):
        annotators_add_bulk(project=project, text=" \n , \n", created_by=owner)


def test_links_for_existing_accounts_only_where_no_one_else_answers_for_them(project, owner):
    other = ProjectFactory(name="elsewhere")
    passwordless = User.objects.create_user("pat")
    passwordless.set_unusable_password()
    passwordless.save()
    foreign = User.objects.create_user("fay")
    foreign.set_unusable_password()
    foreign.save()
    MembershipFactory(project=other, user=foreign, role="annotator")
    UserFactory(username="root", is_superuser=True, is_staff=True)
    UserFactory(username="withpw")
    result = annotators_add_bulk(
        project=project, text="pat\nfay\nroot\nwithpw", created_by=owner, links_for_existing=True
    )
    assert set(result.links) == {"pat"}
    assert result.no_link == {
        "fay": "the account belongs to a project you do not own",
        "root": "staff accounts log in with their password",
        "withpw": "the account has a password (its owner logs in with it)",
    }
    # The same rule for a single new link (the members page's button).
    with pytest.raises(ValidationError, match="log in with their password"):
        login_link_create(user=User.objects.get(username="root"), project=project, created_by=owner)


def test_a_link_logs_in_once_and_the_token_is_not_stored_in_clear(project, owner):
    user = User.objects.create_user("ann")
    link, token = login_link_create(user=user, project=project, created_by=owner)
    assert len(token) >= 40
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM annotations_loginlink")
        stored = cursor.fetchall()
    assert stored and not any(token in str(value) for row in stored for value in row)
    assert link.expires_at - link.created_at == pytest.approx(timedelta(days=14), abs=timedelta(seconds=5))
    assert login_link_redeem(token=token) == user
    assert login_link_redeem(token=token) is None
    assert login_link_redeem(token=token[:-1] + ("A" if token[-1] != "A" else "B")) is None


def test_an_expired_link_and_a_superseded_link_do_not_log_in(project, owner):
    user = User.objects.create_user("ann")
    user.set_unusable_password()
    user.save()
    link, token = login_link_create(user=user, project=project, created_by=owner)
    LoginLink.objects.filter(pk=link.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert login_link_redeem(token=token) is None
    first = login_link_create(user=user, project=project, created_by=owner)[1]
    second = login_link_create(user=user, project=project, created_by=owner)[1]
    assert login_link_redeem(token=first) is None  # the newest link is the one handed out
    assert login_link_redeem(token=second) == user


def test_a_deactivated_account_gets_no_link_and_cannot_use_one(project, owner):
    user = User.objects.create_user("ann")
    user.set_unusable_password()
    user.save()
    token = login_link_create(user=user, project=project, created_by=owner)[1]
    user.is_active = False
    user.save()
    assert login_link_refusal(user=user, project=project, issuer=owner) == "the account is deactivated"
    assert login_link_redeem(token=token) is None


@pytest.mark.django_db(transaction=True)
def test_two_clicks_at_once_log_in_once():
    """Both requests find the unused row; the row lock lets only the first one spend it."""
    import threading

    from django.db import connections

    project = ProjectFactory(name="race")
    user = User.objects.create_user("ann")
    token = login_link_create(user=user, project=project)[1]
    barrier = threading.Barrier(4)
    results = []

    def click():
        barrier.wait()
        try:
            results.append(login_link_redeem(token=token))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=click) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(r is not None for r in results) == [False, False, False, True]
