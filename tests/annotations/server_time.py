"""Time control for tests of the time measured on the server: instead of sleeping (or trusting a
quiet wall clock), move the moment an assignment was handed out back by a known amount."""

from datetime import timedelta

from django.db.models import F

from annotations.models import Assignment

# How much longer than the time put back a measure may be: the requests of the test itself, on a busy machine.
SLACK_MS = 60_000


def worked(assignment_id: int, ms: int) -> None:
    """As if the annotator had been on the (pending) assignment `ms` milliseconds longer."""
    moved = Assignment.objects.filter(pk=assignment_id, active_since__isnull=False).update(
        active_since=F("active_since") - timedelta(milliseconds=ms)
    )
    assert moved == 1, "the assignment is not being worked on"


def about(measured, ms: int) -> bool:
    """Whether a measured time is the `ms` put back plus the test's own requests (and no more)."""
    return measured is not None and ms <= measured <= ms + SLACK_MS
