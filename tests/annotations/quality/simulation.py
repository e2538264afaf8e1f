"""Simulated annotators working through the real engine (assignment_next, unit_submit).

A careful annotator's answers follow a hidden truth (plus noise) and, reading
the text shown, score a damaged copy lower; a careless one answers at random.
Both see only what the annotator's payload shows (texts, no system names).
"""

from __future__ import annotations

import difflib
import random

from annotations import protocols
from annotations.models import Campaign
from annotations.selectors import assignment_payload, enrolment_for
from annotations.services.assignments import assignment_next
from annotations.services.submissions import unit_submit
from tests.annotations.server_time import worked


class Annotator:
    def __init__(self, annotator, *, careful: bool, truth_by_text: dict[str, float], seed: int):
        self.annotator = annotator
        self.careful = careful
        self.truth_by_text = truth_by_text
        self.rng = random.Random(seed)

    def truth(self, text: str) -> float:
        if text in self.truth_by_text:
            return self.truth_by_text[text]
        # Not an output seen before: a damaged copy. A careful reader finds it much worse
        # than the output it resembles.
        closest = max(self.truth_by_text, key=lambda t: difflib.SequenceMatcher(None, t, text).ratio())
        return self.truth_by_text[closest] - 45

    def impression(self, output: dict) -> float:
        """0-100: a careful annotator's follows the truth (plus noise), a careless one's is random."""
        value = self.truth(output["text"]) + self.rng.gauss(0, 5) if self.careful else self.rng.uniform(0, 100)
        return min(100.0, max(0.0, value))

    def answers(self, campaign: Campaign, payload: dict) -> list[dict]:
        """The answers the campaign's protocol gives for these impressions (`simulated_answers`: MQM
        marks more and worse errors where the text seems worse, and the server computes its score)."""
        protocol = protocols.of(campaign)
        return [
            answer
            for criterion in campaign.criteria
            for answer in protocol.simulated_answers(
                campaign, criterion, payload["item"]["outputs"], self.impression, self.rng
            )
        ]

    def work(self, campaign: Campaign, *, limit: int = 10_000) -> list[dict]:
        """Take and submit units until nothing is left; returns the payloads seen."""
        seen = []
        for _ in range(limit):
            assignment, _ = assignment_next(campaign=campaign, annotator=self.annotator)
            if assignment is None:
                break
            payload = assignment_payload(
                assignment=assignment, enrolment=enrolment_for(campaign=campaign, annotator=self.annotator)
            )
            seen.append(payload)
            # The time on the unit is the server's: the simulated annotator "works" by moving its hand-out back.
            ms = self.rng.randint(3000, 20000) if self.careful else self.rng.randint(500, 2000)
            worked(assignment.pk, ms)
            unit_submit(
                annotator=self.annotator,
                assignment_id=assignment.pk,
                judgements=self.answers(campaign, payload),
                shown_order=payload["shown_order"],
                time_spent_ms=ms,
            )
        return seen
