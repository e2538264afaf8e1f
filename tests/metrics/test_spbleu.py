"""spBLEU (issue 43): bleu with sacrebleu's SentencePiece tokenizers (`flores101`, `flores200`,
`spBLEU-1K`) over a local model file (`spm=PATH`), equal to sacrebleu's own tokenizers given the
same model file, and never a download."""

import hashlib
import io
import json
import os
from io import StringIO

import pytest
import sentencepiece
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient
from sacrebleu.metrics import BLEU
from sacrebleu.tokenizers import tokenizer_spm

from annotations.models import Output, Project
from metrics.models import MetricRun, RunStatus
from metrics.scorers import OptionError, get_metric
from metrics.scorers.files import PathRefused
from metrics.scorers.sacrebleu_metrics import SPM_TOKENIZERS
from metrics.services import run_execute_sync
from tests.annotations.factories import MembershipFactory, UserFactory
from tests.metrics.conftest import build_dataset

TRAIN = [
    "the cat sat on the mat",
    "a quick brown fox jumps over the lazy dog",
    "Le garçon a mangé une crème brûlée.",
    "Où se trouve la clé ?",
    "我喜欢吃苹果，今天天气很好",
    "It is raining today, isn't it?",
]
HYPS = ["the cat sat on the mat", "Le garçon mange une crème.", "", "我爱吃苹果 🍎", "a brown fox jumped"]
REFS = [
    ["the cat is on the mat", "a cat sat on the mat"],
    ["Le garçon a mangé une crème brûlée.", "Le garçon mange."],
    ["nothing here", "rien"],
    ["我喜欢吃苹果", "今天天气很好"],
    ["the quick brown fox jumps", "a fast brown fox"],
]


def train_spm(seed_text: str = "") -> bytes:
    """A tiny unigram SentencePiece model trained on a few sentences (deterministic)."""
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter((TRAIN + [seed_text]) * 20 if seed_text else TRAIN * 20),
        model_writer=model,
        vocab_size=60,
        model_type="unigram",
        hard_vocab_limit=False,
        minloglevel=2,
    )
    return model.getvalue()


@pytest.fixture(scope="module")
def spm_bytes():
    return train_spm()


@pytest.fixture
def spm_file(tmp_path, spm_bytes, settings):
    data = tmp_path / "data"
    data.mkdir()
    settings.WORKBENCH_DATA_DIRS = [str(data)]
    path = data / "flores.spm"
    path.write_bytes(spm_bytes)
    return path


@pytest.fixture
def sacrebleu_models(tmp_path, monkeypatch, spm_bytes):
    """The same model file where sacrebleu looks for its SentencePiece models, and its download
    made to fail: sacrebleu's tokenizers then read the local file, as ours do."""
    cache = tmp_path / "sacrebleu"
    (cache / "models").mkdir(parents=True)
    for entry in tokenizer_spm.SPM_MODELS.values():
        (cache / "models" / os.path.basename(entry["url"])).write_bytes(spm_bytes)
    monkeypatch.setattr(tokenizer_spm, "SACREBLEU_DIR", str(cache))

    def no_download(*args, **kwargs):
        raise AssertionError("sacrebleu tried to download a model")

    monkeypatch.setattr(tokenizer_spm, "download_file", no_download)
    return cache


@pytest.mark.parametrize("tokenize", SPM_TOKENIZERS)
def test_scores_equal_sacrebleus_spm_tokenizers(tokenize, spm_file, sacrebleu_models):
    ours = get_metric("bleu", tokenize=tokenize, spm=str(spm_file))
    ref = BLEU(tokenize=tokenize)
    segs = ours.score(HYPS, REFS)
    streams = [[r[k] for r in REFS] for k in range(2)]
    assert ours.corpus_score(segs).score == ref.corpus_score(HYPS, streams).score
    sentence = BLEU(tokenize=tokenize, effective_order=True)
    assert [s.score for s in segs] == [sentence.sentence_score(h, r).score for h, r in zip(HYPS, REFS)]
    # The statistics summed per chunk give the same corpus score (what the workers do).
    totals = [a + b for a, b in zip(ours.segment_totals(HYPS[:2], REFS[:2]), ours.segment_totals(HYPS[2:], REFS[2:]))]
    assert ours.score_from_stats(totals).score == ref.corpus_score(HYPS, streams).score
    # The SentencePiece pieces, not 13a's words: the scores differ from plain BLEU.
    assert ref.corpus_score(HYPS, streams).score != BLEU().corpus_score(HYPS, streams).score


def test_signature_names_the_tokenizer_and_the_model_files_sha256(spm_file, tmp_path):
    metric = get_metric("bleu", tokenize="flores200", spm=str(spm_file))
    metric.load_corpus_state(metric.corpus_state(HYPS, REFS))
    digest = hashlib.sha256(spm_file.read_bytes()).hexdigest()
    signature = metric.signature()
    assert "|tok:flores200|" in signature and f"|spm:sha256:{digest[:12]}|" in signature, signature
    other = spm_file.parent / "other.spm"
    other.write_bytes(train_spm("an extra sentence with other words, zebra quokka"))
    second = get_metric("bleu", tokenize="flores200", spm=str(other))
    second.load_corpus_state(metric.loaded_state)
    assert second.signature() != signature
    # Plain BLEU's signature is unchanged (sacrebleu's fields only).
    plain = get_metric("bleu")
    plain.load_corpus_state({"nrefs": 2})
    assert "spm" not in plain.signature()


def test_options_are_checked_and_no_file_is_opened_at_construction(spm_file):
    with pytest.raises(OptionError, match="tokenize=flores200 needs spm=PATH"):
        get_metric("bleu", tokenize="flores200")
    with pytest.raises(OptionError, match="spm is only read with tokenize="):
        get_metric("bleu", spm=str(spm_file))
    with pytest.raises(OptionError, match="flores200"):
        get_metric("bleu", tokenize="spm")  # sacrebleu's downloading alias is not offered
    # The web process builds the metric to check options: a path is not looked at until scoring.
    metric = get_metric("bleu", tokenize="flores101", spm="/etc/shadow")
    with pytest.raises(PathRefused, match="spm: not allowed or not found"):
        metric.score(HYPS, REFS)
    garbage = spm_file.parent / "garbage.spm"
    garbage.write_bytes(b"not a model at all")
    with pytest.raises(OptionError, match="not a SentencePiece model"):
        get_metric("bleu", tokenize="flores200", spm=str(garbage)).score(HYPS, REFS)
    empty = spm_file.parent / "empty.spm"
    empty.write_bytes(b"")
    with pytest.raises(OptionError, match="not a SentencePiece model"):
        get_metric("bleu", tokenize="flores200", spm=str(empty)).score(HYPS, REFS)


def test_score_command_takes_the_spm_option(tmp_path, spm_bytes, sacrebleu_models):
    model = tmp_path / "outside" / "flores200.spm"  # the operator's own file, anywhere
    model.parent.mkdir()
    model.write_bytes(spm_bytes)
    hyp = tmp_path / "hyp.txt"
    hyp.write_text("".join(h + "\n" for h in HYPS), encoding="utf-8")
    ref = tmp_path / "ref.txt"
    ref.write_text("".join(r[0] + "\n" for r in REFS), encoding="utf-8")
    out = StringIO()
    call_command(
        "score",
        "--metric=bleu",
        f"--hyp={hyp}",
        f"--ref={ref}",
        "--option=tokenize=flores200",
        f"--option=spm={model}",
        "--json",
        stdout=out,
        stderr=StringIO(),
    )
    result = json.loads(out.getvalue())
    assert result["score"] == BLEU(tokenize="flores200").corpus_score(HYPS, [[r[0] for r in REFS]]).score
    assert "tok:flores200" in result["signature"] and "spm:sha256:" in result["signature"]
    with pytest.raises(CommandError, match="needs spm=PATH"):
        call_command("score", "--metric=bleu", f"--hyp={hyp}", f"--ref={ref}", "--option=tokenize=flores200")


@pytest.mark.django_db
def test_api_run_with_spm_equals_sacrebleu(spm_file, sacrebleu_models):
    project = Project.objects.create(name="spBLEU")
    dataset = build_dataset(name="spbleu-ds", items=4, systems=2, project=project)
    user = MembershipFactory(project=project, user=UserFactory(username="spbleu-owner"), role="owner").user
    api = APIClient()
    api.force_authenticate(user)
    url = f"/api/datasets/{dataset.pk}/metric-runs/"
    bad = api.post(url, {"metric": "bleu", "options": {"tokenize": "flores200"}}, format="json")
    assert bad.status_code == 400 and "needs spm=PATH" in bad.json()["detail"]
    resp = api.post(url, {"metric": "bleu", "options": {"tokenize": "flores200", "spm": spm_file.name}}, format="json")
    assert resp.status_code == 201, resp.content
    run = run_execute_sync(run=MetricRun.objects.get(pk=resp.json()["id"]))
    assert run.status == RunStatus.DONE, run.error
    outputs = list(Output.objects.filter(item__dataset=dataset).order_by("item__position", "system__name"))
    hyps = [o.text for o in outputs]
    refs = [[o.item.references.get().text for o in outputs]]
    assert run.corpus["score"] == pytest.approx(BLEU(tokenize="flores200").corpus_score(hyps, refs).score, abs=1e-9)
    assert "tok:flores200" in run.signature and "spm:sha256:" in run.signature
    # A path outside the data directories: the run is created, then fails with the one refusal.
    resp = api.post(url, {"metric": "bleu", "options": {"tokenize": "flores200", "spm": "/etc/passwd"}}, format="json")
    assert resp.status_code == 201
    failed = run_execute_sync(run=MetricRun.objects.get(pk=resp.json()["id"]))
    assert failed.status == RunStatus.FAILED and "spm: not allowed or not found" in failed.error
