"""What the authoring tests share: a definitions directory with an authoring model profile,
a runtime context that resolves its key, and drafts a scripted model answers with."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from tests.runtime.providers.chat_server import ChatServer, Reply, completion

ROOT = Path(__file__).resolve().parents[2]
PROCUREMENT = ROOT / "definitions" / "procurement"
KEY = "sk-authoring-Xy82kdQm1"
KEY_VARIABLE = "OPENSEAL_TEST_AUTHORING_KEY"
PROFILE = "drafter"

GOOD = """agent "auditor" {
  description  = "Reads purchase orders and reports anomalies."
  model        = model.procurement_default
  instructions = "Report orders whose total looks wrong."
  max_risk     = "read"
}
"""

#: the same agent with a misspelt model reference: the compiler reports OS201 with a hint
BAD = GOOD.replace("model.procurement_default", "model.procurement_defualt")

#: a new read skill granted to the researcher role, and a workflow that uses it
WIDENING = """skill "lookup_budget" {
  description = "Look up the remaining budget of a cost centre."
  effect      = "read"
  input       = object({ cost_centre = string })
  output      = object({ remaining = number })

  adapter "http" {
    method = "GET"
    url    = "${config.procurement_url}/budgets/${args.cost_centre}"
  }
}

binding "researcher_looks_up_budgets" {
  skill = skill.lookup_budget
  to    = team.procurement.role.researcher
}

workflow "check_budget" {
  description = "Check how much budget a cost centre has left."
  owner       = team.procurement
  start       = state.look

  input "cost_centre" {
    type = string
  }

  state "look" {
    turn {
      agent  = team.procurement.role.researcher
      goal   = "How much budget is left for ${input.cost_centre}?"
      skills = [skill.lookup_budget]
      output = object({ remaining = number })
    }
    next = state.done
  }

  state "done" {
    end = "completed"
  }
}
"""


def answer(*files: tuple[str, str]) -> Reply:
    """A completion whose content is the structured answer holding ``files`` (path, hcl)."""
    body = {"files": [{"path": path, "syntax": "hcl", "content": text} for path, text in files]}
    return Reply.ok(completion(json.dumps(body), usage=(1200, 300)))


def workspace(tmp_path: Path, server: ChatServer, *, complete: bool = True) -> Path:
    """A copy of the procurement definitions with an authoring profile, and a context file.

    Returns the definitions directory; the context file is ``tmp_path / "context.yaml"``.
    """
    copy = tmp_path / "procurement"
    shutil.copytree(PROCUREMENT, copy)
    # file() reads inside the git repository that holds the definitions, as in a real checkout
    subprocess.run(["git", "init", "--quiet", str(copy)], check=True)
    definitions = copy / "hcl"
    credential = '  credential = "authoring_key"\n' if complete else ""
    (definitions / "authoring.hcl").write_text(
        f'model "{PROFILE}" {{\n'
        f'  base_url   = "{server.base_url}"\n'
        '  model      = "draft-model-1"\n'
        f"{credential}"
        "  parameters = { temperature = 0 }\n"
        "}\n",
        encoding="utf-8",
    )
    (tmp_path / "context.yaml").write_text(
        f"credentials:\n  authoring_key: {{ env: {KEY_VARIABLE} }}\n", encoding="utf-8"
    )
    return definitions


def sent_messages(request: Any) -> list[dict[str, Any]]:
    return list(request.body["messages"])
