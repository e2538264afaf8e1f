"""Counters kept by the database, and figures computed on workers (issue 45).

`UnitCount`: a campaign's regular units by judgements done, kept by triggers on the unit table
(migration 0027), so progress is read in constant time instead of recounted. `FigureSnapshot`:
the last value of one analysis or quality figure of a large campaign, computed by a worker
(`annotations.services.figures`), with the campaign's state it reflects and when it was computed.
`FigureState`: one row per campaign saying whether a computation is queued or running, and how far.
"""

from django.db import models

from annotations.models.campaigns import Campaign

# Rows per (campaign, judgements done): a unit counts in row `id % UNIT_COUNT_SLOTS`, so concurrent
# submits of different units rarely wait for one counter row. Written into the triggers' SQL.
UNIT_COUNT_SLOTS = 16


class UnitCount(models.Model):
    """How many regular units of a campaign have `n_done` judgements done, in slot `slot`.

    Never written by Python: the triggers of migration 0027 move a unit from one count to the next in
    the statement that changes its `n_done` (the submit's finishing statement), add planned units and
    take deleted ones away. Read by `selectors.dashboards.unit_counts` (sum over the slots)."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="+")
    slot = models.PositiveSmallIntegerField()
    n_done = models.PositiveSmallIntegerField()
    units = models.IntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["campaign", "slot", "n_done"], name="unitcount_unique_slot"),
        ]


class FigureSnapshot(models.Model):
    """One figure (`name` with its filters `params`, hashed into `key`) of a campaign as a worker last
    computed it: `value` (pickled, as Django's cache stores it) reflects the campaign's `stamp`
    (`selectors.figures_cache.stamp`). A page asking for a figure it has none of leaves a row without a
    value: the worker computes every row whose stamp is not the campaign's current one."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=60)
    key = models.CharField(max_length=40)
    params = models.JSONField(default=dict)
    stamp = models.CharField(max_length=40, blank=True, default="")
    value = models.BinaryField(null=True)
    computed_at = models.DateTimeField(null=True)
    wanted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["campaign", "name", "key"], name="figuresnapshot_unique_key"),
        ]


class FigureState(models.Model):
    """A campaign's figure computation: queued (a task was sent, not started), running (with figures
    done of total), or idle. One task per campaign at a time (a PostgreSQL advisory lock)."""

    campaign = models.OneToOneField(Campaign, on_delete=models.CASCADE, primary_key=True, related_name="+")
    queued_at = models.DateTimeField(null=True)
    running_since = models.DateTimeField(null=True)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, default="")
