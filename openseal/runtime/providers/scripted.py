"""The deterministic ``scripted`` provider: responses read from a YAML or JSON file.

The file maps a key to the list of responses for successive model calls of one state visit::

    research:                       # a workflow state (or "research#2" for its 2nd visit,
      - tool_calls:                 #   an agent name, or "*" for anything else)
          - {name: search_vendors, arguments: {item: laptop, quantity: 10}}
      - output: {vendor: Acme, unit_price: 950, currency: EUR}
        usage: {input_tokens: 120, output_tokens: 30}

The n-th call of a visit gets the n-th response, so the answer depends only on the request,
never on process history: a replacement worker asking again would get the same answer. Every
call is appended to ``calls_file`` (one JSON line, ``O_APPEND``) so tests can prove across
processes that a recorded activity was never called again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import yaml

from openseal.runtime.providers.base import ModelError, ModelRequest, ModelResponse

RESPONSES_ENV = "OPENSEAL_SCRIPTED_RESPONSES"
CALLS_ENV = "OPENSEAL_SCRIPTED_CALLS"


def load_script(path: Path) -> dict[str, list[dict[str, Any]]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ModelError(f"cannot read scripted responses {path}: {exc.strerror}") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "invalid"
        raise ModelError(f"scripted responses {path} are not valid: {first}") from None
    if isinstance(data, dict) and isinstance(data.get("responses"), dict):
        data = data["responses"]
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise ModelError(f"scripted responses {path} must map keys to lists of responses")
    return {str(k): list(v) for k, v in data.items()}


class ScriptedProvider:
    """A :class:`~openseal.runtime.providers.base.ModelProvider` that replays a script."""

    def __init__(
        self,
        responses: dict[str, list[dict[str, Any]]],
        *,
        calls_file: Path | None = None,
    ) -> None:
        self.responses = responses
        self.calls_file = calls_file

    @classmethod
    def from_file(cls, path: Path, *, calls_file: Path | None = None) -> ScriptedProvider:
        return cls(load_script(path), calls_file=calls_file)

    def complete(self, request: ModelRequest) -> ModelResponse:
        self._count(request)
        keys = (f"{request.state}#{request.visit}", request.state, request.agent, "*")
        for key in keys:
            script = self.responses.get(key)
            if script is None:
                continue
            if request.call > len(script):
                raise ModelError(f"scripted provider has no response #{request.call} for {key!r}")
            entry = script[request.call - 1]
            if not isinstance(entry, dict):
                raise ModelError(f"scripted response #{request.call} for {key!r} is not a mapping")
            return ModelResponse.from_json(_with_ids(entry, request))
        raise ModelError(f"scripted provider has no responses for state {request.state!r}")

    def _count(self, request: ModelRequest) -> None:
        if self.calls_file is None:
            return
        line = json.dumps(
            {"state": request.state, "visit": request.visit, "call": request.call,
             "agent": request.agent, "pid": os.getpid()}
        )  # fmt: skip
        # One write(2) of a short line with O_APPEND: concurrent writers never interleave.
        fd = os.open(self.calls_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (line + "\n").encode("utf-8"))
        finally:
            os.close(fd)


def _with_ids(entry: dict[str, Any], request: ModelRequest) -> dict[str, Any]:
    calls = [
        {"id": c.get("id") or f"call_{request.call}_{i}", **c}
        for i, c in enumerate(entry.get("tool_calls") or ())
    ]
    return {**entry, "tool_calls": calls}


def read_calls(path: Path) -> list[dict[str, Any]]:
    """The calls a scripted provider counted in ``path`` (empty if none yet)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
