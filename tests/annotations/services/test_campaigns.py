import pytest
from django.core.exceptions import ValidationError

from annotations.models import Campaign
from annotations.services.campaigns import campaign_create, scale_parse
from tests.annotations.factories import DatasetFactory


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1-5", (1, 5)),
        ("0-100", (0, 100)),
        ("-3-3", (-3, 3)),
        ("-3--1", (-3, -1)),
        ("0.5-1.5", (0.5, 1.5)),
        ("1..7", (1, 7)),
        (" -1 - 1 ", (-1, 1)),
    ],
)
def test_scale_parse(text, expected):
    assert scale_parse(text) == expected


@pytest.mark.parametrize("text", ["", "5", "5-1", "3-3", "a-b", "1-5-7"])
def test_scale_parse_rejects(text):
    with pytest.raises(ValidationError):
        scale_parse(text)


@pytest.mark.django_db
def test_campaign_create_likert_and_rankme():
    dataset = DatasetFactory()
    c = campaign_create(
        dataset=dataset,
        name="c1",
        protocol="likert",
        criteria=["fluency", " adequacy "],
        scale_min=-3,
        scale_max=3,
        redundancy=3,
        instructions="<b>rate</b>",
    )
    assert (c.criteria, c.scale_min, c.scale_max, c.redundancy) == (["fluency", "adequacy"], -3, 3, 3)
    r = campaign_create(dataset=dataset, name="c2", protocol="rankme", criteria=["naturalness"])
    assert r.scale_min is None and r.scale_max is None


@pytest.mark.django_db
@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"protocol": "likert"}, "scale_min"),
        ({"protocol": "pairwise", "scale_min": 1, "scale_max": 5}, "scale_min"),
        ({"protocol": "likert", "scale_min": 5, "scale_max": 1}, "scale_min"),
        ({"protocol": "likert", "scale_min": 1}, "scale_min"),
        ({"protocol": "stars"}, "protocol"),
        ({"protocol": "pairwise", "criteria": []}, "criteria"),
        ({"protocol": "pairwise", "criteria": ["a", "a"]}, "criteria"),
        ({"protocol": "pairwise", "redundancy": 0}, "redundancy"),
        ({"protocol": "bws", "tuple_size": 1}, "options"),  # options.tuple_size: must be between 2 and 20
    ],
)
def test_campaign_create_rejects(kwargs, field):
    args = {"dataset": DatasetFactory(), "name": "c", "criteria": ["fluency"]}
    args.update(kwargs)
    with pytest.raises(ValidationError) as exc:
        campaign_create(**args)
    assert field in exc.value.message_dict
    assert Campaign.objects.count() == 0


@pytest.mark.django_db
def test_campaign_name_is_unique():
    dataset = DatasetFactory()
    campaign_create(dataset=dataset, name="c", protocol="pairwise", criteria=["x"])
    with pytest.raises(ValidationError, match="already exists"):
        campaign_create(dataset=dataset, name="c", protocol="pairwise", criteria=["x"])
