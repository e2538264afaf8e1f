"""Fifty annotators at once, each with their own account and database connection,
drain one campaign of every registered protocol (the built-in ones and the test-only
plugin, tests/protocol_plugin.py) through the REST API on PostgreSQL.

Every unit must end with exactly k complete judgement sets from k different
annotators: nothing lost, nothing duplicated, whatever the interleaving. The
annotators also skip some units, send a bad submission first or submit twice,
as real clients do (tests/annotations/apis/crowd.py; the same race over HTTP across
several web hosts: tests/deploy/test_multihost.py).
"""

import random
import threading

import pytest
from django.db import connection
from rest_framework.test import APIClient

from tests.annotations.apis.crowd import N_ANNOTATORS, annotate, assert_exactly_k, crowd_campaigns


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("allocation", ["overlap-first", "spread", "adaptive"])
def test_fifty_annotators_complete_a_campaign_of_each_protocol(allocation, registered):
    campaigns, users = crowd_campaigns(allocation)
    start = threading.Barrier(N_ANNOTATORS)
    errors: list[BaseException] = []
    unexpected: list[str] = []

    def work(index: int, user) -> None:
        rng = random.Random(index)
        client = APIClient()
        client.force_authenticate(user)
        try:
            start.wait(60)
            annotate(client, campaigns, rng, unexpected)
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(i, user), daemon=True) for i, user in enumerate(users)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert not any(t.is_alive() for t in threads), "annotators still working after 5 minutes"
    assert not errors, errors[:3]
    assert not unexpected, unexpected[:5]

    assert_exactly_k(campaigns)
