"""The engine's side of allocation: adaptive checks (the verdict recomputed every `check_every`
judgements, units closed and opened in `Unit.wanted`), and stopping a campaign early.

The pick never computes anything (annotations.services.assignments reads `wanted` from an index);
the submit that completes the `check_every`-th unit runs the check after its commit, under a
PostgreSQL advisory lock, so one check runs at a time per campaign and a concurrent one is skipped
(the next boundary checks again).
"""

from __future__ import annotations

import logging
import zlib

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.utils import timezone

from annotations import protocols
from annotations.allocation import adaptive
from annotations.allocation.state import params_from, verdict_from_json, verdict_to_json
from annotations.models import Campaign, Unit

logger = logging.getLogger(__name__)


def _lock_key(campaign_id: int) -> int:
    return zlib.crc32(b"allocation-check") * 1_000_003 + campaign_id


def allocation_check_if_due(*, campaign: Campaign, n_judged: int) -> None:
    """Called by the submit with the campaign's completed-unit count: schedule a check after commit
    when the count reaches a multiple of `check_every`."""
    params = params_from(campaign.allocation_params)
    if campaign.allocation != Campaign.Allocation.ADAPTIVE or n_judged % max(1, params.check_every):
        return
    campaign_id = campaign.pk

    def check():
        try:
            allocation_check(campaign_id=campaign_id)
        except Exception:  # a failed check must not fail the annotator's submit; the next boundary retries
            logger.exception("adaptive allocation check of campaign %s failed", campaign_id)

    transaction.on_commit(check)


def observations(*, campaign: Campaign) -> list[tuple]:
    """(item, system, value) for every complete judgement of the criterion the campaign ranks by
    (option `adaptive_criterion`, default its first), higher = better, as the campaign's protocol
    defines its value for allocation (`Protocol.allocation_observations`)."""
    protocol = protocols.of(campaign)
    return protocol.allocation_observations(campaign, protocol.allocation_criterion(campaign))


def campaign_systems(*, campaign: Campaign) -> list[str]:
    """The systems of the campaign's regular units (ids as text, as in the verdict)."""
    return sorted(planned_outputs(campaign=campaign))


def planned_outputs(*, campaign: Campaign) -> dict[str, int]:
    """{system id as text: how many outputs (items) of it the campaign's regular units show}: what the campaign can
    judge in all, so the verdict can tell a pair still open from one beyond reach (adaptive.verdict's
    `planned`). One aggregate over the units."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT s.value, count(DISTINCT u.item_id) FROM annotations_unit u CROSS JOIN LATERAL "
            "jsonb_array_elements_text(u.systems) s WHERE u.campaign_id = %s AND u.kind = %s GROUP BY 1",
            [campaign.pk, Unit.Kind.REGULAR],
        )
        return {str(system): int(n) for system, n in cursor.fetchall()}


def allocation_check(*, campaign_id: int) -> adaptive.Verdict | None:
    """Recompute the adaptive verdict of a campaign, close the fresh units it no longer wants (and
    reopen those it wants again), store it, and stop the campaign when its rule is met. Returns the
    verdict, or None when another check holds the lock or the campaign is not adaptive."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [_lock_key(campaign_id)])
            if not cursor.fetchone()[0]:
                return None
        campaign = Campaign.objects.select_related("dataset").get(pk=campaign_id)
        if campaign.allocation != Campaign.Allocation.ADAPTIVE:
            return None
        params = params_from(campaign.allocation_params)
        state = dict(campaign.allocation_state or {})
        previous = verdict_from_json(state.get("verdict"))
        seen = observations(campaign=campaign)
        planned = planned_outputs(campaign=campaign)
        v = adaptive.verdict(seen, sorted(planned), params, previous=previous, planned=planned)
        stopping = v.stop and not campaign.stopped_by
        keep_closed = bool(campaign.stopped_by) or stopping
        # Units first, the campaign row last: a submit holds its unit, then counts on the campaign row.
        # Only fresh units change (n_taken = 0): started ones go on to k whatever the verdict.
        close, reopen = [], []
        for pk, systems, wanted in Unit.objects.filter(
            campaign=campaign, kind=Unit.Kind.REGULAR, n_taken=0
        ).values_list("pk", "systems", "wanted"):
            want = not keep_closed and adaptive.unit_wanted([str(s) for s in systems], v)
            if want != wanted:
                (reopen if want else close).append(pk)
        if close:
            Unit.objects.filter(pk__in=close, n_taken=0).update(wanted=False)
        if reopen:
            Unit.objects.filter(pk__in=reopen).update(wanted=True)
        now = timezone.now()
        state.update(
            {
                "verdict": verdict_to_json(v),
                "checks": int(state.get("checks", 0)) + 1,
                "at_judgements": campaign.n_judged,
                "observations": len(seen),
                "checked_at": now.isoformat(),
                "closed_units": Unit.objects.filter(campaign=campaign, kind=Unit.Kind.REGULAR, wanted=False).count(),
            }
        )
        fields = {"allocation_state": state}
        if stopping:
            fields.update(
                stopped_at=now,
                stopped_by=Campaign.StoppedBy.ADAPTIVE,
                # The reason alone: every surface already says who stopped it (stopped_by).
                stop_reason=v.reason,
            )
        Campaign.objects.filter(pk=campaign.pk).update(**fields)
    return v


@transaction.atomic
def campaign_stop(*, campaign: Campaign, reason: str, by: str = Campaign.StoppedBy.RESEARCHER) -> Campaign:
    """Stop a campaign early: no unit is handed out any more (pending ones can still be submitted);
    the time and reason go to the campaign page, the card and campaign.json. Stopping twice keeps
    the first record."""

    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": "Say why the campaign stops (it goes into the dataset card)."})
    if len(reason) > 2000:
        raise ValidationError({"reason": "The reason is limited to 2000 characters."})
    # Units first, the campaign row last (the lock order of allocation_check).
    Unit.objects.filter(campaign=campaign, kind=Unit.Kind.REGULAR, n_taken=0, wanted=True).update(wanted=False)
    locked = Campaign.objects.select_for_update().get(pk=campaign.pk)
    if locked.stopped_by == Campaign.StoppedBy.RESEARCHER:
        raise ValidationError(f"The campaign was already stopped on {locked.stopped_at:%Y-%m-%d %H:%M} UTC.")
    now = timezone.now()
    Campaign.objects.filter(pk=campaign.pk).update(stopped_at=now, stopped_by=by, stop_reason=reason)
    campaign.stopped_at, campaign.stopped_by, campaign.stop_reason = now, by, reason
    return campaign
