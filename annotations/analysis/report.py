"""Agreement, rankings and metric-human figures for one campaign: the commands, API and pages call these."""

from __future__ import annotations

import warnings
from array import array
from collections import Counter, defaultdict
from dataclasses import dataclass

from annotations.analysis import (
    agreement as ag,
    cluster_rules as cr,
    correlation as co,
    documents,
    error_free as ef,
    span_eval as se,
    spans as sp,
    systems as sy,
    waves as wv,
)
from annotations.analysis.metric_scores import (
    extras_by_output,
    latest_done_runs,
    run_for_metric,
    scores_by_output,
    system_scores,
)
from annotations.analysis.suggestions import SuggestionTally
from annotations.models import Campaign
from annotations.protocols.rows import JudgementRow
from annotations.selectors.judgements import INCLUDED, JudgementSet, campaign_judgements
from annotations.selectors.outputs import output_identities, output_index, output_texts
from annotations.selectors.waves import wave_annotators_overlap, wave_pair
from workbench.exceptions import DomainError
from workbench.lazy import lazy_module

# numpy is imported on first use, not by every web worker at start-up (workbench.lazy, issue 45).
np = lazy_module("numpy")
# factgenie's gamma brings numpy and scipy.optimize: loaded by the first gamma asked for.
ga = lazy_module("annotations.analysis.gamma")

GROUP_BY = {"none": "none", "item": "item", "system": "sys"}
# Rows fed to the agreement tables at a time (agreement_report without spans or derived pairs).
STREAM_ROWS = 5_000
ALT_TEST = "alt-test"
ALT_TEST_LABEL = (
    "alternative annotator test (Calderon et al. 2025): leave one annotator out; the judge wins "
    "against them when a one-sided t-test finds their advantage below epsilon (Benjamini-Yekutieli "
    "over annotators at q_fdr); winning rate = share of annotators the judge wins against; "
    "passed when at least 0.5"
)


PAIRS_TEST_LABEL = (
    'pairs permutation (mt-metrics-eval PairwisePermutationSigDiff, perm_test="pairs" as in its '
    "WMT23-25 tasks); p_value: METRIC better than METRIC2; epsilon1: METRIC2's, epsilon2: METRIC's"
)


class AnalysisError(DomainError, ValueError):
    """Bad input for an analysis (unknown criterion, no metric run...): one clear line."""


@dataclass
class Loaded:
    """A campaign's counted judgements, read once by the one reader and grouped by criterion."""

    judgements: JudgementSet
    rows: dict[str, list[JudgementRow]]

    @property
    def protocol(self):
        return self.judgements.protocol

    @property
    def campaign(self) -> Campaign:
        return self.judgements.campaign

    def describe(self) -> dict:
        return self.judgements.describe(sum(len(r) for r in self.rows.values()))

    def names(self) -> dict[int, str]:
        return self.judgements.annotator_names({r.annotator_id for rows in self.rows.values() for r in rows})


def load(
    *, campaign: Campaign, annotators: str = INCLUDED, criterion: str | None = None, systems: list[str] | None = None
) -> Loaded:
    found = campaign_judgements(campaign=campaign, annotators=annotators, criterion=criterion, systems=systems)
    return Loaded(judgements=found, rows=found.by_criterion())


def _criteria(j: Loaded, criterion: str | None) -> list[str]:
    if criterion:
        if criterion not in j.campaign.criteria and criterion not in j.rows:
            raise AnalysisError(
                f"criterion {criterion!r} is not one of the campaign's: {', '.join(j.campaign.criteria) or 'none'}"
            )
        return [criterion]
    return list(j.rows)


def agreement_report(
    *,
    campaign: Campaign,
    criterion: str | None = None,
    annotators: str = INCLUDED,
    bootstrap: int = 200,
    seed: int = 0,
    per_annotator: bool = True,
    cohen: bool = True,
) -> dict:
    """Agreement per criterion: the protocol's headline alpha with its label, every level, kappas."""
    if criterion and criterion not in campaign.criteria:
        raise AnalysisError(
            f"criterion {criterion!r} is not one of the campaign's: {', '.join(campaign.criteria) or 'none'}"
        )
    found = campaign_judgements(campaign=campaign, annotators=annotators, criterion=criterion)
    # Every figure is built as the rows stream, never from every row held (issue 46).
    return _agreement_streamed(
        found, criterion=criterion, bootstrap=bootstrap, seed=seed, per_annotator=per_annotator, cohen=cohen
    )


def _agreement_head(campaign: Campaign, found: JudgementSet, n: int) -> dict:
    protocol = found.protocol
    return {
        "campaign": campaign.name,
        "protocol": campaign.protocol,
        "judgements_used": found.describe(n),
        "definition": {
            "unit": protocol.agreement.unit,
            "value": protocol.agreement.value,
            "variant": protocol.agreement.variant,
            "level": protocol.agreement.level,
            "label": protocol.agreement.label(),
        },
        "criteria": {},
    }


def _agreement_streamed(
    found: JudgementSet, *, criterion: str | None, bootstrap: int, seed: int, per_annotator: bool, cohen: bool
) -> dict:
    """agreement_report, fed a chunk of rows at a time as the reader streams them: each criterion's
    reliability table, and each system's, gets the chunk's rows; ESA / MQM / cESA's span tallies get
    its outputs, cESA's derived-pairs table its screens, and a prefilled campaign's suggestion tally
    its judgements. A chunk ends only where an item does (the reader gives an item's rows together),
    so an output's and a screen's rows always come in one chunk. Memory holds a few numbers a
    judgement instead of every row (~600 bytes each, more with spans: 36 MB at 60,000 Likert
    judgements, issue 46). The tables get the same rows in the same order as from the whole
    lists, so the figures are the same."""
    campaign, protocol = found.campaign, found.protocol
    identity = output_identities(dataset=campaign.dataset)
    builders: dict[str, ag.TableBuilder] = {}
    system_builders: dict[str, dict] = defaultdict(dict)
    pair_builders: dict[str, ag.TableBuilder] = {}
    span_tallies: dict[str, SpanTally] = {}
    suggestion_tallies: dict[str, SuggestionTally] = {}
    categories = bool(getattr(protocol, "error_categories", False))
    annotator_ids: set[int] = set()
    n = 0
    chunk: list[JudgementRow] = []

    def feed(rows: list[JudgementRow]) -> None:
        by_criterion: dict[str, list[JudgementRow]] = defaultdict(list)
        for row in rows:
            by_criterion[row.criterion].append(row)
        texts = output_texts(ids={r.output_id for r in rows}) if protocol.has_spans and rows else {}
        for c, mine in by_criterion.items():
            if c not in builders:
                builders[c] = ag.TableBuilder(protocol, identity=identity, batch=STREAM_ROWS)
            builders[c].add(mine)
            if protocol.has_spans:
                span_tallies.setdefault(c, SpanTally(categories=categories)).add(mine, texts)
                if campaign.prefilled:
                    suggestion_tallies.setdefault(c, SuggestionTally(campaign)).add(mine)
            if protocol.derives_pairs:
                if c not in pair_builders:
                    pair_builders[c] = ag.TableBuilder(protocol.pairs_protocol(), identity=identity, batch=STREAM_ROWS)
                pair_builders[c].add(protocol.pair_rows(mine))
            if protocol.per_output:
                by_system: dict = defaultdict(list)
                for row in mine:
                    by_system[identity.get(row.output_id, (None, None))[1]].append(row)
                for s, theirs in by_system.items():
                    if s not in system_builders[c]:
                        system_builders[c][s] = ag.TableBuilder(protocol, identity=identity, batch=STREAM_ROWS)
                    system_builders[c][s].add(theirs)

    for row in found:
        if len(chunk) >= STREAM_ROWS and row.item_id != chunk[-1].item_id:
            feed(chunk)
            chunk = []
        n += 1
        annotator_ids.add(row.annotator_id)
        chunk.append(row)
    feed(chunk)
    chunk = []
    out = _agreement_head(campaign, found, n)
    order = [c for c in campaign.criteria if c in builders] + sorted(c for c in builders if c not in campaign.criteria)
    if criterion:
        if criterion not in campaign.criteria and criterion not in builders:
            raise AnalysisError(
                f"criterion {criterion!r} is not one of the campaign's: {', '.join(campaign.criteria) or 'none'}"
            )
        order = [criterion]
    names = found.annotator_names(annotator_ids) if (cohen or per_annotator) else {}
    level = protocol.agreement.level
    for c in order:
        builder = builders.get(c) or ag.TableBuilder(protocol, identity=identity)
        figures = ag.criterion_agreement(
            protocol,
            [],
            scale=campaign.criterion_scale(c),
            annotators=found.used,
            bootstrap=bootstrap,
            seed=seed,
            names=names,
            cohen=cohen,
            per_annotator=per_annotator,
            table=builder.table(),
        )
        builders.pop(c, None)
        if protocol.per_output:
            per_system = {}
            for s, b in sorted(system_builders.pop(c, {}).items(), key=lambda kv: str(kv[0])):
                counts = ag.value_counts(b.table())
                per_system[s] = {
                    f"krippendorff_alpha_{level}": ag._clean(ag.krippendorff_alpha(counts, level)),
                    "n_units": counts.n_units,
                }
            figures["per_system"] = per_system
        if protocol.agreement.variant == "z":
            figures["normalisation"] = f"{protocol.agreement.value}s z-scored per annotator"
        if protocol.has_spans:
            figures["spans"] = (span_tallies.pop(c, None) or SpanTally(categories=categories)).figures()
            if campaign.prefilled:
                figures["suggestions"] = (suggestion_tallies.pop(c, None) or SuggestionTally(campaign)).figures()
        if protocol.derives_pairs:
            pairs = pair_builders.pop(c, None) or ag.TableBuilder(protocol.pairs_protocol(), identity=identity)
            figures["pairwise_derived"] = derived_pair_agreement(
                protocol,
                scale=campaign.criterion_scale(c),
                annotators=found.used,
                bootstrap=bootstrap,
                seed=seed,
                table=pairs.table(),
            )
        out["criteria"][c] = figures
    waves = waves_report(campaign=campaign, criterion=criterion, annotators=found.annotators)
    if waves is not None:
        out["waves"] = waves
    return out


def derived_pair_agreement(protocol, *, scale, annotators: str, bootstrap: int, seed: int, table: ag.Table) -> dict:
    """The pairwise protocol's agreement figures over the preferences a scored protocol's answers
    imply (cESA: two outputs of one screen, the higher score wins), labelled as derived; `table`:
    the pairs protocol's reliability data of those preferences."""
    figures = ag.criterion_agreement(
        protocol.pairs_protocol(), [], scale=(None, None), annotators=annotators, bootstrap=bootstrap, seed=seed,
        table=table,
    )  # fmt: skip
    figures["derived_from"] = protocol.derived_pairs_label
    figures["headline"]["label"] = f"{figures['headline']['label']}, {protocol.derived_pairs_label}"
    return figures


class SpanTally:
    """ESA / MQM character-level span agreement of one criterion, fed whole outputs at a time
    (every row of an output in one `add`: the report feeds an item's rows together): each output's
    labels become its pairs' F1 and its characters' coincidences, then are dropped, so memory holds
    a few numbers per annotator pair instead of every row's spans and a (unit, annotator, value)
    triple per character (issue 46). The figures are those of `char_table` over every output
    judged at least twice (alpha from the same coincidence matrix; F1 means in the same order)."""

    def __init__(self, *, categories: bool):
        self.by_category = categories  # the protocol's spans carry categories (MQM): label those too
        self.f1 = array("d")
        self.inter = self.total = self.outputs = 0
        self.coincidences: dict[int, Counter] = defaultdict(Counter)  # annotators -> value pairs
        self.categorised = False
        self.codes: dict[str, int] = {}
        self.first_seen: dict[str, tuple] = {}  # top-level category -> where _category_agreement met it first
        self.cat_f1, self.cat_at = array("d"), array("q")  # each pair's F1 and its output (F1s in output order)
        self.cat_inter = self.cat_total = 0
        self.cat_coincidences: dict[int, Counter] = defaultdict(Counter)
        self.seen_rows = 0

    def add(self, rows: list[JudgementRow], texts: dict[int, str]) -> None:
        per_output: dict[int, dict] = defaultdict(dict)
        order: dict[int, list[tuple[int, JudgementRow]]] = defaultdict(list)
        for r in rows:
            self.seen_rows += 1
            spans = [(s["start"], s["end"], s["severity"]) for s in r.spans if not s.get("missing")]
            per_output[r.output_id][r.annotator_id] = sp.char_labels(len(texts.get(r.output_id, "")), spans)
            order[r.output_id].append((self.seen_rows, r))
            if not self.categorised and any(s.get("category") for s in r.spans):
                self.categorised = True
        for output, labels in per_output.items():
            if len(labels) < 2:
                continue
            self.outputs += 1
            for f, shared, marked in sp.pair_f1s(labels):
                self.inter += shared
                self.total += marked
                if f is not None:
                    self.f1.append(f)
            n, pairs = sp.char_coincidences(labels)
            self.coincidences[n].update(pairs)
            if self.by_category:
                self._categories(output, order[output], len(texts.get(output, "")))

    def _categories(self, output: int, rows: list[tuple[int, JudgementRow]], length: int) -> None:
        """_category_agreement's figures of one output: labels by top-level category."""
        labels: dict[int, object] = {}
        for seen, r in sorted(rows, key=lambda x: (x[1].annotator_id, x[0])):
            spans = [(s["start"], s["end"], s.get("category", "")) for s in r.spans if not s.get("missing")]
            for k, (_, _, category) in enumerate(spans):
                top = (category or "").split("/")[0]
                key = (output, r.annotator_id, seen, k)
                if top not in self.first_seen or key < self.first_seen[top]:
                    self.first_seen[top] = key
            labels[r.annotator_id] = sp.char_categories(length, spans, self.codes)
        for f, both, marked in sp.pair_category_f1s(labels):
            self.cat_inter += both
            self.cat_total += marked
            if f is not None:
                self.cat_f1.append(f)
                self.cat_at.append(output)
        n, pairs = sp.char_coincidences(labels)
        self.cat_coincidences[n].update(pairs)

    def figures(self) -> dict:
        out = {
            "mean_f1": float(np.mean(np.frombuffer(self.f1))) if self.f1 else None,
            "micro_f1": 2 * self.inter / self.total if self.total else None,
            "pairs": len(self.f1),
            "outputs": self.outputs,
            "krippendorff_alpha_chars": {
                lv: ag._clean(_alpha_of_coincidences(self.coincidences, lv)) for lv in ("nominal", "ordinal")
            },
        }
        if self.categorised and self.by_category:
            # The codes _category_agreement gives, in the order it meets the categories (outputs by id).
            code = {top: k + 1 for k, top in enumerate(sorted(self.first_seen, key=self.first_seen.get))}
            local = {c: code[top] for top, c in self.codes.items()} | {0: 0}
            renamed: dict[int, Counter] = defaultdict(Counter)
            for n, pairs in self.cat_coincidences.items():
                for (v, w), count in pairs.items():
                    renamed[n][(local[v], local[w])] += count
            by_output = np.argsort(np.frombuffer(self.cat_at, dtype=np.int64), kind="stable")
            values = np.frombuffer(self.cat_f1)[by_output]
            out["categories"] = {
                "mean_f1": float(np.mean(values)) if len(values) else None,
                "micro_f1": 2 * self.cat_inter / self.cat_total if self.cat_total else None,
                "pairs": len(values),
                "level": "top-level category",
                "krippendorff_alpha_chars_nominal": ag._clean(_alpha_of_coincidences(renamed, "nominal")),
            }
        return out


def _alpha_of_coincidences(by_annotators: dict[int, Counter], level: str) -> float:
    """Krippendorff's alpha from value-pair counts summed per number of annotators of a unit."""
    values = sorted({v for pairs in by_annotators.values() for v, _ in pairs})
    if not values:
        return float("nan")
    index = {v: k for k, v in enumerate(values)}
    o = np.zeros((len(values), len(values)))
    for n, pairs in sorted(by_annotators.items()):
        counts = np.zeros_like(o)
        for (v, w), count in pairs.items():
            counts[index[v], index[w]] = count
        o += counts / (n - 1)
    return ag.alpha_from_coincidences(o, np.asarray(values, dtype=float), level)


# ---- human scores per output and per system ----------------------------------


def human_output_scores(j: Loaded, criterion: str, *, normalize: str = "none") -> dict[int, float]:
    """Segment-level human score of each output: the protocol's definition (mean rating,
    win rate, best-worst count)."""
    return j.protocol.output_scores(j.rows.get(criterion, []), normalize=normalize)


def ranking_report(
    *,
    campaign: Campaign,
    criterion: str | None = None,
    annotators: str = INCLUDED,
    normalize: str = "none",
    bootstrap: int = 100,
    seed: int = 0,
    systems: list[str] | None = None,
    rule: str = cr.DEFAULT_RULE,
    alpha: float = cr.DEFAULT_ALPHA,
    resamples: int = cr.DEFAULT_RESAMPLES,
    rule_seed: int = 0,
) -> dict:
    """Human rankings with clusters, and each done metric run's ranking, side by side. With
    `systems`, everything (means, ranks, ranges, clusters) is computed on those systems only, as
    if the others had not been evaluated. `rule` adds "rule_rankings": the named cluster rule's
    rank ranges and clusters per criterion (cluster_rules)."""
    _check_rule(rule, alpha, resamples)
    j = load(campaign=campaign, annotators=annotators, systems=systems)
    outputs = _only_systems(output_index(campaign=campaign), systems)
    result: dict = {
        "campaign": campaign.name,
        "judgements_used": j.describe(),
        "criteria": {},
        "metrics": {},
        "test": "one-sided Mann-Whitney U (Wilcoxon rank-sum) on per-output scores, p < 0.05; "
        "a cluster boundary where every system above beats every system below",
        "paired_test": sy.PAIRED_TEST,
        "bootstrap": {
            "seed": seed,
            "reps": bootstrap,
            "resampled": "items (Bradley-Terry)",
            "mean_ci95": "200 resamples of each system's per-output scores, seed + (rank - 1)",
        },
    }
    # Document-level scores (issue 41) where the items are in documents; scored protocols only.
    docs = documents.item_documents(dataset_id=campaign.dataset_id) if j.protocol.scored else {}
    for c in _criteria(j, criterion):
        scores = human_output_scores(j, c, normalize=normalize)
        samples: dict[str, list] = defaultdict(list)
        for o, v in scores.items():
            if o in outputs:
                samples[outputs[o]["system"]].append(v)
        # Best first: the lowest mean for an error rate (post-editing's HTER).
        rows = sy.clusters(
            {s: np.array(v) for s, v in samples.items()}, higher_is_better=j.protocol.higher_is_better, seed=seed
        )
        _add_paired(rows, _by_item(scores, outputs), j.protocol.higher_is_better)
        if not j.protocol.scored or j.protocol.derives_pairs:
            bt = _bradley_terry(j, c, outputs, list(samples), bootstrap=bootstrap, seed=seed)
            for r in rows:
                r["bradley_terry"], r["bradley_terry_ci95"] = bt.get(r["system"], (None, [None, None]))
        if j.protocol.derives_pairs:
            rates = _derived_win_rates(j, c, outputs)
            for r in rows:
                r["win_rate"] = rates.get(r["system"])
            result["pairwise_derived"] = {
                "from": j.protocol.derived_pairs_label,
                "figures": "bradley_terry, bradley_terry_ci95, win_rate (a tie is half a "
                "win; mean over the system's outputs, as for pairwise)",
            }
        result["criteria"][c] = rows
        if docs:
            result.setdefault("documents", {"label": documents.LABEL, "criteria": {}})["criteria"][c] = (
                documents.document_rows(j.protocol, scores, outputs, docs)
            )
        ranked = rank_by_rule(
            campaign=campaign,
            criterion=c,
            rule=rule,
            alpha=alpha,
            resamples=resamples,
            seed=rule_seed,
            annotators=annotators,
            normalize=normalize,
            systems=systems,
            j=j,
        )
        result["rule"] = ranked["rule"]
        result.setdefault("rule_rankings", {})[c] = ranked["systems"]
    if "rule" not in result:
        result["rule"] = cr.get(rule).describe(alpha=alpha, resamples=resamples, seed=rule_seed)
    if systems:
        result["systems_filter"] = sorted(systems)
    for run in latest_done_runs(dataset=campaign.dataset):
        seg = scores_by_output(run=run)
        samples = defaultdict(list)
        for o, v in seg.items():
            if o in outputs and v is not None:
                samples[outputs[o]["system"]].append(v)
        # Ranked and shown by the metric's own system score (corpus BLEU, not a mean of sentence
        # BLEU); the clusters' test still compares the systems' per-output scores.
        system = system_scores(run=run)
        missing = system.missing(samples)
        if missing:
            rows = sy.clusters(
                {s: np.array(v) for s, v in samples.items()}, higher_is_better=run.higher_is_better, seed=seed
            )
            label = f"mean of segment scores (the run stored no system score for {', '.join(sorted(missing))})"
        else:
            rows = sy.clusters(
                {s: np.array(v) for s, v in samples.items()},
                higher_is_better=run.higher_is_better,
                scores=system.scores,
                seed=seed,
            )
            label = system.label
        _add_paired(rows, _by_item(seg, outputs), run.higher_is_better)
        for r in rows:
            r["corpus_score"] = system.scores.get(r["system"])
        result["metrics"][f"{run.metric}#{run.pk}"] = {
            "metric": run.metric,
            "run": run.pk,
            "signature": run.signature,
            "higher_is_better": run.higher_is_better,
            "score_label": label,
            "ranking": rows,
        }
    return result


def _only_systems(outputs: dict, systems: list[str] | None) -> dict:
    return {o: v for o, v in outputs.items() if not systems or v["system"] in systems}


def _check_rule(rule: str, alpha: float, resamples: int) -> None:
    if rule not in cr.RULES:
        raise AnalysisError(f"rule must be one of {', '.join(cr.RULES)}")
    if not 0 < alpha < 1:
        raise AnalysisError("the significance level must be between 0 and 1")
    if not 1 <= resamples <= 100_000:
        raise AnalysisError("resamples must be between 1 and 100000")


def rule_observations(
    *,
    campaign: Campaign,
    criterion: str,
    how: str,
    annotators: str = INCLUDED,
    normalize: str = "none",
    systems: list[str] | None = None,
    j: Loaded | None = None,
) -> dict[str, np.ndarray]:
    """{system: observations aligned across systems} as a cluster rule wants them (`how`):
    items in the data's order (external id); with a second wave, each item's two waves' scores
    as two observations (WAVES_SEPARATE) or their mean (ITEM_MEAN); NaN where missing."""
    outputs = _only_systems(output_index(campaign=campaign), systems)
    j = j or load(campaign=campaign, annotators=annotators, systems=systems)
    waves = [human_output_scores(j, criterion, normalize=normalize)]
    pair = wave_pair(campaign) if how != cr.THIS_WAVE else None
    if pair is not None:
        first, second = pair
        other = second if campaign.pk == first.pk else first
        j2 = load(campaign=other, annotators=annotators, criterion=criterion, systems=systems)
        h2 = human_output_scores(j2, criterion, normalize=normalize)
        waves = [waves[0], h2] if campaign.pk == first.pk else [h2, waves[0]]  # human1 first, as WMT's files
    items = [i for _ext, i in sorted({(str(v["item_ext"]), v["item"]) for v in outputs.values()})]
    col = {i: k for k, i in enumerate(items)}
    names = sorted({v["system"] for v in outputs.values()})
    cube = {s: np.full((len(items), len(waves)), np.nan) for s in names}
    for w, scores in enumerate(waves):
        for o, v in scores.items():
            info = outputs.get(o)
            if info is not None and v is not None and np.isfinite(v):
                cube[info["system"]][col[info["item"]], w] = v
    if how == cr.ITEM_MEAN:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an item no wave scored stays NaN
            return {s: np.nanmean(m, axis=1) for s, m in cube.items()}
    # Row-major: item 1 wave 1, item 1 wave 2, item 2 wave 1, ... as the WMT25 script flattens them.
    return {s: m.ravel() for s, m in cube.items()}


def rank_by_rule(
    *,
    campaign: Campaign,
    criterion: str,
    rule: str = cr.DEFAULT_RULE,
    alpha: float = cr.DEFAULT_ALPHA,
    resamples: int = cr.DEFAULT_RESAMPLES,
    seed: int = 0,
    annotators: str = INCLUDED,
    normalize: str = "none",
    systems: list[str] | None = None,
    j: Loaded | None = None,
) -> dict:
    """Each system's mean, rank range and cluster under a named rule (the `rankings` command,
    the API, the page and the card print this)."""
    _check_rule(rule, alpha, resamples)
    if criterion not in campaign.criteria and (j is None or criterion not in j.rows):
        raise AnalysisError(f"criterion {criterion!r} is not one of the campaign's: {', '.join(campaign.criteria)}")
    j = j or load(campaign=campaign, annotators=annotators, systems=systems)
    r = cr.get(rule)
    obs = rule_observations(
        campaign=campaign,
        criterion=criterion,
        how=r.observations,
        annotators=annotators,
        normalize=normalize,
        systems=systems,
        j=j,
    )
    # The human score's direction is the protocol's (post-editing's HTER: lower is better).
    out = cr.rank_systems(
        obs, rule=rule, higher_is_better=j.protocol.higher_is_better, alpha=alpha, resamples=resamples, seed=seed
    )
    return {
        "campaign": campaign.name,
        "criterion": criterion,
        "judgements_used": j.describe(),
        **({"systems_filter": sorted(systems)} if systems else {}),
        **out,
    }


def _derived_win_rates(j: Loaded, criterion: str, outputs: dict) -> dict[str, float]:
    """Each system's win rate over the pairs derived from the scores, as the pairwise protocol
    scores its outputs (the mean of its outputs' win rates)."""
    per_output = j.protocol.pairs_protocol().output_scores(j.protocol.pair_rows(j.rows.get(criterion, [])))
    by_system: dict[str, list] = defaultdict(list)
    for o, v in per_output.items():
        if o in outputs:
            by_system[outputs[o]["system"]].append(v)
    return {s: float(np.mean(v)) for s, v in by_system.items()}


def _by_item(scores: dict, outputs: dict) -> dict[str, dict]:
    """{system: {item: score}} over the outputs with a score."""
    out: dict[str, dict] = defaultdict(dict)
    for o, v in scores.items():
        if o in outputs and v is not None:
            out[outputs[o]["system"]][outputs[o]["item"]] = v
    return out


def _add_paired(rows: list[dict], by_item: dict, higher_is_better: bool) -> None:
    paired = sy.paired_ranks(by_item, [r["system"] for r in rows], higher_is_better=higher_is_better)
    for r in rows:
        r.update(paired[r["system"]])


def _wins(j: Loaded, criterion: str, outputs: dict, items: set | None = None) -> list[tuple[str, str]]:
    rows = [r for r in j.rows.get(criterion, []) if items is None or r.item_id in items]
    return j.protocol.wins(rows, {o: info["system"] for o, info in outputs.items()})


def _bradley_terry(j, criterion, outputs, systems, *, bootstrap: int, seed: int) -> dict:
    point = sy.bradley_terry(_wins(j, criterion, outputs), systems)
    # Items in the data's own order (external id), so a seed draws the same items in any database.
    external = {info["item"]: info["item_ext"] for info in outputs.values()}
    items = sorted({r.item_id for r in j.rows.get(criterion, [])}, key=lambda i: (str(external.get(i, "")), i))
    rng = np.random.default_rng(seed)
    samples = defaultdict(list)
    if len(items) >= 2:
        # Resample items; repeated items count once more each (expand the wins).
        by_item = defaultdict(list)
        for it in items:
            by_item[it] = _wins(j, criterion, outputs, {it})
        for _ in range(bootstrap):
            pick = rng.integers(0, len(items), len(items))
            wins = [w for k in pick for w in by_item[items[k]]]
            for s, v in sy.bradley_terry(wins, systems).items():
                samples[s].append(v)
    out = {}
    for s in systems:
        ci = [float(x) for x in np.percentile(samples[s], [2.5, 97.5])] if len(samples[s]) > 1 else [None, None]
        out[s] = (point.get(s), ci)
    return out


# ---- metric vs human ----------------------------------------------------------


def _matrices(outputs: dict, human: dict[int, float], metric: dict[int, float | None], sign: float):
    """systems x items matrices over the items with a human score (NaN where missing)."""
    used = [o for o in human if o in outputs]
    external = {outputs[o]["item"]: outputs[o]["item_ext"] for o in used}
    systems = sorted({outputs[o]["system"] for o in outputs})
    # Columns in the data's own order (item external id), never by database id: the bootstrap
    # and PERM-BOTH draw by column, so the same seed gives the same figures in any database.
    items = sorted({outputs[o]["item"] for o in used}, key=lambda i: (str(external[i]), i)) if used else []
    si = {s: k for k, s in enumerate(systems)}
    ii = {i: k for k, i in enumerate(items)}
    H = np.full((len(systems), len(items)), np.nan)
    M = np.full((len(systems), len(items)), np.nan)
    for o, info in outputs.items():
        if info["item"] not in ii:
            continue
        r, c = si[info["system"]], ii[info["item"]]
        if o in human:
            H[r, c] = human[o]
        v = metric.get(o)
        if v is not None and np.isfinite(v):
            M[r, c] = sign * v
    return systems, items, H, M


def _check_method(method: str, group_by: str, level: str) -> None:
    if method not in co.METHODS + co.SYSTEM_METHODS and method not in (ALT_TEST, ERROR_FREE, SPAN_F1, SPAN_GAMMA):
        raise AnalysisError(
            f"--method must be one of {', '.join(co.METHODS + co.SYSTEM_METHODS)}, {ALT_TEST}, {ERROR_FREE}, "
            f"{SPAN_F1}, {SPAN_GAMMA}"
        )
    if group_by not in GROUP_BY:
        raise AnalysisError("--group-by must be none, item or system")
    if level not in ("segment", "system"):
        raise AnalysisError("--level must be segment or system")


def _metric_matrix(outputs: dict, human: dict, run):
    sign = 1.0 if run.higher_is_better else -1.0
    return (sign,) + _matrices(outputs, human, scores_by_output(run=run), sign)


class _Statistic:
    """One figure (method, level, grouping) over systems x items matrices: its value for a metric
    and the same function for PERM-BOTH's resamples."""

    def __init__(
        self, method: str, level: str, group_by: str, *, spa_k: int = co.SPA_PERMUTATIONS, spa_seed: int = co.SPA_SEED
    ):
        self.method, self.group_by = method, group_by
        self.level = "system" if method == "spa" else level  # SPA is a system-level statistic
        self.avg = "none" if self.level == "system" else GROUP_BY[group_by]
        self.spa_k, self.spa_seed = spa_k, spa_seed
        self._human_p = None

    def inputs(self, run, systems, H, M, sign):
        """(human, metric) the statistic is computed on, and what the system scores are."""
        if self.level == "system" and self.method != "spa":
            if run is None:  # another human wave: the mean of its scores over the same items
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    hs = np.nanmean(H, axis=1)
                    ms = np.nanmean(np.where(np.isnan(H), np.nan, M), axis=1)
                return hs.reshape(1, -1), ms.reshape(1, -1), None
            H_sys, M_sys, used = _system_level(run, systems, H, M, sign)
            return H_sys, M_sys, used
        return H, M, None

    def prepare(self, H, *Ms):
        """SPA: keep the items every system has a score for, in the humans' and every metric's
        matrix (the permutations need a full rectangle), and the humans' p-values once."""
        if self.method != "spa":
            return (H, *Ms)
        self._human_p = None
        kept = co.complete_columns(H, *Ms)
        if kept[0].shape[0] >= 2 and kept[0].shape[1]:
            signs = co.permutation_signs(kept[0].shape[1], k=self.spa_k, seed=self.spa_seed)
            self._signs, self._human_p = signs, co.pairwise_p_values(kept[0], signs)
        return tuple(kept)

    def value(self, H, M) -> dict:
        if self.method == "spa":
            if self._human_p is None:
                return {"value": float("nan"), "n": int(H.size), "groups": int(H.shape[1])}
            mp = co.pairwise_p_values(M, self._signs)
            upper = np.triu_indices(H.shape[0], 1)
            value = 1.0 - float(np.mean(np.abs(self._human_p - mp)[upper]))
            return {"value": value, "n": int(H.size), "groups": int(H.shape[1]), "systems": int(H.shape[0])}
        if self.method == "pdp":
            return co.pdp(H, M, self.avg)
        return co.correlate(H, M, self.method, self.avg)

    def corr_fn(self):
        if self.method in co.SYSTEM_METHODS:
            return lambda h, m: self.value(h, m)["value"]
        return None

    def describe(self) -> dict | None:
        if self.method != "spa":
            return None
        return {
            "permutations": self.spa_k,
            "seed": self.spa_seed,
            "test": "paired permutation of segment scores per system pair (mt-metrics-eval pce.py); "
            "items scored for every system only",
        }


def correlate_report(
    *,
    campaign: Campaign,
    metric: str,
    criterion: str,
    level: str = "segment",
    method: str = "pearson",
    group_by: str = "none",
    normalize: str = "none",
    min_votes: int = 1,
    min_consensus: float = 0.0,
    compare: str | None = None,
    annotators: str = INCLUDED,
    bootstrap: int = 200,
    seed: int = 0,
    spa_permutations: int = co.SPA_PERMUTATIONS,
    spa_seed: int = co.SPA_SEED,
    epsilon: float = 0.2,
    alt_scoring: str | None = None,
    q_fdr: float = 0.05,
    min_instances: int = 30,
    perm_both_test: bool = True,
    max_pairs: int = co.MAX_PAIRS,
) -> dict:
    """`perm_both_test` False leaves PERM-BOTH out of a comparison (the page's acc23 pairs table:
    PERM-BOTH of acc23 takes minutes on a large campaign); `max_pairs`: the pairs permutation's
    budget of pairs per resample, above which it is skipped with its reason."""
    _check_method(method, group_by, level)
    run = run_for_metric(dataset=campaign.dataset, metric=metric)
    if run is None:
        raise AnalysisError(
            f"no done run of metric {metric!r} on dataset {campaign.dataset.name!r} "
            f"(run `run_metric --dataset {campaign.dataset.name} --metric {metric} --sync` first)"
        )
    if criterion not in campaign.criteria:
        raise AnalysisError(f"criterion {criterion!r} is not one of the campaign's: {', '.join(campaign.criteria)}")
    j = load(campaign=campaign, annotators=annotators, criterion=criterion)
    base = {
        "campaign": campaign.name,
        "metric": run.metric,
        "run": run.pk,
        "signature": run.signature,
        "higher_is_better": run.higher_is_better,
        "criterion": criterion,
        "judgements_used": j.describe(),
    }
    from annotations.analysis import judges  # lazy: cycle with analysis.judges, which reads through this module

    if method == SPAN_F1:
        figures = span_report(campaign=campaign, run=run, j=j, criterion=criterion)
        return {
            **base,
            "method": SPAN_F1,
            SPAN_F1: figures["overall"]["f1"],
            "wmt25-f1": figures["overall"]["wmt25"]["f1"],
            "n": figures["overall"]["outputs"],
            **figures,
        }
    if method == SPAN_GAMMA:
        figures = span_gamma_report(campaign=campaign, run=run, j=j, criterion=criterion)
        return {
            **base,
            "method": SPAN_GAMMA,
            SPAN_GAMMA: figures["overall"]["gamma"],
            "n": figures["overall"]["outputs"],
            **figures,
        }
    if method == ERROR_FREE:
        figures = error_free_report(campaign=campaign, run=run, j=j, criterion=criterion, seed=seed)
        return {**base, "method": ERROR_FREE, ERROR_FREE: figures["held_out"]["f1"], **figures}
    if method == ALT_TEST:
        figures = judges.alt_test_report(
            campaign=campaign,
            run=run,
            j=j,
            criterion=criterion,
            epsilon=epsilon,
            scoring=alt_scoring,
            q_fdr=q_fdr,
            min_instances=min_instances,
        )
        return {
            **base,
            "method": ALT_TEST,
            "n": figures["instances"],
            ALT_TEST: figures["winning_rate"],
            **figures,
            "test": ALT_TEST_LABEL,
        }
    if judges.is_judge(run):
        base["probes"] = judges.judge_probes(campaign=campaign, run=run, j=j, criterion=criterion, normalize=normalize)
    outputs = output_index(campaign=campaign)
    if j.protocol.correlate_as_pair_agreement:
        return {
            **base,
            **pairwise_agreement(
                j,
                criterion,
                scores_by_output(run=run),
                run.higher_is_better,
                min_votes=min_votes,
                min_consensus=min_consensus,
            ),
        }
    if j.protocol.derives_pairs:
        # Pairs judged on one screen: the metric's agreement with the preferences the scores imply.
        derived = Loaded(judgements=j.judgements, rows={criterion: j.protocol.pair_rows(j.rows.get(criterion, []))})
        base["pairwise_derived"] = {
            "from": j.protocol.derived_pairs_label,
            **pairwise_agreement(
                derived,
                criterion,
                scores_by_output(run=run),
                run.higher_is_better,
                min_votes=min_votes,
                min_consensus=min_consensus,
            ),
        }
    human = human_output_scores(j, criterion, normalize=normalize)
    # Both sides oriented so that higher is better (the metric by its sign): a human error rate
    # (post-editing's HTER) is negated, so a good metric correlates positively.
    oriented = human if j.protocol.higher_is_better else {o: -v for o, v in human.items()}
    if not j.protocol.higher_is_better:
        base["human_orientation"] = f"{j.protocol.agreement.value} negated (lower is better), as metrics are oriented"
    sign, systems, items, H, M = _metric_matrix(outputs, oriented, run)
    stat = _Statistic(method, level, group_by, spa_k=spa_permutations, spa_seed=spa_seed)
    level = stat.level
    base.update({"level": level, "method": method, "group_by": group_by, "normalize": normalize})
    Hc, Mc, used = stat.inputs(run, systems, H, M, sign)
    M2c = None
    if compare:
        run2 = run_for_metric(dataset=campaign.dataset, metric=compare)
        if run2 is None:
            raise AnalysisError(f"no done run of metric {compare!r} on dataset {campaign.dataset.name!r}")
        sign2, _, _, _, M2 = _metric_matrix(outputs, oriented, run2)
        M2c = stat.inputs(run2, systems, H, M2, sign2)[1]
        Hc, Mc, M2c = stat.prepare(Hc, Mc, M2c)
    else:
        Hc, Mc = stat.prepare(Hc, Mc)
    res = stat.value(Hc, Mc)
    if used is not None:
        base["system_metric_scores"] = used["label"]
        base["system_scores"] = used
    if method == "spa":
        ci = [None, None]  # each draw would need its own permutation tests: not computed
    elif level == "system":
        ci = _system_ci(H, M, stat, bootstrap, seed)
    else:
        ci = (
            co.bootstrap_ci(H, M, method, stat.avg, reps=bootstrap, seed=seed)
            if method != "pdp"
            else _pdp_ci(H, M, stat.avg, bootstrap, seed)
        )
    out = {
        **base,
        "n": res["n"],
        method: _num(res["value"]),
        "ci95": [_num(x) for x in ci],
        "groups": res["groups"],
        "bootstrap": {"reps": bootstrap, "seed": seed, "resampled": "items"},
    }
    if out["ci95"] == [None, None]:
        out["ci95_note"] = _no_interval_reason(method, level, H, bootstrap)
    if method == "spa":
        out["bootstrap"] = {"reps": 0, "seed": seed, "resampled": "none: no interval for SPA"}
        out["spa"] = _num(res["value"])
        out["permutations"] = stat.describe()
    elif level == "system":
        # The resamples rank systems by a mean over the drawn items: a corpus score per draw would
        # need every metric's statistics. Said here so the interval is not read as the point's.
        out["bootstrap"]["system_metric_scores"] = "mean of segment scores over the resampled items"
    if method == "acc23":
        out["epsilon"] = res["epsilon"]
        if "sample_rate" in res:
            out["sample_rate"] = res["sample_rate"]
    if compare:
        out.update({"compare": run2.metric, "compare_run": run2.pk})
    if compare and perm_both_test:
        # PermutationSigDiff(corr(METRIC2), corr(METRIC)): p that METRIC correlates better than METRIC2.
        test = co.perm_both(Hc, M2c, Mc, method, stat.avg, seed=seed, corr_fn=stat.corr_fn())
        out.update(
            {
                "p_value": test["p_value"],
                "delta": test["delta"],
                "resamples": test["resamples"],
                "test_seed": seed,
                "test": "PERM-BOTH (mt-metrics-eval PermutationSigDiff); p_value: METRIC better than METRIC2",
            }
        )
    if compare and method == "acc23":
        # WMT23-25's tasks test acc23 by permuting pairs, each metric at its own epsilon.
        n_pairs = sum(len(h) * (len(h) - 1) // 2 for h, _ in co.rows(Hc, Mc, stat.avg))
        if n_pairs > max_pairs:
            out["pairs_test"] = {
                "p_value": None,
                "label": PAIRS_TEST_LABEL,
                "skipped": f"{n_pairs} pairs per resample (more than {max_pairs}): "
                + (
                    "group by item (--group-by item), as WMT's tasks do"
                    if max_pairs == co.MAX_PAIRS
                    else "too many for this page; run `correlate --method acc23 --group-by item --compare`"
                ),
            }
        else:
            pairs = co.perm_pairs(Hc, M2c, Mc, stat.avg, seed=seed)
            out["pairs_test"] = {**pairs, "seed": seed, "label": PAIRS_TEST_LABEL}
    ceiling = other_wave_figure(
        campaign=campaign,
        criterion=criterion,
        stat=stat,
        normalize=normalize,
        annotators=annotators,
        outputs=outputs,
        human=human,
    )
    if ceiling is not None:
        out["human_ceiling"] = ceiling
    return out


ERROR_FREE = "error-free"
SPAN_F1 = "span-f1"
SPAN_GAMMA = "span-gamma"
# What `correlate --method` and the API's `method` accept (one list for both).
CORRELATION_METHODS = (
    "pearson",
    "spearman",
    "kendall",
    "acc23",
    "spa",
    "pdp",
    "alt-test",
    ERROR_FREE,
    SPAN_F1,
    SPAN_GAMMA,
)


def _span_inputs(*, campaign: Campaign, run, j: Loaded, criterion: str):
    """The outputs both the humans and a span-producing metric run judged: (outputs in item, system
    order, their ids per system, the metric's spans, every annotator's spans, the human error
    characters, the output texts)."""
    if not j.protocol.has_spans:
        raise AnalysisError(
            f"span meta-evaluation needs a campaign with error spans (ESA, MQM); "
            f"{campaign.name!r} is {campaign.protocol}"
        )
    extras = extras_by_output(run=run)
    texts = output_texts(ids=extras)
    predicted = {}
    for o, e in extras.items():
        found = se.predicted_spans(e, texts.get(o, ""))
        if found is not None:
            predicted[o] = found
    if not predicted:
        raise AnalysisError(
            f"run {run.pk} ({run.metric}) stored no error spans: span meta-evaluation needs a "
            "metric that produces spans (llm-judge in spans mode, xcomet, minwed, mincer)"
        )
    human: dict[int, set] = defaultdict(set)
    annotations: dict[int, list[list[dict]]] = defaultdict(list)
    for r in j.rows.get(criterion, []):
        human[r.output_id] |= se.chars(r.spans)
        annotations[r.output_id].append(list(r.spans or []))
    outputs = output_index(campaign=campaign)
    used = sorted(
        (o for o in set(annotations) & set(predicted) if o in outputs),
        key=lambda o: (str(outputs[o]["item_ext"]), outputs[o]["system"]),
    )
    by_system: dict[str, list[int]] = defaultdict(list)
    for o in used:
        by_system[outputs[o]["system"]].append(o)
    return used, by_system, predicted, annotations, human, texts


def span_report(*, campaign: Campaign, run, j: Loaded, criterion: str) -> dict:
    """A span-producing metric run against the campaign's error spans: character-level P/R/F1,
    WMT25's severity-weighted F1 and factgenie's span F1 (span_eval.py), overall and per system."""
    used, by_system, predicted, annotations, human, texts = _span_inputs(
        campaign=campaign, run=run, j=j, criterion=criterion
    )

    def figures(ids: list[int]) -> dict:
        return {
            **se.micro([(human[o], se.chars(predicted[o])) for o in ids]),
            "wmt25": se.wmt25_f1([(len(texts.get(o, "")), g, predicted[o]) for o in ids for g in annotations[o]]),
            "factgenie": {
                m: se.factgenie_f1([([s for g in annotations[o] for s in g], predicted[o]) for o in ids], match=m)
                for m in ("hard", "soft")
            },
        }

    return {
        "label": se.LABEL,
        "wmt25_label": se.WMT25_LABEL,
        "factgenie_label": se.FACTGENIE_LABEL,
        "overall": figures(used),
        "per_system": {s: figures(ids) for s, ids in sorted(by_system.items())},
        "gamma": f"factgenie's span gamma: correlate --method {SPAN_GAMMA}",
    }


def span_gamma_report(*, campaign: Campaign, run, j: Loaded, criterion: str) -> dict:
    """factgenie's span gamma (gamma.py) of a span-producing metric run against the campaign's error
    spans, overall and per system: each output's gamma computed once, averaged over the outputs of
    the whole campaign and of each system."""
    used, by_system, predicted, annotations, _, _ = _span_inputs(campaign=campaign, run=run, j=j, criterion=criterion)
    per_output = {o: ga.output_gamma([s for g in annotations[o] for s in g], predicted[o]) for o in used}
    return {
        "label": ga.GAMMA_LABEL,
        "overall": ga.factgenie_gamma([per_output[o] for o in used]),
        "per_system": {s: ga.factgenie_gamma([per_output[o] for o in ids]) for s, ids in sorted(by_system.items())},
    }


def error_free_report(*, campaign: Campaign, run, j: Loaded, criterion: str, seed: int = 0) -> dict:
    """Error-free detection (error_free.py) of a metric run against an ESA campaign's outputs."""

    low, high = campaign.criterion_scale(criterion)
    if not j.protocol.has_spans or low is None or high is None or not low <= ef.GOLD_SCORE <= high:
        raise AnalysisError(
            f"error-free detection needs a campaign with error spans and a scale that holds "
            f"{ef.GOLD_SCORE:g} (ESA, 0-100); {campaign.name!r} is {campaign.protocol} "
            f"with scale {low}-{high}"
        )
    rows = j.rows.get(criterion, [])
    scores = human_output_scores(j, criterion)
    marked = {r.output_id for r in rows if any(not s.get("missing") for s in r.spans)}
    outputs = output_index(campaign=campaign)
    metric = scores_by_output(run=run)
    sign = 1.0 if run.higher_is_better else -1.0
    used = sorted(
        (o for o in scores if o in outputs and metric.get(o) is not None and np.isfinite(metric[o])),
        key=lambda o: (str(outputs[o]["item_ext"]), outputs[o]["system"]),
    )
    gold = np.array([scores[o] >= ef.GOLD_SCORE and o not in marked for o in used], dtype=bool)
    values = np.array([sign * metric[o] for o in used], dtype=float)
    figures = ef.detection(gold, values, [outputs[o]["item_ext"] for o in used], seed=seed)
    if not run.higher_is_better:
        # Thresholds were found on the negated scores: say them in the metric's own units.
        for part in ("held_out", "best_on_all"):
            t = figures[part]["threshold"]
            figures[part]["threshold"] = None if t is None else -t
            figures[part]["predicted"] = "error-free when the metric's score <= threshold (lower is better)"
    return figures


# ---- second waves ----------------------------------------------------------------


def _other_wave(campaign: Campaign):
    pair = wave_pair(campaign)
    if pair is None:
        return None, None
    first, second = pair
    return (second, "human2") if campaign.pk == first.pk else (first, "human1")


def other_wave_figure(
    *, campaign: Campaign, criterion: str, stat, normalize: str, annotators: str, outputs: dict, human: dict
) -> dict | None:
    """The other human wave scored like a metric against this campaign's humans: the ceiling."""
    other, role = _other_wave(campaign)
    if other is None:
        return None
    j2 = load(campaign=other, annotators=annotators, criterion=criterion)
    h2 = human_output_scores(j2, criterion, normalize=normalize)
    systems, _items, H, M = _matrices(outputs, human, h2, 1.0)
    Hc, Mc, _ = stat.inputs(None, systems, H, M, 1.0)
    Hc, Mc = stat.prepare(Hc, Mc)
    res = stat.value(Hc, Mc)
    return {
        "wave": other.name,
        "role": role,
        stat.method: _num(res["value"]),
        "n": res["n"],
        "judgements_used": j2.describe(),
        "what": f"the other human wave ({role}) scored like a metric against these judgements",
    }


def waves_report(
    *,
    campaign: Campaign,
    criterion: str | None = None,
    annotators: str = INCLUDED,
    threshold: float = wv.DISCREPANCY_THRESHOLD,
) -> dict | None:
    """human1 vs human2: segment and system agreement, the reproducibility figure (CV*), and the
    outputs whose two waves differ by more than `threshold` ("discrepancies")."""
    pair = wave_pair(campaign)
    if pair is None:
        return None
    first, second = pair
    j1 = load(campaign=first, annotators=annotators, criterion=criterion)
    j2 = load(campaign=second, annotators=annotators, criterion=criterion)
    outputs = output_index(campaign=first)
    out = {
        "human1": first.name,
        "human2": second.name,
        "annotators_in_both": wave_annotators_overlap(first=first, second=second),
        "criteria": {},
    }
    for c in _criteria(j1, criterion):
        h1, h2 = human_output_scores(j1, c), human_output_scores(j2, c)
        figures = wv.agreement(h1, h2, outputs, shift=wv.scale_shift(first, c, j1.protocol))
        # The protocol's scores as its headline reads them ("z": RankME's per-annotator z-scores).
        figures["variant"] = j1.protocol.agreement.variant
        figures["discrepancies"] = wv.discrepancies(h1, h2, outputs, threshold=threshold)
        out["criteria"][c] = figures
    out["discrepancy_threshold"] = threshold
    out["discrepancy_label"] = (
        f"outputs whose two waves' scores differ by more than {threshold:g} points "
        "(WMT25 general task, wmt25-general-mt issue #3)"
    )
    return out


def compare_all_report(
    *,
    campaign: Campaign,
    criterion: str,
    level: str = "system",
    method: str = "spa",
    group_by: str = "none",
    normalize: str = "none",
    annotators: str = INCLUDED,
    seed: int = 0,
    resamples: int = 1000,
    threshold: float = 0.05,
    spa_permutations: int = co.SPA_PERMUTATIONS,
    spa_seed: int = co.SPA_SEED,
    systems: list[str] | None = None,
    loaded: Loaded | None = None,
) -> dict:
    """Every done metric run ranked by one figure, PERM-BOTH between every pair, and clusters as
    mt-metrics-eval's `CompareMetrics` + `AssignRanks` make them. `loaded`: the campaign's
    judgements already read by the caller with the same `annotators` (the meta-evaluation page),
    so they are not read a second time while the first copy is held."""
    _check_method(method, group_by, level)
    if method in (ALT_TEST, ERROR_FREE, SPAN_F1, SPAN_GAMMA):
        raise AnalysisError(f"--compare-all ranks correlations; {method} is per run (give --metric)")
    if criterion not in campaign.criteria:
        raise AnalysisError(f"criterion {criterion!r} is not one of the campaign's: {', '.join(campaign.criteria)}")
    j = loaded if loaded is not None else load(campaign=campaign, annotators=annotators, criterion=criterion)
    if j.protocol.correlate_as_pair_agreement:
        raise AnalysisError(
            f"a {campaign.protocol} campaign has no per-output human score to correlate: "
            "--compare-all needs a rating, ESA or best-worst campaign"
        )
    runs = list(latest_done_runs(dataset=campaign.dataset))
    if len(runs) < 2:
        raise AnalysisError(f"--compare-all needs at least two done metric runs on dataset {campaign.dataset.name!r}")
    outputs = {o: v for o, v in output_index(campaign=campaign).items() if not systems or v["system"] in systems}
    human = human_output_scores(j, criterion, normalize=normalize)
    stat = _Statistic(method, level, group_by, spa_k=spa_permutations, spa_seed=spa_seed)
    names = _run_names(runs)
    Hc, mats = None, []
    for run in runs:
        sign, systems, _items, H, M = _metric_matrix(outputs, human, run)
        Hc, Mc, _ = stat.inputs(run, systems, H, M, sign)
        mats.append(Mc)
    Hc, *mats = stat.prepare(Hc, *mats)
    values = {names[r.pk]: stat.value(Hc, M)["value"] for r, M in zip(runs, mats)}
    by_name = {names[r.pk]: M for r, M in zip(runs, mats)}
    # Decreasing value, the name breaking ties (mt-metrics-eval sorts by (-corr, name)); NaN last.
    order = sorted(values, key=lambda n: (-values[n] if np.isfinite(values[n]) else np.inf, n))
    # A figure that cannot be computed (one system, constant scores) gets no rank and no test.
    undefined = [m for m in order if not np.isfinite(values[m])]
    order = [m for m in order if np.isfinite(values[m])]
    n = len(order)
    P = np.zeros((n, n))
    p_values: dict = {}
    used = 0
    for a in range(n):
        for b in range(a + 1, n):
            # sig_matrix[a, b]: p that metric b correlates at least as well as metric a
            # = PermutationSigDiff(corr(b), corr(a)) = p that a is better than b.
            test = co.perm_both(
                Hc,
                by_name[order[b]],
                by_name[order[a]],
                method,
                stat.avg,
                k=resamples,
                seed=seed,
                corr_fn=stat.corr_fn(),
            )
            P[a, b] = test["p_value"]
            used = max(used, test["resamples"])
            p_values.setdefault(order[a], {})[order[b]] = test["p_value"]
    ranks = co.assign_ranks(P, threshold)
    clusters: list[list[str]] = []
    for name, rank in zip(order, ranks):
        if len(clusters) < rank:
            clusters.append([])
        clusters[-1].append(name)
    return {
        "campaign": campaign.name,
        "criterion": criterion,
        "method": method,
        "level": stat.level,
        "group_by": group_by,
        "normalize": normalize,
        "judgements_used": j.judgements.describe(len(j.rows.get(criterion, []))),
        "metrics": [{"metric": name, "value": _num(values[name]), "rank": rank} for name, rank in zip(order, ranks)]
        + [{"metric": name, "value": None, "rank": None} for name in undefined],
        "clusters": clusters,
        "p_values": p_values,
        "threshold": threshold,
        "test": "PERM-BOTH (mt-metrics-eval PermutationSigDiff) between every pair; p_values[A][B]: p that A "
        "(ranked above) is not better than B; ranks as mt-metrics-eval's AssignRanks",
        "seed": seed,
        "resamples": resamples,
        "resamples_used_max": used,
        **({"permutations": stat.describe()} if method == "spa" else {}),
    }


def _run_names(runs) -> dict[int, str]:
    """A metric's name, or name#run when two done runs share it."""
    counts: dict[str, int] = defaultdict(int)
    for r in runs:
        counts[r.metric] += 1
    return {r.pk: r.metric if counts[r.metric] == 1 else f"{r.metric}#{r.pk}" for r in runs}


def _pdp_ci(H, M, avg, reps, seed):
    n = H.shape[1]
    if reps <= 0 or n < 3:
        return [None, None]
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(reps):
        pick = rng.integers(0, n, n)
        v = co.pdp(H[:, pick], M[:, pick], avg)["value"]
        if np.isfinite(v):
            values.append(v)
    return [float(x) for x in np.percentile(values, [2.5, 97.5])] if len(values) > 1 else [None, None]


def _num(x):
    return None if x is None or not np.isfinite(x) else float(x)


def _system_level(run, systems, H, M, sign):
    """System-level human and metric scores (1 x systems) and what the metric's are: the run's
    system scores (the metric's corpus score, `system_scores`); only when the run has none for
    some system, the mean of segment scores over the judged outputs, labelled so with the reason."""
    human = np.nanmean(np.where(np.isnan(H), np.nan, H), axis=1)
    stored = system_scores(run=run)
    missing = stored.missing(systems)
    if not missing:
        metric = np.array([sign * stored.scores[s] for s in systems])
        used = {
            "label": stored.label,
            "aggregate": stored.aggregate,
            "scores": {s: stored.scores[s] for s in systems},
            "fallback": None,
        }
        return human.reshape(1, -1), metric.reshape(1, -1), used
    with np.errstate(all="ignore"):
        metric = np.nanmean(np.where(np.isnan(H), np.nan, M), axis=1)
    used = {
        "label": "mean of segment scores over the judged outputs",
        "aggregate": "mean of segment scores",
        "scores": {s: _num(sign * v) for s, v in zip(systems, metric)},
        "fallback": f"the run stored no {stored.aggregate} for system(s) {', '.join(missing)}",
    }
    return human.reshape(1, -1), metric.reshape(1, -1), used


def _no_interval_reason(method: str, level: str, H, reps: int) -> str:
    """Why a figure comes without an interval, said next to it (never a silent blank)."""
    if method == "spa":
        return "no interval for SPA: each resample would need its own permutation tests"
    if reps <= 0:
        return "no interval: --bootstrap 0 draws no resamples"
    if H.shape[1] < 3 or (level == "system" and H.shape[0] < 3):
        return "no interval: fewer than 3 items (or, at system level, 3 systems) to resample"
    return "no interval: fewer than 2 resamples gave a defined value"


def _system_ci(H, M, stat: "_Statistic", reps, seed):
    """95% percentile interval of a system-level figure from resampling items: each draw scores
    the systems by their mean over the drawn items and computes the same statistic (`stat.value`,
    so PDP gets PDP's function, not a correlation's)."""
    n = H.shape[1]
    if reps <= 0 or n < 3 or H.shape[0] < 3:
        return [None, None]
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(reps):
        pick = rng.integers(0, n, n)
        h, m = H[:, pick], M[:, pick]
        with np.errstate(all="ignore"), __import__("warnings").catch_warnings():
            __import__("warnings").simplefilter("ignore")
            hs = np.nanmean(h, axis=1)
            ms = np.nanmean(np.where(np.isnan(h), np.nan, m), axis=1)
        v = stat.value(hs.reshape(1, -1), ms.reshape(1, -1))["value"]
        if np.isfinite(v):
            values.append(v)
    if len(values) < 2:
        return [None, None]
    return [float(x) for x in np.percentile(values, [2.5, 97.5])]


def pairwise_agreement(
    j: Loaded,
    criterion: str,
    metric: dict[int, float | None],
    higher_is_better: bool,
    *,
    min_votes: int = 1,
    min_consensus: float = 0.0,
) -> dict:
    """Share of compared pairs where the metric prefers the output most humans preferred.

    A pair is (item, output a, output b). A tie on either side (equal votes for
    a and b, equal metric scores) counts as disagreement. `min_votes` drops
    pairs with fewer votes (tie votes included); `min_consensus` keeps pairs
    whose majority share (votes for the preferred side / all votes) is at least X.
    """
    votes: dict[tuple, list[int]] = defaultdict(lambda: [0, 0, 0])
    for r in j.rows.get(criterion, []):
        votes[(r.item_id, r.a_id, r.b_id)][{"a": 0, "b": 1, "tie": 2}[r.winner]] += 1
    sign = 1.0 if higher_is_better else -1.0
    agree = compared = skipped_no_score = 0
    for (_i, oa, ob), (va, vb, vt) in votes.items():
        total = va + vb + vt
        if total < min_votes or max(va, vb) / total < min_consensus:
            continue
        ma, mb = metric.get(oa), metric.get(ob)
        if ma is None or mb is None:
            skipped_no_score += 1
            continue
        compared += 1
        human = (va > vb) - (va < vb)
        machine = (sign * ma > sign * mb) - (sign * ma < sign * mb)
        if human != 0 and human == machine:
            agree += 1
    return {
        "n": compared,
        "agreement": agree / compared if compared else None,
        "min_votes": min_votes,
        "min_consensus": min_consensus,
        "pairs": len(votes),
        "skipped_without_metric_score": skipped_no_score,
    }
