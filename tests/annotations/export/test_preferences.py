"""`export_dataset --format preferences`: chosen/rejected pairs from pairwise, best-worst, RankME and
cESA campaigns, loaded with Hugging Face `datasets`. Expected pairs are counted here from the
imported lines (by system names), never from the export's own code."""

import itertools
import json
from collections import Counter, defaultdict
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.annotations.analysis.test_cesa import _lines as cesa_lines
from tests.annotations.analysis.test_protocols import SYSTEMS, _likert, dataset, run  # noqa: F401
from tests.annotations.test_real_data import write_jsonl

pytestmark = pytest.mark.django_db


def _export(tmp_path, campaign):
    out = tmp_path / f"pref-{campaign}"
    stdout = StringIO()
    call_command(
        "export_dataset", "--campaign", campaign, "--format", "preferences", "--out", str(out), "--json", stdout=stdout
    )
    return out, json.loads(stdout.getvalue())


def _load(tmp_path, out, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    import datasets

    return datasets.load_dataset(str(out), "preferences", split="train", cache_dir=str(tmp_path / "cache"))


def _expected(votes: dict) -> dict:
    """(item, x, y) with x < y by name -> (chosen, rejected, tie, agreement, annotators)."""
    out = {}
    for (item, x, y), ballots in votes.items():
        counts = Counter(ballots.values())  # x, y or tie per annotator
        tie = counts[x] == counts[y] or counts["tie"] > max(counts[x], counts[y])
        chosen, rejected = (x, y) if tie or counts[x] > counts[y] else (y, x)
        out[(item, x, y)] = (chosen, rejected, tie, max(counts.values()) / sum(counts.values()), len(ballots))
    return out


def _check(rows, expected, texts):
    got = {}
    for r in rows:
        x, y = sorted([r["chosen_system"], r["rejected_system"]])
        got[(r["item"], x, y)] = (
            r["chosen_system"],
            r["rejected_system"],
            r["tie"],
            pytest.approx(r["agreement"]),
            r["annotators"],
        )
        assert r["chosen"] == texts[(r["item"], r["chosen_system"])]
        assert r["rejected"] == texts[(r["item"], r["rejected_system"])]
        assert r["prompt"] == texts[(r["item"], "source")]
    assert got == expected


def _texts(rows):
    found = {}
    for row in rows:
        found[(row["item"], "source")] = row["source"]
        for system, text in row["outputs"].items():
            found[(row["item"], system)] = text
    return found


def test_pairwise_votes_pool_into_chosen_rejected_pairs_with_ties_and_agreement(dataset, tmp_path, monkeypatch):  # noqa: F811
    run("create_campaign", "--dataset", "toy", "--name", "pw", "--protocol", "pairwise", "--criteria", "overall")
    lines = []
    votes = defaultdict(dict)
    for i in range(6):
        for x, y in itertools.combinations(range(4), 2):
            for a in ("v1", "v2", "v3", "v4")[: 2 + (i % 3)]:  # 2, 3 or 4 annotators: even counts make ties
                winner = ["a", "b", "tie"][(i + x + 2 * y + len(a) * (a == "v2")) % 3]
                lines.append(
                    {
                        "item": f"i{i}",
                        "annotator": a,
                        "criterion": "overall",
                        "a": SYSTEMS[x],
                        "b": SYSTEMS[y],
                        "winner": winner,
                    }
                )
                votes[(f"i{i}", SYSTEMS[x], SYSTEMS[y])][a] = {"a": SYSTEMS[x], "b": SYSTEMS[y], "tie": "tie"}[winner]
    run("import_judgements", str(write_jsonl(tmp_path / "p.jsonl", lines)), "--campaign", "pw")
    out, summary = _export(tmp_path, "pw")
    loaded = _load(tmp_path, out, monkeypatch)
    assert loaded.num_rows == summary["outputs"] == 6 * 6
    expected = _expected(votes)
    assert any(e[2] for e in expected.values()) and not all(e[2] for e in expected.values())
    _check(list(loaded), expected, _texts(dataset))
    assert set(loaded.column_names) >= {"prompt", "chosen", "rejected", "tie", "agreement", "annotators"}
    # No annotator names in the file.
    assert "v1" not in (out / "preferences.jsonl").read_text()


def test_best_worst_rankme_and_cesa_give_their_implied_pairs(dataset, tmp_path, monkeypatch):  # noqa: F811
    texts = _texts(dataset)
    # Best-worst: best beats the others, the others beat worst; the two middle outputs give no pair.
    run("create_campaign", "--dataset", "toy", "--name", "bw", "--protocol", "bws", "--criteria", "overall")
    bw = [
        {"item": f"i{i}", "annotator": a, "criterion": "overall", "outputs": SYSTEMS, "best": best, "worst": worst}
        for i in range(4)
        for a, best, worst in (("x", "s1", "s4"), ("y", "s1" if i % 2 else "s2", "s3"))
    ]
    run("import_judgements", str(write_jsonl(tmp_path / "b.jsonl", bw)), "--campaign", "bw")
    votes = defaultdict(dict)
    for line in bw:
        for x, y in itertools.combinations(SYSTEMS, 2):
            if line["best"] in (x, y):
                votes[(line["item"], x, y)][line["annotator"]] = line["best"]
            elif line["worst"] in (x, y):
                votes[(line["item"], x, y)][line["annotator"]] = y if line["worst"] == x else x
    out, _ = _export(tmp_path, "bw")
    _check(list(_load(tmp_path, out, monkeypatch)), _expected(votes), texts)

    # RankME: every annotator scored the four outputs of an item on one screen (shown_order names the
    # screen); higher magnitude wins. Item i1 is scored by ann1 on two screens of two: no s1-s3 pair.
    run("create_campaign", "--dataset", "toy", "--name", "rankme", "--protocol", "rankme", "--criteria", "adequacy")
    magnitudes = {"ann1": [300, 200, 200, 50], "ann2": [90, 120, 60, 30], "ann3": [5, 4, 3, 2]}
    rankme = []
    for i in range(3):
        for annotator, values in magnitudes.items():
            for k, system in enumerate(SYSTEMS):
                screen = SYSTEMS
                if i == 1 and annotator == "ann1":
                    screen = ["s1", "s2"] if system in ("s1", "s2") else ["s3", "s4"]
                rankme.append(
                    {
                        "item": f"i{i}",
                        "system": system,
                        "annotator": annotator,
                        "criterion": "adequacy",
                        "score": float(values[k] + i),
                        "shown_order": screen,
                    }
                )
    run("import_judgements", str(write_jsonl(tmp_path / "r.jsonl", rankme)), "--campaign", "rankme")
    votes = defaultdict(dict)
    screens = defaultdict(dict)
    for line in rankme:
        screens[(line["annotator"], line["item"], tuple(line["shown_order"]))][line["system"]] = line["score"]
    for (annotator, item, _), by_system in screens.items():
        for x, y in itertools.combinations(sorted(by_system), 2):
            sx, sy = by_system[x], by_system[y]
            votes[(item, x, y)][annotator] = x if sx > sy else y if sy > sx else "tie"
    assert "ann1" not in votes[("i1", "s1", "s3")] and "ann1" in votes[("i0", "s1", "s3")]
    out, _ = _export(tmp_path, "rankme")
    _check(list(_load(tmp_path, out, monkeypatch)), _expected(votes), texts)

    # cESA: pairs only within one screen (test_cesa's screens), ties common.
    run(
        "create_campaign",
        "--dataset",
        "toy",
        "--name",
        "contrastive",
        "--protocol",
        "cesa",
        "--criteria",
        "quality",
        "--tuple-size",
        "4",
        "--severities",
        "minor,major",
    )
    lines = cesa_lines()
    run("import_judgements", str(write_jsonl(tmp_path / "c.jsonl", lines)), "--campaign", "contrastive")
    votes = defaultdict(dict)
    screens = defaultdict(dict)
    for line in lines:
        screens[(line["annotator"], line["item"], tuple(line["shown_order"]))][line["system"]] = line["score"]
    for (annotator, item, _), by_system in screens.items():
        for x, y in itertools.combinations(sorted(by_system), 2):
            sx, sy = by_system[x], by_system[y]
            votes[(item, x, y)][annotator] = x if sx > sy else y if sy > sx else "tie"
    out, _ = _export(tmp_path, "contrastive")
    rows = list(_load(tmp_path, out, monkeypatch))
    expected = _expected(votes)
    assert any(e[2] for e in expected.values())
    _check(rows, expected, texts)


def test_preferences_refuse_a_rating_campaign(dataset, tmp_path):  # noqa: F811
    _likert(tmp_path)
    with pytest.raises(CommandError, match="preference pairs come from pairwise, bws, rankme, cesa campaigns"):
        _export(tmp_path, "likert")
