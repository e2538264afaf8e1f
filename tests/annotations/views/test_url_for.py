"""`url_for` gives what `reverse` gives for the annotate views' one-id URLs, under any script prefix."""

import pytest
from django.urls import reverse, set_script_prefix

from annotations.views.annotate import url_for

NAMES = ["annotate-submit", "annotate-draft", "annotate-release", "annotate-unit", "annotate-revise"]


@pytest.mark.parametrize("prefix", ["/", "/workbench/"])
def test_url_for_equals_reverse(prefix):
    set_script_prefix(prefix)
    try:
        for name in NAMES:
            for pk in (1, 7, 918273645, 2**40 + 3):
                assert url_for(name, pk) == reverse(name, args=[pk])
    finally:
        set_script_prefix("/")
