"""Four small demo datasets, one per task family the workbench targets.

* data-to-text: restaurant descriptions from attribute triples (E2E-style),
  generated from templates so every system has a recognisable behaviour
  (faithful, drops attributes, hallucinates);
* machine translation (German -> English), hand-written;
* text simplification, hand-written;
* speech recognition: reference transcripts, with hypotheses made by
  deterministic word errors (substitutions, deletions, insertions).

Everything is deterministic: the same bytes every run, so re-running
`load_demo` is a no-op for the importer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class DemoDataset:
    name: str
    description: str
    items: list[dict]

    def jsonl(self) -> bytes:
        return "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in self.items).encode("utf-8")


# --- Data-to-text -------------------------------------------------------------

RESTAURANTS = [
    # name, eatType, food, priceRange, customer rating, area, familyFriendly, near
    ("The Golden Ladle", "restaurant", "French", "high", "5 out of 5", "city centre", "no", "Riverside Bridge"),
    ("Blue Heron", "pub", "English", "moderate", "3 out of 5", "riverside", "yes", "The Old Mill"),
    ("Saffron Lane", "restaurant", "Indian", "cheap", "average", "city centre", "yes", None),
    ("The Copper Kettle", "coffee shop", "Italian", "less than £20", "low", "riverside", "yes", "Market Hall"),
    ("Maple & Thyme", "restaurant", "Japanese", "more than £30", "high", "city centre", "no", "Central Station"),
    ("The Drowsy Fox", "pub", "Fast food", "cheap", "1 out of 5", "riverside", "no", "Cathedral Green"),
    ("Olive Tree", "restaurant", "Italian", "moderate", "average", "riverside", "yes", None),
    ("Lantern House", "coffee shop", "Chinese", "£20-25", "high", "city centre", "yes", "The Old Mill"),
    ("The Quiet Harbour", "restaurant", "English", "high", "3 out of 5", "riverside", None, "Market Hall"),
    ("Red Finch", "pub", "French", "less than £20", "low", "city centre", "yes", None),
    ("Pebble Street Café", "coffee shop", "Fast food", "cheap", "5 out of 5", "riverside", "no", "Riverside Bridge"),
    (
        "The Silver Spoon",
        "restaurant",
        "Chinese",
        "more than £30",
        "1 out of 5",
        "city centre",
        "no",
        "Central Station",
    ),
]
FIELDS = ["eatType", "food", "priceRange", "customer rating", "area", "familyFriendly", "near"]


def _article(word: str) -> str:
    return "an" if word[0].lower() in "aeiou" else "a"


def _area_phrase(area: str) -> str:
    return "by the riverside" if area == "riverside" else f"in the {area}"


def _price_phrase(price: str) -> str:
    if price in ("cheap", "moderate", "high"):
        return {"cheap": "cheap", "moderate": "moderately priced", "high": "expensive"}[price]
    return f"priced {price}"


def _describe(attrs: dict, *, style: int, drop: tuple[str, ...] = (), extra: str = "") -> str:
    """A restaurant description in one of three sentence plans."""
    a = {k: v for k, v in attrs.items() if k not in drop and v is not None}
    name = a["name"]
    food = a.get("food")
    kind = a.get("eatType", "place")
    parts: list[str] = []
    if style == 0:
        head = f"{name} is {_article(food or kind)} {food + ' ' if food else ''}{kind}"
        if "area" in a:
            head += f" {_area_phrase(a['area'])}"
        if "near" in a:
            head += f" near {a['near']}"
        parts.append(head + ".")
        if "priceRange" in a:
            parts.append(f"It is {_price_phrase(a['priceRange'])}")
            if "customer rating" in a:
                parts[-1] += f" and has a customer rating of {a['customer rating']}"
            parts[-1] += "."
        elif "customer rating" in a:
            parts.append(f"It has a customer rating of {a['customer rating']}.")
        if "familyFriendly" in a:
            parts.append("It is family friendly." if a["familyFriendly"] == "yes" else "It is not family friendly.")
    elif style == 1:
        where = _area_phrase(a["area"]) if "area" in a else "in town"
        head = f"{where[0].upper()}{where[1:]}{' near ' + a['near'] if 'near' in a else ''}, there is {_article(kind)} {kind} called {name}"
        if food:
            head += f" that serves {food} food"
        parts.append(head + ".")
        bits = []
        if "customer rating" in a:
            bits.append(f"is rated {a['customer rating']}")
        if "priceRange" in a:
            bits.append(f"has a {a['priceRange']} price range")
        if "familyFriendly" in a:
            bits.append("welcomes children" if a["familyFriendly"] == "yes" else "is not kid friendly")
        if bits:
            parts.append("It " + ", ".join(bits[:-1]) + (" and " if len(bits) > 1 else "") + bits[-1] + ".")
    else:
        bits = [f"{name} ({kind}"]
        if food:
            bits[0] += f", {food}"
        bits[0] += ")"
        if "priceRange" in a:
            bits.append(f"prices: {a['priceRange']}")
        if "customer rating" in a:
            bits.append(f"rating {a['customer rating']}")
        if "area" in a:
            bits.append(a["area"])
        if "near" in a:
            bits.append(f"near {a['near']}")
        if "familyFriendly" in a:
            bits.append("family friendly" if a["familyFriendly"] == "yes" else "adults only")
        parts.append(", ".join(bits) + ".")
    text = " ".join(parts)
    return f"{text} {extra}".strip()


def _e2e_items() -> list[dict]:
    items = []
    for index, row in enumerate(RESTAURANTS, start=1):
        attrs = dict(zip(["name", *FIELDS], row))
        triples = [[attrs["name"], field, attrs[field]] for field in FIELDS if attrs[field] is not None]
        present = [f for f in FIELDS if attrs[f] is not None]
        # Systems with distinct, recognisable behaviour.
        dropped = tuple(
            present[index % len(present) :][:1] + (present[(index + 3) % len(present) :][:1] if index % 3 == 0 else [])
        )
        hallucination = ["It also offers free Wi-Fi.", "It is open until 2 am.", "It has a rooftop terrace."][index % 3]
        repeat = attrs["name"] + " " + attrs["name"].split()[-1].lower()
        seq2seq = _describe(attrs, style=0, drop=dropped)
        if index % 4 == 1:
            seq2seq = seq2seq.replace(attrs["name"], repeat, 1)
        items.append(
            {
                "item": f"e2e-{index:03d}",
                "data": triples,
                "references": [_describe(attrs, style=1), _describe(attrs, style=0)],
                "outputs": {
                    "template": _describe(attrs, style=2),
                    "seq2seq": seq2seq,
                    # Fluent paraphrase; every other one adds a fact not in the data.
                    "llm-7b": _describe(attrs, style=1, extra=hallucination if index % 2 else "")
                    .replace("there is", "you will find", 1)
                    .replace(" that serves", " serving", 1),
                },
                "meta": {"domain": "restaurants", "attributes": len(triples)},
            }
        )
    return items


# --- Machine translation (German -> English) ----------------------------------

MT = [
    (
        "Der Zug nach Hamburg hat heute zwanzig Minuten Verspätung.",
        ["The train to Hamburg is twenty minutes late today."],
        {
            "nmt-base": "The train to Hamburg is twenty minutes late today.",
            "nmt-large": "Today the train to Hamburg is delayed by twenty minutes.",
            "phrase-based": "The train after Hamburg has today twenty minutes delay.",
        },
    ),
    (
        "Könnten Sie mir bitte sagen, wo die nächste Apotheke ist?",
        ["Could you please tell me where the nearest pharmacy is?"],
        {
            "nmt-base": "Could you please tell me where the next pharmacy is?",
            "nmt-large": "Could you please tell me where the nearest pharmacy is?",
            "phrase-based": "Could you me please say, where the next pharmacy is?",
        },
    ),
    (
        "Die Regierung hat neue Maßnahmen zum Klimaschutz angekündigt.",
        ["The government has announced new measures to protect the climate."],
        {
            "nmt-base": "The government has announced new climate protection measures.",
            "nmt-large": "The government announced new measures for climate protection.",
            "phrase-based": "The government has new measures to climate protection announced.",
        },
    ),
    (
        "Wir haben das Wochenende bei meinen Großeltern auf dem Land verbracht.",
        ["We spent the weekend at my grandparents' place in the countryside."],
        {
            "nmt-base": "We spent the weekend with my grandparents in the country.",
            "nmt-large": "We spent the weekend at my grandparents' in the countryside.",
            "phrase-based": "We have the weekend at my grandparents on the land spent.",
        },
    ),
    (
        "Das Museum ist montags geschlossen, aber dienstags ist der Eintritt frei.",
        ["The museum is closed on Mondays, but admission is free on Tuesdays."],
        {
            "nmt-base": "The museum is closed on Mondays, but entry is free on Tuesdays.",
            "nmt-large": "The museum is closed on Mondays, but admission is free on Tuesdays.",
            "phrase-based": "The museum is Mondays closed, but Tuesdays is the entrance free.",
        },
    ),
    (
        "Ich habe meinen Regenschirm im Bus vergessen.",
        ["I left my umbrella on the bus."],
        {
            "nmt-base": "I forgot my umbrella on the bus.",
            "nmt-large": "I left my umbrella on the bus.",
            "phrase-based": "I have my umbrella in the bus forgotten.",
        },
    ),
    (
        "Nach dem Essen gingen alle zusammen am Fluss spazieren.",
        ["After the meal, everyone went for a walk along the river together."],
        {
            "nmt-base": "After dinner, everyone went for a walk by the river.",
            "nmt-large": "After the meal, everyone took a walk along the river together.",
            "phrase-based": "After the food went all together at the river walking.",
        },
    ),
    (
        "Die Ergebnisse der Studie wurden in einer Fachzeitschrift veröffentlicht.",
        ["The results of the study were published in a scientific journal."],
        {
            "nmt-base": "The results of the study were published in a journal.",
            "nmt-large": "The study's results were published in a specialist journal.",
            "phrase-based": "The results of the study were in a specialist magazine published.",
        },
    ),
    (
        "Kannst du mir helfen, den Schrank in den zweiten Stock zu tragen?",
        ["Can you help me carry the wardrobe up to the second floor?"],
        {
            "nmt-base": "Can you help me carry the cupboard to the second floor?",
            "nmt-large": "Can you help me carry the wardrobe up to the second floor?",
            "phrase-based": "Can you me help, the cupboard in the second floor to carry?",
        },
    ),
    (
        "Es hat die ganze Nacht geschneit, deshalb fällt die Schule aus.",
        ["It snowed all night, so school is cancelled."],
        {
            "nmt-base": "It snowed all night, so school is cancelled.",
            "nmt-large": "It has been snowing all night, so there is no school.",
            "phrase-based": "It has the whole night snowed, therefore falls the school out.",
        },
    ),
]


def _mt_items() -> list[dict]:
    return [
        {"item": f"mt-de-en-{i:03d}", "source": src, "references": refs, "outputs": outs, "meta": {"langpair": "de-en"}}
        for i, (src, refs, outs) in enumerate(MT, start=1)
    ]


# --- Simplification -------------------------------------------------------------

SIMPLIFICATION = [
    (
        "The committee postponed its decision until additional evidence could be obtained.",
        [
            "The committee waited to decide until it had more evidence.",
            "The committee put off its decision to get more evidence.",
        ],
        {
            "copy": "The committee postponed its decision until additional evidence could be obtained.",
            "lexical": "The committee delayed its decision until more evidence could be found.",
            "neural": "The committee will decide later, when it has more evidence.",
        },
    ),
    (
        "Despite the inclement weather, the ceremony proceeded as scheduled.",
        ["The ceremony went ahead as planned, even though the weather was bad."],
        {
            "copy": "Despite the inclement weather, the ceremony proceeded as scheduled.",
            "lexical": "Despite the bad weather, the ceremony went on as planned.",
            "neural": "The weather was bad. The ceremony still happened on time.",
        },
    ),
    (
        "The medication should be administered twice daily, preferably with food.",
        ["Take the medicine two times a day, if possible with food."],
        {
            "copy": "The medication should be administered twice daily, preferably with food.",
            "lexical": "The medicine should be given twice a day, best with food.",
            "neural": "Take the medicine two times a day with a meal.",
        },
    ),
    (
        "Residents were evacuated as a precautionary measure following the chemical spill.",
        ["People were moved out of their homes to be safe after the chemical spill."],
        {
            "copy": "Residents were evacuated as a precautionary measure following the chemical spill.",
            "lexical": "People living there were moved out to be safe after the chemical spill.",
            "neural": "After a chemical spill, people had to leave their homes.",
        },
    ),
    (
        "The novel's protagonist gradually comes to terms with the loss of her brother.",
        ["The main character of the book slowly accepts that her brother has died."],
        {
            "copy": "The novel's protagonist gradually comes to terms with the loss of her brother.",
            "lexical": "The book's main character slowly accepts the loss of her brother.",
            "neural": "In the book, a woman slowly gets over her brother's death.",
        },
    ),
    (
        "Applicants must demonstrate proficiency in at least two foreign languages.",
        ["People who apply must show they speak at least two other languages well."],
        {
            "copy": "Applicants must demonstrate proficiency in at least two foreign languages.",
            "lexical": "People who apply must show skill in at least two foreign languages.",
            "neural": "You need to speak two foreign languages to apply.",
        },
    ),
    (
        "The bridge was temporarily closed to facilitate essential maintenance work.",
        ["The bridge was closed for a short time so that important repairs could be done."],
        {
            "copy": "The bridge was temporarily closed to facilitate essential maintenance work.",
            "lexical": "The bridge was closed for a while to allow needed repair work.",
            "neural": "The bridge was shut for repairs.",
        },
    ),
    (
        "Consumption of sugary beverages has been associated with an elevated risk of diabetes.",
        ["Drinking sweet drinks has been linked to a higher risk of diabetes."],
        {
            "copy": "Consumption of sugary beverages has been associated with an elevated risk of diabetes.",
            "lexical": "Drinking sugary drinks has been linked with a higher risk of diabetes.",
            "neural": "Sweet drinks can make you more likely to get diabetes.",
        },
    ),
]


def _simplification_items() -> list[dict]:
    return [
        {"item": f"simp-{i:03d}", "source": src, "references": refs, "outputs": outs, "meta": {"genre": "news"}}
        for i, (src, refs, outs) in enumerate(SIMPLIFICATION, start=1)
    ]


# --- Speech recognition -------------------------------------------------------------

ASR_TRANSCRIPTS = [
    "please remind me to call the dentist tomorrow morning",
    "what is the weather going to be like in the afternoon",
    "turn off the lights in the living room",
    "add two pounds of apples and a loaf of bread to my shopping list",
    "how long does it take to drive from the airport to the city centre",
    "set a timer for twelve minutes",
    "play the latest episode of the history podcast",
    "send a message to anna saying i will be ten minutes late",
]
# Confusions a recogniser plausibly makes (reference word -> hypothesis word).
CONFUSIONS = {
    "dentist": "dentists",
    "weather": "whether",
    "lights": "light",
    "two": "to",
    "pounds": "pound",
    "drive": "dry",
    "twelve": "twenty",
    "latest": "last",
    "anna": "anna's",
    "morning": "mornings",
    "afternoon": "after noon",
    "episode": "episodes",
    "minutes": "minute",
    "loaf": "love",
}


def _corrupt(words: list[str], *, every: int, offset: int, mode: str) -> str:
    out: list[str] = []
    for i, word in enumerate(words):
        hit = (i + offset) % every == 0
        if hit and mode == "sub" and word in CONFUSIONS:
            out.append(CONFUSIONS[word])
        elif hit and mode == "del" and len(word) <= 3:
            continue
        elif hit and mode == "ins":
            out.extend([word, "uh"])
        else:
            out.append(word)
    return " ".join(out)


def _asr_items() -> list[dict]:
    items = []
    for i, ref in enumerate(ASR_TRANSCRIPTS, start=1):
        words = ref.split()
        items.append(
            {
                "item": f"asr-{i:03d}",
                "references": [ref],
                "outputs": {
                    "whisper-small": _corrupt(words, every=5, offset=i, mode="sub"),
                    "ctc-base": _corrupt(
                        _corrupt(words, every=2, offset=i, mode="sub").split(), every=3, offset=i, mode="del"
                    ),
                },
                "meta": {"audio": f"utt-{i:03d}.wav", "speaker": f"spk{(i % 3) + 1}"},
            }
        )
    return items


def demo_datasets() -> list[DemoDataset]:
    return [
        DemoDataset(
            "demo-restaurants-d2t",
            "Data-to-text: restaurant descriptions from attribute triples (E2E-style).",
            _e2e_items(),
        ),
        DemoDataset("demo-news-de-en", "Machine translation, German to English.", _mt_items()),
        DemoDataset("demo-simplification", "Sentence simplification.", _simplification_items()),
        DemoDataset("demo-voice-asr", "Speech recognition: transcripts of short voice commands.", _asr_items()),
    ]
