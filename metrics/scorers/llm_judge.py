"""An LLM judge as a metric: a local causal language model scores each output.

The model is any causal LM saved with `save_pretrained()` in a local directory
(`model=/path`, or a name mapped in WORKBENCH_MODELS); it is loaded with
transformers and never downloaded. The prompt is a versioned template
(`llm_judge_prompts`), wrapped in the tokenizer's chat template where it has
one. Decoding is deterministic (greedy) unless `temperature` > 0 (spans mode
only, seeded by `seed`).

Modes:

* `score` (G-Eval, Liu et al. 2023): the next-token distribution after the
  prompt (which ends with e.g. "Score:") is read at the score tokens: every
  token whose text, stripped of spaces, is one value of `scale` ("1".."5"; "7"
  and " 7" both count for 7). Their probabilities, renormalised to sum to 1,
  weigh the values: score = sum(v * p(v)). Nothing is parsed from generated
  text. Where some value of the scale is several tokens (0-100 with a
  tokenizer that splits numbers into digits), p(v) is read by teacher forcing
  instead: the probability of v's tokens one after the other, times the
  probability that the next token does not continue the number (does not
  start with a digit), renormalised over the scale. Segment JSON:
  `probabilities` {value: p}, `mass` (the probability the model put on the
  scale's values at all, before renormalising).
* `pairwise`: for every two outputs of the same item, the judge is asked
  "A or B?" in both orders; the preference for the first output shown is
  P(A) / (P(A) + P(B)) over the answer tokens ("A"/" A", "B"/" B"). Each output
  is stored with its mean win probability against the other outputs of its
  item (each pair counted as the mean of both orders, so position bias
  cancels in the score): score in [0, 1], 0.5 = as good as the others. Segment
  JSON: `preference` (mean over opponents, this output shown first),
  `swapped` (the same with this output shown second: position consistency
  compares the two), `pairs` [{opponent, preference, swapped}] where
  `opponent` is the opponent's index among its item's outputs in plan order
  (item position, system name, output id). An item with a single output
  has no pair: its score is null (left out of means). Runs of this mode plan
  their chunks by whole items, so the pairs of an item are scored together.
* `spans` (ESA, Kocmi et al. 2024; MQM, Freitag et al. 2021): the judge
  writes JSON error spans under constrained decoding (`span_grammar`: a
  character automaton applied as a transformers LogitsProcessor), so the
  answer always parses and every quote is a substring of the output; quotes
  are mapped to character offsets, a repeated quote resolved by its
  occurrence index as factgenie does. Segment JSON: `spans`
  [{start, end, severity, category?, text}], `raw` (the JSON written).
  Score = -(1 x minor + 5 x major): MQM's severity weights (Freitag et al.
  2021), 0 for no error, higher is better.

Outputs whose prompt exceeds `max_input_tokens` (default: the model's
context, less `max_new_tokens` in spans mode) are cut at a token boundary,
never silently: the segment JSON says `truncated`, the corpus result counts
them (`truncated`, with a `warnings` line) and the worker logs a warning.

The signature names the model directory, the prompt template's name and a
hash of its text, the scale, the decoding settings, the compute dtype and
hashes of the model's config, weights and tokenizer files.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
import threading
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, ClassVar

from metrics.scorers.base import CorpusResult, Metric, SegmentResult
from metrics.scorers.errors import InputError, MetricError, ModelNotAvailable, OptionError
from metrics.scorers.files import read_text
from metrics.scorers.llm_judge_prompts import BUILTIN, DEFAULTS, MQM_CATEGORIES
from metrics.scorers.loading import (
    LazyModule,
    causal_lm_check,
    compute_dtype_name,
    pick_device,
    resolve_model_path,
    torch_dtype,
)
from metrics.scorers.progress import step
from metrics.scorers.span_grammar import END, SpanAutomaton, parse_answer, quotable, resolve_spans

torch = LazyModule("torch")  # imported on first use (see LazyModule)

logger = logging.getLogger(__name__)

MODES = ("score", "pairwise", "spans")
PROTOCOLS = {"score": ("da",), "pairwise": ("pairwise",), "spans": ("esa", "mqm")}
DEFAULT_SCALE = "1-5"
SEVERITY_WEIGHTS = {"minor": 1.0, "major": 5.0}
PLACEHOLDERS = ("source", "reference", "data", "output", "output_a", "output_b", "low", "high", "categories")
_PLACEHOLDER = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")
# A prompt file larger than this is a mistake (a dataset given as prompt?), not a template.
MAX_PROMPT_BYTES = 200_000


# ---- prompt templates ---------------------------------------------------------
class Template:
    """A prompt template: `name`, `text`, and its rendering for one segment."""

    def __init__(self, name: str, text: str) -> None:
        self.name = name
        self.text = text
        user, sep, prefix = text.partition("\n[answer]\n")
        if not sep and text.endswith("\n[answer]"):
            user, prefix = text[: -len("\n[answer]")], ""
        self.user, self.prefix = user, prefix
        self.fields = set(_PLACEHOLDER.findall(text))

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()[:12]

    def render(self, values: dict[str, str]) -> tuple[str, str]:
        """(user message, answer prefix); a line whose placeholders are all empty is dropped."""
        lines = []
        for line in self.user.split("\n"):
            names = _PLACEHOLDER.findall(line)
            if names and all(not values.get(n) for n in names):
                continue
            lines.append(_PLACEHOLDER.sub(lambda m: values.get(m.group(1), ""), line))
        return "\n".join(lines), _PLACEHOLDER.sub(lambda m: values.get(m.group(1), ""), self.prefix)


def load_template(prompt: str | None, mode: str, protocol: str) -> Template:
    """A built-in template by name, or a template file (UTF-8 text)."""
    if not prompt:
        name = DEFAULTS[(mode, protocol)]
        return Template(name, BUILTIN[name])
    if prompt in BUILTIN:
        return Template(prompt, BUILTIN[prompt])
    return Template(Path(prompt).name, read_prompt_file(prompt))


def read_prompt_file(prompt: str) -> str:
    """The text of a template file. Read only where the metric scores (a worker, the
    `score` command), never where a run is merely requested; the path rules of the
    other path-valued options apply (metrics.scorers.files: inside WORKBENCH_DATA_DIRS, a
    regular file, size-bounded, one answer for every refusal)."""

    text = read_text("prompt", prompt)
    if len(text.encode("utf-8")) > MAX_PROMPT_BYTES:
        raise OptionError(f"llm-judge: the prompt file is larger than {MAX_PROMPT_BYTES} bytes")
    return text


def parse_scale(value: str) -> tuple[int, int]:
    match = re.fullmatch(r"\s*(\d{1,4})\s*-\s*(\d{1,4})\s*", str(value))
    if not match or int(match.group(1)) >= int(match.group(2)):
        raise OptionError(f"llm-judge: scale={value!r}: expected LOW-HIGH integers with LOW < HIGH, e.g. 1-5 or 0-100")
    low, high = int(match.group(1)), int(match.group(2))
    if high - low > 1000:
        raise OptionError(f"llm-judge: scale={value!r} has more than 1001 values")
    return low, high


# ---- model files --------------------------------------------------------------
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
_TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.json",
    "merges.txt",
    "tokenizer.model",
    "added_tokens.json",
    "chat_template.jinja",
    "chat_template.json",
)
_DIGESTS: dict[str, str] = {}
DIGEST_CACHE_MIN_BYTES = 64 * 2**20
_DIGESTS_LOCK = threading.Lock()


def _digest_cache_file() -> Path:
    return Path(os.environ.get("WORKBENCH_DIGEST_CACHE") or Path.home() / ".cache" / "workbench" / "file-digests.json")


def _read_digest_cache() -> dict[str, str]:
    try:
        value = json.loads(_digest_cache_file().read_text(encoding="utf-8"))
        return value if isinstance(value, dict) else {}
    except (OSError, ValueError):
        return {}


def _store_digest(key: str, value: str) -> None:
    """Remember a digest across processes (an 8B checkpoint is 16 GB: reading it costs
    10 s to minutes); written atomically, and a failure to write only costs a re-read."""
    path = _digest_cache_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        table = _read_digest_cache()
        table[key] = value
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(dict(list(table.items())[-1000:])), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        logger.warning("llm-judge: cannot write the digest cache %s", path)


def files_digest(files: Sequence[Path]) -> str:
    """sha256 over the names and bytes of `files` (12 hex digits). Cached per (real path,
    inode, size, mtime) of every file, in the process and in WORKBENCH_DIGEST_CACHE
    (default ~/.cache/workbench/file-digests.json), so a checkpoint is read once."""
    parts = []
    for f in files:
        st = f.stat()
        parts.append(f"{os.path.realpath(f)}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}")
    key = hashlib.sha256("\n".join(parts).encode("utf-8", "surrogatepass")).hexdigest()
    with _DIGESTS_LOCK:
        if key in _DIGESTS:
            return _DIGESTS[key]
    value = _read_digest_cache().get(key)
    if not isinstance(value, str):
        digest = hashlib.sha256()
        for path in files:
            digest.update(path.name.encode("utf-8") + b"\0")
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 22), b""):
                    digest.update(block)
        value = digest.hexdigest()[:12]
        if sum(f.stat().st_size for f in files) >= DIGEST_CACHE_MIN_BYTES:  # small files: re-reading is cheap
            _store_digest(key, value)
    with _DIGESTS_LOCK:
        _DIGESTS[key] = value
    return value


def model_digests(path: Path) -> dict[str, str]:
    """Hashes of the config, the weights and the tokenizer files of a model directory."""
    weights = sorted(
        p for p in path.iterdir() if p.is_file() and p.suffix in _WEIGHT_SUFFIXES and p.name != "training_args.bin"
    )
    if not weights:
        raise ModelNotAvailable(
            f"model directory {path} has no weights (*.safetensors or *.bin): "
            "save the model there with model.save_pretrained(dir)"
        )
    tokenizer = sorted(path / name for name in _TOKENIZER_FILES if (path / name).is_file())
    return {
        "config": files_digest([path / "config.json"]),
        "weights": files_digest(weights),
        "tokenizer": files_digest(tokenizer) if tokenizer else "none",
    }


def context_length(path: Path) -> int:
    """The model's context in tokens, from config.json (4096 where it does not say)."""
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ModelNotAvailable(f"model directory {path}: config.json is unreadable ({exc})") from None
    for key in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        value = config.get(key)
        if isinstance(value, int) and value > 0:
            return value
    return 4096


# ---- the loaded model -----------------------------------------------------------
class JudgeModel:
    """A local causal LM and its fast tokenizer on one device, shared by every
    llm-judge metric of the process (one load per directory, device and dtype)."""

    def __init__(self, path: Path, device: str, dtype: str) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer  # lazy: heavy optional dependency (model metrics)

        self.path, self.device, self.dtype = path, device, dtype
        causal_lm_check(path, path.name)  # before transformers gives an encoder a random LM head
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(path), use_fast=True, local_files_only=True)
        except Exception as exc:  # transformers raises OSError, ValueError, KeyError ...
            raise ModelNotAvailable(f"llm-judge: cannot load a tokenizer from {path} ({_first_line(exc)})") from None
        try:
            model = AutoModelForCausalLM.from_pretrained(str(path), local_files_only=True, dtype=torch_dtype(dtype))
        except Exception as exc:
            raise ModelNotAvailable(
                f"llm-judge: cannot load a causal language model from {path} ({_first_line(exc)})"
            ) from None
        model.to(device)
        model.eval()
        self.tokenizer, self.model = tokenizer, model
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        self.pad_id = int(pad) if pad is not None else 0
        self.eos_id = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else self.pad_id
        self.chat = bool(getattr(tokenizer, "chat_template", None))
        self.lock = threading.Lock()
        self._surfaces: list[str | None] | None = None
        self._by_text: dict[str, list[int]] = {}
        self._by_first: dict[str, list[int]] = {}
        self.max_surface = 1
        self.literal_cache: dict[tuple, list[tuple[int, tuple]]] = {}
        self._min_tokens: dict[str, int] = {}

    # ---- vocabulary ----------------------------------------------------------
    def surfaces(self) -> list[str | None]:
        """The text each token adds when it follows other text (None: special or
        partial-character tokens, never allowed in constrained answers)."""
        if self._surfaces is None:
            tok = self.tokenizer
            specials = set(tok.all_special_ids)
            anchor = tok.encode("a", add_special_tokens=False)
            base = tok.decode(anchor) if anchor else ""
            out: list[str | None] = []
            for tid in range(len(tok)):
                if tid in specials:
                    out.append(None)
                    continue
                # Decoded after an anchor, so SentencePiece's leading space survives.
                text = tok.decode(anchor + [tid], clean_up_tokenization_spaces=False) if anchor else tok.decode([tid])
                text = text[len(base) :] if anchor and text.startswith(base) else tok.decode([tid])
                out.append(text if text and "\ufffd" not in text else None)
            self._surfaces = out
            for tid, text in enumerate(out):
                if text is None:
                    continue
                self._by_text.setdefault(text, []).append(tid)
                self._by_first.setdefault(text[0], []).append(tid)
            self.max_surface = max((len(t) for t in self._by_text), default=1)
        return self._surfaces

    def min_tokens(self, string: str) -> int:
        """Fewest tokens whose texts, one after another, spell `string` exactly
        (its length where single characters are the only way)."""
        cached = self._min_tokens.get(string)
        if cached is not None:
            return cached
        self.surfaces()
        best = [0] + [len(string) + 1] * len(string)
        for end in range(1, len(string) + 1):
            for start in range(max(0, end - self.max_surface), end):
                if best[start] + 1 < best[end] and string[start:end] in self._by_text:
                    best[end] = best[start] + 1
        value = min(best[-1], len(string)) if best[-1] <= len(string) else len(string)
        self._min_tokens[string] = value
        return value

    def tokens_for(self, word: str) -> list[int]:
        """Tokens whose text is `word`, with or without leading spaces."""
        self.surfaces()
        return sorted(
            tid
            for text, ids in self._by_text.items()
            if text.strip() == word and text.lstrip() == text.strip()
            for tid in ids
        )

    # ---- prompts ---------------------------------------------------------------
    def encode(self, user: str, prefix: str) -> list[int]:
        tok = self.tokenizer
        if self.chat:
            text = (
                tok.apply_chat_template([{"role": "user", "content": user}], tokenize=False, add_generation_prompt=True)
                + prefix
            )
            return tok(text, add_special_tokens=False)["input_ids"]
        return tok(user + "\n" + prefix)["input_ids"]

    # ---- forward passes ------------------------------------------------------
    def _padded(self, seqs: list[list[int]]):
        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for row, seq in enumerate(seqs):  # left padding: every prompt ends at the last column
            ids[row, width - len(seq) :] = torch.tensor(seq, dtype=torch.long)
            mask[row, width - len(seq) :] = 1
        return ids.to(self.device), mask.to(self.device)

    def next_token_probs(self, seqs: list[list[int]], select: list[int], batch_size: int) -> list[list[float]]:
        """P(next token = t) for t in `select` after each sequence (softmax over the
        whole vocabulary, in float32), batched by length, longest first."""
        out: list[list[float]] = [[] for _ in seqs]
        if not seqs:
            return out
        order = sorted(range(len(seqs)), key=lambda i: (-len(seqs[i]), i))
        index = torch.tensor(select, dtype=torch.long, device=self.device)
        with self.lock, torch.inference_mode():
            for start in range(0, len(order), batch_size):
                step(start, len(order))  # between batches: the caller may stop us here
                batch = order[start : start + batch_size]
                ids, mask = self._padded([seqs[i] for i in batch])
                # Positions count real tokens only, so a left-padded prompt is read as unpadded.
                positions = (mask.cumsum(-1) - 1).clamp(min=0)
                logits = self._last_logits(ids, mask, positions)
                probs = torch.softmax(logits.float(), dim=-1).index_select(-1, index).double().cpu().tolist()
                for row, i in enumerate(batch):
                    out[i] = probs[row]
        return out

    def continuation_probs(
        self, prompt: list[int], conts: list[list[int]], continuing: list[int], batch_size: int
    ) -> list[float]:
        """P(the model writes `cont` next, then a token not in `continuing`) after `prompt`,
        for each continuation, by teacher forcing (left-padded batches of prompt + cont)."""
        out: list[float] = []
        if not conts:
            return out
        excluded = torch.tensor(continuing, dtype=torch.long, device=self.device)
        with self.lock, torch.inference_mode():
            for start in range(0, len(conts), batch_size):
                part = conts[start : start + batch_size]
                ids, mask = self._padded([prompt + c for c in part])
                positions = (mask.cumsum(-1) - 1).clamp(min=0)
                keep = max(len(c) for c in part) + 1
                try:
                    logits = self.model(
                        input_ids=ids, attention_mask=mask, position_ids=positions, logits_to_keep=keep
                    ).logits[:, -keep:]
                except TypeError:
                    logits = self.model(input_ids=ids, attention_mask=mask, position_ids=positions).logits[:, -keep:]
                logp = torch.log_softmax(logits.double(), dim=-1)
                for row, cont in enumerate(part):
                    k = len(cont)
                    steps = logp[row, keep - k - 1 :]  # the distributions before each token, then after the last
                    total = sum(float(steps[i, cont[i]]) for i in range(k))
                    go_on = (
                        float(torch.logsumexp(steps[k].index_select(0, excluded), 0)) if len(continuing) else -math.inf
                    )
                    out.append(math.exp(total) * max(0.0, 1.0 - math.exp(go_on)))
        return out

    def _last_logits(self, ids, mask, positions):
        try:
            return self.model(input_ids=ids, attention_mask=mask, position_ids=positions, logits_to_keep=1).logits[
                :, -1
            ]
        except TypeError:  # architectures without logits_to_keep
            return self.model(input_ids=ids, attention_mask=mask, position_ids=positions).logits[:, -1]

    def generate(
        self,
        seqs: list[list[int]],
        automata: list[SpanAutomaton],
        *,
        max_new_tokens: int,
        batch_size: int,
        temperature: float,
        seed: int,
    ) -> list[str]:
        """The constrained answer of each prompt (see span_grammar)."""
        from transformers import (  # lazy: heavy optional dependency (model metrics)
            GenerationConfig,
            LogitsProcessorList,
            StoppingCriteriaList,
        )

        self.surfaces()
        answers = [""] * len(seqs)
        order = sorted(range(len(seqs)), key=lambda i: (-len(seqs[i]), i))
        with self.lock, torch.inference_mode():
            for number, start in enumerate(range(0, len(order), batch_size)):
                step(start, len(order))  # between batches: the caller may stop us here
                batch = order[start : start + batch_size]
                ids, mask = self._padded([seqs[i] for i in batch])
                tracker = _Tracker(self, [automata[i] for i in batch], ids.shape[1], max_new_tokens)
                # Everything set here, so no default of the checkpoint's generation_config.json
                # (repetition penalty, top-k ...) changes what the judge may write.
                sampling = (
                    {"do_sample": True, "temperature": temperature, "top_k": 0, "top_p": 1.0}
                    if temperature > 0
                    else {"do_sample": False}
                )
                config = GenerationConfig(
                    max_new_tokens=max_new_tokens,
                    pad_token_id=self.pad_id,
                    eos_token_id=self.eos_id,
                    bos_token_id=self.tokenizer.bos_token_id,
                    repetition_penalty=1.0,
                    **sampling,
                )
                if temperature > 0:
                    torch.manual_seed(seed + number)
                self.model.generate(
                    input_ids=ids,
                    attention_mask=mask,
                    generation_config=config,
                    logits_processor=LogitsProcessorList([tracker.processor()]),
                    stopping_criteria=StoppingCriteriaList([tracker.stopper()]),
                )
                for row, i in enumerate(batch):
                    if tracker.states[row] is not END:
                        raise MetricError(
                            f"llm-judge: constrained decoding ended unfinished ({tracker.raw[row][:60]!r})"
                        )
                    answers[i] = tracker.raw[row]
        return answers


class _Tracker:
    """Per-row automaton states of one generate() call; the logits processor masks
    what the grammar forbids, the stopping criterion ends finished rows."""

    def __init__(self, judge: JudgeModel, automata: list[SpanAutomaton], prompt_len: int, max_new_tokens: int):
        self.judge = judge
        self.automata = automata
        self.states: list[tuple] = [a.start() for a in automata]
        self.raw = [""] * len(automata)
        self.prompt_len = prompt_len
        self.max_new_tokens = max_new_tokens
        self.seen = 0

    def sync(self, input_ids) -> None:
        """Feed the tokens appended since the last call to each unfinished row's automaton."""
        total = input_ids.shape[1] - self.prompt_len
        if total <= self.seen:
            return
        new = input_ids[:, self.prompt_len + self.seen :].tolist()
        surfaces = self.judge.surfaces()
        for row, tokens in enumerate(new):
            for tid in tokens:
                state = self.states[row]
                if state is END:
                    break
                text = surfaces[tid] if 0 <= tid < len(surfaces) else None
                nxt = self.automata[row].feed(state, text) if text else None
                if nxt is None:  # cannot happen under the mask; fail loudly rather than store nonsense
                    raise MetricError(f"llm-judge: token {tid} broke the span grammar after {self.raw[row][-40:]!r}")
                self.states[row] = nxt
                self.raw[row] += text
        self.seen = total

    def allowed(self, row: int, remaining: int) -> list[int]:
        automaton, state = self.automata[row], self.states[row]
        judge = self.judge
        if state[0] == "Q":
            candidates = self._quote_candidates(automaton, state)
        else:
            # Literal and digit states do not depend on the judged text (tokens never run on
            # into a quote), so their candidates are shared by rows and calls.
            key = (
                tuple(a for a, _ in automaton.nodes["sevv"]),
                tuple(a for a, _ in automaton.nodes["catv"]),
                automaton.max_errors,
                bool(automaton.starts),
                state,
            )
            candidates = judge.literal_cache.get(key)
            if candidates is None:
                candidates = self._literal_candidates(automaton, state)
                judge.literal_cache[key] = candidates
            candidates = [
                (tid, ("Q", 0, automaton.starts, nxt[3]) if nxt[0] == "Q" else nxt) for tid, nxt in candidates
            ]
        return [tid for tid, nxt in candidates if automaton.closing_length(nxt) <= remaining - 1]

    def _literal_candidates(self, automaton: SpanAutomaton, state: tuple) -> list[tuple[int, tuple]]:
        judge = self.judge
        surfaces = judge.surfaces()
        out = []
        for char in sorted(automaton.expected_chars(state) or ()):
            for tid in judge._by_first.get(char, ()):
                nxt = state
                text = surfaces[tid]
                for k, c in enumerate(text):
                    nxt = automaton.feed_char(nxt, c)
                    if nxt is None or (nxt[0] == "Q" and k < len(text) - 1):
                        nxt = None
                        break
                if nxt is not None:
                    out.append((tid, nxt))
        return out

    def _quote_candidates(self, automaton: SpanAutomaton, state: tuple) -> list[tuple[int, tuple]]:
        judge = self.judge
        text = automaton.text
        subs: set[str] = set()
        for pos in state[2]:
            for end in range(pos + 1, min(len(text), pos + judge.max_surface) + 1):
                if not quotable(text[end - 1]):
                    break
                subs.add(text[pos:end])
        out = []
        for sub in subs:
            for tid in judge._by_text.get(sub, ()):
                nxt = automaton.feed(state, sub)
                if nxt is not None:
                    out.append((tid, nxt))
        if state[1]:  # the closing quote, possibly with what follows it in one token
            surfaces = judge.surfaces()
            for tid in judge._by_first.get('"', ()):
                nxt = automaton.feed(state, surfaces[tid])
                if nxt is not None:
                    out.append((tid, nxt))
        return out

    def processor(self):
        from transformers import LogitsProcessor  # lazy: heavy optional dependency, loaded only by model metrics

        tracker = self

        class _Constrain(LogitsProcessor):
            def __call__(self, input_ids, scores):
                tracker.sync(input_ids)
                remaining = tracker.max_new_tokens - tracker.seen
                mask = torch.full_like(scores, -math.inf)
                for row, state in enumerate(tracker.states):
                    if state is END:
                        mask[row] = 0  # finished: generate() pads this row whatever comes
                        continue
                    allowed = tracker.allowed(row, remaining)
                    if not allowed:
                        raise MetricError(
                            "llm-judge: no token can continue the span JSON (tokenizer lacks characters?)"
                        )
                    mask[row, torch.tensor(allowed, dtype=torch.long, device=scores.device)] = 0
                return scores + mask

        return _Constrain()

    def stopper(self):
        from transformers import StoppingCriteria  # lazy: heavy optional dependency, loaded only by model metrics

        tracker = self

        class _Finished(StoppingCriteria):
            def __call__(self, input_ids, scores, **kwargs):
                tracker.sync(input_ids)
                return torch.tensor([s is END for s in tracker.states], dtype=torch.bool, device=input_ids.device)

        return _Finished()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


_MODELS: dict[tuple[str, str, str], JudgeModel] = {}
_MODELS_LOCK = threading.Lock()
LOADS = 0


def get_judge_model(path: Path, device: str, dtype: str) -> JudgeModel:
    global LOADS
    key = (str(path), device, dtype)
    with _MODELS_LOCK:
        judge = _MODELS.get(key)
        if judge is None:
            judge = JudgeModel(path, device, dtype)
            _MODELS[key] = judge
            LOADS += 1
        return judge


# ---- the metric -------------------------------------------------------------------
class LLMJudgeMetric(Metric):
    """A local causal LM as judge (see the module docstring for the three modes).

    >>> LLMJudgeMetric(model=None)
    Traceback (most recent call last):
    ...
    metrics.scorers.errors.OptionError: llm-judge needs model=/path/to/a/local/causal-LM directory (save_pretrained) or a name mapped in WORKBENCH_MODELS
    """

    name: ClassVar[str] = "llm-judge"
    version: ClassVar[str] = "1"
    higher_is_better: ClassVar[bool] = True
    needs_refs: ClassVar[bool] = False
    uses_model: ClassVar[bool] = True
    corpus_label: ClassVar[str] = "mean of segment scores"
    corpus_state_reads: ClassVar[frozenset[str]] = frozenset()
    optional_inputs: ClassVar[frozenset[str]] = frozenset({"source", "data"})
    defaults: ClassVar[dict[str, Any]] = {
        "model": None,
        "mode": "score",
        "protocol": None,
        "prompt": None,
        "scale": None,
        "max_new_tokens": 256,
        "max_input_tokens": None,
        "max_spans": 16,
        "temperature": 0.0,
        "seed": 0,
        "dtype": "auto",
        "batch_size": 8,
        "device": None,
    }
    option_bounds: ClassVar[dict[str, tuple[float, float]]] = {
        "batch_size": (1, 1024),
        "max_new_tokens": (1, 8192),
        "max_input_tokens": (16, 10_000_000),
        "max_spans": (1, 100),
        "temperature": (0.0, 10.0),
        "seed": (0, 2**31 - 1),
    }

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        opts = self.options
        if not opts["model"]:
            raise OptionError(
                "llm-judge needs model=/path/to/a/local/causal-LM directory (save_pretrained) "
                "or a name mapped in WORKBENCH_MODELS"
            )
        if not isinstance(opts["model"], str) or len(opts["model"]) > 1024:
            raise OptionError("llm-judge: model must be a path or a name of at most 1024 characters")
        if opts["prompt"] is not None and (not isinstance(opts["prompt"], str) or len(opts["prompt"]) > 1024):
            raise OptionError("llm-judge: prompt must be a built-in template name or a path of at most 1024 characters")
        dtype = str(opts["dtype"] or "auto").strip().lower()
        if dtype not in ("auto", "float32", "fp32", "bfloat16", "bf16", "float16", "fp16"):
            raise OptionError(f"llm-judge: dtype={opts['dtype']!r}: use auto, float32, bfloat16 or float16")
        opts["dtype"] = dtype
        # Files are resolved only where the metric scores: the web process that checks a run's
        # options never opens what they name (the model directory, a prompt file).
        self._path: Path | None = None
        self._template: Template | None = None
        mode = str(opts["mode"] or "score").strip().lower()
        if mode not in MODES:
            raise OptionError(f"llm-judge: mode={opts['mode']!r}; use one of {', '.join(MODES)}")
        opts["mode"] = mode
        protocol = str(opts["protocol"] or PROTOCOLS[mode][0]).strip().lower()
        if protocol not in PROTOCOLS[mode]:
            raise OptionError(
                f"llm-judge: protocol={opts['protocol']!r} in mode {mode}; use one of {', '.join(PROTOCOLS[mode])}"
            )
        opts["protocol"] = protocol
        if mode == "score":
            opts["scale"] = str(opts["scale"] or DEFAULT_SCALE).replace(" ", "")
            self.low, self.high = parse_scale(opts["scale"])
        elif opts["scale"]:
            raise OptionError(f"llm-judge: scale applies to mode=score only (mode is {mode})")
        temperature = float(opts["temperature"] or 0.0)
        if temperature and mode != "spans":
            raise OptionError(
                "llm-judge: temperature applies to mode=spans only: score and pairwise read "
                "probabilities, they sample nothing"
            )
        opts["temperature"] = temperature
        if mode == "spans" and opts["max_new_tokens"] < 16:
            raise OptionError(
                "llm-judge: max_new_tokens must be at least 16 in spans mode (the empty answer "
                '{"errors":[]} alone takes 13 tokens at worst)'
            )
        if not opts["prompt"] or opts["prompt"] in BUILTIN:
            _ = self.template  # a built-in template is checked against the mode at once
        self.categories = MQM_CATEGORIES if protocol == "mqm" else ()
        self.truncated_total = 0

    model_kinds: ClassVar[frozenset[str]] = frozenset({"causal-lm"})

    def check_resources(self) -> None:
        # The model directory (inside the allowed ones, or refused like any path) and its saved
        # architecture: refused here, with the reason, rather than by a worker after the queue.
        causal_lm_check(self.path, str(self.options["model"]))

    @property
    def chunk_outputs(self) -> int:
        """Outputs per chunk of a run: a chunk must end well within the broker's visibility
        timeout (90 s): 64 one-pass prompts, but 16 generations of up to max_new_tokens."""
        return 16 if self.options["mode"] == "spans" else 64

    @property
    def path(self) -> Path:
        """The model directory (resolved on first use)."""
        if self._path is None:
            self._path = resolve_model_path(str(self.options["model"]))
        return self._path

    @property
    def template(self) -> Template:
        """The prompt template (a file is read on first use), checked against the mode."""
        if self._template is None:
            mode = self.options["mode"]
            template = load_template(self.options["prompt"], mode, self.options["protocol"])
            needed = {"score": {"output"}, "spans": {"output"}, "pairwise": {"output_a", "output_b"}}[mode]
            missing = needed - template.fields
            if missing:
                raise OptionError(
                    f"llm-judge: prompt {template.name!r} lacks the placeholder(s) "
                    f"{', '.join('{' + m + '}' for m in sorted(missing))} that mode {mode} fills"
                )
            self._template = template
        return self._template

    # ---- what the workbench passes ---------------------------------------------
    @property
    def needs_source(self) -> bool:  # read only when the template shows it
        return "source" in self.template.fields

    @property
    def needs_data(self) -> bool:
        return "data" in self.template.fields

    @property
    def needs_items(self) -> bool:
        """Pairwise compares the outputs of one item: chunks hold whole items and
        score() gets each output's item id (`items=`)."""
        return self.options["mode"] == "pairwise"

    def check_inputs(self, hyps, refs, srcs, data) -> None:
        # Source, references and data fill the prompt where given; none is required.
        n = len(hyps)
        for name, values in (("references", refs), ("sources", srcs), ("data entries", data)):
            if values is not None and len(values) != n:
                raise InputError(f"{self.name}: {n} outputs but {len(values)} {name}")

    # ---- model ---------------------------------------------------------------------
    def device(self) -> str:
        return pick_device(self.options["device"])

    def dtype_name(self) -> str:
        return compute_dtype_name(self.options["device"], self.options["dtype"] or "auto")

    def judge(self) -> JudgeModel:
        return get_judge_model(self.path, self.device(), self.dtype_name())

    def input_limit(self) -> int:
        if self.options["max_input_tokens"]:
            return int(self.options["max_input_tokens"])
        reserve = self.options["max_new_tokens"] if self.options["mode"] == "spans" else 1
        return max(16, context_length(self.path) - reserve)

    # ---- prompts -----------------------------------------------------------------
    def _values(self, k: int, refs, srcs, data) -> dict[str, str]:
        values = {"low": "", "high": "", "categories": ", ".join(self.categories)}
        if self.options["mode"] == "score":
            values.update(low=str(self.low), high=str(self.high))
        values["source"] = (srcs[k] or "") if srcs is not None else ""
        if refs is not None:
            group = refs[k]
            if isinstance(group, str):
                raise InputError(f"{self.name}: references of segment {k} must be a list of strings")
            values["reference"] = "\n".join(r for r in group if r)
        else:
            values["reference"] = ""
        if data is not None:
            values["data"] = "; ".join(" | ".join(str(p) for p in t) for t in (data[k] or []))
        else:
            values["data"] = ""
        return values

    def _fit(self, judge: JudgeModel, values: dict[str, str], keys: Sequence[str]) -> tuple[list[int], dict, bool]:
        """The prompt's token ids, cutting the longest output at a token boundary while
        the prompt exceeds the input limit; returns (ids, values used, truncated)."""
        limit = self.input_limit()
        truncated = False
        for _ in range(8):
            ids = judge.encode(*self.template.render(values))
            if len(ids) <= limit:
                return ids, values, truncated
            key = max(keys, key=lambda k: len(values[k]))
            text = values[key]
            if not text:
                raise InputError(
                    f"{self.name}: the prompt is {len(ids)} tokens even without the output, "
                    f"more than max_input_tokens={limit}"
                )
            enc = judge.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
            offsets = enc["offset_mapping"]
            keep = max(0, len(offsets) - (len(ids) - limit) - 1)
            cut = offsets[keep - 1][1] if keep > 0 else 0
            values = {**values, key: text[: min(cut, len(text) - 1)]}
            truncated = True
        raise InputError(f"{self.name}: cannot fit the prompt into max_input_tokens={limit}")

    def prompt_ids(
        self, hyps: Sequence[str], refs=None, srcs=None, data=None, pair: tuple[int, int] | None = None
    ) -> list[list[int]]:
        """The token ids given to the model for each output (score and spans modes), or,
        with `pair=(i, j)`, for outputs i and j shown as A and B: what a reader (or a
        test) needs to redo the judge's reading from the logits."""
        judge = self.judge()
        if pair is not None:
            i, j = pair
            values = {**self._values(i, refs, srcs, data), "output_a": hyps[i], "output_b": hyps[j]}
            return [self._fit(judge, values, ("output_a", "output_b"))[0]]
        return [
            self._fit(judge, {**self._values(k, refs, srcs, data), "output": hyp}, ("output",))[0]
            for k, hyp in enumerate(hyps)
        ]

    # ---- scoring -------------------------------------------------------------------
    def score(self, hyps, refs=None, srcs=None, data=None, items=None) -> list[SegmentResult]:
        self.check_inputs(hyps, refs, srcs, data)
        if not hyps:
            return []
        if any(not isinstance(h, str) for h in hyps):
            raise InputError(f"{self.name}: outputs must be strings")
        judge = self.judge()
        mode = self.options["mode"]
        if mode == "score":
            results = self._score(judge, hyps, refs, srcs, data)
        elif mode == "pairwise":
            results = self._pairwise(judge, hyps, refs, srcs, data, items)
        else:
            results = self._spans(judge, hyps, refs, srcs, data)
        cut = sum(1 for r in results if r.extra.get("truncated"))
        if cut:
            logger.warning(
                "llm-judge: %d of %d output(s) truncated to fit max_input_tokens=%d", cut, len(hyps), self.input_limit()
            )
        return results

    def score_tokens(self, judge: JudgeModel) -> tuple[list[int], list[int]] | None:
        """(token ids, value of each) for every value of the scale; None when some value
        is not a single token (then `value_sequences` are used)."""
        ids, values = [], []
        for value in range(self.low, self.high + 1):
            tokens = judge.tokens_for(str(value))
            if not tokens:
                return None
            ids += tokens
            values += [value] * len(tokens)
        return ids, values

    def value_sequences(self, judge: JudgeModel) -> list[list[int]]:
        """Each scale value as the tokenizer spells it (e.g. "57" -> "5", "7")."""
        out = []
        for value in range(self.low, self.high + 1):
            ids = judge.tokenizer(str(value), add_special_tokens=False)["input_ids"]
            if not ids:
                raise OptionError(f"llm-judge: scale {self.options['scale']}: the tokenizer writes {value} as nothing")
            out.append(ids)
        return out

    def _score(self, judge, hyps, refs, srcs, data) -> list[SegmentResult]:
        single = self.score_tokens(judge)
        seqs, cut = [], []
        for k, hyp in enumerate(hyps):
            ids, _, truncated = self._fit(judge, {**self._values(k, refs, srcs, data), "output": hyp}, ("output",))
            seqs.append(ids)
            cut.append(truncated)
        if single is not None:
            select, values = single
            rows = judge.next_token_probs(seqs, select, self.options["batch_size"])
        else:
            # Values of several tokens (0-100 with digit tokenizers): each value's probability is
            # that of its tokens followed by a token that does not continue the number.
            values = list(range(self.low, self.high + 1))
            conts = self.value_sequences(judge)
            surfaces = judge.surfaces()
            digits = [t for t, text in enumerate(surfaces) if text and text[0].isdigit()]
            rows = []
            for k, ids in enumerate(seqs):
                step(k, len(seqs))  # one prompt's values a pass: the caller may stop us here
                rows.append(judge.continuation_probs(ids, conts, digits, self.options["batch_size"]))
        results = []
        for row, truncated in zip(rows, cut):
            per_value: dict[int, float] = {}
            for p, v in zip(row, values):
                per_value[v] = per_value.get(v, 0.0) + p
            mass = sum(per_value.values())
            probs = {v: (p / mass if mass > 0 else 1.0 / len(per_value)) for v, p in sorted(per_value.items())}
            score = sum(v * p for v, p in probs.items())
            extra: dict[str, Any] = {"probabilities": {str(v): p for v, p in probs.items()}, "mass": mass}
            if truncated:
                extra["truncated"] = True
            results.append(SegmentResult(score=score, extra=extra))
        return results

    def answer_tokens(self, judge: JudgeModel) -> tuple[list[int], list[int]]:
        a, b = judge.tokens_for("A"), judge.tokens_for("B")
        if not a or not b:
            raise OptionError("llm-judge: pairwise mode needs 'A' and 'B' to be single tokens of this tokenizer")
        return a, b

    def _pairwise(self, judge, hyps, refs, srcs, data, items) -> list[SegmentResult]:
        if items is None:
            if srcs is None:
                raise InputError(
                    f"{self.name}: pairwise mode needs items= (the item of each output) or sources "
                    "to group the outputs that are compared"
                )
            items = list(srcs)
        if len(items) != len(hyps):
            raise InputError(f"{self.name}: {len(hyps)} outputs but {len(items)} item ids")
        groups: dict[Any, list[int]] = {}
        for k, item in enumerate(items):
            groups.setdefault(item, []).append(k)
        a_ids, b_ids = self.answer_tokens(judge)
        select = a_ids + b_ids
        seqs, pairs, cut = [], [], [False] * len(hyps)
        for members in groups.values():
            for x in range(len(members)):
                for y in range(x + 1, len(members)):
                    i, j = members[x], members[y]
                    base = self._values(i, refs, srcs, data)
                    for first, second in ((i, j), (j, i)):
                        ids, _, truncated = self._fit(
                            judge, {**base, "output_a": hyps[first], "output_b": hyps[second]}, ("output_a", "output_b")
                        )
                        if truncated:
                            cut[first] = cut[second] = True
                        seqs.append(ids)
                    pairs.append((i, j))
        rows = judge.next_token_probs(seqs, select, self.options["batch_size"])
        first_pref = []
        for row in rows:
            pa, pb = sum(row[: len(a_ids)]), sum(row[len(a_ids) :])
            first_pref.append(pa / (pa + pb) if pa + pb > 0 else 0.5)
        entries: list[list[dict[str, Any]]] = [[] for _ in hyps]
        position = {k: members.index(k) for members in groups.values() for k in members}
        for n, (i, j) in enumerate(pairs):
            ij, ji = first_pref[2 * n], first_pref[2 * n + 1]  # P(first shown is better) in each order
            entries[i].append({"opponent": position[j], "preference": ij, "swapped": 1.0 - ji})
            entries[j].append({"opponent": position[i], "preference": ji, "swapped": 1.0 - ij})
        results = []
        for k, pairs_k in enumerate(entries):
            pairs_k.sort(key=lambda e: e["opponent"])
            extra: dict[str, Any] = {"pairs": pairs_k}
            if pairs_k:
                extra["preference"] = sum(e["preference"] for e in pairs_k) / len(pairs_k)
                extra["swapped"] = sum(e["swapped"] for e in pairs_k) / len(pairs_k)
                score = (extra["preference"] + extra["swapped"]) / 2
            else:
                extra["preference"] = extra["swapped"] = None
                score = math.nan
            if cut[k]:
                extra["truncated"] = True
            results.append(SegmentResult(score=score, extra=extra))
        if all(math.isnan(r.score) for r in results):
            raise InputError(f"{self.name}: pairwise mode needs at least two outputs of the same item")
        return results

    def _spans(self, judge, hyps, refs, srcs, data) -> list[SegmentResult]:
        judge.surfaces()
        single = {t for t, ids in judge._by_text.items() if len(t) == 1}
        seqs, automata, seen, cut = [], [], [], []
        for k, hyp in enumerate(hyps):
            ids, used, truncated = self._fit(judge, {**self._values(k, refs, srcs, data), "output": hyp}, ("output",))
            automaton = SpanAutomaton(
                used["output"],
                severities=tuple(SEVERITY_WEIGHTS),
                categories=self.categories,
                max_errors=int(self.options["max_spans"]),
                single_chars=single,
                cost=judge.min_tokens,
            )
            lacking = automaton.grammar_chars() - single
            if lacking:
                raise ModelNotAvailable(
                    f"llm-judge: this tokenizer has no single-character token for {''.join(sorted(lacking))!r}, "
                    "which constrained span answers need"
                )
            seqs.append(ids)
            automata.append(automaton)
            seen.append(used["output"])
            cut.append(truncated)
        answers = judge.generate(
            seqs,
            automata,
            max_new_tokens=int(self.options["max_new_tokens"]),
            batch_size=self.options["batch_size"],
            temperature=self.options["temperature"],
            seed=int(self.options["seed"]),
        )
        results = []
        for hyp, text, raw, truncated in zip(hyps, seen, answers, cut):
            spans = resolve_spans(text, parse_answer(raw))
            penalty = sum(SEVERITY_WEIGHTS.get(s["severity"], 0.0) for s in spans)
            extra: dict[str, Any] = {"spans": spans, "raw": raw}
            if truncated:
                extra["truncated"] = True
                extra["judged_chars"] = len(text)
            results.append(SegmentResult(score=-penalty, extra=extra))
        return results

    def corpus_score(self, segments: Sequence[SegmentResult]) -> CorpusResult:
        """Mean of the segment scores that are numbers (pairwise: items with one
        output have none), with the number of truncated outputs."""
        values = [s.score for s in segments if s.score is not None and not math.isnan(s.score)]
        truncated = sum(1 for s in segments if s.extra.get("truncated"))
        extra: dict[str, Any] = {"n": len(values), "truncated": truncated}
        if truncated:
            extra["warnings"] = [
                f"{truncated} output(s) were truncated to fit the judge's input limit "
                f"({self.input_limit()} tokens): their scores judge a prefix"
            ]
        return CorpusResult(sum(values) / len(values) if values else math.nan, extra)

    # ---- reproducibility -------------------------------------------------------------
    def decoding(self) -> str:
        if self.options["mode"] != "spans":
            return "next-token-probabilities"
        if self.options["temperature"] > 0:
            return f"sample(t={self.options['temperature']:g},seed={self.options['seed']},top_k=0,top_p=1)"
        return "greedy"

    def signature_fields(self) -> dict[str, Any]:
        """`llm-judge|v:1|model:<dir>|mode:…|protocol:…|prompt:<name>@<sha>|scale:…|decoding:…|
        max_new_tokens:…|max_input_tokens:…|max_spans:…|dtype:…|config:<sha>|weights:<sha>|tokenizer:<sha>`"""
        mode = self.options["mode"]
        fields: dict[str, Any] = {
            "model": self.path.name,
            "mode": mode,
            "protocol": self.options["protocol"],
            "prompt": f"{self.template.name}@{self.template.digest}",
        }
        if mode == "score":
            fields["scale"] = self.options["scale"]
        fields["decoding"] = self.decoding()
        if mode == "spans":
            fields["max_new_tokens"] = self.options["max_new_tokens"]
            fields["max_spans"] = self.options["max_spans"]
        fields["max_input_tokens"] = self.input_limit()
        fields["dtype"] = self.dtype_name()
        fields.update(model_digests(self.path))
        return fields

    def library_versions(self) -> dict[str, str]:

        versions = {}
        for lib in ("torch", "transformers"):
            try:
                versions[lib] = metadata.version(lib).split("+")[0]
            except metadata.PackageNotFoundError:
                pass
        return versions
