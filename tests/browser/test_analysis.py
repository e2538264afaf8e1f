"""Analysis views in Debian's Chromium with real imported data (ASSET, HATS).

Each view opens, its Plotly plot renders from static/vendor with one point per
output (or per system), points link to their items, and the page fixture fails
the test if anything outside the live server is requested. Screenshots at 1280
and 390 px: `WORKBENCH_SCREENSHOTS=docs/screenshots pytest tests/browser/test_analysis.py`.
"""

import pytest

from annotations.models import Campaign, Item, Membership
from tests.annotations.analysis.metric_runs import score_dataset
from tests.annotations.analysis.test_real_data_analysis import import_asset, import_hats
from tests.annotations.factories import MembershipFactory, UserFactory
from tests.browser.conftest import browser_wait_until, built_once_per_session, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

POINTS = "#plot .scatterlayer .trace .points path.point"
# Plotly relayouts a moment after a resize: the plot (if the page has one) has settled when
# its drawing is as wide as its box again.
PLOT_SETTLED = """() => {
  const svg = document.querySelector('#plot .main-svg');
  return !svg || Math.abs(svg.getBoundingClientRect().width - document.getElementById('plot').clientWidth) < 1;
}"""


def _researcher(campaign):
    MembershipFactory(
        project=campaign.dataset.project, user=UserFactory(username="res"), role=Membership.Role.RESEARCHER
    )
    MembershipFactory(
        project=campaign.dataset.project, user=UserFactory(username="ann"), role=Membership.Role.ANNOTATOR
    )


def _shots(page, screenshot_dir, name, anchor=None):
    page.set_viewport_size({"width": 1280, "height": 900})
    height = min(1800, page.evaluate("document.documentElement.scrollHeight"))  # long lists: the top
    page.screenshot(
        path=str(screenshot_dir / f"analysis-{name}-1280.png"),
        full_page=True,
        clip={"x": 0, "y": 0, "width": 1280, "height": height},
    )
    page.set_viewport_size({"width": 390, "height": 844})
    browser_wait_until(page, lambda: page.evaluate(PLOT_SETTLED), 15, "the plot to relayout at 390 px")
    width = page.evaluate("document.documentElement.scrollWidth")
    if anchor:  # the phone shot starts at what the page is about, below the filters
        page.evaluate(f"document.querySelector({anchor!r}).scrollIntoView()")
    page.screenshot(path=str(screenshot_dir / f"analysis-{name}-390.png"), full_page=False)
    page.set_viewport_size({"width": 1280, "height": 900})
    browser_wait_until(page, lambda: page.evaluate(PLOT_SETTLED), 15, "the plot to relayout at 1280 px")
    return width


@pytest.fixture
def asset(live_server, shared_data, tmp_path, set_up_snapshots):
    """ASSET's ratings campaign with its BLEU and minWED runs and two members: imported and scored
    by the first test of the session that asks, copied back (the same rows) for the others."""

    def build() -> int:
        import_asset(shared_data / "asset", tmp_path)
        score_dataset("asset", "bleu")
        score_dataset("asset", "minwed", metric="wer", threshold="0.3")
        campaign = Campaign.objects.get(name="asset-ratings")
        _researcher(campaign)
        return campaign.pk

    return Campaign.objects.get(pk=built_once_per_session(set_up_snapshots, "asset", build))


def test_asset_views(page, asset, screenshot_dir):
    page.set_default_timeout(60_000)  # a loaded 2-core machine: give pages time
    log_in(page, "res", "pw-123456")
    page.goto(f"/campaigns/{asset.pk}/")
    page.click("#analysis-link")
    page.wait_for_url(f"**/campaigns/{asset.pk}/analysis/")
    assert page.locator("#agreement-table tbody tr").count() == 3
    assert _shots(page, screenshot_dir, "dashboard") <= 400

    # Scatter: BLEU vs meaning, 100 rated outputs = 100 points; a click opens the point's item.
    page.goto(f"/campaigns/{asset.pk}/analysis/scatter/?criterion=meaning")
    page.wait_for_selector("#plot[data-rendered='true']")
    assert page.locator(POINTS).count() == 100
    assert page.locator("#points-table tbody tr").count() == 100
    target = page.evaluate("""() => {
        const gd = document.getElementById('plot');
        const pts = [];
        document.querySelectorAll('#plot .scatterlayer .trace').forEach((tr, t) => {
          tr.querySelectorAll('.points path.point').forEach((p, k) => {
            const r = p.getBoundingClientRect();
            pts.push({x: r.x + r.width / 2, y: r.y + r.height / 2, url: gd.data[t].customdata[k]});
          });
        });
        let best = null, bestD = -1;
        for (const a of pts) {
          let d = Infinity;
          for (const b of pts) { if (a !== b) d = Math.min(d, Math.hypot(a.x - b.x, a.y - b.y)); }
          if (d > bestD) { bestD = d; best = a; }
        }
        return best;
    }""")
    assert _shots(page, screenshot_dir, "scatter") <= 400
    page.wait_for_selector("#plot[data-rendered='true']")
    page.mouse.move(target["x"], target["y"])
    page.locator("#plot .hoverlayer .hovertext").wait_for()  # Plotly has the point under the pointer
    with page.expect_navigation():
        page.mouse.click(target["x"], target["y"])
    assert page.url.endswith(target["url"])
    item = Item.objects.get(pk=int(target["url"].strip("/").split("/")[-1]))
    assert item.dataset.name == "asset" and page.get_by_text(item.external_id).first.is_visible()

    page.goto(f"/campaigns/{asset.pk}/analysis/meta/")
    assert page.locator("#meta-table tbody tr").count() == 2  # bleu and minwed
    assert page.locator("#meta-table td.best").count() >= 3
    assert _shots(page, screenshot_dir, "meta") <= 400

    page.goto(f"/campaigns/{asset.pk}/analysis/disagreement/?criterion=meaning")
    first = page.locator("#disagreements > li").first
    href = first.locator("h2 a").get_attribute("href")
    assert _shots(page, screenshot_dir, "disagreement") <= 400
    with page.expect_navigation():
        first.locator("h2 a").click()
    assert page.url.endswith(href)

    page.goto(f"/campaigns/{asset.pk}/analysis/rankings/")
    page.wait_for_selector("#plot[data-rendered='true']")
    assert page.locator(POINTS).count() == 3  # one system, three criteria

    # Annotators are refused.
    page.context.clear_cookies()
    log_in(page, "ann", "pw-123456")
    response = page.goto(f"/campaigns/{asset.pk}/analysis/scatter/")
    assert response.status == 404  # annotators are confined to their units


def test_asset_error_severity(page, asset, screenshot_dir, tmp_path):
    """minWED errors on one scale with one legend, two ESA annotators' spans and missing-content markers."""
    from annotations.models import Output
    from tests.annotations.analysis.test_protocols import run
    from tests.annotations.test_real_data import write_jsonl

    run(
        "create_campaign",
        "--dataset",
        "asset",
        "--name",
        "asset-esa",
        "--protocol",
        "esa",
        "--criteria",
        "quality",
        "--severities",
        "minor,major,critical",
    )
    first = list(
        Output.objects.filter(item__dataset=asset.dataset).select_related("item").order_by("item__position")[:3]
    )
    judgements = []
    for k, o in enumerate(first):
        words = o.text.split()
        end = len(words[0]) + 1 + len(words[1])
        judgements.append(
            {
                "item": o.item.external_id,
                "system": "rated",
                "annotator": "esa-1",
                "criterion": "quality",
                "score": 60,
                "spans": [
                    {"start": 0, "end": end, "severity": "major"},
                    {"missing": True, "severity": ["minor", "major", "critical"][k]},
                ],
            }
        )
        judgements.append(
            {
                "item": o.item.external_id,
                "system": "rated",
                "annotator": "esa-2",
                "criterion": "quality",
                "score": 70,
                "spans": [{"start": len(words[0]) + 1, "end": end + 1 + len(words[2]), "severity": "minor"}],
            }
        )
    run("import_judgements", str(write_jsonl(tmp_path / "esa.jsonl", judgements)), "--campaign", "asset-esa")

    page.set_default_timeout(60_000)
    log_in(page, "res", "pw-123456")
    page.goto(f"/campaigns/{asset.pk}/analysis/errors/")
    page.wait_for_load_state("load")
    assert page.locator("#severity-list > li").count() == 50
    assert page.locator("#severity-legend .legend-bins li").count() == 6
    assert page.locator("#severity-legend").inner_text().count("under") >= 4  # the stops are stated
    token = page.locator("#severity-list .tok.sev").first
    assert "severity" in token.get_attribute("title")  # severity in words, not colour alone
    assert "severity" in token.locator(".sr-only").text_content()
    # Same bin, same computed colour, wherever it is.
    colours = page.evaluate("""() => {
        const out = {};
        document.querySelectorAll('#severity-list .tok.sev').forEach(el => {
          const bin = [...el.classList].find(c => c.startsWith('sev-'));
          (out[bin] = out[bin] || new Set()).add(getComputedStyle(el).backgroundColor);
        });
        return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, v.size]));
    }""")
    assert colours and all(n == 1 for n in colours.values())
    card = page.locator("#severity-list > li").first
    assert card.locator(".missing-content").inner_text() == "missing content · minor"
    assert card.locator(".human").count() == 2
    headline = page.locator("#span-agreement").inner_text()
    assert "over 3 annotator pairs on 3 outputs" in headline
    assert "all 100 outputs listed" in page.locator("#severity-headline h2").inner_text()
    assert _shots(page, screenshot_dir, "errors", anchor="#severity-headline") <= 400
    page.set_viewport_size({"width": 390, "height": 844})
    box = page.locator("#severity-legend").bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390  # the legend wraps, readable on a phone


def test_asset_error_severity_draws_xcomet_spans_like_human_spans(page, asset, screenshot_dir, tmp_path, settings):
    """A real xcomet run (the tiny reference-checked checkpoint) on ASSET: the error-severity page
    offers it, and draws its stored error spans on each hypothesis with the human spans' colours."""
    import shutil
    from pathlib import Path

    from annotations.models import Output
    from metrics.models import OutputScore

    fixtures = Path(__file__).resolve().parents[1] / "metrics" / "scorers" / "comet_fixtures"
    models = tmp_path / "models"
    for name in ("xcomet-tiny", "tiny-xlmr"):
        shutil.copytree(fixtures / name, models / name)
    settings.WORKBENCH_MODEL_DIRS = [str(models)]
    xcomet = score_dataset("asset", "xcomet", model="xcomet-tiny", encoder="tiny-xlmr", device="cpu")
    assert "|inputs:mt+src+ref|" in xcomet.signature
    first = Output.objects.filter(item__dataset=asset.dataset).order_by("item__position", "system__name").first()
    stored = OutputScore.objects.get(run=xcomet, output=first).extra["spans"]
    marked = [s for s in stored if s["end"] > s["start"]]
    assert marked, "the tiny checkpoint marks errors on the first output"

    page.set_default_timeout(60_000)
    log_in(page, "res", "pw-123456")
    page.goto(f"/campaigns/{asset.pk}/analysis/errors/?run={xcomet.pk}")
    page.wait_for_load_state("load")
    assert "xcomet" in page.locator("h1").inner_text()
    assert page.locator("#span-run-note").is_visible()
    assert page.locator("#severity-legend").count() == 0  # minED's bins do not apply
    card = page.locator(f'#severity-list > li[data-output="{first.pk}"]')
    drawn = card.locator(".metric-spans [data-severity]")
    # One drawn run per stretch of characters with one severity: the stored spans' characters.
    chars = "".join(drawn.nth(k).evaluate("el => el.firstChild.textContent") for k in range(drawn.count()))
    expected = "".join(first.text[s["start"] : s["end"]] for s in sorted(marked, key=lambda s: s["start"]))
    assert chars.replace(" ", "") == expected.replace(" ", "")
    assert "error" in drawn.first.get_attribute("title")  # severity in words, not colour alone
    # Drawn like human spans: the same class, so the same colour as on the human lines.
    severity = drawn.first.get_attribute("data-severity")
    colour = drawn.first.evaluate("el => getComputedStyle(el).backgroundColor")
    probe = page.evaluate(
        """(sev) => { const el = document.createElement('span'); el.className = 'human-' + sev;
        document.querySelector('#severity-list').appendChild(el);
        const c = getComputedStyle(el).backgroundColor; el.remove(); return c; }""",
        severity,
    )
    assert colour == probe and colour != "rgba(0, 0, 0, 0)"


@pytest.fixture
def hats(live_server, shared_data, tmp_path):
    import_hats(shared_data / "hats", tmp_path)
    score_dataset("hats", "wer")
    score_dataset("hats", "cer")
    campaign = Campaign.objects.get(name="hats-votes")
    _researcher(campaign)
    return campaign


def test_hats_rankings_and_meta(page, hats, screenshot_dir):
    page.set_default_timeout(60_000)
    log_in(page, "res", "pw-123456")
    page.goto(f"/campaigns/{hats.pk}/analysis/rankings/")
    page.wait_for_selector("#plot[data-rendered='true']")
    assert page.locator(POINTS).count() == 2  # hypA and hypB, human win rates
    tables = page.locator("#rankings-tables .ranking")
    assert tables.count() == 3  # humans, wer, cer side by side
    assert _shots(page, screenshot_dir, "rankings") <= 400
    page.goto(f"/campaigns/{hats.pk}/analysis/meta/")
    assert page.locator("#meta-table tbody tr").count() == 2
    assert page.locator("#meta-table td.best").count() == 1


def test_system_names_with_html_are_text_in_the_plots(page, asset):
    """Issue 24: a system called '<a href=...>' was a live link in Plotly's legend and axis."""
    from annotations.models import System

    evil = '<a href="https://evil.example/">click</a><b>bold</b>'
    System.objects.filter(dataset=asset.dataset).update(name=evil)
    page.set_default_timeout(60_000)
    log_in(page, "res", "pw-123456")
    for view in ("rankings/", "scatter/?criterion=meaning"):
        page.goto(f"/campaigns/{asset.pk}/analysis/{view}")
        page.wait_for_selector("#plot[data-rendered='true']")
        links = page.evaluate("""() => [...document.querySelectorAll('#plot a')].map(a =>
            a.getAttribute('href') || a.getAttribute('xlink:href'))""")
        assert not [h for h in links if h and "evil" in h], (view, links)
        assert page.locator("#plot b, #plot text[style*='bold'] tspan[style*='bold']").count() == 0
        if view == "rankings/":  # the name on the axis, as text
            texts = page.evaluate("() => [...document.querySelectorAll('#plot text')].map(t => t.textContent)")
            assert any('<a href="https://evil.example/">' in t for t in texts), (view, texts[:20])
        else:  # one system: no legend drawn; what Plotly was handed is escaped
            names = page.evaluate("() => document.getElementById('plot').data.map(t => t.name + ' ' + t.text[0])")
            assert names and all("&lt;a href" in n and "<a" not in n for n in names), names
