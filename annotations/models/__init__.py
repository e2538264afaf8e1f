"""Datasets, outputs, campaigns and judgements; quality control, export jobs, join links.

Models hold data and the invariants the database can enforce; writes go
through `annotations.services`, reads through `annotations.selectors`. One
module per part (datasets, campaigns and the engine's rows, judgements,
import jobs, quality control, export jobs, crowd studies, login links);
everything is importable from here. Each module imports only its siblings
(never this package, never a layer above), so the order of these imports
does not matter (`tests/annotations/models/test_imports_sorted.py`).
"""

from annotations.models.base import TimeStampedModel  # noqa: F401
from annotations.models.campaigns import Annotator, Assignment, Campaign, Enrolment, Unit  # noqa: F401
from annotations.models.datasets import (  # noqa: F401
    Dataset,
    DatasetCount,
    Item,
    Membership,
    Output,
    Project,
    Reference,
    System,
)
from annotations.models.exports import ExportJob  # noqa: F401
from annotations.models.figures import FigureSnapshot, FigureState, UnitCount  # noqa: F401
from annotations.models.imports import ImportJob  # noqa: F401
from annotations.models.judgements import (  # noqa: F401
    BestWorstJudgement,
    ErrorSpan,
    JudgementBase,
    PairwiseJudgement,
    PostEditJudgement,
    RatingJudgement,
    SpanJudgement,
)
from annotations.models.login_links import LoginLink  # noqa: F401
from annotations.models.prefill import SpanPrefill, SpanSuggestion, SuggestionDecision  # noqa: F401
from annotations.models.quality import (  # noqa: F401
    AnnotatorDecision,
    CompletionCode,
    ControlJudgement,
    ControlUnit,
    GoldUnit,
    QualitySettings,
)
from annotations.models.responses import BackgroundAnswer, UnitNote  # noqa: F401
from annotations.models.studies import JoinLink, JoinParticipant  # noqa: F401
