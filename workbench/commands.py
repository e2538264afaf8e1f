"""The base of the management commands that read or write the workbench's data (imports, campaigns,
metric runs, analyses): `DataCommand`."""

from __future__ import annotations

from django.core.management.base import BaseCommand


class DataCommand(BaseCommand):
    """A data command starts without Django's system checks.

    The checks inspect the code and the settings (URL conf, models, admin, templates), never the data
    a command reads or writes, and they cost a command about 0.9 s of CPU at each start, close to half
    of its start-up (measured on `agreement`: 2.2 s of CPU with them, 1.3 s without). A study runs
    these commands by the dozen (the tutorials, scripts). The checks still run where they belong:
    `manage.py check` (`check --deploy` is tested), `migrate` and `runserver`.

    `--skip-checks` stays accepted, as before, so no script that passes it breaks."""

    requires_system_checks: list[str] = []

    def create_parser(self, prog_name, subcommand, **kwargs):
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        parser.add_argument("--skip-checks", action="store_true", help="Skip system checks (data commands run none).")
        return parser
