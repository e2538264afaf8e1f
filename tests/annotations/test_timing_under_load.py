"""The unit floor (annotations.timing) where a loaded machine puts it: below what every hand-out
takes. The hand-outs of controls and of regular units are timed by the clock and compared with a
rank test."""

import random
import time

import pytest
from rest_framework.test import APIClient
from scipy.stats import mannwhitneyu

from annotations import timing
from annotations.models import Unit
from tests.annotations.test_confinement import _study

# Below every hand-out's own time, as CPU load makes any floor: the floor in force then comes from
# the recent answers' times alone (timing.floor_in_force), which is what the test is about. It used
# to be 40 ms with a busy-looping process per core to push every hand-out past it (146 s of this
# test's CPU and a core taken from the other pytest-xdist process); a 1 ms floor gets there with no
# load. With the fixed floor of before (floor_in_force returning the configured one), measured on
# the 2-core machine: controls a median 70 ms against 26 ms, p = 7e-22 (with the hogs: 614 against
# 289 ms, p = 1.3e-20).
FLOOR_MS = 1
UNITS = 160


@pytest.mark.slow
def test_controls_and_regular_units_take_the_same_time_under_load(db, settings):
    settings.WORKBENCH_UNIT_RESPONSE_FLOOR_MS = FLOOR_MS
    timing.floor_history_clear()
    _, _, campaign, users, _ = _study(n_items=UNITS)
    api = APIClient()
    api.force_authenticate(users["annotator"])
    rng = random.Random(3)
    took = {"control": [], "regular": []}
    for _ in range(UNITS):
        started = time.perf_counter()
        fetched = api.post(f"/api/campaigns/{campaign.pk}/next-assignment/")
        elapsed = time.perf_counter() - started
        assert fetched.status_code in (200, 201), fetched.content
        body = fetched.json()
        kind = Unit.objects.values_list("kind", flat=True).get(assignments__pk=body["id"])
        took["regular" if kind == Unit.Kind.REGULAR else "control"].append(elapsed)
        done = api.post(
            f"/api/assignments/{body['id']}/submit/",
            {
                "judgements": [
                    {"criterion": "quality", "output": o["id"], "score": rng.randint(1, 100)}
                    for o in body["item"]["outputs"]
                ],
                "shown_order": body["shown_order"],
            },
            format="json",
        )
        assert done.status_code == 201, done.content
    timing.floor_history_clear()
    assert len(took["control"]) >= 30 and len(took["regular"]) >= 90, {k: len(v) for k, v in took.items()}
    p = mannwhitneyu(took["control"], took["regular"]).pvalue
    med = {k: sorted(v)[len(v) // 2] * 1000 for k, v in took.items()}
    print(f"hand-outs under load: p = {p:.3g}, medians (ms) {med}")  # the figures behind the note
    assert p > 0.01, f"hand-out times tell controls apart: p = {p:.2g}, medians (ms) {med}"
