"""What an annotator is shown: the unit payload, their progress, the campaign's settings."""

import json

from django.db import connection

from annotations import protocols, rows
from annotations.models import (
    Annotator,
    Assignment,
    Campaign,
    Enrolment,
    Item,
    Output,
    Reference,
)
from annotations.protocols.common_options import CONTEXT_DOCUMENT, CONTEXT_WINDOW
from annotations.selectors.controls import unit_aliases
from annotations.selectors.documents import document_unit, document_window
from annotations.selectors.prefill import suggestions_for


def enrolment_for(*, campaign: Campaign, annotator: Annotator | None):

    if annotator is None:
        return None
    return Enrolment.objects.filter(campaign=campaign, annotator=annotator).first()


def annotator_progress(*, campaign: Campaign, enrolment) -> dict:
    """Done / total for the annotator's current batch, and their units done overall."""
    size = max(1, campaign.units_per_batch)
    done = enrolment.n_done if enrolment else 0
    return {"done": done, "batch": done // size + 1, "batch_done": done % size, "batch_size": size}


def _item_and_texts(*, item_id: int, output_ids: list[int]) -> tuple[Item, dict[int, str]]:
    """The item shown with a unit and the texts of `output_ids` (all of the
    item's outputs when empty), in one query when `output_ids` are given: this is on the
    path of every unit an annotator is given."""
    item_fields = ("id", "external_id", "source", "data", "media")
    if output_ids:
        with rows.cursor() as cursor:
            cursor.execute(
                f"SELECT i.id, i.external_id, i.source, i.data::text, i.media::text, "
                f"(SELECT jsonb_object_agg(o.id, o.text)::text "
                f"FROM {connection.ops.quote_name(Output._meta.db_table)} o WHERE o.id = ANY(%s)) "
                f"FROM {connection.ops.quote_name(Item._meta.db_table)} i WHERE i.id = %s",
                [list(output_ids), item_id],
            )
            pk, external_id, source, data, media, texts = cursor.fetchone()
        item = Item(id=pk, external_id=external_id, source=source, data=json.loads(data), media=json.loads(media))
        return item, {int(k): v for k, v in json.loads(texts or "{}").items()}
    item = Item.objects.only(*item_fields).get(pk=item_id)
    # order_by(): the default ordering of outputs would join items and systems.
    if output_ids:
        return item, dict(Output.objects.filter(pk__in=output_ids).order_by().values_list("id", "text"))
    return item, dict(Output.objects.filter(item_id=item_id).order_by("id").values_list("id", "text"))


def shown_media(media: dict | None, *, show_source: bool, show_reference: bool) -> dict:
    """The item's media the campaign shows (issue 41), by role: type, MIME type and alt text, never
    the file's path (the page fetches it by assignment and role: views.media)."""
    shown = {"source": show_source, "reference": show_reference}
    return {
        role: {"type": entry["type"], "mime": entry.get("mime", ""), "alt": entry.get("alt", "")}
        for role, entry in (media or {}).items()
        if shown.get(role)
    }


def assignment_payload(*, assignment: Assignment, enrolment=None, show_unit: bool = False) -> dict:
    """What an annotator is shown for an assignment: outputs as `id` + `text`
    in the order the server chose, never a system name; the input and the
    references only where the campaign shows them; the RankME anchor."""
    campaign = assignment.campaign
    order = list(assignment.shown_order)
    if not order and assignment.unit_id:
        order = list(assignment.unit.outputs)
    shown_with = getattr(assignment.unit, "shown_with", None) if Assignment.unit.is_cached(assignment) else None
    if shown_with is not None and order:
        # Read with the unit by the statement that handed it out (services.assignments.shown_with_sql).
        external_id, source, data, texts, media = shown_with
        item = Item(id=assignment.item_id, external_id=external_id, source=source, data=data, media=media)
        texts = {int(k): v for k, v in (texts or {}).items()}
    else:
        item, texts = _item_and_texts(item_id=assignment.item_id, output_ids=order)
    if not order:
        order = list(texts)
    real_ids = order
    if assignment.unit_id and not set(order) <= set(texts):
        # Quality control: a control unit shows its own texts under alias ids (annotations.quality);
        # only then are ids missing from the outputs table, so regular units cost no query here.
        aliases = unit_aliases(unit=assignment.unit)
        if aliases:
            texts = {alias: entry["text"] for alias, entry in aliases.items()}
            real_ids = [aliases[i]["output"] if i in aliases else i for i in order]
    references = []
    protocol = protocols.of(campaign)
    context = None
    if protocol.option(campaign, "context") == CONTEXT_WINDOW:
        # The document around the segment (issue 41): one statement, only for campaigns that show it.
        context = document_window(
            item_id=item.pk,
            output_ids=real_ids,
            size=protocol.option(campaign, "context_size"),
            show_source=campaign.show_source,
            show_references=campaign.show_reference,
        )
    document = None
    if protocol.option(campaign, "context") == CONTEXT_DOCUMENT and assignment.unit_id:
        # A whole document on one screen (issue 41): its segments, one statement, in the same request.
        # A control unit's segments are read through its aliases' real outputs.
        unit = assignment.unit
        document = document_unit(
            outputs=order,
            real_outputs=real_ids,
            unit_outputs=list(unit.outputs),
            unit_systems=list(unit.systems),
            show_source=campaign.show_source,
            show_references=campaign.show_reference,
        )
    shows_anchor = protocol.shows_anchor
    if campaign.show_reference or shows_anchor:
        references = list(Reference.objects.filter(item_id=item.pk).order_by("position").values("position", "text"))
    anchor = None
    if shows_anchor and protocol.anchor(campaign) is not None and references:
        anchor = {"text": references[0]["text"], "value": protocol.anchor(campaign)}
    outputs = [{"id": output_id, "text": texts.get(output_id, "")} for output_id in order]
    if campaign.prefilled:
        # ESA^AI: the suggested spans to accept, edit or delete (offsets and severity, no source).
        shown = suggestions_for(campaign=campaign, output_ids=order)
        for output in outputs:
            output["suggestions"] = shown.get(output["id"], [])
    return {
        "id": assignment.pk,
        "campaign": campaign.pk,
        # The unit id only for researchers: control units (annotations.quality) are created during the
        # campaign, so their ids would tell an annotator which units are controls.
        "unit": assignment.unit_id if show_unit else None,
        "annotator": assignment.annotator_id,
        "annotator_name": assignment.annotator.name,
        "status": assignment.status,
        "seq": assignment.seq,
        "created_at": assignment.created_at,
        "expires_at": assignment.expires_at,
        "shown_order": order,
        "item": {
            "id": item.pk,
            "external_id": item.external_id,
            "source": item.source if campaign.show_source else "",
            "data": item.data if campaign.show_source else [],
            "references": references if campaign.show_reference else [],
            "outputs": outputs,
            "media": shown_media(item.media, show_source=campaign.show_source, show_reference=campaign.show_reference),
        },
        "anchor": anchor,
        "context": context,
        "document": document,
        "draft": assignment.draft or {},
        "progress": annotator_progress(campaign=campaign, enrolment=enrolment),
    }


def assignment_brief(*, assignment: Assignment, show_unit: bool = False) -> dict:
    """An assignment as AssignmentOutputSerializer renders it (the unit id for
    researchers only), built without running the serializer: every submit answers it."""
    return {
        "id": assignment.pk,
        "campaign": assignment.campaign_id,
        "annotator": assignment.annotator_id,
        "annotator_name": assignment.annotator.name,
        "item": assignment.item_id,
        "unit": assignment.unit_id if show_unit else None,
        "status": assignment.status,
        "seq": assignment.seq,
        "shown_order": list(assignment.shown_order),
        "expires_at": assignment.expires_at,
        "completed_at": assignment.completed_at,
        "time_spent_ms": assignment.time_spent_ms,
        "created_at": assignment.created_at,
    }


def campaign_settings(*, campaign: Campaign) -> dict:
    """The campaign as its pages and clients need it (no system names)."""
    protocol = protocols.of(campaign)
    # The protocol's options by name (`options`, and each at the top level, where pages and clients
    # have always read them: `severities`, `anchor_value`, ...), defaults filled in.
    options = {o.name: protocol.option(campaign, o.name) for o in protocol.options if not o.private}
    return {
        "id": campaign.pk,
        "name": campaign.name,
        "protocol": campaign.protocol,
        "criteria": campaign.criteria_configs(),
        **options,
        "options": options,
        "units_per_batch": campaign.units_per_batch,
        "show_source": campaign.show_source,
        "show_reference": campaign.show_reference,
        **protocols.of(campaign).client_settings(campaign),
    }
