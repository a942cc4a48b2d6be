"""``show_run`` on the store tests' workflow version: that version is a compiled graph like
any deployed one, so a run of it shows where it is."""

from __future__ import annotations

import json

import jsonschema

from openseal.runtime import service
from openseal.runtime.store import Store
from tests.runtime.engine_support import REPO
from tests.runtime.support import DOCUMENT, WORKFLOW, new_run


def test_the_test_workflow_version_has_the_compiled_graph_shape() -> None:
    schema = json.loads((REPO / "schemas" / "compiled-graph.schema.json").read_text())
    jsonschema.validate(DOCUMENT["graph"], schema)


def test_a_run_of_the_test_workflow_shows_where_it_is(store: Store) -> None:
    run = new_run(store)
    view = service.show_run(store, run.id)
    assert (view.workflow, view.previous, view.current, view.next) == (
        WORKFLOW,
        None,
        "research",
        ("draft",),
    )
