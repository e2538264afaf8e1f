"""heds.json loads in the official HEDS 3.0 form (nlp-heds/nlp-heds.github.io, index.html) and the
form shows the filled answers.

The form is published on neither npm nor PyPI (the PyPI package `heds` is an unrelated CSV data
set), and tests reach only the package registries, so this test uses a copy of the form's
repository under var/heds-form/ (index.html and index_files/, e.g. `git archive 3239cd329afe |
tar -x -C var/heds-form`) and skips without one. The always-running check of heds.json against the
form's field ids and value formats is tests/annotations/export/test_heds_croissant.py.
"""

import json
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.annotations.export.test_export import _export, likert  # noqa: F401

pytestmark = pytest.mark.django_db

FORM = Path(__file__).resolve().parents[2] / "var" / "heds-form"


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def form_server():
    if not (FORM / "index.html").exists():
        pytest.skip(
            "the official HEDS 3.0 form is not under var/heds-form/ (not on npm or PyPI; copy index.html and "
            "index_files/ of nlp-heds/nlp-heds.github.io there to run this test)"
        )
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(FORM)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_heds_json_loads_in_the_official_form(likert, browser, form_server, tmp_path):  # noqa: F811
    summary, out = _export(tmp_path)
    heds_file = out / "heds.json"
    heds = json.loads(heds_file.read_text(encoding="utf-8"))
    context = browser.new_context(base_url=form_server)
    outside = []

    def guard(route):
        url = route.request.url
        if not url.startswith(form_server):
            # The form's only other link is a favicon on the authors' development server.
            if not url.endswith("/favicon.ico"):
                outside.append(url)
            route.abort()
        else:
            route.continue_()

    context.route("**/*", guard)
    try:
        page = context.new_page()
        page.set_default_timeout(15_000)
        page.goto("/index.html")
        page.set_input_files("#upload_file_id", str(heds_file))
        with page.expect_navigation():  # importJson reloads the page once localStorage holds the file
            page.click("#upload_button_id")
        page.wait_for_load_state("load")

        expect(page.locator("#heds-sample_evaluators_design-evaluators-number_of_evaluators")).to_have_value(
            str(summary["annotators"])
        )
        expect(page.locator("#heds-paper_and_resources-paper-experiment_identification")).to_have_value(
            heds["heds-paper_and_resources-paper-experiment_identification"]["data"][""]
        )
        # No quality control in this campaign: 3.3.3.1 "None of the above" is ticked.
        expect(
            page.locator("#heds-sample_evaluators_design-experimental_design-quality_assurance-method-7")
        ).to_be_checked()
        # Section 4 shows the criterion marked current (fluency), with its agreement filled in.
        expect(page.locator("#heds-criteria-criterion_buttons")).to_contain_text("fluency")
        expect(page.locator("#heds-criteria-criterion_buttons")).to_contain_text("adequacy")
        expect(
            page.locator("#heds-criteria-criterion-response_elicitation-inter_annotator-agreement_score")
        ).to_have_value(repr(summary["agreement"]["fluency"]["headline"]["value"]))
        expect(page.locator("#heds-criteria-criterion-evaluation_mode-absolute_or_relative-1")).to_be_checked()

        # What the form would download ("download json") still holds every answer of the file.
        stored = json.loads(page.evaluate("allStorageJSON()"))
        for key, entry in heds.items():
            assert stored[key]["data"] == entry["data"], key
    finally:
        context.close()
    assert not outside, f"the form tried to load external resources: {outside}"
