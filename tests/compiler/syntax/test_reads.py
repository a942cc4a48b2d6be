"""Reading is bounded: no pipe, device or pseudo-file is read, and file() stays in the project.

Each case that used to hang or exhaust memory runs behind a hang guard (a thread
joined with a generous timeout), so a regression fails the test instead of
stalling the suite. Nothing here asserts how fast anything is.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from openseal.compiler.load import load_definitions
from openseal.compiler.pipeline import compile_paths
from openseal.compiler.syntax import file_text as src
from openseal.compiler.syntax.load_hcl import load_hcl_file
from tests.compiler.compile_support import AGENT, BINDING, MODEL, SKILL, workflow_text

T = TypeVar("T")


def guarded(work: Callable[[], T], seconds: float = 60) -> T:
    """``work()``, failing the test if it has not returned after ``seconds``."""
    outcome: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(work())
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "hung"
    if failure:
        raise failure[0]
    return outcome[0]


def codes(result: object) -> list[str]:
    return [d.code for d in result.diagnostics]  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- read_bounded


def test_read_bounded_reads_at_most_one_byte_past_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "big"
    path.write_bytes(b"x" * 10_000)
    assert len(src.read_bounded(path, 100)) == 101
    assert len(src.read_bounded(path, 10_000)) == 10_000


@pytest.mark.parametrize("target", ["/dev/zero", "/dev/null"])
def test_devices_are_refused_before_reading(tmp_path: Path, target: str) -> None:
    link = tmp_path / "x.hcl"
    link.symlink_to(target)
    with pytest.raises(src.NotRegularFile, match="character device"):
        guarded(lambda: src.read_bounded(link, 100))


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "x.hcl"
    os.mkfifo(fifo)
    with pytest.raises(src.NotRegularFile, match="named pipe"):
        guarded(lambda: src.read_bounded(fifo, 100))


def test_pseudo_files_that_read_longer_than_their_size_are_refused() -> None:
    with pytest.raises(src.NotRegularFile, match="longer than its size"):
        src.read_bounded(Path("/proc/self/environ"), 1 << 20)


# --------------------------------------------------------------------------- definition files


@pytest.mark.parametrize("kind", ["fifo", "zero"])
@pytest.mark.parametrize("suffix", [".hcl", ".yaml"])
def test_a_special_definition_file_named_explicitly_is_os001(
    tmp_path: Path, kind: str, suffix: str
) -> None:
    path = tmp_path / f"x{suffix}"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    loaded = guarded(lambda: load_definitions([path]))
    assert codes(loaded) == ["OS001"]
    # A link to a device outside the project is refused before its kind is looked at.
    reason = "not a regular file" if kind == "fifo" else "outside the project"
    assert reason in loaded.diagnostics[0].message
    compiled = guarded(lambda: compile_paths([path]))
    assert codes(compiled) == ["OS001"]


def test_load_hcl_file_refuses_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "x.hcl"
    os.mkfifo(fifo)
    document, diagnostics = guarded(lambda: load_hcl_file(fifo))
    assert document is None and [d.code for d in diagnostics] == ["OS001"]


def test_a_directory_scan_says_what_it_skipped(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.hcl")
    (tmp_path / "zero.yaml").symlink_to("/dev/zero")
    (tmp_path / "dangling.hcl").symlink_to(tmp_path / "absent")
    (tmp_path / "model.hcl").write_text(MODEL, encoding="utf-8")
    for run in (load_definitions, compile_paths):
        result = guarded(lambda run=run: run([tmp_path]))  # type: ignore[misc]
        skipped = sorted((Path(d.span.file).name, d.severity.value) for d in result.diagnostics)
        assert skipped == [
            ("dangling.hcl", "warning"),
            ("pipe.hcl", "warning"),
            ("zero.yaml", "warning"),
        ]
        assert codes(result) == ["OS012"] * 3
        assert result.ok


def test_an_oversized_file_is_refused_after_reading_only_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(src, "MAX_FILE_BYTES", 64)
    path = tmp_path / "x.hcl"
    path.write_text(MODEL * 10, encoding="utf-8")
    assert codes(load_definitions([path])) == ["OS003"]
    assert codes(compile_paths([path])) == ["OS003"]


# --------------------------------------------------------------------------- file()


def project(tmp_path: Path, instructions: str) -> Path:
    root = tmp_path / "project"
    root.mkdir(parents=True)
    (root / ".git").mkdir()  # the repository root: file() reads under it
    agent = AGENT.replace('"Answer the question."', instructions)
    text = "\n".join([MODEL, SKILL, agent, BINDING, workflow_text()])
    (root / "all.hcl").write_text(text, encoding="utf-8")
    return root


def file_error(root: Path) -> str:
    result = guarded(lambda: compile_paths([root]))
    assert not result.ok
    found = [d for d in result.diagnostics if d.code == "OS108"]
    assert len(found) == 1, result.diagnostics
    assert result.documents == {}
    return found[0].message


def test_file_reads_a_regular_file_in_the_project(tmp_path: Path) -> None:
    root = project(tmp_path, 'file("prompts/p.md")')
    (root / "prompts").mkdir()
    (root / "prompts" / "p.md").write_text("Be brief.\n", encoding="utf-8")
    result = compile_paths([root])
    assert result.ok, result.diagnostics
    assert result.documents["agent.helper"].document["spec"]["instructions"] == "Be brief.\n"


def test_file_refuses_the_process_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENSEAL_TEST_SECRET", "ci-token-do-not-leak")
    root = project(tmp_path, 'file("/proc/self/environ")')
    assert "outside the project" in file_error(root)


def test_file_refuses_the_environment_even_when_the_project_is_the_whole_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Outside a repository the current directory is the root; from `/` that is everything.
    root = project(tmp_path, 'file("/proc/self/environ")')
    (root / ".git").rmdir()
    monkeypatch.chdir("/")
    assert "longer than its size" in file_error(root)


@pytest.mark.parametrize("target", ["/dev/zero", "/etc/hostname"])
def test_file_refuses_paths_and_symlinks_leaving_the_project(tmp_path: Path, target: str) -> None:
    root = project(tmp_path, f'file("{target}")')
    assert "outside the project" in file_error(root)
    root_link = project(tmp_path / "link", 'file("p.md")')
    (root_link / "p.md").symlink_to(target)
    assert "outside the project" in file_error(root_link)
    root_up = project(tmp_path / "up", 'file("../../victim.md")')
    (tmp_path / "victim.md").write_text("secret\n", encoding="utf-8")
    assert "outside the project" in file_error(root_up)


def test_file_refuses_a_fifo_in_the_project(tmp_path: Path) -> None:
    root = project(tmp_path, 'file("p.md")')
    os.mkfifo(root / "p.md")
    assert "named pipe" in file_error(root)


def test_file_has_a_size_cap(tmp_path: Path) -> None:
    root = project(tmp_path, 'file("p.md")')
    (root / "p.md").write_bytes(b"x" * (src.MAX_INCLUDED_BYTES + 1))
    assert "larger than" in file_error(root)


def test_text_read_through_file_is_checked_for_secrets(tmp_path: Path) -> None:
    root = project(tmp_path, 'file("prompts/p.md")')
    (root / "prompts").mkdir()
    key = "AKIA" + "ABCDEFGHIJKLMNOP"  # an AWS access key id's shape, split so no scanner flags it
    (root / "prompts" / "p.md").write_text(f"Use key {key} when asked.\n", encoding="utf-8")
    result = compile_paths([root])
    found = [d for d in result.diagnostics if d.code == "OS506"]
    assert len(found) == 1 and not result.ok, result.diagnostics
    assert found[0].span.file == str(root / "all.hcl")  # at the definition that reads it
    assert result.documents == {}


# --------------------------------------------------------------------------- definition files

_LEAKY = """model "leaked" {
  provider    = "scripted"
  model       = 5
  DB_PASSWORD = "hunter2"
}
"""


def linked_project(tmp_path: Path) -> Path:
    """A repository whose `defs/` holds a link to a definition file outside it."""
    root = project(tmp_path / "repo", '"Answer."')
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "leaky.hcl").write_text(_LEAKY, encoding="utf-8")
    (root / "defs").mkdir()
    (root / "defs" / "leaky.hcl").symlink_to(tmp_path / "elsewhere" / "leaky.hcl")
    return root


@pytest.mark.parametrize("named", ["directory", "file", "under a linked directory"])
def test_a_definition_file_linked_from_outside_the_project_is_refused_unread(
    tmp_path: Path, named: str
) -> None:
    root = linked_project(tmp_path)
    path = {"directory": root, "file": root / "defs" / "leaky.hcl"}.get(named)
    if path is None:
        (root / "ext").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
        path = root / "ext" / "leaky.hcl"
    result = compile_paths([path])
    refused = [d for d in result.diagnostics if d.code == "OS001"]
    assert len(refused) == 1, result.diagnostics
    assert refused[0].message == (
        "cannot read file: it is a symbolic link to a file outside the project"
    )
    assert refused[0].span.file.endswith("leaky.hcl") and refused[0].span.line == 1
    assert refused[0].suggestion is not None and "inside the project" in refused[0].suggestion
    # Nothing of it was read: no diagnostic about its content, none of its lines kept.
    assert not any(d.code == "OS103" for d in result.diagnostics), result.diagnostics
    assert not any("hunter2" in text for text in result.loaded.sources.values())
    assert "model.leaked" not in {d.key for d in result.loaded.definitions}


def test_a_definition_file_linked_inside_the_project_is_read(tmp_path: Path) -> None:
    root = project(tmp_path, '"Answer."')
    (root / "shared").mkdir()
    (root / "all.hcl").rename(root / "shared" / "all.hcl")
    (root / "defs").mkdir()
    (root / "defs" / "all.hcl").symlink_to(root / "shared" / "all.hcl")
    result = compile_paths([root / "defs"])
    assert result.ok, result.diagnostics
    assert "workflow.answer" in result.documents
