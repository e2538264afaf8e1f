"""Reference SARI implementations for the tests, transcribed (not imported: neither
script is installable here) so that our scorer is checked against their logic,
not against itself.

- `sarisent`: a transcription of the logic of the authors' script, `SARI.py`
  (Xu et al. 2016, github.com/cocoxu/simplification, commit 0210f15,
  functions `SARIsent` and `SARIngram`): lowercase, split on single spaces,
  n-grams as space-joined strings, keep F1 / delete precision / add F1 per
  order with 0 for an empty denominator, averaged over orders 1-4.
- `easse_corpus_sari`: a transcription of the logic of EASSE's `corpus_sari`
  with its defaults (github.com/feralvam/easse 0.2.4, commit 6a4352e,
  `easse/sari.py`: `compute_ngram_stats`, `compute_macro_sari`,
  `compute_precision_recall_f1`; `easse/utils/preprocessing.py`: `normalize`):
  lowercase, sacrebleu's 13a tokenizer, split on any whitespace, counts summed
  over the corpus, F1 for add, keep and delete.

Both transcriptions were checked against the original files run from their
repositories (outside this project) on the random texts of test_sari.py.
"""

from __future__ import annotations

from collections import Counter


def _grams(tokens: list[str], n: int) -> list[str]:
    return [" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def _sari_ngram(sgrams: list[str], cgrams: list[str], rgramslist: list[list[str]], numref: int):
    rcount = Counter(g for rgrams in rgramslist for g in rgrams)
    srep = Counter({g: c * numref for g, c in Counter(sgrams).items()})
    crep = Counter({g: c * numref for g, c in Counter(cgrams).items()})

    keep, keep_all = srep & crep, srep & rcount
    keep_good = keep & rcount
    p1 = sum(keep_good[g] / keep[g] for g in keep_good)
    p2 = sum(keep_good[g] / keep_all[g] for g in keep_good)
    keep_p = p1 / len(keep) if len(keep) > 0 else 0
    keep_r = p2 / len(keep_all) if len(keep_all) > 0 else 0
    keep_f = 2 * keep_p * keep_r / (keep_p + keep_r) if keep_p > 0 or keep_r > 0 else 0

    dele = srep - crep
    del_good = dele - rcount
    d1 = sum(del_good[g] / dele[g] for g in del_good)
    del_p = d1 / len(dele) if len(dele) > 0 else 0

    add = set(cgrams) - set(sgrams)
    add_good = add & set(rcount)
    add_all = set(rcount) - set(sgrams)
    add_p = len(add_good) / len(add) if len(add) > 0 else 0
    add_r = len(add_good) / len(add_all) if len(add_all) > 0 else 0
    add_f = 2 * add_p * add_r / (add_p + add_r) if add_p > 0 or add_r > 0 else 0
    # The script returns delete *precision* (its delete F1 is computed, then unused).
    return keep_f, del_p, add_f


def sarisent(ssent: str, csent: str, rsents: list[str]) -> float:
    """SARI.py's `SARIsent`, 0-1."""
    numref = len(rsents)
    s1, c1 = ssent.lower().split(" "), csent.lower().split(" ")
    r1 = [r.lower().split(" ") for r in rsents]
    keep = dele = add = 0.0
    for n in range(1, 5):
        k, d, a = _sari_ngram(_grams(s1, n), _grams(c1, n), [_grams(r, n) for r in r1], numref)
        keep, dele, add = keep + k, dele + d, add + a
    return (keep / 4 + dele / 4 + add / 4) / 3


def _normalize(text: str, lowercase: bool = True, tokenizer: str = "13a") -> str:
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    if lowercase:
        text = text.lower()
    # EASSE maps "none" to sacrebleu's BaseTokenizer, which raises NotImplementedError
    # in sacrebleu 2.x; "none" here means the text as it is.
    return Tokenizer13a()(text) if tokenizer == "13a" else text


def _ngram_counts(line: str) -> list[Counter]:
    tokens = line.split()
    return [Counter(_grams(tokens, n)) for n in range(1, 5)]


def easse_corpus_sari(
    orig_sents: list[str],
    sys_sents: list[str],
    refs_sents: list[list[str]],
    lowercase: bool = True,
    tokenizer: str = "13a",
) -> float:
    """EASSE's `corpus_sari` (refs_sents: one list per reference slot, as EASSE takes them), 0-100."""
    orig_sents = [_normalize(s, lowercase, tokenizer) for s in orig_sents]
    sys_sents = [_normalize(s, lowercase, tokenizer) for s in sys_sents]
    refs_sents = [[_normalize(s, lowercase, tokenizer) for s in slot] for slot in refs_sents]
    # Per order: add, keep, delete as (system correct, system total, reference total).
    stats = [[[0, 0, 0] for _ in range(3)] for _ in range(4)]
    for orig, out, *refs in zip(orig_sents, sys_sents, *refs_sents):
        o, s = _ngram_counts(orig), _ngram_counts(out)
        r = [Counter() for _ in range(4)]
        for ref in refs:
            for n, c in enumerate(_ngram_counts(ref)):
                r[n] += c
        m = len(refs)
        for n in range(4):
            add, to_add = set(s[n]) - set(o[n]), set(r[n]) - set(o[n])
            stats[n][0][0] += len(add & set(r[n]))
            stats[n][0][1] += len(add)
            stats[n][0][2] += len(to_add)
            orep = Counter({g: c * m for g, c in o[n].items()})
            srep = Counter({g: c * m for g, c in s[n].items()})
            kept, to_keep = orep & srep, orep & r[n]
            stats[n][1][0] += sum((kept & to_keep).values())
            stats[n][1][1] += sum(kept.values())
            stats[n][1][2] += sum(to_keep.values())
            deleted, to_delete = orep - srep, orep - r[n]
            stats[n][2][0] += sum((deleted & to_delete).values())
            stats[n][2][1] += sum(deleted.values())
            stats[n][2][2] += sum(to_delete.values())

    def f1(correct, system, reference):
        p = correct / system if system > 0 else 0.0
        r = correct / reference if reference > 0 else 0.0
        return 2 * p * r / (p + r) if p > 0 and r > 0 else 0.0

    add = keep = delete = 0.0
    for n in range(4):
        add += f1(*stats[n][0]) / 4
        keep += f1(*stats[n][1]) / 4
        delete += f1(*stats[n][2]) / 4
    return (100.0 * add + 100.0 * keep + 100.0 * delete) / 3
