"""Every YAML example in docs/ is valid YAML as openseal reads it.

A reader copies these blocks; one that does not even parse (an unquoted
``${...}`` inside ``{...}``, say) teaches the wrong thing.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from openseal.compiler.syntax.load_yaml import load_yaml

DOCS = Path(__file__).resolve().parents[1] / "docs"
_BLOCK = re.compile(r"^```yaml\n(.*?)^```", re.DOTALL | re.MULTILINE)


def _blocks() -> list[tuple[str, str]]:
    found = []
    for path in sorted(DOCS.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        for match in _BLOCK.finditer(text):
            line = text.count("\n", 0, match.start()) + 2
            found.append((f"{path.name}:{line}", match.group(1)))
    return found


BLOCKS = _blocks()


def test_the_docs_have_yaml_examples() -> None:
    assert len(BLOCKS) >= 20


@pytest.mark.parametrize(("where", "text"), BLOCKS, ids=[where for where, _ in BLOCKS])
def test_yaml_example_is_valid_yaml(where: str, text: str) -> None:
    # Elided parts (`…`) are prose, not YAML; drop the lines that hold only them.
    kept = "\n".join(line for line in text.splitlines() if line.strip() not in ("…", "..."))
    _, diagnostics = load_yaml(kept, where)
    syntax = [(d.span.line, d.message) for d in diagnostics if d.code == "OS005"]
    assert syntax == []
