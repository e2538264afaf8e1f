"""`build_docs [--out DIR]`: build the documentation site (MkDocs, `mkdocs.yml`) with `--strict`
into WORKBENCH_DOCS_SITE (default var/docs-site), which the workbench serves at /docs/ for the
pages' Help links. The site is built beside the old one and swapped in at the end, so /docs/ never
shows a half-written site and a failed build leaves the old one in place."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

ROOT = Path(settings.BASE_DIR)


class Command(BaseCommand):
    help = "Build the documentation site (mkdocs build --strict) into the folder served at /docs/."

    def add_arguments(self, parser):
        parser.add_argument(
            "--out", help="folder to write the site into (default: WORKBENCH_DOCS_SITE, var/docs-site unless set)"
        )
        parser.add_argument("--json", action="store_true", help="print a JSON summary")

    def handle(self, *args, **options):
        out = Path(options["out"] or settings.WORKBENCH_DOCS_SITE).resolve()
        out.parent.mkdir(parents=True, exist_ok=True)
        fresh = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
        # MkDocs as a process of its own: its --strict counts the warnings of its logging, which a
        # build called in this process would share with Django's. Not --quiet: that silences the
        # warnings before --strict counts them, and a broken link would pass.
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "mkdocs",
                "build",
                "--strict",
                "--config-file",
                str(ROOT / "mkdocs.yml"),
                "--site-dir",
                str(fresh),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        )
        if done.returncode != 0:
            shutil.rmtree(fresh, ignore_errors=True)
            lines = [
                line
                for line in (done.stderr + done.stdout).splitlines()
                if line.startswith(("WARNING", "ERROR")) or "Error" in line or "No module named" in line
            ]
            if any("No module named mkdocs" in line for line in lines):
                raise CommandError("MkDocs is not installed: pip install -r requirements.txt")
            raise CommandError("the documentation did not build:\n" + "\n".join(lines[-20:]))
        fresh.chmod(0o755)  # mkdtemp made it private; the web server's user reads it
        old = out.with_name(f".{out.name}-old")
        shutil.rmtree(old, ignore_errors=True)
        if out.exists():
            out.rename(old)
        fresh.rename(out)
        shutil.rmtree(old, ignore_errors=True)
        pages = sum(1 for _ in out.rglob("index.html"))
        if options["json"]:
            self.stdout.write(json.dumps({"out": str(out), "pages": pages}))
        else:
            self.stdout.write(f"documentation built into {out} ({pages} pages); served at /docs/")
