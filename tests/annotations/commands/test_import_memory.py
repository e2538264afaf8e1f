"""A dataset import's memory does not grow with the file (issue 46 item 7).

Each import runs `import_dataset` in its own process, so its peak RSS
(`ru_maxrss`) is the importer's alone. Before streaming, the whole file and
every record were held at once: the 80 MB file peaked some hundreds of MB
above the 20 MB one.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from annotations.models import Dataset, Item, Output

ROOT = Path(__file__).resolve().parents[3]
MB = 1024 * 1024

# Runs the real command and writes its own peak RSS (kB on Linux) to argv[3], success or not.
RUNNER = """
import resource, sys
import django
django.setup()
from django.core.management import call_command
from django.core.management.base import CommandError
code = 0
try:
    call_command("import_dataset", sys.argv[1], "--dataset", sys.argv[2], "--json")
except CommandError as exc:
    print(exc, file=sys.stderr)
    code = 1
with open(sys.argv[3], "w") as out:
    out.write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
sys.exit(code)
"""

LINE_BYTES = 4096  # about; texts differ per item so nothing is shared between lines


def write_dataset(path: Path, size_mb: int, *, bad_last_line: bool = False) -> int:
    """A JSONL dataset of about `size_mb` MB (3 systems an item); returns its number of lines."""
    filler = "the quick brown fox jumps over the lazy dog " * 20  # 880 chars
    count = size_mb * MB // LINE_BYTES
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


def import_in_subprocess(path: Path, dataset: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess, int]:
    """(the finished process, its peak RSS in bytes)."""
    db = connection.settings_dict
    env = dict(
        os.environ,
        DJANGO_SETTINGS_MODULE="workbench.settings.test",
        DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
    )
    peak_file = tmp_path / f"{dataset}.peak"
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, str(path), dataset, str(peak_file)],
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
    small, large = tmp_path / "small.jsonl", tmp_path / "large.jsonl"
    small_lines = write_dataset(small, 20)
    large_lines = write_dataset(large, 80)
    difference = large.stat().st_size - small.stat().st_size
    assert difference > 55 * MB

    done_small, peak_small = import_in_subprocess(small, "small", tmp_path)
    assert done_small.returncode == 0, done_small.stderr
    done_large, peak_large = import_in_subprocess(large, "large", tmp_path)
    assert done_large.returncode == 0, done_large.stderr

    # Everything was written, not just read.
    assert json.loads(done_large.stdout)["items"] == large_lines
    assert Item.objects.filter(dataset__name="large").count() == large_lines
    assert Output.objects.filter(item__dataset__name="small").count() == 3 * small_lines
    growth = peak_large - peak_small
    print(f"peak RSS: 20 MB file {peak_small / MB:.0f} MB, 80 MB file {peak_large / MB:.0f} MB")
    assert growth < 0.25 * difference, (
        f"peak RSS grew by {growth / MB:.0f} MB for {difference / MB:.0f} MB more file "
        f"({peak_small / MB:.0f} -> {peak_large / MB:.0f} MB)"
    )


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_bad_last_line_rolls_back_every_written_batch(tmp_path):
    """The import writes batches as it reads; a bad line at the very end still leaves nothing."""
    path = tmp_path / "bad_end.jsonl"
    lines = write_dataset(path, 20, bad_last_line=True)
    done, _ = import_in_subprocess(path, "bad_end", tmp_path)
    assert done.returncode != 0 and done.stdout == ""
    assert done.stderr.splitlines()[0] == f"line {lines}: output of system 'A' must be a string, got int"
    assert not Dataset.objects.filter(name="bad_end").exists()
    assert Item.objects.count() == 0 and Output.objects.count() == 0
