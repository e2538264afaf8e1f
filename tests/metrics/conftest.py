import random

import pytest

from annotations.models import Dataset, Item, Output, Project, Reference, System

WORDS = (
    "the cat sat on a mat while dogs ran across green fields under bright skies "
    "and old men told stories of distant seas to eager children"
).split()


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12)))


def build_dataset(
    *, name: str = "metric-ds", items: int = 12, systems: int = 3, seed: int = 7, project: Project | None = None
) -> Dataset:
    """A dataset with one reference per item and one output per system and item."""
    rng = random.Random(seed)
    project = project or Project.objects.create(name=f"project-{name}")
    dataset = Dataset.objects.create(project=project, name=name)
    syss = [System.objects.create(dataset=dataset, name=f"sys-{k}") for k in range(systems)]
    for i in range(items):
        item = Item.objects.create(dataset=dataset, external_id=f"i{i}", position=i, source=_sentence(rng))
        Reference.objects.create(item=item, position=0, text=_sentence(rng))
        for s in syss:
            Output.objects.create(item=item, system=s, text=_sentence(rng))
    return dataset


@pytest.fixture
def metric_dataset(db) -> Dataset:
    return build_dataset()


@pytest.fixture(scope="session")
def judge_models(tmp_path_factory):
    """Tiny random causal LMs for llm-judge: `llama` (chat template), `llama_seed1`
    (same shape, other weights), `gpt2` (no chat template)."""
    from tests.metrics.llm_judge_models import build_model

    root = tmp_path_factory.mktemp("judges")
    return {
        "llama": str(build_model(root / "llama", seed=0)),
        "llama_seed1": str(build_model(root / "llama_seed1", seed=1)),
        "gpt2": str(build_model(root / "gpt2", shape="gpt2", chat=False)),
    }
