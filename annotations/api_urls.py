"""REST API routes (mounted under /api/)."""

from django.urls import path

from annotations.apis import auth, campaigns, datasets, exports, imports, judgements, projects, revisions, waves
from annotations.quality import apis as quality
from annotations.studies import apis as studies

urlpatterns = [
    path("auth/token/", auth.TokenObtainApi.as_view(), name="api-token"),
    path("projects/", projects.ProjectListApi.as_view(), name="api-project-list"),
    path("projects/<int:pk>/", projects.ProjectDetailApi.as_view(), name="api-project-detail"),
    path("projects/<int:pk>/members/", projects.MembershipListApi.as_view(), name="api-project-members"),
    path("projects/<int:pk>/members/bulk/", projects.MembersBulkApi.as_view(), name="api-project-members-bulk"),
    path(
        "projects/<int:pk>/members/<int:member_pk>/",
        projects.MembershipDetailApi.as_view(),
        name="api-project-member-detail",
    ),
    path("datasets/", datasets.DatasetListApi.as_view(), name="api-dataset-list"),
    path("datasets/<int:pk>/", datasets.DatasetDetailApi.as_view(), name="api-dataset-detail"),
    path("items/", datasets.ItemListApi.as_view(), name="api-item-list"),
    path("items/<int:pk>/", datasets.ItemDetailApi.as_view(), name="api-item-detail"),
    path("outputs/", datasets.OutputListApi.as_view(), name="api-output-list"),
    path("campaigns/", campaigns.CampaignListApi.as_view(), name="api-campaign-list"),
    path("campaigns/schema/", campaigns.CampaignSchemaApi.as_view(), name="api-campaign-schema"),
    path("campaigns/<int:pk>/", campaigns.CampaignDetailApi.as_view(), name="api-campaign-detail"),
    path("campaigns/<int:pk>/waves/", waves.WaveCreateApi.as_view(), name="api-campaign-waves"),
    path("campaigns/<int:pk>/progress/", campaigns.CampaignProgressApi.as_view(), name="api-campaign-progress"),
    path("campaigns/<int:pk>/stop/", campaigns.CampaignStopApi.as_view(), name="api-campaign-stop"),
    path(
        "campaigns/<int:pk>/next-assignment/",
        campaigns.NextAssignmentApi.as_view(),
        name="api-campaign-next-assignment",
    ),
    path("assignments/", campaigns.AssignmentListApi.as_view(), name="api-assignment-list"),
    path("assignments/<int:pk>/submit/", campaigns.UnitSubmitApi.as_view(), name="api-assignment-submit"),
    path("assignments/<int:pk>/revise/", revisions.UnitReviseApi.as_view(), name="api-assignment-revise"),
    path("assignments/<int:pk>/release/", campaigns.AssignmentReleaseApi.as_view(), name="api-assignment-release"),
    path("assignments/<int:pk>/draft/", campaigns.AssignmentDraftApi.as_view(), name="api-assignment-draft"),
    path("judgements/ratings/", judgements.RatingJudgementListApi.as_view(), name="api-rating-list"),
    path("judgements/pairwise/", judgements.PairwiseJudgementListApi.as_view(), name="api-pairwise-list"),
    path("judgements/bestworst/", judgements.BestWorstJudgementListApi.as_view(), name="api-bestworst-list"),
    path("judgements/spans/", judgements.SpanJudgementListApi.as_view(), name="api-spans-list"),
    # Quality control (annotations.quality): researchers only, except an annotator's own code.
    path("campaigns/<int:pk>/quality/", quality.QualityApi.as_view(), name="api-campaign-quality"),
    path(
        "campaigns/<int:pk>/quality/settings/",
        quality.QualitySettingsApi.as_view(),
        name="api-campaign-quality-settings",
    ),
    path("campaigns/<int:pk>/quality/decisions/", quality.DecisionApi.as_view(), name="api-campaign-quality-decide"),
    path("campaigns/<int:pk>/quality/gold/", quality.GoldUnitListApi.as_view(), name="api-campaign-gold"),
    path(
        "campaigns/<int:pk>/quality/codes/",
        quality.CompletionCodeListApi.as_view(),
        name="api-campaign-completion-codes",
    ),
    path(
        "campaigns/<int:pk>/quality/codes/verify/",
        quality.CompletionCodeVerifyApi.as_view(),
        name="api-campaign-completion-code-verify",
    ),
    path(
        "campaigns/<int:pk>/completion-code/",
        quality.CompletionCodeMineApi.as_view(),
        name="api-campaign-my-completion-code",
    ),
    # Study links (annotations.studies): researchers only.
    path("campaigns/<int:pk>/join-links/", studies.JoinLinkListApi.as_view(), name="api-campaign-join-links"),
    path("join-links/<int:pk>/", studies.JoinLinkDetailApi.as_view(), name="api-join-link-detail"),
    path("imports/<int:pk>/", imports.ImportJobDetailApi.as_view(), name="api-import-job-detail"),
    path(
        "campaigns/<int:pk>/judgements/import/",
        imports.JudgementImportApi.as_view(),
        name="api-campaign-judgements-import",
    ),
    # Exports (annotations.export): researchers only.
    path("campaigns/<int:pk>/exports/", exports.CampaignExportApi.as_view(), name="api-campaign-export"),
    path("exports/<int:pk>/", exports.ExportJobDetailApi.as_view(), name="api-export-job-detail"),
    path("exports/<int:pk>/download/", exports.ExportJobDownloadApi.as_view(), name="api-export-job-download"),
]
