"""The durable benchmark on tiny sizes: every openseal configuration is measured, the
in-process ``Engine.submit`` one included, and the peers are compared with the fastest batched
one, which the comparison names. No timing assertions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench import durable
from bench.harness import Figure, Options, compare, summarize

SUBMIT_FIGURE = f"openseal runs/s, Engine.submit from {durable.CONCURRENCY} threads"


def slow_peer(name: str, _script: str, _options: Options) -> tuple[Figure, dict[str, Any]]:
    """A peer that managed one run per second (so any openseal figure is the faster)."""
    return compare(f"{name} runs/s", "runs/s", summarize([1.0])), {}


def test_durable_measures_engine_submit_and_compares_the_fastest_batched_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(durable, "measure_peer", slow_peer)
    report = durable.run(Options(tmp_path, quick=True, repeat=1))

    figures = {figure.name: figure for figure in report.figures}
    for name in ("openseal runs/s, concurrency 1", "openseal runs/s", SUBMIT_FIGURE):
        assert figures[name].available, figures[name].note
    assert "statements" in figures[SUBMIT_FIGURE].note
    submit = report.parameters["submit"]
    assert submit["cpu_ms_per_run"] > 0 and submit["statements_per_run"] > 0
    # each run's creation, claim and first turn share commits with other runs' writes (at most
    # the three commits per run of a thread alone)
    assert 0 < submit["write_commits_per_run"] <= 3
    setting = report.parameters["peer_comparison"]
    assert setting in (durable.WORKER_SETTING, durable.SUBMIT_SETTING)
    faster = SUBMIT_FIGURE if setting == durable.SUBMIT_SETTING else "openseal runs/s"
    for peer in durable.PEER_TARGETS:
        versus = figures[f"openseal runs/s vs {peer}"]
        assert setting in versus.note
        assert versus.stats == figures[faster].stats
    assert f"{SUBMIT_FIGURE} (" not in " ".join(figures)  # no baseline for it


def test_a_batch_of_engine_submits_from_threads_completes_every_run(tmp_path: Path) -> None:
    documents = durable.compiled(tmp_path / "project", durable.ACTION_WORKFLOW)
    options = Options(tmp_path, quick=True, repeat=1)
    batch = durable.Batch(options, documents, 5, concurrency=2, submit=True)

    sample = batch()

    assert sample.turns >= 5 * 2  # every run completed (the batch checks it), turn by turn
    assert sample.commits.writes <= 5 * 3


def test_a_peer_that_did_not_run_gives_its_reason_once() -> None:
    peer = durable.unavailable("DBOS runs/s", "peers not installed", "runs/s")

    versus = durable.versus_peer("DBOS", peer, (summarize([100.0]), durable.SUBMIT_SETTING))

    assert not versus.available
    assert versus.note == "not available: peers not installed"
    assert versus.target is not None and versus.target.bound == durable.PEER_TARGETS["DBOS"]


def test_a_peer_is_compared_with_the_configuration_named() -> None:
    peer = compare("LangGraph runs/s", "runs/s", summarize([50.0]))

    versus = durable.versus_peer("LangGraph", peer, (summarize([150.0]), durable.SUBMIT_SETTING))

    assert versus.ratio == pytest.approx(3.0)
    assert durable.SUBMIT_SETTING in versus.note


def test_an_uncounted_batch_listens_to_no_statement(tmp_path: Path) -> None:
    """The timed ``Engine.submit`` batches pay for no counting listeners (the peers' runs pay
    for none); the counts come from a batch of their own."""
    documents = durable.compiled(tmp_path / "project", durable.ACTION_WORKFLOW)
    options = Options(tmp_path, quick=True, repeat=1)
    batch = durable.Batch(options, documents, 3, concurrency=2, submit=True, counted=False)

    sample = batch()

    assert sample.turns >= 3 * 2
    assert (sample.commits.commits, sample.commits.statements) == (0, 0)
