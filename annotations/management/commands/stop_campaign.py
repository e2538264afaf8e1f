"""`stop_campaign --campaign NAME --reason TEXT`: stop a campaign early; no new unit is handed out,
pending units can still be submitted; the time and reason go into the dataset card."""

from django.core.exceptions import ValidationError
from django.core.management.base import CommandError

from annotations.allocation.services import campaign_stop
from annotations.models import Campaign
from workbench.commands import DataCommand


class Command(DataCommand):
    help = "Stop a campaign early, with the reason recorded in its dataset card."

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True, help="campaign name")
        parser.add_argument("--reason", required=True, help="why it stops (goes into the card)")

    def handle(self, *args, **options):
        campaign = Campaign.objects.filter(name=options["campaign"]).first()
        if campaign is None:
            raise CommandError(f"no campaign called {options['campaign']!r}")
        try:
            campaign = campaign_stop(campaign=campaign, reason=options["reason"])
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        self.stdout.write(f"stopped campaign {campaign.name} at {campaign.stopped_at:%Y-%m-%d %H:%M:%S} UTC")
