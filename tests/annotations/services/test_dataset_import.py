import json

import pytest
from django.core.exceptions import PermissionDenied

from annotations.models import Dataset, Item, Output, Reference, System
from annotations.services.imports import ImportFailed, dataset_import
from tests.annotations.factories import DatasetFactory, MembershipFactory, ProjectFactory, UserFactory
from tests.annotations.services.dbstate import table_counts


def jsonl(*objects) -> bytes:
    return "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objects).encode("utf-8")


ITEMS = [
    {
        "item": "e1",
        "source": "Le chat dort.",
        "data": [["Blue Spice", "eatType", "pub"]],
        "references": ["The cat sleeps.", "A cat is sleeping."],
        "outputs": {"sysA": "cat sleep", "sysB": "The cat sleeps"},
        "meta": {"split": "test"},
    },
    {"item": "e2", "source": "Il pleut.", "references": ["It rains."], "outputs": {"sysA": "rain"}},
    {"item": 3, "source": "Rien."},
]

CSV = (
    "item,source,data,meta,reference,reference_2,output:sysA,output:sysB\n"
    'e1,Le chat dort.,"[[""Blue Spice"", ""eatType"", ""pub""]]","{""split"": ""test""}",'
    "The cat sleeps.,A cat is sleeping.,cat sleep,The cat sleeps\n"
    "e2,Il pleut.,,,It rains.,,rain,\n"
    "3,Rien.,,,,,,\n"
).encode("utf-8")


def _assert_items_stored(dataset_name: str):
    dataset = Dataset.objects.get(name=dataset_name)
    items = list(Item.objects.filter(dataset=dataset).order_by("position"))
    assert [i.external_id for i in items] == ["e1", "e2", "3"]
    e1 = items[0]
    assert e1.source == "Le chat dort." and e1.data == [["Blue Spice", "eatType", "pub"]]
    assert e1.meta == {"split": "test"}
    assert [r.text for r in e1.references.order_by("position")] == ["The cat sleeps.", "A cat is sleeping."]
    assert {o.system.name: o.text for o in e1.outputs.all()} == {"sysA": "cat sleep", "sysB": "The cat sleeps"}
    assert {o.system.name: o.text for o in items[1].outputs.all()} == {"sysA": "rain"}
    assert items[2].outputs.count() == 0 and items[2].references.count() == 0
    assert sorted(System.objects.filter(dataset=dataset).values_list("name", flat=True)) == ["sysA", "sysB"]


@pytest.mark.django_db
@pytest.mark.parametrize("fmt, content", [("jsonl", jsonl(*ITEMS)), ("csv", CSV)])
def test_import_stores_items_references_and_outputs(fmt, content):
    result = dataset_import(stream=content, dataset_name="d", fmt=fmt)
    assert (result.items, result.outputs, result.created, result.unchanged) == (3, 3, True, False)
    assert result.extra["outputs_created"] == 3 and result.extra["references_created"] == 3
    assert result.dataset.project.name == "default"
    _assert_items_stored("d")


@pytest.mark.django_db
@pytest.mark.parametrize("fmt, content", [("jsonl", jsonl(*ITEMS)), ("csv", CSV)])
def test_reimporting_the_same_file_is_a_reported_no_op(fmt, content):
    dataset_import(stream=content, dataset_name="d", fmt=fmt)
    before = table_counts()
    result = dataset_import(stream=content, dataset_name="d", fmt=fmt)
    assert result.unchanged and not result.created
    assert result.extra["items_created"] == result.extra["outputs_created"] == 0
    assert table_counts() == before


@pytest.mark.django_db
def test_csv_and_jsonl_of_the_same_content_are_the_same_dataset():
    dataset_import(stream=jsonl(*ITEMS), dataset_name="d", fmt="jsonl")
    assert dataset_import(stream=CSV, dataset_name="d", fmt="csv").unchanged


@pytest.mark.django_db
def test_a_second_file_adds_a_new_system_and_new_items():
    dataset_import(stream=jsonl(*ITEMS), dataset_name="d")
    extra = jsonl(
        {"item": "e1", "outputs": {"sysC": "the cat is asleep"}},
        {"item": "e2", "source": "Il pleut.", "outputs": {"sysA": "rain", "sysC": "it rains"}},
        {"item": "e4", "source": "Nouveau.", "outputs": {"sysC": "new"}},
    )
    result = dataset_import(stream=extra, dataset_name="d")
    assert not result.unchanged
    assert result.extra == {**result.extra, "items_created": 1, "outputs_created": 3, "systems_created": 1}
    assert Output.objects.filter(system__name="sysC").count() == 3
    assert Item.objects.get(external_id="e4").position > Item.objects.get(external_id="3").position
    # Absent fields are not compared: e1 keeps its source and references.
    assert Item.objects.get(external_id="e1").source == "Le chat dort."
    assert Reference.objects.filter(item__external_id="e1").count() == 2


def _bad_jsonl_cases():
    good = {"item": "x1", "source": "s", "outputs": {"A": "a"}}
    return [
        ("invalid json", jsonl(good) + b'{"item": "x2", \n', 2, "invalid JSON"),
        ("not an object", jsonl(good) + b'["x2"]\n', 2, "expected a JSON object"),
        ("missing item", jsonl(good, {"source": "s"}), 2, "missing field 'item'"),
        ("empty item", jsonl(good, {"item": " "}), 2, "item must be a non-empty string"),
        ("item not a string", jsonl(good, {"item": ["x"]}), 2, "item must be a non-empty string"),
        ("unknown field", jsonl(good, {"item": "x2", "output": {"A": "a"}}), 2, "unknown field 'output'"),
        ("references not a list", jsonl(good, {"item": "x2", "references": "r"}), 2, "references must be a list"),
        ("empty reference", jsonl(good, {"item": "x2", "references": ["r", ""]}), 2, "reference 2 is empty"),
        (
            "output not text",
            jsonl(good, {"item": "x2", "outputs": {"A": 3}}),
            2,
            "output of system 'A' must be a string",
        ),
        ("outputs not an object", jsonl(good, {"item": "x2", "outputs": ["a"]}), 2, "outputs must be an object"),
        ("bad data", jsonl(good, {"item": "x2", "data": [["s", "p"]]}), 2, "data must be a list of"),
        ("meta not an object", jsonl(good, {"item": "x2", "meta": [1]}), 2, "meta must be an object"),
        ("NaN", jsonl(good) + b'{"item": "x2", "meta": {"v": NaN}}\n', 2, "NaN is not allowed"),
        ("NUL", jsonl(good, {"item": "x2", "source": "a\x00b"}), 2, "NUL character"),
        ("duplicate item", jsonl(good, {"item": "x2"}, {"item": "x1"}), 3, "duplicate item id 'x1' (first on line 1)"),
        ("not UTF-8", jsonl(good) + '{"item": "x2", "source": "café"}\n'.encode("latin-1"), 2, "not valid UTF-8"),
        (
            "too long",
            jsonl(good, {"item": "x2", "outputs": {"A": "a" * 101}}),
            2,
            "101 characters long; the limit is 100",
        ),
        ("too long reference", jsonl(good, {"item": "x2", "references": ["r" * 101]}), 2, "reference 1 is 101"),
    ]


@pytest.fixture
def existing_dataset(db):
    """Something already in the database, which a failed import must leave alone."""
    dataset_import(stream=jsonl({"item": "x1", "source": "s", "outputs": {"A": "a"}}), dataset_name="d")
    return table_counts()


@pytest.mark.django_db
@pytest.mark.parametrize("case, content, line, reason", _bad_jsonl_cases(), ids=[c[0] for c in _bad_jsonl_cases()])
@pytest.mark.parametrize("dataset_name", ["d", "new"])
def test_bad_jsonl_gives_line_error_and_writes_nothing(existing_dataset, case, content, line, reason, dataset_name):
    with pytest.raises(ImportFailed) as exc:
        dataset_import(stream=content, dataset_name=dataset_name, fmt="jsonl", max_text_chars=100)
    assert [e.line for e in exc.value.errors] == [line], exc.value.errors
    assert reason in exc.value.errors[0].reason
    assert str(exc.value.errors[0]).startswith(f"line {line}: ")
    assert table_counts() == existing_dataset


@pytest.mark.django_db
def test_every_bad_line_is_reported_not_only_the_first(existing_dataset):
    content = jsonl({"item": "ok"}) + b"nope\n" + jsonl({"item": "ok2"}, {"item": ""}) + b"\n" + jsonl({"item": "ok"})
    with pytest.raises(ImportFailed) as exc:
        dataset_import(stream=content, dataset_name="d")
    assert [e.line for e in exc.value.errors] == [2, 4, 6]
    assert table_counts() == existing_dataset


@pytest.mark.django_db
def test_default_text_limit_comes_from_settings(settings, existing_dataset):
    settings.WORKBENCH_MAX_TEXT_CHARS = 5
    with pytest.raises(ImportFailed, match="limit is 5"):
        dataset_import(stream=jsonl({"item": "y", "source": "123456"}), dataset_name="d")
    assert (
        dataset_import(stream=jsonl({"item": "y", "source": "123456"}), dataset_name="d", max_text_chars=6).extra[
            "items_created"
        ]
        == 1
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    "content, line, reason",
    [
        (jsonl({"item": "x1", "source": "other"}), 1, "different source"),
        (jsonl({"item": "x1", "outputs": {"A": "changed"}}), 1, "different output of system 'A'"),
        (jsonl({"item": "x2"}, {"item": "x1", "meta": {"k": 1}}), 2, "different meta"),
    ],
)
def test_conflicting_content_in_an_existing_dataset_is_a_line_error(existing_dataset, content, line, reason):
    with pytest.raises(ImportFailed) as exc:
        dataset_import(stream=content, dataset_name="d")
    assert [(e.line, reason in e.reason) for e in exc.value.errors] == [(line, True)]
    assert table_counts() == existing_dataset


@pytest.mark.django_db
def test_conflicting_references_are_refused_but_missing_ones_added():
    dataset_import(stream=jsonl({"item": "a", "references": ["r1"]}, {"item": "b"}), dataset_name="d")
    before = table_counts()
    with pytest.raises(ImportFailed, match="different references"):
        dataset_import(stream=jsonl({"item": "a", "references": ["r1", "r2"]}), dataset_name="d")
    assert table_counts() == before
    dataset_import(stream=jsonl({"item": "b", "references": ["rb"]}), dataset_name="d")
    assert list(Reference.objects.filter(item__external_id="b").values_list("text", flat=True)) == ["rb"]


def _bad_csv_cases():
    header = "item,source,reference,output:A\n"
    return [
        ("unknown column", "item,source,refs\nx2,s,r\n", 1, "unknown column 'refs'"),
        ("no item column", "source,output:A\ns,a\n", 1, "missing column 'item'"),
        ("duplicate column", "item,item\nx2,x3\n", 1, "duplicate column item"),
        ("wrong column count", header + "x2,s,r\n", 2, "expected 4 columns"),
        ("bad JSON cell", 'item,data\nx2,"[[1,"\nx3,[]\n', 2, "column data: invalid JSON"),
        ("duplicate item", header + "x2,s,r,a\nx3,s,r,a\nx2,s,r,a\n", 4, "duplicate item id 'x2' (first on line 2)"),
        ("not UTF-8", (header + "x2,café,r,a\n"), 2, "not valid UTF-8"),
        ("too long", header + "x2,s,r," + "a" * 101 + "\n", 2, "output of system 'A' is 101 characters"),
        ("empty item", header + ",s,r,a\n", 2, "item must be a non-empty string"),
        ("after multi-line cell", header + 'x2,"two\nlines",r,a\nx3,s,r,' + "a" * 101 + "\n", 4, "101 characters"),
    ]


@pytest.mark.django_db
@pytest.mark.parametrize("case, content, line, reason", _bad_csv_cases(), ids=[c[0] for c in _bad_csv_cases()])
def test_bad_csv_gives_line_error_and_writes_nothing(existing_dataset, case, content, line, reason):
    raw = content.encode("latin-1" if case == "not UTF-8" else "utf-8")
    with pytest.raises(ImportFailed) as exc:
        dataset_import(stream=raw, dataset_name="d", fmt="csv", max_text_chars=100)
    assert [e.line for e in exc.value.errors] == [line], exc.value.errors
    assert reason in exc.value.errors[0].reason
    assert table_counts() == existing_dataset


@pytest.mark.django_db
def test_format_is_guessed_from_the_file_name_and_tsv_is_tab_separated(tmp_path):
    path = tmp_path / "data.tsv"
    path.write_text("item\tsource\toutput:A\nx\thello, world\tbonjour\n", encoding="utf-8")
    result = dataset_import(stream=path, dataset_name="t")
    assert result.items == 1 and Item.objects.get(external_id="x").source == "hello, world"


@pytest.mark.django_db
def test_whole_file_problems(existing_dataset):
    other = ProjectFactory(name="elsewhere")
    existing_dataset = table_counts()
    with pytest.raises(ImportFailed, match="holds no items"):
        dataset_import(stream=b"\n\n", dataset_name="d")
    with pytest.raises(ImportFailed, match="empty: expected a header"):
        dataset_import(stream=b"", dataset_name="d", fmt="csv")
    with pytest.raises(ImportFailed, match="unknown format"):
        dataset_import(stream=b"{}", dataset_name="d", fmt="xml")
    with pytest.raises(ImportFailed, match="already exists in project 'default'"):
        dataset_import(stream=jsonl({"item": "z"}), dataset_name="d", project_name=other.name)
    assert table_counts() == existing_dataset


@pytest.mark.django_db
def test_only_project_staff_may_import_and_a_new_project_is_owned_by_its_creator():
    member = MembershipFactory(role="annotator")
    dataset = DatasetFactory(project=member.project)
    with pytest.raises(PermissionDenied):
        dataset_import(stream=jsonl({"item": "z"}), dataset_name=dataset.name, user=member.user)
    with pytest.raises(PermissionDenied):
        dataset_import(
            stream=jsonl({"item": "z"}), dataset_name="new", project_name=member.project.name, user=member.user
        )
    user = UserFactory()
    result = dataset_import(stream=jsonl({"item": "z"}), dataset_name="mine", project_name="mine", user=user)
    assert result.dataset.project.memberships.get(user=user).role == "owner"


@pytest.mark.django_db
def test_checks_span_batches_of_a_streamed_file(monkeypatch):
    """Batches of two items: a duplicate id three batches later, and a conflict with an item of
    the dataset read in a later batch, are still found, and the batches written before roll back."""
    from annotations.services.imports import datasets

    monkeypatch.setattr(datasets, "STREAM_BATCH_ITEMS", 2)
    dataset_import(stream=jsonl({"item": "s", "source": "stored"}), dataset_name="d")
    before = table_counts()
    lines = [{"item": f"i{n}", "source": f"x{n}", "outputs": {"A": f"a{n}"}} for n in range(6)]
    lines += [{"item": "i0", "source": "again"}, {"item": "s", "source": "changed"}]
    with pytest.raises(ImportFailed) as failed:
        dataset_import(stream=jsonl(*lines), dataset_name="d")
    assert [str(e) for e in failed.value.errors] == [
        "line 7: duplicate item id 'i0' (first on line 1)",
        "line 8: item 's' already exists with a different source",
    ]
    assert table_counts() == before
    result = dataset_import(stream=jsonl(*lines[:6]), dataset_name="d")
    assert result.as_json()["items_created"] == 6
    assert list(Item.objects.filter(dataset__name="d").order_by("position").values_list("external_id", flat=True)) == [
        "s",
        *[f"i{n}" for n in range(6)],
    ]
