"""The campaign's live progress for researchers, and the import and export job lists."""

import hashlib

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.db.models import Count, Max, Q, QuerySet, Sum
from django.utils import timezone

from annotations import protocols
from annotations.models import Annotator, Assignment, Campaign, ImportJob, Unit, UnitCount, UnitNote
from annotations.models.exports import ExportJob
from annotations.selectors.figures_cache import on_workers
from annotations.selectors.roles import User, staff_project_list
from metrics.models import ChunkStatus, MetricRun, RunStatus, metric_queue

PROGRESS_TIMEOUT = 60 * 60
# The last tables computed, shown (with their age) while a worker computes the next ones.
PROGRESS_LAST_TIMEOUT = 7 * 24 * 3600


def _progress_stamp(campaign: Campaign) -> str:
    """The newest hand-out, answer or change of the campaign (index probes, see the migration
    0011): progress figures are computed again only when one of these moved."""
    model = _judgement_model(campaign)
    parts = [
        campaign.updated_at,
        campaign.stopped_at,
        campaign.allocation_state,
        Assignment.objects.filter(campaign=campaign).aggregate(t=Max("updated_at"))["t"],
        model.objects.filter(campaign=campaign).aggregate(t=Max("updated_at"))["t"],
    ]
    return hashlib.sha1("|".join(str(p) for p in parts).encode()).hexdigest()[:16]


def _judgement_model(campaign: Campaign):
    return protocols.of(campaign).model


def campaign_dashboard(*, campaign: Campaign, here: bool | None = None) -> dict:
    """Live progress of a campaign for its researchers: units, judgements by
    status, per annotator (done, pending, abandoned, median seconds per unit)
    and per system (units complete). Aggregated in the database (a million
    assignments never travel to Python) and cached until the campaign changes.

    The tables (`detail`) are a scan of the campaign's units, assignments and judgements: for a large
    campaign (`figures_cache.on_workers`, or `here=False`) a worker computes them (`progress_detail_compute`,
    asked for by `services.progress`) and the page shows the last ones with their age (`detail.stale`,
    `detail.computed_at`), or none yet (`detail.pending`); the counters above them are always current."""
    stamp = _progress_stamp(campaign)
    value = cache.get(_progress_key(campaign.pk, stamp))
    if value is not None:
        detail = {"stamp": stamp, "stale": False, "pending": False, "computed_at": value.get("computed_at")}
    elif here if here is not None else not on_workers(campaign):
        value = progress_detail_compute(campaign=campaign, stamp=stamp)
        detail = {"stamp": stamp, "stale": False, "pending": False, "computed_at": value["computed_at"]}
    else:
        value = cache.get(_progress_last_key(campaign.pk))
        detail = {"stamp": stamp, "stale": value is not None, "pending": value is None}
        detail["computed_at"] = value["computed_at"] if value is not None else None
        if value is None:
            value = {
                "allocation": allocation_summary(campaign=campaign),
                "stopped": _stopped(campaign),
                "judgements": {"complete": None, "partial": None, "abandoned": None},
                "annotators": [],
                "systems": [],
                "notes": None,
            }
    # Units, their counts by judgements done and what agreement can use: read from the counters the
    # submit keeps (one statement of at most slots x (k + 1) rows), so always up to date, never recounted.
    return {**value, "detail": detail, **unit_progress(campaign=campaign)}


def _progress_key(campaign_id: int, stamp: str) -> str:
    return f"progress:{campaign_id}:{stamp}"


def _progress_last_key(campaign_id: int) -> str:
    return f"progress-last:{campaign_id}"


def progress_detail_compute(*, campaign: Campaign, stamp: str | None = None) -> dict:
    """Compute the progress tables of the campaign's state `stamp` (now if None) and keep them in the
    cache: under that state, and as the campaign's last ones (shown with their age while the next are
    computed). In the request for a small campaign, on a worker for a large one."""
    stamp = stamp or _progress_stamp(campaign)
    value = {**_campaign_dashboard(campaign), "computed_at": timezone.now()}
    cache.set(_progress_key(campaign.pk, stamp), value, PROGRESS_TIMEOUT)
    cache.set(_progress_last_key(campaign.pk), value, PROGRESS_LAST_TIMEOUT)
    return value


def progress_stamp(campaign: Campaign) -> str:
    return _progress_stamp(campaign)


def _stopped(campaign: Campaign) -> dict | None:
    if not campaign.stopped_at:
        return None
    return {"at": campaign.stopped_at.isoformat(), "by": campaign.stopped_by, "reason": campaign.stop_reason}


def unit_counts(*, campaign: Campaign) -> dict[int, int]:
    """{judgements done: regular units}, from the counters the database keeps (`UnitCount`)."""
    counts: dict[int, int] = {}
    for done, n in (
        UnitCount.objects.filter(campaign=campaign).order_by().values_list("n_done").annotate(n=Sum("units"))
    ):
        if n:
            counts[done] = counts.get(done, 0) + n
    return counts


def unit_progress(*, campaign: Campaign) -> dict:
    """The campaign's progress from its counters: units, units complete (k judgements: what agreement
    is computed on), units by judgements done (0 .. k), judgements done of planned."""
    k = campaign.redundancy
    counts = unit_counts(campaign=campaign)
    n_units = sum(counts.values())
    complete = sum(n for done, n in counts.items() if done >= k)
    by_done = [0] * (k + 1)
    for done, n in counts.items():
        by_done[min(done, k)] += n
    most = max(by_done) if n_units else 0
    done_judgements = sum(min(done, k) * n for done, n in counts.items())
    return {
        "units": n_units,
        "complete": complete,
        "by_judgements": [
            {"judgements": j, "units": n, "bar": round(100 * n / most) if most else 0} for j, n in enumerate(by_done)
        ],
        "agreement_units": complete,
        "percent": round(100 * complete / n_units) if n_units else 0,
        "unit_judgements": {"done": done_judgements, "planned": n_units * k},
    }


def _campaign_dashboard(campaign: Campaign) -> dict:
    # Regular units only: control units (annotations.quality) have their own page.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT s.value::bigint, count(*), count(*) FILTER (WHERE u.n_done >= u.redundancy), sum(u.n_done) "
            "FROM annotations_unit u CROSS JOIN LATERAL jsonb_array_elements_text(u.systems) s "
            "WHERE u.campaign_id = %s AND u.kind = %s GROUP BY 1",
            [campaign.pk, Unit.Kind.REGULAR],
        )
        per_system = {pk: (u, c, int(j or 0)) for pk, u, c, j in cursor.fetchall()}
        cursor.execute(
            "SELECT a.annotator_id, count(*) FILTER (WHERE a.status = 'done'), "
            "count(*) FILTER (WHERE a.status = 'pending'), count(*) FILTER (WHERE a.status NOT IN ('done', 'pending')), "
            "percentile_cont(0.5) WITHIN GROUP (ORDER BY a.time_spent_ms) FILTER (WHERE a.status = 'done') "
            "FROM annotations_assignment a WHERE a.campaign_id = %s GROUP BY 1",
            [campaign.pk],
        )
        by_annotator = cursor.fetchall()
    names = dict(campaign.dataset.systems.filter(pk__in=list(per_system)).values_list("pk", "name"))
    systems = [
        {
            "system": names.get(pk, str(pk)),
            "units": u,
            "complete": c,
            "judged": j,
            "slots": u * campaign.redundancy,
            "percent": round(100 * j / (u * campaign.redundancy)) if u else 0,
        }
        for pk, (u, c, j) in per_system.items()
    ]
    systems.sort(key=lambda row: row["system"])

    annotator_names = dict(Annotator.objects.filter(pk__in=[row[0] for row in by_annotator]).values_list("id", "name"))
    annotators = sorted(
        (
            {
                "annotator": annotator_names.get(pk, str(pk)),
                "done": done,
                "pending": pending,
                "abandoned": abandoned,
                # statistics.median's value (the mean of the two middle ones for an even count), in seconds
                "median_seconds": round(median / 1000, 1) if median is not None else None,
            }
            for pk, done, pending, abandoned, median in by_annotator
        ),
        key=lambda row: (-row["done"], row["annotator"]),
    )

    by_status = dict(
        _judgement_model(campaign)
        .objects.filter(campaign=campaign)
        .order_by()
        .values_list("status")
        .annotate(n=Count("id"))
    )
    return {
        "allocation": allocation_summary(campaign=campaign, names=names),
        "stopped": _stopped(campaign),
        "judgements": {status: by_status.get(status, 0) for status in ("complete", "partial", "abandoned")},
        "annotators": annotators,
        "systems": systems,
        "notes": _notes(campaign),
    }


def _notes(campaign: Campaign) -> dict | None:
    """Special answers given (each offered one with its count) and units with a comment; None, and
    no query, for a campaign that offers neither (annotations.services.unit_notes)."""
    protocol = protocols.of(campaign)
    if not protocol.notes_offered(campaign):
        return None
    counts = dict(UnitNote.objects.filter(campaign=campaign).order_by().values_list("special").annotate(n=Count("id")))
    offered = protocol.option(campaign, "special_answers") or []
    return {
        "special": [{"answer": s, "count": counts.get(s, 0)} for s in offered],
        "comments": counts.get("", 0),
    }


def allocation_summary(*, campaign: Campaign, names: dict | None = None) -> dict:
    """The campaign's allocation policy, its parameters and (adaptive) the last verdict with system
    names: for researchers only (annotators never learn system names)."""
    summary = {
        "policy": campaign.allocation,
        "params": dict(campaign.allocation_params or {}),
        # The criterion the adaptive rule ranks by (option `adaptive_criterion`, default the first).
        "criterion": protocols.of(campaign).allocation_criterion(campaign),
    }
    if campaign.allocation != Campaign.Allocation.ADAPTIVE:
        return summary
    state = campaign.allocation_state or {}
    verdict = state.get("verdict")
    if names is None or verdict and any(int(s) not in names for s in verdict["ranking"] if s.isdigit()):
        names = dict(campaign.dataset.systems.values_list("pk", "name"))

    def name(system_id: str) -> str:
        return names.get(int(system_id), system_id) if system_id.isdigit() else system_id

    summary.update(
        {
            "checks": state.get("checks", 0),
            "at_judgements": state.get("at_judgements"),
            "observations": state.get("observations"),
            "checked_at": state.get("checked_at"),
            "closed_units": state.get("closed_units", 0),
            "verdict": None,
        }
    )
    if verdict:
        summary["verdict"] = {
            "cold": verdict["cold"],
            "stable": verdict["stable"],
            "stop": verdict["stop"],
            "reason": verdict["reason"],
            "ranking": [name(s) for s in verdict["ranking"]],
            "clusters": [[name(s) for s in c] for c in verdict["clusters"]],
            "decided": sorted(sorted(name(s) for s in pair) for pair in verdict["decided"]),
            # Each decided pair with how: a significant difference, or none within reach of the
            # planned judgements (verdicts stored before this was recorded: None, "decided" only).
            "decided_how": sorted(
                (
                    sorted(name(s) for s in pair),
                    None
                    if "out_of_reach" not in verdict
                    else "beyond reach"
                    if frozenset(pair) in {frozenset(p) for p in verdict["out_of_reach"]}
                    else "significant",
                )
                for pair in verdict["decided"]
            ),
            "undecided": sorted(sorted(name(s) for s in pair) for pair in verdict["undecided"]),
        }
    return summary


# --- Imports running on a worker ------------------------------------------------


def import_job_list(*, user: User) -> QuerySet[ImportJob]:
    """Import jobs the user may follow: their own, and all of the projects they are staff of."""
    if not user.is_authenticated:
        return ImportJob.objects.none()
    qs = ImportJob.objects.select_related("project", "dataset", "campaign")
    if user.is_superuser:
        return qs
    return qs.filter(Q(user=user) | Q(project__in=staff_project_list(user=user))).distinct()


# --- Exports written by a worker ----------------------------------------------------


def export_job_waiting(*, job) -> str | None:
    """Why a queued export is not being written, or None: it waits for a worker of the default
    Celery queue behind the tasks sent before it (export and import jobs, metric runs' tasks of the
    same queue). Read from the database, so it holds for any broker; the queue is first in, first out."""

    if job.status != ExportJob.Status.QUEUED:
        return None
    queue = settings.CELERY_TASK_DEFAULT_QUEUE
    waiting = (ExportJob.Status.QUEUED, ExportJob.Status.RUNNING)
    jobs = ExportJob.objects.filter(status__in=waiting, pk__lt=job.pk).count()
    jobs += ImportJob.objects.filter(status__in=waiting, created_at__lt=job.created_at).count()
    runs = MetricRun.objects.filter(status__in=(RunStatus.QUEUED, RunStatus.RUNNING), created_at__lt=job.created_at)
    metrics = [m for m in runs.values_list("metric", flat=True).distinct() if metric_queue(m) == queue]
    tasks = runs.filter(metric__in=metrics).aggregate(
        queued=Count("pk", filter=Q(status=RunStatus.QUEUED), distinct=True),
        chunks=Count(
            "chunks", filter=Q(status=RunStatus.RUNNING, chunks__status__in=(ChunkStatus.PENDING, ChunkStatus.RUNNING))
        ),
    )
    n = jobs + (tasks["queued"] or 0) + (tasks["chunks"] or 0)
    return (
        f"queued: waiting for a worker of the {queue} queue; {n} task{'s' if n != 1 else ''} "
        "of earlier exports, imports and metric runs ahead"
    )


def export_job_list(*, user: User):
    """Export jobs the user may follow and download: those of campaigns in projects where they are
    owner or researcher now (annotators and non-members see none)."""

    if not user.is_authenticated:
        return ExportJob.objects.none()
    return ExportJob.objects.select_related("campaign__dataset__project").filter(
        campaign__dataset__project__in=staff_project_list(user=user)
    )
