"""A protocol is registered, not migrated (issue 37): the test-only protocol of tests/protocol_plugin.py,
listed in WORKBENCH_PROTOCOLS beside the built-in ones, needs no migration, and the database takes
its campaigns; a name that no setting registers is refused with the registered names."""

from io import StringIO

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command

from annotations import protocols
from annotations.models import Campaign
from annotations.services.campaigns import campaign_create
from tests.annotations.factories import DatasetFactory, ItemFactory, OutputFactory, SystemFactory
from tests.protocol_plugin import LikertFive

pytestmark = pytest.mark.django_db


def test_the_plugin_needs_no_migration(registered):
    assert isinstance(protocols.get("likert5"), LikertFive)
    out = StringIO()
    # --check exits non-zero when a model change would need a migration.
    call_command("makemigrations", "annotations", "metrics", "--check", "--dry-run", stdout=out)
    assert "No changes detected" in out.getvalue()


def test_a_plugin_campaign_is_stored_and_an_unregistered_name_refused(registered):
    dataset = DatasetFactory()
    system = SystemFactory(dataset=dataset)
    OutputFactory(item=ItemFactory(dataset=dataset), system=system, text="A text.")
    campaign = campaign_create(dataset=dataset, name="plugin", protocol="likert5", criteria=["quality"])
    assert Campaign.objects.get(pk=campaign.pk).protocol == "likert5"
    assert campaign.criterion_scale("quality") == (1.0, 5.0)  # the plugin's own default scale
    with pytest.raises(ValidationError, match="likert5"):  # the message lists the registered names
        campaign_create(dataset=dataset, name="nope", protocol="no-such-protocol", criteria=["quality"])
