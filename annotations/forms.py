"""HTML forms. Validation of file contents belongs to the importer, not here."""

from django import forms
from django.core.exceptions import ValidationError

from annotations import protocols
from annotations.models import Campaign, Dataset, Membership, Project, System
from annotations.protocols import options as opt
from annotations.services.prefill import span_runs


class DatasetUploadForm(forms.Form):
    FORMAT_CHOICES = [
        ("auto", "Detect from the file name"),
        ("jsonl", "JSONL (one item a line)"),
        ("csv", "CSV"),
        ("mqm-tsv", "WMT MQM ratings TSV (its items and outputs)"),
    ]

    file = forms.FileField(
        help_text="JSONL, CSV or TSV: items, references and the outputs of each system; or a zip of that file "
        "with the items' audio, image and video files.",
        widget=forms.ClearableFileInput(attrs={"accept": ".jsonl,.json,.csv,.tsv,.txt,.zip"}),
    )
    dataset_name = forms.CharField(
        max_length=200,
        label="Dataset name",
        help_text="Importing again under the same name updates that dataset.",
    )
    project = forms.ModelChoiceField(queryset=Project.objects.none(), empty_label=None)
    format = forms.ChoiceField(choices=FORMAT_CHOICES, initial="auto")

    def __init__(self, *args, projects, **kwargs):
        super().__init__(*args, **kwargs)
        # Only projects where the user may import (owner or researcher).
        self.fields["project"].queryset = projects

    def clean_dataset_name(self) -> str:
        return self.cleaned_data["dataset_name"].strip()

    @property
    def fmt(self) -> str | None:
        value = self.cleaned_data.get("format")
        return None if value in (None, "", "auto") else value


class JudgementUploadForm(forms.Form):
    """Judgements collected elsewhere, for one campaign (the rules live in `judgements_import`)."""

    file = forms.FileField(
        help_text="Judgement JSONL (one judgement a line) or, for an MQM campaign, WMT's MQM ratings TSV.",
        widget=forms.ClearableFileInput(attrs={"accept": ".jsonl,.json,.tsv,.txt"}),
    )
    format = forms.ChoiceField(
        choices=[("jsonl", "JSONL (one judgement a line)"), ("mqm-tsv", "WMT MQM ratings TSV (MQM campaigns)")],
        initial="jsonl",
    )
    skip_invalid = forms.BooleanField(
        required=False,
        label="Skip invalid lines",
        help_text="Import the valid judgements and list the refused lines (by default one bad line imports nothing).",
    )


class CampaignForm(forms.Form):
    """The campaign set-up page. Rules live in `campaign_create`; this only
    collects the values (criteria come from `CriterionFormSet`)."""

    dataset = forms.ModelChoiceField(queryset=Dataset.objects.none(), empty_label=None)
    name = forms.CharField(max_length=200)
    public_title = forms.CharField(
        max_length=200,
        required=False,
        label="Title shown to annotators",
        help_text="Join, annotate and batch pages show this instead of the name (which may say what is "
        "compared). Empty: the name is shown.",
    )
    protocol = forms.ChoiceField(choices=lambda: protocols.choices(), initial="likert")
    systems = forms.ModelMultipleChoiceField(
        queryset=System.objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: all systems of the dataset.",
    )
    instructions = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 6}),
        max_length=100_000,
        help_text="Markdown: **bold**, *italic*, lists, links. Shown to annotators above every unit.",
    )
    redundancy = forms.IntegerField(min_value=1, max_value=1000, initial=3, label="Annotators per unit (k)")
    units_per_batch = forms.IntegerField(min_value=1, max_value=10_000, initial=10, label="Units per batch")
    show_source = forms.BooleanField(required=False, initial=True, label="Show the input (source / data)")
    show_reference = forms.BooleanField(required=False, initial=False, label="Show the references")
    prefill_run = forms.ChoiceField(
        required=False,
        label="Start from suggested spans (ESA^AI)",
        help_text="A done run that produced spans (llm-judge spans mode, minWED/minCED, NLI omissions) of the "
        "chosen dataset. Annotators accept, edit or delete each suggestion; they are not told its source.",
    )
    prefill_holdout = forms.FloatField(
        required=False,
        min_value=0,
        max_value=0.99,
        initial=0,
        label="Share held back without suggestions",
        help_text="e.g. 0.2: a random fifth of the outputs is shown without suggestions, to measure automation bias.",
    )
    assignment_timeout_minutes = forms.IntegerField(
        min_value=1,
        max_value=7 * 24 * 60,
        initial=60,
        label="Timeout (minutes)",
        help_text="An unfinished unit goes back to the pool after this.",
    )

    allocation = forms.ChoiceField(
        choices=Campaign.Allocation.choices,
        initial=Campaign.Allocation.OVERLAP_FIRST,
        label="Allocation",
        required=False,
        help_text="How units are handed out. Overlap first: every unit reaches k early (agreement from the first "
        "units). Spread: each annotator in their own random order. Adaptive: judgements go where the "
        "system ranking is still undecided, and the campaign can stop early.",
    )
    adaptive_min_per_system = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=100_000,
        label="Adaptive: cold start (units per system)",
        help_text="Every system is judged in this many units before anything is closed (default 10).",
    )
    adaptive_alpha = forms.FloatField(
        required=False,
        min_value=1e-6,
        max_value=0.5,
        label="Adaptive: alpha",
        help_text="Significance level for a decided pair of systems (default 0.05).",
    )
    adaptive_stable_checks = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=1000,
        label="Adaptive: stable checks to stop",
        help_text="Stop once the ranking and its clusters stayed the same this many checks (default 3).",
    )
    adaptive_check_every = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=1_000_000,
        label="Adaptive: judgements between checks",
        help_text="Units completed between two checks (default 20).",
    )

    ADAPTIVE_FIELDS = ("min_per_system", "alpha", "stable_checks", "check_every")

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        # The protocols' own options, one field per option name (protocols that share a name share
        # the field; the page shows each protocol's bounds, default and help: `protocol_fields`).
        for option in protocols.option_union():
            if option.name in self.fields:
                raise ValueError(f"protocol option {option.name!r} has the name of a set-up field")
            self.fields[option.name] = option_field(option)
        self.fields["dataset"].queryset = Dataset.objects.filter(project=project).order_by("name")
        self.fields["systems"].queryset = (
            System.objects.filter(dataset__project=project).select_related("dataset").order_by("dataset__name", "name")
        )
        self.fields["systems"].label_from_instance = lambda s: s.name

        self.fields["prefill_run"].choices = [("", "None")] + [
            (str(run.pk), f"{run.dataset.name}: {run.metric} (run {run.pk})") for run in span_runs(project=project)
        ]

    def options_given(self, protocol) -> dict:
        """The chosen protocol's options as filled in (empty fields left out: the defaults);
        text that must be JSON parsed here, with an "options.NAME: reason" ValidationError."""

        given = {}
        for option in protocol.options:
            value = self.cleaned_data.get(option.name)
            if value in (None, "", []):
                continue
            if option.type == opt.JSON or (option.type == opt.STRINGS and isinstance(value, str)):
                try:
                    value = option.parse_text(value)
                except opt.OptionError as exc:
                    raise ValidationError({"options": f"options.{option.name}: {exc}"}) from None
            given[option.name] = value
        return given

    def clean(self):
        cleaned = super().clean()
        dataset, systems = cleaned.get("dataset"), cleaned.get("systems") or []
        if dataset is not None:
            cleaned["systems"] = [s for s in systems if s.dataset_id == dataset.pk]
        return cleaned


class CriterionForm(forms.Form):
    name = forms.CharField(max_length=100, required=False)
    question = forms.CharField(max_length=1000, required=False)
    scale_min = forms.FloatField(required=False)
    scale_max = forms.FloatField(required=False)
    widget = forms.ChoiceField(choices=[("", "Automatic")] + list(Campaign.Widget.choices), required=False)
    min_label = forms.CharField(max_length=100, required=False)
    max_label = forms.CharField(max_length=100, required=False)


# validate_max and absolute_max: a forged criteria-TOTAL_FORMS=1000 is refused, not built into 1000 forms.
CriterionFormSet = forms.formset_factory(
    CriterionForm, extra=0, min_num=1, max_num=20, validate_max=True, absolute_max=20
)


class MemberAddForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=Membership.Role.choices, initial=Membership.Role.ANNOTATOR)


class ProjectCreateForm(forms.Form):
    """The project list's "New project" form; the rules (who, unique names) live in `project_create`."""

    name = forms.CharField(max_length=200, label="Project name", error_messages={"required": "A project needs a name."})
    description = forms.CharField(max_length=2000, required=False, label="Description (optional)")


class AnnotatorsBulkForm(forms.Form):
    """Annotators in bulk: a paste, or a text / CSV file (parsed by `annotators_add_bulk`)."""

    # A list of a thousand usernames is far below this.
    MAX_FILE_BYTES = 256 * 1024

    usernames = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false", "autocapitalize": "none"}),
        label="Usernames",
        help_text="One per line, or comma separated.",
    )
    file = forms.FileField(
        required=False,
        label="Or a text / CSV file",
        widget=forms.ClearableFileInput(attrs={"accept": ".txt,.csv,text/plain,text/csv"}),
        help_text="A CSV with a header row reads its username column.",
    )
    links_for_existing = forms.BooleanField(required=False, label="Also new login links for existing accounts")

    def clean(self):
        data = super().clean()
        upload = data.get("file")
        text = data.get("usernames") or ""
        if upload is not None and text.strip():
            # Line numbers in error messages must point into one text.
            raise forms.ValidationError("Paste usernames or choose a file, not both.")
        if upload is not None:
            if upload.size > self.MAX_FILE_BYTES:
                raise forms.ValidationError(f"The file is larger than {self.MAX_FILE_BYTES // 1024} KiB.")
            try:
                text = upload.read().decode("utf-8-sig")
            except UnicodeDecodeError:
                raise forms.ValidationError("The file is not UTF-8 text.") from None
        if not text.strip():
            raise forms.ValidationError("Paste usernames or choose a file.")
        data["text"] = text
        return data


class ExportForm(forms.Form):
    """The options of `export_dataset` (annotations.export) for one campaign."""

    FORMAT_CHOICES = [
        ("jsonl", "JSONL folder (imports back into a workbench)"),
        ("csv", "CSV tables (for spreadsheets; formulas neutralised)"),
        ("hf", "Hugging Face dataset (JSONL + card with configs)"),
    ]
    format = forms.ChoiceField(choices=FORMAT_CHOICES, initial="jsonl")
    included_only = forms.BooleanField(required=False, label="Included annotators only (quality control)")
    complete_units_only = forms.BooleanField(required=False, label="Complete units only (judged by k annotators)")
    min_consensus = forms.FloatField(
        required=False,
        min_value=0,
        max_value=1,
        label="Minimum item consensus (0-1)",
        help_text="Leave empty to keep every item.",
    )
    systems = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, help_text="None ticked: every system of the campaign."
    )
    criteria = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, help_text="None ticked: every criterion."
    )
    licence = forms.CharField(
        required=False,
        max_length=200,
        label="Licence of the data",
        help_text="E.g. cc-by-4.0; written into the dataset card.",
    )
    real_annotator_ids = forms.BooleanField(required=False, label="Real annotator ids instead of pseudonyms")
    annotator_figures = forms.BooleanField(
        required=False,
        label="Per-annotator figures (annotators table)",
        help_text="Quality-control inclusion and reliability per annotator. The same in every export: it tells "
        "which pseudonyms of two exports are one annotator.",
    )

    def __init__(self, *args, systems: list[str], criteria: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["systems"].choices = [(s, s) for s in systems]
        self.fields["criteria"].choices = [(c, c) for c in criteria]


def option_field(option: opt.Option) -> forms.Field:
    """The set-up form's field for an option; bounds and defaults are the protocol's (checked by
    `campaign_create`), so the field only takes the value's type."""
    common = {"required": False, "label": option.label, "help_text": option.help}
    if option.type == opt.INTEGER:
        return forms.IntegerField(**common)
    if option.type == opt.NUMBER:
        return forms.FloatField(**common)
    if option.type == opt.STRINGS and not option.choices:  # free texts (special answers): comma-separated
        return forms.CharField(max_length=10_000, **common)
    if option.type == opt.STRINGS:
        return forms.MultipleChoiceField(
            choices=[(c, c.capitalize()) for c in option.choices], widget=forms.CheckboxSelectMultiple, **common
        )
    if option.type == opt.JSON:
        return forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), **common)
    if option.type == opt.STRING and option.choices:  # one of them
        return forms.ChoiceField(
            choices=[(c, c.capitalize()) for c in option.choices], initial=option.default, **common
        )
    return forms.CharField(max_length=10_000, **common)
