"""Pagination of searches whose counting stops early (bounded pagination).

Counting every match of a common word in a million texts takes seconds;
`CappedPaginator` counts at most `count_cap + 1` rows (`SELECT COUNT(*) FROM
(... LIMIT cap + 1)`), serves the pages of the first `count_cap` matches and
says when there are more, so a search is asked to be refined rather than
paged through by the thousand.
"""

from __future__ import annotations

from django.core.paginator import Paginator
from django.utils.functional import cached_property
from rest_framework.exceptions import NotFound
from rest_framework.pagination import PageNumberPagination

from annotations import selectors

_DEFAULT = object()


class CappedPaginator(Paginator):
    """`count_cap`: None counts everything; by default `selectors.SEARCH_COUNT_CAP`."""

    def __init__(self, object_list, per_page, *args, count_cap=_DEFAULT, **kwargs):
        super().__init__(object_list, per_page, *args, **kwargs)
        self.count_cap = selectors.SEARCH_COUNT_CAP if count_cap is _DEFAULT else count_cap

    @cached_property
    def _bounded_count(self) -> int:
        if self.count_cap is None:
            return super().count
        return self.object_list[: self.count_cap + 1].count()

    @cached_property
    def count(self) -> int:
        return min(self._bounded_count, self.count_cap) if self.count_cap is not None else self._bounded_count

    @property
    def capped(self) -> bool:
        """More matches exist than are counted and served."""
        return self.count_cap is not None and self._bounded_count > self.count_cap


class CappedPagination(PageNumberPagination):
    """The API's page-number pagination, counting at most SEARCH_COUNT_CAP matches."""

    django_paginator_class = CappedPaginator


# Lists that can hold millions of rows (outputs, items, judgements): counting them all and
# OFFSETs deep into them take seconds each. They are counted up to this many rows, and paged no
# deeper; narrower filters, the export or the dataset download give the rest.
LIST_COUNT_CAP = 10_000


class BoundedPaginator(CappedPaginator):
    def __init__(self, object_list, per_page, *args, **kwargs):
        kwargs.setdefault("count_cap", LIST_COUNT_CAP)
        super().__init__(object_list, per_page, *args, **kwargs)


class BoundedPagination(PageNumberPagination):
    """The API's page-number pagination for lists: `count` stops at LIST_COUNT_CAP (with
    `"count_capped": true` when there are more), and a page beyond it is a 404 that says so."""

    django_paginator_class = BoundedPaginator

    def paginate_queryset(self, queryset, request, view=None):

        try:
            return super().paginate_queryset(queryset, request, view=view)
        except NotFound:
            raise NotFound(
                f"No such page: lists are paged through their first {LIST_COUNT_CAP:,} rows. "
                "Narrow the list with its filters (e.g. item, system, campaign), or export the "
                "campaign or dataset for everything."
            ) from None

    def get_paginated_response(self, data):
        response = super().get_paginated_response(data)
        if self.page.paginator.capped:
            response.data["count_capped"] = True
        return response
