"""MQM: the score equals mt-metrics-eval's score_mqm.py on the same ratings; WMT's MQM TSV imports,
scores and exports round trip; bad TSV lines, typologies and weights are refused with their reason."""

import hashlib
import json
import random
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotations import protocols
from annotations.models import Campaign, ErrorSpan, SpanJudgement
from annotations.protocols import mqm_scoring as mq
from annotations.selectors.judgements import ALL, campaign_judgements
from tests.annotations.test_real_data import write_jsonl

pytestmark = pytest.mark.django_db

# ---- a WMT-style MQM TSV from a seeded generator ---------------------------------------------------
WORDS = [
    "the",
    "cat",
    "sat",
    "on",
    "a",
    "mat",
    "while",
    "rain",
    "fell",
    "over",
    "quiet",
    "town",
    "and",
    "nobody",
    "noticed",
    "it",
    "für",
    "naïve",
    "café",
]
CATEGORIES = [
    "Accuracy/Mistranslation",
    "Accuracy/Omission",
    "Accuracy/Addition",
    "Fluency/Punctuation",
    "Fluency/Grammar",
    "Fluency/Spelling",
    "Style/Awkward",
    "Terminology/Inappropriate for context",
    "Non-translation!",
    "Source error",
    "Other",
    "Locale convention/Date format",
]
SYSTEMS = ("sysA", "sysB", "sysC")
REFERENCE = "the cat sat on the mat and nobody noticed it"
HEADER = "\t".join(["system", "doc", "doc_id", "seg_id", "rater", "source", "target", "category", "severity"])


def generate(seed=22, segments=6, raters=("r1", "r2", "r3"), critical=False):
    """(output texts by (system, segment), the TSV): one row per error, spans as <v>...</v> (15% with
    no mark: an error marked in the source), No-error rows, raters who skip a segment."""
    rng = random.Random(seed)
    texts = {}
    for s in SYSTEMS:
        for i in range(1, segments + 1):
            texts[(s, i)] = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 9)))
    rows = [HEADER]
    severities = ["Major", "Minor", "Neutral"] + (["Critical"] if critical else [])
    for s in SYSTEMS:
        for i in range(1, segments + 1):
            text = texts[(s, i)]
            words = text.split(" ")
            for r in raters:
                if rng.random() < 0.2:
                    continue
                n = rng.choice([0, 0, 1, 1, 2, 3])
                if n == 0:
                    rows.append("\t".join([s, "doc1", str(i), str(i), r, f"source {i}", text, "No-error", "No-error"]))
                for _ in range(n):
                    a = rng.randrange(len(words))
                    b = rng.randrange(a, len(words)) + 1
                    if rng.random() < 0.15:
                        target = text
                    else:
                        target = " ".join(words[:a] + ["<v>" + " ".join(words[a:b]) + "</v>"] + words[b:])
                    rows.append(
                        "\t".join(
                            [
                                s,
                                "doc1",
                                str(i),
                                str(i),
                                r,
                                f"source {i}",
                                target,
                                rng.choice(CATEGORIES),
                                rng.choice(severities),
                            ]
                        )
                    )
    return texts, "\n".join(rows) + "\n"


# Expected segment scores: mt-metrics-eval's converters/score_mqm.py (google-research/mt-metrics-eval
# at HEAD, commit 38882cc "Updates for WMT23" for that file), run on exactly these TSVs with absl-py
# in a scratch virtualenv:
#   python score_mqm.py --input default.tsv                       (its default weights)
#   python score_mqm.py --input critical.tsv --noforce_contiguous --weights "Major:5 Minor:1 Neutral:0
#     Critical:10 Major/Non-translation!:25 Minor/Fluency/Punctuation:0.1 Major/Accuracy:7
#     Critical/Accuracy/Omission:12"
# (system, seg_id) -> the third column of its output. The TSVs' SHA-256 pin the generator.
DEFAULT_SHA = "5ea53f80c2e97e988e8baefbf5d9d7024999b6b085e1fe54ac425e6f49c6b182"
DEFAULT_EXPECTED = {
    ("sysA", 1): -0.5,
    ("sysA", 2): -2.5,
    ("sysA", 3): -2.0,
    ("sysA", 4): -0.6666666666666666,
    ("sysA", 5): -0.0,
    ("sysA", 6): -2.5,
    ("sysB", 1): -18.0,
    ("sysB", 2): -5.0,
    ("sysB", 3): -0.3333333333333333,
    ("sysB", 4): -0.0,
    ("sysB", 5): -0.5,
    ("sysB", 6): -3.6666666666666665,
    ("sysC", 1): -0.3333333333333333,
    ("sysC", 2): -1.0,
    ("sysC", 3): -0.0,
    ("sysC", 4): -5.333333333333333,
    ("sysC", 5): -0.0,
    ("sysC", 6): -1.0,
}
CRITICAL_WEIGHTS = (
    "Major:5 Minor:1 Neutral:0 Critical:10 Major/Non-translation!:25 Minor/Fluency/Punctuation:0.1 "
    "Major/Accuracy:7 Critical/Accuracy/Omission:12"
)
CRITICAL_SHA = "d58f870b4a84cfa6826d504b42ef2e811530d82ba8ccb3d17607124f4b6ac7d2"
CRITICAL_EXPECTED = {
    ("sysA", 1): -4.0,
    ("sysA", 2): -20.0,
    ("sysA", 3): -0.0,
    ("sysA", 5): -0.0,
    ("sysA", 6): -13.0,
    ("sysB", 1): -3.3666666666666667,
    ("sysB", 2): -4.333333333333333,
    ("sysB", 3): -21.0,
    ("sysB", 4): -8.5,
    ("sysB", 5): -10.0,
    ("sysB", 6): -13.0,
    ("sysC", 1): -1.0,
    ("sysC", 2): -0.0,
    ("sysC", 3): -7.0,
    ("sysC", 4): -0.0,
    ("sysC", 5): -11.666666666666666,
    ("sysC", 6): -0.0,
}


def run(*args) -> dict:
    out = StringIO()
    call_command(*args, "--json", stdout=out)
    return json.loads(out.getvalue())


def fails(*args) -> str:
    err = StringIO()
    with pytest.raises(CommandError) as exc:
        call_command(*args, stderr=err)
    return f"{exc.value}\n{err.getvalue()}"


def _dataset(tmp_path, texts, name="wmt"):
    segments = sorted({i for _, i in texts})
    # WMT's document and position in it, as item meta: the TSV export writes them back as doc, doc_id.
    rows = [
        {
            "item": str(i),
            "source": f"source {i}",
            "outputs": {s: texts[(s, i)] for s in SYSTEMS},
            "references": [REFERENCE],
            "meta": {"doc": "doc1", "doc_id": i},
        }
        for i in segments
    ]
    run("import_dataset", str(write_jsonl(tmp_path / f"{name}.jsonl", rows)), "--dataset", name, "--project", "mt")


def _scores(campaign) -> dict:
    rows = list(campaign_judgements(campaign=campaign, annotators=ALL))
    scores = protocols.of(campaign).output_scores(rows)
    from annotations.models import Output

    where = {
        o.pk: (o.system.name, int(o.item.external_id))
        for o in Output.objects.filter(pk__in=scores).select_related("system", "item")
    }
    return {where[o]: v for o, v in scores.items()}


@pytest.mark.parametrize(
    "seed,critical,sha,weights,expected",
    [
        (22, False, DEFAULT_SHA, None, DEFAULT_EXPECTED),
        (7, True, CRITICAL_SHA, CRITICAL_WEIGHTS, CRITICAL_EXPECTED),
    ],
)
def test_segment_scores_equal_score_mqm_py(tmp_path, seed, critical, sha, weights, expected):
    texts, tsv = generate(seed=seed, critical=critical)
    assert hashlib.sha256(tsv.encode()).hexdigest() == sha  # the generator still makes the reference's input
    _dataset(tmp_path, texts)
    args = ["create_campaign", "--dataset", "wmt", "--name", "mqm", "--protocol", "mqm", "--criteria", "mqm"]
    if critical:
        args += ["--severities", "neutral,minor,major,critical", "--mqm-weights", weights]
    run(*args)
    (tmp_path / "r.tsv").write_text(tsv, encoding="utf-8")
    result = run("import_judgements", str(tmp_path / "r.tsv"), "--campaign", "mqm", "--format", "mqm-tsv")
    assert result["judgements"] == sum(1 for line in tsv.splitlines()[1:] if line) - sum(1 for _ in _extra_rows(tsv))
    got = _scores(Campaign.objects.get(name="mqm"))
    assert set(got) == set(expected)
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=1e-12), key


def _extra_rows(tsv):
    """Rows beyond the first of each (rater, system, segment): one judgement holds them all."""
    seen = set()
    for line in tsv.splitlines()[1:]:
        f = line.split("\t")
        key = (f[4], f[0], f[3])
        if key in seen:
            yield line
        seen.add(key)


def test_weights_follow_score_mqm_py():
    weights = mq.weights_parse(mq.DEFAULT_WEIGHTS)
    assert weights == {
        "major": 5.0,
        "minor": 1.0,
        "neutral": 0.0,
        "major/non-translation!": 25.0,
        "minor/fluency/punctuation": 0.1,
    }
    # Most specific match; case-insensitive; "!" is part of WMT's category name, not an operator.
    assert mq.error_weight(weights, "Minor", "Fluency/Punctuation") == 0.1
    assert mq.error_weight(weights, "minor", "fluency/punctuation/extra") == 0.1
    assert mq.error_weight(weights, "Minor", "Fluency/Grammar") == 1.0
    assert mq.error_weight(weights, "Major", "Non-translation!") == 25.0
    assert mq.error_weight(weights, "Major", "Non-translation") == 5.0
    assert mq.error_weight(weights, "Critical", "Accuracy") == 0.0  # no entry: score_mqm.py counts 0
    assert mq.judgement_score(weights, []) == 0.0 and str(mq.judgement_score(weights, [])) == "0.0"
    for bad, reason in [
        ("Major5", "is not SEVERITY"),
        ("Major:x", "is not a number"),
        ("Majr:5", "not a severity"),
        ("Major:5 major:6", "weighted twice"),
        ("Major:inf", "finite"),
    ]:
        with pytest.raises(mq.TypologyError, match=reason):
            mq.weights_parse(bad)


def test_tsv_import_score_export_round_trip(tmp_path):
    texts, tsv = generate(seed=22)
    _dataset(tmp_path, texts)
    run("create_campaign", "--dataset", "wmt", "--name", "mqm", "--protocol", "mqm", "--criteria", "mqm")
    (tmp_path / "r.tsv").write_text(tsv, encoding="utf-8")
    run("import_judgements", str(tmp_path / "r.tsv"), "--campaign", "mqm", "--format", "mqm-tsv")
    campaign = Campaign.objects.get(name="mqm")
    # Spans are stored with the typology's spelling and offsets into the output text.
    span = (
        ErrorSpan.objects.filter(judgement__campaign=campaign, missing=False)
        .select_related("judgement__output")
        .first()
    )
    assert span.category in mq.category_paths(mq.DEFAULT_TYPOLOGY)
    first = tsv.splitlines()[1].split("\t")
    assert first[6].startswith("<v>rain the</v>")
    stored = ErrorSpan.objects.get(
        judgement__campaign=campaign,
        judgement__annotator__name="r1",
        judgement__output__system__name="sysA",
        judgement__item__external_id="1",
    )
    assert (stored.start, stored.end, stored.severity, stored.category) == (0, 8, "minor", "Source error")

    summary = run(
        "export_dataset",
        "--campaign",
        "mqm",
        "--format",
        "jsonl",
        "--out",
        str(tmp_path / "out"),
        "--real-annotator-ids",
    )
    assert "judgements.mqm.tsv" in summary["files"]
    exported = (tmp_path / "out" / "judgements.mqm.tsv").read_text(encoding="utf-8")
    # The same ratings (row order aside): every row of the input comes back.
    assert sorted(exported.splitlines()[1:]) == sorted(tsv.splitlines()[1:])
    assert exported.splitlines()[0] == HEADER

    # ... and imports into a fresh campaign with the same scores; the JSONL export too.
    run("create_campaign", "--dataset", "wmt", "--name", "again", "--protocol", "mqm", "--criteria", "mqm")
    run("import_judgements", str(tmp_path / "out" / "judgements.mqm.tsv"), "--campaign", "again", "--format", "mqm-tsv")
    run("create_campaign", "--dataset", "wmt", "--name", "jsonl", "--protocol", "mqm", "--criteria", "mqm")
    run("import_judgements", str(tmp_path / "out" / "judgements.jsonl"), "--campaign", "jsonl")
    for name in ("again", "jsonl"):
        got = _scores(Campaign.objects.get(name=name))
        assert got == pytest.approx(DEFAULT_EXPECTED, abs=1e-12)
    line = json.loads((tmp_path / "out" / "judgements.jsonl").read_text().splitlines()[0])
    assert all("category" in s for s in line["spans"])
    # Re-importing the same file changes nothing (same spans, same categories).
    again = run("import_judgements", str(tmp_path / "r.tsv"), "--campaign", "mqm", "--format", "mqm-tsv")
    assert again["created"] == 0


def test_score_in_a_jsonl_line_is_recomputed_not_imported(tmp_path):
    texts, _ = generate(seed=22)
    _dataset(tmp_path, texts)
    run("create_campaign", "--dataset", "wmt", "--name", "mqm", "--protocol", "mqm", "--criteria", "mqm")
    line = {
        "item": "1",
        "system": "sysA",
        "annotator": "x",
        "criterion": "mqm",
        "score": 99,
        "spans": [
            {"start": 0, "end": 4, "severity": "major", "category": "accuracy/mistranslation"},
            {"missing": True, "severity": "minor", "category": "Fluency/Punctuation"},
        ],
    }
    run("import_judgements", str(write_jsonl(tmp_path / "j.jsonl", [line])), "--campaign", "mqm")
    j = SpanJudgement.objects.get(campaign__name="mqm")
    assert j.score == pytest.approx(-5.1)
    assert sorted(j.spans.values_list("category", flat=True)) == ["Accuracy/Mistranslation", "Fluency/Punctuation"]


@pytest.mark.parametrize(
    "row,reason",
    [
        ("sysA\tdoc1\t1\t1\tr1\tsource 1", "line 2: expected 9 tab-separated fields"),
        (
            "sysA\tdoc1\t1\t1\tr1\ts\t<v>rain</v> the noticed mat on\tAccuracy/Bogus\tMajor",
            "line 2: category 'Accuracy/Bogus' is not in the campaign's typology",
        ),
        (
            "sysA\tdoc1\t1\t1\tr1\ts\t<v>rain</v> the noticed mat on\tAccuracy/Omission\tCritical",
            "line 2: severity 'Critical' is not one of the campaign's",
        ),
        (
            "sysA\tdoc1\t1\t1\tr1\ts\t<v>rain <v>the</v> noticed mat on\tOther\tMajor",
            "line 2: the target must mark one",
        ),
        (
            "sysA\tdoc1\t1\t1\tr1\ts\train the <v>noticed</v> cat on\tOther\tMajor",
            "line 2: the target (without its <v> marks) is not the output of system 'sysA' for item '1'",
        ),
        ("sysZ\tdoc1\t1\t1\tr1\ts\train the noticed mat on\tNo-error\tNo-error", "line 2: unknown system 'sysZ'"),
        ("sysA\tdoc1\t1\t99\tr1\ts\tx\tNo-error\tNo-error", "line 2: unknown item '99' in dataset 'wmt'"),
        ("sysA\tdoc1\t1\t1\t\ts\tx\tNo-error\tNo-error", "line 2: empty rater"),
    ],
)
def test_bad_tsv_lines_are_refused_with_their_line_and_nothing_is_written(tmp_path, row, reason):
    texts, _ = generate(seed=22)
    _dataset(tmp_path, texts)
    run("create_campaign", "--dataset", "wmt", "--name", "mqm", "--protocol", "mqm", "--criteria", "mqm")
    good = "sysB\tdoc1\t1\t1\tr1\ts\t" + texts[("sysB", 1)] + "\tNo-error\tNo-error"
    (tmp_path / "bad.tsv").write_text(f"{HEADER}\n{row}\n{good}\n", encoding="utf-8")
    message = fails("import_judgements", str(tmp_path / "bad.tsv"), "--campaign", "mqm", "--format", "mqm-tsv")
    assert reason in message
    assert "Traceback" not in message
    assert not SpanJudgement.objects.filter(campaign__name="mqm").exists()


def test_tsv_needs_its_header_and_an_mqm_campaign(tmp_path):
    texts, tsv = generate(seed=22)
    _dataset(tmp_path, texts)
    run("create_campaign", "--dataset", "wmt", "--name", "mqm", "--protocol", "mqm", "--criteria", "mqm")
    run("create_campaign", "--dataset", "wmt", "--name", "esa", "--protocol", "esa", "--criteria", "q")
    (tmp_path / "r.tsv").write_text(tsv, encoding="utf-8")
    assert "--format mqm-tsv is not a format of esa campaigns" in fails(
        "import_judgements", str(tmp_path / "r.tsv"), "--campaign", "esa", "--format", "mqm-tsv"
    )
    (tmp_path / "h.tsv").write_text("\n".join(tsv.splitlines()[1:]), encoding="utf-8")
    assert "line 1: the header must name the columns" in fails(
        "import_judgements", str(tmp_path / "h.tsv"), "--campaign", "mqm", "--format", "mqm-tsv"
    )


def test_create_campaign_typology_and_weights(tmp_path):
    texts, _ = generate(seed=22)
    _dataset(tmp_path, texts)
    made = run("create_campaign", "--dataset", "wmt", "--name", "mqm", "--protocol", "mqm", "--criteria", "mqm")
    campaign = Campaign.objects.get(pk=made["id"])
    assert campaign.options["mqm_weights"] == mq.DEFAULT_WEIGHTS and campaign.options["severities"] == [
        "neutral",
        "minor",
        "major",
    ]
    assert [n["name"] for n in campaign.options["typology"]] == [
        "Accuracy",
        "Fluency",
        "Terminology",
        "Style",
        "Locale convention",
        "Non-translation!",
        "Source error",
        "Source issue",
        "Other",
    ]
    tree = [{"name": "Meaning", "children": [{"name": "Wrong"}, {"name": "Missing"}]}, {"name": "Form"}]
    (tmp_path / "t.json").write_text(json.dumps(tree))
    made = run(
        "create_campaign",
        "--dataset",
        "wmt",
        "--name",
        "own",
        "--protocol",
        "mqm",
        "--criteria",
        "mqm",
        "--typology",
        str(tmp_path / "t.json"),
        "--mqm-weights",
        "Major:10 Minor:2 Neutral:0",
    )
    own = Campaign.objects.get(pk=made["id"])
    assert mq.category_paths(own.options["typology"]) == ["Meaning", "Meaning/Wrong", "Meaning/Missing", "Form"]
    assert [n["key"] for n in own.options["typology"]] == ["e", "f"]  # "m" is the missing-content key
    # Bad files: the JSON's line, or the path of the category at fault.
    (tmp_path / "syntax.json").write_text('[\n  {"name": "A"},\n  {"name": }\n]')
    assert "line 3 column" in fails(
        "create_campaign",
        "--dataset",
        "wmt",
        "--name",
        "x",
        "--protocol",
        "mqm",
        "--criteria",
        "mqm",
        "--typology",
        str(tmp_path / "syntax.json"),
    )
    for tree, reason in [
        ([{"name": "A", "children": [{"name": "B/C"}]}], "[0].children[0].name: 'B/C' must hold no \"/\""),
        ([{"name": "A"}, {"name": "a"}], "[1].name: 'a' appears twice"),
        ([{"name": "A", "colour": "red"}], "[0]: unknown keys colour"),
        ([{"name": "A", "key": "m"}], "[0].key: 'm' is taken"),
        ([{"name": "No-error"}], '[0].name: "No-error" is not a category'),
        ({"name": "A"}, "must be a JSON list"),
    ]:
        (tmp_path / "bad.json").write_text(json.dumps(tree))
        assert reason in fails(
            "create_campaign",
            "--dataset",
            "wmt",
            "--name",
            "x",
            "--protocol",
            "mqm",
            "--criteria",
            "mqm",
            "--typology",
            str(tmp_path / "bad.json"),
        )
    assert "no weight for the severity 'critical'" in fails(
        "create_campaign",
        "--dataset",
        "wmt",
        "--name",
        "x",
        "--protocol",
        "mqm",
        "--criteria",
        "mqm",
        "--severities",
        "minor,major,critical",
    )
    assert "options.mqm_weights (--mqm-weights): 'Major5' is not SEVERITY" in fails(
        "create_campaign",
        "--dataset",
        "wmt",
        "--name",
        "x",
        "--protocol",
        "mqm",
        "--criteria",
        "mqm",
        "--mqm-weights",
        "Major5",
    )
    assert "options.mqm_weights (--mqm-weights): not a setting of esa campaigns" in fails(
        "create_campaign",
        "--dataset",
        "wmt",
        "--name",
        "x",
        "--protocol",
        "esa",
        "--criteria",
        "q",
        "--mqm-weights",
        "Major:5",
    )
    assert "options.severities (--severities): 'neutral' not among minor, major, critical" in fails(
        "create_campaign",
        "--dataset",
        "wmt",
        "--name",
        "x",
        "--protocol",
        "esa",
        "--criteria",
        "q",
        "--severities",
        "neutral",
    )
    assert not Campaign.objects.filter(name="x").exists()


# Each rater's sum of weights per segment: the rater columns of score_mqm.py's output on default.tsv
# (same run as DEFAULT_EXPECTED); the stored judgement score is minus this.
RATER_PENALTIES = {
    ("sysA", 1, "r1"): 1.0,
    ("sysA", 1, "r2"): 0.0,
    ("sysA", 2, "r1"): 5.0,
    ("sysA", 2, "r3"): 0.0,
    ("sysA", 3, "r1"): 5.0,
    ("sysA", 3, "r2"): 1.0,
    ("sysA", 3, "r3"): 0.0,
    ("sysA", 4, "r1"): 0.0,
    ("sysA", 4, "r2"): 0.0,
    ("sysA", 4, "r3"): 2.0,
    ("sysA", 5, "r2"): 0.0,
    ("sysA", 5, "r3"): 0.0,
    ("sysA", 6, "r1"): 5.0,
    ("sysA", 6, "r2"): 0.0,
    ("sysB", 1, "r1"): 2.0,
    ("sysB", 1, "r2"): 26.0,
    ("sysB", 1, "r3"): 26.0,
    ("sysB", 2, "r2"): 10.0,
    ("sysB", 2, "r3"): 0.0,
    ("sysB", 3, "r1"): 0.0,
    ("sysB", 3, "r2"): 1.0,
    ("sysB", 3, "r3"): 0.0,
    ("sysB", 4, "r1"): 0.0,
    ("sysB", 4, "r3"): 0.0,
    ("sysB", 5, "r1"): 0.0,
    ("sysB", 5, "r3"): 1.0,
    ("sysB", 6, "r1"): 1.0,
    ("sysB", 6, "r2"): 5.0,
    ("sysB", 6, "r3"): 5.0,
    ("sysC", 1, "r1"): 0.0,
    ("sysC", 1, "r2"): 1.0,
    ("sysC", 1, "r3"): 0.0,
    ("sysC", 2, "r1"): 1.0,
    ("sysC", 3, "r2"): 0.0,
    ("sysC", 3, "r3"): 0.0,
    ("sysC", 4, "r1"): 1.0,
    ("sysC", 4, "r2"): 5.0,
    ("sysC", 4, "r3"): 10.0,
    ("sysC", 5, "r1"): 0.0,
    ("sysC", 5, "r2"): 0.0,
    ("sysC", 5, "r3"): 0.0,
    ("sysC", 6, "r2"): 1.0,
}


def test_agreement_rankings_and_correlate_use_the_mqm_score(tmp_path):
    import krippendorff
    import numpy as np

    texts, tsv = generate(seed=22)
    _dataset(tmp_path, texts)
    run("create_campaign", "--dataset", "wmt", "--name", "mqm", "--protocol", "mqm", "--criteria", "mqm")
    (tmp_path / "r.tsv").write_text(tsv, encoding="utf-8")
    run("import_judgements", str(tmp_path / "r.tsv"), "--campaign", "mqm", "--format", "mqm-tsv")
    stored = {
        (j.output.system.name, int(j.item.external_id), j.annotator.name): j.score
        for j in SpanJudgement.objects.select_related("output__system", "item", "annotator")
    }
    assert stored == pytest.approx({k: -v for k, v in RATER_PENALTIES.items()}, abs=1e-12)

    # Score-level agreement: interval alpha over outputs, the reference `krippendorff` package on
    # score_mqm.py's per-rater figures.
    units = sorted({(s, i) for s, i, _ in RATER_PENALTIES})
    data = np.array([[RATER_PENALTIES.get((s, i, r), np.nan) for s, i in units] for r in ("r1", "r2", "r3")])
    result = run("agreement", "--campaign", "mqm", "--bootstrap", "10")
    fig = result["criteria"]["mqm"]
    assert fig["krippendorff_alpha"]["interval"] == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="interval"), abs=1e-9
    )
    assert result["definition"]["value"] == "MQM score" and result["definition"]["level"] == "interval"
    assert set(fig["spans"]) >= {"mean_f1", "micro_f1", "krippendorff_alpha_chars", "categories"}

    # Rankings: systems by the mean of their segments' MQM scores (score_mqm.py's figures), best first.
    from annotations.analysis.report import ranking_report

    rows = ranking_report(campaign=Campaign.objects.get(name="mqm"), bootstrap=5)["criteria"]["mqm"]
    means = {s: np.mean([v for (t, _), v in DEFAULT_EXPECTED.items() if t == s]) for s in SYSTEMS}
    assert [r["system"] for r in rows] == sorted(SYSTEMS, key=lambda s: -means[s])
    assert {r["system"]: r["score"] for r in rows} == pytest.approx(means, abs=1e-12)

    # correlate: chrF against the MQM score of each output (sacrebleu and scipy as the references).
    import sacrebleu
    from scipy.stats import pearsonr

    from tests.annotations.analysis.metric_runs import score_dataset

    score_dataset("wmt", "chrf")
    keys = sorted(DEFAULT_EXPECTED)
    chrf = [sacrebleu.sentence_chrf(texts[k], [REFERENCE]).score for k in keys]
    got = run("correlate", "--campaign", "mqm", "--metric", "chrf", "--criterion", "mqm", "--method", "pearson")
    assert got["n"] == len(keys)
    assert got["pearson"] == pytest.approx(pearsonr(chrf, [DEFAULT_EXPECTED[k] for k in keys])[0], abs=1e-9)


def test_span_agreement_on_categories():
    """Two raters, one output: hand-computed character F1 with and without categories."""
    from annotations.analysis import spans as sp

    codes = {}
    a = sp.char_categories(10, [(0, 4, "Accuracy/Mistranslation")], codes)
    b = sp.char_categories(10, [(2, 6, "Accuracy/Omission")], codes)
    c = sp.char_categories(10, [(2, 6, "Fluency/Grammar")], codes)
    # 2 shared characters of 4 + 4 marked: F1 = 2 * 2 / 8.
    assert sp.pairwise_category_f1({1: {1: a, 2: b}})["mean_f1"] == 0.5
    assert sp.pairwise_category_f1({1: {1: a, 2: c}})["mean_f1"] == 0.0
    severities = {1: {1: sp.char_labels(10, [(0, 4, "minor")]), 2: sp.char_labels(10, [(2, 6, "neutral")])}}
    assert sp.pairwise_f1(severities)["mean_f1"] == 0.5  # a neutral error is marked too


def test_a_quality_control_line_needs_no_score_and_gets_the_computed_one(tmp_path):
    from annotations.models.quality import ControlJudgement

    texts, _ = generate(seed=22)
    _dataset(tmp_path, texts)
    run("create_campaign", "--dataset", "wmt", "--name", "mqm", "--protocol", "mqm", "--criteria", "mqm")
    spans = [{"start": 0, "end": 4, "severity": "major", "category": "Other"}]
    lines = [
        {"item": "1", "system": "sysA", "annotator": "x", "criterion": "mqm", "spans": spans},
        {"item": "1", "system": "sysA", "annotator": "x", "criterion": "mqm", "control": "repeat", "spans": spans},
    ]
    run("import_judgements", str(write_jsonl(tmp_path / "c.jsonl", lines)), "--campaign", "mqm")
    assert ControlJudgement.objects.get().answer["score"] == -5.0
