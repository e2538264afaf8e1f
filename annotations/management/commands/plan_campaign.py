"""`plan_campaign NAME`: plan a campaign's units in this process, with a progress line: for a
campaign whose planning on a worker failed or never started (e.g. the task queue was down)."""

from django.core.management.base import CommandError

from annotations.models import Campaign
from annotations.services.units import campaign_units_plan
from workbench.commands import DataCommand


class Command(DataCommand):
    help = "Plan a campaign's units now, in this process (after a worker could not)."

    def add_arguments(self, parser):
        parser.add_argument("campaign", help="the campaign's name")

    def handle(self, *args, **options):
        campaign = Campaign.objects.filter(name=options["campaign"]).first()
        if campaign is None:
            raise CommandError(f"no campaign called {options['campaign']!r}")
        if campaign.planned_at is not None:
            self.stdout.write(f"campaign {campaign.name} is planned already ({campaign.n_units:,} units)")
            return

        def progress(done: int, total: int) -> None:
            self.stderr.write(f"\rplanning units: {done:,} / {total:,}", ending="")

        n = campaign_units_plan(campaign=campaign, progress=progress)
        Campaign.objects.filter(pk=campaign.pk).update(plan_error="")
        self.stderr.write("")
        self.stdout.write(f"planned {n:,} units of campaign {campaign.name}")
