"""Memory of the analysis pages' first computation (cache empty), on a generated campaign."""

import json

import numpy as np
import pytest
from django.core.cache import cache
from django.core.management import call_command

from annotations.analysis import pages
from annotations.models import Campaign
from tests.annotations.analysis.metric_runs import score_dataset
from tests.memory import python_peak

ITEMS, SYSTEMS, ANNOTATORS = 60, 4, 3


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.fixture
def big_campaign(db, tmp_path):
    rng = np.random.default_rng(0)
    words = "the cat sat on a mat with some red hats today while dogs ran far".split()
    rows, judgements = [], []
    for i in range(ITEMS):
        ref = " ".join(rng.choice(words, 12))
        outs = {f"s{k}": " ".join(rng.choice(words, 12)) for k in range(SYSTEMS)}
        rows.append({"item": f"i{i}", "source": ref, "references": [ref], "outputs": outs})
        for k in range(SYSTEMS):
            for a in range(ANNOTATORS):
                judgements.append(
                    {"item": f"i{i}", "system": f"s{k}", "annotator": f"a{a}", "criterion": "adequacy",
                     "score": float(rng.integers(1, 6))}
                )  # fmt: skip
    quiet = {"stdout": open("/dev/null", "w"), "stderr": open("/dev/null", "w")}
    call_command("import_dataset", _write(tmp_path / "d.jsonl", rows), "--dataset", "big", "--project", "big", **quiet)
    call_command(
        "create_campaign", "--dataset", "big", "--name", "big", "--protocol", "likert", "--criteria", "adequacy",
        "--scale", "1-5", **quiet,
    )  # fmt: skip
    call_command("import_judgements", _write(tmp_path / "j.jsonl", judgements), "--campaign", "big", **quiet)
    for metric in ("chrf", "bleu", "wer"):
        score_dataset("big", metric)
    cache.clear()
    return Campaign.objects.get(name="big")


def test_meta_evaluation_reads_each_judgement_once(big_campaign, monkeypatch):
    """The page's first computation (cache empty) holds the campaign's judgements once: its SPA
    clusters used to read them all again while the page's own copy was held (two copies of
    60,000 rows, a worker growing from 101 to 666 MB in issue 46)."""
    from annotations.protocols.rows import JudgementRow
    from annotations.selectors import judgements

    read = []

    def counted(*values):
        read.append(1)
        return JudgementRow(*values)

    monkeypatch.setattr(judgements, "JudgementRow", counted)
    cache.clear()
    data = pages.meta_table(big_campaign)
    complete = ITEMS * SYSTEMS * ANNOTATORS
    assert data["clusters"]["adequacy"], "the SPA clusters were computed"  # the part that read them again
    assert data["used"]["judgements"] == complete
    assert len(read) == complete


def test_quality_page_agreement_reads_each_judgement_once_when_nobody_is_excluded(big_campaign, monkeypatch):
    """The quality page's agreement, everyone's and the included annotators': with nobody excluded
    they are the same rows, read once (they were read twice, 9.1 s at 60,000 judgements)."""
    from annotations.protocols.rows import JudgementRow
    from annotations.quality.selectors import campaign_agreement
    from annotations.selectors import judgements

    read = []

    def counted(*values):
        read.append(1)
        return JudgementRow(*values)

    monkeypatch.setattr(judgements, "JudgementRow", counted)
    cache.clear()
    figures = campaign_agreement(campaign=big_campaign)["adequacy"]
    assert len(read) == ITEMS * SYSTEMS * ANNOTATORS
    assert figures["included"]["n_judgements"] == figures["all"]["n_judgements"] == len(read)
    assert figures["included"]["value"] == figures["all"]["value"]


def test_acc23_holds_a_few_bytes_per_pair():
    """acc23 over every pair of 1,500 outputs (1.1 million pairs; the meta-evaluation page takes up
    to 5 million): it used to hold ~92 bytes per pair at its peak (i, j, both differences, four
    masks, the changes, their copies), 460 MB at 5 million; now the kept pairs' difference and
    change, worked out block by block. Its value is unchanged: tests/annotations/analysis/
    test_acc23_pairs.py checks it against mt-metrics-eval."""
    from annotations.analysis import correlation as co

    rng = np.random.default_rng(0)
    n = 1500
    human, metric = rng.integers(1, 6, n).astype(float), np.round(rng.random(n), 3)
    pairs = n * (n - 1) // 2
    with python_peak() as peak:
        co.acc23([(human, metric)])
    assert peak.bytes / pairs < 40, f"{peak.bytes / pairs:.1f} bytes per pair"


def test_sampled_acc23_pairs_are_made_a_block_at_a_time():
    """acc23 over more than MAX_PAIRS pairs samples them (a segment-level column of the
    meta-evaluation page at 60,000 judgements: 20,000 outputs, 200M pairs). The sampled indexes
    were turned into pairs all at once, some ten arrays of 5M entries: the page's worker grew by
    440 MB (issue 46). The same pairs now come a block at a time: Python's peak stays within 32
    bytes a kept pair (it was 236 MB, about 50), with the same value."""
    from annotations.analysis import correlation as co

    rng = np.random.default_rng(1)
    n = 20_000
    human = rng.integers(1, 6, n).astype(float)[None, :]
    metric = np.round(rng.normal(50, 10, n), 1)[None, :]
    with python_peak() as peak:
        result = co.correlate(human, metric, "acc23")
    assert result["sample_rate"] < 1
    assert peak.bytes < 32 * co.MAX_PAIRS, f"acc23 peaked at {peak.bytes / 2**20:.0f} MB"

    # The blocks are the pairs `_pairs` draws with the same seed, in the same order.
    rate = 0.3
    i, j = co._pairs(3000, rate, np.random.default_rng(5))
    count, blocks = co._pair_blocks(3000, rate, np.random.default_rng(5))
    blocks = list(blocks)
    assert count == len(i) and len(blocks) > 1
    assert np.array_equal(np.concatenate([b[0] for b in blocks]), i)
    assert np.array_equal(np.concatenate([b[1] for b in blocks]), j)
