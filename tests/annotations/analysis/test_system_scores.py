"""One definition of a system's metric score (issue 19, part 4): the rankings page,
`correlate --level system`, the dataset's metric panel and the export's card give each
system the metric's own corpus-level score, equal to sacrebleu's corpus BLEU / chrF
computed here from the texts, under a label that says so.

The data are made so that corpus BLEU and the mean of sentence BLEU rank two systems in
opposite orders (asserted below with sacrebleu alone): a surface that ranked by the mean
would fail."""

import json
import re
from io import StringIO

import numpy as np
import pytest
import sacrebleu
from django.core.cache import cache
from django.core.management import call_command
from django.urls import reverse
from scipy import stats

from annotations.models import Campaign, Membership
from metrics.models import MetricRun
from tests.annotations.analysis.metric_runs import score_dataset
from tests.annotations.factories import MembershipFactory, UserFactory
from tests.annotations.test_real_data import write_jsonl

pytestmark = pytest.mark.django_db

ITEMS = 20
WORDS = "the cat sat on a mat with some red hats today while dogs ran across green fields near old houses".split()
# Human adequacy 1-5 per system (both annotators agree up to one point).
HUMAN = {"half-truncated": 4, "two-words-off": 3, "three-words-off": 2}


def _output(system: str, i: int, ref: str) -> str:
    tokens = ref.split()
    if system == "half-truncated":  # the reference on even items, its first word on odd ones
        return ref if i % 2 == 0 else tokens[0]
    for k in {"two-words-off": (2, 6), "three-words-off": (1, 5, 9)}[system]:
        tokens[k] = "zebra"
    return " ".join(tokens)


def _run(*args) -> dict:
    out = StringIO()
    call_command(*args, "--json", stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())


@pytest.fixture
def texts() -> dict:
    rng = np.random.default_rng(0)
    refs = [" ".join(rng.choice(WORDS, 12)) for _ in range(ITEMS)]
    return {"refs": refs, "hyps": {s: [_output(s, i, r) for i, r in enumerate(refs)] for s in HUMAN}}


@pytest.fixture
def campaign(texts, tmp_path) -> Campaign:
    cache.clear()
    rows = [
        {"item": f"i{i}", "source": ref, "references": [ref], "outputs": {s: texts["hyps"][s][i] for s in HUMAN}}
        for i, ref in enumerate(texts["refs"])
    ]
    _run(
        "import_dataset", str(write_jsonl(tmp_path / "d.jsonl", rows)), "--dataset", "sysscore", "--project", "sysscore"
    )
    _run(
        "create_campaign",
        "--dataset",
        "sysscore",
        "--name",
        "sysscore",
        "--protocol",
        "likert",
        "--criteria",
        "adequacy",
        "--scale",
        "1-5",
    )
    _run("import_judgements", str(write_jsonl(tmp_path / "j.jsonl", _judgements())), "--campaign", "sysscore")
    score_dataset("sysscore", "bleu")
    score_dataset("sysscore", "chrf")
    return Campaign.objects.get(name="sysscore")


def _judgements() -> list[dict]:
    return [
        {
            "item": f"i{i}",
            "system": s,
            "annotator": a,
            "criterion": "adequacy",
            "score": float(HUMAN[s] - (a == "ann2" and i % 3 == 0)),
        }
        for i in range(ITEMS)
        for s in HUMAN
        for a in ("ann1", "ann2")
    ]


def human_means() -> dict[str, float]:
    """Each system's mean human score (every output judged by both annotators)."""
    rows = _judgements()
    return {s: float(np.mean([j["score"] for j in rows if j["system"] == s])) for s in HUMAN}


def sacrebleu_scores(texts) -> dict[str, dict[str, float]]:
    """The reference: sacrebleu's corpus scores of each system, from the texts."""
    refs = [texts["refs"]]
    return {
        "bleu": {s: sacrebleu.corpus_bleu(h, refs).score for s, h in texts["hyps"].items()},
        "chrf": {s: sacrebleu.corpus_chrf(h, refs).score for s, h in texts["hyps"].items()},
    }


def _researcher(client, campaign):
    user = UserFactory()
    MembershipFactory(project=campaign.dataset.project, user=user, role=Membership.Role.RESEARCHER)
    client.force_login(user)
    return client


def rankings_tables(html: str) -> dict[str, dict]:
    """{metric: {"label", "systems": [...], "scores": {system: value}}} from the rankings page's HTML."""
    out = {}
    for block in html.split('<div class="table-wrap ranking">')[1:]:
        heading = re.search(r"<h2[^>]*>([^<(]+)", block).group(1).strip()
        label = re.search(r'data-field="score-label">([^<]*)<', block)
        if label is None:  # a human table
            continue
        rows = re.findall(r'<tr[^>]*data-system="([^"]+)"><td.*?data-field="score" data-value="([^"]+)"', block)
        out[heading] = {
            "label": label.group(1).replace("&#x27;", "'"),
            "systems": [s for s, _ in rows],
            "scores": {s: float(v) for s, v in rows},
        }
    return out


def card_system_scores(card: str) -> tuple[dict[str, dict[str, float]], str]:
    """The card's "System scores" table: {column: {system: value}}, and the section's text."""
    section = card.split("### System scores", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    columns = [c.strip().strip("`") for c in lines[0].strip("|").split("|")][1:]
    out: dict[str, dict[str, float]] = {c: {} for c in columns}
    for line in lines[2:]:
        cells = [c.strip().strip("`") for c in line.strip("|").split("|")]
        for column, value in zip(columns, cells[1:]):
            out[column][cells[0]] = float(value)
    return out, section


def test_the_data_tell_corpus_bleu_from_a_mean_of_sentence_bleu(texts):
    """The premise, from sacrebleu alone: the two definitions order two systems differently."""
    refs = texts["refs"]
    corpus = sacrebleu_scores(texts)["bleu"]
    mean = {
        s: np.mean([sacrebleu.sentence_bleu(h, [r]).score for h, r in zip(hyps, refs)])
        for s, hyps in texts["hyps"].items()
    }
    assert corpus["two-words-off"] > corpus["half-truncated"]
    assert mean["two-words-off"] < mean["half-truncated"]


def test_every_surface_gives_the_corpus_score_of_each_system(client, campaign, texts, tmp_path):
    want = sacrebleu_scores(texts)
    labels = {"bleu": "corpus BLEU (signature bleu|", "chrf": "corpus chrF (signature chrf|"}
    runs = {r.metric: r for r in MetricRun.objects.filter(dataset=campaign.dataset)}

    # The rankings page: sorted and shown by the corpus score, labelled.
    c = _researcher(client, campaign)
    response = c.get(reverse("analysis-rankings", args=[campaign.pk]))
    assert response.status_code == 200
    tables = rankings_tables(response.content.decode())
    assert set(tables) == {"bleu", "chrf"}
    for metric, table in tables.items():
        assert table["label"].startswith(labels[metric]) and runs[metric].signature in table["label"]
        assert table["scores"] == pytest.approx(want[metric], abs=1e-9)
        assert table["systems"] == sorted(want[metric], key=want[metric].get, reverse=True)
    assert '<th class="num">Mean of segment scores [95% CI]</th>' in response.content.decode()

    # correlate --level system: the scores it used, under the same label, and the correlation of those.
    for metric in ("bleu", "chrf"):
        result = _run(
            "correlate",
            "--campaign",
            "sysscore",
            "--metric",
            metric,
            "--criterion",
            "adequacy",
            "--level",
            "system",
            "--bootstrap",
            "0",
        )
        used = result["system_scores"]
        assert used["fallback"] is None and used["label"].startswith(labels[metric])
        assert result["system_metric_scores"] == used["label"]
        assert used["scores"] == pytest.approx(want[metric], abs=1e-9)
        systems, human = sorted(HUMAN), human_means()
        expected_r = stats.pearsonr([human[s] for s in systems], [want[metric][s] for s in systems])
        assert result["pearson"] == pytest.approx(expected_r.statistic, abs=1e-9)

    # The dataset's metric panel (fed by the runs API).
    body = c.get(reverse("api-metric-run-list", args=[campaign.dataset.pk])).json()
    panel = {r["metric"]: r["system_scores"] for r in body["results"]}
    for metric in ("bleu", "chrf"):
        assert panel[metric]["label"].startswith(labels[metric])
        assert panel[metric]["scores"] == pytest.approx(want[metric], abs=1e-9)
    page = c.get(reverse("dataset-detail", args=[campaign.dataset.pk])).content.decode()
    assert "By system" in page

    # The exported card.
    out = tmp_path / "export"
    _run("export_dataset", "--campaign", "sysscore", "--out", str(out))
    card, section = card_system_scores((out / "README.md").read_text(encoding="utf-8"))
    for metric in ("bleu", "chrf"):
        assert card[metric] == pytest.approx(want[metric], abs=5e-5)  # printed with 4 decimals
        assert f"- `{metric}`: {labels[metric].split(' (')[0]} (signature `{runs[metric].signature}`)" in section


def test_a_run_without_system_scores_falls_back_under_its_own_label(client, campaign, texts):
    """A run that stored no score per system (an older run): `correlate` and the rankings page
    rank by the mean of segment scores, and say so."""
    run = MetricRun.objects.get(dataset=campaign.dataset, metric="bleu")
    MetricRun.objects.filter(pk=run.pk).update(corpus={"score": run.corpus["score"]})
    refs = texts["refs"]
    mean = {
        s: float(np.mean([sacrebleu.sentence_bleu(h, [r]).score for h, r in zip(hyps, refs)]))
        for s, hyps in texts["hyps"].items()
    }

    result = _run(
        "correlate",
        "--campaign",
        "sysscore",
        "--metric",
        "bleu",
        "--criterion",
        "adequacy",
        "--level",
        "system",
        "--bootstrap",
        "0",
    )
    used = result["system_scores"]
    assert used["label"] == "mean of segment scores over the judged outputs"
    assert "no corpus BLEU" in used["fallback"]
    assert used["scores"] == pytest.approx(mean, abs=1e-9)

    cache.clear()
    html = _researcher(client, campaign).get(reverse("analysis-rankings", args=[campaign.pk])).content.decode()
    table = rankings_tables(html)["bleu"]
    assert table["label"].startswith("mean of segment scores (the run stored no system score for ")
    assert table["systems"] == sorted(mean, key=mean.get, reverse=True)
