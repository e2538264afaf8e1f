import factory
from django.contrib.auth import get_user_model

from annotations.models import (
    Annotator,
    Campaign,
    Dataset,
    Item,
    Membership,
    Output,
    Project,
    Reference,
    System,
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
    protocol = Campaign.Protocol.LIKERT
    criteria = factory.LazyFunction(lambda: ["fluency"])
    scale_min = 1
    scale_max = 5


class AnnotatorFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Annotator

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"annotator-{n}")
    namespace = factory.LazyAttribute(
        lambda o: Annotator.Namespace.ACCOUNT if o.user is not None else Annotator.Namespace.IMPORT
    )
    user = None
