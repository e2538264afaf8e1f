"""axe-core, the accessibility engine the browser tests inject into pages.

The npm package's tarball at one pinned version, checked against the
registry's published sha512 `integrity`, and its `axe.min.js` kept under
var/axe-core/<version>/ (ignored by git). `make test` runs this file first
(`make axe`), with the standard library only: CI's machine has Python and
make but maybe no node or npm, and reaches the package registries but no CDN.

    python tests/browser/axe_core.py     # fetch once; a no-op when present
"""

import base64
import hashlib
import io
import os
import sys
import tarfile
import urllib.request
from pathlib import Path

VERSION = "4.14.1"
# `npm view axe-core@4.14.1 dist.integrity`
INTEGRITY = "sha512-FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2rhu5qb2S4r76ASyFNNtuFooJpZe37OgudVGtQ=="
ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "var" / "axe-core" / VERSION
SCRIPT = FOLDER / "axe.min.js"
# The files of the package kept beside the script: the engine and its licence (MPL-2.0).
MEMBERS = {"package/axe.min.js": "axe.min.js", "package/LICENSE": "LICENSE"}


def tarball_url() -> str:
    # npm's own setting when one is made (a mirror), else the public registry.
    registry = (
        os.environ.get("NPM_CONFIG_REGISTRY") or os.environ.get("npm_config_registry") or "https://registry.npmjs.org/"
    )
    return f"{registry.rstrip('/')}/axe-core/-/axe-core-{VERSION}.tgz"


def verified(data: bytes) -> bytes:
    algorithm, _, expected = INTEGRITY.partition("-")
    actual = base64.b64encode(hashlib.new(algorithm, data).digest()).decode()
    if actual != expected:
        raise SystemExit(f"axe-core {VERSION}: the tarball's {algorithm} is {actual}, expected {expected}; not used")
    return data


def fetch() -> Path:
    if SCRIPT.is_file():
        return SCRIPT
    url = tarball_url()
    with urllib.request.urlopen(url, timeout=120) as response:
        data = verified(response.read())
    FOLDER.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        for member, name in MEMBERS.items():
            content = archive.extractfile(member).read()
            partial = FOLDER / f".{name}.part"
            partial.write_bytes(content)
            partial.replace(FOLDER / name)  # the script last: its presence means the folder is complete
    return SCRIPT


if __name__ == "__main__":
    path = fetch()
    print(f"axe-core {VERSION}: {path.relative_to(ROOT)}", file=sys.stderr)
