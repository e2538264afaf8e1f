"""Metric runs on the dataset and item pages, for owners and researchers only
(the tags check the role themselves: annotators never get scores)."""

from __future__ import annotations

from django import template
from django.urls import reverse

from annotations.selectors import STAFF_ROLES, project_role
from metrics.catalogue import metric_catalogue, model_choices, models_by_metric
from metrics.selectors import item_scores

register = template.Library()


def _is_staff(context, project) -> bool:
    request = context.get("request")
    return bool(request and project_role(user=request.user, project=project) in STAFF_ROLES)


@register.inclusion_tag("metrics/runs_panel.html", takes_context=True)
def metric_runs_panel(context, dataset):
    if not _is_staff(context, dataset.project):
        return {"show": False}
    return {
        "show": True,
        "dataset": dataset,
        "runs_url": reverse("api-metric-run-list", args=[dataset.pk]),
        "form_data": {
            "metrics": metric_catalogue(),
            "models": model_choices(),
            "models_by_metric": models_by_metric(),
            "default": "chrf",
        },
        "csrf_token": context.get("csrf_token"),
    }


@register.simple_tag(takes_context=True)
def item_metric_scores(context, item):
    """{output id: [{"metric", "signature", "score", "run"}]} of the latest done runs, or {} for annotators."""
    if not _is_staff(context, item.dataset.project):
        return {}
    return item_scores(item=item)


@register.filter
def scores_for(scores: dict, output_id: int) -> list:
    return scores.get(output_id, []) if scores else []
