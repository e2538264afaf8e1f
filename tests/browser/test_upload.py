"""Import a dataset through the browser form: a bad file lists every line error, a good one lands on the dataset."""

import json

import pytest

from annotations.models import Dataset, Item, Membership, Output, Reference, System
from tests.annotations.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.browser.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GOOD = [
    {
        "item": "g1",
        "source": "Guten Morgen.",
        "references": ["Good morning."],
        "outputs": {"a": "Good morning.", "b": "Morning good."},
    },
    {
        "item": "g2",
        "source": "Danke schön.",
        "references": ["Thank you very much."],
        "outputs": {"a": "Thanks a lot.", "b": "Thank you beautiful."},
    },
]


def _counts() -> tuple[int, ...]:
    return tuple(m.objects.count() for m in (Dataset, Item, Reference, System, Output))


@pytest.fixture
def researcher(live_server):
    project = ProjectFactory(name="Lab")
    MembershipFactory(project=project, user=UserFactory(username="rita"), role=Membership.Role.RESEARCHER)
    return project


def _submit(page, *, name: str, filename: str, content: bytes) -> None:
    page.goto("/datasets/upload/")
    page.get_by_label("Dataset name").fill(name)
    page.get_by_label("File").set_input_files(
        {"name": filename, "mimeType": "application/octet-stream", "buffer": content}
    )
    page.get_by_role("button", name="Import").click()


def test_bad_file_lists_every_line_error_and_writes_nothing(page, researcher, screenshot_dir):
    lines = [
        json.dumps(GOOD[0]),
        "{not json",
        json.dumps({"source": "no id", "outputs": {}}),
        json.dumps(GOOD[1]),
        json.dumps({"item": "g5", "outputs": "not an object"}),
    ]
    before = _counts()
    log_in(page, "rita", "pw-123456")
    _submit(page, name="bad-upload", filename="bad.jsonl", content="\n".join(lines).encode())
    errors = page.locator(".import-errors .error-list li").all_inner_texts()
    page.screenshot(path=screenshot_dir / "upload-errors.png", full_page=True)
    assert [e.split(":")[0] for e in errors] == ["line 2", "line 3", "line 5"]
    assert page.get_by_text("Nothing was imported: 3 problems").is_visible()
    assert _counts() == before


def test_good_file_redirects_to_the_new_dataset(page, researcher):
    log_in(page, "rita", "pw-123456")
    content = "".join(json.dumps(row) + "\n" for row in GOOD).encode()
    _submit(page, name="greetings", filename="greetings.jsonl", content=content)
    page.wait_for_url("**/datasets/*/")
    assert page.get_by_role("heading", name="greetings").is_visible()
    assert page.get_by_role("status").inner_text() == "Created dataset greetings: 2 items, 4 outputs."
    assert page.locator("a.item-link").all_inner_texts() == ["g1", "g2"]
    assert Dataset.objects.get(name="greetings").project == researcher
