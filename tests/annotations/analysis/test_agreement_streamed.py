"""The agreement report's memory (issue 46 item 2): for protocols whose figures all come from the
reliability tables (ratings, pairwise, best-worst ...), the tables are fed as the reader streams
its rows, never holding every row (~600 bytes each, 36 MB at 60,000 judgements), with the same
figures as from the whole lists."""

import json
from collections import defaultdict

import krippendorff
import numpy as np
import pytest
from django.core.management import call_command

from annotations.analysis import agreement as ag, report
from annotations.models import Campaign, Output, RatingJudgement
from annotations.selectors.outputs import output_identities
from tests.memory import python_peak

SYSTEMS, ANNOTATORS = 4, 3


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def make_campaign(tmp_path, name: str, items: int) -> Campaign:
    rng = np.random.default_rng(items)
    rows, judgements = [], []
    for i in range(items):
        rows.append({"item": f"i{i}", "source": f"s{i}", "outputs": {f"s{k}": f"o{i} {k}" for k in range(SYSTEMS)}})
        for k in range(SYSTEMS):
            base = int(rng.integers(1, 6))
            for a in range(ANNOTATORS):
                score = float(min(5, max(1, base + int(rng.integers(-1, 2)))))
                judgements.append(
                    {"item": f"i{i}", "system": f"s{k}", "annotator": f"a{a}", "criterion": "adequacy", "score": score}
                )
    quiet = {"stdout": open("/dev/null", "w"), "stderr": open("/dev/null", "w")}
    call_command("import_dataset", _write(tmp_path / f"{name}.jsonl", rows), "--dataset", name, **quiet)
    call_command(
        "create_campaign", "--dataset", name, "--name", name, "--protocol", "likert", "--criteria", "adequacy",
        "--scale", "1-5", **quiet,
    )  # fmt: skip
    call_command("import_judgements", _write(tmp_path / f"{name}-j.jsonl", judgements), "--campaign", name, **quiet)
    return Campaign.objects.get(name=name)


def report_peak(campaign: Campaign) -> tuple[dict, int]:
    with python_peak() as peak:
        out = report.agreement_report(campaign=campaign, bootstrap=100, seed=0, per_annotator=False, cohen=False)
    return out, peak.bytes


@pytest.mark.slow
@pytest.mark.django_db
def test_agreement_report_memory_per_judgement_is_a_few_numbers(tmp_path, monkeypatch):
    # What is held a chunk at a time (the reader's items, the rows fed together) made small, so
    # that the growth from 1,200 to 12,000 judgements is what is held for every judgement.
    reader = report.campaign_judgements
    monkeypatch.setattr(report, "campaign_judgements", lambda **kw: reader(**kw, chunk_items=20))
    monkeypatch.setattr(report, "STREAM_ROWS", 200, raising=False)
    small = make_campaign(tmp_path, "small", 100)
    large = make_campaign(tmp_path, "large", 1000)
    report_peak(small)  # imports and caches warmed
    _, peak_small = report_peak(small)
    figures, peak_large = report_peak(large)
    n_small, n_large = 100 * SYSTEMS * ANNOTATORS, 1000 * SYSTEMS * ANNOTATORS
    assert figures["criteria"]["adequacy"]["n_judgements"] == n_large
    per_judgement = (peak_large - peak_small) / (n_large - n_small)
    print(f"agreement report: {peak_small / 2**20:.1f} MB at {n_small}, {peak_large / 2**20:.1f} MB at {n_large} "
          f"judgements: {per_judgement:.0f} bytes a judgement")  # fmt: skip
    # Before: every row held, 1,201 bytes a judgement; now 714: the tables' numbers, the bootstrap's
    # per-unit arrays and the outputs' identities (both grow with the units). At 6,000 -> 60,000
    # judgements (same test, 500 and 5,000 items): 6.9 -> 67.6 MB before, 4.2 -> 39.5 MB now.
    assert per_judgement < 900, f"{per_judgement:.0f} bytes a judgement"


def whole_per_system(protocol, rows, identity) -> dict:
    """The headline level of alpha within each system's outputs, from every row at once (the
    report's computation before streaming)."""
    systems = dict(Output.objects.filter(pk__in={r.output_id for r in rows}).values_list("pk", "system__name"))
    by_system = defaultdict(list)
    for r in rows:
        by_system[systems.get(r.output_id)].append(r)
    level = protocol.agreement.level
    out = {}
    for s, mine in sorted(by_system.items(), key=lambda kv: str(kv[0])):
        counts = ag.value_counts(ag.protocol_table(protocol, mine, identity))
        out[s] = {
            f"krippendorff_alpha_{level}": ag._clean(ag.krippendorff_alpha(counts, level)),
            "n_units": counts.n_units,
        }
    return out


@pytest.mark.django_db
def test_streamed_figures_equal_those_of_the_whole_rows_and_krippendorff(tmp_path):
    campaign = make_campaign(tmp_path, "same", 40)
    out = report.agreement_report(campaign=campaign, bootstrap=50, seed=3, per_annotator=True, cohen=True)
    got = out["criteria"]["adequacy"]

    # The figures from every row at once (what the report computed before streaming).
    j = report.load(campaign=campaign)
    rows = j.rows["adequacy"]
    identity = output_identities(dataset=campaign.dataset)
    whole = ag.criterion_agreement(
        j.protocol,
        rows,
        scale=campaign.criterion_scale("adequacy"),
        annotators=j.judgements.used,
        bootstrap=50,
        seed=3,
        names=j.names(),
        cohen=True,
        per_annotator=True,
        identity=identity,
    )
    whole["per_system"] = whole_per_system(j.protocol, rows, identity)
    assert got == whole
    assert out["judgements_used"] == j.describe()

    # Interval alpha as the krippendorff package computes it (annotators x outputs).
    judged = list(RatingJudgement.objects.filter(campaign=campaign).values_list("annotator_id", "output_id", "score"))
    annotators = sorted({a for a, _, _ in judged})
    outputs = sorted({o for _, o, _ in judged})
    data = np.full((len(annotators), len(outputs)), np.nan)
    for a, o, score in judged:
        data[annotators.index(a), outputs.index(o)] = score
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="interval")
    assert got["krippendorff_alpha"]["interval"] == pytest.approx(expected, abs=1e-12)
