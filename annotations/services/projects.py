"""Projects, memberships and annotators."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction

from annotations.models import Annotator, Membership, Project
from workbench.names import name_clean, taken

DEFAULT_PROJECT_NAME = "default"
# Who may create projects (setting WORKBENCH_PROJECT_CREATORS):
# "staff" = staff users only; "owners" = staff users and users who already own
# a project; "anyone" = every logged-in user.
PROJECT_CREATORS = ("staff", "owners", "anyone")


def user_may_create_projects(*, user: AbstractBaseUser) -> bool:
    if not user.is_authenticated or not user.is_active:
        return False
    if user.is_staff or user.is_superuser:
        return True
    policy = getattr(settings, "WORKBENCH_PROJECT_CREATORS", "owners")
    if policy == "anyone":
        return True
    if policy == "owners":
        return Membership.objects.filter(user=user, role=Membership.Role.OWNER).exists()
    return False


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
    """A new project owned by `owner`; a taken name is a ValidationError, even under a race.

    Only users allowed by `WORKBENCH_PROJECT_CREATORS` may create projects
    (PermissionDenied otherwise); the command line (`import_dataset
    --project`) is not limited.
    """
    if not user_may_create_projects(user=owner):
        raise PermissionDenied("You may not create projects; ask an administrator or the owner of a project.")
    try:
        name = name_clean(name or "", "The name")
    except ValueError as exc:
        raise ValidationError({"name": str(exc)}) from None
    project = Project(name=name, description=description or "")
    project.full_clean(validate_unique=False, validate_constraints=False)
    if taken(Project.objects.all(), "name", name):
        raise ValidationError({"name": f"A project called {name!r} already exists (or one whose name looks the same)."})
    try:
        with transaction.atomic():
            project.save()
    except IntegrityError:
        raise ValidationError({"name": f"A project called {name!r} already exists."}) from None
    membership_add(project=project, user=owner, role=Membership.Role.OWNER)
    return project


def _keep_an_owner(*, project: Project, leaving: Membership) -> None:
    """The rule "a project keeps one owner", for every change of role and removal.

    Locks the project's owner rows first, so two owners demoting each other at
    the same moment cannot leave it with none.
    """
    owners = list(
        Membership.objects.select_for_update()
        .filter(project=project, role=Membership.Role.OWNER)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    if leaving.pk in owners and len(owners) == 1:
        raise ValidationError({"role": "A project keeps at least one owner: make someone else owner first."})


@transaction.atomic
def membership_add(*, project: Project, user: AbstractBaseUser, role: str) -> Membership:
    """Make `user` a member of `project` with `role`, or change their role.

    The last owner cannot be demoted.
    """
    if role not in Membership.Role.values:
        raise ValidationError({"role": f"Unknown role {role!r}; expected one of {', '.join(Membership.Role.values)}."})
    membership, created = Membership.objects.get_or_create(project=project, user=user, defaults={"role": role})
    if not created and membership.role != role:
        if membership.role == Membership.Role.OWNER:
            _keep_an_owner(project=project, leaving=membership)
        membership.role = role
        membership.full_clean()
        membership.save(update_fields=["role", "updated_at"])
    return membership


@transaction.atomic
def membership_remove(*, project: Project, membership_id: int) -> None:
    """Remove a member (their judgements stay); the last owner cannot be removed."""
    membership = Membership.objects.filter(project=project, pk=membership_id).first()
    if membership is None:
        raise ValidationError({"member": "No such member of this project."})
    if membership.role == Membership.Role.OWNER:
        _keep_an_owner(project=project, leaving=membership)
    membership.delete()


@transaction.atomic
def annotator_get_or_create(*, project: Project, name: str, user: AbstractBaseUser | None = None) -> Annotator:
    """The annotator of `project` for the account `user`, or the imported worker `name`.

    Accounts and imported worker ids live in separate namespaces: an imported
    "annA" is never the account annA (an import maps a worker id to an
    account only when told to).
    """
    name = (name or "").strip()
    if not name:
        raise ValidationError({"name": "An annotator needs a name."})
    max_len = Annotator._meta.get_field("name").max_length
    if len(name) > max_len:
        raise ValidationError({"name": f"Annotator name longer than {max_len} characters."})
    namespace = Annotator.Namespace.ACCOUNT if user is not None else Annotator.Namespace.IMPORT
    lookup = (
        {"project": project, "user": user}
        if user is not None
        else {"project": project, "namespace": namespace, "name": name}
    )
    existing = Annotator.objects.filter(**lookup).first()
    if existing is not None:
        return existing
    for attempt in range(1, 50):
        candidate = name if attempt == 1 else f"{name[: max_len - 6]} ({attempt})"
        try:
            with transaction.atomic():
                return Annotator.objects.create(project=project, name=candidate, user=user, namespace=namespace)
        except IntegrityError:
            # Lost a race (same user or name): the winner's row, or the next free name.
            existing = Annotator.objects.filter(**lookup).first()
            if existing is not None:
                return existing
    raise ValidationError({"name": f"Could not find a free annotator name for {name!r}."})
