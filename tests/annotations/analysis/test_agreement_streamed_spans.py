"""The agreement report's and the quality page's memory for ESA, MQM and cESA (issue 46 item 5):
their span agreement, derived pairs and suggestion figures are fed an item's rows at a time as the
reader streams them, never holding every row (with its spans) nor a triple per character, with
the same figures as the whole-rows computation they replaced and as the krippendorff package."""

import io
import json
from collections import defaultdict

import krippendorff
import numpy as np
import pytest
from django.core.cache import cache
from django.core.management import call_command

from annotations.analysis import agreement as ag, report, spans as sp
from annotations.analysis.suggestions import suggestion_report
from annotations.demo import demo_datasets
from annotations.demo.simulated import campaign_simulate
from annotations.models import Campaign, Output
from annotations.protocols.rows import JudgementRow
from annotations.quality import selectors as quality
from annotations.selectors.judgements import ALL, INCLUDED
from annotations.selectors.outputs import output_identities
from annotations.services.campaigns import campaign_create
from annotations.services.imports import dataset_import
from tests.memory import python_peak

QUIET = {"stdout": io.StringIO(), "stderr": io.StringIO()}


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


# ---- the whole-rows computation the report made before (HEAD before issue 46 item 5) ---------------


def whole_span_agreement(rows, texts=None) -> dict:
    if texts is None:
        texts = dict(Output.objects.filter(pk__in={r.output_id for r in rows}).values_list("pk", "text"))
    per_output: dict[int, dict] = defaultdict(dict)
    for r in rows:
        spans = [(s["start"], s["end"], s["severity"]) for s in r.spans if not s.get("missing")]
        per_output[r.output_id][r.annotator_id] = sp.char_labels(len(texts.get(r.output_id, "")), spans)
    shared = {o: labels for o, labels in per_output.items() if len(labels) >= 2}
    counts = ag.value_counts(ag.Table.from_triples(sp.char_table(shared)))
    out = {
        **sp.pairwise_f1(shared),
        "outputs": len(shared),
        "krippendorff_alpha_chars": {lv: ag._clean(ag.krippendorff_alpha(counts, lv)) for lv in ("nominal", "ordinal")},
    }
    if any(s.get("category") for r in rows for s in r.spans):
        codes: dict[str, int] = {}
        by_category: dict[int, dict] = defaultdict(dict)
        for r in sorted(rows, key=lambda r: (r.output_id, r.annotator_id)):
            if r.output_id in shared:
                marks = [(s["start"], s["end"], s.get("category", "")) for s in r.spans if not s.get("missing")]
                by_category[r.output_id][r.annotator_id] = sp.char_categories(
                    len(texts.get(r.output_id, "")), marks, codes
                )
        counts = ag.value_counts(ag.Table.from_triples(sp.char_table(by_category)))
        out["categories"] = {
            **sp.pairwise_category_f1(by_category),
            "level": "top-level category",
            "krippendorff_alpha_chars_nominal": ag._clean(ag.krippendorff_alpha(counts, "nominal")),
        }
    return out


def whole_report(campaign: Campaign, *, bootstrap: int, seed: int) -> dict:
    """agreement_report's criteria as computed from every row at once."""
    j = report.load(campaign=campaign)
    protocol = j.protocol
    identity = output_identities(dataset=campaign.dataset)
    names = j.names()
    out = {}
    for c, rows in j.rows.items():
        figures = ag.criterion_agreement(
            protocol, rows, scale=campaign.criterion_scale(c), annotators=j.judgements.used, bootstrap=bootstrap,
            seed=seed, names=names, cohen=True, per_annotator=True, identity=identity,
        )  # fmt: skip
        if protocol.per_output:
            systems = dict(Output.objects.filter(pk__in={r.output_id for r in rows}).values_list("pk", "system__name"))
            by_system = defaultdict(list)
            for r in rows:
                by_system[systems.get(r.output_id)].append(r)
            level = protocol.agreement.level
            figures["per_system"] = {}
            for s, mine in sorted(by_system.items(), key=lambda kv: str(kv[0])):
                counts = ag.value_counts(ag.protocol_table(protocol, mine, identity))
                figures["per_system"][s] = {
                    f"krippendorff_alpha_{level}": ag._clean(ag.krippendorff_alpha(counts, level)),
                    "n_units": counts.n_units,
                }
        figures["spans"] = whole_span_agreement(rows)
        if campaign.prefilled:
            figures["suggestions"] = suggestion_report(campaign, rows)
        if protocol.derives_pairs:
            pairs = ag.criterion_agreement(
                protocol.pairs_protocol(), protocol.pair_rows(rows), scale=(None, None),
                annotators=j.judgements.used, bootstrap=bootstrap, seed=seed, identity=identity,
            )  # fmt: skip
            pairs["derived_from"] = protocol.derived_pairs_label
            pairs["headline"]["label"] = f"{pairs['headline']['label']}, {protocol.derived_pairs_label}"
            figures["pairwise_derived"] = pairs
        out[c] = figures
    return out


def whole_quality_agreement(campaign: Campaign) -> dict:
    identity = output_identities(dataset=campaign.dataset)
    j = report.load(campaign=campaign, annotators=ALL)
    return {
        c: ag.criterion_agreement(
            j.protocol, rows, scale=campaign.criterion_scale(c), annotators=j.judgements.used, identity=identity
        )["headline"]
        for c, rows in j.rows.items()
    }


def streamed(campaign: Campaign, *, bootstrap: int = 30, seed: int = 1) -> dict:
    return report.agreement_report(campaign=campaign, bootstrap=bootstrap, seed=seed)


def char_alpha_by_krippendorff(campaign: Campaign, level: str) -> float:
    """Character-level alpha as the krippendorff package computes it: annotators x (output, character)."""
    j = report.load(campaign=campaign)
    (rows,) = j.rows.values()
    texts = dict(Output.objects.filter(pk__in={r.output_id for r in rows}).values_list("pk", "text"))
    judged = defaultdict(set)
    for r in rows:
        judged[r.output_id].add(r.annotator_id)
    shared = sorted(o for o, who in judged.items() if len(who) >= 2)
    columns = {(o, i): k for k, (o, i) in enumerate((o, i) for o in shared for i in range(len(texts[o])))}
    annotators = sorted({r.annotator_id for r in rows})
    data = np.full((len(annotators), len(columns)), np.nan)
    for r in rows:
        if r.output_id in judged and len(judged[r.output_id]) >= 2:
            labels = sp.char_labels(
                len(texts[r.output_id]),
                [(s["start"], s["end"], s["severity"]) for s in r.spans if not s.get("missing")],
            )
            for i, v in enumerate(labels.tolist()):
                data[annotators.index(r.annotator_id), columns[(r.output_id, i)]] = v
    return krippendorff.alpha(reliability_data=data, level_of_measurement=level)


def random_span_rows(seed: int, outputs: int = 60) -> tuple[list, dict]:
    """MQM-like rows: 1-5 annotators per output (1/(n - 1) not always a power of two), 0-4 spans
    each with a category, some missing-content marks, outputs listed in a shuffled id order."""
    rng = np.random.default_rng(seed)
    categories = ["Accuracy/Mistranslation", "Fluency/Grammar", "Style", "Terminology/Wrong term", "Accuracy/Omission"]
    ids = rng.permutation(np.arange(100, 100 + outputs)).tolist()
    texts = {o: "x" * int(rng.integers(0, 40)) for o in ids}
    rows, n = [], 0
    for item, o in enumerate(ids):
        for a in rng.choice(8, int(rng.integers(1, 6)), replace=False).tolist():
            spans = []
            for _ in range(int(rng.integers(0, 5))):
                start = int(rng.integers(0, 40))
                span = {"start": start, "end": start + int(rng.integers(0, 8)),
                        "severity": str(rng.choice(["neutral", "minor", "major", "critical"])),
                        "category": str(rng.choice(categories))}  # fmt: skip
                spans.append(
                    {"missing": True, "severity": "major", "category": span["category"]} if rng.random() < 0.1 else span
                )
            n += 1
            rows.append(
                JudgementRow(id=n, annotator_id=a, item_id=item, criterion="mqm", status="complete", origin="api",
                             time_spent_ms=None, shown_order=[], created_at=None, output_id=o, spans=spans)
            )  # fmt: skip
    return rows, texts


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_span_tally_fed_output_by_output_equals_every_row_at_once(seed):
    rows, texts = random_span_rows(seed)
    expected = whole_span_agreement(rows, texts)
    tally = report.SpanTally(categories=True)
    for item in sorted({r.item_id for r in rows}):  # as the report feeds it: whole items, in turn
        tally.add([r for r in rows if r.item_id == item], texts)
    got = tally.figures()
    alphas = got.pop("krippendorff_alpha_chars"), got["categories"].pop("krippendorff_alpha_chars_nominal")
    want = expected.pop("krippendorff_alpha_chars"), expected["categories"].pop("krippendorff_alpha_chars_nominal")
    assert got == expected and got["pairs"] > 0 and got["categories"]["pairs"] > 0
    # The same coincidences summed in another order: equal to the last bits.
    for lv in ("nominal", "ordinal"):
        assert alphas[0][lv] == pytest.approx(want[0][lv], abs=1e-12)
    assert alphas[1] == pytest.approx(want[1], abs=1e-12)


# ---- demo-like data: the demo's translations, judged by its simulated annotators ------------------

DEMO_SPECS = {
    "esa": {"criteria": ["quality"], "severities": ["minor", "major"]},
    "cesa": {"criteria": ["quality"], "severities": ["minor", "major"], "tuple_size": 3},
    "mqm": {"criteria": ["mqm"]},
}


def demo_campaign(protocol: str) -> Campaign:
    from annotations.services.projects import project_get_or_create
    from tests.annotations.factories import UserFactory

    demo = next(d for d in demo_datasets() if d.name == "demo-news-de-en")
    user = UserFactory()
    project_get_or_create(name="Demo", owner=user)
    result = dataset_import(
        stream=io.BytesIO(demo.jsonl()), dataset_name=demo.name, project_name="Demo", fmt="jsonl",
        filename=f"{demo.name}.jsonl", user=user,
    )  # fmt: skip
    campaign = campaign_create(
        dataset=result.dataset, name=f"demo {protocol}", protocol=protocol, redundancy=3, seed=7, **DEMO_SPECS[protocol]
    )
    assert campaign_simulate(campaign, annotators=3, seed=2) > 0
    return campaign


@pytest.mark.django_db
@pytest.mark.parametrize("protocol", ["esa", "cesa", "mqm"])
def test_streamed_figures_equal_the_whole_rows_on_demo_like_data(protocol, monkeypatch):
    campaign = demo_campaign(protocol)
    expected = whole_report(campaign, bootstrap=30, seed=1)
    # Chunks of a few items: the tallies are fed many times, an item's rows never split.
    monkeypatch.setattr(report, "STREAM_ROWS", 7)
    got = streamed(campaign)["criteria"]
    assert got == expected
    (figures,) = got.values()
    assert figures["spans"]["outputs"] > 0 and figures["spans"]["pairs"] > 0
    if protocol == "mqm":
        assert figures["spans"]["categories"]["pairs"] > 0
    for level in ("nominal", "ordinal"):
        assert figures["spans"]["krippendorff_alpha_chars"][level] == pytest.approx(
            char_alpha_by_krippendorff(campaign, level), abs=1e-12
        )

    # The quality page: the same headline as from every row.
    cache.clear()
    monkeypatch.setattr(quality, "AGREEMENT_ROWS", 7)
    page = quality.campaign_agreement(campaign=campaign)
    whole = whole_quality_agreement(campaign)
    assert {c: v[ALL] for c, v in page.items()} == whole
    assert {c: v[INCLUDED]["value"] for c, v in page.items()} == {c: v["value"] for c, v in whole.items()}


# ---- memory: flat in the judgements ----------------------------------------------------------------

SYSTEMS, ANNOTATORS = 4, 3
WORDS = "the cat sat on a mat with some red hats today while dogs ran far away".split()


def span_campaign(tmp_path, name: str, items: int) -> Campaign:
    """ESA: every output judged by three annotators, each marking 0-3 random spans of its text."""
    rng = np.random.default_rng(items)
    rows, judgements = [], []
    for i in range(items):
        outputs = {f"s{k}": " ".join(rng.choice(WORDS, 12)) for k in range(SYSTEMS)}
        rows.append({"item": f"i{i}", "source": f"s{i}", "outputs": outputs})
        for k, text in enumerate(outputs.values()):
            for a in range(ANNOTATORS):
                spans = []
                for _ in range(int(rng.integers(0, 4))):
                    start = int(rng.integers(0, len(text) - 5))
                    spans.append({"start": start, "end": start + int(rng.integers(1, 6)),
                                  "severity": str(rng.choice(["minor", "major"]))})  # fmt: skip
                judgements.append(
                    {"item": f"i{i}", "system": f"s{k}", "annotator": f"a{a}", "criterion": "quality",
                     "score": float(rng.integers(0, 101)), "spans": spans}
                )  # fmt: skip
    call_command("import_dataset", _write(tmp_path / f"{name}.jsonl", rows), "--dataset", name, **QUIET)
    call_command(
        "create_campaign", "--dataset", name, "--name", name, "--protocol", "esa", "--criteria", "quality", **QUIET
    )
    call_command("import_judgements", _write(tmp_path / f"{name}-j.jsonl", judgements), "--campaign", name, **QUIET)
    return Campaign.objects.get(name=name)


def peak_of(compute) -> tuple[object, int]:
    cache.clear()
    with python_peak() as peak:
        out = compute()
    return out, peak.bytes


def agreement_of(campaign):
    return report.agreement_report(campaign=campaign, bootstrap=100, seed=0, per_annotator=False, cohen=False)


def quality_of(campaign):
    return quality.campaign_agreement(campaign=campaign)


@pytest.mark.slow
@pytest.mark.django_db
def test_span_agreement_and_quality_agreement_hold_about_a_kilobyte_a_judgement_not_its_spans(tmp_path, monkeypatch):
    # What is held a chunk at a time (the reader's items, the rows fed together) made small, so
    # that the growth from 1,200 to 12,000 judgements is what is held for every judgement.
    reader = report.campaign_judgements
    monkeypatch.setattr(report, "campaign_judgements", lambda **kw: reader(**kw, chunk_items=20))
    monkeypatch.setattr("annotations.selectors.judgements.CHUNK_ITEMS", 20)
    monkeypatch.setattr(report, "STREAM_ROWS", 200)
    monkeypatch.setattr(quality, "AGREEMENT_ROWS", 200, raising=False)
    small, large = span_campaign(tmp_path, "small", 100), span_campaign(tmp_path, "large", 1000)
    n_small, n_large = 100 * SYSTEMS * ANNOTATORS, 1000 * SYSTEMS * ANNOTATORS
    per_judgement = {}
    for compute in (agreement_of, quality_of):
        peak_of(lambda: compute(small))  # imports and caches warmed
        _, peak_small = peak_of(lambda: compute(small))
        figures, peak_large = peak_of(lambda: compute(large))
        if compute is agreement_of:
            assert figures["criteria"]["quality"]["n_judgements"] == n_large
            assert figures["criteria"]["quality"]["spans"]["outputs"] == 1000 * SYSTEMS
        else:
            assert figures["quality"]["all"]["n_judgements"] == n_large
        per_judgement[compute.__name__] = (peak_large - peak_small) / (n_large - n_small)
        print(f"{compute.__name__}: {peak_small / 2**20:.1f} MB at {n_small}, {peak_large / 2**20:.1f} MB at "
              f"{n_large} judgements: {per_judgement[compute.__name__]:.0f} bytes a judgement")  # fmt: skip
    # Before: every row with its spans, and a (unit, annotator, value) triple per character, held:
    # 16,832 bytes a judgement for the report here; at 6,000 -> 60,000 judgements (same campaigns,
    # 500 and 5,000 items, default chunks) 95 -> 997 MB, and the quality agreement 9.6 -> 94 MB
    # (1,637 bytes). Now 1,026 and 662 here, 10 -> 62 MB and 7.2 -> 38 MB: the reliability tables'
    # numbers, the bootstrap's per-unit arrays and the outputs' identities, as for Likert.
    assert per_judgement["agreement_of"] < 1500, per_judgement
    assert per_judgement["quality_of"] < 1000, per_judgement


# ---- real data ------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.django_db
def test_streamed_figures_equal_the_whole_rows_on_real_mqm_and_asset(shared_data, tmp_path, monkeypatch):
    """WMT21 TED en-de MQM (real spans and categories, one rater per segment) and ASSET's 4,500
    ratings by 15 workers imported as ESA scores without spans (three criteria)."""
    tsv = shared_data / "wmt-mqm" / "mqm_ted_ende.tsv"
    ratings = shared_data / "asset" / "human_ratings.csv"
    if not tsv.is_file() or not ratings.is_file():
        pytest.skip(f"{tsv} or {ratings} is absent (see ../shared/data/SOURCES.md)")
    call_command("import_dataset", str(tsv), "--dataset", "ted", "--project", "wmt", "--format", "mqm-tsv", **QUIET)
    call_command(
        "create_campaign", "--dataset", "ted", "--name", "ted", "--protocol", "mqm", "--criteria", "mqm", **QUIET
    )
    call_command(
        "import_judgements", str(tsv), "--campaign", "ted", "--format", "mqm-tsv", "--skip-invalid", **QUIET
    )  # one line without its closing </v>: left out

    import csv

    with ratings.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    items = {r["original_sentence_id"]: r["simplification"] for r in rows}
    _write(
        tmp_path / "asset.jsonl", [{"item": i, "source": i, "outputs": {"rated": text}} for i, text in items.items()]
    )
    call_command("import_dataset", str(tmp_path / "asset.jsonl"), "--dataset", "asset", **QUIET)
    call_command(
        "create_campaign", "--dataset", "asset", "--name", "asset", "--protocol", "esa", "--criteria",
        "meaning,fluency,simplicity", **QUIET,
    )  # fmt: skip
    judgements = [
        {"item": r["original_sentence_id"], "system": "rated", "annotator": r["worker_id"], "criterion": r["aspect"],
         "score": float(r["rating"]), "spans": []}
        for r in rows
    ]  # fmt: skip
    call_command("import_judgements", _write(tmp_path / "asset-j.jsonl", judgements), "--campaign", "asset", **QUIET)

    monkeypatch.setattr(report, "STREAM_ROWS", 500)
    monkeypatch.setattr(quality, "AGREEMENT_ROWS", 500)
    for name, n in (("ted", 529 * 14 - 1), ("asset", len(rows))):
        campaign = Campaign.objects.get(name=name)
        out = streamed(campaign)
        assert out["judgements_used"]["judgements"] == n
        assert out["criteria"] == whole_report(campaign, bootstrap=30, seed=1)
        cache.clear()
        page = quality.campaign_agreement(campaign=campaign)
        assert {c: v[ALL] for c, v in page.items()} == whole_quality_agreement(campaign)
    ted = Campaign.objects.get(name="ted")
    assert "categories" in streamed(ted)["criteria"]["mqm"]["spans"]
    assert out["criteria"]["meaning"]["spans"]["outputs"] == len(items)
