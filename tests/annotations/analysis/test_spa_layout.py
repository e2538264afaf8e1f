"""SPA (soft pairwise accuracy) is the same whatever memory layout its matrices have, and equals
mt-metrics-eval's `PairwiseConfidenceError` (issue 42 item 3)."""

import numpy as np
import pytest

from annotations.analysis import correlation as co
from annotations.analysis.report import _Statistic
from tests.annotations.analysis.test_meta_evaluation import scored  # noqa: F401
from tests.annotations.analysis.test_protocols import dataset  # noqa: F401


def likert(seed=0):
    """Six systems x 60 items, each output's human score the mean of three 1-5 ratings (multiples
    of 1/3: many exact ties between systems' sums), a metric that follows the humans loosely, and
    one missing human score, so the item is dropped by a boolean-mask column selection."""
    rng = np.random.default_rng(seed)
    quality = np.linspace(2.5, 3.5, 6)
    human = np.clip(np.rint(quality[:, None, None] + rng.normal(0, 1.2, (6, 60, 3))), 1, 5).mean(axis=2)
    metric = np.round(human * 10 + rng.normal(0, 8, (6, 60)), 1)
    human[1, 7] = np.nan
    return human, metric


# google-research/mt-metrics-eval at commit 68a481aea1a7 (its mt_metrics_eval/ package copied from a
# fetched snapshot into var/mtme, run with this project's numpy 2.4 / scipy 1.17), on likert(0) with
# item 7 left out and both matrices C-ordered, as its `_Reshape` builds them from packed vectors:
#   stats.Correlation(6, list(h.ravel()), list(m.ravel())).PairwiseConfidenceError()[0]
MTME_SPA = 0.9124666666666666


def _layouts(human, metric):
    ok = ~np.isnan(human).any(axis=0)
    c = (np.ascontiguousarray(human[:, ok]), np.ascontiguousarray(metric[:, ok]))
    yield "C order", c
    yield "Fortran order", (np.asfortranarray(c[0]), np.asfortranarray(c[1]))
    yield "boolean-mask selection", (human[:, ok], metric[:, ok])  # numpy returns it Fortran-ordered
    yield "strided view", (np.ascontiguousarray(c[0].T).T, c[1][:, ::1])
    yield "float32", (c[0].astype(np.float32), c[1].astype(np.float32))
    yield "with the hole (dropped inside spa)", (human, metric)


def test_spa_equals_pce_py_whatever_the_layout():
    human, metric = likert()
    assert human[:, ~np.isnan(human).any(axis=0)].flags.f_contiguous  # the case the issue found
    for name, (h, m) in _layouts(human, metric):
        assert co.spa(h, m)["value"] == pytest.approx(MTME_SPA, abs=1e-12), name
        stat = _Statistic("spa", "system", "none")
        hc, mc = stat.prepare(h, m)
        assert stat.value(hc, mc)["value"] == pytest.approx(MTME_SPA, abs=1e-12), name
        # PERM-BOTH's resamples call the same function (--compare): its observed delta against
        # itself is 0 and the statistic it starts from is the same figure.
        assert stat.corr_fn()(hc, mc) == pytest.approx(MTME_SPA, abs=1e-12), name


def test_pairwise_p_values_do_not_depend_on_layout():
    human, metric = likert()
    ok = ~np.isnan(human).any(axis=0)
    signs = co.permutation_signs(int(ok.sum()))
    c = co.pairwise_p_values(np.ascontiguousarray(human[:, ok]), signs)
    f = co.pairwise_p_values(human[:, ok], signs)
    t = co.pairwise_p_values(np.asfortranarray(human[:, ok]), np.asfortranarray(signs))
    np.testing.assert_array_equal(c, f)
    np.testing.assert_array_equal(c, t)


@pytest.mark.django_db
def test_spa_is_one_figure_on_every_surface(scored, client):  # noqa: F811
    """The command, the command with --compare, the API and the meta-evaluation page give the
    figure `co.spa` gives on the C-ordered matrices (the function the test above holds to pce.py)."""
    from annotations.analysis import pages
    from annotations.analysis.report import _matrices, human_output_scores, load
    from annotations.models import Campaign, Membership
    from annotations.selectors.outputs import output_index
    from metrics.models import MetricRun
    from metrics.selectors import scores_by_output
    from tests.annotations.analysis.test_meta_evaluation import run
    from tests.annotations.factories import MembershipFactory, UserFactory

    campaign = Campaign.objects.get(name="likert")
    bleu = MetricRun.objects.filter(metric="bleu").latest("id")
    human = human_output_scores(load(campaign=campaign, criterion="adequacy"), "adequacy")
    _, _, H, M = _matrices(output_index(campaign=campaign), human, scores_by_output(run=bleu), 1.0)
    expected = co.spa(np.ascontiguousarray(H), np.ascontiguousarray(M))["value"]
    assert co.spa(np.asfortranarray(H), np.asfortranarray(M))["value"] == expected

    args = ("correlate", "--campaign", "likert", "--metric", "bleu", "--criterion", "adequacy", "--method", "spa")
    assert run(*args)["spa"] == pytest.approx(expected, abs=1e-12)
    assert run(*args, "--compare", "chrf")["spa"] == pytest.approx(expected, abs=1e-12)

    user = UserFactory()
    MembershipFactory(project=campaign.dataset.project, user=user, role=Membership.Role.RESEARCHER)
    client.force_login(user)
    api = client.get(
        f"/api/campaigns/{campaign.pk}/correlation/", {"metric": "bleu", "criterion": "adequacy", "method": "spa"}
    ).json()
    assert api["spa"] == pytest.approx(expected, abs=1e-12)

    table = pages.meta_table(campaign)
    k = next(i for i, c in enumerate(table["columns"]) if c["method"] == "spa")
    cell = next(r for r in table["rows"] if r["metric"] == "bleu")["cells"][k]
    assert cell["value"] == pytest.approx(expected, abs=1e-12)
    lines = client.get(f"/campaigns/{campaign.pk}/analysis/meta/", {"format": "csv"}).content.decode().splitlines()
    row = next(line.split(",") for line in lines if line.startswith("bleu,"))
    assert float(row[2 + k]) == pytest.approx(expected, abs=1e-12)


@pytest.mark.django_db
def test_correlate_pdp_at_system_level_with_the_default_bootstrap(scored):  # noqa: F811
    """Issue 42 item 4: `correlate --method pdp --level system` crashed (KeyError 'pdp') in the
    system-level bootstrap unless --bootstrap 0. It prints PDP over the system scores the report
    used and an interval (or says why none)."""
    from io import StringIO

    from django.core.management import call_command

    from tests.annotations.analysis.test_meta_evaluation import run

    out = run(
        "correlate",
        "--campaign",
        "likert",
        "--metric",
        "bleu",
        "--criterion",
        "adequacy",
        "--method",
        "pdp",
        "--level",
        "system",
    )
    used = out["system_scores"]["scores"]
    systems = sorted(used)
    human = run("rankings", "--campaign", "likert", "--criterion", "adequacy", "--rule", "mann-whitney")
    h = {r["system"]: r["mean"] for r in human["systems"]}
    expected = co.pdp(np.array([[h[s] for s in systems]]), np.array([[used[s] for s in systems]]))["value"]
    assert out["pdp"] == pytest.approx(expected, abs=1e-12)
    # Four systems: enough to resample items; an interval, or a reason when none.
    assert (out["ci95"][0] is not None and out["ci95"][0] <= out["ci95"][1]) or out["ci95_note"]
    text = StringIO()
    call_command(
        "correlate",
        "--campaign",
        "likert",
        "--metric",
        "bleu",
        "--criterion",
        "adequacy",
        "--method",
        "pdp",
        "--level",
        "system",
        stdout=text,
    )
    assert text.getvalue().startswith("bleu vs adequacy (system") and "pdp" in text.getvalue()
