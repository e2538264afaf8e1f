"""Document-level scores (issue 41): the rankings report of a campaign whose items are in documents adds,
per document and system, the mean of the segments' human scores and, for MQM, the document's penalty.
Expected values are computed here from the scores entered (numpy means) and, for MQM, from the
published weights (Freitag et al. 2021: minor 1, major 5), never read back from our output."""

import numpy as np
import pytest

from annotations.analysis.report import ranking_report
from annotations.models import Annotator
from annotations.services.assignments import assignment_next
from annotations.services.campaigns import campaign_create
from annotations.services.submissions import unit_submit
from tests.annotations.factories import DatasetFactory, SystemFactory, document_items

pytestmark = pytest.mark.django_db

DOCS = {"news": 3, "talk": 2}


@pytest.fixture
def dataset():
    dataset = DatasetFactory()
    systems = [SystemFactory(dataset=dataset, name=n) for n in ("alpha", "beta")]
    position = 0
    for doc, n in DOCS.items():
        sources = [f"{doc} {k}" for k in range(n)]
        text = "{system} writes {doc} {k} well"
        document_items(dataset, systems, doc, sources, text=text, position=position, reverse=False)
        position += n
    return dataset


def _answer_all(campaign, annotators, answer):
    """Every unit answered by every annotator (k = number of annotators); `answer(annotator, text)`."""
    from annotations.models import Output

    for annotator in annotators:
        while True:
            assignment, _ = assignment_next(campaign=campaign, annotator=annotator)
            if assignment is None:
                break
            texts = dict(Output.objects.filter(pk__in=assignment.shown_order).values_list("pk", "text"))
            judgements = [
                {"criterion": "quality", "output": o, **answer(annotator, texts[o])} for o in assignment.shown_order
            ]
            unit_submit(
                annotator=annotator,
                assignment_id=assignment.pk,
                judgements=judgements,
                shown_order=assignment.shown_order,
            )


def test_esa_document_means(dataset):
    campaign = campaign_create(
        dataset=dataset,
        name="esa-docs",
        protocol="esa",
        criteria=["quality"],
        redundancy=2,
        options={"context": "document"},
    )
    annotators = [Annotator.objects.create(project=dataset.project, name=n) for n in ("a", "b")]
    entered: dict[tuple[str, str], list[list[float]]] = {}

    def answer(annotator, text):
        system, _, doc, k = text.split(" ")[:4]
        score = float(10 * int(k) + (7 if system == "alpha" else 3) + (20 if annotator.name == "b" else 0))
        entered.setdefault((doc, system), []).append(score)
        return {"score": score, "spans": []}

    _answer_all(campaign, annotators, answer)
    report = ranking_report(campaign=campaign, bootstrap=0)
    rows = report["documents"]["criteria"]["quality"]
    assert [(r["doc"], r["system"]) for r in rows] == sorted(entered)
    for r in rows:
        # Each segment's score is the mean of the two annotators'; the document's the mean of those.
        values = entered[(r["doc"], r["system"])]
        segments = DOCS[r["doc"]]
        assert r["segments"] == segments
        assert r["mean"] == pytest.approx(np.mean(values))
        assert "penalty" not in r
    assert "mean of its judged segments" in report["documents"]["label"]


def test_mqm_document_penalty(dataset):
    campaign = campaign_create(
        dataset=dataset,
        name="mqm-docs",
        protocol="mqm",
        criteria=["quality"],
        redundancy=1,
        options={"context": "document", "severities": ["minor", "major"]},
    )
    annotator = Annotator.objects.create(project=dataset.project, name="a")
    weights = {"minor": 1.0, "major": 5.0}  # Freitag et al. (2021), Table 2 (non-translation aside)
    expected: dict[tuple[str, str], float] = {}

    def answer(_, text):
        system, _w, doc, k = text.split(" ")[:4]
        # Segment k of alpha: k major errors; of beta: one minor error on segment 0 only.
        severities = ["major"] * int(k) if system == "alpha" else (["minor"] if k == "0" else [])
        expected[(doc, system)] = expected.get((doc, system), 0.0) + sum(weights[s] for s in severities)
        words, starts, at = text.split(" "), [], 0
        for word in words:
            starts.append((at, at + len(word)))
            at += len(word) + 1
        return {
            "spans": [
                {"start": a, "end": b, "severity": s, "category": "Accuracy/Mistranslation"}
                for s, (a, b) in zip(severities, starts)
            ]
        }

    _answer_all(campaign, [annotator], answer)
    rows = ranking_report(campaign=campaign, bootstrap=0)["documents"]["criteria"]["quality"]
    assert {(r["doc"], r["system"]): r["penalty"] for r in rows} == expected
    for r in rows:
        assert r["mean"] == pytest.approx(-expected[(r["doc"], r["system"])] / r["segments"])
