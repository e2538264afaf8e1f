"""Forms of the quality page (researchers)."""

from django import forms

from annotations.models.quality import GoldUnit
from annotations.quality.degrade import KINDS


class SettingsForm(forms.Form):
    degraded_share = forms.FloatField(
        min_value=0,
        max_value=0.5,
        label="Degraded copies (share of each batch)",
        help_text="e.g. 0.1 = one unit in ten is a damaged copy of one the annotator judged; 0 = none",
    )
    repeat_share = forms.FloatField(min_value=0, max_value=0.5, label="Repeats (share of each batch)")
    degrade_kinds = forms.MultipleChoiceField(
        choices=[
            (
                k,
                {
                    "drop": "words dropped",
                    "shuffle": "words shuffled",
                    "invert": "a phrase inverted",
                    "fact": "a fact removed (data-to-text)",
                    "shuffle5": "five words shuffled",
                }[k],
            )
            for k in KINDS
        ],
        widget=forms.CheckboxSelectMultiple,
        required=False,
        label="Kinds of damage",
        help_text="none ticked: every kind that applies",
    )
    degrade_strength = forms.FloatField(
        min_value=0.01, max_value=1, label="Strength", help_text="share of the words (or facts) damaged"
    )
    completion_codes = forms.BooleanField(required=False, label="Completion code at the end of each batch")
    max_p = forms.FloatField(
        required=False,
        min_value=0,
        max_value=1,
        label="Mann-Whitney p at most",
        help_text="degraded copies score lower than originals (Appraise: 0.01); empty = off",
    )
    min_degraded = forms.IntegerField(min_value=1, max_value=1000, label="…from at least this many degraded copies")
    min_controls_passed = forms.FloatField(
        required=False, min_value=0, max_value=1, label="Controls passed at least (0-1)"
    )
    min_self_consistency = forms.FloatField(
        required=False, min_value=0, max_value=1, label="Self-consistency at least (0-1)"
    )
    min_median_seconds = forms.FloatField(
        required=False, min_value=0, max_value=86400, label="Median seconds per unit at least"
    )
    min_agreement = forms.FloatField(
        required=False, min_value=-1, max_value=1, label="Agreement with the others at least (-1 to 1)"
    )
    exclude_straight_lining = forms.BooleanField(required=False, label="Exclude straight-lining")

    RULES = (
        "max_p",
        "min_degraded",
        "min_controls_passed",
        "min_self_consistency",
        "min_median_seconds",
        "min_agreement",
        "exclude_straight_lining",
    )


class DecisionForm(forms.Form):
    annotator = forms.IntegerField(widget=forms.HiddenInput)
    included = forms.ChoiceField(choices=[("exclude", "Exclude"), ("include", "Include"), ("rules", "Back to rules")])
    reason = forms.CharField(max_length=2000, strip=True)


class GoldForm(forms.Form):
    item = forms.CharField(max_length=200, label="Item id")
    systems = forms.CharField(
        max_length=2000, label="Systems shown", help_text="comma-separated; one for Likert and ESA, two for pairwise"
    )
    expected = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}),
        max_length=5000,
        label="Expected answer (JSON)",
        help_text='e.g. {"*": {"min": 1, "max": 2}} or {"*": {"winner": "sysA"}}',
    )
    mode = forms.ChoiceField(choices=GoldUnit.Mode.choices)
    explanation = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}),
        max_length=5000,
        required=False,
        help_text="shown after a wrong answer (required for loud units)",
    )


class CodeForm(forms.Form):
    code = forms.CharField(max_length=40, label="Completion code")
