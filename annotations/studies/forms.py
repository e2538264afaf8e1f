"""The campaign page's form for a new study link."""

from django import forms


class JoinLinkForm(forms.Form):
    completion_url = forms.CharField(
        required=False,
        max_length=1000,
        label="Completion URL",
        help_text="Where participants go at the end of their batch, e.g. "
        "https://app.prolific.com/submissions/complete?cc={code}. {code} is replaced by the completion "
        "code; without it, cc=<code> is appended. Empty: they see the code on a page.",
    )
    pass_code = forms.CharField(
        required=False,
        max_length=40,
        label="Pass code (optional)",
        help_text="The completion code configured on the platform (Prolific): sent to "
        "participants who pass quality control. Empty: each gets their own code.",
    )
    fail_code = forms.CharField(
        required=False,
        max_length=40,
        label="Fail code (optional)",
        help_text="Sent to participants who fail quality control (e.g. a second Prolific "
        "completion code whose action is 'request return').",
    )
    max_annotators = forms.IntegerField(
        required=False,
        min_value=1,
        label="Maximum participants",
        help_text="Empty: no cap. Returning participants are never refused.",
    )
    one_per_browser = forms.BooleanField(
        required=False,
        label="One participant per browser",
        help_text="A browser already in the study cannot join as another participant, and one id is one "
        "participant whichever parameter carries it (PROLIFIC_PID, workerId, annotator).",
    )
    expires_at = forms.DateTimeField(
        required=False,
        label="Expires at (UTC)",
        help_text="e.g. 2026-12-31 23:59. Empty: never.",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
    )
