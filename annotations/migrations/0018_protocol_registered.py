# Protocols are registered, not migrated (issue 37): Campaign.protocol is a plain name the registry
# (annotations.protocols.registry, WORKBENCH_PROTOCOLS) validates; no choices, no check constraint.
# Existing rows keep their names.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotations', '0017_mqm_protocol'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='campaign',
            name='campaign_protocol_valid_v4',
        ),
        migrations.AlterField(
            model_name='campaign',
            name='protocol',
            field=models.CharField(max_length=20),
        ),
    ]
