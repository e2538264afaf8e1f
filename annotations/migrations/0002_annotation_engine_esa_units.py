"""Units of work, enrolments, ESA span judgements, judgement status and origin "api",
annotator namespaces (imported worker ids apart from accounts), per-criterion campaign settings."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def accounts_namespace(apps, schema_editor):
    Annotator = apps.get_model("annotations", "Annotator")
    Annotator.objects.filter(user__isnull=False).update(namespace="account")


class Migration(migrations.Migration):

    dependencies = [
        ('annotations', '0001_initial'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='Enrolment',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('seed', models.BigIntegerField()),
                ('n_assigned', models.PositiveIntegerField(default=0)),
                ('n_done', models.PositiveIntegerField(default=0)),
                ('position_counts', models.JSONField(default=dict)),
            ],
        ),
        migrations.CreateModel(
            name='ErrorSpan',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('start', models.PositiveIntegerField(blank=True, null=True)),
                ('end', models.PositiveIntegerField(blank=True, null=True)),
                ('severity', models.CharField(choices=[('minor', 'Minor'), ('major', 'Major'), ('critical', 'Critical')], max_length=10)),
                ('missing', models.BooleanField(default=False)),
            ],
            options={
                'ordering': ['judgement', 'id'],
            },
        ),
        migrations.CreateModel(
            name='SpanJudgement',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('criterion', models.CharField(max_length=100)),
                ('time_spent_ms', models.PositiveIntegerField(blank=True, null=True)),
                ('shown_order', models.JSONField(blank=True, default=list)),
                ('origin', models.CharField(choices=[('browser', "Collected in the workbench's pages"), ('api', 'Submitted through the REST API'), ('import', 'Imported')], default='browser', max_length=10)),
                ('status', models.CharField(choices=[('complete', 'Complete'), ('partial', 'Partial (unit not finished)'), ('abandoned', 'Abandoned')], default='complete', max_length=10)),
                ('score', models.FloatField()),
                ('scale_min', models.FloatField(blank=True, null=True)),
                ('scale_max', models.FloatField(blank=True, null=True)),
            ],
            options={
                'ordering': ['campaign', 'item', 'id'],
            },
        ),
        migrations.CreateModel(
            name='Unit',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('outputs', models.JSONField()),
                ('systems', models.JSONField(default=list)),
                ('kind', models.CharField(choices=[('regular', 'Regular')], default='regular', max_length=20)),
                ('expected', models.JSONField(blank=True, null=True)),
                ('position', models.PositiveIntegerField()),
                ('redundancy', models.PositiveSmallIntegerField()),
                ('n_taken', models.PositiveSmallIntegerField(default=0)),
                ('n_done', models.PositiveSmallIntegerField(default=0)),
            ],
            options={
                'ordering': ['campaign', 'position'],
            },
        ),
        migrations.RemoveConstraint(
            model_name='annotator',
            name='annotator_unique_name',
        ),
        migrations.RemoveConstraint(
            model_name='assignment',
            name='assignment_unique_unit',
        ),
        migrations.RemoveConstraint(
            model_name='campaign',
            name='campaign_protocol_valid',
        ),
        migrations.AddField(
            model_name='annotator',
            name='namespace',
            field=models.CharField(choices=[('account', 'Workbench account'), ('import', 'Imported worker id')], default='import', max_length=10),
        ),
        migrations.AddField(
            model_name='assignment',
            name='completed_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='assignment',
            name='draft',
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name='assignment',
            name='expires_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='assignment',
            name='seq',
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name='assignment',
            name='shown_order',
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name='assignment',
            name='time_spent_ms',
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='bestworstjudgement',
            name='assignment',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='%(class)ss', to='annotations.assignment'),
        ),
        migrations.AddField(
            model_name='bestworstjudgement',
            name='status',
            field=models.CharField(choices=[('complete', 'Complete'), ('partial', 'Partial (unit not finished)'), ('abandoned', 'Abandoned')], default='complete', max_length=10),
        ),
        migrations.AddField(
            model_name='campaign',
            name='assignment_timeout_minutes',
            field=models.PositiveIntegerField(default=60),
        ),
        migrations.AddField(
            model_name='campaign',
            name='criteria_config',
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name='campaign',
            name='pair_rounds',
            field=models.PositiveSmallIntegerField(default=0),
        ),
        migrations.AddField(
            model_name='campaign',
            name='planned_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='campaign',
            name='seed',
            field=models.BigIntegerField(default=0),
        ),
        migrations.AddField(
            model_name='campaign',
            name='severities',
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name='campaign',
            name='show_reference',
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name='campaign',
            name='show_source',
            field=models.BooleanField(default=True),
        ),
        migrations.AddField(
            model_name='campaign',
            name='systems',
            field=models.ManyToManyField(blank=True, related_name='campaigns', to='annotations.system'),
        ),
        migrations.AddField(
            model_name='campaign',
            name='units_per_batch',
            field=models.PositiveSmallIntegerField(default=10),
        ),
        migrations.AddField(
            model_name='pairwisejudgement',
            name='assignment',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='%(class)ss', to='annotations.assignment'),
        ),
        migrations.AddField(
            model_name='pairwisejudgement',
            name='status',
            field=models.CharField(choices=[('complete', 'Complete'), ('partial', 'Partial (unit not finished)'), ('abandoned', 'Abandoned')], default='complete', max_length=10),
        ),
        migrations.AddField(
            model_name='ratingjudgement',
            name='assignment',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='%(class)ss', to='annotations.assignment'),
        ),
        migrations.AddField(
            model_name='ratingjudgement',
            name='status',
            field=models.CharField(choices=[('complete', 'Complete'), ('partial', 'Partial (unit not finished)'), ('abandoned', 'Abandoned')], default='complete', max_length=10),
        ),
        migrations.AlterField(
            model_name='assignment',
            name='status',
            field=models.CharField(choices=[('pending', 'Pending'), ('done', 'Done'), ('expired', 'Abandoned (timed out)'), ('released', 'Released')], default='pending', max_length=10),
        ),
        migrations.AlterField(
            model_name='bestworstjudgement',
            name='origin',
            field=models.CharField(choices=[('browser', "Collected in the workbench's pages"), ('api', 'Submitted through the REST API'), ('import', 'Imported')], default='browser', max_length=10),
        ),
        migrations.AlterField(
            model_name='campaign',
            name='protocol',
            field=models.CharField(choices=[('likert', 'Likert / direct assessment'), ('rankme', 'RankME (magnitude estimation)'), ('pairwise', 'Side-by-side pairwise'), ('bws', 'Best-worst scaling'), ('esa', 'Error span annotation (ESA)')], max_length=20),
        ),
        migrations.AlterField(
            model_name='pairwisejudgement',
            name='origin',
            field=models.CharField(choices=[('browser', "Collected in the workbench's pages"), ('api', 'Submitted through the REST API'), ('import', 'Imported')], default='browser', max_length=10),
        ),
        migrations.AlterField(
            model_name='ratingjudgement',
            name='origin',
            field=models.CharField(choices=[('browser', "Collected in the workbench's pages"), ('api', 'Submitted through the REST API'), ('import', 'Imported')], default='browser', max_length=10),
        ),
        # Annotators with an account move to the account namespace before the
        # constraint that keeps imported worker ids apart from accounts.
        migrations.RunPython(accounts_namespace, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='annotator',
            constraint=models.UniqueConstraint(fields=('project', 'namespace', 'name'), name='annotator_unique_name_in_namespace'),
        ),
        migrations.AddConstraint(
            model_name='annotator',
            constraint=models.CheckConstraint(condition=models.Q(('namespace', 'account'), ('user__isnull', True), _connector='OR'), name='annotator_import_has_no_account'),
        ),
        migrations.AddConstraint(
            model_name='campaign',
            constraint=models.CheckConstraint(condition=models.Q(('protocol__in', ['likert', 'rankme', 'pairwise', 'bws', 'esa'])), name='campaign_protocol_valid_v2'),
        ),
        migrations.AddField(
            model_name='enrolment',
            name='annotator',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='enrolments', to='annotations.annotator'),
        ),
        migrations.AddField(
            model_name='enrolment',
            name='campaign',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='enrolments', to='annotations.campaign'),
        ),
        migrations.AddField(
            model_name='spanjudgement',
            name='annotator',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='%(class)ss', to='annotations.annotator'),
        ),
        migrations.AddField(
            model_name='spanjudgement',
            name='assignment',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='%(class)ss', to='annotations.assignment'),
        ),
        migrations.AddField(
            model_name='spanjudgement',
            name='campaign',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='%(class)ss', to='annotations.campaign'),
        ),
        migrations.AddField(
            model_name='spanjudgement',
            name='item',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='%(class)ss', to='annotations.item'),
        ),
        migrations.AddField(
            model_name='spanjudgement',
            name='output',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='span_judgements', to='annotations.output'),
        ),
        migrations.AddField(
            model_name='errorspan',
            name='judgement',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='spans', to='annotations.spanjudgement'),
        ),
        migrations.AddField(
            model_name='unit',
            name='campaign',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='units', to='annotations.campaign'),
        ),
        migrations.AddField(
            model_name='unit',
            name='item',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='units', to='annotations.item'),
        ),
        migrations.AddField(
            model_name='assignment',
            name='unit',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='assignments', to='annotations.unit'),
        ),
        migrations.AddIndex(
            model_name='assignment',
            index=models.Index(condition=models.Q(('status', 'pending')), fields=['campaign', 'expires_at'], name='assignment_pending'),
        ),
        migrations.AddIndex(
            model_name='assignment',
            index=models.Index(fields=['annotator', 'campaign', 'status'], name='assignment_annotator_status'),
        ),
        migrations.AddConstraint(
            model_name='assignment',
            constraint=models.UniqueConstraint(fields=('unit', 'annotator'), name='assignment_unique_unit_annotator'),
        ),
        migrations.AddConstraint(
            model_name='assignment',
            constraint=models.CheckConstraint(condition=models.Q(('status__in', ['pending', 'done', 'expired', 'released'])), name='assignment_status_valid'),
        ),
        migrations.AddConstraint(
            model_name='enrolment',
            constraint=models.UniqueConstraint(fields=('campaign', 'annotator'), name='enrolment_unique_annotator'),
        ),
        migrations.AddConstraint(
            model_name='spanjudgement',
            constraint=models.UniqueConstraint(fields=('campaign', 'annotator', 'output', 'criterion'), name='span_one_per_annotator_unit'),
        ),
        migrations.AddConstraint(
            model_name='spanjudgement',
            constraint=models.CheckConstraint(condition=models.Q(('scale_min__isnull', True), ('score__gte', models.F('scale_min')), _connector='OR'), name='span_score_above_min'),
        ),
        migrations.AddConstraint(
            model_name='spanjudgement',
            constraint=models.CheckConstraint(condition=models.Q(('scale_max__isnull', True), ('score__lte', models.F('scale_max')), _connector='OR'), name='span_score_below_max'),
        ),
        migrations.AddConstraint(
            model_name='errorspan',
            constraint=models.CheckConstraint(condition=models.Q(('severity__in', ['minor', 'major', 'critical'])), name='errorspan_severity_valid'),
        ),
        migrations.AddConstraint(
            model_name='errorspan',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('end__isnull', True), ('missing', True), ('start__isnull', True)), models.Q(('end__isnull', False), ('missing', False), ('start__isnull', False), ('start__lt', models.F('end'))), _connector='OR'), name='errorspan_offsets_or_missing'),
        ),
        migrations.AddIndex(
            model_name='unit',
            index=models.Index(condition=models.Q(('n_taken__lt', models.F('redundancy'))), fields=['campaign', 'id'], name='unit_open_slots'),
        ),
        migrations.AddConstraint(
            model_name='unit',
            constraint=models.UniqueConstraint(fields=('campaign', 'position'), name='unit_unique_position'),
        ),
        migrations.AddConstraint(
            model_name='unit',
            constraint=models.CheckConstraint(condition=models.Q(('n_taken__lte', models.F('redundancy'))), name='unit_at_most_k_assignments'),
        ),
        migrations.AddConstraint(
            model_name='unit',
            constraint=models.CheckConstraint(condition=models.Q(('n_done__lte', models.F('n_taken'))), name='unit_done_within_taken'),
        ),
    ]
