"""Security headers of the static files (imported by the settings: no Django imports here)."""

from __future__ import annotations


def static_headers(headers, path: str, url: str) -> None:
    """Headers of every file WhiteNoise serves (WHITENOISE_ADD_HEADERS_FUNCTION): it answers
    static files before the CSP and clickjacking middleware run, so they carried neither.
    A static SVG or HTML file opened directly runs under the same policy as the pages."""
    headers["Content-Security-Policy"] = (
        "default-src 'none'; style-src 'self'; img-src 'self' data:; "
        "font-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
    )
    headers["X-Content-Type-Options"] = "nosniff"
    headers["X-Frame-Options"] = "DENY"
    headers["Referrer-Policy"] = "same-origin"
    headers["Cross-Origin-Resource-Policy"] = "same-origin"
