"""A PostgreSQL primary and its synchronous standby of a test's own, to fail one of them.

Never the machine's own server: each node is a fresh ``initdb`` in a temporary directory on a
free port, run as the ``postgres`` user (``runuser`` when the tests run as root, as in CI).
The standby is a ``pg_basebackup`` of the primary streaming from it, named in the primary's
``synchronous_standby_names``: a commit the primary acknowledges is on the standby too, so
promoting the standby loses nothing a client was told is committed.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlalchemy as sa

STANDBY_NAME = "standby1"
#: generous bound on a server starting, stopping or catching up (a loaded machine)
GUARD = 120.0


def _bin_dir() -> Path | None:
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4])
    )
    return Path(found[-1]).parent if found else None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Node:
    data: Path
    port: int

    @property
    def postmaster_pid(self) -> int:
        return int((self.data / "postmaster.pid").read_text().split()[0])

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"


class PgPair:
    """A primary and its synchronous standby, started by :func:`pg_pair`."""

    def __init__(self, bin_dir: Path, root: Path) -> None:
        self.bin = bin_dir
        self.root = root
        self.primary = Node(root / "primary", free_port())
        self.standby = Node(root / "standby", free_port())
        self._as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    def run(self, tool: str, *args: str) -> None:
        command = [*self._as_postgres, str(self.bin / tool), *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=GUARD, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} failed ({done.returncode}): {done.stderr or done.stdout}")

    def url(self, database: str = "postgres") -> str:
        """Both nodes, the primary first; connections go to whichever takes writes."""
        return (
            f"postgresql+psycopg://postgres@127.0.0.1:{self.primary.port},"
            f"127.0.0.1:{self.standby.port}/{database}?target_session_attrs=read-write"
        )

    def start(self) -> None:
        primary, standby = self.primary, self.standby
        self.run("initdb", "-D", str(primary.data), "-U", "postgres", "--auth=trust",
                 "-E", "UTF8", "--no-sync")  # fmt: skip
        self._configure(primary, synchronous=STANDBY_NAME)
        self._start(primary)
        self.run("pg_basebackup", "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres",
                 "-D", str(standby.data), "-R", "-X", "stream")  # fmt: skip
        conninfo = (
            f"host=127.0.0.1 port={primary.port} user=postgres application_name={STANDBY_NAME}"
        )
        self._configure(standby, synchronous="", conninfo=conninfo)
        self._start(standby)
        self._wait_until_synchronous()

    def start_alone(self, settings: tuple[str, ...]) -> None:
        """Start the primary only, with ``settings`` (``name = value`` lines) added to its
        configuration: a server of the test's own, without a standby."""
        primary = self.primary
        self.run("initdb", "-D", str(primary.data), "-U", "postgres", "--auth=trust",
                 "-E", "UTF8", "--no-sync")  # fmt: skip
        self._configure(primary, synchronous="", extra=settings)
        self._start(primary)

    def _configure(
        self,
        node: Node,
        *,
        synchronous: str,
        conninfo: str | None = None,
        extra: tuple[str, ...] = (),
    ) -> None:
        # A promoted standby must not wait for a standby of its own: it names none.
        lines = [
            "listen_addresses = '127.0.0.1'", f"port = {node.port}",
            f"unix_socket_directories = '{self.root}'", "wal_level = replica",
            "max_wal_senders = 4", f"synchronous_standby_names = '{synchronous}'",
            "shared_buffers = 16MB", "max_connections = 80", "fsync = off",
        ]  # fmt: skip
        if conninfo is not None:
            lines.append(f"primary_conninfo = '{conninfo}'")
        lines.extend(extra)
        with (node.data / "postgresql.auto.conf").open("a", encoding="utf-8") as conf:
            conf.write("\n".join(lines) + "\n")

    def _start(self, node: Node) -> None:
        log = self.root / f"{node.data.name}.log"
        self.run("pg_ctl", "-D", str(node.data), "-l", str(log), "-w", "-t", str(int(GUARD)),
                 "start")  # fmt: skip

    def _wait_until_synchronous(self) -> None:
        engine = sa.create_engine(self.primary.url())
        try:
            deadline = time.monotonic() + GUARD
            while True:
                with engine.connect() as conn:
                    state = conn.execute(
                        sa.text("SELECT sync_state FROM pg_stat_replication "
                                "WHERE application_name = :name"), {"name": STANDBY_NAME},
                    ).scalar()  # fmt: skip
                if state == "sync":
                    return
                if time.monotonic() > deadline:
                    raise AssertionError(f"the standby never became synchronous ({state})")
                time.sleep(0.1)
        finally:
            engine.dispose()

    def restart_primary(self) -> None:
        """Stop the primary cleanly and start it again (settings that need a restart apply)."""
        log = self.root / f"{self.primary.data.name}.log"
        self.run("pg_ctl", "-D", str(self.primary.data), "-l", str(log), "-m", "fast", "-w",
                 "-t", str(int(GUARD)), "restart")  # fmt: skip

    def kill_primary(self) -> None:
        """SIGKILL the primary's postmaster: no shutdown, no goodbye to its clients."""
        os.kill(self.primary.postmaster_pid, signal.SIGKILL)

    def promote(self) -> None:
        self.run("pg_ctl", "-D", str(self.standby.data), "-w", "-t", str(int(GUARD)), "promote")

    def close(self) -> None:
        """Stop whichever node still runs (``immediate``: nothing to keep) and remove both. A
        killed primary's server processes notice their postmaster is gone and exit."""
        for node in (self.standby, self.primary):
            if _alive(node):
                command = [*self._as_postgres, str(self.bin / "pg_ctl"), "-D", str(node.data),
                           "-m", "immediate", "-w", "stop"]  # fmt: skip
                subprocess.run(command, capture_output=True, timeout=GUARD, check=False)
        shutil.rmtree(self.root, ignore_errors=True)


def _alive(node: Node) -> bool:
    try:
        os.kill(node.postmaster_pid, 0)
    except (OSError, ValueError):  # no pid file, or no such process
        return False
    return True


@contextmanager
def pg_pair() -> Iterator[PgPair]:
    """A started primary with its synchronous standby, stopped and removed afterwards (also
    when the test fails). Skips when PostgreSQL's server binaries are not installed."""
    with _cluster() as pair:
        pair.start()
        yield pair


@contextmanager
def pg_server(settings: tuple[str, ...]) -> Iterator[PgPair]:
    """A started server of the test's own (``.primary``, no standby) with ``settings`` added
    to its configuration; stopped and removed as :func:`pg_pair`'s."""
    with _cluster() as pair:
        pair.start_alone(settings)
        yield pair


@contextmanager
def _cluster() -> Iterator[PgPair]:
    bin_dir = _bin_dir()
    if bin_dir is None or (shutil.which("runuser") is None and os.geteuid() == 0):
        pytest.skip("PostgreSQL's server binaries (initdb, pg_ctl) are not installed")
    root = Path(tempfile.mkdtemp(prefix="openseal-pg-"))
    if os.geteuid() == 0:
        owner = pwd.getpwnam("postgres")
        os.chown(root, owner.pw_uid, owner.pw_gid)
    pair = PgPair(bin_dir, root)
    try:
        yield pair
    finally:
        pair.close()
