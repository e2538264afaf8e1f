"""`add_member --project NAME --role owner|researcher|annotator [--create [--links]] USERNAME [USERNAME ...] [--json]`."""

import json

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import CommandError
from django.db import transaction

from annotations.models import Membership, Project
from annotations.services.accounts import username_problem
from annotations.services.login_links import login_link_create, login_link_url
from annotations.services.projects import membership_add
from workbench.commands import DataCommand


class Command(DataCommand):
    help = (
        "Give accounts a role in a project. With --create, missing accounts are made with an unusable "
        "password; --links prints a one-time login link for each of them (or set a password with "
        "`manage.py changepassword USERNAME`)."
    )

    def add_arguments(self, parser):
        parser.add_argument("usernames", nargs="+", metavar="USERNAME")
        parser.add_argument("--project", required=True, help="project name (must exist)")
        parser.add_argument("--role", required=True, choices=Membership.Role.values)
        parser.add_argument("--create", action="store_true", help="create missing accounts")
        parser.add_argument(
            "--links",
            action="store_true",
            help="print a one-time login link for each account created (needs --create; "
            "links start with WORKBENCH_BASE_URL)",
        )
        parser.add_argument("--json", action="store_true", help="print a JSON summary on stdout")

    def handle(self, *args, **options):
        project = Project.objects.filter(name=options["project"]).first()
        if project is None:
            raise CommandError(f"no project called {options['project']!r} (import a dataset with --project first)")
        if options["links"] and not options["create"]:
            raise CommandError("--links gives links to the accounts --create makes: add --create")
        User = get_user_model()
        names = list(dict.fromkeys(u.strip() for u in options["usernames"]))
        problems = [f"{n!r}: empty username" for n in names if not n]
        missing = [n for n in names if n and not User.objects.filter(username=n).exists()]
        if missing and not options["create"]:
            problems += [f"{n}: no such account (add --create to make it)" for n in missing]
        for name in missing:
            try:
                User(username=name).clean_fields(exclude=["password"])
            except ValidationError as exc:
                problems += [f"{name}: {m}" for ms in exc.message_dict.values() for m in ms]
                continue
            problem = username_problem(name)
            if problem:
                problems.append(f"{name}: {problem}")
        if problems:
            for problem in problems:
                self.stderr.write(problem)
            raise CommandError(f"{len(problems)} problem(s); no member was added")
        created = 0
        links: dict[str, str] = {}
        try:
            with transaction.atomic():
                for name in names:
                    user = User.objects.filter(username=name).first()
                    made = user is None
                    if made:
                        user = User(username=name)
                        user.set_unusable_password()
                        user.save()
                        created += 1
                    membership_add(project=project, user=user, role=options["role"])
                    if made and options["links"]:
                        links[name] = login_link_url(
                            token=login_link_create(user=user, project=project, created_by=None)[1]
                        )
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        summary = {"project": project.name, "members": len(names), "created": created}
        if options["links"]:
            summary["links"] = links
        if options["json"]:
            self.stdout.write(json.dumps(summary))
        else:
            self.stdout.write(
                f"{len(names)} member(s) of {project.name} are now {options['role']} ({created} account(s) created)"
            )
            if links:
                self.stdout.write(
                    f"One-time login links (each works once, for {settings.WORKBENCH_LOGIN_LINK_DAYS} days):"
                )
                for name, url in links.items():
                    self.stdout.write(f"{name}\t{url}")
