"""Each protocol's export pieces (annotations.protocols, "# ---- export" blocks), on hand-built rows:
the judgements.jsonl fields are the judgement import format of ARCHITECTURE.md, and the aggregated
human scores and consensus follow their published definitions (statistics' mean, stdev and pstdev
as the reference for the arithmetic)."""

import statistics

import pytest

from annotations import protocols
from annotations.protocols.rows import JudgementRow

# The judgement import format (ARCHITECTURE.md, "Judgement JSONL"), keys in the documented order.
IMPORT_KEYS = {
    "likert": ["system", "annotator", "criterion", "score", "rank"],
    "rankme": ["system", "annotator", "criterion", "score", "rank"],
    "esa": ["system", "annotator", "criterion", "score", "spans"],
    "cesa": ["system", "annotator", "criterion", "score", "spans"],
    "mqm": ["system", "annotator", "criterion", "score", "spans"],  # score: the computed MQM score
    "pairwise": ["annotator", "criterion", "a", "b", "winner"],
    "bws": ["annotator", "criterion", "outputs", "best", "worst"],
    # score: the computed HTER; rating: null where the criterion has no scale
    "post-edit": ["system", "annotator", "criterion", "score", "post_edit", "rating"],
}
NAMES = {1: "s1", 2: "s2", 3: "s3", 4: "s4"}
TEXTS = {1: "one", 2: "two", 3: "three", 4: "four"}


def _row(annotator=1, criterion="q", **answer):
    row = JudgementRow(
        id=0,
        annotator_id=annotator,
        item_id=0,
        criterion=criterion,
        status="complete",
        origin="import",
        time_spent_ms=None,
        shown_order=[],
        created_at=None,
    )
    for key, value in answer.items():
        setattr(row, key, value)
    return row


SAMPLE = {
    "likert": _row(output_id=2, score=4.0, rank=None),
    "rankme": _row(output_id=2, score=120.0, rank=1),
    "esa": _row(output_id=2, score=40.0, spans=[{"start": 0, "end": 2, "severity": "major"}]),
    "cesa": _row(output_id=2, score=40.0, spans=[{"start": 0, "end": 2, "severity": "major"}]),
    "mqm": _row(output_id=2, score=-5.0, spans=[{"start": 0, "end": 2, "severity": "major", "category": "Other"}]),
    "pairwise": _row(a_id=1, b_id=3, winner="a"),
    "bws": _row(outputs=[1, 2, 3, 4], best_id=4, worst_id=2),
    "post-edit": _row(output_id=2, score=50.0, post_edit="too", rating=None),
}


def _fields(protocol, row, shown):
    return protocol.export_fields(row, name=NAMES.get, annotator="w", text=TEXTS.get, shown=shown)


@pytest.mark.parametrize("name", protocols.names())
def test_every_protocol_writes_the_import_format(name):
    protocol = protocols.get(name)
    row = SAMPLE[name]
    fields, texts, shown = _fields(protocol, row, row.output_ids())
    assert list(fields) == IMPORT_KEYS[name]
    assert fields["annotator"] == "w" and fields["criterion"] == "q"
    assert [NAMES[o] for o in shown] == [NAMES[o] for o in row.output_ids()]
    assert list(texts.values())[0] in (TEXTS[row.output_ids()[0]], [TEXTS[o] for o in shown])


def test_pairwise_row_names_the_output_shown_first_a():
    # Stored canonically (a = lower id); shown b first: the row swaps sides and the winner with them.
    fields, texts, shown = _fields(protocols.get("pairwise"), _row(a_id=1, b_id=3, winner="a"), [3, 1])
    assert (fields["a"], fields["b"], fields["winner"]) == ("s3", "s1", "b")
    assert texts == {"output_texts": ["three", "one"]} and shown == [3, 1]
    fields, _, _ = _fields(protocols.get("pairwise"), _row(a_id=1, b_id=3, winner="tie"), [3, 1])
    assert fields["winner"] == "tie"


def test_best_worst_row_keeps_the_shown_order_when_it_is_the_tuple():
    protocol = protocols.get("bws")
    row = _row(outputs=[1, 2, 3, 4], best_id=4, worst_id=2)
    assert _fields(protocol, row, [3, 1, 4, 2])[0]["outputs"] == ["s3", "s1", "s4", "s2"]
    # A shown order that is not the tuple (outputs of a left-out system dropped): the tuple's own order.
    assert _fields(protocol, row, [3, 1])[0]["outputs"] == ["s1", "s2", "s3", "s4"]


@pytest.mark.parametrize("name", protocols.names())
def test_stats_have_the_same_keys_for_every_output(name):
    protocol = protocols.get(name)
    stats = protocol.output_stats(
        [SAMPLE[name]], output_ids=[1, 2, 3, 4, 99], criteria=["q", "other"], scales={"q": (0, 100)}
    )
    for per_criterion in stats.values():
        assert list(per_criterion) == ["q", "other"]
        for entry in per_criterion.values():
            assert tuple(entry) == protocol.stat_keys
    assert stats[99]["q"] == protocol.empty_stats()
    assert all(stats[99]["q"][key] == 0 for key in protocol.stat_counts)


def test_rating_stats_and_consensus():
    scores = [2.0, 4.0, 5.0]
    rows = [_row(annotator=a, output_id=1, score=s) for a, s in enumerate(scores)]
    entry = protocols.get("likert").output_stats(rows, output_ids=[1], criteria=["q"], scales={"q": (1, 5)})[1]["q"]
    assert entry["n"] == 3
    assert entry["mean"] == pytest.approx(statistics.mean(scores))
    assert entry["sd"] == pytest.approx(statistics.stdev(scores))
    assert entry["consensus"] == pytest.approx(1 - statistics.pstdev(scores) / 2)
    # One rating: no spread to measure; unbounded magnitudes (RankME without a scale): no consensus.
    single = protocols.get("likert").output_stats(rows[:1], output_ids=[1], criteria=["q"], scales={"q": (1, 5)})
    assert single[1]["q"]["sd"] is None and single[1]["q"]["consensus"] is None
    assert protocols.get("rankme").unit_consensus([10.0, 200.0], (None, None)) is None
    # Half at each end of the scale: 0; everyone alike: 1.
    assert protocols.get("likert").unit_consensus([1, 5, 1, 5], (1, 5)) == 0
    assert protocols.get("esa").unit_consensus([70, 70], (0, 100)) == 1


def test_esa_stats_count_spans_by_severity_and_missing_markers():
    rows = [
        _row(
            annotator=1,
            output_id=1,
            score=40.0,
            spans=[{"start": 0, "end": 2, "severity": "major"}, {"missing": True, "severity": "minor"}],
        ),
        _row(
            annotator=2,
            output_id=1,
            score=60.0,
            spans=[{"start": 3, "end": 5, "severity": "critical"}, {"start": 0, "end": 1, "severity": "major"}],
        ),
    ]
    entry = protocols.get("esa").output_stats(rows, output_ids=[1], criteria=["q"], scales={"q": (0, 100)})[1]["q"]
    assert (entry["minor"], entry["major"], entry["critical"], entry["missing"]) == (0, 2, 1, 1)
    assert entry["mean"] == 50 and entry["consensus"] == pytest.approx(1 - statistics.pstdev([40, 60]) / 50)


def test_pairwise_stats_and_consensus():
    rows = [
        _row(annotator=1, a_id=1, b_id=2, winner="a"),
        _row(annotator=2, a_id=1, b_id=2, winner="tie"),
        _row(annotator=3, a_id=1, b_id=3, winner="b"),
    ]
    stats = protocols.get("pairwise").output_stats(rows, output_ids=[1, 2, 3], criteria=["q"], scales={})
    assert stats[1]["q"] == {"n": 3, "wins": 1, "losses": 1, "ties": 1, "win_rate": 1.5 / 3}
    assert stats[2]["q"] == {"n": 2, "wins": 0, "losses": 1, "ties": 1, "win_rate": 0.5 / 2}
    assert stats[3]["q"] == {"n": 1, "wins": 1, "losses": 0, "ties": 0, "win_rate": 1.0}
    assert protocols.get("pairwise").unit_consensus(["a", "a", "tie", "b"]) == 0.5
    assert protocols.get("pairwise").unit_consensus(["a"]) is None


def test_best_worst_stats_and_consensus():
    rows = [
        _row(annotator=1, outputs=[1, 2, 3], best_id=1, worst_id=3),
        _row(annotator=2, outputs=[1, 2, 3], best_id=2, worst_id=3),
    ]
    stats = protocols.get("bws").output_stats(rows, output_ids=[1, 2, 3], criteria=["q"], scales={})
    # Orme (2009): (times best - times worst) / times shown.
    assert [stats[o]["q"]["score"] for o in (1, 2, 3)] == [0.5, 0.5, -1.0]
    assert stats[3]["q"] == {"n": 2, "best": 0, "worst": 2, "score": -1.0}
    # Majority share of best (1/2) and of worst (2/2), averaged.
    assert protocols.get("bws").unit_consensus([(1, 3), (2, 3)]) == 0.75


def test_card_design_lines_name_the_protocols_settings():
    # One line per option the protocol declares (campaign.json's `options`), then what its design means.
    config = {"options": {"anchor_value": 100.0, "tuple_size": 4, "pair_rounds": 0, "severities": ["minor", "major"]}}
    assert protocols.get("likert").card_design(config, str) == []
    assert protocols.get("rankme").card_design(config, str) == ["- Anchor value: 100.0", "- Outputs per screen: 4"]
    assert protocols.get("bws").card_design(config, str) == ["- Best-worst tuple size: 4"]
    assert protocols.get("pairwise").card_design(config, str) == ["- Pairs: every pair of outputs of an item"]
    assert protocols.get("esa").card_design(config, str) == ["- Error severities: minor, major"]
    assert protocols.get("cesa").card_design(config, str) == [
        "- Error severities: minor, major",
        "- Outputs per screen: 4",
        "- Contrastive ESA: 4 outputs of one input per screen, each with its error spans and 0-100 score; "
        "pairwise figures derived from the scores of one screen",
    ]
