"""What the ask tests share: the release-note definitions with their writer's model profile
pointing at a local chat server, compiled, and the model's scripted plans."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from openseal.compiler.output.document import CompiledDocument
from openseal.runtime.providers import default_provider_factory
from openseal.runtime.providers.factory import ProviderFactory
from openseal.skills.credentials import RuntimeContext
from tests.runtime.engine_support import compile_files
from tests.runtime.providers.chat_server import ChatServer, Reply, completion

ROOT = Path(__file__).resolve().parents[2]
RELEASE_NOTE = ROOT / "definitions" / "release_note" / "hcl"
PROCUREMENT = ROOT / "definitions" / "procurement"
KEY = "sk-ask-Jq83ndPw2"
KEY_VARIABLE = "OPENSEAL_TEST_ASK_KEY"
PROMPT = "Write the release note for 2.4, covering what changed since 2.3"
FITTING = {"release": {"version": "2.4", "since": "2.3"}}


def release_documents(tmp_path: Path, chat: ChatServer) -> list[CompiledDocument]:
    """The release-note definitions, the writer's model served by ``chat``; also writes the
    runtime context resolving its key to ``tmp_path / "context.yaml"``."""
    copy = tmp_path / "release_note"
    shutil.copytree(RELEASE_NOTE, copy)
    served_by(chat, copy / "release_note.hcl", "writer_default")
    context(tmp_path)
    return compile_files(copy)


def procurement_documents(tmp_path: Path, chat: ChatServer) -> list[CompiledDocument]:
    """The procurement definitions (the team owns ``procure_laptops``), its model served by
    ``chat``; the runtime context as :func:`release_documents` writes it."""
    copy = tmp_path / "procurement"
    shutil.copytree(PROCUREMENT, copy)
    # file() reads inside the git repository that holds the definitions
    subprocess.run(["git", "init", "--quiet", str(copy)], check=True)
    served_by(chat, copy / "hcl" / "models.hcl", "procurement_default")
    context(tmp_path)
    return compile_files(copy / "hcl")


def served_by(chat: ChatServer, source: Path, profile: str) -> None:
    """Point model profile ``profile`` in ``source`` at ``chat``, its key a reference."""
    text = re.sub(
        rf'model "{profile}" \{{.*?\n\}}',
        f'model "{profile}" {{\n'
        f'  base_url   = "{chat.base_url}"\n'
        '  model      = "planner-model-1"\n'
        '  credential = "writer_key"\n'
        "}",
        source.read_text(encoding="utf-8"),
        count=1,
        flags=re.DOTALL,
    )
    source.write_text(text, encoding="utf-8")


def context(tmp_path: Path) -> Path:
    path = tmp_path / "context.yaml"
    path.write_text(f"credentials:\n  writer_key: {{ env: {KEY_VARIABLE} }}\n", encoding="utf-8")
    return path


def factory(tmp_path: Path) -> ProviderFactory:
    credentials = RuntimeContext.load(tmp_path / "context.yaml").credentials
    return default_provider_factory(credentials=credentials)


def plan(workflow: str, inputs: dict[str, Any], reason: str = "it asks for that") -> Reply:
    """A completion whose content is the model's plan."""
    body = {"workflow": workflow, "inputs": inputs, "reason": reason}
    return Reply.ok(completion(json.dumps(body), usage=(400, 60)))


def sent(request: Any) -> list[dict[str, Any]]:
    return list(request.body["messages"])
