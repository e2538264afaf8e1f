"""The campaign page's "second wave" form (services/waves.py): researchers only."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotations.access import campaign_for_staff
from annotations.services.waves import wave_create


@login_required
@require_POST
def wave_new(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = campaign_for_staff(user=request.user, pk=pk)
    name = (request.POST.get("name") or "").strip()[:200]
    try:
        wave = wave_create(first=campaign, name=name)
    except ValidationError as exc:
        for message in exc.messages:
            messages.error(request, message)
        return redirect(reverse("campaign-detail", args=[campaign.pk]) + "#waves")
    messages.success(
        request,
        f"Second wave {wave.name} created over the same {wave.units.count()} units; "
        "annotators of the first wave will be refused.",
    )
    return redirect("campaign-detail", pk=wave.pk)
