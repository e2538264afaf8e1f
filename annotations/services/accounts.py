"""Annotators in bulk: a pasted or uploaded list of usernames -> accounts, memberships, login links."""

from __future__ import annotations

import csv
import unicodedata
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction

from annotations.models import Membership, Project
from annotations.services.login_links import login_link_create, login_link_refusal
from annotations.services.projects import membership_add
from workbench.names import name_problem, taken

# A paste is one transaction; a study of more people than this is several pastes.
MAX_USERNAMES = 1000


@dataclass
class BulkResult:
    """What a bulk add did. `links` maps usernames to tokens, in the order given (shown once)."""

    created: list[str] = field(default_factory=list)  # new accounts, now annotators
    added: list[str] = field(default_factory=list)  # existing accounts, now annotators
    unchanged: list[str] = field(default_factory=list)  # already members (their role is kept)
    links: dict[str, str] = field(default_factory=dict)
    no_link: dict[str, str] = field(default_factory=dict)  # username -> why no link was issued

    @property
    def members(self) -> int:
        return len(self.created) + len(self.added) + len(self.unchanged)


def usernames_parse(text: str) -> list[tuple[int, str]]:
    """(line number, username) for every name in `text`: one per line or comma separated, or a
    CSV file whose header row has a `username` column (then only that column is read).
    Blank cells are skipped; a name given twice counts once (its first line)."""
    rows = list(csv.reader(text.splitlines()))
    column = None
    start = 0
    if rows:
        header = [cell.strip().lower() for cell in rows[0]]
        if "username" in header:
            column, start = header.index("username"), 1
    seen: set[str] = set()
    names: list[tuple[int, str]] = []
    for number, row in enumerate(rows[start:], start=start + 1):
        cells = row if column is None else row[column : column + 1]
        for cell in cells:
            name = cell.strip()
            if name and name not in seen:
                seen.add(name)
                names.append((number, name))
    return names


def username_problem(name: str) -> str | None:
    """A new account's name: one spelling (NFC), no invisible characters or mixed scripts, and
    not a look-alike of an existing account's (workbench.names)."""
    if unicodedata.normalize("NFC", name) != name:
        return "write the name in its composed Unicode form (NFC)"
    problem = name_problem(name)
    if problem:
        return problem
    if taken(get_user_model().objects.all(), "username", name):
        return "an account whose name looks the same already exists"
    return None


def _problems(names: list[tuple[int, str]], existing: dict[str, AbstractBaseUser]) -> list[str]:
    User = get_user_model()
    problems = []
    if not names:
        problems.append("No usernames given: paste one per line, or comma separated.")
    if len(names) > MAX_USERNAMES:
        problems.append(f"{len(names)} usernames: at most {MAX_USERNAMES} at a time.")
    for number, name in names:
        user = existing.get(name)
        if user is not None:
            if not user.is_active:
                problems.append(f"line {number}: {name}: this account cannot be added")
            continue
        try:
            User(username=name).clean_fields(exclude=["password"])
        except ValidationError as exc:
            for messages in exc.message_dict.values():
                problems += [f"line {number}: {name}: {message}" for message in messages]
            continue
        problem = username_problem(name)
        if problem:
            problems.append(f"line {number}: {name}: {problem}")
    return problems


@transaction.atomic
def annotators_add_bulk(
    *, project: Project, text: str, created_by: AbstractBaseUser | None, links_for_existing: bool = False
) -> BulkResult:
    """Make every named account an annotator of `project`, creating missing accounts with no
    password, and issue a login link for each created account (and, with `links_for_existing`,
    for existing ones that may get one: `login_link_refusal`).

    All or nothing: any bad line is a ValidationError listing every problem as
    "line N: ...", and nothing is written. Members keep the role they have (a
    paste never demotes an owner).
    """
    User = get_user_model()
    names = usernames_parse(text)
    existing = {u.get_username(): u for u in User.objects.filter(username__in=[n for _, n in names])}
    problems = _problems(names, existing)
    if problems:
        raise ValidationError(problems)
    roles = dict(
        Membership.objects.filter(project=project, user__in=existing.values()).values_list("user__username", "role")
    )
    result = BulkResult()
    for _, name in names:
        user = existing.get(name)
        if user is None:
            user = User(username=name)
            user.set_unusable_password()
            user.save()
            result.created.append(name)
        elif name in roles:
            result.unchanged.append(name)
        else:
            result.added.append(name)
        if name not in roles:
            membership_add(project=project, user=user, role=Membership.Role.ANNOTATOR)
        if name in result.created or links_for_existing:
            reason = login_link_refusal(user=user, project=project, issuer=created_by)
            if reason is None:
                result.links[name] = login_link_create(user=user, project=project, created_by=created_by)[1]
            else:
                result.no_link[name] = reason
    return result
