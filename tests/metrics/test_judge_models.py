"""The judge's model (issue 38, item 5): a causal LM head or a refusal with the reason, at run
creation (service, API, CLI) before any worker starts; the run form offers the local models
that suit each metric; model paths relative to the model directories resolve, escapes do not."""

import re

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from annotations.models import Project
from metrics.catalogue import models_by_metric
from metrics.models import MetricRun, RunStatus
from metrics.scorers import get_metric
from metrics.scorers.errors import ModelNotAvailable
from metrics.scorers.loading import DEFAULT_EMBEDDING_MODEL, is_causal_lm_architecture, resolve_model_path
from metrics.services import RunInputError, run_create, run_execute_sync
from tests.annotations.factories import MembershipFactory, UserFactory
from tests.metrics.conftest import build_dataset

NOT_CAUSAL = re.escape("is not a causal language model (saved architecture: BertModel)")


def test_the_name_rule_agrees_with_transformers_causal_lm_mapping():
    """The rule reads architecture names without importing transformers' mapping (torch) into
    the web process; here it is held to that mapping: every causal-LM class passes, and no class
    of the base, masked-LM, classification or seq2seq mappings that is not also causal."""
    from transformers.models.auto import modeling_auto as auto

    causal = set(auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values())
    assert causal and all(is_causal_lm_architecture(name) for name in causal)
    others = set()
    for mapping in (
        auto.MODEL_MAPPING_NAMES,
        auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES,
        auto.MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES,
        auto.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES,
    ):
        others |= {v for v in mapping.values() if isinstance(v, str)}
    wrongly = sorted(name for name in others - causal if is_causal_lm_architecture(name))
    assert not wrongly
    assert not is_causal_lm_architecture("BertModel") and is_causal_lm_architecture("LlamaForCausalLM")


@pytest.fixture
def model_dirs(tmp_path, settings, judge_models):
    """A model directory holding a tiny judge (`tiny-judge`) and an encoder without an LM head
    (`encoder`, config of the packaged MiniLM), the project directory above it."""
    import shutil

    models = tmp_path / "var" / "models"
    models.mkdir(parents=True)
    shutil.copytree(judge_models["llama"], models / "tiny-judge")
    shutil.copytree(resolve_model_path(DEFAULT_EMBEDDING_MODEL), models / "encoder")
    (tmp_path / "outside").mkdir()
    shutil.copytree(judge_models["gpt2"], tmp_path / "outside" / "judge")
    settings.WORKBENCH_MODEL_DIRS = [str(models)]
    settings.BASE_DIR = tmp_path
    return models


@pytest.fixture
def owner_api(db):
    project = Project.objects.create(name="Judges")
    dataset = build_dataset(name="judge-models", items=2, systems=2, project=project)
    user = MembershipFactory(project=project, user=UserFactory(username="judge-owner"), role="owner").user
    api = APIClient()
    api.force_authenticate(user)
    return dataset, api


def test_an_encoder_is_refused_as_judge_everywhere_before_a_worker(model_dirs, owner_api):
    dataset, api = owner_api
    for model in (DEFAULT_EMBEDDING_MODEL, "encoder"):
        with pytest.raises(RunInputError, match=NOT_CAUSAL):
            run_create(dataset=dataset, metric="llm-judge", options={"model": model})
        resp = api.post(
            f"/api/datasets/{dataset.pk}/metric-runs/",
            {"metric": "llm-judge", "options": {"model": model}},
            format="json",
        )
        assert resp.status_code == 400 and re.search(NOT_CAUSAL, resp.json()["detail"]), resp.content
        with pytest.raises(CommandError, match=NOT_CAUSAL):
            call_command(
                "run_metric", dataset=dataset.name, metric="llm-judge", option=[f"model={model}"], no_progress=True
            )
    assert not MetricRun.objects.exists()  # nothing was queued
    # The worker's own load refuses it too (a run created before this check, the `score` command).
    metric = get_metric("llm-judge", model="encoder", device="cpu")
    with pytest.raises(ModelNotAvailable, match="is not a causal language model"):
        metric.score(["x"])


def test_model_paths_relative_to_the_model_directories(model_dirs, owner_api):
    dataset, _ = owner_api
    tiny = (model_dirs / "tiny-judge").resolve()
    assert resolve_model_path("tiny-judge") == tiny
    assert resolve_model_path("var/models/tiny-judge") == tiny  # as typed next to manage.py
    for escape in ("../outside/judge", "var/models/../../outside/judge", "outside/judge"):
        with pytest.raises(ModelNotAvailable, match="not allowed or not found"):
            resolve_model_path(escape)
        with pytest.raises(RunInputError, match="not allowed or not found"):
            run_create(dataset=dataset, metric="llm-judge", options={"model": escape})
    run, _ = run_create(
        dataset=dataset, metric="llm-judge", sync=True, options={"model": "var/models/tiny-judge", "device": "cpu"}
    )
    run = run_execute_sync(run=run)
    assert run.status == RunStatus.DONE, run.error
    assert "model:tiny-judge" in run.signature


def test_the_picker_offers_the_models_that_suit_each_metric(model_dirs):
    offered = {metric: [m["name"] for m in models] for metric, models in models_by_metric().items()}
    assert offered["llm-judge"] == ["tiny-judge"]
    assert DEFAULT_EMBEDDING_MODEL in offered["bertscore"] and "encoder" in offered["bertscore"]
    assert "tiny-judge" not in offered["bertscore"]
    assert "chrf" not in offered  # no model option
    (model_dirs / "org").mkdir()
    (model_dirs / "org" / "judge-2").symlink_to(model_dirs / "tiny-judge")
    assert [m["name"] for m in models_by_metric()["llm-judge"]] == ["org/judge-2", "tiny-judge"]
