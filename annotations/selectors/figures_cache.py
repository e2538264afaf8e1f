"""The figures cache: analysis, quality and severity figures computed once per state of a campaign.

The cache key holds the campaign, the newest judgement, the newest done metric
run and the newest quality decision, so a new judgement, run or decision
invalidates every figure, while pages reloaded without changes answer from
the cache. A low module (it reads; the cache is Django's), so that quality control's
selectors and the analysis pages share it without importing each other.

Pages of a large campaign (more judged units than WORKBENCH_FIGURES_INLINE_MAX) compute no figure
in the request (issue 45): a page view runs inside `from_workers(...)`, and there `cached` answers
the figures a worker knows how to compute (`names`) from their `FigureSnapshot`. A snapshot of the
campaign's current state is the figure; an older one is answered as it is, recorded as stale with
its age (the page says "computed 3 min ago, updating"), and the page's `refresh` asks a worker for
a new one; with none yet, `FigurePending` (the page shows a progress indicator instead).
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import pickle
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.core.cache import cache
from django.db.models import Max

from annotations import protocols
from annotations.models import (
    BestWorstJudgement,
    Campaign,
    PairwiseJudgement,
    PostEditJudgement,
    RatingJudgement,
    SpanJudgement,
)
from annotations.models.figures import FigureSnapshot, FigureState
from annotations.models.quality import AnnotatorDecision, ControlJudgement, GoldUnit, QualitySettings
from metrics.selectors import latest_done_runs

TIMEOUT = 60 * 60


def stamp(campaign: Campaign) -> str:
    """The campaign's state as far as figures go: the newest change of its judgements, control
    answers, gold units, decisions and settings, and its done runs. Each part is one probe of a
    (campaign, updated_at) index, so the key costs the same at a million judgements as at ten."""
    parts = []
    for model in (
        RatingJudgement,
        PairwiseJudgement,
        BestWorstJudgement,
        SpanJudgement,
        PostEditJudgement,
        ControlJudgement,
        GoldUnit,
    ):
        parts.append(str(model.objects.filter(campaign=campaign).aggregate(t=Max("updated_at"))["t"]))
    runs = latest_done_runs(dataset=campaign.dataset)
    parts.append(",".join(str(pk) for pk in runs.values_list("pk", flat=True)))
    parts.append(str(AnnotatorDecision.objects.filter(campaign=campaign).aggregate(t=Max("id"))["t"]))
    parts.append(str(QualitySettings.objects.filter(campaign=campaign).values_list("updated_at", flat=True).first()))
    return hashlib.sha1("|".join(parts).encode()).hexdigest()[:16]


def params_key(params: dict) -> str:
    return hashlib.sha1(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()[:16]


def on_workers(campaign: Campaign) -> bool:
    """Whether the campaign's figures are computed on workers rather than in the page's request: more
    judgements (imported ones too) than WORKBENCH_FIGURES_INLINE_MAX. Counted up to that bound only
    (an index scan of at most that many rows), so the answer costs the same at a million judgements."""
    bound = settings.WORKBENCH_FIGURES_INLINE_MAX
    model = protocols.of(campaign).model
    return model.objects.filter(campaign=campaign).order_by().values("pk")[: bound + 1].count() > bound


class FigurePending(Exception):
    """A page asked for a figure no worker has computed yet (one was asked for)."""

    def __init__(self, name: str):
        super().__init__(f"figure {name} is being computed")
        self.name = name


class FigureFailed:
    """A figure whose computation raised (kept as the figure): read from its snapshot, it raises the
    same exception, so the page says what it says when the figure fails in the request."""

    def __init__(self, exc: Exception):
        self.exc = exc


def _loaded(blob):
    value = pickle.loads(blob)
    if isinstance(value, FigureFailed):
        raise value.exc
    return value


@dataclass
class PageFigures:
    """What one page request was answered from: `refresh(campaign=, name=, params=, stamp=)` asks a
    worker for a figure; `stale` and `pending` list the figures answered old or not at all, each as
    {"name", "key", "computed_at"}."""

    names: frozenset
    refresh: Callable[..., None]
    # {name: (parameter, select)}: a figure filtered by the system subset in `parameter` is
    # `select(the same figure over all systems, subset)`, read from that figure's snapshot.
    selections: dict = field(default_factory=dict)
    stale: list = field(default_factory=list)
    pending: list = field(default_factory=list)
    # Figures answered from a snapshot of the campaign's current state (an API says "ready" and their age).
    fresh: list = field(default_factory=list)
    _large: dict = field(default_factory=dict)
    _stamps: dict = field(default_factory=dict)

    def large(self, campaign: Campaign) -> bool:
        if campaign.pk not in self._large:
            self._large[campaign.pk] = on_workers(campaign)
        return self._large[campaign.pk]

    def stamp(self, campaign: Campaign) -> str:
        """The campaign's `stamp`, read once per page request: a page asks the cache for several
        figures (the quality page for three, through quality control's selectors), and each read
        of the stamp is ten statements. A page view writes nothing, so its state cannot change
        between its figures; one state for all of them is also the consistent answer."""
        if campaign.pk not in self._stamps:
            self._stamps[campaign.pk] = stamp(campaign)
        return self._stamps[campaign.pk]

    def oldest(self) -> datetime | None:
        times = [f["computed_at"] for f in self.stale if f["computed_at"] is not None]
        return min(times) if times else None

    def from_snapshots(self) -> bool:
        """Whether anything in this request was answered from (or waited for) a worker's figure."""
        return bool(self.stale or self.pending or self.fresh)

    def computed_at(self) -> datetime | None:
        """When the oldest figure answered was computed (the stale ones' if any, else the fresh ones')."""
        old = self.oldest()
        if old is not None or self.pending:
            return old
        times = [f["computed_at"] for f in self.fresh if f["computed_at"] is not None]
        return min(times) if times else None


_page: contextvars.ContextVar[PageFigures | None] = contextvars.ContextVar("page_figures", default=None)


@contextmanager
def from_workers(*, names, refresh: Callable[..., None], selections: dict | None = None) -> Iterator[PageFigures]:
    """Inside: the figures `names` of a large campaign are read from their snapshots (see above)."""
    page = PageFigures(names=frozenset(names), refresh=refresh, selections=dict(selections or {}))
    token = _page.set(page)
    try:
        yield page
    finally:
        _page.reset(token)


def page_figures() -> PageFigures | None:
    """The figures of the page being rendered (None outside `from_workers`)."""
    return _page.get()


def snapshot_stamps(campaign: Campaign, wanted: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """{(name, key): the stamp its snapshot reflects} for the figures `wanted` that have one."""
    if not wanted:
        return {}
    names = {name for name, _ in wanted}
    rows = FigureSnapshot.objects.filter(
        campaign=campaign, name__in=names, key__in={key for _, key in wanted}, value__isnull=False
    ).values_list("name", "key", "stamp")
    return {(name, key): st for name, key, st in rows if (name, key) in set(wanted)}


def worker_state(campaign: Campaign) -> dict:
    """What the campaign's figure worker is doing: {"running_since": datetime | None, "error": str}."""
    state = FigureState.objects.filter(campaign=campaign).values("running_since", "error").first() or {}
    return {"running_since": state.get("running_since"), "error": state.get("error") or ""}


def _from_snapshot(page: PageFigures, campaign: Campaign, name: str, params: dict, current: str):
    key = params_key(params)
    row = (
        FigureSnapshot.objects.filter(campaign=campaign, name=name, key=key)
        .values_list("stamp", "value", "computed_at")
        .first()
    )
    if row is not None and row[1] is not None and row[0] == current:
        page.fresh.append({"name": name, "key": key, "computed_at": row[2]})
        return _loaded(row[1])
    page.refresh(campaign=campaign, name=name, params=params, stamp=current)
    if row is not None and row[1] is not None:
        page.stale.append({"name": name, "key": key, "computed_at": row[2]})
        return _loaded(row[1])
    page.pending.append({"name": name, "key": key, "computed_at": None})
    raise FigurePending(name)


def cached(campaign: Campaign, name: str, params: dict, compute):
    page = _page.get()
    current = stamp(campaign) if page is None else page.stamp(campaign)
    if page is not None and name in page.names and page.large(campaign):
        selection = page.selections.get(name)
        if selection is not None and params.get(selection[0]):
            parameter, select = selection
            # A subset of systems: selected from the figure over all of them, never its own computation.
            return select(_from_snapshot(page, campaign, name, {**params, parameter: None}, current), params[parameter])
        return _from_snapshot(page, campaign, name, params, current)
    key = "analysis:%s:%s:%s:%s" % (campaign.pk, name, current, params_key(params))
    value = cache.get(key)
    if value is None:
        value = compute()
        cache.set(key, value, TIMEOUT)
    return value
