"""An import's memory does not grow with the file (issue 46 item 7).

Each import runs `import_dataset` (JSONL, CSV, TSV) or `import_judgements` in its own process,
so its peak RSS is the importer's alone (the JSONL dataset's: from after start-up, see RUNNER).
Before streaming, the whole file and every record were held at once: the 80 MB file peaked some
hundreds of MB above the 20 MB one.
"""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

from annotations.models import Annotator, Dataset, Item, Output, RatingJudgement
from annotations.services.imports.datasets import STREAM_BATCH_ITEMS
from annotations.services.imports.judgements import STREAM_BATCH_LINES
from tests.memory import MB, assert_peak_does_not_grow

ROOT = Path(__file__).resolve().parents[3]

# Runs the real command and writes its peak RSS (kB on Linux) to argv[1], success or not.
# argv: the peak file, "whole" or "after-start-up", then the command and its arguments.
# "whole": the process's peak (ru_maxrss), start-up included. "after-start-up": the peak is reset
# ("5" to /proc/self/clear_refs) once the command's modules are loaded and read from VmHWM, so
# that start-up's own peak (~108 MB) does not hide what the import holds: with ru_maxrss, an
# import holding every record of a 40 MB JSONL file peaked at 111 MB against 108 MB for 10 MB.
RUNNER = """
import gc, re, resource, sys
import django
django.setup()
from django.core.management import call_command, get_commands, load_command_class
from django.core.management.base import CommandError
after_start_up = sys.argv[2] == "after-start-up"
if after_start_up:
    load_command_class(get_commands()[sys.argv[3]], sys.argv[3])
    gc.collect()
    with open("/proc/self/clear_refs", "w") as reset:
        reset.write("5")
code = 0
try:
    call_command(*sys.argv[3:], "--json")
except CommandError as exc:
    print(exc, file=sys.stderr)
    code = 1
with open(sys.argv[1], "w") as out:
    if after_start_up:
        with open("/proc/self/status") as status:
            out.write(re.search(r"VmHWM:\\s+(\\d+) kB", status.read()).group(1))
    else:
        out.write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
sys.exit(code)
"""

LINE_BYTES = 4096  # about; texts differ per item so nothing is shared between lines
FILLER = "the quick brown fox jumps over the lazy dog " * 20  # 880 chars
# The rollback tests need lines, not bytes: two batches written before the bad last line is read
# (in a third). Short texts make those lines cheap to write; what is rolled back is the same.
ROLLBACK_LINES = 2 * max(STREAM_BATCH_ITEMS, STREAM_BATCH_LINES) + 500
SHORT_FILLER = "the quick brown fox"


def write_dataset(
    path: Path, size_mb: int, *, bad_last_line: bool = False, count: int | None = None, filler: str = FILLER
) -> int:
    """A JSONL dataset of about `size_mb` MB (3 systems an item), or of `count` items with
    texts around `filler`; returns its number of lines."""
    count = size_mb * MB // LINE_BYTES if count is None else count
    with path.open("w", encoding="utf-8") as file:
        for i in range(count):
            line = {
                "item": f"it-{i}",
                "source": f"source {i} {filler}",
                "references": [f"reference {i} {filler[:400]}"],
                "outputs": {system: f"{system} {i} {filler}" for system in ("A", "B", "C")},
            }
            file.write(json.dumps(line) + "\n")
        if bad_last_line:
            file.write(json.dumps({"item": "last", "outputs": {"A": 1}}) + "\n")
    return count + (1 if bad_last_line else 0)


def import_in_subprocess(
    path: Path, dataset: str, tmp_path: Path, *, peak: str = "whole"
) -> tuple[subprocess.CompletedProcess, int]:
    """`import_dataset` of `path` into `dataset`: (the finished process, its peak RSS in bytes)."""
    return command_in_subprocess(
        tmp_path / f"{dataset}.peak", "import_dataset", str(path), "--dataset", dataset, peak=peak
    )


def command_in_subprocess(
    peak_file: Path, *command: str, peak: str = "whole"
) -> tuple[subprocess.CompletedProcess, int]:
    """A management command run alone: (the finished process, its peak RSS in bytes; `peak`: see RUNNER)."""
    db = connection.settings_dict
    env = dict(
        os.environ,
        DJANGO_SETTINGS_MODULE="workbench.settings.test",
        DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
    )
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, str(peak_file), peak, *command],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    return done, int(peak_file.read_text()) * 1024


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_import_memory_does_not_grow_with_the_file(tmp_path):
    # 10 and 40 MB (it was 20 and 80: the imports' writes were most of the test's time). Held at
    # once, the 30 MB more of the large file's text, parsed into records, raise the peak RSS after
    # start-up (RUNNER) by more than the bound (a quarter of the difference, 7.5 MB); streamed, the
    # peak stays within a few MB whatever the file's size (printed below).
    small, large = tmp_path / "small.jsonl", tmp_path / "large.jsonl"
    small_lines = write_dataset(small, 10)
    large_lines = write_dataset(large, 40)
    difference = large.stat().st_size - small.stat().st_size
    assert difference > 27 * MB

    done_small, peak_small = import_in_subprocess(small, "small", tmp_path, peak="after-start-up")
    assert done_small.returncode == 0, done_small.stderr
    done_large, peak_large = import_in_subprocess(large, "large", tmp_path, peak="after-start-up")
    assert done_large.returncode == 0, done_large.stderr

    # Everything was written, not just read.
    assert json.loads(done_large.stdout)["items"] == large_lines
    assert Item.objects.filter(dataset__name="large").count() == large_lines
    assert Output.objects.filter(item__dataset__name="small").count() == 3 * small_lines
    assert_peak_does_not_grow("peak RSS", small, large, peak_small, peak_large)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_bad_last_line_rolls_back_every_written_batch(tmp_path):
    """The import writes batches as it reads; a bad line at the very end still leaves nothing."""
    path = tmp_path / "bad_end.jsonl"
    lines = write_dataset(path, 0, count=ROLLBACK_LINES, filler=SHORT_FILLER, bad_last_line=True)
    done, _ = import_in_subprocess(path, "bad_end", tmp_path)
    assert done.returncode != 0 and done.stdout == ""
    assert done.stderr.splitlines()[0] == f"line {lines}: output of system 'A' must be a string, got int"
    assert not Dataset.objects.filter(name="bad_end").exists()
    assert Item.objects.count() == 0 and Output.objects.count() == 0


def write_csv_dataset(
    path: Path,
    size_mb: int,
    *,
    delimiter: str = ",",
    bad_last_line: bool = False,
    count: int | None = None,
    filler: str = FILLER,
) -> int:
    """A wide CSV (or TSV) dataset of about `size_mb` MB (or `count` items around `filler`), 3
    systems an item; returns its number of items."""
    count = size_mb * MB // LINE_BYTES if count is None else count
    with path.open("w", encoding="utf-8", newline="") as file:
        writer = csv.writer(file, delimiter=delimiter, lineterminator="\n")
        writer.writerow(["item", "source", "reference", "output:A", "output:B", "output:C"])
        for i in range(count):
            writer.writerow(
                [f"it-{i}", f"source {i} {filler}", f"reference {i} {filler[:400]}"]
                + [f"{system} {i} {filler}" for system in ("A", "B", "C")]
            )
        if bad_last_line:
            writer.writerow(["it-0", "a duplicate item id", "", "a", "b", "c"])
    return count


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("suffix", ["csv", "tsv"])
def test_csv_and_tsv_import_memory_does_not_grow_with_the_file(tmp_path, suffix):
    """A CSV/TSV dataset streams like a JSONL one (before: 4x the file, peak RSS far above)."""
    delimiter = "\t" if suffix == "tsv" else ","
    small, large = tmp_path / f"small.{suffix}", tmp_path / f"large.{suffix}"
    write_csv_dataset(small, 5, delimiter=delimiter)
    large_items = write_csv_dataset(large, 20, delimiter=delimiter)
    difference = large.stat().st_size - small.stat().st_size
    assert difference > 13 * MB

    done_small, peak_small = import_in_subprocess(small, "small", tmp_path)
    assert done_small.returncode == 0, done_small.stderr
    done_large, peak_large = import_in_subprocess(large, "large", tmp_path)
    assert done_large.returncode == 0, done_large.stderr

    assert json.loads(done_large.stdout)["items"] == large_items
    assert Output.objects.filter(item__dataset__name="large").count() == 3 * large_items
    assert_peak_does_not_grow(f"peak RSS ({suffix})", small, large, peak_small, peak_large)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_bad_last_csv_row_rolls_back_every_written_batch(tmp_path):
    path = tmp_path / "bad_end.csv"
    items = write_csv_dataset(path, 0, count=ROLLBACK_LINES, filler=SHORT_FILLER, bad_last_line=True)
    done, _ = import_in_subprocess(path, "bad_end", tmp_path)
    assert done.returncode != 0 and done.stdout == ""
    assert done.stderr.splitlines()[0] == f"line {items + 2}: duplicate item id 'it-0' (first on line 2)"
    assert not Dataset.objects.filter(name="bad_end").exists()
    assert Item.objects.count() == 0 and Output.objects.count() == 0


# Judgements: a likert campaign over ITEMS items x 4 systems; each file line is one judgement
# with the `provenance` object `export_dataset` writes (the output's text: not imported), as in
# an exported file moved between workbenches.
JUDGED_ITEMS, JUDGED_SYSTEMS = 1000, ("A", "B", "C", "D")


def judged_campaign(tmp_path: Path) -> None:
    path = tmp_path / "judged.jsonl"
    with path.open("w", encoding="utf-8") as file:
        for i in range(JUDGED_ITEMS):
            outputs = {system: f"{system} {i}" for system in JUDGED_SYSTEMS}
            file.write(json.dumps({"item": f"it-{i}", "source": f"source {i}", "outputs": outputs}) + "\n")
    quiet = {"stdout": open(os.devnull, "w"), "stderr": open(os.devnull, "w")}
    call_command("import_dataset", str(path), "--dataset", "judged", **quiet)
    call_command(
        "create_campaign", "--dataset", "judged", "--name", "judged", "--protocol", "likert",
        "--criteria", "adequacy", "--scale", "1-5", **quiet,
    )  # fmt: skip


def write_judgements(
    path: Path,
    size_mb: int,
    *,
    tag: str,
    bad_last_line: bool = False,
    count: int | None = None,
    filler: str = FILLER * 2,  # 1,760 chars
) -> int:
    """About `size_mb` MB of likert judgements (or `count` of them, with `filler` as their provenance)
    by annotators `tag`-N (each judges every output once)."""
    count = size_mb * MB // 2048 if count is None else count
    with path.open("w", encoding="utf-8") as file:
        for n in range(count):
            annotator, rest = divmod(n, JUDGED_ITEMS * len(JUDGED_SYSTEMS))
            item, system = divmod(rest, len(JUDGED_SYSTEMS))
            line = {
                "item": f"it-{item}",
                "system": JUDGED_SYSTEMS[system],
                "annotator": f"{tag}-{annotator}",
                "criterion": "adequacy",
                "score": n % 5 + 1,
                "provenance": {"output": f"{n} {filler}"},
            }
            file.write(json.dumps(line) + "\n")
        if bad_last_line:
            file.write(json.dumps({"item": "it-0", "system": "A", "annotator": "x", "criterion": "adequacy"}) + "\n")
    return count + (1 if bad_last_line else 0)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_judgement_import_memory_does_not_grow_with_the_file(tmp_path):
    """`import_judgements` streams: the file's lines and texts are never held all at once, only
    small keys per judgement (its unit, for duplicates across the whole file)."""
    judged_campaign(tmp_path)
    small, large = tmp_path / "small.jsonl", tmp_path / "large.jsonl"
    write_judgements(small, 10, tag="small")
    large_lines = write_judgements(large, 40, tag="large")
    difference = large.stat().st_size - small.stat().st_size
    assert difference > 25 * MB

    done_small, peak_small = command_in_subprocess(
        tmp_path / "small.peak", "import_judgements", str(small), "--campaign", "judged"
    )
    assert done_small.returncode == 0, done_small.stderr
    done_large, peak_large = command_in_subprocess(
        tmp_path / "large.peak", "import_judgements", str(large), "--campaign", "judged"
    )
    assert done_large.returncode == 0, done_large.stderr
    assert json.loads(done_large.stdout)["created"] == large_lines
    assert RatingJudgement.objects.filter(annotator__name__startswith="large-").count() == large_lines
    assert_peak_does_not_grow("peak RSS (judgements)", small, large, peak_small, peak_large)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_bad_last_judgement_line_rolls_back_every_written_batch(tmp_path):
    """Batches of judgements (and their new annotators) are written as the file is read; a bad
    line at its very end leaves nothing."""
    judged_campaign(tmp_path)
    path = tmp_path / "bad_end.jsonl"
    lines = write_judgements(path, 0, tag="bad", bad_last_line=True, count=ROLLBACK_LINES, filler=SHORT_FILLER)
    done, _ = command_in_subprocess(tmp_path / "bad.peak", "import_judgements", str(path), "--campaign", "judged")
    assert done.returncode != 0 and done.stdout == ""
    assert done.stderr.splitlines()[0] == f"line {lines}: missing field 'score' for a likert campaign"
    assert RatingJudgement.objects.count() == 0
    assert not Annotator.objects.filter(name__startswith="bad-").exists()
