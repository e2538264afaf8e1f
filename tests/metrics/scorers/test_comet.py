"""COMET and CometKiwi against the reference code: tiny random-weight checkpoints built by
unbabel-comet 2.2.7's own model classes and scored by it (bench/reference/comet_expected.py,
which stored the checkpoints and the expected scores in comet_fixtures/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metrics.scorers import get_metric
from metrics.scorers.errors import InputError, ModelNotAvailable, OptionError
from metrics.scorers.files import trusted_paths
from metrics.scorers.progress import watching

FIXTURES = Path(__file__).parent / "comet_fixtures"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text(encoding="utf-8"))
SAMPLES = EXPECTED["samples"]
SRCS = [s["src"] for s in SAMPLES]
HYPS = [s["mt"] for s in SAMPLES]
REFS = [[s["ref"]] for s in SAMPLES]
ENCODER = str(FIXTURES / "tiny-xlmr")


def metric(name: str, checkpoint: str, **options):
    return get_metric(name, model=str(FIXTURES / checkpoint), encoder=ENCODER, device="cpu", **options)


@pytest.fixture(autouse=True)
def operator_paths():
    # The fixtures lie outside WORKBENCH_MODEL_DIRS: score as the operator's command line does.
    with trusted_paths():
        yield


def test_provenance_names_the_reference_and_the_checkpoints():
    prov = EXPECTED["provenance"]
    assert prov["reference"] == "unbabel-comet 2.2.7"
    import hashlib

    for name, digest in prov["checkpoint_sha256"].items():
        assert hashlib.sha256((FIXTURES / name / "checkpoints" / "model.ckpt").read_bytes()).hexdigest() == digest


@pytest.mark.parametrize("batch_size", [16, 3])
def test_comet_equals_the_reference(batch_size):
    scores = [s.score for s in metric("comet", "comet-tiny", batch_size=batch_size).score(HYPS, REFS, SRCS)]
    assert scores == pytest.approx(EXPECTED["scores"]["comet-tiny"], abs=1e-5)


def test_cometkiwi_equals_the_reference_without_references():
    scores = [s.score for s in metric("cometkiwi", "kiwi-tiny").score(HYPS, None, SRCS)]
    assert scores == pytest.approx(EXPECTED["scores"]["kiwi-tiny"], abs=1e-5)


def test_unified_checkpoint_with_references_averages_its_three_inputs_as_the_reference():
    scores = [s.score for s in metric("cometkiwi", "unified3-tiny", batch_size=5).score(HYPS, REFS, SRCS)]
    assert scores == pytest.approx(EXPECTED["scores"]["unified3-tiny"], abs=1e-5)


def test_truncated_inputs_are_flagged_on_their_segments():
    # Which ones the reference truncates, by its encoder's tokenizer (the script's "truncated").
    for name, checkpoint in (("comet", "comet-tiny"), ("cometkiwi", "kiwi-tiny"), ("cometkiwi", "unified3-tiny")):
        segs = metric(name, checkpoint).score(HYPS, REFS, SRCS)
        flagged = [i for i, s in enumerate(segs) if s.extra.get("truncated")]
        assert flagged == EXPECTED["truncated"][checkpoint], checkpoint
        assert flagged, "the samples must exercise truncation"


def test_several_references_take_the_best():
    m = metric("comet", "comet-tiny")
    both = m.score(HYPS[:3], [["The cat sat on the mat.", "A dog."]] * 3, SRCS[:3])
    expected = [
        max(a, b)
        for a, b in zip(
            [s.score for s in m.score(HYPS[:3], [["The cat sat on the mat."]] * 3, SRCS[:3])],
            [s.score for s in m.score(HYPS[:3], [["A dog."]] * 3, SRCS[:3])],
        )
    ]
    # float32 inference: another batch's padding sums in another order (a few ulps at 3.5)
    assert [s.score for s in both] == pytest.approx(expected, rel=1e-6, abs=1e-6)


def test_signature_names_checkpoint_hash_encoder_batch_size_and_precision():
    sig = metric("comet", "comet-tiny", batch_size=8).signature()
    digest = EXPECTED["provenance"]["checkpoint_sha256"]["comet-tiny"][:12]
    assert sig.startswith(f"comet|v:1|model:comet-tiny|ckpt:{digest}|encoder:{ENCODER}|batch_size:8|dtype:fp32|")
    assert metric("comet", "comet-tiny", batch_size=4).signature() != sig
    assert "|dtype:fp32|inputs:mt+src|" in metric("cometkiwi", "kiwi-tiny").signature()


def test_progress_is_reported_inside_the_call():
    seen = []
    with watching(lambda done, total: seen.append((done, total))):
        metric("comet", "comet-tiny", batch_size=2).score(HYPS, REFS, SRCS)
    assert len(seen) >= 3 and seen[-1][0] == seen[-1][1]


def test_wrong_checkpoint_kind_says_which_metric_fits():
    with pytest.raises(OptionError, match="unified_metric"):
        metric("comet", "kiwi-tiny").score(HYPS[:1], REFS[:1], SRCS[:1])


def test_a_directory_without_a_checkpoint_is_refused(tmp_path):
    with pytest.raises(ModelNotAvailable, match="hparams.yaml"):
        get_metric("comet", model=str(tmp_path), encoder=ENCODER, device="cpu").score(["a"], [["a"]], ["a"])


def test_run_creation_checks_the_checkpoint_kind_and_the_model_option():
    metric("cometkiwi", "kiwi-tiny").check_resources()
    with pytest.raises(OptionError, match="needs a regression_metric"):
        metric("comet", "kiwi-tiny").check_resources()
    with pytest.raises(OptionError, match="model=DIR"):
        get_metric("comet").check_resources()


def test_inputs_are_checked():
    with pytest.raises(InputError):
        metric("comet", "comet-tiny").score(HYPS, REFS, None)
    with pytest.raises(InputError):
        metric("cometkiwi", "kiwi-tiny").score(HYPS, None, SRCS[:2])


def test_signature_says_whether_a_unified_checkpoint_read_references():
    # The scores differ with and without references (the three-input mean), so must the signatures.
    with_refs = metric("cometkiwi", "unified3-tiny")
    with_refs.load_corpus_state(with_refs.corpus_state(HYPS, REFS, SRCS))
    without = metric("cometkiwi", "unified3-tiny")
    without.load_corpus_state(without.corpus_state(HYPS, None, SRCS))
    assert "|inputs:mt+src+ref|" in with_refs.signature()
    assert "|inputs:mt+src|" in without.signature()
    scored_without = [s.score for s in without.score(HYPS, REFS, SRCS)]  # planned without: refs ignored
    assert scored_without != pytest.approx(EXPECTED["scores"]["unified3-tiny"], abs=1e-5)
    assert [s.score for s in with_refs.score(HYPS, REFS, SRCS)] == pytest.approx(
        EXPECTED["scores"]["unified3-tiny"], abs=1e-5
    )
    # A checkpoint that takes no reference reads none, whatever the corpus has.
    kiwi = metric("cometkiwi", "kiwi-tiny")
    kiwi.load_corpus_state(kiwi.corpus_state(HYPS, REFS, SRCS))
    assert "|inputs:mt+src|" in kiwi.signature()


def _spans(segments):
    return [[(s["start"], s["end"], s["severity"]) for s in seg.extra["spans"]] for seg in segments]


def _expected_spans(key):
    return [[(s["start"], s["end"], s["severity"]) for s in seg] for seg in EXPECTED["spans"][key]]


@pytest.mark.parametrize("batch_size", [16, 3])
def test_xcomet_equals_the_reference_scores_and_spans_with_references(batch_size):
    segs = metric("xcomet", "xcomet-tiny", batch_size=batch_size).score(HYPS, REFS, SRCS)
    assert [s.score for s in segs] == pytest.approx(EXPECTED["scores"]["xcomet-tiny"], abs=1e-5)
    assert _spans(segs) == _expected_spans("xcomet-tiny")
    confidences = [s["confidence"] for seg in segs for s in seg.extra["spans"]]
    assert confidences == pytest.approx([s["confidence"] for seg in EXPECTED["spans"]["xcomet-tiny"] for s in seg])
    assert any(_expected_spans("xcomet-tiny")) and not all(_expected_spans("xcomet-tiny"))


def test_xcomet_without_references_is_the_reference_qe_mode():
    m = metric("xcomet", "xcomet-tiny")
    segs = m.score(HYPS, None, SRCS)
    assert [s.score for s in segs] == pytest.approx(EXPECTED["scores"]["xcomet-tiny-qe"], abs=1e-5)
    assert _spans(segs) == _expected_spans("xcomet-tiny-qe")
    assert "|inputs:mt+src|" in m.signature()
    with_refs = metric("xcomet", "xcomet-tiny")
    with_refs.load_corpus_state(with_refs.corpus_state(HYPS, REFS, SRCS))
    assert "|inputs:mt+src+ref|" in with_refs.signature()


def test_xcomet_spans_are_span_output_like_the_llm_judge():
    # Character offsets into the output, the text they cover, a severity the span views know.
    segs = metric("xcomet", "xcomet-tiny").score(HYPS, REFS, SRCS)
    for hyp, seg in zip(HYPS, segs):
        for span in seg.extra["spans"]:
            assert 0 <= span["start"] <= span["end"] <= len(hyp)
            assert span["text"] == hyp[span["start"] : span["end"]]
            assert span["severity"] in ("minor", "major", "critical")
        penalty = sum({"minor": 1, "major": 5, "critical": 10}[s["severity"]] for s in seg.extra["spans"])
        assert seg.extra["mqm"] == pytest.approx((25 - min(25, penalty)) / 25)
    flagged = [i for i, s in enumerate(segs) if s.extra.get("truncated")]
    assert flagged == EXPECTED["truncated"]["xcomet-tiny"]


def test_xcomet_refuses_other_checkpoints_and_others_refuse_xcomet():
    with pytest.raises(OptionError, match="needs a xcomet_metric"):
        metric("xcomet", "kiwi-tiny").check_resources()
    with pytest.raises(OptionError, match="xcomet_metric"):
        metric("cometkiwi", "xcomet-tiny").check_resources()


def test_xcomet_reports_progress_inside_the_call_and_warns_of_truncation(caplog):
    seen = []
    with watching(lambda done, total: seen.append((done, total))):
        metric("xcomet", "xcomet-tiny", batch_size=4).score(HYPS, REFS, SRCS)
    assert len(seen) >= 3 and seen[-1][0] == seen[-1][1] == 3 * len(HYPS)  # three inputs per segment
    assert "truncated" in caplog.text
