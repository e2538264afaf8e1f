"""Two pseudonymised exports of one campaign cannot be joined to tell which pseudonyms are one
annotator, except through the judgements themselves (the README's promise, as the card words it).

The campaign is judged through the real engine by simulated annotators (each judgement gets its
own server time), exported twice. For every column that is not the judgement itself, a value that
belongs to a single pseudonym in each export would link those two pseudonyms; none may. The same
join on the microsecond times the rows used to carry links every annotator, so the test can fail.
"""

from collections import defaultdict

import pytest

from annotations.demo.simulated import campaign_simulate
from annotations.models import Campaign, RatingJudgement
from tests.annotations.export.conftest import read_jsonl, run, write_jsonl

pytestmark = pytest.mark.django_db

# The judgement itself (what was judged and how): two exports of the same judgements can always be
# aligned on these, and the card says so.
JUDGEMENT = {
    "item",
    "system",
    "criterion",
    "score",
    "annotator",
    "shown_order",
    "time_spent_ms",
    "spans",
    "a",
    "b",
    "winner",
    "outputs",
    "best",
    "worst",
    "rank",
}


def _flat(row: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in row.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = repr(value)
    return out


def _links(first: list[dict], second: list[dict], column: str) -> set[tuple[str, str]]:
    """Pseudonym pairs (first, second) that one value of `column` tells apart from everyone else."""
    owners = [defaultdict(set), defaultdict(set)]
    for side, rows in enumerate((first, second)):
        for row in rows:
            if column in row:
                owners[side][row[column]].add(row["annotator"])
    return {
        (next(iter(a)), next(iter(owners[1][v])))
        for v, a in owners[0].items()
        if len(a) == 1 and len(owners[1].get(v, ())) == 1
    }


@pytest.fixture
def judged(tmp_path):
    rows = [
        {
            "item": f"i{n}",
            "references": [f"the cat sat on mat {n}"],
            "outputs": {"A": f"the cat sat on the mat {n}", "B": f"a cat is on a mat {n}", "C": f"cats {n}"},
        }
        for n in range(10)
    ]
    run("import_dataset", str(write_jsonl(tmp_path / "d.jsonl", rows)), "--dataset", "link", "--project", "link")
    run(
        "create_campaign",
        "--dataset",
        "link",
        "--name",
        "link-likert",
        "--protocol",
        "likert",
        "--criteria",
        "fluency",
        "--scale",
        "1-5",
        "--redundancy",
        "3",
    )
    campaign = Campaign.objects.get(name="link-likert")
    assert campaign_simulate(campaign, annotators=4, seed=1) == 30 * 3
    return campaign


def _export(tmp_path, name: str, *args) -> list[dict]:
    out = tmp_path / name
    run("export_dataset", "--campaign", "link-likert", "--out", str(out), *args)
    return [_flat(r) for r in read_jsonl(out / "judgements.jsonl")], out


def test_two_exports_link_no_pseudonym_outside_the_judgements(judged, tmp_path):
    first, out1 = _export(tmp_path, "one")
    second, out2 = _export(tmp_path, "two")
    assert {r["annotator"] for r in first}.isdisjoint({r["annotator"] for r in second})  # fresh pseudonyms
    columns = set().union(*first) - JUDGEMENT
    assert "provenance.judged_on" in columns and "provenance.status" in columns
    for column in sorted(columns):
        assert not _links(first, second, column), column
    # No per-annotator figures on the rows, and no annotators table unless asked for.
    assert not any(c.startswith("provenance.annotator_") for c in columns)
    assert not (out1 / "annotators.jsonl").exists()

    card = (out1 / "README.md").read_text()
    assert "can still be aligned by those judgements" in card


def test_the_join_finds_links_where_there_are_some(judged, tmp_path):
    """The join is sensitive: on the judgement itself (item, output, score together), which the card
    says can align two exports, it does link pseudonyms; and so would the exact moment of each
    judgement that rows used to carry (here taken from the database and put on the rows)."""
    first, _ = _export(tmp_path, "one")
    second, _ = _export(tmp_path, "two")
    for rows in (first, second):
        for row in rows:
            row["judgement"] = "|".join(row[c] for c in ("item", "system", "criterion", "score"))
    assert _links(first, second, "judgement")

    moment = {
        (j.item.external_id, j.output.system.name, j.criterion, repr(j.score), j.annotator_id): j.created_at
        for j in RatingJudgement.objects.filter(campaign=judged).select_related("item", "output__system")
    }
    assert len(set(moment.values())) == len(moment)  # one moment per judgement, as the old rows showed
