"""Opaque per-assignment handles: the only output and item ids an annotator ever sees.

Output ids follow import order (so they tell systems apart) and control units
(annotations.quality) show alias ids drawn later from the same sequence (so
they tell controls apart). Annotators therefore get, instead of an id, a keyed
hash (HMAC-SHA256 with `SECRET_KEY`) of (assignment, id), cut to a fixed
length of random-looking characters: the same output gets different handles
in different assignments, and no lookup, order or range maps a handle back
without the key.

Translation happens at the boundary, here and nowhere else:
- out: `payload_for_annotator`, `brief_for_annotator`, `judgement_for_annotator`
  rewrite what the selectors and serializers built with real ids;
- in: `Handles.output` turns what a client sent back into the id the services
  expect (the unit submit API and page, and the one-judgement endpoints).
Owners and researchers using the API keep real ids, and may send handles too.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Iterable

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db.models import Case, IntegerField, Value, When
from django.http import Http404

from annotations.models import Assignment, Output
from annotations.protocols.errors import AnswerError
from annotations.selectors import campaign_list, is_project_staff

HANDLE_LENGTH = 16
# The keys of an answer (unit submit, one-judgement endpoints) that name one output or a list of them.
OUTPUT_KEYS = ("output", "best", "worst", "output_a", "output_b")
OUTPUT_LIST_KEYS = ("outputs",)
# What the protocols answer for a value that names no output of the unit, by key ("output" otherwise).
UNKNOWN_RULE = {"best": "best_worst_in_tuple", "worst": "best_worst_in_tuple"}


def handle_of(*, assignment_id: int, kind: str, object_id: int) -> str:
    """The handle of an output (`kind="output"`) or item (`kind="item"`) within one assignment."""
    message = f"workbench.handle:{kind}:{assignment_id}:{object_id}".encode()
    digest = hmac.new(settings.SECRET_KEY.encode(), message, hashlib.sha256).digest()
    # Base32, lower case: letters and 2-7 only, never read as a number, safe in HTML names.
    return base64.b32encode(digest).decode("ascii")[:HANDLE_LENGTH].lower()


def output_handle(assignment_id: int, output_id: int) -> str:
    return handle_of(assignment_id=assignment_id, kind="output", object_id=output_id)


def item_handle(assignment_id: int, item_id: int) -> str:
    return handle_of(assignment_id=assignment_id, kind="item", object_id=item_id)


def unit_output_ids(assignment) -> list[int]:
    """The ids an assignment shows (alias ids for a control unit; every output of the item
    for an assignment made before units existed, as `selectors.assignment_payload`)."""
    order = list(assignment.shown_order or [])
    if not order and assignment.unit_id:
        order = list(assignment.unit.outputs)
    if not order and assignment.item_id:
        order = list(Output.objects.filter(item_id=assignment.item_id).order_by("id").values_list("id", flat=True))
    return order


class Handles:
    """Handle <-> id for one assignment's outputs.

    `allow_ids`: real ids are accepted too (owners and researchers). For
    annotators anything but a handle of this assignment is refused with the
    protocol's own message ("output ... is not part of this unit"), the same
    for regular and control units, so sending ids probes nothing."""

    UNKNOWN = object()

    def __init__(self, *, assignment_id: int, output_ids: Iterable[int], allow_ids: bool = False):
        self.assignment_id = assignment_id
        self.ids = [int(i) for i in output_ids]
        self.by_handle = {output_handle(assignment_id, i): i for i in self.ids}
        self.allow_ids = allow_ids

    def handle(self, output_id: int) -> str:
        return output_handle(self.assignment_id, output_id)

    def output(self, value):
        """The id a client's value stands for; `UNKNOWN` when it names nothing of this unit."""
        if isinstance(value, str) and value in self.by_handle:
            return self.by_handle[value]
        if self.allow_ids and not isinstance(value, bool):
            if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
                return int(value)
        return self.UNKNOWN

    def output_or_error(self, value, *, field: str = "output"):
        found = self.output(value)
        if found is self.UNKNOWN:
            if self.allow_ids and not isinstance(value, str):
                return value  # the services' own check and message (staff, a non-id value)
            # The protocol's own message for that key (one rule, one message on every path).
            raise AnswerError(UNKNOWN_RULE.get(field, "output"), field=field, value=value)
        return found

    def answer(self, answer):
        """One answer of a unit submission with its output values translated (anything else untouched)."""
        if not isinstance(answer, dict):
            return answer
        answer = dict(answer)
        for key in OUTPUT_KEYS:
            if key in answer:
                answer[key] = self.output_or_error(answer[key], field=key)
        for key in OUTPUT_LIST_KEYS:
            if isinstance(answer.get(key), list):
                answer[key] = [self.output_or_error(v, field=key) for v in answer[key]]
        return answer

    def order(self, values):
        """A reported `shown_order`: translated when it is a list, else as sent (the services check it)."""
        if not isinstance(values, list):
            return values
        return [self.output_or_error(v, field="shown_order") for v in values]


def handles_for(assignment, *, allow_ids: bool) -> Handles:
    return Handles(assignment_id=assignment.pk, output_ids=unit_output_ids(assignment), allow_ids=allow_ids)


def payload_for_annotator(payload: dict) -> dict:
    """An assignment payload (`selectors.assignment_payload`) as an annotator gets it:
    handles for output and item ids, no item external id (a repeated control would
    repeat it) and no unit id."""
    assignment_id = payload["id"]
    item = dict(payload["item"])
    item["id"] = item_handle(assignment_id, item["id"])
    item["external_id"] = ""
    item["outputs"] = [{**o, "id": output_handle(assignment_id, o["id"])} for o in item["outputs"]]
    document = payload.get("document")
    if document:
        document = [{**s, "outputs": [output_handle(assignment_id, i) for i in s["outputs"]]} for s in document]
    return {
        **payload,
        "unit": None,
        "item": item,
        "document": document,
        "shown_order": [output_handle(assignment_id, i) for i in payload["shown_order"]],
    }


def brief_for_annotator(brief: dict) -> dict:
    """An assignment as listed or answered after a submit (`selectors.assignment_brief`), for an annotator."""
    assignment_id = brief["id"]
    return {
        **brief,
        "unit": None,
        "item": item_handle(assignment_id, brief["item"]),
        "shown_order": [output_handle(assignment_id, i) for i in brief.get("shown_order") or []],
    }


def judgement_for_annotator(data: dict, *, assignment_id: int | None, sent: dict | None = None) -> dict:
    """A judgement (one-judgement endpoints' answer) for an annotator: handles for its ids.

    Pairwise judgements are stored with the lower id first and the winner flipped
    to match; told back that way, the order would rank the two outputs' ids, so an
    annotator gets the pair as they sent it (`sent`: `output_a`/`output_b` handles)."""
    if assignment_id is None:
        return data
    data = dict(data)
    to_handle = lambda i: output_handle(assignment_id, i) if isinstance(i, int) else i  # noqa: E731
    if "item" in data and isinstance(data["item"], int):
        data["item"] = item_handle(assignment_id, data["item"])
    for key in ("output", "best", "worst"):
        if key in data:
            data[key] = to_handle(data[key])
    if "outputs" in data and isinstance(data["outputs"], list):
        # Stored sorted by id: told back in the order sent, else in an order of the handles.
        sent_outputs = (sent or {}).get("outputs")
        data["outputs"] = list(sent_outputs) if sent_outputs else sorted(to_handle(i) for i in data["outputs"])
    if isinstance(data.get("shown_order"), list):
        data["shown_order"] = [to_handle(i) for i in data["shown_order"]]
    if "output_a" in data and "output_b" in data:
        a, b = to_handle(data["output_a"]), to_handle(data["output_b"])
        if sent and sent.get("output_a") == b and sent.get("output_b") == a:
            a, b = b, a
            data["winner"] = {"a": "b", "b": "a"}.get(data.get("winner"), data.get("winner"))
        data["output_a"], data["output_b"] = a, b
    return data


def unit_submission_translate(handles: Handles, *, judgements, shown_order):
    """(judgements, shown_order) of a unit submission with real ids; a value naming nothing
    of the unit is refused with the message the service gives for it."""

    if isinstance(judgements, list):
        translated = []
        for index, answer in enumerate(judgements, start=1):
            try:
                translated.append(handles.answer(answer))
            except AnswerError as exc:
                raise ValidationError({"judgements": [f"judgement {index}: {'; '.join(exc.messages)}"]}) from None
        judgements = translated
    if isinstance(shown_order, list) and shown_order:
        try:
            shown_order = handles.order(shown_order)
        except AnswerError:
            raise ValidationError(
                {"shown_order": "shown_order differs from the order this unit was shown in."}
            ) from None
    return judgements, shown_order


def judgement_handles(*, user, campaign_id: int, values: list) -> Handles:
    """The handles of the caller's assignment (in the campaign) that `values` name, for the
    one-judgement endpoints, which name no assignment: a pending one first. None of them:
    an empty map (ids still accepted from owners and researchers, refused from annotators)."""

    campaign = campaign_list(user=user).filter(pk=campaign_id).first()
    if campaign is None:
        raise Http404()
    staff = is_project_staff(user=user, project=campaign.project)
    if not all(isinstance(v, str) for v in values):
        return Handles(assignment_id=0, output_ids=[], allow_ids=staff)
    pending_first = Case(
        When(status=Assignment.Status.PENDING, then=Value(0)), default=Value(1), output_field=IntegerField()
    )
    assignments = (
        Assignment.objects.filter(campaign_id=campaign_id, annotator__user=user)
        .select_related("unit")
        .order_by(pending_first, "-id")
    )
    for assignment in assignments:
        handles = handles_for(assignment, allow_ids=staff)
        if all(v in handles.by_handle for v in values):
            return handles
    return Handles(assignment_id=0, output_ids=[], allow_ids=staff)
