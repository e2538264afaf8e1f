from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse

from annotations import selectors
from annotations.models import Item
from annotations.selectors.documents import item_document


def _is_triples(data) -> bool:
    return (
        isinstance(data, list) and bool(data) and all(isinstance(row, (list, tuple)) and len(row) == 3 for row in data)
    )


def item_preview(item: Item) -> str:
    """One line for the item list: the source, or the triples flattened."""
    if item.source:
        return item.source
    if _is_triples(item.data):
        subjects = {str(s) for s, _, _ in item.data}
        if len(subjects) == 1:  # E2E-style: name the entity once, then its attributes
            return " · ".join([subjects.pop(), *(f"{p}: {o}" for _, p, o in item.data)])
        return " · ".join(f"{s} {p} {o}" for s, p, o in item.data)
    if item.data:
        return str(item.data)
    return ""


@login_required
def item_detail(request: HttpRequest, pk: int) -> HttpResponse:
    item = get_object_or_404(selectors.item_list(user=request.user).select_related("dataset__project"), pk=pk)
    dataset = item.dataset
    siblings = Item.objects.filter(dataset=dataset)
    # Same order as the dataset page: (position, id).
    before = Q(position__lt=item.position) | Q(position=item.position, id__lt=item.id)
    after = Q(position__gt=item.position) | Q(position=item.position, id__gt=item.id)
    previous_item = siblings.filter(before).order_by("-position", "-id").first()
    next_item = siblings.filter(after).order_by("position", "id").first()
    outputs = list(item.outputs.select_related("system").order_by("system__name"))
    # Annotators browse blind: no system names, outputs in their own order.
    blind = dataset.project_id in selectors.blind_project_ids(user=request.user)
    if blind:
        outputs.sort(key=lambda o: selectors.blind_order_key(user=request.user, output_id=o.pk))
    return render(
        request,
        "annotations/item_detail.html",
        {
            "item": item,
            "dataset": dataset,
            "project": dataset.project,
            "references": item.references.order_by("position"),
            "outputs": outputs,
            "blind": blind,
            "triples": item.data if _is_triples(item.data) else None,
            "other_data": item.data if item.data and not _is_triples(item.data) else None,
            "meta": sorted(item.meta.items()) if isinstance(item.meta, dict) else [],
            "media": [
                {**entry, "role": role, "url": reverse("item-media", args=[item.pk, role])}
                for role, entry in (item.media or {}).items()
            ],
            # The other segments of its document, in document order (issue 41).
            "document": item_document(item=item),
            "previous_item": previous_item,
            "next_item": next_item,
            "position": siblings.filter(before).count() + 1,
            "total": siblings.count(),
        },
    )
