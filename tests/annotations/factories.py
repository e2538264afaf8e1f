"""factory_boy factories for the annotation models.

Each builds a coherent row by default (a unit's item in its campaign's dataset,
an assignment's annotator in the campaign's project, a judgement's outputs of
one item of its campaign's dataset); pass the rows a test cares about and let
the rest be made. Judgements take their campaign's scale and first criterion."""

import factory
from django.contrib.auth import get_user_model
from django.db.models import F
from django.utils import timezone

from annotations.models import (
    Annotator,
    Assignment,
    BestWorstJudgement,
    Campaign,
    Dataset,
    ErrorSpan,
    Item,
    JudgementBase,
    Membership,
    Output,
    PairwiseJudgement,
    Project,
    RatingJudgement,
    Reference,
    SpanJudgement,
    System,
    Unit,
)


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.PostGenerationMethodCall("set_password", "pw-123456")


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Project

    name = factory.Sequence(lambda n: f"project-{n}")


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    project = factory.SubFactory(ProjectFactory)
    user = factory.SubFactory(UserFactory)
    role = Membership.Role.RESEARCHER


class DatasetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Dataset

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"dataset-{n}")


class ItemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Item

    dataset = factory.SubFactory(DatasetFactory)
    external_id = factory.Sequence(lambda n: f"item-{n}")
    position = factory.Sequence(lambda n: n)
    source = factory.Faker("sentence")


class ReferenceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Reference

    item = factory.SubFactory(ItemFactory)
    position = factory.Sequence(lambda n: n)
    text = factory.Faker("sentence")


class SystemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = System

    dataset = factory.SubFactory(DatasetFactory)
    name = factory.Sequence(lambda n: f"sys{n}")


class OutputFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Output

    item = factory.SubFactory(ItemFactory)
    system = factory.SubFactory(SystemFactory, dataset=factory.SelfAttribute("..item.dataset"))
    text = factory.Faker("sentence")


class CampaignFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Campaign

    dataset = factory.SubFactory(DatasetFactory)
    name = factory.Sequence(lambda n: f"campaign-{n}")
    protocol = "likert"
    criteria = factory.LazyFunction(lambda: ["fluency"])
    scale_min = 1
    scale_max = 5

    @classmethod
    def _adjust_kwargs(cls, **kwargs):
        # A protocol's options given by name (tuple_size=2) go into `options`, as campaign_create takes them.
        fields = {f.name for f in Campaign._meta.get_fields()} | {f.attname for f in Campaign._meta.concrete_fields}
        extra = {k: kwargs.pop(k) for k in list(kwargs) if k not in fields}
        if extra:
            kwargs["options"] = {**kwargs.get("options", {}), **extra}
        return kwargs


class AnnotatorFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Annotator

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"annotator-{n}")
    namespace = factory.LazyAttribute(
        lambda o: Annotator.Namespace.ACCOUNT if o.user is not None else Annotator.Namespace.IMPORT
    )
    user = None


def _output_ids(item: Item) -> list[int]:
    return sorted(item.outputs.values_list("pk", flat=True))


def _system_ids(output_ids: list[int]) -> list[int]:
    system_of = dict(Output.objects.filter(pk__in=output_ids).values_list("pk", "system_id"))
    return [system_of[pk] for pk in output_ids]


class UnitFactory(factory.django.DjangoModelFactory):
    """A planned unit: by default every output its item has (sorted ids), with their systems."""

    class Meta:
        model = Unit

    campaign = factory.SubFactory(CampaignFactory)
    item = factory.SubFactory(ItemFactory, dataset=factory.SelfAttribute("..campaign.dataset"))
    outputs = factory.LazyAttribute(lambda o: _output_ids(o.item))
    systems = factory.LazyAttribute(lambda o: _system_ids(o.outputs))
    position = factory.Sequence(lambda n: n)
    redundancy = factory.SelfAttribute("campaign.redundancy")


class AssignmentFactory(factory.django.DjangoModelFactory):
    """A unit handed to an annotator (campaign and item are the unit's). A live one
    (pending or done) is counted in the unit's `n_taken` (and `n_done`), as
    `assignment_next` and the submit do, so the database's checks still hold."""

    class Meta:
        model = Assignment

    unit = factory.SubFactory(UnitFactory)
    campaign = factory.SelfAttribute("unit.campaign")
    item = factory.SelfAttribute("unit.item")
    annotator = factory.SubFactory(AnnotatorFactory, project=factory.SelfAttribute("..campaign.dataset.project"))
    status = Assignment.Status.PENDING
    shown_order = factory.LazyAttribute(lambda o: list(o.unit.outputs))
    # Handed out now: the server's clock of the time on the unit runs while it is pending.
    active_since = factory.LazyAttribute(lambda o: timezone.now() if o.status == Assignment.Status.PENDING else None)

    @factory.post_generation
    def counted(obj, create, extracted, **kwargs):
        if create and obj.unit_id is not None and obj.status in Assignment.LIVE:
            done = int(obj.status == Assignment.Status.DONE)
            Unit.objects.filter(pk=obj.unit_id).update(n_taken=F("n_taken") + 1, n_done=F("n_done") + done)
            obj.unit.refresh_from_db(fields=["n_taken", "n_done"])


class _JudgementFactory(factory.django.DjangoModelFactory):
    """Fields every judgement has; `item` comes from the judged output(s)."""

    class Meta:
        abstract = True

    campaign = factory.SubFactory(CampaignFactory)
    annotator = factory.SubFactory(AnnotatorFactory, project=factory.SelfAttribute("..campaign.dataset.project"))
    criterion = factory.LazyAttribute(lambda o: o.campaign.criteria[0])
    origin = JudgementBase.Origin.IMPORT


def _campaign_output():
    """An output of a new item of the judgement's campaign's dataset."""
    return factory.SubFactory(OutputFactory, item__dataset=factory.SelfAttribute("...campaign.dataset"))


def _same_item_output(first: str):
    """Another output (of another system) of the item of the judgement's output `first`."""
    return factory.SubFactory(OutputFactory, item=factory.SelfAttribute(f"..{first}.item"))


class RatingJudgementFactory(_JudgementFactory):
    """A Likert / direct-assessment / RankME score of one output (the scale's top by default)."""

    class Meta:
        model = RatingJudgement

    output = _campaign_output()
    item = factory.SelfAttribute("output.item")
    scale_min = factory.SelfAttribute("campaign.scale_min")
    scale_max = factory.SelfAttribute("campaign.scale_max")
    score = factory.LazyAttribute(lambda o: o.scale_max if o.scale_max is not None else 1.0)


class PairwiseJudgementFactory(_JudgementFactory):
    """A preference between two outputs of one item (stored with output_a.id < output_b.id)."""

    class Meta:
        model = PairwiseJudgement

    campaign = factory.SubFactory(CampaignFactory, protocol="pairwise", scale_min=None, scale_max=None)
    output_a = _campaign_output()
    output_b = _same_item_output("output_a")
    item = factory.SelfAttribute("output_a.item")
    winner = PairwiseJudgement.Winner.A
    shown_order = factory.LazyAttribute(lambda o: [o.output_a.pk, o.output_b.pk])


class BestWorstJudgementFactory(_JudgementFactory):
    """Best and worst of a tuple (by default the tuple is just those two outputs)."""

    class Meta:
        model = BestWorstJudgement

    campaign = factory.SubFactory(CampaignFactory, protocol="bws", scale_min=None, scale_max=None)
    best = _campaign_output()
    worst = _same_item_output("best")
    item = factory.SelfAttribute("best.item")
    outputs = factory.LazyAttribute(lambda o: sorted({o.best.pk, o.worst.pk}))
    tuple_key = factory.LazyAttribute(lambda o: "-".join(str(pk) for pk in sorted(o.outputs)))


class SpanJudgementFactory(_JudgementFactory):
    """An ESA judgement of one output: its 0-100 score; spans come from ErrorSpanFactory."""

    class Meta:
        model = SpanJudgement

    campaign = factory.SubFactory(
        CampaignFactory,
        protocol="esa",
        criteria=["quality"],
        scale_min=0,
        scale_max=100,
        severities=["minor", "major", "critical"],
    )
    output = _campaign_output()
    item = factory.SelfAttribute("output.item")
    scale_min = factory.SelfAttribute("campaign.scale_min")
    scale_max = factory.SelfAttribute("campaign.scale_max")
    score = 50.0


class ErrorSpanFactory(factory.django.DjangoModelFactory):
    """A minor error over the output's first character; `missing_content=True` for a marker with no offsets."""

    class Meta:
        model = ErrorSpan

    class Params:
        missing_content = factory.Trait(missing=True, start=None, end=None)

    judgement = factory.SubFactory(SpanJudgementFactory)
    start = 0
    end = 1
    severity = ErrorSpan.Severity.MINOR
    missing = False


def document_items(
    dataset: Dataset,
    systems: list[System],
    doc: str,
    sources: list[str],
    *,
    text: str,
    position: int = 0,
    doc_pos_step: int = 1,
    reverse: bool = True,
    reference: str | None = None,
    external_id: str | None = None,
) -> list[Item]:
    """The segments of document `doc`: segment k has source `sources[k]`, doc_pos k * doc_pos_step and
    one output per system whose text is `text` formatted with doc, k, system (its name) and s (its
    index); `reference` and `external_id`, when given, are formatted alike. Made in reverse document
    order unless `reverse=False` (what plans documents must follow doc_pos, not the file's order), the
    positions counting up from `position` in the order made. Returns the items in document order."""
    items = {}
    order = reversed(range(len(sources))) if reverse else range(len(sources))
    for made, k in enumerate(order):
        fields = {"external_id": external_id.format(doc=doc, k=k)} if external_id else {}
        item = ItemFactory(
            dataset=dataset, position=position + made, source=sources[k], doc=doc, doc_pos=doc_pos_step * k, **fields
        )
        if reference is not None:
            ReferenceFactory(item=item, position=0, text=reference.format(doc=doc, k=k))
        for s, system in enumerate(systems):
            OutputFactory(item=item, system=system, text=text.format(doc=doc, k=k, system=system.name, s=s))
        items[k] = item
    return [items[k] for k in sorted(items)]


QUALITY_0_100 = {"name": "quality", "scale_min": 0, "scale_max": 100}


def campaign_form_data(dataset: Dataset, *criteria: dict, **fields) -> dict:
    """The campaign set-up page's POST (`campaign-new`) as a researcher sends it: `dataset`, the page's
    defaults (redundancy 1, 5 units a batch, sources shown, no instructions), one criterion form per
    `criteria` dict (its fields: name, scale_min, scale_max, question, widget; by default one 0-100
    "quality"), then `fields` (name, protocol, systems, action, ...) added or replacing the defaults."""
    criteria = criteria or (QUALITY_0_100,)
    data = {
        "dataset": dataset.pk,
        "redundancy": 1,
        "units_per_batch": 5,
        "show_source": "on",
        "pair_rounds": 0,
        "assignment_timeout_minutes": 30,
        "instructions": "",
        "criteria-TOTAL_FORMS": len(criteria),
        "criteria-INITIAL_FORMS": 0,
        "criteria-MIN_NUM_FORMS": 1,
        "criteria-MAX_NUM_FORMS": 20,
    }
    for k, criterion in enumerate(criteria):
        data.update({f"criteria-{k}-{key}": value for key, value in criterion.items()})
    return {**data, **fields}
