"""How a campaign's units are handed out: the allocation policies.

- `overlap-first` (default): units already started (judged or held) but short of k come before new ones,
  so units reach k early and agreement is computable from the first units.
- `spread`: each annotator walks their own permutation of the units (the engine's walk).
- `adaptive`: after a cold start, only units where the system ranking is still undecided are opened;
  the decision logic is the pure module `annotations.allocation.adaptive`, the engine's side (recomputing
  the verdict every `check_every` judgements, closing units) is `annotations.allocation.services`.
"""

OVERLAP_FIRST, SPREAD, ADAPTIVE = "overlap-first", "spread", "adaptive"
POLICIES = (OVERLAP_FIRST, SPREAD, ADAPTIVE)
