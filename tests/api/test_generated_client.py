"""A client generated from the served OpenAPI document (openapi-python-client, as API users
would make one) works against a real server: it lists runs and pauses one, and reads the
answers into its typed models."""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.api.conftest import Serve

pytestmark = pytest.mark.slow  # generating the client takes several seconds

PACKAGE = "openseal_generated_client"


@pytest.fixture
def generated(tmp_path: Path) -> Iterator[Path]:
    """Where the generated package goes; it is forgotten by the interpreter afterwards."""
    yield tmp_path / "client"
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(f"{PACKAGE}.")]:
        del sys.modules[name]
    if str(tmp_path) in sys.path:
        sys.path.remove(str(tmp_path))


def generate(document_url: str, out: Path) -> Any:
    """Generate the client for the document at ``document_url`` into ``out`` and import it."""
    config = out.parent / "generator.yaml"
    config.write_text(
        f"package_name_override: {PACKAGE}\nproject_name_override: openseal-client\n"
        "post_hooks: []\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [
            sys.executable, "-m", "openapi_python_client", "generate", "--url", document_url,
            "--meta", "none", "--config", str(config), "--output-path", str(out / PACKAGE),
        ],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Warning" not in done.stdout + done.stderr, done.stdout + done.stderr
    sys.path.insert(0, str(out))
    return importlib.import_module(PACKAGE)


def test_a_generated_client_lists_and_pauses_a_run(serve: Serve, generated: Path) -> None:
    server = serve(external_workers=True)
    with server.client() as plain:
        started = plain.post("/objectives", json={"workflow": "small", "inputs": {"n": 5}}).json()
    run_id = started["run"]["id"]
    generate(f"{server.url}/api/v1/openapi.json", generated)
    runs_list = importlib.import_module(f"{PACKAGE}.api.runs.runs_list")
    runs_pause = importlib.import_module(f"{PACKAGE}.api.runs.runs_pause")
    models = importlib.import_module(f"{PACKAGE}.models")
    assert server.operator is not None  # the local operator's secret, as any bearer token
    client = importlib.import_module(PACKAGE).AuthenticatedClient(
        base_url=server.url, token=server.operator.secret
    )

    page = runs_list.sync(client=client, limit=10)
    assert isinstance(page, models.RunPage), page
    assert [run.id for run in page.runs] == [run_id]
    assert page.runs[0].status == models.RunStatus.QUEUED
    assert page.runs[0].objective_id == started["objective"]["id"]

    paused = runs_pause.sync(run_id, client=client, body=models.RunCommand(reason="a look"))
    assert isinstance(paused, models.RunChanged), paused
    assert paused.run.status == models.RunStatus.PAUSED
    unknown = runs_pause.sync("no-such-run", client=client, body=models.RunCommand())
    assert isinstance(unknown, models.ErrorBody), unknown
    assert unknown.error.code == "not_found"
