"""Crowd studies: join links (study links) for Prolific, MTurk or any crowd platform.

A researcher creates a `JoinLink` for a campaign; a visitor who opens it with
their platform ids gets an imported-namespace `Annotator` (never an account)
and a session bound to that link, campaign and annotator, which reaches only
the campaign's annotate pages (`annotations.studies.middleware`). At the end
of the batch the visitor goes back to the platform with the completion code
that quality control decides (pass or fail).

The models (`JoinLink`, `JoinParticipant`) live in `annotations/models/studies.py` with the
app's others.
"""
