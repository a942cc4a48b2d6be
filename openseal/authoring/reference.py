"""The definition-language reference a model authors from, generated, never hand-copied.

Two parts, both read from where the project keeps them so the reference cannot drift from the
language: the JSON Schema of a definition file (generated from the definition model, the same
schema ``openseal schema`` writes to ``schemas/definitions.schema.json``), and the language
guide (``docs/language.md``, shipped inside the package as ``language.md`` and read from the
source tree in a checkout).
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from pathlib import Path

from openseal.compiler import definition_schemas

#: the language guide in a source checkout, relative to this package
_CHECKOUT_GUIDE = Path(__file__).resolve().parents[2] / "docs" / "language.md"


@functools.cache
def language_reference() -> str:
    """The reference as one text: the guide, then the schema of a definition file."""
    schema = definition_schemas()["definitions.schema.json"]
    compact = json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    parts = []
    guide = language_guide()
    if guide:
        parts.append(f"# The language guide\n\n{guide.strip()}")
    parts.append(
        "# The JSON Schema of one definition file (a YAML file has exactly this shape; an HCL "
        f"file has the same content as labelled blocks)\n\n{compact}"
    )
    return "\n\n".join(parts)


def language_guide() -> str | None:
    """The text of the language guide, or None when neither copy can be read."""
    shipped = resources.files("openseal.authoring").joinpath("language.md")
    for candidate in (shipped, _CHECKOUT_GUIDE):
        try:
            return candidate.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
    return None
