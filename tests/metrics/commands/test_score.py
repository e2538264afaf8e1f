"""`manage.py score`: plain-text scoring like sacrebleu's CLI, for any metric, without the database."""
import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import jiwer
import pytest
from django.core.management import CommandError, call_command
from sacrebleu.metrics import BLEU, CHRF

ROOT = Path(__file__).resolve().parents[3]
HYPS = ["the cat sat on the mat", "Le garçon a mangé.", "", "我喜欢吃苹果 🍎", "a quick brown fox"]
REF1 = ["the cat is on the mat", "Le garçon mange.", "nothing here", "我爱吃苹果 🍎", "the quick brown fox"]
REF2 = ["a cat sat on the mat", "", "", "", "a fast brown fox"]


def write(path: Path, lines) -> str:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


@pytest.fixture
def files(tmp_path):
    return {"hyp": write(tmp_path / "hyp.txt", HYPS), "ref1": write(tmp_path / "ref1.txt", REF1),
            "ref2": write(tmp_path / "ref2.txt", REF2), "dir": tmp_path}


def run(*args) -> str:
    out = StringIO()
    call_command("score", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_json_corpus_score_and_signature_equal_sacrebleu(files):
    result = json.loads(run("--metric", "bleu", "--hyp", files["hyp"], "--ref", files["ref1"],
                            "--ref", files["ref2"], "--json"))
    bleu = BLEU()
    expected = bleu.corpus_score(HYPS, [REF1, REF2])
    assert result["metric"] == "bleu" and result["segments"] == len(HYPS)
    assert result["score"] == expected.score
    # sacrebleu's fields in sacrebleu's order and spelling, its version as "sacrebleu:"
    assert result["signature"] == "bleu|v:1|" + bleu.get_signature().format().replace("version:", "sacrebleu:")
    assert result["precisions"] == expected.precisions


def test_segments_file_has_one_line_per_input_in_order(files):
    seg_path = files["dir"] / "segs.jsonl"
    run("--metric", "chrf", "--hyp", files["hyp"], "--ref", files["ref1"], "--segments", str(seg_path),
        "--option", "word_order=2", "--json")
    rows = [json.loads(line) for line in seg_path.read_text(encoding="utf-8").splitlines()]
    chrf = CHRF(word_order=2)
    assert [r["segment"] for r in rows] == list(range(len(HYPS)))
    assert [r["score"] for r in rows] == [chrf.sentence_score(h, [r]).score for h, r in zip(HYPS, REF1)]


def test_skip_empty_refs_gives_variable_reference_counts(files):
    result = json.loads(run("--metric", "bleu", "--hyp", files["hyp"], "--ref", files["ref1"], "--ref",
                            files["ref2"], "--skip-empty-refs", "--json"))
    padded = [None if r == "" else r for r in REF2]
    assert result["score"] == BLEU().corpus_score(HYPS, [REF1, padded]).score
    assert "nrefs:var" in result["signature"]


def test_text_output_is_one_sacrebleu_like_line(files):
    line = run("--metric", "bleu", "--hyp", files["hyp"], "--ref", files["ref1"], "--width", "2").strip()
    expected = BLEU().corpus_score(HYPS, [REF1])
    assert "\n" not in line
    assert line.endswith(f"= {expected.score:.2f} {expected._verbose}")
    assert line.startswith("bleu|v:1|")


def test_wer_through_the_command_equals_jiwer(files):
    result = json.loads(run("--metric", "wer", "--hyp", files["hyp"], "--ref", files["ref1"], "--json"))
    assert result["score"] == jiwer.wer(REF1, HYPS)
    assert result["substitutions"] == jiwer.process_words(REF1, HYPS).substitutions


def test_source_and_reference_free_metrics(files, tmp_path):
    src = write(tmp_path / "src.txt", REF1)
    sari = json.loads(run("--metric", "sari", "--hyp", files["hyp"], "--ref", files["ref2"], "--src", src,
                          "--option", "variant=t2t", "--json"))
    assert "variant:t2t" in sari["signature"] and 0 <= sari["score"] <= 100
    ttr = json.loads(run("--metric", "ttr", "--hyp", files["hyp"], "--json"))
    assert ttr["outputs"] == len(HYPS)


def test_list_prints_metric_names():
    names = json.loads(run("--list", "--json"))["metrics"]
    assert {"bleu", "wer", "sari", "bertscore", "nli"} <= set(names)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--metric", "bleu", "--ref", "SHORT"], "has 2 lines but --hyp"),
        (["--metric", "bleu", "--ref", "MISSING"], "no such file"),
        (["--metric", "bleu"], "needs references"),
        (["--metric", "sari", "--ref", "REF1"], "needs source texts"),
        (["--metric", "blue", "--ref", "REF1"], "unknown metric 'blue'"),
        (["--metric", "bleu", "--ref", "REF1", "--option", "colour=red"], "unknown option"),
        (["--metric", "bleu", "--ref", "REF1", "--option", "tokenize"], "expected KEY=VALUE"),
        (["--metric", "chrf", "--ref", "REF1", "--option", "word_order=two"], "word_order"),
        (["--metric", "bleu", "--ref", "REF2", "--skip-empty-refs"], "segment 1 has no reference"),
        (["--metric", "ttr", "--data", "DATA"], "line 2: expected a list of"),
        (["--metric", "ttr", "--data", "REF1"], "line 1: not JSON"),
    ],
)
def test_bad_input_is_one_clear_command_error(files, extra, message):
    paths = {"SHORT": write(files["dir"] / "short.txt", REF1[:2]), "MISSING": str(files["dir"] / "nope.txt"),
             "REF1": files["ref1"], "REF2": files["ref2"]}
    data = files["dir"] / "data.jsonl"
    data.write_text('[["Blue Spice", "eatType", "pub"]]\n{"not": "triples"}\n[]\n[]\n[]\n', encoding="utf-8")
    paths["DATA"] = str(data)
    args = ["--hyp", files["hyp"]] + [paths.get(a, a) for a in extra]
    with pytest.raises(CommandError, match=message):
        run(*args)


def test_exit_status_and_single_stderr_line_from_the_shell(files):
    short = write(files["dir"] / "short.txt", REF1[:2])
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="workbench.settings.test")
    proc = subprocess.run([sys.executable, "manage.py", "score", "--metric", "bleu", "--hyp", files["hyp"],
                           "--ref", short], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [f"CommandError: --ref {short} has 2 lines but --hyp {files['hyp']} has 5"]
