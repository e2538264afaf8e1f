# Each protocol's own settings move from six columns into one JSON field, `Campaign.options`
# (annotations.protocols.options). The names below are those the protocols declared when the
# columns were dropped: a migration is a snapshot and never asks today's registry.

from django.db import migrations, models

# protocol -> the columns it used; the others held unused defaults (tuple_size 4 on a Likert campaign).
COLUMNS = {
    "likert": (),
    "rankme": ("anchor_value", "tuple_size"),
    "pairwise": ("pair_rounds",),
    "bws": ("tuple_size",),
    "esa": ("severities",),
    "cesa": ("severities", "tuple_size"),
    "mqm": ("severities", "typology", "mqm_weights"),
}
# Empty column values meant "the protocol's default" (filled in when the campaign is read).
EMPTY = (None, "", [])
# Column defaults, for the way back.
RESET = {"anchor_value": None, "tuple_size": 4, "severities": [], "typology": [], "mqm_weights": "", "pair_rounds": 0}


def columns_to_options(apps, schema_editor):
    Campaign = apps.get_model("annotations", "Campaign")
    for campaign in Campaign.objects.all().iterator():
        options = dict(campaign.options or {})
        for column in COLUMNS.get(campaign.protocol, ()):
            value = getattr(campaign, column)
            if value not in EMPTY:
                options[column] = value
        campaign.options = options
        campaign.save(update_fields=["options"])


def options_to_columns(apps, schema_editor):
    Campaign = apps.get_model("annotations", "Campaign")
    for campaign in Campaign.objects.all().iterator():
        for column, empty in RESET.items():
            value = (campaign.options or {}).get(column)
            setattr(campaign, column, empty if value is None else value)
        campaign.save(update_fields=list(RESET))


class Migration(migrations.Migration):

    dependencies = [
        ('annotations', '0021_campaign_public_title'),
    ]

    operations = [
        migrations.AddField(
            model_name='campaign',
            name='options',
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.RunPython(columns_to_options, options_to_columns),
        migrations.RemoveField(model_name='campaign', name='anchor_value'),
        migrations.RemoveField(model_name='campaign', name='tuple_size'),
        migrations.RemoveField(model_name='campaign', name='severities'),
        migrations.RemoveField(model_name='campaign', name='typology'),
        migrations.RemoveField(model_name='campaign', name='mqm_weights'),
        migrations.RemoveField(model_name='campaign', name='pair_rounds'),
    ]
