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


def test_the_rankings_page_shows_the_document_table(dataset, client):
    """The page's table: per document and system, the mean and (MQM) the penalty, each from the weights
    entered; a document name with markup is shown as text; the same rows as CSV."""
    import csv
    import html as html_lib
    import io
    import re

    from django.urls import reverse

    from annotations.models import Item, Membership
    from tests.annotations.factories import MembershipFactory, UserFactory

    Item.objects.filter(dataset=dataset, doc="talk").update(doc="<i>talk</i> & co")
    campaign = campaign_create(
        dataset=dataset,
        name="mqm-page",
        protocol="mqm",
        criteria=["quality"],
        redundancy=1,
        options={"context": "document", "severities": ["minor", "major"]},
    )
    annotator = Annotator.objects.create(project=dataset.project, name="a")
    expected: dict[tuple[str, str], float] = {}

    def answer(_, text):
        # alpha: one major error (5) on every segment; beta: none.
        system = text.split(" ")[0]
        doc = "news" if " news " in text else "<i>talk</i> & co"
        severities = ["major"] if system == "alpha" else []
        expected[(doc, system)] = expected.get((doc, system), 0.0) + 5.0 * len(severities)
        return {
            "spans": [{"start": 0, "end": 5, "severity": s, "category": "Accuracy/Mistranslation"} for s in severities]
        }

    _answer_all(campaign, [annotator], answer)
    owner = UserFactory()
    MembershipFactory(project=dataset.project, user=owner, role=Membership.Role.OWNER)
    client.force_login(owner)
    url = reverse("analysis-rankings", args=[campaign.pk])
    page = client.get(url).content.decode()
    assert "<i>talk</i>" not in page and "&lt;i&gt;talk&lt;/i&gt; &amp; co" in page
    table = page[page.index('id="document-scores"') :]
    found = {
        (html_lib.unescape(doc), system): (float(mean), float(total))
        for doc, system, mean, total in re.findall(
            r'<tr data-doc="([^"]*)" data-system="([^"]*)">.*?data-field="mean" data-value="([^"]*)".*?'
            r'data-field="total" data-value="([^"]*)"',
            table,
        )
    }
    segments = {"news": 3, "<i>talk</i> & co": 2}
    assert found == {k: (pytest.approx(-v / segments[k[0]]), v) for k, v in expected.items()}
    assert ">Penalty</th>" in table
    rows = list(csv.DictReader(io.StringIO(client.get(url, {"format": "csv", "table": "documents"}).content.decode())))
    assert {(r["doc"], r["system"]): float(r["penalty"]) for r in rows} == expected


def test_no_document_table_without_documents(client):
    from django.urls import reverse

    from annotations.models import Membership
    from tests.annotations.factories import ItemFactory, MembershipFactory, OutputFactory, UserFactory

    dataset = DatasetFactory()
    item = ItemFactory(dataset=dataset, position=0, source="s")
    OutputFactory(item=item, system=SystemFactory(dataset=dataset, name="alpha"), text="t")
    campaign = campaign_create(dataset=dataset, name="plain", protocol="esa", criteria=["quality"])
    owner = UserFactory()
    MembershipFactory(project=dataset.project, user=owner, role=Membership.Role.OWNER)
    client.force_login(owner)
    assert 'id="document-scores"' not in client.get(reverse("analysis-rankings", args=[campaign.pk])).content.decode()
