"""ASSET (../shared/data/asset) imported through the public commands (tests/annotations/asset.py)."""

import json
from pathlib import Path

import pytest

from annotations.models import Campaign
from tests.annotations import asset
from tests.annotations.asset import run, write_jsonl

__all__ = ["read_jsonl", "run", "write_jsonl"]  # the export tests' helpers, imported from here


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def asset_ratings(shared_data):
    """The 4,500 ASSET ratings as read from the CSV (the reference for every expected figure)."""
    return asset.asset_ratings(shared_data / "asset")


@pytest.fixture
def asset_campaign(shared_data, asset_ratings, tmp_path):
    dataset, judgements = asset.asset_lines(shared_data / "asset", asset_ratings)
    asset.campaign_import(
        write_jsonl(tmp_path / "asset.jsonl", dataset),
        write_jsonl(tmp_path / "asset-ratings.jsonl", judgements),
        project="asset",
    )
    return Campaign.objects.get(name=asset.CAMPAIGN["name"])
