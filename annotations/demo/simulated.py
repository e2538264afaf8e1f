"""Simulated annotators for the demo's finished campaigns, so that every view has something to
show on a first visit (agreement, rankings, quality, meta-evaluation, export).

They work through the real engine (`assignment_next`, `unit_submit`) as people would, seeing only
what an annotator's payload shows (texts, no system names). An output's hidden quality is its
sentence chrF against the item's references (sacrebleu): simulated humans then roughly agree with
the metrics, as real ones do, without being a copy of any one of them. Each simulated annotator
adds a bias of their own and noise; one of them is careless, so quality control has someone to
find.

Nothing here pretends to be real: the campaigns' names end in SIMULATED, their instructions say
so, and the annotators are named `simulated-1`, `simulated-2`, ... on every page and in the card.
"""

from __future__ import annotations

import random
from datetime import timedelta

from django.db.models import F

from annotations import protocols
from annotations.models import Assignment, Campaign, Output
from annotations.selectors import assignment_payload, enrolment_for
from annotations.services.assignments import assignment_next
from annotations.services.projects import annotator_get_or_create
from annotations.services.submissions import unit_submit

SIMULATED = "(simulated annotators)"
NOTICE = (
    "**These judgements come from simulated annotators**, not people: the workbench's demo "
    "fills this campaign so that the analysis pages have something to show. "
)


def _quality(campaign: Campaign) -> dict[str, float]:
    """Hidden quality of each output text of the campaign's dataset, 0-100 (sentence chrF)."""
    from sacrebleu.metrics import CHRF  # lazy: sacrebleu loads only when the demo runs

    chrf = CHRF()
    quality = {}
    outputs = Output.objects.filter(item__dataset=campaign.dataset).select_related("item")
    for output in outputs:
        references = list(output.item.references.values_list("text", flat=True))
        quality[output.text] = chrf.sentence_score(output.text, references).score if references else 50.0
    return quality


class SimulatedAnnotator:
    def __init__(self, annotator, *, quality: dict[str, float], careless: bool, seed: int):
        self.annotator = annotator
        self.quality = quality
        self.careless = careless
        self.rng = random.Random(seed)
        self.bias = self.rng.uniform(-8, 8)

    def value(self, text: str) -> float:
        """This annotator's impression of a text, 0-100."""
        if self.careless:
            return self.rng.uniform(0, 100)
        return min(100.0, max(0.0, self.quality.get(text, 50.0) + self.bias + self.rng.gauss(0, 8)))

    def answers(self, campaign: Campaign, payload: dict) -> list[dict]:
        """The unit's answers, as the campaign's protocol simulates them from this annotator's
        impressions (`Protocol.simulated_answers`; MQM sends no score: the server computes it)."""
        protocol = protocols.of(campaign)
        outputs = payload["item"]["outputs"]
        return [
            answer
            for criterion in campaign.criteria
            for answer in protocol.simulated_answers(
                campaign, criterion, outputs, lambda output: self.value(output["text"]), self.rng
            )
        ]

    def work(self, campaign: Campaign, *, limit: int) -> int:
        """Take and submit up to `limit` units; fewer when the engine has nothing left for this annotator."""
        done = 0
        while done < limit:
            assignment, _ = assignment_next(campaign=campaign, annotator=self.annotator)
            if assignment is None:
                return done
            payload = assignment_payload(
                assignment=assignment, enrolment=enrolment_for(campaign=campaign, annotator=self.annotator)
            )
            ms = self.rng.randint(700, 2500) if self.careless else self.rng.randint(4000, 25000)
            # The time on a unit is measured by the server from the hand-out: a simulated
            # annotator "works" by moving its hand-out back.
            Assignment.objects.filter(pk=assignment.pk).update(
                active_since=F("active_since") - timedelta(milliseconds=ms)
            )
            unit_submit(
                annotator=self.annotator,
                assignment_id=assignment.pk,
                judgements=self.answers(campaign, payload),
                shown_order=payload["shown_order"],
                time_spent_ms=ms,
            )
            done += 1
        return done


def campaign_simulate(campaign: Campaign, *, annotators: int, seed: int) -> int:
    """Every unit of `campaign` judged by simulated annotators, taking turns one unit at a time so
    that the work spreads over all of them (the last one careless); returns the units submitted."""
    quality = _quality(campaign)
    crowd = [
        SimulatedAnnotator(
            annotator_get_or_create(project=campaign.dataset.project, name=f"simulated-{n}"),
            quality=quality,
            careless=(n == annotators and annotators > 2),
            seed=seed * 100 + n,
        )
        for n in range(1, annotators + 1)
    ]
    submitted = 0
    while crowd:
        for member in list(crowd):
            if member.work(campaign, limit=1) == 0:
                crowd.remove(member)
            else:
                submitted += 1
    return submitted
