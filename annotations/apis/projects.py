"""Projects and their members."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.access import require_staff, require_staff_somewhere
from annotations.apis.common import paginated, paginated_response
from annotations.models import Membership, Project
from annotations.permissions import ApiAuthMixin, require_owner
from annotations.selectors import membership_list, project_list_with_roles
from annotations.services.accounts import MAX_USERNAMES, annotators_add_bulk
from annotations.services.login_links import login_link_url
from annotations.services.projects import membership_add, membership_remove, project_create

# The same answer whether the username is unknown or belongs to an account that
# cannot be added (inactive), so the form does not tell which usernames exist.
NO_SUCH_ACCOUNT = "No account with this username can be added. Check the spelling, or create the account first."


def addable_user(username: str):
    """The active account called `username`, or None (unknown and inactive alike)."""
    return get_user_model().objects.filter(username=username, is_active=True).first()


class ProjectOutputSerializer(serializers.ModelSerializer):
    role = serializers.ChoiceField(choices=Membership.Role.choices, read_only=True, help_text="Your role.")

    class Meta:
        model = Project
        fields = ["id", "name", "description", "role", "created_at"]
        ref_name = "Project"


class ProjectListApi(ApiAuthMixin, APIView):
    class InputSerializer(serializers.Serializer):
        name = serializers.CharField(min_length=1, max_length=200)

        class Meta:
            ref_name = "ProjectCreate"

    @extend_schema(operation_id="projects_list", responses=paginated(ProjectOutputSerializer))
    def get(self, request: Request) -> Response:
        require_staff_somewhere(user=request.user)  # annotators: their campaigns are at /api/campaigns/
        projects = project_list_with_roles(user=request.user)
        return paginated_response(
            queryset=projects, serializer_class=ProjectOutputSerializer, request=request, view=self
        )

    @extend_schema(operation_id="projects_create", request=InputSerializer, responses={201: ProjectOutputSerializer})
    def post(self, request: Request) -> Response:
        """Create a project; the creator becomes its owner.

        Allowed to staff users and to users who already own a project (setting
        `WORKBENCH_PROJECT_CREATORS`); 403 otherwise.
        """
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        project = project_create(name=serializer.validated_data["name"], owner=request.user)
        project = get_object_or_404(project_list_with_roles(user=request.user), pk=project.pk)
        return Response(ProjectOutputSerializer(project).data, status=status.HTTP_201_CREATED)


class ProjectDetailApi(ApiAuthMixin, APIView):
    @extend_schema(operation_id="projects_retrieve", responses=ProjectOutputSerializer)
    def get(self, request: Request, pk: int) -> Response:
        project = get_object_or_404(project_list_with_roles(user=request.user), pk=pk)
        require_staff(user=request.user, project=project)
        return Response(ProjectOutputSerializer(project).data)


class MembershipOutputSerializer(serializers.ModelSerializer):
    user = serializers.IntegerField(source="user_id", read_only=True)
    username = serializers.CharField(source="user.username", read_only=True)

    class Meta:
        model = Membership
        fields = ["id", "user", "username", "role", "created_at"]
        ref_name = "Membership"


class MembershipListApi(ApiAuthMixin, APIView):
    """Members of a project: owners only."""

    class InputSerializer(serializers.Serializer):
        username = serializers.CharField(min_length=1, max_length=150)
        role = serializers.ChoiceField(choices=Membership.Role.choices)

        class Meta:
            ref_name = "MembershipAdd"

    def _project(self, request: Request, pk: int) -> Project:
        project = get_object_or_404(Project, pk=pk)
        require_owner(user=request.user, project=project)
        return project

    @extend_schema(operation_id="projects_members_list", responses=paginated(MembershipOutputSerializer))
    def get(self, request: Request, pk: int) -> Response:
        project = self._project(request, pk)
        return paginated_response(
            queryset=membership_list(project=project),
            serializer_class=MembershipOutputSerializer,
            request=request,
            view=self,
        )

    @extend_schema(
        operation_id="projects_members_add",
        request=InputSerializer,
        responses={201: MembershipOutputSerializer, 200: MembershipOutputSerializer},
    )
    def post(self, request: Request, pk: int) -> Response:
        """Add a user to the project, or change their role (200)."""
        project = self._project(request, pk)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        user = addable_user(data["username"])
        if user is None:
            raise ValidationError({"username": [NO_SUCH_ACCOUNT]})
        existing = Membership.objects.filter(project=project, user=user).first()
        membership = membership_add(project=project, user=user, role=data["role"])
        return Response(
            MembershipOutputSerializer(membership).data,
            status=status.HTTP_200_OK if existing else status.HTTP_201_CREATED,
        )


class MembershipDetailApi(ApiAuthMixin, APIView):
    """One member of a project: change the role or remove (owners only; a project keeps one owner)."""

    class InputSerializer(serializers.Serializer):
        role = serializers.ChoiceField(choices=Membership.Role.choices)

        class Meta:
            ref_name = "MembershipRole"

    def _membership(self, request: Request, pk: int, member_pk: int) -> Membership:
        project = get_object_or_404(Project, pk=pk)
        require_owner(user=request.user, project=project)
        return get_object_or_404(Membership.objects.select_related("user", "project"), project=project, pk=member_pk)

    @extend_schema(
        operation_id="projects_members_update", request=InputSerializer, responses={200: MembershipOutputSerializer}
    )
    def patch(self, request: Request, pk: int, member_pk: int) -> Response:
        membership = self._membership(request, pk, member_pk)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        membership = membership_add(
            project=membership.project, user=membership.user, role=serializer.validated_data["role"]
        )
        return Response(MembershipOutputSerializer(membership).data)

    @extend_schema(operation_id="projects_members_remove", request=None, responses={204: None})
    def delete(self, request: Request, pk: int, member_pk: int) -> Response:
        membership = self._membership(request, pk, member_pk)
        membership_remove(project=membership.project, membership_id=membership.pk)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MembersBulkApi(ApiAuthMixin, APIView):
    """Annotators in bulk (owners only): missing accounts are created with no password, and each
    created account (with `links_for_existing`, each existing one that may have one) gets a
    one-time login link. All or nothing: 400 lists every bad line as "line N: ..."."""

    class InputSerializer(serializers.Serializer):
        usernames = serializers.ListField(
            child=serializers.CharField(max_length=1000, allow_blank=True),
            required=False,
            max_length=MAX_USERNAMES,
            help_text="Usernames, one per entry.",
        )
        text = serializers.CharField(
            required=False,
            allow_blank=True,
            max_length=256 * 1024,
            help_text="Or a text: one username per line, or comma separated.",
        )
        links_for_existing = serializers.BooleanField(default=False)

        class Meta:
            ref_name = "MembersBulk"

    class OutputSerializer(serializers.Serializer):
        project = serializers.CharField()
        members = serializers.IntegerField()
        created = serializers.ListField(child=serializers.CharField())
        added = serializers.ListField(child=serializers.CharField())
        unchanged = serializers.ListField(child=serializers.CharField())
        links = serializers.DictField(child=serializers.URLField(), help_text="username -> one-time login link")
        no_link = serializers.DictField(child=serializers.CharField(), help_text="username -> why no link")

        class Meta:
            ref_name = "MembersBulkResult"

    @extend_schema(operation_id="projects_members_bulk", request=InputSerializer, responses={200: OutputSerializer})
    def post(self, request: Request, pk: int) -> Response:
        project = get_object_or_404(project_list_with_roles(user=request.user), pk=pk)
        require_owner(user=request.user, project=project)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        # A list is numbered like the lines of a text: entry 1 is line 1.
        text = "\n".join(data["usernames"]) if "usernames" in data else data.get("text", "")
        try:
            result = annotators_add_bulk(
                project=project, text=text, created_by=request.user, links_for_existing=data["links_for_existing"]
            )
        except ValidationError as exc:
            raise ValidationError({"usernames": exc.messages}) from None
        base = request.build_absolute_uri("/")
        return Response(
            self.OutputSerializer(
                {
                    "project": project.name,
                    "members": result.members,
                    "created": result.created,
                    "added": result.added,
                    "unchanged": result.unchanged,
                    "no_link": result.no_link,
                    "links": {name: login_link_url(token=token, base_url=base) for name, token in result.links.items()},
                }
            ).data
        )
