"""Annotator pseudonyms of one export.

Pseudonyms are an HMAC of the annotator's database id under a random key
drawn for each export: stable within the export (the same annotator always
gets the same pseudonym, so agreement and per-annotator analysis still
work), unlinkable across exports (the key is never stored or written), and
computed without the annotator's name, username or email ever being read.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets


class Pseudonyms:
    def __init__(self, *, real_ids: bool = False, names: dict[int, str] | None = None, key: bytes | None = None):
        self.real_ids = real_ids
        self._names = names or {}
        self._key = key if key is not None else secrets.token_bytes(32)
        self._cache: dict[int, str] = {}

    def __call__(self, annotator_id: int) -> str:
        found = self._cache.get(annotator_id)
        if found is None:
            if self.real_ids:
                found = self._names[annotator_id]
            else:
                digest = hmac.new(self._key, str(annotator_id).encode(), hashlib.sha256).hexdigest()
                found = f"annotator-{digest[:12]}"
            self._cache[annotator_id] = found
        return found
