"""The REST API's JSON parser: strict JSON (`workbench.strictjson`), every problem a 400."""

from __future__ import annotations

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser, get_encoding

from workbench import strictjson


class StrictJSONParser(JSONParser):
    """DRF's JSONParser, refusing nesting, duplicate keys, numbers and strings
    that would crash later (RecursionError, float overflow, jsonb or encoding
    errors) with a `ParseError` (HTTP 400) instead.

    The body's size is bounded before this runs (`workbench.middleware`)."""

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = get_encoding(parser_context or {})
        raw = stream.read() if stream is not None else b""
        try:
            return strictjson.loads(raw.decode(encoding))
        except (ValueError, UnicodeDecodeError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
