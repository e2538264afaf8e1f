import os
import subprocess
import sys

from tests.conftest import ROOT


def test_web_process_does_not_import_torch():
    """The web process serves pages and the API; loading torch there would cost
    seconds of start-up and hundreds of MB per gunicorn worker."""
    code = (
        "import django, sys; django.setup();"
        "from django.urls import get_resolver; get_resolver().url_patterns;"
        "import metrics.scorers; metrics.scorers.get_metric('bleu');"
        # The run form lists every metric with its defaults, and starting a run validates
        # the options by building the metric: neither may load torch.
        "from metrics.catalogue import metric_catalogue; metric_catalogue();"
        "[metrics.scorers.get_metric(m) for m in ('bertscore', 'semdist', 'simplicity-bertscore', 'yisi1', 'nli')];"
        "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))"
    )
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="workbench.settings.test")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_web_process_does_not_import_scipy_until_an_analysis_needs_it():
    """scipy (its stats alone: about half a second and tens of MB per gunicorn worker) is
    imported on first use (workbench.lazy): the annotation requests never use it."""
    code = (
        "import django, sys; django.setup();"
        "from django.urls import get_resolver; get_resolver().url_patterns;"
        "print(sorted(m for m in sys.modules if m == 'scipy' or m.startswith('scipy.')));"
        "from annotations.analysis.correlation import stats;"
        "print(round(stats.spearmanr([1, 2, 3, 4], [1, 3, 2, 4]).statistic, 6))"
    )
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="workbench.settings.test")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    # Spearman's rho of these ranks: 1 - 6 * (0 + 1 + 1 + 0) / (4 * 15) = 0.8.
    assert proc.stdout.split("\n")[:2] == ["[]", "0.8"]
