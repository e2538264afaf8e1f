"""Simulated annotators working through the real engine (assignment_next, unit_submit).

A careful annotator's answers follow a hidden truth (plus noise) and, reading
the text shown, score a damaged copy lower; a careless one answers at random.
Both see only what the annotator's payload shows (texts, no system names).
"""
from __future__ import annotations

import difflib
import random

from annotations.models import Campaign
from annotations.protocols.mqm_scoring import leaf_paths
from annotations.selectors import assignment_payload, enrolment_for
from annotations.selectors.units import campaign_settings
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

    def score(self, text: str, low: float, high: float) -> float:
        if self.careful:
            value = self.truth(text) + self.rng.gauss(0, 5)
        else:
            value = self.rng.uniform(low, high)
        return float(round(min(high, max(low, value))))

    def answers(self, campaign: Campaign, payload: dict) -> list[dict]:
        outputs = payload["item"]["outputs"]
        answers = []
        for criterion in campaign.criteria:
            low, high = campaign.criterion_scale(criterion)
            if low is None or high is None:  # unbounded RankME magnitudes
                low, high = 1, 200
            if campaign.protocol == "mqm":
                # No score to give: errors (as missing content, in the typology's first leaf
                # category), more of them where the text seems worse; the server computes the score.
                category = leaf_paths(campaign_settings(campaign=campaign)["typology"])[0]
                for output in outputs:
                    errors = round((100 - self.score(output["text"], 0, 100)) / 10)
                    answers.append({"criterion": criterion, "output": output["id"],
                                    "spans": [{"missing": True, "severity": "minor", "category": category}] * errors})
            elif campaign.protocol in ("likert", "rankme", "esa",
                                       "cesa"):
                for output in outputs:
                    answer = {"criterion": criterion, "output": output["id"],
                              "score": self.score(output["text"], low, high)}
                    if campaign.protocol in ("esa", "cesa"):
                        answer["spans"] = []
                    answers.append(answer)
            elif campaign.protocol == "pairwise":
                a, b = (self.score(o["text"], 0, 100) for o in outputs)
                winner = ("a" if a > b else "b" if b > a else "tie") if self.careful else self.rng.choice("ab")
                answers.append({"criterion": criterion, "winner": winner})
            else:
                scored = sorted(outputs, key=lambda o: self.score(o["text"], 0, 100))
                if not self.careful:
                    self.rng.shuffle(scored)
                answers.append({"criterion": criterion, "best": scored[-1]["id"], "worst": scored[0]["id"]})
        return answers

    def work(self, campaign: Campaign, *, limit: int = 10_000) -> list[dict]:
        """Take and submit units until nothing is left; returns the payloads seen."""
        seen = []
        for _ in range(limit):
            assignment, _ = assignment_next(campaign=campaign, annotator=self.annotator)
            if assignment is None:
                break
            payload = assignment_payload(assignment=assignment,
                                         enrolment=enrolment_for(campaign=campaign, annotator=self.annotator))
            seen.append(payload)
            # The time on the unit is the server's: the simulated annotator "works" by moving its hand-out back.
            ms = self.rng.randint(3000, 20000) if self.careful else self.rng.randint(500, 2000)
            worked(assignment.pk, ms)
            unit_submit(annotator=self.annotator, assignment_id=assignment.pk,
                        judgements=self.answers(campaign, payload), shown_order=payload["shown_order"],
                        time_spent_ms=ms)
        return seen
