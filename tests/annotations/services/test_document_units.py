"""Campaign option context=document (issue 41): a unit is a whole document of one system (or, for
cESA, of 2-5 systems side by side), split into consecutive parts of at most `doc_max_segments`
segments; every segment judged on one screen. Planning, the exactly-k allocation and the
counterbalancing of the screen's system order, on the real engine."""

import random
from collections import Counter, defaultdict

import pytest
from django.core.exceptions import ValidationError

from annotations.models import Annotator, Item, Output, Unit
from annotations.protocols.base import chunks_even, document_segments
from annotations.services.assignments import assignment_next
from annotations.services.campaigns import campaign_create
from annotations.services.submissions import unit_submit
from annotations.services.units import campaign_units_count, campaign_units_plan
from tests.annotations.factories import DatasetFactory, ItemFactory, OutputFactory, SystemFactory, document_items

pytestmark = pytest.mark.django_db

# doc name -> number of segments (doc_pos with gaps, imported out of order: only the order counts).
DOCS = {"long": 13, "short": 3, "one": 1}


@pytest.fixture
def docs():
    dataset = DatasetFactory()
    systems = [SystemFactory(dataset=dataset, name=n) for n in ("alpha", "beta", "gamma")]
    position = 0
    for doc, n in DOCS.items():
        # Imported in reverse document order: planning follows doc_pos, not the file's order.
        sources = [f"{doc} {k}" for k in range(n)]
        document_items(dataset, systems, doc, sources, text="{system} {doc} {k}", position=position, doc_pos_step=5)
        position += n
    # A segment of no document is a unit of its own.
    loose = ItemFactory(dataset=dataset, position=position, source="loose 0")
    for system in systems:
        OutputFactory(item=loose, system=system, text=f"{system.name} loose 0")
    return dataset, systems


def _campaign(dataset, protocol="esa", redundancy=1, **options):
    extra = {"scale_min": 1, "scale_max": 5} if protocol == "likert" else {}
    return campaign_create(
        dataset=dataset,
        name=f"{protocol}-doc-{len(options)}-{redundancy}",
        protocol=protocol,
        criteria=["quality"],
        redundancy=redundancy,
        options={"context": "document", **options},
        **extra,
    )


def _segments_of(unit: Unit) -> list[list[int]]:
    starts = document_segments(list(unit.systems)) + [len(unit.outputs)]
    return [unit.outputs[a:b] for a, b in zip(starts, starts[1:])]


def _source(output_id: int) -> tuple[str, int]:
    doc, k = Output.objects.get(pk=output_id).item.source.split(" ")
    return doc, int(k)


def test_chunks_even_splits_at_most_n_in_order():
    # The rule the splitting follows: fewest parts of at most n, lengths within one, order kept.
    assert chunks_even(list(range(13)), 12, largest=12) == [list(range(7)), list(range(7, 13))]
    assert [len(p) for p in chunks_even(list(range(25)), 12, largest=12)] == [9, 8, 8]
    assert chunks_even(list(range(12)), 12, largest=12) == [list(range(12))]
    assert chunks_even([1, 2, 3], 1, largest=1) == [[1], [2], [3]]


def test_segment_boundaries_from_system_order():
    assert document_segments([4]) == [0]
    assert document_segments([1, 2, 3]) == [0]  # one segment of three systems
    assert document_segments([1, 2, 1, 2, 2, 1, 2]) == [0, 2, 4, 5]  # the third segment lacks system 1
    assert document_segments([7, 7, 7]) == [0, 1, 2]  # one system: every output its own segment


def test_esa_units_are_documents_of_one_system_split_in_order(docs):
    dataset, systems = docs
    campaign = _campaign(dataset, doc_max_segments=12)
    assert campaign_units_count(campaign=campaign) == 3 * (2 + 1 + 1 + 1)
    campaign_units_plan(campaign=campaign)  # done by campaign_create already: nothing more
    units = list(Unit.objects.filter(campaign=campaign))
    assert len(units) == 3 * 5
    parts = defaultdict(list)
    for unit in units:
        assert len(set(unit.systems)) == 1  # one system per unit
        segments = [_source(o) for o in unit.outputs]
        doc = segments[0][0]
        assert {d for d, _ in segments} == {doc}
        ks = [k for _, k in segments]
        assert ks == sorted(ks) and ks == list(range(ks[0], ks[0] + len(ks)))  # consecutive, in order
        assert len(ks) <= 12
        # The unit's item is its first segment.
        assert Item.objects.get(pk=unit.item_id).source == f"{doc} {ks[0]}"
        parts[(doc, unit.systems[0])].append(ks)
    for system in systems:
        # 13 segments at most 12: two parts of 7 and 6, covering the document once.
        assert sorted(parts[("long", system.pk)]) == [list(range(7)), list(range(7, 13))]
        assert parts[("short", system.pk)] == [[0, 1, 2]]
        assert parts[("one", system.pk)] == [[0]]
        assert parts[("loose", system.pk)] == [[0]]


def test_cesa_units_show_the_same_document_of_several_systems(docs):
    dataset, systems = docs
    campaign = _campaign(dataset, protocol="cesa", tuple_size=3, doc_max_segments=5)
    campaign_units_plan(campaign=campaign)
    units = list(Unit.objects.filter(campaign=campaign))
    # long: 13 segments at most 5 -> 5, 4, 4; short, one, loose: one unit each; all three systems each.
    assert len(units) == 3 + 1 + 1 + 1
    assert campaign_units_count(campaign=campaign) == len(units)
    ids = {s.pk for s in systems}
    for unit in units:
        segments = _segments_of(unit)
        assert len(segments) <= 5
        for segment in segments:
            # Every segment shows the three systems, of one item (the source side aligned).
            assert {Output.objects.get(pk=o).system_id for o in segment} == ids
            assert len({Output.objects.get(pk=o).item_id for o in segment}) == 1
        ks = [_source(s[0])[1] for s in segments]
        assert ks == list(range(ks[0], ks[0] + len(ks)))


def test_context_document_is_refused_by_protocols_without_it(docs):
    dataset, _ = docs
    with pytest.raises(ValidationError) as exc:
        _campaign(dataset, protocol="pairwise")
    assert "options.context: context=document needs a protocol that scores each output on its own" in str(exc.value)
    with pytest.raises(ValidationError) as exc:
        _campaign(dataset, doc_max_segments=0)
    assert "options.doc_max_segments: must be between 1 and 100" in str(exc.value)


def _shown_segments(unit: Unit, order: list[int]) -> list[list[int]]:
    starts = document_segments(list(unit.systems)) + [len(order)]
    return [order[a:b] for a, b in zip(starts, starts[1:])]


def test_exactly_k_per_document_unit_and_the_screen_order_is_counterbalanced(docs):
    dataset, systems = docs
    campaign = _campaign(dataset, protocol="cesa", redundancy=2, tuple_size=3, doc_max_segments=2)
    annotators = [Annotator.objects.create(project=dataset.project, name=f"a{i}") for i in range(3)]
    taken: Counter = Counter()
    first: dict[int, Counter] = defaultdict(Counter)
    rng = random.Random(1)
    active = list(annotators)
    while active:
        annotator = rng.choice(active)
        assignment, _ = assignment_next(campaign=campaign, annotator=annotator)
        if assignment is None:
            active.remove(annotator)
            continue
        unit = assignment.unit
        order = list(assignment.shown_order)
        shown = _shown_segments(unit, order)
        # Segments stay in document order (the same outputs as planned, per segment) ...
        assert [sorted(s) for s in shown] == [sorted(s) for s in _segments_of(unit)]
        # ... and every segment shows the systems in the one order chosen for the screen.
        system_of = dict(zip(unit.outputs, unit.systems))
        screen = [[system_of[o] for o in s] for s in shown]
        assert all(s == screen[0] for s in screen)
        first[annotator.pk][screen[0][0]] += 1
        taken[unit.pk] += 1
        answers = [{"criterion": "quality", "output": o, "score": 50.0, "spans": []} for o in order]
        unit_submit(annotator=annotator, assignment_id=assignment.pk, judgements=answers, shown_order=order)
    units = list(Unit.objects.filter(campaign=campaign, kind=Unit.Kind.REGULAR))
    # Exactly k = 2 annotators per document unit, never more.
    assert len(taken) == len(units) and set(taken.values()) == {2}
    assert all((u.n_taken, u.n_done) == (2, 2) for u in units)
    # Counterbalancing per annotator: each system shown first about equally often.
    for annotator in annotators:
        counts = [first[annotator.pk][s.pk] for s in systems]
        assert max(counts) - min(counts) <= 1, counts


def test_control_shares_are_taken_in_document_mode(docs):
    # Quality control in document mode copies whole document units (tests/annotations/quality/
    # test_document_controls.py): the shares and relative checks are accepted.
    from annotations.quality.services.settings import quality_settings_update

    dataset, _ = docs
    assert _campaign(dataset, protocol="cesa", relative_checks=0.2).options["relative_checks"] == 0.2
    campaign = _campaign(dataset)
    settings = quality_settings_update(campaign=campaign, degraded_share=0.1, repeat_share=0.1)
    assert (settings.degraded_share, settings.repeat_share) == (0.1, 0.1)
