"""Annotator pages: the home page (campaigns with progress) and the protocol
page that shows one unit at a time.

The page is rendered on the server once (every text escaped by the template); a
small script (`static/js/annotate.js`) handles the controls, keyboard
shortcuts, the timer and autosave, and posts the unit as JSON to
`annotate-submit`, which calls the same service as the REST API (origin
"browser") and, in the same request, hands out the next unit and answers it as
JSON (`next_unit_json`): the script draws it into the page (texts set as text,
never as HTML) without loading the page again, one request per unit as on the
API. What the annotator sees is built by `selectors.assignment_payload` and
never holds a system name.
"""

from __future__ import annotations

import functools

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, JsonResponse
from django.shortcuts import redirect, render
from django.template.defaultfilters import floatformat
from django.urls import get_script_prefix, reverse
from django.views.decorators.http import require_GET, require_POST

from annotations import protocols, rows, selectors
from annotations.access import annotate_campaign_for, annotator_required, request_annotator
from annotations.models import Annotator, Assignment, Campaign, Dataset, JudgementBase, Membership, Project
from annotations.quality.services import completion_code_at_batch_end
from annotations.selectors.batches import annotator_batch
from annotations.selectors.controls import completion_codes_on_sql
from annotations.selectors.dashboards import unit_progress
from annotations.services.assignment_work import assignment_draft_save, assignment_release
from annotations.services.assignments import assignment_next
from annotations.services.handles import handles_for, payload_for_annotator, unit_submission_translate
from annotations.services.handout_clock import clock_after_response
from annotations.services.submissions import unit_submit, unit_submit_join, unit_submit_own
from annotations.studies.session import join_binding
from annotations.timing import campaign_controls_check, unit_response_floor
from annotations.views.background import background_pending
from workbench import strictjson

DRAFT_MAX_BYTES = 200_000
BODY_MAX_BYTES = 2_000_000


def campaign_progress(*, campaign: Campaign) -> dict:
    """Units complete (k judgements) and in total, for progress bars."""
    # From the counters the submit keeps (selectors.dashboards.unit_progress), not a count of the units.
    progress = unit_progress(campaign=campaign)
    return {key: progress[key] for key in ("units", "complete", "percent")}


# A URL of a view taking one id, for an id: reversed once per name (and script prefix) with a marker
# id that is then replaced. The unit a submit answers carries about ten (the batch strip's links), and
# `reverse` cost ~30 us each on the annotation hot path.
_MARKER = 918273645


@functools.lru_cache(maxsize=64)
def _url_template(name: str, prefix: str) -> tuple[str, str]:
    url = reverse(name, args=[_MARKER])
    head, marker, tail = url.rpartition(str(_MARKER))
    assert marker, url
    return head, tail


def url_for(name: str, pk: int) -> str:
    """`reverse(name, args=[pk])` for the annotate views' `<int:pk>` patterns."""
    head, tail = _url_template(name, get_script_prefix())
    return f"{head}{int(pk)}{tail}"


def unit_context(*, campaign: Campaign, payload: dict, preview: bool = False) -> dict:
    """What `annotate/_unit.html` needs, for the work page and the set-up preview alike;
    `protocol` names the protocol's template partial and script."""
    protocol = protocols.of(campaign)
    settings = selectors.campaign_settings(campaign=campaign)
    criteria = settings["criteria"]
    for index, criterion in enumerate(criteria):
        criterion["index"] = index
        if criterion["widget"] == Campaign.Widget.RADIO:
            low, high = int(criterion["scale_min"]), int(criterion["scale_max"])
            criterion["points"] = [{"value": v, "key": str((v - low + 1) % 10)} for v in range(low, high + 1)]
        elif criterion["widget"] == Campaign.Widget.SLIDER:
            # Tick labels under the slider: its ends and quarters (0, 25, 50, 75, 100 on ESA's scale).
            low, high = float(criterion["scale_min"]), float(criterion["scale_max"])
            criterion["ticks"] = [round(low + (high - low) * q / 4, 2) for q in range(5)]
    outputs = payload["item"]["outputs"]
    for position, output in enumerate(outputs):
        output["label"] = protocol.output_labels[position] if protocol.output_labels else str(position + 1)
    document = document_segments_shown(payload.get("document"), outputs)
    data = payload["item"]["data"]
    triples = (
        data
        if isinstance(data, list) and data and all(isinstance(row, (list, tuple)) and len(row) == 3 for row in data)
        else None
    )
    config = {
        "protocol": protocol.client_name,
        # A document unit is never drawn into another unit's page (its segments are the page): its shape is its own.
        "shape": f"document|{payload['id']}"
        if document
        else unit_shape(protocol=protocol.name, outputs=outputs, anchor=payload.get("anchor")),
        "assignment": payload["id"],
        "shown_order": payload["shown_order"],
        "outputs": [
            {"id": o["id"], "text": o["text"], **({"suggestions": o["suggestions"]} if "suggestions" in o else {})}
            for o in outputs
        ],
        "criteria": [{k: c[k] for k in ("name", "widget", "scale_min", "scale_max", "index")} for c in criteria],
        # The protocol's options (severities, typology, ...): its script reads them.
        **settings["options"],
        "anchor": payload.get("anchor"),
        "draft": payload.get("draft") or {},
        "preview": preview,
    }
    if not preview:
        config.update(
            submit_url=url_for("annotate-submit", payload["id"]),
            draft_url=url_for("annotate-draft", payload["id"]),
            release_url=url_for("annotate-release", payload["id"]),
        )
    media = unit_media(payload=payload, preview=preview)
    if media:
        # A unit with media is drawn by loading its page (its player starts afresh): a shape of its own.
        config["shape"] += f"|media-{payload['id']}"
    return {
        "campaign": campaign,
        "protocol": protocol,
        "settings": settings,
        "media": media,
        "doc_context": labelled_context(payload.get("context"), outputs),
        "document": document,
        "outputs_per_segment": max((len(s["outputs"]) for s in document or []), default=1),
        "criteria": criteria,
        "payload": payload,
        "outputs": outputs,
        # ESA^AI: some output of the unit comes with suggested spans (the keys to decide on them).
        "suggested": any(o.get("suggestions") for o in outputs),
        "triples": triples,
        "other_data": data if data and not triples else None,
        "unit_config": config,
        "preview": preview,
    }


def document_segments_shown(document: list[dict] | None, outputs: list[dict]) -> list[dict] | None:
    """A document unit's segments (selectors.document_unit) as the page shows them: each with its
    outputs (the dicts of `outputs`, relabelled by segment: "3" for segment 3's output, "3A", "3B" for
    several side by side) and `seg`, which tells the segments' ids apart; None for a segment unit."""
    if not document:
        return None
    by_id = {o["id"]: o for o in outputs}
    shown = []
    for k, segment in enumerate(document, start=1):
        mine = [by_id[i] for i in segment["outputs"] if i in by_id]
        for position, output in enumerate(mine):
            output["label"] = output["seg_label"] = f"{k}{chr(65 + position)}" if len(mine) > 1 else str(k)
            # What a scale's label adds to its criterion, so a screen reader tells the segments apart.
            output["seg_name"] = f"segment {k}"
        shown.append({**segment, "outputs": mine, "seg": f"-s{k}"})
    return shown


MEDIA_LABELS = {"source": "Source", "reference": "Reference"}


def unit_media(*, payload: dict, preview: bool) -> list[dict]:
    """The unit's media (issue 41) as the page shows them: type, MIME type, alt text and the URL that
    serves the file by assignment and role (views.media); nothing in the set-up preview."""
    if preview:
        return []
    return [
        {
            "role": role,
            "type": entry["type"],
            "mime": entry["mime"],
            "alt": entry["alt"] or f"{MEDIA_LABELS[role]} {entry['type']}",
            "label": MEDIA_LABELS[role],
            "url": reverse("annotate-media", args=[payload["id"], role]),
        }
        for role, entry in (payload["item"].get("media") or {}).items()
    ]


def labelled_context(context: dict | None, outputs: list[dict]) -> dict | None:
    """The document context (selectors.document_window) as the page shows it: each neighbour's
    outputs labelled as the unit's outputs are; None when not shown."""
    if not context or not (context["before"] or context["after"]):
        return None
    # One output: "Output"; several: their labels on the screen (A, B, ... or 1, 2, ...).
    labels = ["Output"] if len(outputs) == 1 else [o["label"] for o in outputs]

    def shown(segment: dict) -> dict:
        return {
            "source": segment["source"],
            "references": segment["references"],
            "outputs": [
                {"label": label, "text": text}
                for label, text in zip(labels, segment["outputs"], strict=False)
                if text is not None
            ],
        }

    return {side: [shown(s) for s in context[side]] for side in ("before", "after")}


def unit_shape(*, protocol: str, outputs: list[dict], anchor) -> str:
    """What the form of a unit depends on beyond its texts and ids: the page's script draws the next
    unit into the form of the one before only when their shapes are equal (else it loads the page)."""
    return "|".join(
        [
            protocol,
            str(len(outputs)),
            "anchor" if anchor else "",
            "".join("s" if o.get("suggestions") else "-" for o in outputs),
        ]
    )


def unit_json(*, campaign: Campaign, assignment: Assignment, annotator, enrolment, staff: bool) -> dict:
    """A unit as the page's script draws it into the page it is on (static/js/annotate.js `draw`):
    its config, the texts of its input and outputs, and the progress and batch strip around it;
    what the page's templates show, as data. Texts stay text: the script sets them as text nodes."""
    assignment.campaign, assignment.annotator = campaign, annotator
    payload = payload_for_annotator(selectors.assignment_payload(assignment=assignment, enrolment=enrolment))
    context = unit_context(campaign=campaign, payload=payload)
    item = payload["item"]
    anchor = payload.get("anchor")
    # Read with the unit's hand-out when the submit handed it out (`current_batch`), else now.
    batch = getattr(assignment, "current_batch", None) or annotator_batch(campaign=campaign, annotator=annotator)
    slots = batch.slots(current_id=assignment.pk)
    unit_page = url_for("annotate-unit", campaign.pk)
    for slot in slots:
        if slot["state"] == "done" and slot["revisable"] and not slot["current"]:
            slot["url"] = url_for("annotate-revise", slot["assignment"])
        elif slot["state"] == "pending" and not slot["current"]:
            slot["url"] = unit_page
    return {
        "config": context["unit_config"],
        "input": {
            "source": item.get("source") or "",
            "triples": context["triples"] or [],
            "other": str(context["other_data"]) if context["other_data"] else "",
            "references": [ref["text"] for ref in item.get("references") or []],
        },
        "outputs": [
            {"id": o["id"], "label": o["label"], "text": o["text"], "suggestions": len(o.get("suggestions") or [])}
            for o in payload["item"]["outputs"]
        ],
        "anchor": {"text": anchor["text"], "value": floatformat(anchor["value"], -2)} if anchor else None,
        "context": context["doc_context"],
        "progress": selectors.annotator_progress(campaign=campaign, enrolment=enrolment),
        "overall": campaign_progress(campaign=campaign)["percent"] if staff else None,
        "batch": {"size": batch.size, "slots": slots},
    }


def next_unit_json(request: HttpRequest, *, campaign: Campaign, annotator, taken=None) -> dict | None:
    """Hand out the annotator's next unit (as `_take_next` does) and answer it as `unit_json`;
    None when there is none or the campaign is too busy (the page then follows `next` as before,
    to the finished or busy page). `taken`: the unit the submit already handed out."""
    assignment = taken
    if assignment is None:
        try:
            assignment, _ = assignment_next(campaign=campaign, annotator=annotator)
        except ValidationError:
            return None
    if assignment is None:
        return None
    # Whether answers are held to the floor (the next unit may be a control) was set by the submit's
    # own lock query (annotations.timing.controls_in_play), for this campaign: no query here.
    enrolment = getattr(assignment, "enrolment", None) or selectors.enrolment_for(
        campaign=campaign, annotator=annotator
    )
    role = getattr(request, "project_role", None)  # `_own_pending` looked it up
    staff = request.user.is_authenticated and role in selectors.STAFF_ROLES
    return unit_json(campaign=campaign, assignment=assignment, annotator=annotator, enrolment=enrolment, staff=staff)


@login_required
def annotate_home(request: HttpRequest) -> HttpResponse:
    """Every campaign the user may work on, with their progress and a continue button."""
    campaigns = selectors.campaign_list(user=request.user).order_by("dataset__project__name", "name")
    rows = []
    for campaign in campaigns:
        annotator = selectors.annotator_for_user(user=request.user, project=campaign.project)
        enrolment = selectors.enrolment_for(campaign=campaign, annotator=annotator)
        pending = (
            annotator is not None
            and Assignment.objects.filter(
                campaign=campaign, annotator=annotator, status=Assignment.Status.PENDING
            ).exists()
        )
        if campaign.stopped_at and not pending:
            continue  # a stopped campaign hands out nothing new: no Start button that leads nowhere
        rows.append(
            {
                "campaign": campaign,
                "mine": selectors.annotator_progress(campaign=campaign, enrolment=enrolment),
                # The campaign's progress is for its researchers: an annotator sees their own batch.
                "overall": _overall_for(request, campaign),
                "pending": pending,
            }
        )
    return render(request, "annotate/home.html", {"rows": rows})


def _overall_for(request: HttpRequest, campaign: Campaign) -> dict | None:
    """The campaign's progress, for its researchers only: an annotator (or a join visitor,
    never logged in) sees their own batch."""
    if selectors.is_project_staff(user=request.user, project=campaign.project):
        return campaign_progress(campaign=campaign)
    return None


def _batch_done_for_join(request: HttpRequest, campaign: Campaign, enrolment) -> bool:
    """A join visitor does one batch: once it is done (or nothing is left), no more units."""
    if join_binding(request) is None or enrolment is None:
        return False
    return enrolment.n_done >= max(1, campaign.units_per_batch)


def _pending_of(*, campaign: Campaign, annotator) -> Assignment | None:
    if annotator is None:
        return None
    return (
        Assignment.objects.filter(campaign=campaign, annotator=annotator, status=Assignment.Status.PENDING)
        .order_by("-id")
        .first()
    )


@annotator_required
@clock_after_response
@unit_response_floor
def annotate_campaign(request: HttpRequest, pk: int) -> HttpResponse:
    """GET: the campaign's landing page (instructions, the annotator's batch,
    a Start / Continue button); it never hands out a unit. POST: hand out the
    annotator's pending unit or the next one (a write: the unit's slot, the
    deadline), then redirect to the unit page (POST, redirect, GET)."""
    campaign = annotate_campaign_for(request, pk)
    if request.method == "POST":
        return _take_next(request, campaign)
    if request.method != "GET" and request.method != "HEAD":
        return HttpResponseNotAllowed(["GET", "POST"])
    annotator = request_annotator(request, campaign)
    enrolment = selectors.enrolment_for(campaign=campaign, annotator=annotator)
    join = join_binding(request)
    if (
        join is not None
        and _batch_done_for_join(request, campaign, enrolment)
        and _pending_of(campaign=campaign, annotator=annotator) is None
    ):
        return redirect("join-done")
    return render(
        request,
        "annotate/landing.html",
        {
            "campaign": campaign,
            "progress": selectors.annotator_progress(campaign=campaign, enrolment=enrolment),
            "pending": _pending_of(campaign=campaign, annotator=annotator) is not None,
            "started": enrolment is not None and enrolment.n_assigned > 0,
            "join": join is not None,
            "overall": _overall_for(request, campaign),
        },
    )


def _take_next(request: HttpRequest, campaign: Campaign) -> HttpResponse:
    if background_pending(request, campaign):  # the campaign's questions come before the first unit
        return redirect("annotate-background", pk=campaign.pk)
    annotator = request_annotator(request, campaign, create=True)
    enrolment = selectors.enrolment_for(campaign=campaign, annotator=annotator)
    if (
        _batch_done_for_join(request, campaign, enrolment)
        and _pending_of(campaign=campaign, annotator=annotator) is None
    ):
        return redirect("join-done")
    try:
        assignment, _ = assignment_next(campaign=campaign, annotator=annotator)
    except ValidationError as exc:  # too busy: say so, do not crash
        return render(
            request, "annotate/busy.html", {"campaign": campaign, "message": " ".join(exc.messages)}, status=503
        )
    if assignment is not None:
        return redirect("annotate-unit", pk=campaign.pk)
    code = completion_code_at_batch_end(campaign=campaign, annotator=annotator, finished=True)
    enrolment = selectors.enrolment_for(campaign=campaign, annotator=annotator)
    if join_binding(request) is not None:
        if code is not None or (enrolment is not None and enrolment.n_done > 0):
            return redirect("join-done")
        return render(
            request,
            "studies/message.html",
            {
                "title": "No units left",
                "message": "Every unit of this study has its annotators already. Thank you "
                "for your interest: please return the study on your platform.",
            },
        )
    return render(
        request,
        "annotate/finished.html",
        {
            "campaign": campaign,
            "progress": selectors.annotator_progress(campaign=campaign, enrolment=enrolment),
            "overall": _overall_for(request, campaign),
            "completion_code": code,
        },
    )


@annotator_required
@require_GET
@clock_after_response
@unit_response_floor
def annotate_unit(request: HttpRequest, pk: int) -> HttpResponse:
    """The annotator's pending unit, shown (never handed out: a GET writes nothing;
    reloading it shows the same unit). Nothing pending: back to the landing page."""
    campaign = annotate_campaign_for(request, pk)
    annotator = request_annotator(request, campaign)
    enrolment = selectors.enrolment_for(campaign=campaign, annotator=annotator)
    assignment = _pending_of(campaign=campaign, annotator=annotator)
    context = {
        "campaign": campaign,
        "progress": selectors.annotator_progress(campaign=campaign, enrolment=enrolment),
        "overall": _overall_for(request, campaign),
        "join": join_binding(request) is not None,
    }
    if assignment is None:
        return redirect("annotate-campaign", pk=campaign.pk)
    campaign_controls_check(campaign.pk)  # no lock taken here: ask whether answers are held to the floor
    assignment.campaign, assignment.annotator = campaign, annotator
    # The page shows handles, never output or item ids (annotations.services.handles).
    payload = payload_for_annotator(selectors.assignment_payload(assignment=assignment, enrolment=enrolment))
    context.update(unit_context(campaign=campaign, payload=payload))
    context["assignment"] = assignment
    batch = annotator_batch(campaign=campaign, annotator=annotator)  # the strip of units to revise
    context.update(batch=batch, slots=batch.slots(current_id=assignment.pk))
    return render(request, "annotate/unit.html", context)


def _own_pending(request: HttpRequest, pk: int) -> Assignment:
    """The assignment `pk` when it is the requester's: a logged-in member's own, or the
    join session's annotator's in its campaign (404 otherwise, whatever the reason)."""
    if request.user.is_authenticated:
        assignment, role = _own_with_role(request.user, pk)
        if assignment is None or role is None:
            raise Http404()
        request.project_role = role  # for what this request shows next (researchers see the campaign's progress)
        return assignment
    qs = Assignment.objects.select_related("campaign__dataset__project", "annotator")
    binding = join_binding(request)
    assignment = (
        None
        if binding is None
        else qs.filter(pk=pk, annotator_id=binding["annotator"], campaign_id=binding["campaign"]).first()
    )
    if assignment is None:
        raise Http404()
    request_annotator(request, assignment.campaign)  # the link may have been revoked since
    return assignment


_OWN_MODELS = (Assignment, Campaign, Dataset, Project, Annotator)


@functools.cache
def _own_sql() -> str:
    """The user's assignment with its campaign, dataset, project and annotator, the user's role in
    the project and whether the campaign gives completion codes (`codes_on`), in one statement: what
    the ORM's select_related and `project_role` took two queries (and ~2 ms of query building) for, on
    every submit and autosave."""
    a, c, d, p, n = (rows.table(m) for m in _OWN_MODELS)
    columns = ", ".join(rows.columns(m, alias) for m, alias in zip(_OWN_MODELS, "acdpn"))
    return (
        f"SELECT {columns}, (SELECT m.role FROM {rows.table(Membership)} m WHERE m.project_id = p.id "
        f"AND m.user_id = %s ORDER BY m.id LIMIT 1), {completion_codes_on_sql('c.id')} "
        f"FROM {a} a JOIN {c} c ON c.id = a.campaign_id JOIN {d} d ON d.id = c.dataset_id "
        f"JOIN {p} p ON p.id = d.project_id JOIN {n} n ON n.id = a.annotator_id "
        "WHERE a.id = %s AND n.user_id = %s"
    )


def _own_with_role(user, pk: int) -> tuple[Assignment | None, str | None]:
    """`selectors.project_role`'s answer (a superuser is an owner) with the assignment, if it is theirs."""
    with rows.cursor() as cursor:
        cursor.execute(_own_sql(), [user.pk, pk, user.pk])
        row = cursor.fetchone()
    if row is None:
        return None, None
    start, objects = 0, []
    for model in _OWN_MODELS:
        objects.append(rows.from_row(model, row, start))
        start += rows.width(model)
    assignment, campaign, dataset, project, annotator = objects
    dataset.project = project
    campaign.dataset = dataset
    assignment.campaign, assignment.annotator = campaign, annotator
    assignment.codes_on = row[-1]
    return assignment, Membership.Role.OWNER if user.is_superuser else row[-2]


def _json_body(request: HttpRequest) -> dict:
    if len(request.body) > BODY_MAX_BYTES:
        raise ValidationError("The submission is too large.")
    try:
        body = strictjson.loads(request.body or b"{}")
    except ValueError as exc:  # UnicodeDecodeError included
        raise ValidationError(f"The submission is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise ValidationError("The submission must be a JSON object.")
    return body


def _errors(exc: ValidationError) -> list[str]:
    if hasattr(exc, "error_dict"):
        return [m for messages in exc.message_dict.values() for m in messages]
    return exc.messages


@annotator_required
@require_POST
@clock_after_response
@unit_response_floor
def annotate_submit(request: HttpRequest, pk: int) -> JsonResponse:
    """The page's submission of a whole unit (JSON); answers with where to go next."""
    try:
        body, refused = _json_body(request), None
    except ValidationError as exc:
        body, refused = {}, exc
    time_spent = body.get("time_spent_ms")
    if isinstance(time_spent, float) and time_spent.is_integer():
        time_spent = int(time_spent)
    listened = body.get("listened_ms")  # the audio player's count (static/js/media_player.js)

    def answer(assignment):
        if refused is not None:
            raise refused  # once the unit is known to be theirs: someone else's is a 404 whatever was sent
        return unit_submission_translate(
            handles_for(assignment, allow_ids=False),
            judgements=body.get("judgements"),
            shown_order=body.get("shown_order"),
        )

    if request.user.is_authenticated:
        try:
            # A member's own unit, found (the page's 404 otherwise, as `_own_pending` gives it), with their
            # role and the campaign's completion codes, and locked, by the submit's first statement; the
            # next unit handed out in the same transaction unless a completion code or a join session's
            # batch decides what comes next (below).
            result = unit_submit_own(
                user=request.user,
                assignment_id=pk,
                answer=answer,
                time_spent_ms=time_spent,
                listened_ms=listened,
                origin=JudgementBase.Origin.BROWSER,
                and_next=join_binding(request) is None,
                with_batch=True,
            )
        except ValidationError as exc:
            # A DomainError (a duplicate submission...) goes to DomainErrorMiddleware: a 400 with `errors` too.
            return JsonResponse({"errors": _errors(exc)}, status=400)
        assignment = result.assignment  # with its campaign (dataset, project), annotator and `codes_on`
        request.project_role = assignment.member_role  # for what this request shows next
    else:
        binding, result = join_binding(request), None
        if binding is not None:
            try:
                # A join session's unit found, checked as the session's (as `_own_pending` checks it) and
                # locked by the submit's first statement, the next unit handed out in the same transaction
                # unless the batch ends here; None: the two-step way below sorts it out (or refuses).
                result = unit_submit_join(
                    binding=binding, assignment_id=pk, answer=answer, time_spent_ms=time_spent, listened_ms=listened
                )
            except ValidationError as exc:
                return JsonResponse({"errors": _errors(exc)}, status=400)
        if result is not None:
            assignment = result.assignment  # with its campaign (dataset, project), annotator and `codes_on`
        else:
            assignment = _own_pending(request, pk)
            try:
                judgements, shown_order = answer(assignment)
                result = unit_submit(
                    annotator=assignment.annotator,
                    assignment_id=assignment.pk,
                    campaign=assignment.campaign,
                    judgements=judgements,
                    shown_order=shown_order,
                    time_spent_ms=time_spent,
                    listened_ms=listened,
                    origin=JudgementBase.Origin.BROWSER,
                )
            except ValidationError as exc:
                return JsonResponse({"errors": _errors(exc)}, status=400)
            except Http404:
                return JsonResponse({"errors": ["This unit is not yours."]}, status=404)
    if result.retry:
        # A tutorial unit answered wrongly (annotations.quality): stay on it, with the explanation.
        return JsonResponse({"retry": True, "explanation": result.explanation, "problems": result.problems})
    code = None
    # A code is issued at a batch's end only (`completion_code_at_batch_end`) and a join visitor does
    # one batch: while the submit's lock counted fewer units done (`unit_submit_join`), none to ask for.
    mid_batch = result.n_done is not None and result.n_done < max(1, assignment.campaign.units_per_batch)
    if getattr(assignment, "codes_on", True) and not mid_batch:  # known from the submit's lock; else asked
        code = completion_code_at_batch_end(campaign=assignment.campaign, annotator=assignment.annotator)
    if join_binding(request) is not None:
        # The units done as the submit's lock read them, else (the two-step way) as the database says now.
        done = result.n_done
        if done is None:
            enrolment = selectors.enrolment_for(campaign=assignment.campaign, annotator=assignment.annotator)
            done = enrolment.n_done if enrolment is not None else None
        if code is not None or (done is not None and done >= max(1, assignment.campaign.units_per_batch)):
            return JsonResponse({"next": reverse("join-done")}, status=201)
    elif code is not None:
        return JsonResponse({"next": reverse("annotate-completion-code", args=[assignment.campaign_id])}, status=201)
    # The next unit, handed out now and drawn by the page's script without loading the page again.
    unit = next_unit_json(
        request, campaign=assignment.campaign, annotator=assignment.annotator, taken=result.next_assignment
    )
    if unit is not None:
        return JsonResponse({"next": url_for("annotate-unit", assignment.campaign_id), "unit": unit}, status=201)
    # None left (or too busy): the landing page's POST says so (`next_method`: the script follows with one).
    return JsonResponse(
        {"next": reverse("annotate-campaign", args=[assignment.campaign_id]), "next_method": "POST"}, status=201
    )


@annotator_required
@require_POST
def annotate_draft(request: HttpRequest, pk: int) -> JsonResponse:
    """Autosave of a half-finished unit (also keeps it from timing out)."""
    assignment = _own_pending(request, pk)
    if len(request.body) > DRAFT_MAX_BYTES:
        return JsonResponse({"errors": ["The draft is too large."]}, status=400)
    try:
        body = _json_body(request)
    except ValidationError as exc:
        return JsonResponse({"errors": exc.messages}, status=400)
    draft = body.get("draft")
    if not isinstance(draft, dict):
        return JsonResponse({"errors": ["draft must be an object"]}, status=400)
    assignment_draft_save(assignment_id=assignment.pk, annotator=assignment.annotator, draft=draft)
    return JsonResponse({"saved": True})


@annotator_required
@require_POST
@clock_after_response
@unit_response_floor
def annotate_release(request: HttpRequest, pk: int) -> HttpResponse:
    """Skip the unit (it goes back to the pool) and go on with the next one (this POST hands it out)."""
    assignment = _own_pending(request, pk)
    assignment_release(assignment_id=assignment.pk, annotator=assignment.annotator)
    return _take_next(request, assignment.campaign)
