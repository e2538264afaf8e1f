"""Every protocol survives export -> import into an empty database: same values, shown orders, spans, times."""

import json

import pytest

from annotations.models import (
    BestWorstJudgement,
    Campaign,
    ErrorSpan,
    PairwiseJudgement,
    Project,
    RatingJudgement,
    SpanJudgement,
)
from tests.annotations.export.conftest import read_jsonl, run, write_jsonl

pytestmark = pytest.mark.django_db

DATASET = [
    {
        "item": "x1",
        "source": "Ein Haus.",
        "data": [["House", "colour", "red"]],
        "references": ["A house."],
        "outputs": {"s1": "A house.", "s2": "An house here.", "s3": "House a.", "s4": "The home."},
        "meta": {"k": 1},
    },
    {
        "item": "x2",
        "source": "Zwei.",
        "references": [],
        "outputs": {"s1": "Two.", "s2": "Too.", "s3": "2.", "s4": "Twos."},
    },
]

JUDGEMENTS = {
    "rankme": [
        {
            "item": "x1",
            "system": "s2",
            "annotator": "w1",
            "criterion": "quality",
            "score": 120.5,
            "rank": 1,
            "shown_order": ["s2", "s1", "s3"],
            "time_spent_ms": 3000,
        },
        {
            "item": "x1",
            "system": "s1",
            "annotator": "w1",
            "criterion": "quality",
            "score": 80,
            "rank": 2,
            "shown_order": ["s2", "s1", "s3"],
            "time_spent_ms": 3000,
        },
        {"item": "x2", "system": "s3", "annotator": "w2", "criterion": "quality", "score": 10},
    ],
    "pairwise": [
        {
            "item": "x1",
            "annotator": "w1",
            "criterion": "quality",
            "a": "s3",
            "b": "s1",
            "winner": "a",
            "time_spent_ms": 1200,
        },
        {"item": "x1", "annotator": "w2", "criterion": "quality", "a": "s1", "b": "s3", "winner": "tie"},
        {"item": "x2", "annotator": "w1", "criterion": "quality", "a": "s4", "b": "s2", "winner": "b"},
    ],
    "bws": [
        {
            "item": "x1",
            "annotator": "w1",
            "criterion": "quality",
            "outputs": ["s4", "s2", "s1", "s3"],
            "best": "s1",
            "worst": "s2",
            "time_spent_ms": 999,
        },
        {
            "item": "x2",
            "annotator": "w2",
            "criterion": "quality",
            "outputs": ["s1", "s2", "s3", "s4"],
            "best": "s4",
            "worst": "s3",
        },
    ],
    "esa": [
        {
            "item": "x1",
            "system": "s2",
            "annotator": "w1",
            "criterion": "quality",
            "score": 40,
            "spans": [{"start": 0, "end": 2, "severity": "major"}, {"missing": True, "severity": "minor"}],
        },
        {"item": "x2", "system": "s1", "annotator": "w2", "criterion": "quality", "score": 95, "spans": []},
    ],
}


def _stored(protocol):
    """The stored judgements in names only (no ids), shown order as system names."""

    def names(ids):
        from annotations.models import Output

        systems = dict(Output.objects.filter(pk__in=ids).values_list("pk", "system__name"))
        return [systems[i] for i in ids]

    model = {"rankme": RatingJudgement, "pairwise": PairwiseJudgement, "bws": BestWorstJudgement, "esa": SpanJudgement}[
        protocol
    ]
    by_annotator = {}
    for j in model.objects.filter(campaign__name=f"c-{protocol}").select_related("annotator", "item").order_by("id"):
        row = [j.item.external_id, j.criterion, j.time_spent_ms, names(j.shown_order), j.status]
        if protocol == "rankme":
            row += [j.output.system.name, j.score, j.rank]
        elif protocol == "esa":
            row += [
                j.output.system.name,
                j.score,
                sorted(
                    ErrorSpan.objects.filter(judgement=j).values_list("start", "end", "severity", "missing"), key=str
                ),
            ]
        elif protocol == "pairwise":
            row += [j.output_a.system.name, j.output_b.system.name, j.winner]
        else:
            row += [names(sorted(j.outputs)), j.best.system.name, j.worst.system.name]
        # Annotators are pseudonymised: compare the judgements of each annotator as a group.
        by_annotator.setdefault(j.annotator_id, []).append(row)
    return sorted((sorted(rows, key=str) for rows in by_annotator.values()), key=str)


@pytest.mark.parametrize("protocol", ["rankme", "pairwise", "bws", "esa"])
def test_protocol_round_trip(protocol, tmp_path):
    run("import_dataset", str(write_jsonl(tmp_path / "d.jsonl", DATASET)), "--dataset", "toy", "--project", "p")
    scale = {"rankme": [], "pairwise": [], "bws": [], "esa": ["--scale", "0-100"]}[protocol]
    run(
        "create_campaign",
        "--dataset",
        "toy",
        "--name",
        f"c-{protocol}",
        "--protocol",
        protocol,
        "--criteria",
        "quality",
        *scale,
    )
    run(
        "import_judgements", str(write_jsonl(tmp_path / "j.jsonl", JUDGEMENTS[protocol])), "--campaign", f"c-{protocol}"
    )
    before = _stored(protocol)
    assert len(sum(before, [])) == len(JUDGEMENTS[protocol])

    out = tmp_path / "export"
    summary = run("export_dataset", "--campaign", f"c-{protocol}", "--out", str(out))
    assert summary["judgements"] == len(JUDGEMENTS[protocol])
    rows = read_jsonl(out / "judgements.jsonl")
    if protocol == "pairwise":
        # a is the output shown first, as in the import format.
        assert [(r["a"], r["b"], r["winner"]) for r in rows] == [
            ("s3", "s1", "a"),
            ("s1", "s3", "tie"),
            ("s4", "s2", "b"),
        ]
    if protocol == "esa":
        assert rows[0]["spans"] == [{"start": 0, "end": 2, "severity": "major"}, {"missing": True, "severity": "minor"}]
        assert rows[0]["provenance"]["output_text"][0:2] == "An"
    assert read_jsonl(out / "dataset.jsonl")[0] == DATASET[0]

    Project.objects.all().delete()
    config = json.loads((out / "campaign.json").read_text())
    run("import_dataset", str(out / "dataset.jsonl"), "--dataset", "toy", "--project", "q")
    run(
        "create_campaign",
        "--dataset",
        "toy",
        "--name",
        config["name"],
        "--protocol",
        config["protocol"],
        "--criteria",
        ",".join(config["criteria"]),
        *scale,
    )
    run("import_judgements", str(out / "judgements.jsonl"), "--campaign", config["name"])
    assert _stored(protocol) == before
    assert Campaign.objects.get(name=f"c-{protocol}").dataset.items.count() == 2


def test_a_system_subset_leaves_other_systems_out_of_shown_orders_and_still_imports(tmp_path):
    run("import_dataset", str(write_jsonl(tmp_path / "d.jsonl", DATASET)), "--dataset", "toy", "--project", "p")
    run("create_campaign", "--dataset", "toy", "--name", "c-rankme", "--protocol", "rankme", "--criteria", "quality")
    run("import_judgements", str(write_jsonl(tmp_path / "j.jsonl", JUDGEMENTS["rankme"])), "--campaign", "c-rankme")
    out = tmp_path / "export"
    summary = run("export_dataset", "--campaign", "c-rankme", "--out", str(out), "--systems", "s1,s2")
    assert [f["judgements_after"] for f in summary["filters"]] == [3, 2]
    rows = read_jsonl(out / "judgements.jsonl")
    assert [r["shown_order"] for r in rows] == [["s2", "s1"], ["s2", "s1"]]
    assert all(set(r["outputs"]) == {"s1", "s2"} for r in read_jsonl(out / "dataset.jsonl"))

    Project.objects.all().delete()
    run("import_dataset", str(out / "dataset.jsonl"), "--dataset", "toy", "--project", "q")
    run("create_campaign", "--dataset", "toy", "--name", "c-rankme", "--protocol", "rankme", "--criteria", "quality")
    assert run("import_judgements", str(out / "judgements.jsonl"), "--campaign", "c-rankme")["created"] == 2
