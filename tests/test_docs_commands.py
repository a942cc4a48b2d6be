"""Every shell session in README.md and docs/ runs as printed and prints what the page shows.

Each page's ``console`` and ``sh`` blocks run in order in one shell, in a scratch directory
holding a git checkout of the example definitions and a scratch home; see
:mod:`tests.doc_pages` (and docs/cli.md) for the conventions: ``<!-- not run: REASON -->``,
``<!-- file: PATH -->``, background servers, and the placeholders output is compared with.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.doc_pages import ROOT, Result, capture, matches, read_page, run_page, typed_later

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: pages whose sessions a test of their own runs, against servers it scripts
RUN_ELSEWHERE = {"authoring.md": "tests/authoring/test_authoring_docs.py"}
#: pages that need minutes; run with `-m slow`
SLOW = {"governance.md", "identity.md", "orchestration.md", "runtime.md", "versions.md"}


def _runnable() -> list[pytest.param]:  # type: ignore[valid-type]
    found = []
    for path in PAGES:
        page = read_page(path)
        if path.name not in RUN_ELSEWHERE and any(step.command for step in page.steps):
            marks = [pytest.mark.slow] if path.name in SLOW else []
            found.append(pytest.param(path, id=path.name, marks=marks))
    return found


def test_every_block_left_out_says_why() -> None:
    for path in PAGES:
        for line, reason in read_page(path).skipped:
            assert len(reason.split()) >= 3, f"{path.name}:{line}: say why it is not run"


def _compare(shown: list[str], result: Result, printed: dict[str, str], typed: set[str]) -> bool:
    """Whether the step printed what the page shows; what it printed for values later
    commands type is remembered in ``printed``."""
    found = capture(shown, result.output, printed, typed)
    if found is None:
        return False
    printed.update({value: found[value] for value in typed if value in found})
    return True


def test_the_conventions_read_sessions_and_outputs() -> None:
    assert matches(["run 0191f0aa0000000000000000000000aa  queued"], "run <id>  queued")
    assert matches(["compiled ... definitions", "…", "done"], "compiled 9 definitions\na\nb\ndone")
    assert not matches(["done"], "not done")
    assert matches([], "")
    # a handle shown stands for the one printed; a value a later command types is captured
    assert matches(["HANDLE    STATUS", "k7q9x2ad  queued"], "HANDLE    STATUS\nwwwweyw3  queued")
    assert not matches(["k7q9x2ad  queued"], "01a24fdd  queued\nmore")
    assert matches(["canceled accepted"], "canceled accepted")
    assert matches(["action 01a22bd5... done"], "action 01a22bd541b6c2f9b0987bcfd38573f8 done")
    shown = ["k7q9x2ad  k7q9x2ad  bf85238147…"]
    found = capture(shown, "jxn59a9m  jxn59a9m  4c05f516c2e1b5…", {}, {"k7q9x2ad", "bf85238147"})
    assert found == {"k7q9x2ad": "jxn59a9m", "bf85238147": "4c05f516c2"}
    assert capture(shown, "jxn59a9m  pthvpvrw  4c05f516c2e1b5…") is None  # one handle, one record
    assert capture(["run k7q9x2ad"], "run pthvpvrw", {"k7q9x2ad": "jxn59a9m"}) is None


@pytest.mark.parametrize("path", _runnable())
def test_the_page_runs_as_printed(path: Path, tmp_path: Path) -> None:
    page = read_page(path)
    results = run_page(page, tmp_path)
    assert len(results) == len(page.steps), f"the page stopped early: {results[-1:]}"
    problems = []
    typed, printed = typed_later(page), {}  # values later commands type: as the page ran
    for index, result in enumerate(results):
        step = result.step
        where = f"{path.name}:{step.line}"
        if step.file is not None:
            continue
        failed = result.code != 0
        if failed != step.must_fail:
            expected = "to fail" if step.must_fail else "to succeed"
            problems.append(
                f"{where}: `{step.command}` exited {result.code}, expected {expected}:\n"
                f"{result.output}"
            )
        elif (
            step.shown
            and not step.background
            and not _compare(step.shown, result, printed, typed[index])
        ):
            shown = "\n".join(step.shown)
            problems.append(
                f"{where}: `{step.command}` printed:\n{result.output}\n--- the page shows:\n{shown}"
            )
    assert not problems, "\n\n".join(problems)
