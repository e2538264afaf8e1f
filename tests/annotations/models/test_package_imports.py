"""The models package imports nothing above it, so an import sorter cannot break `django.setup()`.

Issue 37: `annotations/models/__init__.py` used to import the export package at import time, and
moving that `# noqa: E402` line to the top, as an import sorter would, broke `django.setup()` with a
circular ImportError. The quality, export and study models now live in `annotations/models/`.
"""

import ast
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

MODELS = ROOT / "annotations" / "models"


def test_the_package_init_is_sorted_as_ruff_sorts_imports():
    # --isolated: ruff's own isort defaults, whatever ruff.toml selects (at the project's 120 columns).
    ruff = str(Path(sys.executable).parent / "ruff")
    proc = subprocess.run(
        [ruff, "check", "--isolated", "--select", "I", "--line-length", "120", str(MODELS / "__init__.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_django_setup_works_in_a_fresh_interpreter():
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="workbench.settings.test")
    code = (
        "import django; django.setup();"
        "from django.apps import apps;"
        "from annotations.models import ExportJob, GoldUnit, JoinLink;"
        # The tables did not move: a move of the module keeps the app label and the table name.
        "print(ExportJob._meta.db_table, GoldUnit._meta.db_table, JoinLink._meta.db_table)"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["annotations_exportjob", "annotations_goldunit", "annotations_joinlink"]


def test_model_modules_import_only_their_siblings():
    """A model module imports Django, the standard library and other `annotations.models.<module>`s,
    never the package itself (whose order would then matter) nor any layer above."""
    offending = []
    for path in sorted(MODELS.glob("*.py")):
        if path.name == "__init__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                if name.split(".")[0] in ("annotations", "metrics", "workbench") and not (
                    name.startswith("annotations.models.")
                ):
                    offending.append(f"{path.name}:{node.lineno} imports {name}")
    assert offending == []
