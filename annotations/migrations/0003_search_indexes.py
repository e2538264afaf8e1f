"""Indexes for search and paging at scale (1M outputs and more).

- (dataset, position, id): a dataset's pages in order without sorting it.
- pg_trgm GIN indexes on UPPER(...) of every searched text: they serve the
  `icontains` lookups of `annotations.selectors._item_search` (which Django
  writes as `UPPER(col::text) LIKE UPPER('%q%')`), built CONCURRENTLY so a large installation
  keeps taking writes while they build.
"""
from django.contrib.postgres.operations import TrigramExtension
from django.db import migrations, models

TRIGRAM_INDEXES = [
    ("item_external_id_trgm", "annotations_item", "UPPER(external_id::text)"),
    ("item_source_trgm", "annotations_item", "UPPER(source)"),
    ("item_data_trgm", "annotations_item", "UPPER(data::text)"),
    ("reference_text_trgm", "annotations_reference", "UPPER(text)"),
    ("output_text_trgm", "annotations_output", "UPPER(text)"),
]


def create_trigram_indexes(apps, schema_editor):
    for name, table, expression in TRIGRAM_INDEXES:
        schema_editor.execute(
            f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON {table} USING gin ({expression} gin_trgm_ops)"
        )


def drop_trigram_indexes(apps, schema_editor):
    for name, _, _ in TRIGRAM_INDEXES:
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [
        ("annotations", "0002_import_jobs"),
    ]

    operations = [
        TrigramExtension(),
        migrations.AddIndex(
            model_name="item",
            index=models.Index(fields=["dataset", "position", "id"], name="item_dataset_position"),
        ),
        migrations.RunPython(create_trigram_indexes, drop_trigram_indexes, elidable=False),
    ]
