"""`create_join_link --campaign NAME [--completion-url URL] [--pass-code C] [--fail-code C] [--max-annotators N]
[--expires ISO8601] [--json]`."""

import json
from datetime import timezone as dt_timezone

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import CommandError
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from annotations.models import Campaign
from annotations.studies.services import join_link_create
from workbench.commands import DataCommand


class Command(DataCommand):
    help = (
        "Create a study link for a crowd platform. Visitors add their platform ids to it (PROLIFIC_PID, "
        "STUDY_ID, SESSION_ID; workerId, assignmentId, hitId; or annotator)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True)
        parser.add_argument(
            "--completion-url",
            default="",
            help="where participants go at the end of their batch; {code} is replaced by the "
            "completion code, else cc=<code> is appended",
        )
        parser.add_argument(
            "--pass-code",
            default="",
            help="the platform's completion code for participants who pass quality control "
            "(default: each participant's own code)",
        )
        parser.add_argument("--fail-code", default="", help="the code for participants who fail it")
        parser.add_argument("--max-annotators", type=int, help="cap on participants (returning ones never count)")
        parser.add_argument(
            "--one-per-browser",
            action="store_true",
            help="a browser already in the study may not join as another participant, and one platform id is "
            "one participant whichever parameter carries it (PROLIFIC_PID, workerId, annotator)",
        )
        parser.add_argument("--expires", help="ISO 8601 date and time, e.g. 2026-12-31T23:59:00Z (UTC if no zone)")
        parser.add_argument("--base-url", default="", help="the server's public address (default: WORKBENCH_BASE_URL)")
        parser.add_argument("--json", action="store_true", help='print {"url": ..., "token": ...}')

    def handle(self, *args, **options):
        campaigns = list(Campaign.objects.select_related("dataset__project").filter(name=options["campaign"].strip()))
        if not campaigns:
            raise CommandError(f"no campaign called {options['campaign']!r}")
        if len(campaigns) > 1:
            raise CommandError(f"{len(campaigns)} campaigns are called {options['campaign']!r}; rename one first")
        expires = None
        if options["expires"]:
            try:
                expires = parse_datetime(options["expires"].strip())
            except ValueError:
                expires = None
            if expires is None:
                raise CommandError(f"--expires: not an ISO 8601 date and time: {options['expires']!r}")
            if timezone.is_naive(expires):
                expires = expires.replace(tzinfo=dt_timezone.utc)
        try:
            link = join_link_create(
                campaign=campaigns[0],
                completion_url=options["completion_url"],
                max_annotators=options["max_annotators"],
                expires_at=expires,
                pass_code=options["pass_code"],
                fail_code=options["fail_code"],
                one_per_browser=options["one_per_browser"],
            )
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        base = (options["base_url"] or settings.WORKBENCH_BASE_URL).rstrip("/")
        url = base + reverse("join", args=[link.token])
        if options["json"]:
            self.stdout.write(json.dumps({"url": url, "token": link.token, "id": link.pk, "campaign": campaigns[0].pk}))
        else:
            self.stdout.write(f"study link for {campaigns[0].name}: {url}")
            self.stdout.write(
                "Prolific: paste " + url + "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}"
                "&SESSION_ID={{%SESSION_ID%}}"
            )
