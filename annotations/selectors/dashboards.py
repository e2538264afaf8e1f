"""The campaign's live progress for researchers, and the import and export job lists."""

from django.db.models import Count, Q, QuerySet

from annotations import protocols
from annotations.models import Assignment, Campaign, ImportJob
from annotations.selectors.roles import User, staff_project_list


def campaign_dashboard(*, campaign: Campaign) -> dict:
    """Live progress of a campaign for its researchers: units, judgements by
    status, per annotator (done, pending, abandoned, median seconds per unit)
    and per system (units complete)."""
    import statistics
    from collections import defaultdict

    from annotations.models import Unit

    # Regular units only: control units (annotations.quality) have their own page.
    units = list(Unit.objects.filter(campaign=campaign, kind=Unit.Kind.REGULAR).values_list(
        "systems", "n_done", "redundancy"))
    complete = sum(1 for _, done, k in units if done >= k)
    per_system: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0])  # units, complete, judged
    for systems, done, k in units:
        for system_id in systems:
            row = per_system[system_id]
            row[0] += 1
            row[1] += done >= k
            row[2] += done
    names = dict(campaign.dataset.systems.filter(pk__in=list(per_system)).values_list("pk", "name"))
    systems = [
        {"system": names.get(pk, str(pk)), "units": u, "complete": c, "judged": j, "slots": u * campaign.redundancy,
         "percent": round(100 * j / (u * campaign.redundancy)) if u else 0}
        for pk, (u, c, j) in per_system.items()
    ]
    systems.sort(key=lambda row: row["system"])

    rows: dict[int, dict] = {}
    times: dict[int, list[int]] = defaultdict(list)
    for annotator_id, name, status, spent in Assignment.objects.filter(campaign=campaign).values_list(
        "annotator_id", "annotator__name", "status", "time_spent_ms"
    ):
        row = rows.setdefault(annotator_id, {"annotator": name, "done": 0, "pending": 0, "abandoned": 0})
        if status == Assignment.Status.DONE:
            row["done"] += 1
            if spent is not None:
                times[annotator_id].append(spent)
        elif status == Assignment.Status.PENDING:
            row["pending"] += 1
        else:
            row["abandoned"] += 1
    for annotator_id, row in rows.items():
        row["median_seconds"] = round(statistics.median(times[annotator_id]) / 1000, 1) if times[annotator_id] else None
    annotators = sorted(rows.values(), key=lambda row: (-row["done"], row["annotator"]))

    model = protocols.of(campaign).model
    by_status = dict(
        model.objects.filter(campaign=campaign).order_by().values_list("status").annotate(n=Count("id"))
    )
    return {
        "units": len(units),
        "complete": complete,
        "percent": round(100 * complete / len(units)) if units else 0,
        "judgements": {status: by_status.get(status, 0) for status in ("complete", "partial", "abandoned")},
        "annotators": annotators,
        "systems": systems,
    }


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


def export_job_list(*, user: User):
    """Export jobs the user may follow and download: those of campaigns in projects where they are
    owner or researcher now (annotators and non-members see none)."""
    from annotations.export.models import ExportJob

    if not user.is_authenticated:
        return ExportJob.objects.none()
    return ExportJob.objects.select_related("campaign__dataset__project").filter(
        campaign__dataset__project__in=staff_project_list(user=user))
