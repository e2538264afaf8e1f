"""Gold (tutorial) units: set by the researcher, one at a time or from a JSONL file."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max

from annotations.models import Campaign, Item, Output
from annotations.models.quality import ControlUnit, GoldUnit
from annotations.protocols import registry as protocols
from annotations.protocols.common_options import CONTEXT_DOCUMENT, DOCUMENT_GOLD_REFUSAL
from annotations.quality import gold
from annotations.services.imports import ImportFailed, LineError
from workbench import strictjson
from workbench.exceptions import DomainError

# --- gold units ------------------------------------------------------------------------


def _unit_size_check(campaign: Campaign, outputs: list[Output]) -> None:
    n = len(outputs)
    protocol = protocols.of(campaign)
    low, high = protocol.unit_sizes
    if not low <= n <= high:
        shows = (
            {1: "one output", 2: "two outputs"}.get(low, f"{low} outputs")
            if low == high
            else f"{low} to {high} outputs"
        )
        raise ValidationError({"outputs": f"a {protocol.name} unit shows {shows}, got {n}"})


def _gold_document(campaign: Campaign, item: Item, outputs: list[Output]) -> tuple[Item, list[Output]]:
    """A gold unit in document mode (context=document): the whole document of `item`, the outputs
    of the systems of `outputs` in every segment, laid out as a regular document unit (segment by
    segment in document order, by system id within one): (its first segment, the outputs)."""
    if not item.doc:
        raise ValidationError({"item": DOCUMENT_GOLD_REFUSAL})
    protocol = protocols.of(campaign)
    segments = list(Item.objects.filter(dataset_id=item.dataset_id, doc=item.doc).order_by("doc_pos", "position", "id"))
    most = max(1, int(protocol.option(campaign, "doc_max_segments") or 12))
    if len(segments) > most:
        raise ValidationError(
            {
                "item": f"document {item.doc!r} has {len(segments)} segments; a unit shows at most {most} "
                "(doc_max_segments), and a gold unit is a whole document"
            }
        )
    systems = {o.system_id for o in outputs}
    found: dict[int, dict[int, Output]] = {}
    for output in Output.objects.filter(item__in=segments, system_id__in=systems).select_related("system"):
        found.setdefault(output.item_id, {})[output.system_id] = output
    ordered = []
    for segment in segments:
        mine = found.get(segment.pk, {})
        absent = sorted(o.system.name for o in outputs if o.system_id not in mine)
        if absent:
            raise ValidationError(
                {
                    "outputs": f"segment {segment.external_id!r} of document {item.doc!r} has no output of "
                    f"{', '.join(map(repr, absent))}: a gold document needs every segment's output"
                }
            )
        ordered += [mine[s] for s in sorted(mine)]
    return segments[0], ordered


@transaction.atomic
def gold_unit_create(
    *,
    campaign: Campaign,
    item: Item,
    outputs: list[Output],
    expected: dict,
    mode: str = GoldUnit.Mode.SILENT,
    explanation: str = "",
) -> GoldUnit:
    """A gold unit: these outputs of `item` with the expected answer (annotations.quality.gold).

    In document mode (context=document) it is the whole document of `item`: the outputs of the
    systems of `outputs` in every segment, each checked against the expected answer (the protocol's
    gold rule applied to every segment); the unit looks like a regular document unit."""
    protocol = protocols.of(campaign)
    refused = protocol.gold_refusal(campaign)
    if refused:
        raise ValidationError({"outputs": refused})
    if item.dataset_id != campaign.dataset_id:
        raise ValidationError({"item": "The item does not belong to this campaign's dataset."})
    if any(o.item_id != item.pk for o in outputs) or len({o.pk for o in outputs}) != len(outputs):
        raise ValidationError({"outputs": "The outputs must be different outputs of the item."})
    _unit_size_check(campaign, outputs)  # in document mode: each segment's outputs
    document = protocol.option(campaign, "context") == CONTEXT_DOCUMENT
    if document:
        item, outputs = _gold_document(campaign, item, outputs)
    if mode not in GoldUnit.Mode.values:
        raise ValidationError({"mode": "mode must be 'loud' or 'silent'"})
    if mode == GoldUnit.Mode.LOUD and not explanation.strip():
        raise ValidationError(
            {"explanation": "A loud (tutorial) unit needs an explanation to show after a wrong answer."}
        )
    # A document's outputs in the order shown (segment by segment); otherwise by id, as ever.
    ids = [o.pk for o in outputs] if document else sorted(o.pk for o in outputs)
    try:
        clean = gold.expectation_clean(campaign, expected, output_ids=ids, texts={o.pk: o.text for o in outputs})
    except gold.InvalidExpectation as exc:
        raise ValidationError({"expected": str(exc)}) from None
    position = (GoldUnit.objects.filter(campaign=campaign).aggregate(m=Max("position"))["m"] or 0) + 1
    unit = GoldUnit(
        campaign=campaign,
        item=item,
        outputs=ids,
        expected=clean,
        mode=mode,
        explanation=explanation.strip(),
        position=position,
    )
    unit.full_clean(exclude=["campaign", "item"])
    unit.save()
    return unit


@transaction.atomic
def gold_unit_delete(*, gold_unit: GoldUnit) -> None:
    """Remove a gold unit that nobody was shown yet (answers are never deleted)."""
    if ControlUnit.objects.filter(gold=gold_unit).exists():
        raise DomainError(
            "Annotators have already been shown this gold unit; it stays so their answers keep their meaning."
        )
    gold_unit.delete()


# --- gold units from a file -----------------------------------------------------------------------

GOLD_KEYS = {"item", "systems", "expected", "mode", "explanation"}
MAX_GOLD_LINE_CHARS = 100_000


def _gold_expected_by_name(expected, systems: dict[str, int]) -> tuple[dict | None, str | None]:
    """Expected answers naming systems ("winner": "sysA") -> the same with output ids."""
    if not isinstance(expected, dict):
        return None, 'expected must be an object keyed by criterion (or "*")'
    out = {}
    for criterion, spec in expected.items():
        if not isinstance(spec, dict):
            return None, f"expected[{criterion!r}] must be an object"
        spec = dict(spec)
        for key in ("winner", "best", "worst"):
            if key in spec and spec[key] != "tie":
                if spec[key] not in systems:
                    return None, f"expected[{criterion!r}].{key}: {spec[key]!r} is not one of the unit's systems"
                spec[key] = systems[spec[key]]
        out[criterion] = spec
    return out, None


@transaction.atomic
def gold_units_import(*, campaign: Campaign, text: str) -> list[GoldUnit]:
    """Gold units from JSONL, one a line, atomically (every problem reported as `line N: reason`)::

        {"item": "e2e-17", "systems": ["sysA"], "expected": {"*": {"min": 1, "max": 2}},
         "mode": "loud", "explanation": "The output names the wrong restaurant."}

    ``systems`` are the outputs shown (one for Likert and ESA, two for pairwise,
    a tuple for RankME and best-worst); pairwise and best-worst expectations
    name systems (``"winner": "sysA"``).
    """

    errors: list[LineError] = []
    created: list[GoldUnit] = []
    items = dict(Item.objects.filter(dataset_id=campaign.dataset_id).values_list("external_id", "id"))
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if len(line) > MAX_GOLD_LINE_CHARS:
            errors.append(LineError(number, f"line longer than {MAX_GOLD_LINE_CHARS} characters"))
            continue
        try:
            obj = strictjson.loads(line)
        except ValueError as exc:
            errors.append(LineError(number, f"not JSON ({getattr(exc, 'msg', exc)})"))
            continue
        if not isinstance(obj, dict):
            errors.append(LineError(number, "each line must be a JSON object"))
            continue
        unknown = sorted(set(obj) - GOLD_KEYS)
        missing = sorted({"item", "systems", "expected"} - set(obj))
        if unknown or missing:
            errors.append(
                LineError(
                    number,
                    "; ".join(
                        ([f"unknown field {', '.join(map(repr, unknown))}"] if unknown else [])
                        + ([f"missing field {', '.join(map(repr, missing))}"] if missing else [])
                    ),
                )
            )
            continue
        item_id = items.get(obj["item"]) if isinstance(obj["item"], str) else None
        if item_id is None:
            errors.append(LineError(number, f"unknown item {obj['item']!r} in dataset {campaign.dataset.name!r}"))
            continue
        names = obj["systems"]
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            errors.append(LineError(number, "systems must be a non-empty list of system names"))
            continue
        outputs = {
            o.system.name: o
            for o in Output.objects.filter(item_id=item_id, system__name__in=names).select_related("system")
        }
        absent = [n for n in names if n not in outputs]
        if absent:
            errors.append(LineError(number, f"no output of {', '.join(map(repr, absent))} for item {obj['item']!r}"))
            continue
        expected, problem = _gold_expected_by_name(obj["expected"], {n: outputs[n].pk for n in names})
        if problem:
            errors.append(LineError(number, problem))
            continue
        explanation = obj.get("explanation", "")
        if not isinstance(explanation, str):
            errors.append(LineError(number, "explanation must be text"))
            continue
        try:
            with transaction.atomic():
                created.append(
                    gold_unit_create(
                        campaign=campaign,
                        item=Item.objects.get(pk=item_id),
                        outputs=[outputs[n] for n in names],
                        expected=expected,
                        mode=obj.get("mode", GoldUnit.Mode.SILENT),
                        explanation=explanation,
                    )
                )
        except ValidationError as exc:
            errors += [LineError(number, m) for m in exc.messages]
    if errors:
        raise ImportFailed(errors)
    return created
