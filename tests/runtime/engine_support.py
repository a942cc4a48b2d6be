"""Helpers for engine tests: compile test workflows, register them, run engines, scripts."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from openseal.compiler.output.document import CompiledDocument
from openseal.compiler.pipeline import compile_paths
from openseal.runtime import service
from openseal.runtime.engine.engine import Engine
from openseal.runtime.providers import ScriptedProvider, fixed
from openseal.runtime.store import Store
from openseal.runtime.store.tables.records import Run

DEFS = Path(__file__).parent / "engine_defs"
REPO = Path(__file__).resolve().parents[2]
PROCUREMENT = REPO / "definitions" / "procurement" / "hcl"


def compile_files(*paths: Path) -> list[CompiledDocument]:
    result = compile_paths(list(paths))
    assert result.ok, [(d.code, d.message) for d in result.diagnostics]
    return list(result.documents.values())


def small_workflow(
    tmp: Path, *, factor: int = 1, model_calls: int = 5, on_exhausted: str = "needs_attention"
) -> list[CompiledDocument]:
    """The small test workflow; ``factor`` changes its version, the rest its budget."""
    text = (DEFS / "small.hcl.in").read_text(encoding="utf-8")
    text = text.replace("FACTOR", str(factor)).replace("MODEL_CALLS", str(model_calls))
    text = text.replace("ON_EXHAUSTED", on_exhausted)
    folder = tmp / f"small_{factor}_{model_calls}_{on_exhausted}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "small.hcl").write_text(text, encoding="utf-8")
    return compile_files(folder / "small.hcl")


def register(store: Store, documents: list[CompiledDocument]) -> None:
    service.register_documents(store, documents, actor="user:test")


def write_script(path: Path, responses: dict[str, list[dict[str, Any]]]) -> Path:
    if path.suffix == ".json":
        path.write_text(json.dumps(responses), encoding="utf-8")
    else:
        path.write_text(yaml.safe_dump(responses), encoding="utf-8")
    return path


def scripted(
    tmp: Path, responses: dict[str, list[dict[str, Any]]]
) -> tuple[ScriptedProvider, Path]:
    """A scripted provider plus the file that counts its calls."""
    calls = tmp / "calls.jsonl"
    return ScriptedProvider(responses, calls_file=calls), calls


def engine(store: Store, provider: ScriptedProvider, **options: Any) -> Engine:
    options.setdefault("worker_id", "test-worker")
    return Engine(store, fixed(provider), **options)


def event_types(store: Store, run: Run | str) -> list[str]:
    run_id = run if isinstance(run, str) else run.id
    return [e.type for e in store.runs.events(run_id, 0, 10_000)]


@functools.cache
def _contract_validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((REPO / "schemas" / name).read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


def assert_conforms(run: Run) -> Run:
    """``run.waiting`` and ``run.context`` have the shapes the contract declares (closed: an
    undeclared key fails), per the committed ``schemas/run-*.schema.json``."""
    if run.waiting is not None:
        _contract_validator("run-waiting.schema.json").validate(run.waiting)
    _contract_validator("run-context.schema.json").validate(run.context)
    return run


def assert_gap_free(store: Store, run_id: str) -> None:
    seqs = [e.seq for e in store.runs.events(run_id, 0, 10_000)]
    assert seqs == list(range(1, len(seqs) + 1))
    assert store.runs.get(run_id).last_event_seq == len(seqs)


PICK_7 = {"ask": [{"output": {"pick": 7}, "usage": {"input_tokens": 10, "output_tokens": 2}}]}
