"""The durable benchmark on tiny sizes: every openseal configuration is measured, the
in-process ``Engine.submit`` one included, its repetitions alternating with the peers', and the
peers are compared with the fastest batched one, which the comparison names. No timing
assertions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench import durable
from bench.harness import Options, Report, compare, summarize
from bench.runtime_support import CommitCounter

SUBMIT_FIGURE = f"openseal runs/s, Engine.submit from {durable.CONCURRENCY} threads"


def slow_peer(_script: str, _options: Options, runs: int, _repetition: int) -> dict[str, Any]:
    """A peer's repetition of one run per second (so any openseal figure is the faster)."""
    return {"seconds": [float(runs)], "version": "0"}


def test_durable_measures_engine_submit_and_compares_the_fastest_batched_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(durable, "ensure_peers", lambda _options: None)
    monkeypatch.setattr(durable, "measure_peer", slow_peer)
    report = durable.run(Options(tmp_path, quick=True, repeat=2))

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
    # each repetition of Engine.submit is followed by one of each peer
    assert report.parameters["interleaved"] == ["openseal", "DBOS", "LangGraph"] * 2
    submitted = figures[SUBMIT_FIGURE].stats
    assert submitted is not None
    paired = report.parameters["peer_langgraph"]["submit_ratios"]
    assert paired == pytest.approx(submitted.samples)  # each ÷ 1 run/s


def test_the_peers_repetitions_alternate_with_engine_submits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[str] = []

    def submitting() -> durable.Sample:
        ran.append("openseal")
        return durable.Sample(1.0, 3, CommitCounter(), 0.5)

    def peer(script: str, _options: Options, _runs: int, repetition: int) -> dict[str, Any]:
        ran.append(script)
        return {"seconds": [2.0], "version": str(repetition)}

    monkeypatch.setattr(durable, "measure_peer", peer)
    peers = [durable.Peer(name, script) for name, script in durable.PEER_SCRIPTS.items()]
    report = Report(durable.NAME)

    samples = durable.interleave(report, Options(tmp_path, repeat=3), submitting, peers)

    # one untimed batch of openseal's first, then openseal, DBOS, LangGraph, three times
    assert ran == ["openseal"] + ["openseal", "dbos_peer.py", "langgraph_peer.py"] * 3
    assert report.parameters["interleaved"] == ["openseal", "DBOS", "LangGraph"] * 3
    assert len(samples) == 3
    assert [p.seconds for p in peers] == [[2.0] * 3] * 2
    assert peers[0].data["version"] == "2"  # what the last repetition printed


def test_a_peer_that_fails_a_repetition_runs_no_more_and_is_not_available(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def peer(script: str, _options: Options, _runs: int, repetition: int) -> dict[str, Any]:
        if script == "dbos_peer.py" and repetition == 1:
            raise durable.PeerFailed("database is locked")
        return {"seconds": [2.0]}

    monkeypatch.setattr(durable, "measure_peer", peer)
    peers = [durable.Peer(name, script) for name, script in durable.PEER_SCRIPTS.items()]
    report = Report(durable.NAME)

    durable.interleave(report, Options(tmp_path, repeat=3), None, peers)

    assert report.parameters["interleaved"] == ["DBOS", "LangGraph", "LangGraph", "LangGraph"]
    figure = peers[0].figure(20)
    assert not figure.available
    assert figure.note == "not available: peer failed: database is locked"
    assert peers[1].figure(20).available


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


def test_a_peer_comparison_lists_the_ratio_of_each_pair_of_repetitions() -> None:
    peer = compare("LangGraph runs/s", "runs/s", summarize([50.0, 100.0]))
    submitted = compare("openseal runs/s, Engine.submit", "runs/s", summarize([150.0, 150.0]))

    paired = durable.paired_ratios(submitted, peer)
    versus = durable.versus_peer("LangGraph", peer, (summarize([150.0]), "x"), paired)

    assert paired == pytest.approx([3.0, 1.5])
    assert versus.note.endswith("Engine.submit ÷ LangGraph, repetition by repetition: 3.00×, 1.50×")


def test_an_uncounted_batch_listens_to_no_statement(tmp_path: Path) -> None:
    """The timed ``Engine.submit`` batches pay for no counting listeners (the peers' runs pay
    for none); the counts come from a batch of their own."""
    documents = durable.compiled(tmp_path / "project", durable.ACTION_WORKFLOW)
    options = Options(tmp_path, quick=True, repeat=1)
    batch = durable.Batch(options, documents, 3, concurrency=2, submit=True, counted=False)

    sample = batch()

    assert sample.turns >= 3 * 2
    assert (sample.commits.commits, sample.commits.statements) == (0, 0)
