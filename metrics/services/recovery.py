"""Runs whose broker messages were lost: claim what must be sent again.

Redis keeps its messages in memory: killed and restarted empty (or from an
older snapshot), it forgets the messages of the chunks no worker has taken, and
their run would say "running" forever. A run that has not moved for
`stale_seconds` (none of its chunks started, finished or reported progress; a
queued run not prepared) is taken as stalled, and its unfinished chunks are
marked re-sent (`updated_at`, in one conditional statement, so two checks at
once claim each chunk once and a chunk is re-sent at most once per period).
Sending a live chunk's message twice is harmless: a chunk is claimed in
PostgreSQL and counted by its one flip to done (metrics.services.chunks).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from django.db import connection
from django.utils import timezone

from annotations import rows
from metrics.models import ChunkStatus, MetricChunk, MetricRun, RunStatus


@dataclass
class Stalled:
    """What to send again: (run id, metric) to prepare, (chunk id, metric) to score."""

    prepare: list[tuple[int, str]] = field(default_factory=list)
    chunks: list[tuple[int, str]] = field(default_factory=list)


def runs_stalled_claim(*, stale_seconds: float) -> Stalled:
    now = timezone.now()
    cutoff = now - timedelta(seconds=stale_seconds)
    chunk, run = rows.table(MetricChunk), rows.table(MetricRun)
    stalled = Stalled()
    with connection.cursor() as cursor:
        # Queued runs (not `--sync`: those run in their own process) whose prepare message is gone.
        cursor.execute(
            f"UPDATE {run} SET updated_at = %s WHERE status = %s AND NOT sync AND updated_at < %s RETURNING id, metric",
            [now, RunStatus.QUEUED, cutoff],
        )
        stalled.prepare = [(run_id, metric) for run_id, metric in cursor.fetchall()]
        # GREATEST skips NULLs: a chunk's last sign of life is its claim, its end, its progress
        # report or its last re-send, whichever came last.
        cursor.execute(
            f"UPDATE {chunk} c SET updated_at = %s FROM {run} r "
            f"WHERE r.id = c.run_id AND r.status = %s AND NOT r.sync AND c.status IN (%s, %s) "
            f"AND GREATEST(c.started_at, c.updated_at) < %s "
            f"AND NOT EXISTS (SELECT 1 FROM {chunk} m WHERE m.run_id = r.id "
            f"AND GREATEST(m.started_at, m.finished_at, m.updated_at) >= %s) "
            f"RETURNING c.id, r.metric",
            [now, RunStatus.RUNNING, ChunkStatus.PENDING, ChunkStatus.RUNNING, cutoff, cutoff],
        )
        stalled.chunks = sorted((chunk_id, metric) for chunk_id, metric in cursor.fetchall())
    return stalled
