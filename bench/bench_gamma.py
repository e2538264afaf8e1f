"""factgenie's span gamma: ours (annotations/analysis/gamma.py, numpy + scipy) against pygamma-agreement
0.5.9 on the same continua (the 29 of tests/annotations/analysis/gamma_expected.json), each
`compute_gamma` with factgenie's settings (soft or hard as the fixture says, 30 samples, seed 42).
pygamma runs in its own environment `var/gamma-ref` (see bench/reference/gamma_expected.py); without
it only our side is timed. Values are checked equal (to 1e-9) before timing is reported. Prints the
median seconds per continuum of each side and the ratio.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from annotations.analysis import gamma as ga  # noqa: E402

FIXTURE = ROOT / "tests" / "annotations" / "analysis" / "gamma_expected.json"
REF = ROOT / "var" / "gamma-ref" / "bin" / "python"

PEER = r"""
import json, logging, sys, time
import numpy as np, pygamma_agreement as pa
from pyannote.core import Segment
logging.getLogger().setLevel(logging.ERROR)
out = []
for case in json.load(open(sys.argv[1]))["continua"]:
    c = pa.Continuum()
    for a, units in case["units"].items():
        for s, e, cat in units:
            c.add(a, Segment(s, e), cat)
    d = pa.CombinedCategoricalDissimilarity(alpha=1, beta=1, delta_empty=1)
    np.random.seed(42)
    t = time.perf_counter()
    g = c.compute_gamma(d, soft=case["soft"]).gamma
    out.append((time.perf_counter() - t, float(g)))
print(json.dumps(out))
"""


def main() -> None:
    cases = json.loads(FIXTURE.read_text())["continua"]
    ours = []
    for case in cases:
        units = {a: [tuple(u) for u in us] for a, us in case["units"].items()}
        t = time.perf_counter()
        g = ga.gamma(units, soft=case["soft"]).gamma
        ours.append(time.perf_counter() - t)
        assert abs(g - case["gamma"]) <= 1e-9, (g, case["gamma"])
    print(f"ours: median {np.median(ours):.4f} s per continuum (max {max(ours):.4f}), {len(cases)} continua")
    if not REF.exists():
        print(f"pygamma: not timed ({REF} missing; see bench/reference/gamma_expected.py)")
        return
    peer = json.loads(subprocess.run([str(REF), "-c", PEER, str(FIXTURE)], capture_output=True, text=True).stdout)
    for (_, g), case in zip(peer, cases):
        assert abs(g - case["gamma"]) <= 1e-9, (g, case["gamma"])
    theirs = [s for s, _ in peer]
    print(
        f"pygamma-agreement 0.5.9: median {np.median(theirs):.4f} s per continuum (max {max(theirs):.4f}); "
        f"ratio {np.median(theirs) / np.median(ours):.1f}"
    )


if __name__ == "__main__":
    main()
