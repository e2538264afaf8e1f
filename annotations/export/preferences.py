"""`export_dataset --format preferences`: chosen/rejected pairs for preference tuning.

Every annotator's answer becomes votes on pairs of outputs of one input:
- pairwise: the pair and its winner (a tie is a tie vote);
- best-worst: the best output beats every other output of the tuple, every other beats the worst;
- RankME and contrastive ESA: every two outputs one annotator scored on one screen, the higher
  score winning (equal scores: a tie), as the pairwise figures of those protocols derive them.

Votes on one pair (of one criterion) are pooled into one row: `chosen` is the output with more
votes; `tie` is true when neither has more, or more votes said tie than either (then `chosen` is
the pair's first output by system name); `agreement` is the share of votes for the majority answer (chosen, rejected or tie).
One JSON object per line (preferences.jsonl) with a card whose YAML header declares the
`preferences` config for `datasets.load_dataset`.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter, defaultdict
from pathlib import Path

from annotations import protocols
from annotations.models import Campaign, Item, Output, Reference
from annotations.protocols.cesa import derived_pairs
from annotations.protocols.rows import JudgementRow
from annotations.selectors.judgements import ALL, INCLUDED, campaign_judgements

PREFERENCE_PROTOCOLS = ("pairwise", "bws", "rankme", "cesa")
FILE = "preferences.jsonl"


def votes_of(protocol_name: str, rows: list[JudgementRow]) -> list[tuple[int, int, int, int, str]]:
    """(annotator id, item id, output a, output b, winner a/b/tie) with a < b, for every vote."""
    if protocol_name == "pairwise":
        return [(r.annotator_id, r.item_id, r.a_id, r.b_id, r.winner) for r in rows]
    if protocol_name in ("rankme", "cesa"):
        return [(p.annotator_id, p.item_id, p.a_id, p.b_id, p.winner) for p in derived_pairs(rows)]
    out = []  # best-worst
    for r in rows:
        for x, y in itertools.combinations(sorted(r.outputs), 2):
            if r.best_id in (x, y):
                winner = "a" if r.best_id == x else "b"
            elif r.worst_id in (x, y):
                winner = "b" if r.worst_id == x else "a"
            else:
                continue  # two middle outputs: best-worst says nothing about them
            out.append((r.annotator_id, r.item_id, x, y, winner))
    return out


def write_preferences(*, campaign: Campaign, out: Path, criteria: list[str], included_only: bool) -> dict:
    from annotations.export.service import ExportFailed  # lazy: cycle with annotations.export

    protocol = protocols.of(campaign)
    if protocol.name not in PREFERENCE_PROTOCOLS:
        raise ExportFailed(
            [
                f"--format preferences: campaign {campaign.name!r} uses the {protocol.name} protocol; "
                f"preference pairs come from {', '.join(PREFERENCE_PROTOCOLS)} campaigns"
            ]
        )
    found = campaign_judgements(campaign=campaign, annotators=INCLUDED if included_only else ALL)
    pooled: dict[tuple, Counter] = defaultdict(Counter)  # (criterion, item, a, b) -> votes
    voters: dict[tuple, set] = defaultdict(set)
    for criterion, rows in found.by_criterion().items():
        if criteria and criterion not in criteria:
            continue
        for annotator, item, a, b, winner in votes_of(protocol.name, rows):
            key = (criterion, item, a, b)
            pooled[key][winner] += 1
            voters[key].add(annotator)

    item_ids = {key[1] for key in pooled}
    output_ids = {o for key in pooled for o in key[2:]}
    items = {
        pk: (ext, source, pos)
        for pk, ext, source, pos in Item.objects.filter(pk__in=item_ids).values_list(
            "pk", "external_id", "source", "position"
        )
    }
    refs = defaultdict(list)
    for item_id, text in (
        Reference.objects.filter(item_id__in=item_ids).order_by("item_id", "position").values_list("item_id", "text")
    ):
        refs[item_id].append(text)
    outputs = {
        pk: (system, text)
        for pk, system, text in Output.objects.filter(pk__in=output_ids).values_list("pk", "system__name", "text")
    }
    order = sorted(
        pooled,
        key=lambda k: (
            items[k[1]][2],
            str(items[k[1]][0]),
            criteria_order(campaign, k[0]),
            outputs[k[2]][0],
            outputs[k[3]][0],
        ),
    )
    rows_written, ties = 0, 0
    with (out / FILE).open("w", encoding="utf-8") as f:
        for key in order:
            criterion, item, a, b = key
            votes = pooled[key]
            # Neither output has more votes, or more votes said tie than either: a tie, written in
            # system-name order.
            tie = votes["a"] == votes["b"] or votes["tie"] > max(votes["a"], votes["b"])
            if tie:
                chosen, rejected = (a, b) if outputs[a][0] <= outputs[b][0] else (b, a)
            else:
                chosen, rejected = (a, b) if votes["a"] > votes["b"] else (b, a)
            for_chosen = votes["a" if chosen == a else "b"]
            for_rejected = votes["b" if chosen == a else "a"]
            total = sum(votes.values())
            majority = max(votes["a"], votes["b"], votes["tie"])
            ext, source, _ = items[item]
            f.write(
                json.dumps(
                    {
                        "item": ext,
                        "criterion": criterion,
                        "prompt": source,
                        "references": refs[item],
                        "chosen": outputs[chosen][1],
                        "rejected": outputs[rejected][1],
                        "chosen_system": outputs[chosen][0],
                        "rejected_system": outputs[rejected][0],
                        "tie": tie,
                        "votes_chosen": for_chosen,
                        "votes_rejected": for_rejected,
                        "votes_tie": votes["tie"],
                        "agreement": majority / total,
                        "annotators": len(voters[key]),
                        "derived_from": protocol.name,
                    },
                    ensure_ascii=False,
                )
                + "\n"
            )
            rows_written += 1
            ties += tie
    (out / "README.md").write_text(_card(campaign, protocol.name, rows_written, ties), encoding="utf-8")
    return {"pairs": rows_written, "ties": ties, "items": len(item_ids)}


def criteria_order(campaign: Campaign, criterion: str) -> int:
    return campaign.criteria.index(criterion) if criterion in campaign.criteria else len(campaign.criteria)


def _card(campaign: Campaign, protocol: str, pairs: int, ties: int) -> str:
    how = {
        "pairwise": "each pairwise judgement is one vote on its pair",
        "bws": "in each best-worst judgement the best output beats every other output of the tuple "
        "and every other output beats the worst",
        "rankme": "every two outputs one annotator scored on one screen (its shown order; judgements "
        "imported without one are screens of one output and give no pair): the higher magnitude wins",
        "cesa": "every two outputs one annotator scored on one screen: the higher score wins",
    }[protocol]
    return (
        "---\n"
        "configs:\n"
        "- config_name: preferences\n"
        "  data_files:\n"
        f"  - split: train\n    path: {FILE}\n"
        "---\n\n"
        f"# Preference pairs of campaign {campaign.name}\n\n"
        f"{pairs} pairs ({ties} ties) from a {protocol} campaign: {how}. Votes on one pair are pooled: "
        "`chosen` has more votes than `rejected`; `tie` is true when neither has more votes, or when "
        "more votes said tie than either output. `agreement` is the share of votes for the majority "
        "answer; `annotators` is how many annotators voted on the pair. Filter `tie == False` for "
        "chosen/rejected training (DPO and the like).\n"
    )
