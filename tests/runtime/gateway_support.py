"""Helpers for the gateway tests: the ``tools`` workflow, doctored versions, skill call logs."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from openseal.canonical import digest_of
from openseal.compiler.output.document import CompiledDocument
from openseal.runtime.store import Store
from openseal.runtime.store.tables import schema
from tests.runtime.engine_support import compile_files

DEFS = Path(__file__).parent / "gateway_defs"


@dataclass(frozen=True)
class Document:
    """A compiled document as ``service.register_documents`` needs it."""

    kind: str
    name: str
    digest: str
    document: dict[str, Any]


SCRIPTED_MODEL = 'provider = "scripted"\n  model    = "test-model"'


def tools_workflow(tmp: Path, *, tool_calls: int = 5, model: str | None = None) -> list[Document]:
    """The ``tools`` workflow; ``model`` replaces the body of its scripted model profile."""
    text = (DEFS / "tools.hcl.in").read_text(encoding="utf-8")
    text = text.replace("TOOL_CALLS", str(tool_calls))
    if model is not None:
        assert SCRIPTED_MODEL in text
        text = text.replace(SCRIPTED_MODEL, model)
    folder = tmp / f"tools_{tool_calls}_{'own_model' if model else 'scripted'}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tools.hcl").write_text(text, "utf-8")
    return [plain(d) for d in compile_files(folder / "tools.hcl")]


def plain(compiled: CompiledDocument) -> Document:
    return Document(compiled.kind, compiled.name, compiled.digest, dict(compiled.document))


def doctored(
    documents: list[Document], key: str, change: Callable[[dict[str, Any]], None]
) -> list[Document]:
    """``documents`` with ``key`` (``kind.name``) changed by ``change`` and re-digested, and
    every document depending on it re-pinned to the new digest (transitively).

    This is how a test gets a version the compiler would refuse, to show that the runtime
    checks hold on their own.
    """
    by_key = {f"{d.kind}.{d.name}": d for d in documents}
    target = copy.deepcopy(by_key[key].document)
    change(target)
    pending = {key: target}
    while pending:
        changed_key, body = pending.popitem()
        old = by_key[changed_key].digest
        new = digest_of(body)
        by_key[changed_key] = Document(
            by_key[changed_key].kind, by_key[changed_key].name, new, body
        )
        for other_key, other in list(by_key.items()):
            deps = other.document.get("dependencies") or {}
            if deps.get(changed_key) == old:
                copied = copy.deepcopy(other.document)
                copied["dependencies"][changed_key] = new
                for skill in (copied.get("skills") or {}).values():
                    if skill.get("digest") == old:
                        skill["digest"] = new
                pending[other_key] = copied
    return list(by_key.values())


def activities(store: Store, run_id: str) -> dict[str, Any]:
    """The run's recorded activities: id → result."""
    table = schema.activities
    with store.read() as conn:
        rows = conn.execute(
            sa.select(table.c.activity_id, table.c.result).where(table.c.run_id == run_id)
        )
        return {row.activity_id: row.result for row in rows}


def refusals(store: Store, run_id: str) -> list[dict[str, Any]]:
    return [
        e.payload for e in store.runs.events(run_id, 0, 10_000) if e.type == "tool_call.refused"
    ]
