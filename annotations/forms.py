"""HTML forms. Validation of file contents belongs to the importer, not here."""
from django import forms

from annotations.models import Project


class DatasetUploadForm(forms.Form):
    FORMAT_CHOICES = [
        ("auto", "Detect from the file name"),
        ("jsonl", "JSONL (one item a line)"),
        ("csv", "CSV"),
    ]

    file = forms.FileField(
        help_text="JSONL, CSV or TSV: items, references and the outputs of each system.",
        widget=forms.ClearableFileInput(attrs={"accept": ".jsonl,.json,.csv,.tsv,.txt"}),
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
