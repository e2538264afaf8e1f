"""WMT21's TED en-de MQM file (../shared/data/wmt-mqm, google/wmt-mqm-human-evaluation, all 14
systems), end to end with the default typology (issue 38 items 3 and 4):

- `import_dataset --format mqm-tsv` builds the items, systems and outputs the file rates;
- `import_judgements --format mqm-tsv` refuses the one row whose `<v>` has no `</v>` (line 6444),
  and nothing else: every WMT category of the file is in the default typology; `--skip-invalid`
  imports the rest, leaves out that judgement's rows and lists them in a report;
- the error breakdown's per-system weighted penalties equal score_mqm.py's system scores, from a
  transcription of its weighting below (google-research/mt-metrics-eval
  `mt_metrics_eval/converters/score_mqm.py`: `Score` = the most specific "severity[/category...]"
  weight, a rater's segment score the sum of their rows' weights, the segment's minus the mean
  over raters; a system's score the mean over its segments); every segment score equals the
  published `mqm_ted_ende.avg_seg_scores.tsv` (6 decimals) but the left-out one;
- the same figures in the API (JSON) and on the page, with the drill-down to the items.
"""

import csv
import json
from collections import defaultdict
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotations import protocols
from annotations.models import Campaign, Membership, Output
from annotations.selectors.judgements import ALL, campaign_judgements
from tests.annotations.factories import MembershipFactory, UserFactory
from tests.annotations.protocols.test_mqm import fails, run

pytestmark = pytest.mark.django_db

BROKEN_LINE = 6444  # metricsystem1, seg 475, rater4: "<v>" without "</v>" in the target
SCORE_MQM_WEIGHTS = "Major:5 Minor:1 Neutral:0 Major/Non-translation!:25 Minor/Fluency/Punctuation:0.1"


def score_mqm_segments(path, leave_out=frozenset()) -> dict[tuple[str, str], float]:
    """score_mqm.py's segment scores, (system, seg_id) -> score, its weighting transcribed."""
    weights = {}
    for entry in SCORE_MQM_WEIGHTS.split():
        c, w = entry.split(":")
        weights[c] = float(w)

    def score(items):
        while items:
            if "/".join(items) in weights:
                return weights["/".join(items)]
            items = items[:-1]
        return 0

    raters: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    with open(path, encoding="utf-8") as f:
        for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
            if (row["rater"], row["system"], row["seg_id"]) in leave_out:
                continue
            raters[(row["system"], row["seg_id"])][row["rater"]].append(
                score([row["severity"]] + row["category"].split("/"))
            )
    return {key: -sum(sum(v) for v in by_rater.values()) / len(by_rater) for key, by_rater in raters.items()}


def published(path) -> dict[tuple[str, str], float]:
    """mqm_ted_ende.avg_seg_scores.tsv: `system<TAB>score seg_id`; "None" for unrated segments. The
    human reference is "ref-A" there and "ref" in the ratings file."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        system, rest = line.split("\t")
        value, seg = rest.split(" ")
        if value != "None":
            out[({"ref-A": "ref"}.get(system, system), seg)] = float(value)
    return out


def test_ted_ende_imports_with_the_default_typology_and_the_breakdown_equals_score_mqm(shared_data, tmp_path, client):
    tsv = shared_data / "wmt-mqm" / "mqm_ted_ende.tsv"
    if not tsv.is_file():
        pytest.skip(f"{tsv} is absent (see ../shared/data/SOURCES.md)")
    made = run("import_dataset", str(tsv), "--dataset", "ted-ende", "--project", "wmt", "--format", "mqm-tsv")
    assert made["items"] == 529 and made["outputs"] == 529 * 14
    run("create_campaign", "--dataset", "ted-ende", "--name", "ted", "--protocol", "mqm", "--criteria", "mqm")

    # Without --skip-invalid: one problem, the unclosed mark; no category is refused.
    message = fails("import_judgements", str(tsv), "--campaign", "ted", "--format", "mqm-tsv")
    assert f"line {BROKEN_LINE}: the target must mark one error span" in message
    assert "1 problem(s); nothing was imported" in message and "typology" not in message

    report = tmp_path / "refused.txt"
    err = StringIO()
    out = StringIO()
    call_command(
        "import_judgements",
        str(tsv),
        "--campaign",
        "ted",
        "--format",
        "mqm-tsv",
        "--skip-invalid",
        "--report",
        str(report),
        "--json",
        stdout=out,
        stderr=err,
    )
    summary = json.loads(out.getvalue())
    left_out = {("rater4", "metricsystem1", "475")}
    with open(tsv, encoding="utf-8") as f:
        group_lines = [
            n
            for n, row in enumerate(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE), start=2)
            if (row["rater"], row["system"], row["seg_id"]) in left_out
        ]
    lines = report.read_text(encoding="utf-8").splitlines()
    assert summary["skipped_lines"] == len(group_lines) == len(lines) and summary["report"] == str(report)
    assert lines[[int(x.split(":")[0].split()[1]) for x in lines].index(BROKEN_LINE)].startswith(
        f"line {BROKEN_LINE}: the target must mark one error span"
    )
    assert f"{len(lines)} line(s) refused and left out" in err.getvalue()
    assert summary["judgements"] == 529 * 14 - 1

    # Per segment: score_mqm.py's transcription, and the published scores but the left-out segment.
    campaign = Campaign.objects.get(name="ted")
    scores = protocols.of(campaign).output_scores(list(campaign_judgements(campaign=campaign, annotators=ALL)))
    where = {
        o.pk: (o.system.name, o.item.external_id)
        for o in Output.objects.filter(item__dataset=campaign.dataset).select_related("system", "item")
    }
    ours = {where[o]: v for o, v in scores.items()}
    expected = score_mqm_segments(tsv, left_out)
    assert set(ours) == set(expected) and len(ours) == 529 * 14 - 1
    assert all(ours[k] == pytest.approx(v, abs=1e-9) for k, v in expected.items())
    reference = published(shared_data / "wmt-mqm" / "mqm_ted_ende.avg_seg_scores.tsv")
    assert all(ours[k] == pytest.approx(reference[k], abs=5e-7) for k in ours)

    # Per system: the breakdown's penalty = minus score_mqm.py's system score (mean over segments).
    systems = defaultdict(list)
    for (system, _seg), v in expected.items():
        systems[system].append(v)
    user = UserFactory()
    MembershipFactory(project=campaign.dataset.project, user=user, role=Membership.Role.RESEARCHER)
    client.force_login(user)
    body = client.get(reverse("api-campaign-mqm-errors", args=[campaign.pk]), {"annotators": "all"}).json()
    assert len(body["systems"]) == 14
    for row in body["systems"]:
        assert row["penalty"] == pytest.approx(-sum(systems[row["system"]]) / len(systems[row["system"]]), abs=1e-9)
        assert sum(c["penalty"] for c in row["cells"]) == pytest.approx(row["penalty"], abs=1e-9)
    by_system = {r["system"]: r for r in body["systems"]}
    assert round(by_system["ref"]["penalty"], 2) == 0.91 and round(by_system["Nemo"]["penalty"], 2) == 2.14
    assert body["systems"][0]["system"] == "ref"  # best first, as WMT's table
    assert "Terminology/Inconsistent use of terminology" in body["categories"]
    assert "Fluency/Display" in body["categories"]
    ref = by_system["ref"]
    counts = defaultdict(int)
    with open(tsv, encoding="utf-8") as f:
        for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
            if row["system"] == "ref" and row["category"] != "No-error":
                counts[(row["category"], row["severity"].lower())] += 1
    assert {(c["category"], c["severity"]): c["count"] for c in ref["cells"]} == dict(counts)

    # Drill-down: the items behind Accuracy (all its subcategories), major, for the reference.
    cell = client.get(
        reverse("api-campaign-mqm-errors", args=[campaign.pk]),
        {"annotators": "all", "system": "ref", "category": "Accuracy", "severity": "major"},
    ).json()
    major_accuracy = sum(
        c["penalty"] for c in ref["cells"] if c["category"].startswith("Accuracy/") and c["severity"] == "major"
    )
    assert sum(i["penalty"] for i in cell["items"]) / ref["outputs"] == pytest.approx(major_accuracy, abs=1e-9)
    assert cell["items"] == sorted(cell["items"], key=lambda i: (-i["penalty"], -i["count"], i["item"]))

    page = client.get(reverse("analysis-mqm-errors", args=[campaign.pk]), {"annotators": "all"})
    html = page.content.decode()
    assert page.status_code == 200 and "MQM errors by category and severity" in html
    assert 'data-system="ref"' in html and "Terminology/Inconsistent use of terminology" in html
    items = client.get(
        reverse("analysis-mqm-errors", args=[campaign.pk]),
        {"annotators": "all", "cell": "ref", "category": "Accuracy", "severity": "major"},
    )
    assert (
        items.status_code == 200
        and reverse("item-detail", args=[cell["items"][0]["item_id"]]) in items.content.decode()
    )
