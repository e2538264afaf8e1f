"""Reads (selectors), one module per part; every name is importable from here.

- roles: who may see what, and the lists scoped to it (404, not 403, for non-members);
- search: item search, the dataset pages' and the item and output APIs' lists;
- units: what an annotator is shown for a unit, their progress, a campaign's settings;
- dashboards: a campaign's live progress, the import and export job lists;
- judgements: THE reader of a campaign's judgements (analysis, export, quality control).
"""

from annotations.selectors.dashboards import (  # noqa: F401
    campaign_dashboard,
    export_job_list,
    export_job_waiting,
    import_job_list,
)
from annotations.selectors.roles import (  # noqa: F401
    STAFF_ROLES,
    User,
    annotator_for_user,
    assignment_list,
    bestworst_judgement_list,
    blind_order_key,
    blind_project_ids,
    campaign_for_member,
    campaign_list,
    counted,
    dataset_list,
    is_project_staff,
    item_list,
    judgement_list,
    judgements_filtered,
    membership_list,
    output_list,
    own_assignment,
    pairwise_judgement_list,
    project_list,
    project_list_with_roles,
    project_role,
    rating_judgement_list,
    span_judgement_list,
    staff_project_list,
)
from annotations.selectors.search import (  # noqa: F401
    SEARCH_COUNT_CAP,
    SEARCH_DENSE_SAMPLE,
    SEARCH_DENSE_SHARE,
    SEARCH_MAX_CHARS,
    SEARCH_MIN_TEXT_CHARS,
    SEARCH_PROBE_ROWS,
    dataset_counts,
    dataset_counts_of,
    dataset_item_search,
    item_api_list,
    output_api_list,
    search_query_problem,
)
from annotations.selectors.units import (  # noqa: F401
    annotator_progress,
    assignment_brief,
    assignment_payload,
    campaign_settings,
    enrolment_for,
)
