"""Write the worked examples under examples/: one folder per built-in protocol.

    python examples/make_examples.py

Each folder gets `dataset.jsonl` (8 German sentences, two English references each, the outputs
of three systems), `campaign.json` (a campaign file, as `export_dataset` writes it) and the
judgements of three simulated raters (`judgements.jsonl`; MQM: `judgements.tsv` in WMT's MQM
format). The texts are hand-written for these examples; the judgements are drawn with a fixed
seed from a per-system quality (alpha best, gamma worst) plus noise, so that the figures are
neither perfect nor random. Run again, it writes the same files. Needs no Django.
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent

# (source, two references, outputs of alpha / beta / gamma)
SENTENCES = [
    (
        "Der Zug kommt heute zehn Minuten später an.",
        ["The train arrives ten minutes late today.", "Today the train will arrive ten minutes later."],
        [
            "The train arrives ten minutes late today.",
            "The train comes today ten minutes later.",
            "The train is today late.",
        ],
    ),
    (
        "Bitte schließen Sie das Fenster, es ist kalt.",
        ["Please close the window, it is cold.", "Please shut the window; it's cold."],
        [
            "Please close the window, it is cold.",
            "Please close the window, it's cold outside.",
            "Close please the window cold.",
        ],
    ),
    (
        "Das Museum ist montags geschlossen.",
        ["The museum is closed on Mondays.", "The museum closes on Mondays."],
        ["The museum is closed on Mondays.", "The museum is closed Monday.", "The museum is Monday."],
    ),
    (
        "Wir haben den Vertrag gestern unterschrieben.",
        ["We signed the contract yesterday.", "Yesterday we signed the contract."],
        ["We signed the contract yesterday.", "We have the contract signed yesterday.", "We have signed the treaty."],
    ),
    (
        "Der Arzt empfiehlt, mehr Wasser zu trinken.",
        ["The doctor recommends drinking more water.", "The doctor advises drinking more water."],
        [
            "The doctor recommends drinking more water.",
            "The doctor recommends to drink more water.",
            "The physician drinks more water.",
        ],
    ),
    (
        "Morgen soll es in den Bergen schneien.",
        ["It is supposed to snow in the mountains tomorrow.", "Snow is expected in the mountains tomorrow."],
        [
            "It is expected to snow in the mountains tomorrow.",
            "Tomorrow it should snow in the mountains.",
            "Tomorrow the mountains snow.",
        ],
    ),
    (
        "Die Bibliothek bietet kostenlose Sprachkurse an.",
        ["The library offers free language courses.", "The library provides language courses for free."],
        [
            "The library offers free language courses.",
            "The library offers language courses without cost.",
            "The library is free courses.",
        ],
    ),
    (
        "Er hat seinen Schlüssel im Büro vergessen.",
        ["He forgot his key at the office.", "He left his key in the office."],
        ["He forgot his key at the office.", "He has forgotten his key in the office.", "He forgot the office."],
    ),
]
SYSTEMS = ("alpha", "beta", "gamma")
QUALITY = {"alpha": 0.85, "beta": 0.6, "gamma": 0.25}
RATERS = ("r1", "r2", "r3")


def dataset_lines() -> list[dict]:
    return [
        {"item": str(i), "source": src, "references": refs, "outputs": dict(zip(SYSTEMS, outs))}
        for i, (src, refs, outs) in enumerate(SENTENCES, start=1)
    ]


def text_of(item: str, system: str) -> str:
    return SENTENCES[int(item) - 1][2][SYSTEMS.index(system)]


def quality(rng: random.Random, system: str, spread: float = 0.12) -> float:
    return min(1.0, max(0.0, QUALITY[system] + rng.gauss(0, spread)))


def word_span(text: str, rng: random.Random) -> tuple[int, int]:
    """Character offsets of one word of the text (end exclusive)."""
    words = [(m_start, m_start + len(w)) for m_start, w in _words(text)]
    return rng.choice(words[1:] or words)


def _words(text: str):
    at = 0
    for word in text.split(" "):
        yield at, word.rstrip(".,;")
        at += len(word) + 1


def campaign_file(
    name: str, protocol: str, criteria: list[str], *, scale, options: dict, instructions: str, redundancy: int = 3
) -> dict:
    question = {
        "likert": "How well does the output convey the meaning of the source?",
        "rankme": "How good is each output, relative to the reference shown with magnitude 100?",
        "pairwise": "Which output is the better translation?",
        "bws": "Which output is the best translation, and which the worst?",
        "esa": "Mark the errors, then score the translation from 0 to 100.",
        "cesa": "Mark the errors of each translation, then score each from 0 to 100.",
        "mqm": "Mark every error with its category and severity.",
    }[protocol]
    config = [{"name": c, "question": question} for c in criteria]
    if scale[0] is not None:
        for c in config:
            c.update(scale_min=scale[0], scale_max=scale[1])
    return {
        "name": name,
        "dataset": name,
        "protocol": protocol,
        "criteria": criteria,
        "criteria_config": config,
        "scale": list(scale),
        "systems": list(SYSTEMS),
        "redundancy": redundancy,
        "instructions": instructions,
        "options": options,
        "units_per_batch": 8,
        "show_source": True,
        "show_reference": protocol == "rankme",
        "assignment_timeout_minutes": 60,
        "seed": 2026,
        "allocation": "overlap-first",
        "allocation_params": {},
    }


def likert(rng):
    lines = []
    for item, system, rater in itertools.product([str(i) for i in range(1, 9)], SYSTEMS, RATERS):
        score = min(5, max(1, round(1 + 4 * quality(rng, system))))
        lines.append({"item": item, "system": system, "annotator": rater, "criterion": "adequacy", "score": score})
    return lines


def rankme(rng):
    lines = []
    factor = {"r1": 1.0, "r2": 1.6, "r3": 0.7}  # each rater uses magnitudes on their own range
    for item, rater in itertools.product([str(i) for i in range(1, 9)], RATERS):
        shown = list(SYSTEMS)
        rng.shuffle(shown)
        scores = {s: round(factor[rater] * (40 + 120 * quality(rng, s)), 1) for s in SYSTEMS}
        for s in SYSTEMS:
            rank = 1 + sum(1 for o in SYSTEMS if scores[o] > scores[s])
            lines.append(
                {
                    "item": item,
                    "system": s,
                    "annotator": rater,
                    "criterion": "quality",
                    "score": scores[s],
                    "rank": rank,
                    "shown_order": shown,
                }
            )
    return lines


def pairwise(rng):
    lines = []
    for item, (a, b), rater in itertools.product(
        [str(i) for i in range(1, 9)], itertools.combinations(SYSTEMS, 2), RATERS
    ):
        if rng.random() < 0.5:
            a, b = b, a
        diff = quality(rng, a, 0.2) - quality(rng, b, 0.2)
        winner = "tie" if abs(diff) < 0.05 else "a" if diff > 0 else "b"
        lines.append({"item": item, "annotator": rater, "criterion": "overall", "a": a, "b": b, "winner": winner})
    return lines


def bws(rng):
    lines = []
    for item, rater in itertools.product([str(i) for i in range(1, 9)], RATERS):
        shown = list(SYSTEMS)
        rng.shuffle(shown)
        q = {s: quality(rng, s, 0.2) for s in shown}
        lines.append(
            {
                "item": item,
                "annotator": rater,
                "criterion": "overall",
                "outputs": shown,
                "best": max(shown, key=q.get),
                "worst": min(shown, key=q.get),
            }
        )
    return lines


def esa_spans(rng, text: str, q: float, severities=("minor", "major")) -> list[dict]:
    spans = []
    for _ in range(round((1 - q) * 3)):
        start, end = word_span(text, rng)
        if any(s["start"] == start for s in spans):
            continue
        spans.append({"start": start, "end": end, "severity": severities[1] if q < 0.4 else severities[0]})
    return sorted(spans, key=lambda s: s["start"])


def esa(rng, *, contrastive=False):
    lines = []
    for item, rater in itertools.product([str(i) for i in range(1, 9)], RATERS):
        shown = list(SYSTEMS)
        rng.shuffle(shown)
        for s in SYSTEMS:
            q = quality(rng, s)
            line = {
                "item": item,
                "system": s,
                "annotator": rater,
                "criterion": "quality",
                "score": min(100, max(0, round(100 * q))),
                "spans": esa_spans(rng, text_of(item, s), q),
            }
            if contrastive:
                line["shown_order"] = shown
            lines.append(line)
    return lines


MQM_ERRORS = [
    ("Accuracy/Mistranslation", True),
    ("Fluency/Grammar", True),
    ("Style/Awkward", True),
    ("Accuracy/Omission", False),
    ("Fluency/Punctuation", True),
]


def mqm_rows(rng) -> list[list[str]]:
    rows = []
    for item, s, rater in itertools.product([str(i) for i in range(1, 9)], SYSTEMS, RATERS):
        text, source = text_of(item, s), SENTENCES[int(item) - 1][0]
        q = quality(rng, s)
        errors = round((1 - q) * 3)
        if not errors:
            rows.append([s, "example", "1", item, rater, source, text, "No-error", "no-error"])
        used = set()
        for _ in range(errors):
            category, marked = rng.choice(MQM_ERRORS)
            severity = "Major" if q < 0.4 and rng.random() < 0.7 else "Minor"
            target = text
            if marked:
                start, end = word_span(text, rng)
                if start in used:
                    continue
                used.add(start)
                target = text[:start] + "<v>" + text[start:end] + "</v>" + text[end:]
            rows.append([s, "example", "1", item, rater, source, target, category, severity])
    return rows


EXAMPLES = {
    "likert": dict(
        criteria=["adequacy"],
        scale=(1, 5),
        options={},
        instructions="Rate how well each translation conveys the meaning of the German source, "
        "from 1 (none of it) to 5 (all of it).",
        lines=likert,
    ),
    "rankme": dict(
        criteria=["quality"],
        scale=(None, None),
        options={"anchor_value": 100.0, "tuple_size": 3},
        instructions="Give each translation a number: how good it is compared with the reference "
        "(shown with 100). Twice as good: twice the number.",
        lines=rankme,
    ),
    "pairwise": dict(
        criteria=["overall"],
        scale=(None, None),
        options={"pair_rounds": 0},
        instructions="Choose the better translation of the source, or a tie.",
        lines=pairwise,
    ),
    "bws": dict(
        criteria=["overall"],
        scale=(None, None),
        options={"tuple_size": 3},
        instructions="Of the three translations, choose the best and the worst.",
        lines=bws,
    ),
    "esa": dict(
        criteria=["quality"],
        scale=(0, 100),
        options={"severities": ["minor", "major"]},
        instructions="Mark each error (minor or major), then score the translation from 0 to 100.",
        lines=esa,
    ),
    "cesa": dict(
        criteria=["quality"],
        scale=(0, 100),
        options={"severities": ["minor", "major"], "tuple_size": 3},
        instructions="Three translations of one source side by side: mark the errors of each, then "
        "score each from 0 to 100.",
        lines=lambda rng: esa(rng, contrastive=True),
    ),
    "mqm": dict(
        criteria=["mqm"],
        scale=(None, None),
        options={"severities": ["neutral", "minor", "major"]},
        instructions="Mark every error with its MQM category and severity (WMT's guidelines).",
        lines=None,
    ),
}


def write_jsonl(path: Path, lines: list[dict]) -> None:
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")


def main() -> None:
    for index, (protocol, spec) in enumerate(EXAMPLES.items()):
        folder = HERE / protocol
        folder.mkdir(exist_ok=True)
        write_jsonl(folder / "dataset.jsonl", dataset_lines())
        config = campaign_file(
            f"example-{protocol}",
            protocol,
            spec["criteria"],
            scale=spec["scale"],
            options=spec["options"],
            instructions=spec["instructions"],
        )
        (folder / "campaign.json").write_text(json.dumps(config, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        rng = random.Random(1000 + index)
        if spec["lines"] is None:
            header = ["system", "doc", "doc_id", "seg_id", "rater", "source", "target", "category", "severity"]
            (folder / "judgements.tsv").write_text(
                "".join("\t".join(row) + "\n" for row in [header, *mqm_rows(rng)]), encoding="utf-8"
            )
        else:
            write_jsonl(folder / "judgements.jsonl", spec["lines"](rng))


if __name__ == "__main__":
    main()
