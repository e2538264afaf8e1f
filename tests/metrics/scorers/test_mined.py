"""minED (seed 004): alignment against jiwer, hand-checked k and severities,
the coherent shortcut against the full search, the cap, and batching."""

from __future__ import annotations

import csv
import itertools
from typing import ClassVar

import jiwer
import pytest

from metrics.scorers import OptionError, get_metric, registry
from metrics.scorers.base import Metric, SegmentResult
from metrics.scorers.mined import align

# ref: nous allons voir le match ce soir à la maison (10 words)
# hyp: nous allons boire le match euh ce soir à maison
# Unique alignment: voir->boire (substitution, hyp/ref position 2), "euh" inserted
# (hyp position 5), "la" deleted (ref position 8, belongs before hyp position 9).
# Three matched words separate the insertion from the deletion, so no
# equal-cost alignment replaces them by substitutions.
REF = "nous allons voir le match ce soir à la maison"
HYP = "nous allons boire le match euh ce soir à maison"


class ToyMaxMetric(Metric):
    """Deterministic, deliberately *incoherent* lower-is-better metric: the
    heaviest reference word missing from the hypothesis (voir 0.5, la 0.3,
    others 0.1) plus 0.01 per hypothesis word absent from the reference.
    A max does not add up, so one correction's gain depends on the others."""

    name: ClassVar[str] = "toy-max"
    higher_is_better: ClassVar[bool] = False
    WEIGHTS: ClassVar[dict[str, float]] = {"voir": 0.5, "la": 0.3}
    calls: ClassVar[list[int]] = []

    def score(self, hyps, refs=None, srcs=None, data=None):
        type(self).calls.append(len(hyps))
        out = []
        for hyp, (ref, *_) in zip(hyps, refs):
            h, r = set(hyp.split()), set(ref.split())
            missing = max((self.WEIGHTS.get(w, 0.1) for w in r - h), default=0.0)
            out.append(SegmentResult(missing + 0.01 * len(h - r)))
        return out


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(registry._REGISTRY, "toy-max", f"{__name__}:ToyMaxMetric")
    ToyMaxMetric.calls = []
    return ToyMaxMetric


def test_alignment_positions_by_hand():
    a = align(REF, HYP, "word")
    got = [(e.type, e.position, e.ref_position, e.ref, e.hyp) for e in a.errors]
    assert got == [
        ("substitution", 2, 2, "voir", "boire"),
        ("insertion", 5, 5, None, "euh"),
        ("deletion", 9, 8, "la", None),
    ]
    assert a.apply() == HYP
    assert a.apply([0, 1, 2]) == REF
    assert a.apply([2]) == "nous allons boire le match euh ce soir à la maison"


@pytest.mark.parametrize(
    "ref, hyp",
    [
        (REF, HYP),
        ("le le début de centres nucléaires militaires", "le le le début de centres nuclé militaires"),
        ("dimanche soir dufreigne philippe", "dimanche soir' une ça"),  # ties: several equal-cost alignments
        ("a b c", ""),
        ("a b", "x y z w"),
        ("the cat sat on the mat", "a cat sat down on mat today"),
    ],
)
def test_alignment_counts_match_jiwer(ref, hyp):
    for unit, process in (("word", jiwer.process_words), ("char", jiwer.process_characters)):
        a = align(ref, hyp, unit)
        types = [e.type for e in a.errors]
        expected = process(ref, hyp)
        assert (types.count("substitution"), types.count("deletion"), types.count("insertion")) == (
            expected.substitutions,
            expected.deletions,
            expected.insertions,
        ), unit
        # Positions point at the tokens they name, and correcting everything gives the reference.
        for e in a.errors:
            if e.hyp is not None:
                assert a.hyp_tokens[e.position] == e.hyp
            if e.ref is not None:
                assert a.ref_tokens[e.ref_position] == e.ref
        assert a.apply(range(len(a.errors))) == a.reference


def test_wer_hand_checked_shortcut_and_full_search_agree():
    # WER = 3/10 = 0.3. Under 0.15 needs at most 1 error left (1/10), so k = 2;
    # each correction removes 1/10 of WER: severity 0.1 for each error.
    for coherent in ("auto", "no"):
        [seg] = get_metric("minwed", metric="wer", threshold=0.15, coherent=coherent).score([HYP], [[REF]])
        assert seg.score == 2.0
        assert seg.extra["E"] == 3 and seg.extra["capped"] is False
        assert seg.extra["metric_score"] == pytest.approx(jiwer.wer(REF, HYP))
        assert [e["severity"] for e in seg.extra["errors"]] == pytest.approx([0.1, 0.1, 0.1])
        assert [(e["type"], e["position"]) for e in seg.extra["errors"]] == [
            ("substitution", 2),
            ("insertion", 5),
            ("deletion", 9),
        ]
        assert len(seg.extra["corrected"]) == 2  # any two of the three corrections pass
    # Shortcut: levels 0 and 1 only (1 + 3 candidates); full search also scores level 2 (3 more).
    auto = get_metric("minwed", metric="wer", threshold=0.15).score([HYP], [[REF]])[0]
    full = get_metric("minwed", metric="wer", threshold=0.15, coherent="no").score([HYP], [[REF]])[0]
    assert (auto.extra["evaluated"], full.extra["evaluated"]) == (4, 7)


def test_already_acceptable_and_error_free_segments_need_no_correction():
    segs = get_metric("minwed", metric="wer", threshold=0.35).score([HYP, REF], [[REF], [REF]])
    assert [s.score for s in segs] == [0.0, 0.0]
    assert segs[1].extra["E"] == 0 and segs[1].extra["errors"] == []


def test_mincer_hand_checked():
    # ref "chat noir" (9 chars), hyp "chats noirs": two inserted "s" -> CER 2/9 = 0.222.
    # Threshold 0.15: one error left is 1/9 = 0.111 < 0.15, so k = 1; severity 1/9 each.
    for coherent in ("auto", "no"):
        [seg] = get_metric("mincer", metric="cer", threshold=0.15, coherent=coherent).score(
            ["chats noirs"], [["chat noir"]]
        )
        assert seg.score == 1.0
        assert [(e["type"], e["position"], e["hyp"]) for e in seg.extra["errors"]] == [
            ("insertion", 4, "s"),
            ("insertion", 10, "s"),
        ]
        assert [e["severity"] for e in seg.extra["errors"]] == pytest.approx([1 / 9, 1 / 9])


def test_incoherent_metric_searches_levels_by_hand(toy):
    # base: voir and la missing (max 0.5) + boire, euh extra (0.02) = 0.52.
    # Single corrections: fix voir -> la still missing 0.3 + euh 0.01 = 0.31 (severity 0.21);
    # drop euh -> 0.5 + 0.01 = 0.51 (0.01); restore la -> 0.5 + 0.02 = 0.52 (0.0).
    # Level 2: voir+la -> 0.01 < 0.2, so k = 2 (a sum of single gains would never get there).
    [seg] = get_metric("minwed", metric="toy-max", threshold=0.2).score([HYP], [[REF]])
    assert seg.score == 2.0 and seg.extra["capped"] is False
    assert seg.extra["corrected"] == [0, 2]  # voir and la, the only passing pair
    assert seg.extra["metric_score"] == pytest.approx(0.52)
    assert [e["severity"] for e in seg.extra["errors"]] == pytest.approx([0.21, 0.01, 0.0])
    # Threshold 0.005: level 2 tops out at 0.01, only the reference itself (level 3) passes.
    [seg] = get_metric("minwed", metric="toy-max", threshold=0.005).score([HYP], [[REF]])
    assert seg.score == 3.0 and seg.extra["evaluated"] == 1 + 3 + 3 + 1


def test_one_embedded_call_per_level_for_the_whole_batch(toy):
    hyps = [HYP, HYP.replace("boire", "voir"), REF]
    metric = get_metric("minwed", metric="toy-max", threshold=0.005)
    segs = metric.score(hyps, [[REF]] * 3)
    assert [s.score for s in segs] == [3.0, 2.0, 0.0]
    # Levels 0+1 together, then level 2, then level 3: three calls, duplicates scored once
    # (segment 2's candidates repeat some of segment 1's strings).
    assert len(ToyMaxMetric.calls) == 3
    assert ToyMaxMetric.calls[0] < (1 + 3) + (1 + 2) + 1


def test_capped_search_is_flagged_with_bounds(toy):
    # max_errors=2: level 3 is not searched exhaustively; greedy completion adds
    # the remaining correction to the best level-2 subset (voir+la, 0.01) -> 0.0.
    [seg] = get_metric("minwed", metric="toy-max", threshold=0.005, max_errors=2).score([HYP], [[REF]])
    assert seg.extra["capped"] is True and seg.extra["k_lower_bound"] == 3 and seg.score == 3.0
    # max_candidates=5: 1 + 3 already scored, level 2 (3 more) would exceed it.
    metric = get_metric("minwed", metric="toy-max", threshold=0.005, max_candidates=5)
    segs = metric.score([HYP, REF], [[REF], [REF]])
    assert segs[0].extra["capped"] is True and segs[0].extra["k_lower_bound"] == 2 and segs[0].score == 3.0
    assert segs[1].extra["capped"] is False
    assert metric.corpus_score(segs).extra["capped"] == 1


def test_corpus_score_and_options():
    metric = get_metric("minwed", metric="wer", threshold=0.15)
    segs = metric.score([HYP, REF], [[REF], [REF]])
    corpus = metric.corpus_score(segs)
    assert corpus.score == 1.0  # (2 + 0) / 2
    assert corpus.extra["rate"] == pytest.approx(2 / 20)
    assert corpus.extra["error_rate"] == pytest.approx(jiwer.wer([REF, REF], [HYP, REF]))
    assert metric.higher_is_better is False
    assert "embedded:[wer|" in metric.signature()
    with pytest.raises(OptionError, match="no default threshold"):
        get_metric("minwed", metric="chrf")
    with pytest.raises(OptionError, match="coherent"):
        get_metric("minwed", metric="wer", coherent="maybe")


def test_several_references_use_the_closest(toy):
    [seg] = get_metric("minwed", metric="wer", threshold=0.15).score([HYP], [["something else entirely", REF]])
    assert seg.extra["E"] == 3 and seg.score == 2.0


def _hats_rows(shared_data, n):
    with open(shared_data / "hats" / "hats.tsv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))[:n]
    return [r["hypA"] for r in rows], [[r["reference"]] for r in rows]


def test_shortcut_equals_full_search_on_hats(shared_data):
    hyps, refs = _hats_rows(shared_data, 25)
    for name in ("minwed",):
        fast = get_metric(name, metric="wer", threshold=0.2).score(hyps, refs)
        full = get_metric(
            name, metric="wer", threshold=0.2, coherent="no", max_errors=20, max_candidates=100_000
        ).score(hyps, refs)
        assert [s.score for s in fast] == [s.score for s in full]
        # The shortcut is exact: k = fewest corrections leaving WER < 0.2 (floating tolerance aside).
        for seg, (ref,) in zip(fast, refs):
            n = len(ref.split())
            assert seg.score == min(k for k in range(seg.extra["E"] + 1) if (seg.extra["E"] - k) / n < 0.2)


# ---- minCER with jiwer's CER: the seed's search, strip included ------------------
# The seed's MinCER (thibault-roux/mined mincer.py) scores every corrected
# candidate with its metric function; with jiwer.cer that strips the candidate's
# leading and trailing whitespace, so corrections interact at the edges.
# Expected values come from a brute force over every subset of corrections,
# built from jiwer's own alignment and scored by jiwer.cer itself.
def _jiwer_slots(ref: str, hyp: str) -> list[str | tuple[str, str]]:
    """jiwer's character alignment as slots: matched text, or one error as
    (text left uncorrected, text once corrected)."""
    out = jiwer.process_characters(ref, hyp)
    r, h = out.references[0], out.hypotheses[0]
    slots: list[str | tuple[str, str]] = []
    for chunk in out.alignments[0]:
        ref_chars = r[chunk.ref_start_idx : chunk.ref_end_idx]
        hyp_chars = h[chunk.hyp_start_idx : chunk.hyp_end_idx]
        if chunk.type == "equal":
            slots.append("".join(hyp_chars))
        elif chunk.type == "substitute":
            slots.extend(zip(hyp_chars, ref_chars))
        elif chunk.type == "insert":
            slots.extend((c, "") for c in hyp_chars)
        else:
            slots.extend(("", c) for c in ref_chars)
    return slots


class JiwerOracle:
    """Every subset of corrections, each candidate scored by jiwer.cer."""

    def __init__(self, ref: str, hyp: str):
        self.ref = ref
        self.slots = _jiwer_slots(ref, hyp)
        self.errors = [s for s in self.slots if isinstance(s, tuple)]
        self.cer: dict[tuple[int, ...], float] = {}

    def candidate(self, corrected) -> str:
        fix, out, e = set(corrected), [], 0
        for slot in self.slots:
            if isinstance(slot, str):
                out.append(slot)
            else:
                out.append(slot[1] if e in fix else slot[0])
                e += 1
        return "".join(out)

    def value(self, corrected) -> float:
        corrected = tuple(sorted(corrected))
        if corrected not in self.cer:
            self.cer[corrected] = jiwer.cer(self.ref, self.candidate(corrected))
        return self.cer[corrected]

    def k(self, threshold: float) -> int:
        """mincer.py's answer: the first level with a candidate under the threshold."""
        n = len(self.errors)
        return next(
            (k for k in range(n + 1) for c in itertools.combinations(range(n), k) if self.value(c) < threshold), n
        )


def _check_mincer_against_oracle(segs, oracles, threshold):
    for seg, oracle in zip(segs, oracles):
        assert seg.extra["E"] == len(oracle.errors)
        assert [(e["hyp"] or "", e["ref"] or "") for e in seg.extra["errors"]] == oracle.errors
        assert seg.score == oracle.k(threshold), oracle.candidate(())
        assert seg.extra["metric_score"] == pytest.approx(jiwer.cer(oracle.ref, oracle.candidate(())), abs=1e-12)
        # Severities: jiwer.cer of the hypothesis minus that of the single correction.
        assert [e["severity"] for e in seg.extra["errors"]] == pytest.approx(
            [oracle.value(()) - oracle.value((i,)) for i in range(len(oracle.errors))], abs=1e-12
        )
        # The accepted set is k corrections that jiwer.cer puts under the threshold.
        assert len(seg.extra["corrected"]) == seg.score
        if seg.extra["reached"]:
            assert oracle.value(seg.extra["corrected"]) < threshold


EDGE_CASES = [
    ("abcdefghij", "xy abcdefghij"),  # the issue's case: k=2 at 0.05
    ("abcdefghij", "abcdefghij xy"),
    ("bonjour à tous", "euh bonjour à tous euh"),
    ("chat", "le chat noir"),  # interior spaces become the edges once the words are corrected away
    ("euh alors on y va", "alors on y va"),  # restoring a deleted edge space gains nothing
    ("on y va donc", "on y va"),
    ("x yz", "yz"),
    ("on va y", "on va"),
    ("la y à", "bon la y"),
    ("et on à", "donc on"),
    ("oui le alors", "va et le alors"),
    ("xab", "q ab"),  # a space against a letter at either end
    ("abx", "ab q"),
    ("ok", "ok\u00a0!"),  # no-break space: jiwer strips it too
    ("c'est ça", "c'est ça\t!"),
    ("à demain", "a demain "),  # the hypothesis itself is stripped first, as jiwer does
    (" la maison", "la\u00a0maisons"),
    ("", " a b "),  # empty reference: jiwer counts insertions
]


@pytest.mark.parametrize("ref, hyp", EDGE_CASES)
def test_mincer_equals_jiwer_brute_force_at_the_edges(ref, hyp):
    oracle = JiwerOracle(ref, hyp)
    for threshold in (0.05, 0.1, 0.2, 0.3, 1.5):
        for coherent in ("auto", "yes", "no"):
            segs = get_metric(
                "mincer", metric="cer", threshold=threshold, coherent=coherent, max_errors=16, max_candidates=100_000
            ).score([hyp], [[ref]])
            assert not segs[0].extra["capped"]
            _check_mincer_against_oracle(segs, [oracle], threshold)


def test_mincer_issue_example():
    """Issue 8: correcting x and y leaves " abcdefghij", which jiwer strips to a perfect match."""
    assert JiwerOracle("abcdefghij", "xy abcdefghij").k(0.05) == 2
    for coherent in ("auto", "no"):
        [seg] = get_metric("mincer", metric="cer", threshold=0.05, coherent=coherent).score(
            ["xy abcdefghij"], [["abcdefghij"]]
        )
        assert (seg.score, seg.extra["E"], seg.extra["corrected"]) == (2.0, 3, [0, 1])
    # The strip also sets severities: restoring a deleted leading space changes nothing.
    [seg] = get_metric("mincer", metric="cer", threshold=0.3).score(["yz"], [["x yz"]])
    assert [e["severity"] for e in seg.extra["errors"]] == pytest.approx([0.25, 0.0])
    assert seg.score == 1.0 and seg.extra["corrected"] == [0]


def test_mincer_search_settles_edge_cases_every_way():
    """The hand-made cases go through each step of the exact search (closed
    form, lower bound met by a witness, dynamic programme), and the level search
    gives the same k when the dynamic programme is over its size limit."""
    from metrics.scorers import mincer_search

    methods = set()
    for ref, hyp in EDGE_CASES:
        a = align(ref, hyp, "char")
        for threshold in (0.05, 0.1, 0.2, 0.3):
            methods.add(mincer_search.min_corrections(a, _max_edits(a, threshold)).method)
    assert methods == {"closed form", "bound", "dp"}


def _max_edits(a, threshold):
    """The most edits that pass, as minCER computes it (the same float test)."""
    n = len(a.ref_tokens)
    return max((d for d in range(len(a.errors)) if (d / n if n else d) < threshold - 1e-9), default=-1)


def _check_dynamic_programme(cases):
    from metrics.scorers import mincer_search

    for ref, hyp in cases:
        oracle, a = JiwerOracle(ref, hyp), align(ref, hyp, "char")
        for threshold in (0.02, 0.05, 0.1, 0.3):
            if oracle.value(()) < threshold:
                continue  # k = 0 never reaches the search
            found = mincer_search._lattice_search(a, _max_edits(a, threshold))
            assert found.k == oracle.k(threshold), (ref, hyp, threshold)
            assert len(found.corrected) == found.k and oracle.value(found.corrected) < threshold


def test_mincer_dynamic_programme_alone_equals_brute_force():
    """The last step of the search, run on its own, against jiwer.cer over every subset."""
    _check_dynamic_programme(EDGE_CASES)


def test_mincer_dynamic_programme_alone_equals_brute_force_on_hats(shared_data):
    hyps, refs = _hats_char_segments(shared_data, 8)
    _check_dynamic_programme([(r, h) for h, (r,) in zip(hyps[:150], refs[:150])])


def test_mincer_default_equals_dynamic_programme_on_hats_segments_with_more_errors(shared_data):
    """Past 8 errors the brute force is out of reach: the default search (closed
    form, bound + witness) against the dynamic programme alone."""
    from metrics.scorers import mincer_search

    with open(shared_data / "hats" / "hats.tsv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))[:150]
    alignments = [align(row["reference"], row[key], "char") for row in rows for key in ("hypA", "hypB")]
    alignments = [a for a in alignments if len(a.errors) > 8]
    assert len(alignments) > 80
    for a in alignments:
        edits = _max_edits(a, 0.05)
        if edits >= len(a.errors):
            continue
        assert mincer_search.min_corrections(a, edits).k == mincer_search._lattice_search(a, edits).k


def test_mincer_falls_back_to_the_level_search_past_the_table_limit(monkeypatch):
    from metrics.scorers import mincer_search

    monkeypatch.setattr(mincer_search, "DP_MAX_CELLS", 0)
    ref, hyp = "oui le alors", "va et le alors"  # needs the dynamic programme at 0.05
    [seg] = get_metric("mincer", metric="cer", threshold=0.05).score([hyp], [[ref]])
    assert seg.extra["evaluated"] > 1 + seg.extra["E"]  # it searched levels
    _check_mincer_against_oracle([seg], [JiwerOracle(ref, hyp)], 0.05)


def _hats_char_segments(shared_data, max_errors):
    hyps, refs = [], []
    with open(shared_data / "hats" / "hats.tsv", encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            for hyp in (row["hypA"], row["hypB"]):
                if len(align(row["reference"], hyp, "char").errors) <= max_errors:
                    hyps.append(hyp)
                    refs.append([row["reference"]])
    return hyps, refs


def test_mincer_equals_full_search_and_jiwer_brute_force_on_hats(shared_data):
    """Every HATS segment with at most 8 character errors (both hypotheses of
    all 1000 rows): the default search, the full level search and the brute
    force over jiwer.cer give the same k, at three thresholds."""
    hyps, refs = _hats_char_segments(shared_data, 8)
    assert len(hyps) > 1000
    oracles = [JiwerOracle(r, h) for h, (r,) in zip(hyps, refs)]
    edge_matters = 0
    for threshold in (0.02, 0.05, 0.1):
        fast = get_metric("mincer", metric="cer", threshold=threshold).score(hyps, refs)
        full = get_metric(
            "mincer", metric="cer", threshold=threshold, coherent="no", max_errors=8, max_candidates=1000
        ).score(hyps, refs)
        assert not any(s.extra["capped"] for s in full)
        assert [s.score for s in fast] == [s.score for s in full]
        _check_mincer_against_oracle(fast, oracles, threshold)
        _check_mincer_against_oracle(full, oracles, threshold)
        # Not vacuous: on some segments the strip gives fewer corrections than
        # counting every edit would (E - k edits left under the threshold).
        for seg, (ref,) in zip(fast, refs):
            n, e = len(ref.strip()), seg.extra["E"]
            edge_matters += seg.score < min(k for k in range(e + 1) if (e - k) / n < threshold - 1e-9)
    assert edge_matters > 50


def test_semdist_embedded_matches_brute_force():
    semdist = get_metric("semdist")
    hyp, ref = "le le le début de centres nuclé militaires", "le le début de centres nucléaires militaires"
    a = align(ref, hyp, "word")
    base = semdist.score([hyp], [[ref]])[0].score
    singles = [s.score for s in semdist.score([a.apply([e]) for e in range(len(a.errors))], [[ref]] * len(a.errors))]
    threshold = (base + min(singles)) / 2  # passes at level 1 only through the best correction
    [seg] = get_metric("minwed", metric="semdist", threshold=threshold).score([hyp], [[ref]])
    assert [e["severity"] for e in seg.extra["errors"]] == pytest.approx([base - s for s in singles], abs=1e-5)
    # Brute force: smallest subset size whose corrected hypothesis scores under the threshold.
    expected = next(
        k
        for k in range(len(a.errors) + 1)
        for combo in itertools.combinations(range(len(a.errors)), k)
        if semdist.score([a.apply(combo)], [[ref]])[0].score < threshold
    )
    assert seg.score == expected == 1


def test_bertscore_embedded_uses_one_minus_f1():
    bertscore = get_metric("bertscore")
    hyp, ref = "dimanche soire an t e", "dimanche soir dufreigne philippe"
    [seg] = get_metric("minwed", metric="bertscore", threshold=0.05).score([hyp], [[ref]])
    a = align(ref, hyp, "word")
    texts = [a.apply()] + [a.apply([e]) for e in range(len(a.errors))]
    f1 = [s.extra["f1"] for s in bertscore.score(texts, [[ref]] * len(texts))]
    assert seg.extra["metric_score"] == pytest.approx(1 - f1[0], abs=1e-5)
    assert [e["severity"] for e in seg.extra["errors"]] == pytest.approx(
        [f1[i] - f1[0] for i in range(1, len(f1))], abs=1e-5
    )
    with pytest.raises(OptionError, match="idf"):
        get_metric("minwed", metric="bertscore", metric_options={"idf": True})
