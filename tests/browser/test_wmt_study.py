"""A WMT-shaped study end to end in Debian's Chromium (issue 41, "Done when"): a dataset of three
documents of 4, 5 and 6 segments by three systems, imported from JSONL with `doc`, `doc_pos` and an
image source (a real PNG written here) on one document; a cESA campaign in `document` mode with the
three systems side by side on every screen, relative attention checks (document-level: one system's
copy of the document degraded), `[missing]` as a special answer, a free-text comment per unit and two
background questions. Two participants come through a join link, answer the background questions and
one batch each: a regular document scored card by card (each score stored as its own segment's
judgement) or answered `[missing]`, and a relative check, passed by one and failed by the other. The
export carries every new field (doc, doc_pos, media references, the comment, the special answer, the
background answers under pseudonyms) and its card summarises the background answers."""

import json
import re

import pytest
from django.core.management import call_command

from annotations.models import Assignment, BackgroundAnswer, Item, SpanJudgement, Unit, UnitNote
from annotations.models.quality import ControlJudgement, ControlUnit
from annotations.models.studies import JoinParticipant
from annotations.services.campaigns import campaign_create
from annotations.services.handles import output_handle
from annotations.services.imports.datasets import dataset_import
from annotations.studies.services import join_link_create
from tests.browser.conftest import next_screen
from tests.browser.test_media_pages import png

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SYSTEMS = ("SECRETSYS-A", "SECRETSYS-B", "SECRETSYS-C")
DOCS = {"news": 4, "talk": 5, "forum": 6}
IMAGE_ALT = "A bar chart of the talk's three figures"
PIDS = ("60a1b2c3d4e5f60718293b01", "60a1b2c3d4e5f60718293b02")
COMMENT = "Segment 2 reads <b>oddly</b> in context."
SENTENCE = "the city council approved the new budget for schools and hospitals after a long debate"


def _lines() -> list[dict]:
    lines = []
    for doc, n in DOCS.items():
        for k in range(n):
            line = {
                "item": f"{doc}-{k}",
                "source": f"Quelle {doc} {k}: der Stadtrat hat den Haushalt beschlossen.",
                "doc": doc,
                "doc_pos": k,
                "outputs": {
                    system: f"{doc.title()} {k} by {s}: " + " ".join(SENTENCE.split()[s:] + SENTENCE.split()[:s]) + "."
                    for s, system in enumerate(SYSTEMS)
                },
            }
            if (doc, k) == ("talk", 0):
                line["media"] = {"source": {"type": "image", "path": "chart.png", "alt": IMAGE_ALT}}
            lines.append(line)
    return lines


@pytest.fixture
def study(live_server, settings, tmp_path):
    settings.WORKBENCH_MEDIA_ROOT = tmp_path / "media"
    (tmp_path / "media").mkdir()
    (tmp_path / "media" / "chart.png").write_bytes(png(640, 240))
    stream = "".join(json.dumps(line) + "\n" for line in _lines()).encode()
    dataset = dataset_import(stream=stream, dataset_name="wmt-docs", project_name="WMT", filename="d.jsonl").dataset
    campaign = campaign_create(
        dataset=dataset,
        name="WMT cESA",
        protocol="cesa",
        criteria=["quality"],
        redundancy=2,
        seed=7,
        units_per_batch=4,
        options={
            "tuple_size": 3,
            "context": "document",
            # Two relative checks planned per batch of four screens (never the first). A check is made of
            # a document the participant has been shown nothing of; when none is left it is owed and a
            # regular screen comes instead. With three documents every participant thus gets one or
            # two checks and sees all three documents (the image's among them) in their four screens.
            "relative_checks": 0.5,
            "special_answers": ["[missing]"],
            "unit_text": "Comment",
            "text_max_length": 300,
            "background": [
                {"name": "native", "label": "Native language", "type": "choice", "choices": ["English", "German"]},
                {"name": "years", "label": "Years of translation experience", "type": "number", "min": 0, "max": 60},
            ],
        },
    )
    link = join_link_create(campaign=campaign, completion_url=f"{live_server.url}/done/?cc={{code}}")
    return {"campaign": campaign, "link": link, "tmp": tmp_path}


def _join(page, link, pid: str, native: str, years: int, campaign) -> None:
    page.goto(f"/join/{link.token}/?PROLIFIC_PID={pid}&STUDY_ID=wmt26&SESSION_ID=s-{pid[-2:]}")
    with page.expect_navigation():
        page.locator("#start").click()
    assert page.url.endswith(f"/annotate/campaigns/{campaign.pk}/background/")
    page.get_by_label(native).check()
    page.get_by_label("Years of translation experience").fill(str(years))
    with page.expect_navigation():
        page.locator("#background-submit").click()
    with page.expect_navigation():
        page.locator("#start").click()
    page.locator("body[data-unit-ready='1']").wait_for()


def _screen(page, annotator, seen: set) -> tuple[Assignment, list[list[int]]]:
    """The assignment on the screen and its segments as shown (checked against the page): each
    segment's source in document order, three cards per segment, the image where the document has it,
    no system name."""
    assignment = Assignment.objects.get(pk=int(page.locator("body").get_attribute("data-assignment")))
    assert assignment.annotator_id == annotator.pk and assignment.status == Assignment.Status.PENDING
    unit = assignment.unit
    first = Item.objects.get(pk=unit.item_id)
    n = DOCS[first.doc]
    seen.add(first.doc)
    order = list(assignment.shown_order)
    segments = [order[3 * k : 3 * k + 3] for k in range(n)]
    sources = page.locator(".doc-segment .doc-source")
    assert [t.strip() for t in sources.all_inner_texts()] == [
        f"Quelle {first.doc} {k}: der Stadtrat hat den Haushalt beschlossen." for k in range(n)
    ]
    cards = page.locator("[data-span-card]")
    assert cards.count() == 3 * n
    assert [cards.nth(p).get_attribute("data-output") for p in range(3 * n)] == [
        output_handle(assignment.pk, o) for o in order
    ]
    html = page.content()
    assert not any(name in html for name in SYSTEMS) and "shuffle5" not in html and "chart.png" not in html
    if first.doc == "talk":
        image = page.get_by_role("img", name=IMAGE_ALT)
        image.wait_for()
        page.locator("img.media-image[src*='/media/source/']").wait_for()
        assert page.evaluate("document.querySelector('img.media-image').naturalWidth") == 640
    else:
        assert page.locator("img.media-image").count() == 0
    return assignment, segments


def _score(page, pageups: list[int]) -> None:
    """Each card's score with the keyboard, in the order shown: from its text, "s" to the slider,
    PageUp (10 points each), "t" back to the text, ArrowDown to the next card."""
    page.locator("[data-span-card]").first.locator("[data-esa-text]").focus()
    for p, ups in enumerate(pageups):
        page.keyboard.press("s")
        for _ in range(ups):
            page.keyboard.press("PageUp")
        page.keyboard.press("t")
        if p < len(pageups) - 1:
            page.keyboard.press("ArrowDown")


def _submit(page, *, warned: bool = False) -> None:
    """Submit; a low score with no error marked is warned about first and confirmed by a second submit."""
    if warned:
        page.locator("#unit-submit").click()
        page.locator("#esa-warning").wait_for(state="visible")
    with next_screen(page):
        page.locator("#unit-submit").click()


def _relative(page, assignment, segments, *, passes: bool) -> None:
    control = ControlUnit.objects.get(unit=assignment.unit)
    degraded = {int(a) for a, e in control.aliases.items() if e.get("degraded")}
    assert degraded and all(len(degraded & set(s)) <= 1 for s in segments)
    # The screen shows the copies' texts where that system's outputs would be.
    cards = page.locator("[data-span-card]")
    order = list(assignment.shown_order)
    for p, alias in enumerate(order):
        assert cards.nth(p).locator("[data-esa-text]").inner_text() == control.aliases[str(alias)]["text"]
    # Passing: each copy 20, its segment's clean outputs 70 or 80; failing: each copy 90.
    pageups = [(2 if passes else 9) if o in degraded else 7 + p % 2 for p, o in enumerate(order)]
    _score(page, pageups)
    _submit(page, warned=passes)
    (cj,) = ControlJudgement.objects.filter(assignment=assignment)
    assert {int(a): s for a, s in cj.answer["scores"].items()} == {o: 10 * u for o, u in zip(order, pageups)}
    assert cj.kind == "relative" and cj.passed is passes


def _scored(page, assignment, segments, *, comment: str) -> list[int]:
    """A regular document scored card by card (70, 80 or 90: no low-score warning), with a comment
    when given; each score is stored as its own segment's judgement. The scores entered."""
    order = list(assignment.shown_order)
    pageups = [7 + (p * 5 + assignment.pk) % 3 for p in range(len(order))]
    _score(page, pageups)
    if comment:
        page.locator("#unit-text").fill(comment)
    _submit(page)
    stored = {j.output_id: j for j in SpanJudgement.objects.filter(assignment=assignment).select_related("output")}
    assert {o: j.score for o, j in stored.items()} == {o: 10.0 * u for o, u in zip(order, pageups)}
    for k, segment in enumerate(segments):
        for o in segment:
            # Each score is its own segment's judgement, shown with that segment's three outputs.
            assert stored[o].item_id == stored[o].output.item_id
            assert stored[o].shown_order == segment
            assert Item.objects.get(pk=stored[o].item_id).doc_pos == k
    return [10 * u for u in pageups]


def _missing(page, assignment) -> None:
    page.locator("#special-0").select_option("[missing]")
    _submit(page)
    assert not SpanJudgement.objects.filter(assignment=assignment).exists()
    assert Assignment.objects.get(pk=assignment.pk).status == Assignment.Status.DONE


def _batch(page, annotator, *, careful: bool) -> dict:
    """One participant's batch of four screens: regular documents scored (careful: the first with a
    comment) or answered `[missing]`, relative checks passed (careful) or failed. What was entered."""
    done = {"docs": set(), "checks": 0, "regular": 0, "scores": []}
    for n in range(4):
        assignment, segments = _screen(page, annotator, done["docs"])
        if assignment.unit.kind == Unit.Kind.RELATIVE:
            _relative(page, assignment, segments, passes=careful)
            done["checks"] += 1
            continue
        assert assignment.unit.kind == Unit.Kind.REGULAR
        if careful:
            done["scores"] += _scored(page, assignment, segments, comment=COMMENT if not done["regular"] else "")
        else:
            _missing(page, assignment)
        done["regular"] += 1
    page.wait_for_url("**/done/**")
    return done


def test_a_wmt_shaped_document_study_end_to_end(new_page, study, live_server):
    campaign, link = study["campaign"], study["link"]

    # Participant 1 scores every regular document (a comment on the first) and passes the checks.
    page = new_page()
    _join(page, link, PIDS[0], "German", 7, campaign)
    first = JoinParticipant.objects.get(platform_id=PIDS[0]).annotator
    careful = _batch(page, first, careful=True)
    # Participant 2 answers `[missing]` on every regular document and fails the checks.
    page = new_page()
    _join(page, link, PIDS[1], "English", 3, campaign)
    second = JoinParticipant.objects.get(platform_id=PIDS[1]).annotator
    careless = _batch(page, second, careful=False)
    for done in (careful, careless):
        # Every document seen, the image's among them; one or two document-level checks.
        assert done["docs"] == set(DOCS) and done["checks"] in (1, 2) and done["regular"] == 4 - done["checks"]

    notes = sorted((n.annotator_id, n.criterion, n.special, n.text) for n in UnitNote.objects.filter(campaign=campaign))
    assert notes == sorted(
        [(first.pk, "", "", COMMENT)] + [(second.pk, "quality", "[missing]", "")] * careless["regular"]
    )
    assert {b.annotator_id: b.answers for b in BackgroundAnswer.objects.filter(campaign=campaign)} == {
        first.pk: {"native": "German", "years": 7},
        second.pk: {"native": "English", "years": 3},
    }

    # The export carries every new field.
    out = study["tmp"] / "export"
    call_command("export_dataset", "--campaign", "WMT cESA", "--out", str(out), verbosity=0)
    dataset = [json.loads(line) for line in (out / "dataset.jsonl").read_text().splitlines()]
    assert {(d["item"], d["doc"], d["doc_pos"]) for d in dataset} == {
        (f"{doc}-{k}", doc, k) for doc, n in DOCS.items() for k in range(n)
    }
    (talk,) = [d for d in dataset if d["item"] == "talk-0"]
    assert "chart.png" in json.dumps(talk["media"]) and IMAGE_ALT in json.dumps(talk["media"])
    judgements = [json.loads(line) for line in (out / "judgements.jsonl").read_text().splitlines()]
    scores = sorted(j["score"] for j in judgements if "score" in j)
    assert scores == sorted(careful["scores"])
    assert any(j.get("comment") == COMMENT for j in judgements)
    assert any(j.get("special") == "[missing]" and j.get("criterion") == "quality" for j in judgements)
    background = [json.loads(line) for line in (out / "background.jsonl").read_text().splitlines()]
    assert sorted((b["native"], b["years"]) for b in background) == [("English", 3), ("German", 7)]
    assert not any(pid in (out / "background.jsonl").read_text() for pid in PIDS)  # pseudonymised
    card = (out / "README.md").read_text()
    assert "Background questions asked before the first unit" in card
    assert re.search(r"Native language \(2 answered\): English 1, German 1", card)
    assert re.search(r"Years of translation experience \(2 answered\): mean 5, median 5, range 3-7", card)
