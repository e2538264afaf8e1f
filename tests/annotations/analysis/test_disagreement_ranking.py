"""The disagreement ranking a worker stores for a large campaign (issue 45): read like the list of
{"item", "annotator_disagreement", "metric_disagreement"} rows it replaces, stored in bytes that
grow by 24 a ranked item (a list of dicts took 2.4 MB at 100,000 items, and every view of the page
0.3-0.7 s to fetch and unpickle; bench_pages at 1M). Pinned by bytes and by unpickled objects."""

import gc
import pickle

from annotations.analysis.pages import Ranked


def _rows(n: int) -> list[dict]:
    return [
        {
            "item": 10_000_000 + k,
            "annotator_disagreement": None if k % 7 == 0 else 1 / (k + 3),
            "metric_disagreement": None if k % 2 else k / 3,
        }
        for k in range(n)
    ]


def test_the_ranking_reads_like_its_rows():
    rows = _rows(1000)
    ranked = pickle.loads(pickle.dumps(Ranked(rows)))
    assert len(ranked) == 1000
    assert list(ranked) == rows  # the same floats (doubles), None where none was measured
    assert ranked[:30] == rows[:30] and ranked[995:2000] == rows[995:] and ranked[-1] == rows[-1]
    assert ranked[5] == rows[5] and Ranked([])[:30] == []


def test_the_stored_ranking_is_24_bytes_an_item_and_unpickles_without_a_row_object():
    n = 20_000
    blob = pickle.dumps(Ranked(_rows(n)), protocol=pickle.HIGHEST_PROTOCOL)
    assert len(blob) <= 24 * n + 1000
    # Unpickling makes the three arrays, not an object per item (what made the page slow).
    gc.collect()
    before = len(gc.get_objects())
    ranked = pickle.loads(blob)
    assert len(gc.get_objects()) - before < 100
    assert len(ranked) == n
