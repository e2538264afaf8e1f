"""Every import inside a function says why it is not at the top of its module.

An import inside a function hides a dependency from the reader and from import sorters, and used
to hold an import cycle together unseen (issue 37). Those left must carry a same-line comment
`# lazy: <reason>` (an import cycle with X, a heavy optional dependency such as torch, the Django
app registry not ready, a library the Django-free `metrics.scorers` must not load, ...); see
"Lazy imports" in docs/architecture.md. Package code only: not tests, not migrations.
"""

import ast

from tests.conftest import ROOT

PACKAGES = ("annotations", "metrics", "workbench")


def function_level_imports(path) -> list[tuple[int, str]]:
    """(line, the statement's first line) of every import inside a function of the file."""
    text = path.read_text()
    lines = text.splitlines()
    found = []

    def walk(node, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)) and in_function:
                found.append((child.lineno, lines[child.lineno - 1]))
            walk(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    walk(ast.parse(text, filename=str(path)), False)
    return found


def package_files():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.relative_to(ROOT).parts:
                yield path


def test_every_function_level_import_says_why():
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {text.strip()}"
        for path in package_files()
        for line, text in function_level_imports(path)
        if "# lazy:" not in text or not text.split("# lazy:", 1)[1].strip()
    ]
    assert not offenders, "imports inside functions without a `# lazy: <reason>` comment:\n" + "\n".join(offenders)


def test_the_walk_finds_function_level_imports(tmp_path):
    """The check sees imports in functions, methods and nested blocks, and only there."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import os\n"
        "def f():\n"
        "    import json\n"
        "    if os:\n"
        "        from math import pi  # lazy: a reason\n"
        "class C:\n"
        "    import re\n"
        "    def m(self):\n"
        "        from io import (  # lazy: another\n"
        "            StringIO,\n"
        "        )\n"
    )
    assert [line for line, _ in function_level_imports(sample)] == [3, 5, 9]
