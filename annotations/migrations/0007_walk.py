"""Annotators walk a campaign's units in a keyed permutation of their positions
(annotations.services.walk): the number of regular units is its domain, the
enrolment keeps where each annotator stands. Campaigns planned before get
their count here when their regular units hold positions 0 .. n-1 (as planned);
others keep the full scan."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotations', '0006_export_jobs'),
    ]

    operations = [
        migrations.AddField(
            model_name='campaign',
            name='n_units',
            field=models.PositiveIntegerField(blank=True, editable=False, null=True),
        ),
        migrations.AddField(
            model_name='enrolment',
            name='walk_step',
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.RunSQL(
            """
            UPDATE annotations_campaign SET n_units = (
                SELECT COUNT(*) FROM annotations_unit u WHERE u.campaign_id = annotations_campaign.id
                AND u.kind = 'regular')
            WHERE planned_at IS NOT NULL AND (
                SELECT COUNT(*) FROM annotations_unit u WHERE u.campaign_id = annotations_campaign.id
                AND u.kind = 'regular') = (
                SELECT COALESCE(MAX(u.position) + 1, 0) FROM annotations_unit u
                WHERE u.campaign_id = annotations_campaign.id AND u.kind = 'regular')
            """,
            migrations.RunSQL.noop,
        ),
    ]
