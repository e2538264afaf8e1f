"""A unit's media file (issue 41), streamed with HTTP range requests to those who may see the unit.

`GET /annotate/assignments/<id>/media/<role>/`: the URL names the assignment (which the annotator
already holds) and the role, nothing of the file or the system; everyone else gets 404.
`Range: bytes=a-b` (one range) answers 206 with `Content-Range`, an unsatisfiable or malformed
range 416 with `Content-Range: bytes */size`; several ranges are answered whole (200), as
RFC 9110 allows."""

from __future__ import annotations

import os
import re

from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET

from annotations import selectors
from annotations.access import request_annotator
from annotations.selectors.media import may_see_unit, media_assignment
from annotations.services.imports.media import MEDIA_ROLES, media_path
from annotations.studies.session import join_binding

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")
BLOCK = 64 * 1024


class _Slice:
    """`length` bytes of an open file from where it stands, read in blocks (FileResponse streams it)."""

    def __init__(self, file, length: int) -> None:
        self.file, self.left = file, length

    def read(self, size: int = -1) -> bytes:
        if self.left <= 0:
            return b""
        size = self.left if size < 0 else min(size, self.left)
        data = self.file.read(size)
        self.left -= len(data)
        return data

    def close(self) -> None:
        self.file.close()


def byte_range(header: str, size: int) -> tuple[int, int] | None | bool:
    """(first, last) byte of a single `Range` header; None: no range (serve whole); False: bad."""
    if not header:
        return None
    if "," in header:
        return None
    match = _RANGE.match(header.strip())
    if not match or match.groups() == ("", ""):
        return False
    first, last = match.groups()
    if first == "":  # the last N bytes
        n = int(last)
        if n == 0 or size == 0:
            return False
        return max(0, size - n), size - 1
    start = int(first)
    end = size - 1 if last == "" else min(int(last), size - 1)
    if start >= size or end < start:
        return False
    return start, end


@require_GET
def annotate_media(request: HttpRequest, pk: int, role: str) -> HttpResponse:
    if role not in MEDIA_ROLES:
        raise Http404()
    binding = join_binding(request)
    join_annotator = None
    if binding is not None and not request.user.is_authenticated:
        join_annotator = binding["annotator"]
    assignment = media_assignment(assignment_id=pk)
    if assignment is None or not may_see_unit(
        assignment=assignment, user=request.user, join_annotator_id=join_annotator
    ):
        raise Http404()
    if join_annotator is not None:
        # Only the session's own campaign, and while its link is not revoked (404 otherwise).
        request_annotator(request, assignment.campaign)
    return media_response(request, (assignment.item.media or {}).get(role))


@login_required
@require_GET
def item_media(request: HttpRequest, pk: int, role: str) -> HttpResponse:
    """An item's media on the item page: for those who may see that page (the same scope)."""
    if role not in MEDIA_ROLES:
        raise Http404()
    item = get_object_or_404(selectors.item_list(user=request.user), pk=pk)
    return media_response(request, (item.media or {}).get(role))


def media_response(request: HttpRequest, entry: dict | None) -> HttpResponse:
    """The file of a stored media entry, whole or the one range asked for; 404 when it is gone."""
    path = media_path(entry) if entry else None
    if path is None:
        raise Http404()
    file = open(path, "rb")
    size = os.fstat(file.fileno()).st_size
    wanted = byte_range(request.headers.get("Range", ""), size)
    if wanted is False:
        file.close()
        response = HttpResponse(status=416)
        response["Content-Range"] = f"bytes */{size}"
    elif wanted is None:
        response = FileResponse(_Slice(file, size), content_type=entry["mime"])
        response["Content-Length"] = str(size)
    else:
        first, last = wanted
        file.seek(first)
        response = FileResponse(_Slice(file, last - first + 1), content_type=entry["mime"], status=206)
        response["Content-Length"] = str(last - first + 1)
        response["Content-Range"] = f"bytes {first}-{last}/{size}"
    response.block_size = BLOCK  # read by the streaming iterator as it goes
    response["Accept-Ranges"] = "bytes"
    response["X-Content-Type-Options"] = "nosniff"
    response["Cache-Control"] = "private, no-cache"
    response["Content-Disposition"] = "inline"
    return response
