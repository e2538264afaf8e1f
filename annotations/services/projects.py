"""Projects, memberships and annotators."""
from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from annotations.models import Annotator, Membership, Project

DEFAULT_PROJECT_NAME = "default"


@transaction.atomic
def project_get_or_create(*, name: str, owner: AbstractBaseUser | None = None) -> Project:
    """The project called `name`, created if absent.

    `owner` becomes the owner of a project this call creates; an existing
    project's members are never changed here (that would let anyone who names
    a project join it: use `membership_add`).
    """
    name = (name or "").strip()
    if not name:
        raise ValidationError({"name": "A project needs a name."})
    project = Project.objects.filter(name=name).first()
    if project is not None:
        return project
    candidate = Project(name=name)
    candidate.full_clean(validate_unique=False, validate_constraints=False)
    try:
        # A savepoint: a concurrent creator wins and we read its row.
        with transaction.atomic():
            candidate.save()
    except IntegrityError:
        return Project.objects.get(name=name)
    if owner is not None:
        membership_add(project=candidate, user=owner, role=Membership.Role.OWNER)
    return candidate


@transaction.atomic
def project_create(*, name: str, owner: AbstractBaseUser, description: str = "") -> Project:
    """A new project owned by `owner`; a taken name is a ValidationError, even under a race."""
    name = (name or "").strip()
    project = Project(name=name, description=description or "")
    project.full_clean(validate_unique=False, validate_constraints=False)
    if Project.objects.filter(name=name).exists():
        raise ValidationError({"name": f"A project called {name!r} already exists."})
    try:
        with transaction.atomic():
            project.save()
    except IntegrityError:
        raise ValidationError({"name": f"A project called {name!r} already exists."}) from None
    membership_add(project=project, user=owner, role=Membership.Role.OWNER)
    return project


@transaction.atomic
def membership_add(*, project: Project, user: AbstractBaseUser, role: str) -> Membership:
    """Make `user` a member of `project` with `role`, or change their role."""
    if role not in Membership.Role.values:
        raise ValidationError({"role": f"Unknown role {role!r}; expected one of {', '.join(Membership.Role.values)}."})
    membership, created = Membership.objects.get_or_create(project=project, user=user, defaults={"role": role})
    if not created and membership.role != role:
        membership.role = role
        membership.full_clean()
        membership.save(update_fields=["role", "updated_at"])
    return membership


@transaction.atomic
def annotator_get_or_create(*, project: Project, name: str, user: AbstractBaseUser | None = None) -> Annotator:
    """The annotator of `project` for `user` (if given) or called `name`.

    With a user: their existing annotator profile is returned whatever its
    name; otherwise one is created called `name`, or `name (2)`, `name (3)`...
    when an imported worker id already uses that name (a workbench user is
    never merged with someone else's imported judgements).
    Without a user: the annotator called `name` (imported worker ids).
    """
    name = (name or "").strip()
    if not name:
        raise ValidationError({"name": "An annotator needs a name."})
    max_len = Annotator._meta.get_field("name").max_length
    if len(name) > max_len:
        raise ValidationError({"name": f"Annotator name longer than {max_len} characters."})

    if user is None:
        existing = Annotator.objects.filter(project=project, name=name).first()
        if existing is not None:
            return existing
        try:
            with transaction.atomic():
                return Annotator.objects.create(project=project, name=name)
        except IntegrityError:
            return Annotator.objects.get(project=project, name=name)

    for attempt in range(1, 50):
        existing = Annotator.objects.filter(project=project, user=user).first()
        if existing is not None:
            return existing
        candidate = name if attempt == 1 else f"{name[: max_len - 6]} ({attempt})"
        if Annotator.objects.filter(project=project, name=candidate).exists():
            continue
        try:
            with transaction.atomic():
                return Annotator.objects.create(project=project, name=candidate, user=user)
        except IntegrityError:
            # Lost a race on the name or on the user: look again.
            continue
    raise ValidationError({"name": f"Could not find a free annotator name for {name!r}."})
