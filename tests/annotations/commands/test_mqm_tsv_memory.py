"""WMT MQM TSV imports stream (issue 46): neither `import_dataset --format mqm-tsv` nor
`import_judgements --format mqm-tsv` holds the file's rows: PostgreSQL groups them (a temporary
table of the import's transaction). Before, every segment (with its texts) or every judgement
(with the line of each of its rows) was collected first: Python's peak while grouping went from
6 to 22 MB (segments) and 5 to 20 MB (judgements) for a 4x larger file; now 1 -> 1 and 3 -> 2 MB.

Measured with tracemalloc around the grouping (in this process): the peak of what Python
allocates. A process's peak RSS (test_import_memory.py) does not show it at these sizes (the
start-up's own peak hides a few tens of MB), and the writers' few keys per item or judgement,
which every format has, are left out.
"""

import json
from functools import partial
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import transaction

from annotations.models import Campaign, Item, Output, SpanJudgement
from annotations.services.imports.errors import Problems
from annotations.services.imports.mqm_tsv import mqm_tsv_items, mqm_tsv_objects
from annotations.services.imports.reading import decoded_lines
from tests.memory import MB, assert_peak_does_not_grow, python_peak

HEADER = "system\tdoc\tdoc_id\tseg_id\trater\tsource\ttarget\tcategory\tseverity\tcomment"
SYSTEMS = ("sysA", "sysB", "sysC", "sysD")
FILLER = "the quick brown fox jumps over the lazy dog"  # short rows: many of them a MB


def _row(seg: int, system: str, rater: str, error: int) -> str:
    """One rating row of segment `seg` by `system`: an error span (its place moves with `error`) or No-error."""
    source = f"source {seg} {FILLER}"
    target = f"{system} {seg} {FILLER}"
    if error % 3 == 2:
        return "\t".join([system, "doc1", str(seg), str(seg), rater, source, target, "No-error", "No-error", ""])
    word = target.split(" ")[2 + error % 5]
    at = target.index(word, len(f"{system} {seg} "))
    marked = f"{target[:at]}<v>{word}</v>{target[at + len(word) :]}"
    severity = "Major" if error % 3 else "Minor"
    return "\t".join(
        [system, "doc1", str(seg), str(seg), rater, source, marked, "Accuracy/Mistranslation", severity, ""]
    )


def write_segments(path: Path, size_mb: int) -> int:
    """A WMT-style TSV of about `size_mb` MB: distinct segments, 4 systems, one rater; returns the segments."""
    per_segment = len(SYSTEMS) * (2 * len(FILLER) + 120)
    count = size_mb * MB // per_segment
    with path.open("w", encoding="utf-8") as file:
        file.write(HEADER + "\n")
        for seg in range(1, count + 1):
            for k, system in enumerate(SYSTEMS):
                file.write(_row(seg, system, "r0", seg + k) + "\n")
    return count


SEGMENTS = 300


def write_ratings(path: Path, size_mb: int, *, tag: str) -> int:
    """About `size_mb` MB of ratings of the SEGMENTS x 4 outputs by raters `tag`-N, two rows a
    judgement (two errors) where the error is not No-error; returns the number of judgements."""
    per_rater = SEGMENTS * len(SYSTEMS) * 2 * (2 * len(FILLER) + 120)
    raters = max(1, size_mb * MB // per_rater)
    judgements = 0
    with path.open("w", encoding="utf-8") as file:
        file.write(HEADER + "\n")
        for r in range(raters):
            for seg in range(1, SEGMENTS + 1):
                for k, system in enumerate(SYSTEMS):
                    first = _row(seg, system, f"{tag}-{r}", seg + k + r)
                    file.write(first + "\n")
                    if "\tNo-error\t" not in first:
                        file.write(_row(seg, system, f"{tag}-{r}", seg + k + r + 3) + "\n")
                    judgements += 1
    return judgements


def grouping_peak(path: Path, grouped) -> tuple[int, int]:
    """The objects `grouped(lines, problems)` makes of the file (mqm_tsv_items' items or
    mqm_tsv_objects' judgements), each dropped once read (what the import's writer does a batch at a
    time), and the peak of Python's allocations meanwhile. The writers' own keys (a few per item or
    judgement, for duplicates across the file) are not counted: JSONL files have them too
    (test_import_memory.py)."""
    problems = Problems()
    count = 0
    with path.open("rb") as source, transaction.atomic(), python_peak() as peak:
        for _ in grouped(decoded_lines(source, problems), problems):
            count += 1
    assert not problems, problems.errors[:3]
    return count, peak.bytes


@pytest.mark.slow
@pytest.mark.django_db
def test_mqm_tsv_segments_are_grouped_without_holding_them(tmp_path):
    small, large = tmp_path / "small.tsv", tmp_path / "large.tsv"
    small_segments = write_segments(small, 2)
    segments = write_segments(large, 8)
    assert (
        segments >= 3.5 * small_segments and small_segments > 2000
    )  # more than a fetch (ITEMS_FETCHED) and a write batch
    found_small, peak_small = grouping_peak(small, mqm_tsv_items)
    found_large, peak_large = grouping_peak(large, mqm_tsv_items)
    assert (found_small, found_large) == (small_segments, segments)
    assert_peak_does_not_grow("Python's peak (mqm-tsv segments grouped)", small, large, peak_small, peak_large)

    # The whole import, of the small file: its 2,500 segments cross a write batch (BATCH_SIZE) and
    # several fetches (ITEMS_FETCHED) as the large one's do, and what it holds is measured above. It
    # was the large file, traced by tracemalloc whose peak was never read: most of the test's time.
    answer = json.loads(call_command_json("import_dataset", str(small), "--dataset", "small", "--format", "mqm-tsv"))
    assert answer["items"] == small_segments
    assert Output.objects.filter(item__dataset__name="small").count() == 4 * small_segments
    assert (
        Item.objects.get(dataset__name="small", external_id=str(small_segments)).source
        == f"source {small_segments} {FILLER}"
    )


@pytest.mark.slow
@pytest.mark.django_db
def test_mqm_tsv_judgement_rows_are_grouped_without_holding_them(tmp_path):
    rated = tmp_path / "rated.tsv"
    with rated.open("w", encoding="utf-8") as file:
        file.write(HEADER + "\n")
        for seg in range(1, SEGMENTS + 1):
            for k, system in enumerate(SYSTEMS):
                file.write(_row(seg, system, "r0", 2) + "\n")  # No-error: the bare outputs
    quiet = {"stdout": StringIO(), "stderr": StringIO()}
    call_command("import_dataset", str(rated), "--dataset", "wmt", "--format", "mqm-tsv", **quiet)
    call_command(
        "create_campaign", "--dataset", "wmt", "--name", "mqm", "--protocol", "mqm", "--criteria", "mqm", **quiet
    )
    campaign = Campaign.objects.get(name="mqm")

    small, large = tmp_path / "small.tsv", tmp_path / "large.tsv"
    small_judgements = write_ratings(small, 2, tag="small")
    large_judgements = write_ratings(large, 8, tag="large")
    assert large_judgements >= 3.5 * small_judgements and small_judgements > 4000  # twice a fetch (GROUPS_FETCHED)
    judgements = partial(mqm_tsv_objects, campaign=campaign)
    found_small, peak_small = grouping_peak(small, judgements)
    found_large, peak_large = grouping_peak(large, judgements)
    assert (found_small, found_large) == (small_judgements, large_judgements)
    assert_peak_does_not_grow("Python's peak (mqm-tsv judgements grouped)", small, large, peak_small, peak_large)

    # The whole import, of the small file (it was the large one: two thirds of the test's time): every
    # judgement, with its spans. Its 4,800 judgements cross two write batches (BATCH_SIZE) and two
    # fetches (GROUPS_FETCHED), as the large file's do; what the grouping holds is measured above.
    answer = json.loads(call_command_json("import_judgements", str(small), "--campaign", "mqm", "--format", "mqm-tsv"))
    assert answer["created"] == small_judgements
    assert SpanJudgement.objects.filter(annotator__name__startswith="small-").count() == small_judgements


def call_command_json(*command: str) -> str:
    out = StringIO()
    call_command(*command, "--json", stdout=out, stderr=StringIO())
    return out.getvalue()
