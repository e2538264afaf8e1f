"""The production set-up past one machine (deploy/multihost/cluster.py): two web hosts and two Celery
worker hosts, each in a network namespace of its own with its own address, behind HAProxy, on one
PostgreSQL and one Redis, with production settings (the proxy says HTTPS; one shared secret key).

Through the proxy, fifty annotators drain a campaign of every registered protocol (the race of
tests/annotations/apis/test_campaign_concurrency.py, over real sockets): exactly k judgement sets per
unit, none lost, none duplicated, and both web hosts served. A metric run started through the proxy
is scored by both workers, every output exactly once, and its corpus chrF equals sacrebleu's.

Needs root, `ip netns` and HAProxy (`make haproxy`; `make test` installs it): skipped, saying which
is missing, elsewhere. Figures: docs/how-to/deploy-multihost.md.
"""

import random
import re
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
import requests
import sacrebleu
from django.conf import settings
from django.db import connection
from rest_framework.authtoken.models import Token

from annotations.models import Membership, Output
from deploy.multihost.cluster import Cluster, ClusterError, missing_requirements
from metrics.models import ChunkStatus, MetricRun, OutputScore, RunStatus
from metrics.services.inputs import dataset_outputs
from tests.annotations.apis.crowd import N_ANNOTATORS, HttpAnnotator, annotate, assert_exactly_k, crowd_campaigns
from tests.annotations.factories import MembershipFactory, UserFactory
from tests.celery_workers import shared_worker_paused
from tests.metrics.conftest import build_dataset
from tests.protocol_plugin import WITH_PLUGIN
from tests.waiting import wait_until
from workbench.celery import app


def _database_url(db: dict) -> str:
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgres://{db['USER']}{password}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


@pytest.fixture(scope="module", params=["relay", "pgbouncer"])
def cluster(request, django_db_setup):
    """Two web hosts and two worker hosts on the test database and the test broker, reaching PostgreSQL
    through a plain TCP relay, then through PgBouncer in transaction mode. The session's shared worker
    (tests/conftest.py) stops consuming meanwhile: only the worker hosts take tasks."""
    pgbouncer = request.param == "pgbouncer"
    if why := missing_requirements(pgbouncer=pgbouncer):
        pytest.skip(f"the multi-host set-up cannot run here: {why}")
    with shared_worker_paused():
        with Cluster(
            database_url=_database_url(connection.settings_dict),
            broker_url=app.conf.broker_url,
            result_backend=app.conf.result_backend or "",
            # Shared throttles and lock-outs, as in production: the broker's Redis.
            cache_url=app.conf.broker_url,
            env={
                "DJANGO_SECRET_KEY": settings.SECRET_KEY,  # one key for every host (HMAC handles, sessions)
                "WORKBENCH_PROTOCOLS": ",".join(WITH_PLUGIN),  # the test-only protocol too
                "WORKBENCH_DEVICE": "cpu",
                # The control-unit timing floor only makes this race wait (tests/annotations/test_timing_*).
                "WORKBENCH_UNIT_RESPONSE_FLOOR_MS": "0",
                # Chunks that last a little, so that both workers get some whatever the scheduling.
                "WORKBENCH_METRIC_CHUNK_DELAY": "0.5",
            },
            pgbouncer=pgbouncer,
        ) as running:
            for host in running.worker_hosts:
                name = running.worker_name(host)
                wait_until(lambda: app.control.ping(destination=[name], timeout=1.0), 60, f"{name} to answer a ping")
            yield running


def _session(token: str) -> requests.Session:
    session = requests.Session()
    session.trust_env = False
    session.headers["Authorization"] = f"Token {token}"
    return session


@pytest.mark.slow
@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_fifty_annotators_through_the_proxy_store_exactly_k_per_unit(cluster, registered):
    campaigns, users = crowd_campaigns("overlap-first")
    tokens = [Token.objects.create(user=user).key for user in users]
    before = cluster.proxy_stats()
    start = threading.Barrier(N_ANNOTATORS)
    errors: list[BaseException] = []
    unexpected: list[str] = []
    sent: list[int] = []

    def work(index: int) -> None:
        client = HttpAnnotator(cluster.proxy_url, tokens[index])
        try:
            start.wait(60)
            annotate(client, campaigns, random.Random(index), unexpected)
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            sent.append(client.requests)
            client.close()

    began = time.monotonic()
    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(N_ANNOTATORS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(600)
    elapsed = time.monotonic() - began
    assert not any(t.is_alive() for t in threads), "annotators still working after 10 minutes"
    assert not errors, errors[:3]
    assert not unexpected, unexpected[:5]

    sets = assert_exactly_k(campaigns)
    served = {name: total - before.get(name, 0) for name, total in cluster.proxy_stats().items()}
    assert set(served) == {host.name for host in cluster.web_hosts}
    assert all(count > 0 for count in served.values()), served
    print(
        f"\nmulti-host race: {N_ANNOTATORS} annotators, {len(campaigns)} campaigns, {sets} judgement sets, "
        f"{sum(sent)} API requests in {elapsed:.1f} s; per web host {served}; pgbouncer={cluster.pgbouncer}"
    )


@pytest.mark.slow
@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_metric_run_is_scored_across_both_workers_each_output_once(cluster):
    dataset = build_dataset(name="multihost", items=40, systems=3)
    researcher = UserFactory(username="researcher")
    MembershipFactory(project=dataset.project, user=researcher, role=Membership.Role.OWNER)
    api = _session(Token.objects.create(user=researcher).key)
    logs = {cluster.worker_name(h): Path(h.log) for h in cluster.worker_hosts}
    lines_before = {name: len(log.read_text().splitlines()) for name, log in logs.items()}

    started = api.post(
        f"{cluster.proxy_url}/api/datasets/{dataset.pk}/metric-runs/",
        json={"metric": "chrf", "chunk_size": 10},
        timeout=60,
    )
    assert started.status_code == 201, started.content
    run_id = started.json()["id"]

    def ended() -> dict | None:
        body = api.get(f"{cluster.proxy_url}/api/metric-runs/{run_id}/", timeout=60).json()
        return body if body["status"] not in (RunStatus.QUEUED, RunStatus.RUNNING) else None

    body = wait_until(ended, 300, f"metric run {run_id} to end")
    assert body["status"] == RunStatus.DONE, body

    run = MetricRun.objects.get(pk=run_id)
    chunks = list(run.chunks.all())
    outputs = list(dataset_outputs(dataset=dataset).select_related("item").prefetch_related("item__references"))
    output_ids = sorted(o.pk for o in outputs)
    assert len(chunks) == 12  # ceil(120 / 10)
    assert {c.status for c in chunks} == {ChunkStatus.DONE}
    # Scored once: every chunk claimed once, every output in one chunk, one score per output.
    assert [c.attempts for c in chunks] == [1] * len(chunks)
    assert sorted(pk for c in chunks for pk in c.output_ids) == output_ids
    assert sorted(OutputScore.objects.filter(run=run).values_list("output_id", flat=True)) == output_ids
    assert run.total == run.done == len(output_ids) == Output.objects.filter(item__dataset=dataset).count()
    # Across both worker hosts: each stored chunks (the label is the Celery node name) ...
    per_worker = Counter(c.worker.split()[0] for c in chunks)
    assert set(per_worker) == set(logs), per_worker
    # ... and each chunk task ran on exactly one of them (their logs: one "succeeded" per task).
    ran = Counter()
    for name, log in logs.items():
        tail = "\n".join(log.read_text().splitlines()[lines_before[name] :])
        ran[name] = len(re.findall(r"Task metrics\.(?:run_prepare|chunk_execute)\[[^\]]+\] succeeded", tail))
    assert sum(ran.values()) == len(chunks), ran  # the first chunk rides on the prepare message
    # The result is the reference tool's.
    hyps = [o.text for o in outputs]
    refs = [o.item.references.all()[0].text for o in outputs]
    assert run.corpus["score"] == pytest.approx(sacrebleu.corpus_chrf(hyps, [refs]).score, abs=1e-9)
    print(f"\nmulti-host metric run: {len(chunks)} chunks of chrF, per worker host {dict(per_worker)}")


def _leftovers(cluster_id: str) -> list[str]:
    """Namespaces and links of cluster `cluster_id` still on the machine."""
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=True).stdout
    return [
        line for line in (namespaces + links).splitlines() if f"wbm-{cluster_id}-" in line or f"wbm{cluster_id}" in line
    ]


@pytest.mark.slow  # about 25 s: the worker host's Celery finishes booting before it stops
def test_a_start_that_fails_half_way_leaves_nothing_behind():
    """A web host that cannot boot (gunicorn refuses its options) while HAProxy and the worker host are
    up: the start says why, and the namespaces, links and processes it had made are gone."""
    if why := missing_requirements():
        pytest.skip(f"the multi-host set-up cannot run here: {why}")
    broken = Cluster(
        database_url="postgres://postgres@127.0.0.1:5432/unused",
        broker_url="redis://127.0.0.1:6379/5",
        env={"DJANGO_SECRET_KEY": "x"},
        webs=1,
        workers=1,
        gunicorn_workers=-1,
    )
    with pytest.raises(ClusterError, match="web1 exited"):
        broken.start()
    assert _leftovers(broken.id) == []
    assert not (broken.dir / "state.json").exists()
    assert [proc.poll() is not None for proc in broken.started] == [True, True, True]  # HAProxy, web, worker
