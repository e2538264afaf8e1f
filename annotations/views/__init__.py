"""HTML pages: projects -> datasets -> items, and the dataset upload form.

Every page takes its object from a selector scoped to the user, so a
non-member gets 404 (nothing about other projects leaks); staff-only pages
answer 403 to annotators of the project.
"""

from annotations.views.annotate import (
    annotate_campaign,
    annotate_draft,
    annotate_home,
    annotate_release,
    annotate_submit,
    annotate_unit,
)
from annotations.views.campaigns import (
    campaign_detail,
    campaign_judgements,
    campaign_new,
    campaign_progress_json,
    campaign_stop_view,
    project_members,
)
from annotations.views.datasets import dataset_detail, dataset_upload
from annotations.views.imports import import_job_detail, judgement_upload
from annotations.views.items import item_detail
from annotations.views.projects import project_detail, project_list

__all__ = [
    "annotate_campaign",
    "annotate_draft",
    "annotate_home",
    "annotate_release",
    "annotate_submit",
    "annotate_unit",
    "campaign_detail",
    "campaign_judgements",
    "campaign_new",
    "campaign_progress_json",
    "campaign_stop_view",
    "dataset_detail",
    "dataset_upload",
    "import_job_detail",
    "judgement_upload",
    "item_detail",
    "project_detail",
    "project_list",
    "project_members",
]
