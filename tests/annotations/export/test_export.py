"""Export filters, pseudonyms, CSV neutralisation and the Hugging Face card on small synthetic campaigns.

Every expected count is computed here from the judgements the test writes, never read back from
the export's own summary.
"""

import csv
import json
import random
import statistics
from collections import defaultdict

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotations.export.csvsafe import neutralise
from annotations.models import Annotator, Campaign, Membership, Project, RatingJudgement
from annotations.models.quality import AnnotatorDecision
from tests.annotations.export.conftest import read_jsonl, run, write_jsonl
from tests.annotations.factories import UserFactory

pytestmark = pytest.mark.django_db

SYSTEMS = ("A", "B", "C")
TEXTS = {"A": '=HYPERLINK("http://evil")', "B": "+1 plus", "C": "-minus first"}
WORKERS = ("w-alpha", "w-beta", "w-gamma", "w-delta")
ITEMS = [f"i{n}" for n in range(8)]


def _dataset_rows():
    for n, item in enumerate(ITEMS):
        yield {
            "item": item,
            "source": f"@source {n}",
            "references": [f"\tref {n}", f"ref two {n}"],
            "outputs": {s: f"{TEXTS[s]} {n}" for s in SYSTEMS},
            "meta": {"n": n},
        }


def _judgements():
    """Likert 1-5, criteria fluency and adequacy; i0-i3 judged by all four workers, i4-i7 by two.
    Items i0 and i4 get unanimous scores, the others spread ones."""
    rng = random.Random(7)
    rows = []
    for n, item in enumerate(ITEMS):
        workers = WORKERS if n < 4 else WORKERS[:2]
        for system in SYSTEMS:
            for criterion in ("fluency", "adequacy"):
                for worker in workers:
                    score = 4 if n in (0, 4) else rng.randint(1, 5)
                    rows.append(
                        {
                            "item": item,
                            "system": system,
                            "annotator": worker,
                            "criterion": criterion,
                            "score": score,
                            "time_spent_ms": 1000 + n,
                        }
                    )
    return rows


@pytest.fixture
def likert(tmp_path):
    user = UserFactory(username="alice.smith", email="alice@example.org", first_name="Alice", last_name="Smith")
    run(
        "import_dataset",
        str(write_jsonl(tmp_path / "d.jsonl", _dataset_rows())),
        "--dataset",
        "toy",
        "--project",
        "toy",
    )
    Membership.objects.create(project=Project.objects.get(name="toy"), user=user, role="annotator")
    run(
        "create_campaign",
        "--dataset",
        "toy",
        "--name",
        "toy-likert",
        "--protocol",
        "likert",
        "--criteria",
        "fluency,adequacy",
        "--scale",
        "1-5",
        "--redundancy",
        "3",
    )
    rows = _judgements()
    call_command(
        "import_judgements",
        str(write_jsonl(tmp_path / "j.jsonl", rows)),
        "--campaign",
        "toy-likert",
        "--map-annotator",
        "w-delta=alice.smith",
        stdout=open("/dev/null", "w"),
    )
    return Campaign.objects.get(name="toy-likert"), rows


def _export(tmp_path, *args, name="out"):
    out = tmp_path / name
    return run("export_dataset", "--campaign", "toy-likert", "--out", str(out), *args), out


def _consensus(scores):
    return 1 - statistics.pstdev(scores) / 2  # scale 1-5: half range 2


def test_filters_change_the_counts_as_the_card_says(likert, tmp_path):
    campaign, rows = likert
    # Two judgements of w-alpha are left unfinished, one abandoned: never exported.
    partial = list(
        RatingJudgement.objects.filter(campaign=campaign, annotator__name="w-alpha", item__external_id="i7").order_by(
            "id"
        )[:3]
    )
    RatingJudgement.objects.filter(pk__in=[j.pk for j in partial[:2]]).update(status="partial")
    RatingJudgement.objects.filter(pk=partial[2].pk).update(status="abandoned")
    dropped = {(j.item.external_id, j.output.system.name, j.criterion, "w-alpha") for j in partial}
    counted = [r for r in rows if (r["item"], r["system"], r["criterion"], r["annotator"]) not in dropped]
    # w-gamma excluded by hand.
    AnnotatorDecision.objects.create(
        campaign=campaign, annotator=Annotator.objects.get(name="w-gamma"), included=False, reason="careless"
    )

    summary, out = _export(
        tmp_path,
        "--systems",
        "A,B",
        "--criteria",
        "fluency",
        "--included-only",
        "--complete-units-only",
        "--min-consensus",
        "0.9",
        "--annotator-figures",
    )
    # Independently: each filter in turn on the rows written above.
    step1 = [r for r in counted if r["system"] in ("A", "B")]
    step2 = [r for r in step1 if r["criterion"] == "fluency"]
    step3 = [r for r in step2 if r["annotator"] != "w-gamma"]
    judges = defaultdict(set)
    for r in step3:
        judges[(r["item"], r["system"], r["criterion"])].add(r["annotator"])
    step4 = [r for r in step3 if len(judges[(r["item"], r["system"], r["criterion"])]) >= 3]
    by_unit = defaultdict(list)
    for r in step4:
        by_unit[(r["item"], r["system"], r["criterion"])].append(r["score"])
    item_consensus = defaultdict(list)
    for (item, _, _), scores in by_unit.items():
        if len(scores) >= 2:
            item_consensus[item].append(_consensus(scores))
    passing = {i for i, values in item_consensus.items() if statistics.mean(values) >= 0.9}
    step5 = [r for r in step4 if r["item"] in passing]
    assert step3 and step4 and step5 and len(step5) < len(step4) < len(step3)  # every filter bites

    expected = [
        ("status", len(rows), len(counted)),
        ("systems", len(counted), len(step1)),
        ("criteria", len(step1), len(step2)),
        ("annotators", len(step2), len(step3)),
        ("complete_units", len(step3), len(step4)),
        ("consensus", len(step4), len(step5)),
    ]
    assert [(f["filter"], f["judgements_before"], f["judgements_after"]) for f in summary["filters"]] == expected
    assert summary["filters"][-1]["items_before"] == len(ITEMS)
    assert summary["filters"][-1]["items_after"] == len(passing)
    assert summary["judgements"] == len(step5) == len(read_jsonl(out / "judgements.jsonl"))
    assert summary["items"] == len(passing) == len(read_jsonl(out / "dataset.jsonl"))
    assert summary["outputs"] == 2 * len(passing) == len(read_jsonl(out / "outputs.jsonl"))

    card = (out / "README.md").read_text()
    for f in summary["filters"]:
        assert f"| {f['judgements_before']} | {f['judgements_after']} |" in card
        assert f["label"] in card
    assert f"| {len(step4)} | {len(step5)} | {len(ITEMS)} | {len(passing)} |" in card
    assert "included annotators only (3 of 4 kept by quality control)" in card
    exported_annotators = set()
    for row in read_jsonl(out / "judgements.jsonl"):
        assert row["system"] in ("A", "B") and row["criterion"] == "fluency"
        exported_annotators.add(row["annotator"])
    # Per-annotator figures are a table of their own, keyed by this export's pseudonyms.
    figures = read_jsonl(out / "annotators.jsonl")
    assert {f["annotator"] for f in figures} == exported_annotators and len(figures) == 3
    assert all(f["included"] is True for f in figures)
    outputs = read_jsonl(out / "outputs.jsonl")
    assert set(outputs[0]["human"]) == {"fluency"}


def test_no_filter_exports_every_counted_judgement(likert, tmp_path):
    campaign, rows = likert
    summary, out = _export(tmp_path)
    assert summary["judgements"] == len(rows) and summary["outputs"] == 24 and summary["items"] == 8
    assert [f["filter"] for f in summary["filters"]] == ["status"]
    exported = read_jsonl(out / "judgements.jsonl")
    assert sorted((r["item"], r["system"], r["criterion"], r["score"], r["time_spent_ms"]) for r in exported) == sorted(
        (r["item"], r["system"], r["criterion"], r["score"], r["time_spent_ms"]) for r in rows
    )
    # Every annotator gets one pseudonym, the same on all their judgements.
    pseudonyms = {r["annotator"] for r in exported}
    assert len(pseudonyms) == 4 and all(p.startswith("annotator-") for p in pseudonyms)
    per_pseudonym = defaultdict(set)
    for r in exported:
        per_pseudonym[r["annotator"]].add(r["item"])
    assert sorted(len(v) for v in per_pseudonym.values()) == [4, 4, 8, 8]
    config = json.loads((out / "campaign.json").read_text())
    assert config["protocol"] == "likert" and config["criteria"] == ["fluency", "adequacy"]
    assert config["scale"] == [1, 5] and config["redundancy"] == 3


def test_pseudonyms_never_leak_names_usernames_or_emails(likert, tmp_path):
    _, rows = likert
    secrets = ["alice.smith", "alice@example.org", "Alice", "Smith", *WORKERS]
    for fmt in ("jsonl", "csv", "hf"):
        summary, out = _export(tmp_path, "--format", fmt, name=f"p-{fmt}")
        blob = "\n".join(p.read_text(encoding="utf-8") for p in sorted(out.iterdir()))
        assert summary["judgements"] == len(rows)
        for secret in secrets:
            assert secret not in blob, (fmt, secret)
    # Pseudonyms differ between two exports (a fresh key each time).
    first = {r["annotator"] for r in read_jsonl(tmp_path / "p-jsonl" / "judgements.jsonl")}
    second = {r["annotator"] for r in read_jsonl(_export(tmp_path, name="again")[1] / "judgements.jsonl")}
    assert len(first) == len(second) == 4 and not first & second

    summary, out = _export(tmp_path, "--real-annotator-ids", name="real")
    names = {r["annotator"] for r in read_jsonl(out / "judgements.jsonl")}
    assert names == {"w-alpha", "w-beta", "w-gamma", "alice.smith"}
    blob = "\n".join(p.read_text(encoding="utf-8") for p in sorted(out.iterdir()))
    assert "alice@example.org" not in blob and "Smith" not in blob.replace("alice.smith", "")


def test_csv_cells_that_would_be_formulas_are_neutralised(likert, tmp_path):
    summary, out = _export(tmp_path, "--format", "csv")
    assert sorted(summary["files"]) == [
        "README.md",
        "campaign.json",
        "croissant.json",
        "dataset.csv",
        "heds.json",
        "judgements.csv",
        "outputs.csv",
    ]

    def table(name):
        with (out / name).open(encoding="utf-8", newline="") as f:
            return list(csv.DictReader(f))

    dataset = table("dataset.csv")
    assert len(dataset) == 8
    assert list(dataset[0]) == [
        "item",
        "source",
        "data",
        "meta",
        "reference",
        "reference_2",
        "output:A",
        "output:B",
        "output:C",
    ]
    assert dataset[3]["source"] == "'@source 3"
    assert dataset[3]["reference"] == "'\tref 3" and dataset[3]["reference_2"] == "ref two 3"
    assert dataset[3]["output:A"] == "'" + TEXTS["A"] + " 3"
    assert dataset[3]["output:B"] == "'+1 plus 3" and dataset[3]["output:C"] == "'-minus first 3"
    outputs = table("outputs.csv")
    assert len(outputs) == 24
    assert {o["text"][0] for o in outputs} == {"'"}
    assert {o["text"][1:] for o in outputs} == {f"{TEXTS[s]} {n}" for s in SYSTEMS for n in range(8)}
    assert "human.fluency.mean" in outputs[0]
    judgements = table("judgements.csv")
    assert len(judgements) == summary["judgements"]
    assert all(j["provenance.output_text"].startswith("'") for j in judgements)
    assert {j["score"] for j in judgements} <= {"1.0", "2.0", "3.0", "4.0", "5.0"}  # numbers stay numbers
    # Nothing in any file starts a formula.
    for name in ("dataset.csv", "outputs.csv", "judgements.csv"):
        with (out / name).open(encoding="utf-8", newline="") as f:
            for row in csv.reader(f):
                for value in row:
                    assert not value.startswith(("=", "+", "@", "\t", "\r")), value
                    assert not value.startswith("-") or value.replace("-", "", 1).replace(".", "").isdigit()


@pytest.mark.parametrize(
    "value,expected",
    [
        ("=1+1", "'=1+1"),
        ("+33 6", "'+33 6"),
        ("-x", "'-x"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("a=b", "a=b"),
        ("", ""),
        (" =x", " =x"),
        ("'=x", "'=x"),
        (-3.5, -3.5),
        (7, 7),
        (None, None),
    ],
)
def test_neutralise(value, expected):
    assert neutralise(value) == expected


def test_hugging_face_datasets_loads_both_configs(likert, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    import datasets

    summary, out = _export(tmp_path, "--format", "hf", "--licence", "cc-by-4.0")
    card = (out / "README.md").read_text()
    assert card.startswith("---\nlicense: cc-by-4.0\n")
    judgements = datasets.load_dataset(str(out), "judgements", split="train", cache_dir=str(tmp_path / "cache"))
    outputs = datasets.load_dataset(str(out), "outputs", split="train", cache_dir=str(tmp_path / "cache"))
    assert judgements.num_rows == summary["judgements"] == len(_judgements()) == 144
    assert outputs.num_rows == summary["outputs"] == 24
    assert {"item", "system", "annotator", "criterion", "score", "provenance"} <= set(judgements.column_names)
    assert outputs[0]["human"]["fluency"]["n"] == 4
    assert sorted(judgements["score"]) == sorted(float(r["score"]) for r in _judgements())


def test_bad_options_are_one_line_each(likert, tmp_path):
    with pytest.raises(CommandError, match="has no criterion 'nope'"):
        call_command(
            "export_dataset",
            "--campaign",
            "toy-likert",
            "--out",
            str(tmp_path / "x"),
            "--systems",
            "Z",
            "--criteria",
            "nope",
            stderr=open("/dev/null", "w"),
        )
    with pytest.raises(CommandError, match="no campaign called"):
        call_command("export_dataset", "--campaign", "missing", "--out", str(tmp_path / "x"))
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "f").write_text("x")
    with pytest.raises(CommandError, match="not an empty folder"):
        call_command("export_dataset", "--campaign", "toy-likert", "--out", str(tmp_path / "full"))


def test_the_card_and_campaign_json_state_the_allocation_and_the_early_stop(likert, tmp_path):
    """annotations.allocation: the policy, its parameters, and when and why the campaign stopped."""
    campaign, _ = likert
    _, out = _export(tmp_path, name="before")
    card = (out / "README.md").read_text()
    assert "- Allocation: overlap-first (units already started were completed to k" in card
    assert "- Stopped early: no" in card
    config = json.loads((out / "campaign.json").read_text())
    assert config["allocation"] == "overlap-first" and config["stopped"] is None
    Campaign.objects.filter(pk=campaign.pk).update(
        allocation="adaptive",
        allocation_params={"min_per_system": 10, "alpha": 0.05, "stable_checks": 3, "check_every": 20},
    )
    call_command(
        "stop_campaign", "--campaign", "toy-likert", "--reason", "budget | spent", stdout=open("/dev/null", "w")
    )
    _, out = _export(tmp_path, name="after")
    card = (out / "README.md").read_text()
    assert (
        "- Allocation: adaptive (after a cold start, only units holding a system pair whose order was still undecided"
    ) in card
    assert "parameters: min_per_system 10, alpha 0.05, stable_checks 3, check_every 20" in card
    campaign.refresh_from_db()
    assert f"- Stopped early on {campaign.stopped_at:%Y-%m-%d %H:%M} UTC by a researcher: budget" in card
    config = json.loads((out / "campaign.json").read_text())
    assert config["allocation"] == "adaptive" and config["allocation_params"]["check_every"] == 20
    assert config["stopped"]["by"] == "researcher" and config["stopped"]["reason"] == "budget | spent"
