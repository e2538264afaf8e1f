"""The join session: a Django session bound to one link, campaign and annotator.

A visitor who starts through a join link has no account: the session holds
`{"link", "campaign", "annotator"}` under SESSION_KEY, and that is their whole
identity (`annotations.access.request_annotator` reads it). It only counts
while nobody is logged in, and only while its link is not revoked.
"""

from __future__ import annotations

from django.contrib.auth import logout
from django.http import HttpRequest

from annotations.models.studies import JoinParticipant

SESSION_KEY = "workbench_join"


def join_bind(request: HttpRequest, *, participant: JoinParticipant, link_id: int | None = None) -> None:
    """Bind the request's session to the participant (a fresh session: a logged-in
    user is logged out, so the two identities never mix). `link_id`: the link of this visit
    (by default the participant's first), whose revocation ends the session."""
    if request.user.is_authenticated:
        logout(request)
    else:
        # A fresh key, so that a key planted in the browser (session fixation) never carries the binding.
        # A visitor without a stored session (the cookie's key, if any, is unknown to the store, which
        # drops it on loading) gets one anyway when the response saves it: made there once, not made
        # empty now and written again then (an insert and an update, two commits, on every Start).
        request.session.get(SESSION_KEY)  # loads the session (a key it does not hold becomes None)
        if request.session.session_key is not None:
            request.session.cycle_key()
    request.session[SESSION_KEY] = {
        "link": link_id or participant.link_id,
        "campaign": participant.campaign_id,
        "annotator": participant.annotator_id,
        "participant": participant.pk,
    }


def join_binding(request: HttpRequest) -> dict | None:
    """The session's binding when the request comes from a join visitor (nobody logged in)."""
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return None
    session = getattr(request, "session", None)
    binding = session.get(SESSION_KEY) if session is not None else None
    if not isinstance(binding, dict) or not all(
        isinstance(binding.get(k), int) for k in ("link", "campaign", "annotator", "participant")
    ):
        return None
    return binding


def join_leave(request: HttpRequest) -> None:
    request.session.flush()
