"""The command blocks of the tutorials (docs/tutorials/*.md), as the tests run them.

A fenced block whose language is `bash` (run as it is) or `console` (its `$ ` lines) is a command
block. One preceded by a line `<!-- not-run: REASON -->` is skipped: it needs a browser, a server
or a long run, and REASON names the test file that covers what it does (checked to exist).
Blocks of other languages (`text`, `json`, ...) are shown, never run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = ROOT / "docs" / "tutorials"
RUN_LANGUAGES = {"bash", "console"}
NOT_RUN = re.compile(r"^<!--\s*not-run:\s*(?P<reason>.+?)\s*-->$")
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>```+|~~~+)\s*(?P<info>[^\s`{]*)")


@dataclass
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    language: str
    text: str
    skip_reason: str | None

    @property
    def script(self) -> str:
        if self.language == "console":
            return "\n".join(line[2:] for line in self.text.splitlines() if line.startswith("$ "))
        return self.text

    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    found, i, last_text = [], 0, ""
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            if lines[i].strip():
                last_text = lines[i].strip()
            i += 1
            continue
        fence, start = match.group("fence"), i
        body = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i][len(match.group("indent")) :])
            i += 1
        skip = NOT_RUN.match(last_text)
        found.append(
            Block(
                path,
                start + 1,
                match.group("info").lower(),
                "\n".join(body) + "\n",
                skip.group("reason") if skip else None,
            )
        )
        last_text, i = "", i + 1
    return found


def tutorials() -> list[Path]:
    return sorted(TUTORIALS.glob("*.md"))
