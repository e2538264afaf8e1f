"""RankME (Novikova et al. 2018): 3-5 outputs of an input side by side, each given a magnitude
relative to an anchor; the implied rank is stored with every magnitude."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator

from annotations.models import RatingJudgement
from annotations.protocols.base import AgreementSpec, Protocol, Z, chunks_even
from annotations.protocols.errors import AnswerError
from annotations.protocols.options import INTEGER, NUMBER, Option


class RankMe(Protocol):
    name = "rankme"
    label = "RankME (magnitude estimation)"
    guide = "reference/protocols/"
    model = RatingJudgement
    fields = (("output_id", "output_id"), ("score", "score"), ("rank", "rank"))
    # Magnitudes are relative to each annotator's own anchor and range: only their
    # z-scores are comparable across annotators (Novikova et al. 2018, section 3).
    agreement = AgreementSpec(level="interval", variant=Z, unit="output", value="magnitude")
    template = "annotate/protocols/rankme.html"
    script = "js/protocols/rankme.js"
    shortcuts = "annotate/protocols/rankme_keys.html"
    options = (
        Option(
            "anchor_value",
            NUMBER,
            100.0,
            "RankME anchor value",
            minimum=0,
            exclusive_minimum=True,
            help="The reference is shown with this fixed magnitude (above 0).",
            flag="anchor",
            title="Anchor value",
        ),
        Option(
            "tuple_size",
            INTEGER,
            3,
            "Outputs per screen",
            minimum=3,
            maximum=5,
            flag="tuple-size",
            help="RankME shows 3 to 5 outputs side by side (default 3).",
        ),
    )
    api_path = "/api/judgements/ratings/"
    # The page shows the anchor output with this magnitude next to the outputs.
    shows_anchor = True

    def anchor(self, campaign) -> float | None:
        return self.option(campaign, "anchor_value")

    def outputs_per_unit(self, campaign) -> int:
        return self.option(campaign, "tuple_size")

    def plan_item(
        self, campaign, item_index: int, outputs: list[tuple[int, int]], rng: random.Random
    ) -> Iterator[list[tuple[int, int]]]:
        shuffled = outputs[:]
        rng.shuffle(shuffled)
        yield from chunks_even(shuffled, max(1, self.option(campaign, "tuple_size")))

    def units_of_item(self, campaign, n_outputs: int) -> int:
        if n_outputs == 0:
            return 0
        size = max(1, self.option(campaign, "tuple_size"))  # chunks_even's number of groups
        return max(1, n_outputs // size, math.ceil(n_outputs / max(size, 5)))

    # ---- export -------------------------------------------------------------------------------
    export_extra = ("rank",)
    one_output_per_unit = False

    # ==== validation of one answer ====

    unit_sizes = (2, 10)
    relative_checks = True
    magnitudes_ranked = True

    def check_score(self, score, *, campaign, criterion: str) -> float:
        """On the criterion's scale when it has one; unbounded magnitudes must be above 0."""
        score = super().check_score(score, campaign=campaign, criterion=criterion)
        if campaign.criterion_scale(criterion)[0] is None and score <= 0:
            raise AnswerError("magnitude", "score", score=score)
        return score

    def check_expected_bound(self, value, *, campaign, criterion: str) -> float:
        # An expected range may start at 0 ("any magnitude up to ..."): the scale only.
        return Protocol.check_score(self, value, campaign=campaign, criterion=criterion)
