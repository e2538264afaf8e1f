"""Second waves (WMT 2025's human1 / human2): the same units judged again by other annotators.

A wave copies every setting of the first campaign, its unit-plan seed included, so the
planner lays out the same units; its annotators must be disjoint from the first wave's (and
the first wave's from its waves'), checked when an annotator is first enrolled
(`wave_enrolment_check`, called by `assignments.enrolment_lock` before it creates the row).
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q

from annotations import protocols
from annotations.models import Annotator, Campaign, Enrolment
from annotations.services.campaigns import campaign_create
from workbench.exceptions import DomainError


class WaveConflict(DomainError):
    """An annotator of one wave asked for work in another wave of the same campaign."""


def first_wave(campaign: Campaign) -> Campaign:
    return campaign.wave_of if campaign.wave_of_id else campaign


@transaction.atomic
def wave_create(*, first: Campaign, name: str) -> Campaign:
    """A second wave of `first`: its settings, systems and unit plan, no annotator of its own yet."""

    if first.wave_of_id:
        raise ValidationError(
            {
                "wave_of": f"{first.name!r} is itself a second wave (of {first.wave_of.name!r}): "
                "open the wave on the first campaign."
            }
        )
    existing = Campaign.objects.filter(wave_of=first).values_list("name", flat=True).first()
    if existing:
        raise ValidationError({"wave_of": f"{first.name!r} already has a second wave: {existing!r}."})
    campaign = campaign_create(
        dataset=first.dataset,
        name=name,
        protocol=first.protocol,
        criteria=list(first.criteria),
        scale_min=first.scale_min,
        scale_max=first.scale_max,
        instructions=first.instructions,
        redundancy=first.redundancy,
        options=dict(first.options or {}),
        systems=list(first.systems.values_list("name", flat=True)),
        criteria_config=list(first.criteria_config),
        units_per_batch=first.units_per_batch,
        show_source=first.show_source,
        show_reference=first.show_reference,
        assignment_timeout_minutes=first.assignment_timeout_minutes,
        seed=first.seed,
    )
    Campaign.objects.filter(pk=campaign.pk).update(wave_of=first)
    campaign.wave_of = first
    return campaign


def wave_enrolment_check(*, campaign: Campaign, annotator: Annotator) -> None:
    """Refuse an annotator who worked in (or was enrolled in) another wave of the same campaign.

    The same person is the same annotator record or the same workbench account.
    """
    if campaign.wave_of_id:
        others = Q(pk=campaign.wave_of_id) | Q(wave_of_id=campaign.wave_of_id)
    else:
        others = Q(wave_of_id=campaign.pk)
    family = Campaign.objects.filter(others).exclude(pk=campaign.pk)
    if not campaign.wave_of_id and not family.exists():
        return  # a campaign without waves: nothing to keep apart
    same = Q(annotator_id=annotator.pk)
    if annotator.user_id:
        same |= Q(annotator__user_id=annotator.user_id)
    hit = Enrolment.objects.filter(same, campaign__in=family).select_related("campaign").first()
    if hit is None:
        hit = _judged_in(family, same)
    if hit is not None:
        which = "the first wave" if hit.campaign_id == campaign.wave_of_id else "another wave"
        raise WaveConflict(
            f"{annotator.name} already annotated {which} of this campaign ({hit.campaign.name}); "
            f"a second wave needs different annotators."
        )


def _judged_in(family, same: Q):
    """Imported judgements have no enrolment: look for the annotator's judgements too."""

    models = {protocols.get(p).model for p in protocols.names()}
    for model in models:
        hit = model.objects.filter(same, campaign__in=family).select_related("campaign").first()
        if hit is not None:
            return hit
    return None
