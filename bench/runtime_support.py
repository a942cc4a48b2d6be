"""What the runtime benchmarks share: is the engine there, the workflows, a loaded store.

The engine is probed, not assumed: when ``openseal.runtime.engine.engine`` is missing or lacks what
a benchmark drives, the benchmark reports "not available" with the reason.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event

from bench.generate import PREAMBLE_HCL
from bench.postgres import scratch_schema
from openseal.compiler.pipeline import compile_paths
from openseal.runtime.store import Run, Store, open_store

#: What the runtime benchmarks add to the compiler benchmarks' preamble: a ``write`` no-op
#: skill with same-key retry declared (OS503) that needs no approval (OS504 asks for one only
#: from ``external`` up, or when a skill or binding says so), and an agent allowed to use it.
RUNTIME_PREAMBLE = """skill "record" {
  description = "Record something (a no-op that counts as a write)."
  effect      = "write"
  input       = object({ q = string })
  output      = object({ answer = string })
  timeout     = "10s"
  adapter "python" {
    entry_point = "bench.skills:noop"
  }
  idempotency {
    same_key_retry = true
  }
}

skill "slow_record" {
  description = "Record something slowly: 20 ms of waiting, as for a remote service."
  effect      = "write"
  input       = object({ q = string })
  output      = object({ answer = string })
  timeout     = "10s"
  adapter "python" {
    entry_point = "bench.skills:slow"
  }
  idempotency {
    same_key_retry = true
  }
}

skill "notify" {
  description = "Tell someone outside (a no-op that needs an approval)."
  effect      = "external"
  input       = object({ q = string })
  output      = object({ answer = string })
  timeout     = "10s"
  adapter "python" {
    entry_point = "bench.skills:noop"
  }
  idempotency {
    same_key_retry = true
  }
  approval {
    required   = true
    approvers  = ["requester"]
    expires_in = "72h"
  }
}

agent "writer" {
  model        = model.m
  instructions = "Record the answer."
  max_risk     = "external"
}

binding "writer_records" {
  skill = skill.record
  to    = agent.writer
}

binding "writer_records_slowly" {
  skill = skill.slow_record
  to    = agent.writer
}

binding "writer_notifies" {
  skill = skill.notify
  to    = agent.writer
}
"""


def action_workflow(skill: str = "record", name: str = "three_steps") -> str:
    """transform → action (``skill``, dispatched as a governed action) → end."""
    return ACTION_WORKFLOW.replace("skill.record", f"skill.{skill}").replace(
        'workflow "three_steps"', f'workflow "{name}"'
    )


#: A proposal, its approval, then the approved action: approval → dispatch latency.
APPROVAL_WORKFLOW = """workflow "approve_then_act" {
  owner = agent.writer
  start = state.draft
  input "n" {
    type = number
  }
  state "draft" {
    proposal "note" {
      skill = skill.notify
      args  = { q = "note-${input.n}" }
    }
    next = state.review
  }
  state "review" {
    approval {
      proposal   = proposal.note
      approvers  = ["requester"]
      expires_in = "72h"
    }
    on "approved" {
      next = state.send
    }
    on "rejected" {
      next = state.done
    }
  }
  state "send" {
    action {
      proposal = proposal.note
    }
    next = state.done
  }
  state "done" {
    end = "completed"
  }
}
"""

#: Three steps with a no-op ``write`` skill in the middle, dispatched as a governed action.
ACTION_WORKFLOW = """workflow "three_steps" {
  owner = agent.writer
  start = state.prepare
  input "n" {
    type = number
  }
  state "prepare" {
    transform {
      output = { q = "item-${input.n}" }
    }
    next = state.act
  }
  state "act" {
    action {
      skill = skill.record
      args  = { q = state.prepare.output.q }
    }
    next = state.done
    on "failed" { next = state.done }
  }
  state "done" {
    end = "completed"
  }
}
"""

#: The fallback while ``action`` has no handler: transform → transform → end.
TRANSFORM_WORKFLOW = """workflow "three_steps" {
  owner = agent.helper
  start = state.prepare
  input "n" {
    type = number
  }
  state "prepare" {
    transform {
      output = { q = "item-${input.n}" }
    }
    next = state.shape
  }
  state "shape" {
    transform {
      output = { total = input.n * 2 }
    }
    next = state.done
  }
  state "done" {
    end = "completed"
  }
}
"""

#: One wait for an event that never comes: what "many runs waiting" costs.
WAIT_WORKFLOW = """workflow "waits" {
  owner = agent.helper
  start = state.hold
  input "n" {
    type = number
  }
  state "hold" {
    wait {
      event       = "go"
      correlation = { n = input.n }
    }
    next = state.done
  }
  state "done" {
    end = "completed"
  }
}
"""


def engine_problem() -> str | None:
    """Why the engine cannot be benchmarked, or None when it can."""
    try:
        engine = importlib.import_module("openseal.runtime.engine.engine")
        service = importlib.import_module("openseal.runtime.service")
    except ImportError as exc:
        return f"the runtime engine is not importable yet ({exc})"
    missing = [
        name
        for module, name in (
            (engine, "Engine"),
            (service, "register_documents"),
            (service, "create_objective"),
        )
        if not hasattr(module, name)
    ]
    return f"the runtime lacks {', '.join(missing)}" if missing else None


def action_supported() -> bool:
    """True once a real handler for ``action`` states is registered."""
    from openseal.runtime.engine.states import handler_for, simple

    return handler_for("action") is not simple.not_supported


def compiled(directory: Path, workflow: str, preamble: str = PREAMBLE_HCL) -> list[Any]:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "project.hcl").write_text(
        preamble + "\n" + RUNTIME_PREAMBLE + "\n" + workflow, encoding="utf-8"
    )
    result = compile_paths([directory])
    if not result.ok:
        first = result.diagnostics[0]
        raise RuntimeError(f"benchmark workflow does not compile: {first.code} {first.message}")
    return list(result.documents.values())


def start_run(store: Store, workflow: str, inputs: dict[str, Any]) -> Run:
    """Start an objective of the deployed ``workflow`` from the CLI and return its run."""
    from openseal.runtime import service

    created = service.create_objective(store, service.StartObjective(workflow, inputs), service.CLI)
    if created.run is None:
        raise RuntimeError(f"objective {created.objective.id} of {workflow} has no run")
    return created.run


@contextlib.contextmanager
def loaded_store(
    home: Path, documents: list[Any], postgres_url: str | None = None
) -> Iterator[Store]:
    """A fresh store with ``documents`` deployed: SQLite under ``home`` (the store's own
    settings), or with ``postgres_url`` a scratch schema on that server, dropped afterwards."""
    from openseal.runtime.service import register_documents

    home.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        if postgres_url is None:
            store = open_store(home=home)
        else:
            connect_args = stack.enter_context(scratch_schema(postgres_url))
            store = open_store(
                postgres_url, home=home, auto_migrate=True, connect_args=connect_args
            )
        stack.callback(store.close)
        register_documents(store, documents)
        yield store


@dataclass
class CommitCounter:
    """Counts committed transactions on an engine (read transactions commit too; see below)
    and the statements sent (``BEGIN`` and savepoints included: each is a round trip)."""

    commits: int = 0
    writes: int = 0
    statements: int = 0

    #: the files libpq traces each PostgreSQL connection's messages to (:meth:`trace_round_trips`)
    traced: list[Path] = field(default_factory=list)
    _dirty: set[int] = field(default_factory=set, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)  # threads count
    _files: list[Any] = field(default_factory=list, repr=False)

    def attach(self, engine: sa.Engine) -> None:
        event.listen(engine, "commit", self._commit)
        event.listen(engine, "before_cursor_execute", self._statement)

    def _statement(self, conn: sa.Connection, _c: Any, sql: str, *_rest: Any) -> None:
        with self._lock:
            self.statements += 1
            if not sql.lstrip().upper().startswith(READ_ONLY_PREFIXES):
                self._dirty.add(id(conn))

    def trace_round_trips(self, engine: sa.Engine, directory: Path) -> None:
        """Have libpq trace the messages each of ``engine``'s PostgreSQL connections sends, from
        its next transaction on, into a file in ``directory`` (:meth:`round_trips` counts them).
        Tracing costs CPU on every message: for batches that are not timed."""
        directory.mkdir(parents=True, exist_ok=True)
        seen: set[int] = set()

        def begin(conn: sa.Connection) -> None:
            driver = conn.connection.driver_connection
            if id(driver) in seen:
                return
            seen.add(id(driver))
            path = directory / f"connection-{len(seen)}.trace"
            with self._lock:
                self.traced.append(path)
            trace = path.open("w")  # open for the connection's life (libpq writes to it)
            driver.pgconn.trace(trace.fileno())  # type: ignore[union-attr]
            driver.pgconn.set_trace_flags(psycopg_trace_flags())  # type: ignore[union-attr]
            with self._lock:
                self._files.append((driver, trace))

        event.listen(engine, "begin", begin)

    def stop_tracing(self) -> None:
        """Stop tracing the connections still open, which writes out what libpq buffered."""
        with self._lock:
            files, self._files = self._files, []
        for driver, trace in files:
            if not driver.closed:
                driver.pgconn.untrace()
            trace.close()

    def round_trips(self) -> int:
        """Round trips sent on the traced connections: each ``Sync`` (the end of a statement,
        or of a pipeline of several) or simple ``Query`` (``COMMIT``) waits for the server."""
        count = 0
        for path in self.traced:
            for line in path.read_text(errors="replace").splitlines():
                fields = line.split("\t")
                if len(fields) > 2 and fields[0] == "F":
                    count += fields[2].split(" ")[0] in ("Sync", "Query")
        return count

    def _commit(self, conn: sa.Connection) -> None:
        # Only transactions that wrote something cost an fsync; reads end with COMMIT too.
        with self._lock:
            self.commits += 1
            if id(conn) in self._dirty:
                self.writes += 1
                self._dirty.discard(id(conn))


def psycopg_trace_flags() -> Any:
    """libpq's trace without timestamps (imported here: psycopg only for PostgreSQL)."""
    import psycopg

    return psycopg.pq.Trace.SUPPRESS_TIMESTAMPS


#: statements that write nothing: a transaction of only these costs no fsync
READ_ONLY_PREFIXES = ("SELECT", "PRAGMA", "BEGIN", "SAVEPOINT", "RELEASE", "ROLLBACK")
