"""Datasets, outputs, campaigns and judgements.

Models hold data and the invariants the database can enforce; writes go
through `annotations.services`, reads through `annotations.selectors`. One
module per part (datasets, campaigns and the engine's rows, judgements,
import jobs); everything is importable from here.
"""

from annotations.models.base import TimeStampedModel  # noqa: F401
from annotations.models.campaigns import Annotator, Assignment, Campaign, Enrolment, Unit  # noqa: F401
from annotations.models.datasets import Dataset, Item, Membership, Output, Project, Reference, System  # noqa: F401
from annotations.models.imports import ImportJob  # noqa: F401
from annotations.models.responses import BackgroundAnswer, UnitNote  # noqa: F401
from annotations.models.prefill import SpanPrefill, SpanSuggestion, SuggestionDecision  # noqa: F401
from annotations.models.judgements import (  # noqa: F401
    BestWorstJudgement,
    ErrorSpan,
    JudgementBase,
    PairwiseJudgement,
    PostEditJudgement,
    RatingJudgement,
    SpanJudgement,
)

# Quality control models live in their own module (annotations.quality.models).
from annotations.quality.models import (  # noqa: E402,F401
    AnnotatorDecision,
    CompletionCode,
    ControlJudgement,
    ControlUnit,
    GoldUnit,
    QualitySettings,
)

# Export jobs live with the export (annotations.export.models).
from annotations.export.models import ExportJob  # noqa: E402,F401

# Join links of crowd studies (annotations.studies).
from annotations.studies.models import JoinLink, JoinParticipant  # noqa: E402,F401

# One-time login links for accounts made by owners (annotations.services.login_links).
from annotations.models.login_links import LoginLink  # noqa: E402,F401
