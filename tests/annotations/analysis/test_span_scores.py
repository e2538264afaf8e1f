"""WMT25's severity-weighted span F1 and factgenie's span F1 (issue 42 item 2) against
transcriptions of their authors' code on generated spans, and minED's error positions as spans.

References, transcribed below as they are written there (only the I/O around them left out):
* wmt-conference/wmt25-mteval, scripts/scoring/task2/scoring_esa.py at commit
  74e123c0fd64391936d0aa0ceace87befbfa6198: `get_counts`, `prec_rec_f1`, `get_char_f1`.
* ufal/factgenie (kasnerz/factgenie), factgenie/iaa/f1.py at commit
  2c9accc328682c85e5f68caa41867de2e6c45bbc: `_process_example`, `_process_overlaps_for_example`,
  `_calculate_results` (spans of one example in the order factgenie's span index lists them).
"""

import numpy as np
import pytest

from annotations.analysis import span_eval as se

# ---- WMT25 scoring_esa.py (transcription) ---------------------------------------------


def ref_get_counts(ex, len_hyp):
    major = np.zeros(len_hyp)
    minor = np.zeros(len_hyp)
    for er in ex:
        if er["start"] == "missing":
            continue
        if er["severity"] == "undecided":
            continue
        if er["severity"] in ["major", "critical"]:
            counts = major
        elif er["severity"] == "minor":
            counts = minor
        else:
            raise ValueError(f"Unknown severity: {er['severity']}")
        counts[int(er["start"]) : int(er["end"])] += 1
    return major, minor


def ref_prec_rec_f1(both_count, gold_count, pred_count):
    p = both_count / pred_count if pred_count else 1.0
    r = both_count / gold_count if gold_count else 1.0
    f1 = (2 * p * r) / (p + r) if p + r else 0.0
    return p, r, f1


def ref_get_char_f1(len_hypothesis, errors_gold, errors_pred, partial_credit=0.5):
    tp = 0
    total_gold, total_pred = 0, 0
    for x, y, z in zip(errors_gold, errors_pred, len_hypothesis):
        gold_major_counts, gold_minor_counts = ref_get_counts(x, z)
        pred_major_counts, pred_minor_counts = ref_get_counts(y, z)
        total_gold += gold_major_counts.sum() + gold_minor_counts.sum()
        total_pred += pred_major_counts.sum() + pred_minor_counts.sum()
        for c_gold_maj, c_pred_maj, c_gold_min, c_pred_min in zip(
            gold_major_counts, pred_major_counts, gold_minor_counts, pred_minor_counts
        ):
            tp += min(c_gold_maj, c_pred_maj)
            tp += min(c_gold_min, c_pred_min)
            c_gold_unmatched = max(0, c_gold_maj - c_pred_maj) + max(0, c_gold_min - c_pred_min)
            c_pred_unmatched = max(0, c_pred_maj - c_gold_maj) + max(0, c_pred_min - c_gold_min)
            tp += min(c_gold_unmatched, c_pred_unmatched) * partial_credit
    return ref_prec_rec_f1(tp, total_gold, total_pred)


# ---- factgenie iaa/f1.py (transcription) ----------------------------------------------


def ref_factgenie(examples, match_mode="hard"):
    """examples: (ref spans, hyp spans) with spans as dicts annotation_start/_end/_type."""
    metrics = {"ref_length": 0, "hyp_length": 0, "overlap_length": 0}
    for example_ref_spans, example_hyp_spans in examples:
        if example_ref_spans and example_hyp_spans:
            matched_pairs = set()
            for ref_row in example_ref_spans:
                metrics["ref_length"] += ref_row["annotation_end"] - ref_row["annotation_start"]
            for hyp_row in example_hyp_spans:
                hyp_start, hyp_end = hyp_row["annotation_start"], hyp_row["annotation_end"]
                hyp_type = hyp_row["annotation_type"]
                metrics["hyp_length"] += hyp_end - hyp_start
                for hyp_pos in range(hyp_start, hyp_end):
                    for ref_id, ref_row in enumerate(example_ref_spans):
                        ref_start, ref_end = ref_row["annotation_start"], ref_row["annotation_end"]
                        ref_type = ref_row["annotation_type"]
                        if ref_start <= hyp_pos < ref_end:
                            if match_mode == "hard" and hyp_type != ref_type:
                                continue
                            if (hyp_pos, ref_id) not in matched_pairs:
                                matched_pairs.add((hyp_pos, ref_id))
                                metrics["overlap_length"] += 1
                                break
    precision = metrics["overlap_length"] / metrics["hyp_length"] if metrics["hyp_length"] > 0 else 0
    recall = metrics["overlap_length"] / metrics["ref_length"] if metrics["ref_length"] > 0 else 0
    f1 = 2 * precision * recall / (precision + recall) if (precision + recall) > 0 else 0
    metrics.update({"precision": round(precision, 3), "recall": round(recall, 3), "f1": round(f1, 3)})
    return metrics


# ---- generated spans --------------------------------------------------------------------


def _spans(rng, n, severities=("minor", "major", "critical")):
    out = []
    for _ in range(int(rng.integers(0, 4))):
        if rng.random() < 0.1:
            out.append({"missing": True, "severity": "minor"})
            continue
        a = int(rng.integers(0, n))
        out.append({"start": a, "end": min(n, a + int(rng.integers(1, 12))), "severity": str(rng.choice(severities))})
    return out


def _wmt_format(spans):
    return [{"start": "missing", "end": "missing", "severity": s["severity"]} if s.get("missing") else s for s in spans]


@pytest.mark.parametrize("seed", range(5))
def test_severity_weighted_f1_equals_wmt25_scorer(seed):
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(40):
        n = int(rng.integers(5, 80))
        rows.append((n, _spans(rng, n, ("minor", "major", "critical", "undecided")), _spans(rng, n)))
    p, r, f1 = ref_get_char_f1(
        [n for n, _, _ in rows], [_wmt_format(g) for _, g, _ in rows], [_wmt_format(q) for _, _, q in rows]
    )
    got = se.wmt25_f1(rows)
    assert (got["precision"], got["recall"], got["f1"]) == pytest.approx((p, r, f1), abs=1e-12)
    assert 0 < got["f1"] < 1  # generated spans overlap in part: neither a trivial 0 nor 1


def test_severity_weighted_f1_edge_cases_as_the_scorer():
    # Nothing marked on either side: the scorer's P = R = 1 (its empty-denominator convention).
    assert se.wmt25_f1([(10, [], [])])["f1"] == ref_get_char_f1([10], [[]], [[]])[2] == 1.0
    # Right characters, wrong severity: half credit.
    gold, pred = [{"start": 0, "end": 4, "severity": "major"}], [{"start": 0, "end": 4, "severity": "minor"}]
    assert se.wmt25_f1([(10, gold, pred)])["f1"] == pytest.approx(ref_get_char_f1([10], [gold], [pred])[2]) == 0.5


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("match", ["hard", "soft"])
def test_span_f1_equals_factgenie(seed, match):
    rng = np.random.default_rng(100 + seed)
    pairs = []
    for _ in range(40):
        n = int(rng.integers(5, 60))
        # Several annotators' spans make the reference, overlapping ones counted twice.
        pairs.append(([s for _ in range(int(rng.integers(1, 3))) for s in _spans(rng, n)], _spans(rng, n)))

    def fg(spans):
        return [
            {"annotation_start": s["start"], "annotation_end": s["end"], "annotation_type": s["severity"]}
            for s in spans
            if not s.get("missing")
        ]

    ref = ref_factgenie([(fg(r), fg(h)) for r, h in pairs], match_mode=match)
    got = se.factgenie_f1(pairs, match=match)
    for key in ("overlap_length", "hyp_length", "ref_length"):
        assert got[key] == ref[key]
    for key in ("precision", "recall", "f1"):
        assert round(got[key], 3) == ref[key]
    assert ref["overlap_length"] > 0


def test_mined_error_positions_as_character_spans():
    from metrics.scorers import get_metric

    hyp, ref = "the cat sat on mat", "the cat sat on the mat"
    word = get_metric("minwed", metric="wer").score([hyp, "a  big dog barks"], [[ref], ["a dog barks"]])
    assert se.mined_spans(word[0].extra, hyp) == [
        {"missing": True, "severity": "major", "type": "deletion"}  # "the" is missing: no position
    ]
    spans = se.mined_spans(word[1].extra, "a  big dog barks")
    assert [("a  big dog barks"[s["start"] : s["end"]], s["type"]) for s in spans] == [("big", "insertion")]
    char = get_metric("mincer", metric="cer").score([" kat"], [["cat"]])
    (span,) = se.mined_spans(char[0].extra, " kat")
    assert " kat"[span["start"] : span["end"]] == "k" and span["type"] == "substitution"
    assert se.predicted_spans(word[1].extra, "a  big dog barks") == spans
    assert se.predicted_spans({"spans": [{"start": 0, "end": 1}]}, "x") == [{"start": 0, "end": 1}]
    assert se.predicted_spans({"k": 1}, "x") is None
