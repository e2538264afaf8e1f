"""Writes for quality control, one module per concern:

- `settings`: a campaign's quality settings and exclusion rules;
- `gold_units`: gold / tutorial units, one at a time or from a file;
- `controls`: the control units placed in each annotator's batch (`control_next`);
- `answers`: answers to control units, kept apart from the judgement tables;
- `decisions`: hand decisions and completion codes.
"""

from annotations.quality.services.answers import (
    ControlAnswerResult,
    control_answers_record,
    control_judgement_submit,
)
from annotations.quality.services.controls import alias_ids_allocate, control_next
from annotations.quality.services.decisions import (
    annotator_decide,
    completion_code_at_batch_end,
    completion_code_check,
    completion_code_issue,
)
from annotations.quality.services.gold_units import gold_unit_create, gold_unit_delete, gold_units_import
from annotations.quality.services.settings import SETTINGS_FIELDS, quality_settings_update

__all__ = [
    "ControlAnswerResult",
    "SETTINGS_FIELDS",
    "alias_ids_allocate",
    "annotator_decide",
    "completion_code_at_batch_end",
    "completion_code_check",
    "completion_code_issue",
    "control_answers_record",
    "control_judgement_submit",
    "control_next",
    "gold_unit_create",
    "gold_unit_delete",
    "gold_units_import",
    "quality_settings_update",
]
