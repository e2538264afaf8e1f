"""`manage.py score`: plain-text scoring like sacrebleu's CLI, for any metric, without the database."""

import json
import os
import re
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
    return {
        "hyp": write(tmp_path / "hyp.txt", HYPS),
        "ref1": write(tmp_path / "ref1.txt", REF1),
        "ref2": write(tmp_path / "ref2.txt", REF2),
        "dir": tmp_path,
    }


def run(*args) -> str:
    out = StringIO()
    call_command("score", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_json_corpus_score_and_signature_equal_sacrebleu(files):
    result = json.loads(
        run("--metric", "bleu", "--hyp", files["hyp"], "--ref", files["ref1"], "--ref", files["ref2"], "--json")
    )
    bleu = BLEU()
    expected = bleu.corpus_score(HYPS, [REF1, REF2])
    assert result["metric"] == "bleu" and result["segments"] == len(HYPS)
    assert result["score"] == expected.score
    # sacrebleu's fields in sacrebleu's order and spelling, its version as "sacrebleu:"
    assert result["signature"] == "bleu|v:1|" + bleu.get_signature().format().replace("version:", "sacrebleu:")
    assert result["precisions"] == expected.precisions


def test_segments_file_has_one_line_per_input_in_order(files):
    seg_path = files["dir"] / "segs.jsonl"
    run(
        "--metric",
        "chrf",
        "--hyp",
        files["hyp"],
        "--ref",
        files["ref1"],
        "--segments",
        str(seg_path),
        "--option",
        "word_order=2",
        "--json",
    )
    rows = [json.loads(line) for line in seg_path.read_text(encoding="utf-8").splitlines()]
    chrf = CHRF(word_order=2)
    assert [r["segment"] for r in rows] == list(range(len(HYPS)))
    assert [r["score"] for r in rows] == [chrf.sentence_score(h, [r]).score for h, r in zip(HYPS, REF1)]


def test_skip_empty_refs_gives_variable_reference_counts(files):
    result = json.loads(
        run(
            "--metric",
            "bleu",
            "--hyp",
            files["hyp"],
            "--ref",
            files["ref1"],
            "--ref",
            files["ref2"],
            "--skip-empty-refs",
            "--json",
        )
    )
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
    sari = json.loads(
        run(
            "--metric",
            "sari",
            "--hyp",
            files["hyp"],
            "--ref",
            files["ref2"],
            "--src",
            src,
            "--option",
            "variant=t2t",
            "--json",
        )
    )
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
    paths = {
        "SHORT": write(files["dir"] / "short.txt", REF1[:2]),
        "MISSING": str(files["dir"] / "nope.txt"),
        "REF1": files["ref1"],
        "REF2": files["ref2"],
    }
    data = files["dir"] / "data.jsonl"
    data.write_text('[["Blue Spice", "eatType", "pub"]]\n{"not": "triples"}\n[]\n[]\n[]\n', encoding="utf-8")
    paths["DATA"] = str(data)
    args = ["--hyp", files["hyp"]] + [paths.get(a, a) for a in extra]
    with pytest.raises(CommandError, match=message):
        run(*args)


def test_exit_status_and_single_stderr_line_from_the_shell(files):
    short = write(files["dir"] / "short.txt", REF1[:2])
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="workbench.settings.test")
    proc = subprocess.run(
        [sys.executable, "manage.py", "score", "--metric", "bleu", "--hyp", files["hyp"], "--ref", short],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0
    assert proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        f"CommandError: --ref {short} has 2 lines but --hyp {files['hyp']} has 5"
    ]


def test_huge_option_fails_fast_with_one_line(files, monkeypatch):
    """Issue 12, item 11: max_ngram_order=100000000 used to run 3 minutes and take 20 GB. The work is
    bounded where the option is read: sacrebleu is never handed the order (a BLEU built with it is the
    work that took minutes; here it fails the test at once)."""
    from sacrebleu.metrics.bleu import BLEU as SacreBLEU

    built = SacreBLEU.__init__

    def bounded(self, *args, **kwargs):
        assert kwargs.get("max_ngram_order", 4) <= 10, f"sacrebleu got max_ngram_order={kwargs['max_ngram_order']}"
        built(self, *args, **kwargs)

    monkeypatch.setattr(SacreBLEU, "__init__", bounded)
    with pytest.raises(
        CommandError, match=r"max_ngram_order=100000000 is out of range: expected an integer from 1 to 10"
    ):
        run("--metric", "bleu", "--hyp", files["hyp"], "--ref", files["ref1"], "--option", "max_ngram_order=100000000")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("[" * 5000 + "]" * 5000, "line 2: nested deeper than 8 levels"),
        ('[["\\ud800", "p", "o"]]', "line 2: a string holds a lone surrogate"),
        ('[["s", "p", 1e309]]', "line 2: expected a list of"),
        ('[["s", "p", NaN]]', "line 2: expected a list of"),
        ('{"a": ' * 3000 + "1" + "}" * 3000, "line 2: nested deeper"),
    ],
)
def test_bad_data_lines_are_line_errors_not_tracebacks(files, line, message):
    """Issue 12, items 1-2 for `score --data`: deep nesting, lone surrogates, 1e309."""
    data = files["dir"] / "data.jsonl"
    data.write_text('[["Blue Spice", "eatType", "pub"]]\n' + line + "\n[]\n[]\n[]\n", encoding="utf-8")
    with pytest.raises(CommandError, match=re.escape(message)):
        run("--metric", "ttr", "--hyp", files["hyp"], "--data", str(data))


def test_deep_data_from_the_shell_gives_one_line_and_no_traceback(files):
    data = files["dir"] / "deep.jsonl"
    data.write_text("[" * 100000 + "]" * 100000 + "\n" * 5, encoding="utf-8")
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="workbench.settings.test")
    proc = subprocess.run(
        [sys.executable, "manage.py", "score", "--metric", "ttr", "--hyp", files["hyp"], "--data", str(data)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"CommandError: --data {data} line 1: nested deeper than 8 levels; "
        "expected a list of [subject, predicate, object] string triples"
    ]


def test_long_input_is_scored_in_chunks_with_progress_and_the_same_result(tmp_path):
    hyps = [f"the cat number {i} sat on mat {i % 7}" for i in range(250)]
    refs = [f"a cat number {i} sat on the mat {i % 5}" for i in range(250)]
    hyp, ref = write(tmp_path / "h.txt", hyps), write(tmp_path / "r.txt", refs)
    err = StringIO()
    out = StringIO()
    call_command(
        "score", "--metric", "bleu", "--hyp", hyp, "--ref", ref, "--json", "--chunk-size", "100", stdout=out, stderr=err
    )
    result = json.loads(out.getvalue())
    assert result["score"] == BLEU().corpus_score(hyps, [refs]).score
    assert "|nrefs:1|" in result["signature"]
    lines = err.getvalue().strip().splitlines()
    assert lines[-1].startswith("score bleu: 250/250 segments (100%), ") and "/s, ETA 00:00:00" in lines[-1]
    quiet = StringIO()
    call_command(
        "score",
        "--metric",
        "bleu",
        "--hyp",
        hyp,
        "--ref",
        ref,
        "--chunk-size",
        "100",
        "--no-progress",
        stdout=StringIO(),
        stderr=quiet,
    )
    assert quiet.getvalue() == ""


@pytest.mark.parametrize("metric", ["bleu", "chrf", "ter"])
def test_corpus_score_without_segments_equals_sacrebleu_and_the_scored_segments(tmp_path, metric):
    """Without --segments the command sums the chunks' statistics and scores no segment
    (`Metric.segment_totals`): the corpus score is still sacrebleu's, and the same as with them."""
    from sacrebleu.metrics import TER

    hyps = [f"the cat number {i} sat on mat {i % 7}" if i % 11 else "" for i in range(230)]
    refs1 = [f"a cat number {i} sat on the mat {i % 5}" for i in range(230)]
    refs2 = [f"the cat {i} is on a mat" for i in range(230)]
    hyp, ref1, ref2 = (
        write(tmp_path / name, lines) for name, lines in (("h.txt", hyps), ("r1.txt", refs1), ("r2.txt", refs2))
    )
    args = [
        "--metric",
        metric,
        "--hyp",
        hyp,
        "--ref",
        ref1,
        "--ref",
        ref2,
        "--json",
        "--chunk-size",
        "50",
        "--no-progress",
    ]
    alone = json.loads(run(*args))
    with_segments = json.loads(run(*args, "--segments", str(tmp_path / "segs.jsonl")))
    assert alone == with_segments
    reference = {"bleu": BLEU(), "chrf": CHRF(), "ter": TER()}[metric].corpus_score(hyps, [refs1, refs2])
    assert alone["score"] == reference.score


def test_nli_templates_option_takes_a_file_path(files, tmp_path):
    """The `templates` option accepts the path of a JSON file (ARCHITECTURE.md); the
    metric is built (and the file read) before any model is needed."""
    path = tmp_path / "templates.json"
    path.write_text(json.dumps({"eatType": ["<subject> is a <object>."]}), encoding="utf-8")
    from metrics.scorers import get_metric

    metric = get_metric("nli", templates=str(path))
    assert metric.facts([("Blue Spice", "eatType", "pub")]) == ["Blue Spice is a pub."]
    # Read when the metric first needs it (metrics.scorers.files), so the data must be valid to get there.
    data = tmp_path / "data.jsonl"
    hyp = tmp_path / "hyp1.txt"
    data.write_text(json.dumps([["Blue Spice", "eatType", "pub"]]) + "\n", encoding="utf-8")
    hyp.write_text("Blue Spice is a pub.\n", encoding="utf-8")
    with pytest.raises(CommandError, match="templates: not allowed or not found"):
        run(
            "--metric", "nli", "--hyp", str(hyp), "--data", str(data), "--option", f"templates={tmp_path / 'nope.json'}"
        )


def test_cli_gives_the_yisi0_cxx_document_score(shared_data):
    folder = shared_data / "yisi-test"
    expected = float((folder / "test_hyp.docyisi0").read_text().split()[0])
    result = json.loads(
        run(
            "--metric",
            "yisi0",
            "--hyp",
            str(folder / "test_hyp.en"),
            "--ref",
            str(folder / "test_ref.en"),
            "--json",
            "--chunk-size",
            "3",
            "--no-progress",
        )
    )
    assert result["score"] == pytest.approx(expected, abs=1e-6)


def test_cli_mincer_edge_space_case(tmp_path):
    hyp, ref = write(tmp_path / "h.txt", ["xy abcdefghij"]), write(tmp_path / "r.txt", ["abcdefghij"])
    seg_path = tmp_path / "segs.jsonl"
    result = json.loads(
        run(
            "--metric",
            "mincer",
            "--hyp",
            hyp,
            "--ref",
            ref,
            "--option",
            "metric=cer",
            "--option",
            "threshold=0.05",
            "--segments",
            str(seg_path),
            "--json",
        )
    )
    # The seed's MinCER with jiwer.cer: fixing x and y leaves " abcdefghij", which jiwer strips.
    assert result["score"] == 2.0
    [row] = [json.loads(line) for line in seg_path.read_text().splitlines()]
    assert [e["hyp"] for e in row["errors"]] == ["x", "y", " "]
    assert row["corrected"] == [0, 1]


@pytest.mark.parametrize("metric", ["bleu", "chrf"])
def test_light_entry_point_gives_the_same_answer_without_django(files, metric):
    """`python -m metrics.score` is the same program as `manage.py score`, started without Django
    (so its start-up is sacrebleu's, not the web application's); its score is sacrebleu's."""
    probe = (
        "import runpy, sys; sys.argv = ['metrics.score'] + sys.argv[1:]\n"
        "try:\n    runpy.run_module('metrics.score', run_name='__main__')\n"
        "except SystemExit as exit:\n    code = exit.code\n"
        "sys.stderr.write('django loaded\\n' if 'django' in sys.modules else 'no django\\n'); sys.exit(code)"
    )
    args = ["--metric", metric, "--hyp", files["hyp"], "--ref", files["ref1"], "--ref", files["ref2"], "--json"]
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    light = subprocess.run(
        [sys.executable, "-c", probe, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert light.returncode == 0, light.stderr
    assert light.stderr.strip().endswith("no django")
    assert json.loads(light.stdout) == json.loads(run(*args))
    scorer = BLEU() if metric == "bleu" else CHRF()
    assert json.loads(light.stdout)["score"] == pytest.approx(scorer.corpus_score(HYPS, [REF1, REF2]).score)


def test_light_entry_point_bad_input_is_one_line(files):
    result = subprocess.run(
        [sys.executable, "-m", "metrics.score", "--metric", "bleu", "--hyp", "/nonexistent/x"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == ["score: --hyp /nonexistent/x: no such file"]


def test_llm_judge_reads_the_source_when_given_and_pairwise_groups_by_it(files, tmp_path, judge_models):
    hyps = write(tmp_path / "h.txt", ["the cat sat", "a cat sat on a mat", "old men", "dogs ran"])
    srcs = write(tmp_path / "s.txt", ["le chat", "le chat", "vieux", "vieux"])
    common = [
        "--metric",
        "llm-judge",
        "--hyp",
        hyps,
        "--option",
        f"model={judge_models['llama']}",
        "--option",
        "device=cpu",
        "--json",
        "--chunk-size",
        "2",
    ]
    plain = json.loads(run(*common))  # no --src: the template's Source line is left out
    assert 1 <= plain["score"] <= 5 and plain["signature"].startswith("llm-judge|v:1|model:llama|mode:score")
    segments = tmp_path / "seg.jsonl"
    pairwise = json.loads(run(*common, "--src", srcs, "--option", "mode=pairwise", "--segments", str(segments)))
    rows = [json.loads(line) for line in segments.read_text().splitlines()]
    # Outputs sharing a source are one item; chunks of 2 lines would not split them anyway.
    assert [len(r["pairs"]) for r in rows] == [1, 1, 1, 1]
    assert rows[0]["score"] + rows[1]["score"] == pytest.approx(1.0)
    assert pairwise["score"] == pytest.approx(0.5)
    with pytest.raises(CommandError, match="^llm-judge: mode='rank'"):
        run(*common, "--option", "mode=rank")


def test_comet_from_the_command_line_equals_the_reference(tmp_path):
    """`score --metric comet --option model=DIR` like bertscore: the scores unbabel-comet 2.2.7 gave
    on the same tiny checkpoint (tests/metrics/scorers/comet_fixtures, from bench/reference)."""
    fixtures = ROOT / "tests" / "metrics" / "scorers" / "comet_fixtures"
    expected = json.loads((fixtures / "expected.json").read_text(encoding="utf-8"))
    samples = expected["samples"]
    segments = tmp_path / "segments.jsonl"
    run(
        "--metric", "comet",
        "--option", f"model={fixtures / 'comet-tiny'}",
        "--option", f"encoder={fixtures / 'tiny-xlmr'}",
        "--option", "device=cpu",
        "--hyp", write(tmp_path / "mt.txt", [s["mt"] for s in samples]),
        "--ref", write(tmp_path / "ref.txt", [s["ref"] for s in samples]),
        "--src", write(tmp_path / "src.txt", [s["src"] for s in samples]),
        "--segments", str(segments),
    )  # fmt: skip
    scores = [json.loads(line)["score"] for line in segments.read_text(encoding="utf-8").splitlines()]
    assert scores == pytest.approx(expected["scores"]["comet-tiny"], abs=1e-5)


@pytest.mark.parametrize("mode", ["ref", "qe"])
def test_metricx_from_the_command_line_equals_the_reference(tmp_path, mode):
    """`score --metric metricx --option model=DIR --option tokenizer=DIR`: the scores
    google-research/metricx's models.py gave on the same tiny checkpoint (metricx_fixtures), with
    references (reference mode) and without (QE mode)."""
    fixtures = ROOT / "tests" / "metrics" / "scorers" / "metricx_fixtures"
    expected = json.loads((fixtures / "expected.json").read_text(encoding="utf-8"))
    samples = expected["samples"]
    segments = tmp_path / "segments.jsonl"
    refs = ["--ref", write(tmp_path / "ref.txt", [s["ref"] for s in samples])] if mode == "ref" else []
    run(
        "--metric", "metricx",
        "--option", f"model={fixtures / 'mt5-tiny'}",
        "--option", f"tokenizer={fixtures / 'mt5-tiny'}",
        "--option", f"max_input_length={expected['provenance']['max_input_length']}",
        "--option", "device=cpu",
        "--hyp", write(tmp_path / "mt.txt", [s["mt"] for s in samples]),
        "--src", write(tmp_path / "src.txt", [s["src"] for s in samples]),
        "--segments", str(segments),
        *refs,
    )  # fmt: skip
    scores = [json.loads(line)["score"] for line in segments.read_text(encoding="utf-8").splitlines()]
    # float32: relative to the score, as in tests/metrics/scorers/test_metricx.py (the CPU's kernels sum in
    # their own order).
    assert scores == pytest.approx(expected["scores"][mode], rel=1e-5, abs=1e-5)
