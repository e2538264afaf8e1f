"""REST API routes (mounted under /api/)."""
from django.urls import path

from annotations.apis import auth, campaigns, datasets, imports, judgements, projects

urlpatterns = [
    path("auth/token/", auth.TokenObtainApi.as_view(), name="api-token"),
    path("projects/", projects.ProjectListApi.as_view(), name="api-project-list"),
    path("projects/<int:pk>/", projects.ProjectDetailApi.as_view(), name="api-project-detail"),
    path("projects/<int:pk>/members/", projects.MembershipListApi.as_view(), name="api-project-members"),
    path("datasets/", datasets.DatasetListApi.as_view(), name="api-dataset-list"),
    path("datasets/<int:pk>/", datasets.DatasetDetailApi.as_view(), name="api-dataset-detail"),
    path("items/", datasets.ItemListApi.as_view(), name="api-item-list"),
    path("items/<int:pk>/", datasets.ItemDetailApi.as_view(), name="api-item-detail"),
    path("outputs/", datasets.OutputListApi.as_view(), name="api-output-list"),
    path("campaigns/", campaigns.CampaignListApi.as_view(), name="api-campaign-list"),
    path("campaigns/<int:pk>/", campaigns.CampaignDetailApi.as_view(), name="api-campaign-detail"),
    path(
        "campaigns/<int:pk>/next-assignment/",
        campaigns.NextAssignmentApi.as_view(),
        name="api-campaign-next-assignment",
    ),
    path("assignments/", campaigns.AssignmentListApi.as_view(), name="api-assignment-list"),
    path("judgements/ratings/", judgements.RatingJudgementListApi.as_view(), name="api-rating-list"),
    path("judgements/pairwise/", judgements.PairwiseJudgementListApi.as_view(), name="api-pairwise-list"),
    path("judgements/bestworst/", judgements.BestWorstJudgementListApi.as_view(), name="api-bestworst-list"),
    path("imports/<int:pk>/", imports.ImportJobDetailApi.as_view(), name="api-import-job-detail"),
]
