"""The error-severity page: one absolute colour scale, missing-content markers, headline over the whole list.

Severities are recomputed here with jiwer (minED's severity of an error under
WER = WER(hypothesis) - WER(hypothesis with only that word corrected), seed
004); span F1 by hand with Python sets of character offsets.
"""

from html.parser import HTMLParser
from itertools import combinations

import jiwer
import pytest
from django.core.cache import cache
from django.urls import reverse

from annotations.models import Campaign, Membership, Output
from tests.annotations.analysis.metric_runs import score_dataset
from tests.annotations.analysis.test_protocols import run
from tests.annotations.factories import MembershipFactory, UserFactory
from tests.annotations.test_real_data import write_jsonl

pytestmark = pytest.mark.django_db

# The legend's stops as the page states them (each bin holds its lower bound; bin 0: no gain).
STOPS = [(0.2, 5), (0.1, 4), (0.05, 3), (0.02, 2), (0.0, 1)]
LEGEND_LABELS = ["≤ 0", "under 0.02", "0.02 to under 0.05", "0.05 to under 0.1", "0.1 to under 0.2", "0.2 or more"]

WORDS = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
    "quebec romeo sierra tango"
).split()


def expected_bin(severity: float) -> int:
    if severity <= 0:
        return 0
    return next(b for stop, b in STOPS if severity >= stop)


def _swap(ref: list[str], positions: list[int]) -> list[str]:
    return [w.upper() if k in positions else w for k, w in enumerate(ref)]


# item -> (reference words, hypothesis positions substituted)
CASES = {
    "clean": (WORDS, []),  # no error at all
    "one-in-20": (WORDS, [3]),  # WER 0.05, already under the 0.1 threshold: k = 0
    "one-in-8": (WORDS[:8], [5]),  # severity 1/8
    "two-in-8": (WORDS[8:16], [0, 6]),  # severity 1/8 each: the same colour as one-in-8
    "seven-in-7": (WORDS[:7], list(range(7))),  # needs seven corrections, 1/7 each
    "four-in-4": (WORDS[10:14], [0, 1, 2, 3]),  # needs four, 1/4 each
}


class Cards(HTMLParser):
    """Per output card (li[data-output]): every error token / chip and every missing-content marker."""

    def __init__(self):
        super().__init__()
        self.output = None
        self.tokens: dict[int, list[dict]] = {}
        self.markers: dict[int, list[str]] = {}
        self.attrs: dict[str, dict] = {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "li" and "data-output" in a:
            self.output = int(a["data-output"])
            self.tokens[self.output], self.markers[self.output] = [], []
        if a.get("id"):
            self.attrs[a["id"]] = a
        classes = (a.get("class") or "").split()
        if self.output is None:
            return
        if "missing-content" in classes:
            self.markers[self.output].append(a["data-severity"])
        elif "tok" in classes:
            self.tokens[self.output].append(
                {"classes": classes, "severity": a.get("data-severity"), "title": a.get("title")}
            )


def sev_classes(classes: list[str]) -> list[str]:
    return [c for c in classes if c.startswith("sev-")]


@pytest.fixture
def severity_data(tmp_path):
    cache.clear()
    rows = [
        {
            "item": name,
            "source": " ".join(ref),
            "references": [" ".join(ref)],
            "outputs": {"s1": " ".join(_swap(list(ref), pos))},
        }
        for name, (ref, pos) in CASES.items()
    ]
    rows.append(
        {
            "item": "markup",
            "source": "the dog sat",
            "references": ["the dog sat"],
            "outputs": {"s1": "the <script>alert(1)</script> sat"},
        }
    )
    run("import_dataset", str(write_jsonl(tmp_path / "d.jsonl", rows)), "--dataset", "sev", "--project", "sev")
    run(
        "create_campaign",
        "--dataset",
        "sev",
        "--name",
        "sev-esa",
        "--protocol",
        "esa",
        "--criteria",
        "quality",
        "--severities",
        "minor,major,critical",
    )
    score_dataset("sev", "minwed", metric="wer")  # default threshold 0.1
    return Campaign.objects.get(name="sev-esa")


def _researcher_client(client, campaign):
    user = UserFactory()
    MembershipFactory(project=campaign.dataset.project, user=user, role=Membership.Role.RESEARCHER)
    client.force_login(user)
    return client


def _outputs():
    return {o.item.external_id: o for o in Output.objects.filter(item__dataset__name="sev").select_related("item")}


def test_colour_is_a_function_of_absolute_severity(client, severity_data):
    response = _researcher_client(client, severity_data).get(reverse("analysis-errors", args=[severity_data.pk]))
    assert response.status_code == 200
    body = response.content.decode()
    cards = Cards()
    cards.feed(body)
    outputs = _outputs()
    by_class: dict[float, set] = {}
    for name, (ref, positions) in CASES.items():
        tokens = [t for t in cards.tokens[outputs[name].pk] if t["severity"] is not None]
        assert len(tokens) == len(positions)  # one error token per substituted word
        hyp = _swap(list(ref), positions)
        for pos, tok in zip(positions, tokens):
            fixed = list(hyp)
            fixed[pos] = ref[pos]
            severity = jiwer.wer(" ".join(ref), " ".join(hyp)) - jiwer.wer(" ".join(ref), " ".join(fixed))
            assert float(tok["severity"]) == pytest.approx(severity)
            assert sev_classes(tok["classes"]) == [f"sev-{expected_bin(round(severity, 9))}"]
            assert "severity" in tok["title"]  # not colour alone
            by_class.setdefault(round(severity, 9), set()).add(tuple(sev_classes(tok["classes"])))
    # Same severity, same colour, on every output.
    assert all(len(classes) == 1 for classes in by_class.values())
    assert by_class[round(1 / 8, 9)] == {("sev-4",)}
    # No error, no colour; an output already acceptable (k = 0) stays light, those needing many
    # corrections are dark (relative colouring painted all of them with the darkest bin).
    clean = cards.tokens[outputs["clean"].pk]
    assert len(clean) == 20 and not any(sev_classes(t["classes"]) or "sev" in t["classes"] for t in clean)
    assert [c for t in cards.tokens[outputs["one-in-20"].pk] for c in sev_classes(t["classes"])] == ["sev-3"]
    assert {c for t in cards.tokens[outputs["seven-in-7"].pk] for c in sev_classes(t["classes"])} == {"sev-4"}
    assert {c for t in cards.tokens[outputs["four-in-4"].pk] for c in sev_classes(t["classes"])} == {"sev-5"}
    rows = {r["item"]: r for r in response.context["data"]["rows"]}
    assert rows["one-in-20"]["k"] == 0 and rows["seven-in-7"]["k"] == 7
    # One legend for the page, stating the stops.
    assert body.count('id="severity-legend"') == 1
    for label in LEGEND_LABELS:
        assert f"<strong>{label}</strong>" in body
    # Outputs are untrusted text: escaped.
    assert "<script>alert" not in body and "&lt;script&gt;alert(1)&lt;/script&gt;" in body


def test_missing_content_markers_with_their_severity(client, severity_data, tmp_path):
    outputs = _outputs()
    judgements = [
        {
            "item": "one-in-8",
            "system": "s1",
            "annotator": "a",
            "criterion": "quality",
            "score": 40,
            "spans": [{"start": 0, "end": 5, "severity": "minor"}, {"missing": True, "severity": "major"}],
        },
        {
            "item": "one-in-8",
            "system": "s1",
            "annotator": "b",
            "criterion": "quality",
            "score": 30,
            "spans": [{"missing": True, "severity": "critical"}, {"missing": True, "severity": "minor"}],
        },
        {"item": "clean", "system": "s1", "annotator": "a", "criterion": "quality", "score": 95, "spans": []},
    ]
    run("import_judgements", str(write_jsonl(tmp_path / "e.jsonl", judgements)), "--campaign", "sev-esa")
    response = _researcher_client(client, severity_data).get(reverse("analysis-errors", args=[severity_data.pk]))
    cards = Cards()
    cards.feed(response.content.decode())
    assert sorted(cards.markers[outputs["one-in-8"].pk]) == ["critical", "major", "minor"]
    assert cards.markers[outputs["clean"].pk] == []
    row = next(r for r in response.context["data"]["rows"] if r["item"] == "one-in-8")
    assert [(h["annotator"], h["missing"]) for h in row["human"]] == [("A1", ["major"]), ("A2", ["minor", "critical"])]
    assert "missing content · critical" in response.content.decode()


def test_excluded_annotators_markers_follow_the_annotators_filter(client, severity_data, tmp_path):
    """Quality control's exclusion applies as in every analysis reader: hidden under "included", shown under "all"."""
    from io import StringIO

    from django.core.management import call_command

    judgements = [
        {
            "item": "one-in-8",
            "system": "s1",
            "annotator": name,
            "criterion": "quality",
            "score": 40,
            "spans": [{"missing": True, "severity": severity}],
        }
        for name, severity in (("kept", "minor"), ("bot", "critical"))
    ]
    run("import_judgements", str(write_jsonl(tmp_path / "e.jsonl", judgements)), "--campaign", "sev-esa")
    call_command("quality", "--campaign", "sev-esa", "--exclude", "bot", "--reason", "bot", stdout=StringIO())
    c = _researcher_client(client, severity_data)
    pk = _outputs()["one-in-8"].pk
    for annotators, expected in (("included", ["minor"]), ("all", ["critical", "minor"])):
        cards = Cards()
        cards.feed(
            c.get(reverse("analysis-errors", args=[severity_data.pk]), {"annotators": annotators}).content.decode()
        )
        assert sorted(cards.markers[pk]) == expected


def _chars(spans):
    return {c for s, e in spans for c in range(s, e)}


def test_span_agreement_headline_counts_the_whole_campaign(client, severity_data, tmp_path):
    # Three annotators' spans on every output; the page shows two outputs of seven.
    names = [*CASES, "markup"]
    spans = {
        "a": {n: [(0, 5 + k)] for k, n in enumerate(names)},
        "b": {n: [(2, 9)] if k % 2 else [] for k, n in enumerate(names)},
        "c": {n: [(0, 3), (6, 8)] if k >= 2 else [] for k, n in enumerate(names)},
    }
    judgements = [
        {
            "item": n,
            "system": "s1",
            "annotator": a,
            "criterion": "quality",
            "score": 50,
            "spans": [{"start": s, "end": e, "severity": "major"} for s, e in spans[a][n]],
        }
        for a in spans
        for n in names
    ]
    run("import_judgements", str(write_jsonl(tmp_path / "e.jsonl", judgements)), "--campaign", "sev-esa")

    def expected(items):
        f1s, pairs = [], 0
        for n in items:
            for x, y in combinations("abc", 2):
                pairs += 1
                A, B = _chars(spans[x][n]), _chars(spans[y][n])
                if A or B:
                    f1s.append(2 * len(A & B) / (len(A) + len(B)))
        return sum(f1s) / len(f1s), len(f1s), pairs

    whole, n_pairs, all_pairs = expected(names)
    page, _, _ = expected(names[:2])
    assert abs(whole - page) > 0.01  # the test can tell the two apart
    c = _researcher_client(client, severity_data)
    response = c.get(reverse("analysis-errors", args=[severity_data.pk]), {"limit": 2})
    assert len(response.context["data"]["rows"]) == 2
    cards = Cards()
    cards.feed(response.content.decode())
    shown = cards.attrs["span-agreement"]
    assert float(shown["data-mean-f1"]) == pytest.approx(whole)
    assert int(shown["data-pairs"]) == n_pairs and int(shown["data-outputs"]) == len(names)
    body = response.content.decode()
    assert f"over {n_pairs} annotator pairs on {len(names)} outputs" in body
    assert f"{all_pairs} pairs in all" in body and "all 7 outputs listed" in body
    # The same figure on the second page, and equal to the dashboard's span F1 of the campaign.
    second = c.get(reverse("analysis-errors", args=[severity_data.pk]), {"limit": 2, "offset": 2})
    assert second.context["data"]["headline"]["span_f1"]["mean_f1"] == pytest.approx(whole)
    dashboard = run("agreement", "--campaign", "sev-esa", "--bootstrap", "0")["criteria"]["quality"]["spans"]
    assert dashboard["mean_f1"] == pytest.approx(whole)


def test_limit_and_offset_are_clamped(client, severity_data):
    c = _researcher_client(client, severity_data)
    url = reverse("analysis-errors", args=[severity_data.pk])
    assert len(c.get(url, {"limit": "0"}).context["data"]["rows"]) == 1
    assert c.get(url, {"limit": "x", "offset": "-3"}).status_code == 200
    assert c.get(url, {"limit": "99999999999999999999"}).context["data"]["limit"] == 200
