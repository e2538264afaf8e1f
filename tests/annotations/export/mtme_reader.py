"""mt-metrics-eval's loader, for the tests: the real code when a copy is under var/mt-metrics-eval,
and a transcription of the parts the `mtme` export relies on.

The real code: google-research/mt-metrics-eval (not on PyPI under that name; never install the
PyPI package of that name), its `mt_metrics_eval/` folder put under var/mt-metrics-eval/ outside
`make test` (e.g. `git archive 68a481aea1a7 mt_metrics_eval | tar -x -C var/mt-metrics-eval`).
It imports apache_beam (only for its Beam pipelines) and dacite (only for ratings), which are
stubbed out here as the analysis tests do.

The transcription: `EvalSet._ReadDataset`, `ReadScoreFile`, `_ReadTextFile`,
`ParseHumanScoreFilename` and `ParseMetricFilename` / `ParseMetricName` of data.py at commit
68a481aea1a7 (read with the fetch tool), and `stats.Correlation.Pearson` without sampling or
grouping: Pearson over the flattened system x segment lists, entries with a None gold score
dropped. It was checked against the real code by `test_mtme_export_loads_in_mt_metrics_eval`.
"""

from __future__ import annotations

import collections
import glob
import importlib
import itertools
import os
import sys
import types
from pathlib import Path

import scipy.stats

REPO = Path(__file__).resolve().parents[3]
REAL = REPO / "var" / "mt-metrics-eval"
NO_TRANSLATION = "[No translation supplied]"


def real_modules():
    """(data, meta_info) of the real mt-metrics-eval, or None when no copy is under var/."""
    if not (REAL / "mt_metrics_eval" / "data.py").exists():
        return None
    for name in ("apache_beam", "dacite"):
        if name not in sys.modules:
            try:
                importlib.import_module(name)
            except ImportError:
                sys.modules[name] = types.ModuleType(name)
    if str(REAL) not in sys.path:
        sys.path.insert(0, str(REAL))
    return importlib.import_module("mt_metrics_eval.data"), importlib.import_module("mt_metrics_eval.meta_info")


def _read_text(filename):
    with open(filename) as f:
        return [None if line.rstrip() == NO_TRANSLATION else line.rstrip() for line in f]


def read_score_file(filename):
    scores = collections.defaultdict(list)
    with open(filename) as f:
        for line in f:
            sysname, score = line.split()
            scores[sysname].append(float(score) if score != "None" else None)
    return scores


class TranscribedEvalSet:
    """The reading half of `data.EvalSet` (seg and sys levels, text files)."""

    def __init__(self, name: str, lp: str, info: dict, path: str, read_stored_metric_scores: bool = True):
        d = os.path.join(path, name)
        doc_lines = _read_text(os.path.join(d, "documents", f"{lp}.docs"))
        self.docs = [k for k, _ in itertools.groupby(line.split()[1] for line in doc_lines)]
        self.src = _read_text(os.path.join(d, "sources", f"{lp}.txt"))
        self.all_refs = {f.split(".")[-2]: _read_text(f) for f in glob.glob(os.path.join(d, "references", f"{lp}.*.*"))}
        self.sys_outputs = {
            os.path.splitext(os.path.basename(f))[0]: _read_text(f)
            for f in glob.glob(os.path.join(d, "system-outputs", lp, "*.*"))
        }
        self.scores: dict = {}
        for f in glob.glob(os.path.join(d, "human-scores", f"{lp}.*.score")):
            toks = os.path.basename(f).split(".")
            assert len(toks) >= 4 and toks[-1] == "score"
            scorer, level = ".".join(toks[1:-2]), toks[-2]
            self.scores.setdefault(level, {})[scorer] = read_score_file(f)
        self.metric_names = set()
        if read_stored_metric_scores:
            for f in glob.glob(os.path.join(d, "metric-scores", lp, "*.score")):
                metric, level, exten = os.path.basename(f).rsplit(".", maxsplit=2)
                assert exten == "score" and level in ("sys", "domain", "doc", "seg")
                basename, refs = metric.rsplit("-", maxsplit=1)
                assert refs == "src" or set(refs.split(".")) <= set(self.all_refs), refs
                self.scores.setdefault(level, {})[metric] = read_score_file(f)
                self.metric_names.add(metric)
        expected = {"sys": 1, "seg": len(self.src)}
        for level, by_scorer in self.scores.items():
            for scorer, by_sys in by_scorer.items():
                for sys_name, values in by_sys.items():
                    assert sys_name in self.sys_outputs, sys_name
                    assert len(values) == expected[level], (scorer, level)
                    if scorer in self.metric_names:
                        assert None not in values, scorer
        # The checks EvalSet.__init__ makes against the meta-info.
        assert info["std_ref"] in self.all_refs
        for level, gold in info["std_gold"].items():
            assert gold in self.scores[level], (level, gold)
        assert set(info["outlier_systems"]) <= set(self.sys_outputs)
        for text in [*self.all_refs.values(), *self.sys_outputs.values()]:
            assert len(text) == len(self.src)

    def Scores(self, level, scorer):
        return self.scores.get(level, {}).get(scorer)


def pearson(gold: dict, metric: dict) -> float:
    """EvalSet.Correlation(gold, metric).Pearson()[0]: flattened, None gold entries dropped."""
    g, m = [], []
    for sys_name in gold:
        for x, y in zip(gold[sys_name], metric[sys_name]):
            if x is not None:
                g.append(x)
                m.append(y)
    return float(scipy.stats.pearsonr(g, m)[0])
