"""The meta-evaluation page shows span P/R/F1, WMT25's severity-weighted F1, factgenie's span F1 and gamma,
error-free detection and the acc23 pairs-permutation test: the figures `correlate` prints (one
function each), for a span-mode LLM judge and a real minWED run (its error positions as spans),
readable at 390 px, names escaped."""

import json
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command

from annotations.models import Campaign, Dataset, Membership
from tests.annotations.analysis.judge_runs import judge_run, outputs_by_key
from tests.annotations.analysis.metric_runs import score_dataset
from tests.annotations.analysis.test_protocols import SYSTEMS, dataset  # noqa: F401
from tests.annotations.factories import MembershipFactory, UserFactory
from tests.annotations.test_real_data import write_jsonl
from tests.browser.conftest import log_in
from tests.browser.test_accessibility import assert_accessible, audited_page, axe_script  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# A criterion name with markup: the page must show it as text.
CRITERION = "q<b>x</b>"


def _json(*args) -> dict:
    out = StringIO()
    call_command(*args, "--json", stdout=out)
    return json.loads(out.getvalue())


@pytest.fixture
def span_world(live_server, dataset, tmp_path):  # noqa: F811
    _json(
        "create_campaign",
        *("--dataset", "toy", "--name", "esa", "--protocol", "esa"),
        *("--criteria", CRITERION, "--severities", "minor,major"),
    )
    rng = np.random.default_rng(5)
    toy = Dataset.objects.get(name="toy")
    outs = outputs_by_key(toy)
    judgements, scores, extras = [], {}, {}
    for i in range(12):
        for k, s in enumerate(SYSTEMS):
            text = outs[(f"i{i}", s)].text
            for annotator in ("a", "b"):
                clean = k == 0 or rng.random() < 0.2
                spans = (
                    []
                    if clean
                    else [{"start": 0, "end": min(len(text), 3 + k), "severity": "major" if k > 2 else "minor"}]
                )
                score = float(rng.integers(86, 100)) if clean else float(rng.integers(20, 80))
                judgements.append(
                    {
                        "item": f"i{i}",
                        "system": s,
                        "annotator": annotator,
                        "criterion": CRITERION,
                        "score": score,
                        "spans": spans,
                    }
                )
            out = outs[(f"i{i}", s)].pk
            scores[out] = float(100 - 20 * k + rng.integers(0, 10))
            extras[out] = {"spans": [{"start": 1, "end": 4, "severity": "minor"}] if k > 1 else [], "raw": ""}
    _json("import_judgements", str(write_jsonl(tmp_path / "e.jsonl", judgements)), "--campaign", "esa")
    judge = judge_run(toy, scores, extras=extras, options={"mode": "spans", "protocol": "esa"})
    mined = score_dataset("toy", "minwed", metric="wer")
    campaign = Campaign.objects.get(name="esa")
    MembershipFactory(project=toy.project, user=UserFactory(username="res"), role=Membership.Role.RESEARCHER)
    return {"campaign": campaign, "judge": judge, "mined": mined}


def _f3(x) -> str:
    return "–" if x is None else f"{x:.3f}"


def test_meta_page_shows_span_error_free_and_pairs_figures(page, span_world, screenshot_dir):
    campaign = span_world["campaign"]
    page.set_default_timeout(120_000)
    log_in(page, "res", "pw-123456")
    page.goto(f"/campaigns/{campaign.pk}/analysis/meta/")
    section = page.locator("#meta-tasks")
    section.wait_for()

    for key in ("judge", "mined"):
        run = span_world[key]
        expected = _json(
            *("correlate", "--campaign", "esa", "--metric", f"#{run.pk}"),
            *("--criterion", CRITERION, "--method", "span-f1"),
        )["overall"]
        row = page.locator(f"#span-table tr[data-run='{run.pk}']")
        assert row.locator("[data-field='span-f1']").inner_text() == _f3(expected["f1"])
        assert row.locator("[data-field='wmt25-f1']").inner_text() == _f3(expected["wmt25"]["f1"])
        assert row.locator("[data-field='factgenie-hard']").inner_text() == _f3(expected["factgenie"]["hard"]["f1"])
        assert row.locator("[data-field='factgenie-soft']").inner_text() == _f3(expected["factgenie"]["soft"]["f1"])
        assert expected["outputs"] == 12 * len(SYSTEMS)
        gamma = _json(
            *("correlate", "--campaign", "esa", "--metric", f"#{run.pk}"),
            *("--criterion", CRITERION, "--method", "span-gamma"),
        )
        assert row.locator("[data-field='factgenie-gamma']").inner_text() == _f3(gamma["overall"]["gamma"])
        assert gamma["overall"]["outputs"] > 0
    per_system = _json(
        *("correlate", "--campaign", "esa", "--metric", f"#{span_world['judge'].pk}"),
        *("--criterion", CRITERION, "--method", "span-f1"),
    )["per_system"]
    gamma_per_system = _json(
        *("correlate", "--campaign", "esa", "--metric", f"#{span_world['judge'].pk}"),
        *("--criterion", CRITERION, "--method", "span-gamma"),
    )["per_system"]
    page.locator("#span-per-system summary").click()
    for system, figures in per_system.items():
        row = page.locator(f"#span-system-table tr[data-run='{span_world['judge'].pk}'][data-system='{system}']")
        assert row.locator("[data-field='span-f1']").inner_text() == _f3(figures["f1"])
        assert row.locator("[data-field='wmt25-f1']").inner_text() == _f3(figures["wmt25"]["f1"])
        assert row.locator("[data-field='factgenie-gamma']").inner_text() == _f3(gamma_per_system[system]["gamma"])
    # minWED marked errors where the systems changed words: a real, non-trivial overlap.
    mined = _json(
        *("correlate", "--campaign", "esa", "--metric", f"#{span_world['mined'].pk}"),
        *("--criterion", CRITERION, "--method", "span-f1"),
    )["overall"]
    assert mined["fp"] > 0 and mined["wmt25"]["predicted_chars"] > 0

    judge = span_world["judge"]
    free = _json(
        *("correlate", "--campaign", "esa", "--metric", f"#{judge.pk}"),
        *("--criterion", CRITERION, "--method", "error-free"),
    )
    row = page.locator(f"#error-free-table tr[data-run='{judge.pk}']")
    assert row.locator("[data-field='error-free-f1']").inner_text() == _f3(free["held_out"]["f1"])
    assert row.locator("[data-field='error-free-best-f1']").inner_text() == _f3(free["best_on_all"]["f1"])
    assert free["positives"] > 0

    pairs = _json(
        *("correlate", "--campaign", "esa", "--metric", f"#{judge.pk}", "--criterion", CRITERION),
        *("--method", "acc23", "--group-by", "item", "--compare", f"#{span_world['mined'].pk}", "--bootstrap", "0"),
    )
    row = (
        page.locator("#pairs-table tbody tr")
        .filter(has_text=f"run {span_world['mined'].pk}")
        .filter(has_text=f"run {judge.pk}")
    )
    assert row.count() == 1
    assert row.locator("[data-field='pairs-p']").inner_text() == _f3(pairs["pairs_test"]["p_value"])
    assert row.locator("td.num").first.inner_text() == _f3(pairs["acc23"])
    # The labels are correlate's own.
    assert pairs["pairs_test"]["label"] in section.locator("[data-field='pairs-label']").inner_text()
    assert free["label"] in section.locator("[data-field='error-free-label']").inner_text()

    # Escaped: the criterion's markup is text, never an element.
    assert section.locator("#span-table tbody b").count() == 0
    assert CRITERION in section.locator("#span-table tbody td").first.inner_text()

    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.evaluate("document.querySelector('#meta-tasks').scrollIntoView()")
    page.screenshot(path=str(screenshot_dir / "analysis-meta-tasks-390.png"))


def test_the_api_answers_the_same_span_figures(span_world, client):
    campaign, run = span_world["campaign"], span_world["mined"]
    client.force_login(UserFactory(username="res2", is_superuser=True))
    r = client.get(
        f"/api/campaigns/{campaign.pk}/correlation/",
        {"metric": f"#{run.pk}", "criterion": CRITERION, "method": "span-f1"},
    )
    assert r.status_code == 200, r.content
    expected = _json(
        *("correlate", "--campaign", "esa", "--metric", f"#{run.pk}", "--criterion", CRITERION, "--method", "span-f1")
    )
    assert r.json()["overall"] == expected["overall"] and r.json()["wmt25-f1"] == expected["wmt25-f1"]


@pytest.mark.parametrize("width", [1280, 390])
def test_the_span_tables_pass_axe(audited_page, axe_script, span_world, width):  # noqa: F811
    page = audited_page(width)
    page.set_default_timeout(120_000)
    log_in(page, "res", "pw-123456")
    page.goto(f"/campaigns/{span_world['campaign'].pk}/analysis/meta/")
    page.locator("#span-table").wait_for()
    page.locator("#span-per-system summary").click()
    assert_accessible(page, axe_script, f"meta-evaluation tasks at {width} px")
