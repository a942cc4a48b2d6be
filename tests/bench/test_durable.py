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
SINGLE_FIGURE = "openseal runs/s, Engine.submit from 1 thread"
ALONE_FIGURES = ("openseal runs/s, concurrency 1", SINGLE_FIGURE)


def slow_peer(
    peer: durable.Peer, _options: Options, runs: int, _repetition: int, _postgres: str | None
) -> dict[str, Any]:
    """A peer's repetition of one run per second in each configuration but its last, which
    does two (so any openseal figure is the faster, and the peer's best is its last)."""
    last = peer.configurations[-1]
    seconds = {c: [float(runs) / (2 if c == last else 1)] for c in peer.configurations}
    return {"seconds": seconds, "version": "0"}


def test_durable_measures_engine_submit_and_compares_the_fastest_batched_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(durable, "ensure_peers", lambda _options: None)
    monkeypatch.setattr(durable, "measure_peer", slow_peer)
    report = durable.run(Options(tmp_path, quick=True, repeat=2))

    figures = {figure.name: figure for figure in report.figures}
    for name in (*ALONE_FIGURES, "openseal runs/s", SUBMIT_FIGURE):
        assert figures[name].available, figures[name].note
    # at concurrency 1 the peers are compared with openseal's faster way
    alone_best = max((figures[n] for n in ALONE_FIGURES), key=lambda f: f.stats.median)
    assert "statements" in figures[SUBMIT_FIGURE].note
    submit = report.parameters["submit"]
    assert submit["cpu_ms_per_run"] > 0 and submit["statements_per_run"] > 0
    # each run's creation, claim and first turn share commits with other runs' writes (at most
    # the three commits per run of a thread alone)
    assert 0 < submit["write_commits_per_run"] <= 3
    setting = report.parameters["peer_comparison"]
    assert setting in (durable.WORKER_SETTING, durable.SUBMIT_SETTING, "concurrency 1")
    fastest = max(
        (figures[n] for n in (alone_best.name, "openseal runs/s", SUBMIT_FIGURE)),
        key=lambda figure: figure.stats.median if figure.stats else 0,
    )
    for peer, configurations in durable.PEER_CONFIGURATIONS.items():
        alone, best = figures[f"{peer} runs/s, concurrency 1"], figures[f"{peer} runs/s, its best"]
        # each configuration tried is listed; the best is the last (two runs per second)
        assert best.stats is not None and best.stats.median == pytest.approx(2.0)
        assert alone.stats is not None and alone.stats.median == pytest.approx(1.0)
        assert best.note.startswith(durable.PEER_SETTINGS[configurations[-1]])
        for configuration in configurations:
            assert durable.PEER_SETTINGS[configuration] in best.note
        versus = figures[f"openseal's best ÷ {peer}'s best"]
        assert setting in versus.note and "at concurrency 1: openseal" in versus.note
        assert versus.stats == fastest.stats and versus.baseline == best.name
        assert versus.target == durable.Target(durable.PEER_TARGETS[peer], upper=False)
        assert versus.met  # a peer of 2 runs/s
        both = figures[f"openseal ÷ {peer}, both at concurrency 1"]
        assert both.baseline == alone.name
        assert both.stats == alone_best.stats and both.note == f"openseal: {alone_best.name}"
        assert report.parameters[f"peer_{peer.lower()}"]["best"] == best.note.split(":")[0]
    assert figures["openseal ÷ LangGraph, both at concurrency 1"].target == durable.Target(
        2, upper=False
    )
    assert f"{SUBMIT_FIGURE} (" not in " ".join(figures)  # no baseline for it
    # each repetition of Engine.submit is followed by one of each peer
    assert report.parameters["interleaved"] == ["openseal", "DBOS", "LangGraph"] * 2
    # every peer target has its line: met here
    submitted = figures[SUBMIT_FIGURE].stats
    assert submitted is not None
    listed = ", ".join(f"{rate / 2:.2f}×" for rate in submitted.samples)  # each ÷ 2 runs/s
    assert figures["openseal's best ÷ DBOS's best"].note.endswith(
        f"repetition by repetition (they alternated): {listed}"
    )
    targets = [note for note in report.notes if note.startswith("target ")]
    assert len(targets) == 2 + 1 and all(": met, " in note for note in targets)


def peer_with(name: str, runs_per_s: dict[str, float], runs: int) -> durable.Peer:
    peer = durable.Peer(name, durable.PEER_SCRIPTS[name], postgres="postgresql://h/db")
    peer.seconds = {c: [runs / rate] for c, rate in runs_per_s.items()}
    peer.data = {"version": "1", "postgresql": "15"}
    return peer


def test_on_postgresql_each_peer_s_best_is_compared_and_a_missed_target_says_what_next(
    tmp_path: Path,
) -> None:
    options = Options(tmp_path, quick=True, repeat=1)
    runs = durable.peer_runs(options)
    peers = [
        peer_with("DBOS", {"c1": 10.0, "threads": 30.0, "queue": 8.0, "async": 50.0}, runs),
        peer_with("LangGraph", {"c1": 17.0, "threads": 24.0, "batch": 16.0, "async": 14.0}, runs),
    ]
    report = Report(durable.NAME)
    alone = compare("PostgreSQL: openseal runs/s, concurrency 1", "runs/s", summarize([20.0]))
    best = (summarize([60.0]), durable.SUBMIT_SETTING)

    durable.compare_peers(report, options, peers, best, alone, postgres=True)
    durable.summarize_targets(report)

    figures = {figure.name: figure for figure in report.figures}
    dbos = figures["PostgreSQL: openseal's best ÷ DBOS's best"]
    assert dbos.ratio == pytest.approx(60 / 50) and dbos.met is False
    assert dbos.target == durable.Target(durable.POSTGRES_PEER_TARGET, upper=False)
    assert "DBOS: its asyncio API" in dbos.note and "(2.00×)" in dbos.note
    langgraph = figures["PostgreSQL: openseal's best ÷ LangGraph's best"]
    assert langgraph.ratio == pytest.approx(60 / 24) and langgraph.met
    assert "openseal ÷ DBOS, both at concurrency 1" not in figures  # no such target there
    assert report.parameters["postgres_peer_dbos"]["best"] == durable.PEER_SETTINGS["async"]
    missed = [note for note in report.notes if "MISSED" in note]
    assert len(missed) == 1 and "DBOS" in missed[0]
    assert durable.POSTGRES_PROFILE in missed[0]
    assert durable.NEXT_STEPS["postgres"] in missed[0]


def test_the_peers_get_a_libpq_url_of_the_server() -> None:
    url = "postgresql+psycopg://postgres:secret@127.0.0.1:5432/test"
    assert durable.libpq_url(url) == "postgresql://postgres:secret@127.0.0.1:5432/test"


def test_a_peer_command_names_its_configurations_and_the_server() -> None:
    command = durable.peer_command(
        "dbos_peer.py", Path("d"), 10, ("c1", "queue"), "postgresql://h/db"
    )
    assert command[-4:] == ["--configurations", "c1,queue", "--postgres", "postgresql://h/db"]
    assert "--postgres" not in durable.peer_command("dbos_peer.py", Path("d"), 10, ("c1",))


def test_the_peers_repetitions_alternate_with_engine_submits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[str] = []

    def submitting() -> durable.Sample:
        ran.append("openseal")
        return durable.Sample(1.0, 3, CommitCounter(), 0.5)

    def peer(
        peer: durable.Peer, _options: Options, _runs: int, repetition: int, _pg: str | None
    ) -> dict[str, Any]:
        ran.append(peer.script)
        return {"seconds": {"c1": [2.0], "threads": [1.0]}, "version": str(repetition)}

    monkeypatch.setattr(durable, "measure_peer", peer)
    peers = [durable.Peer(name, script) for name, script in durable.PEER_SCRIPTS.items()]
    report = Report(durable.NAME)

    def single() -> durable.Sample:
        ran.append("single")
        return durable.Sample(2.0, 3, CommitCounter(), 0.5)

    singles: list[durable.Sample] = []
    samples = durable.interleave(
        report, Options(tmp_path, repeat=3), submitting, peers, alongside=[(single, singles)]
    )

    # one untimed batch of openseal's first, then openseal (both ways), DBOS, LangGraph, three
    # times
    once = ["openseal", "single", "dbos_peer.py", "langgraph_peer.py"]
    assert ran == ["openseal"] + once * 3
    assert report.parameters["interleaved"] == ["openseal", "DBOS", "LangGraph"] * 3
    assert len(samples) == 3 and [s.seconds for s in singles] == [2.0] * 3
    assert [p.seconds for p in peers] == [{"c1": [2.0] * 3, "threads": [1.0] * 3}] * 2
    assert peers[0].data["version"] == "2"  # what the last repetition printed


def test_a_peer_that_fails_a_repetition_runs_no_more_and_is_not_available(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def peer(
        peer: durable.Peer, _options: Options, _runs: int, repetition: int, _pg: str | None
    ) -> dict[str, Any]:
        if peer.script == "dbos_peer.py" and repetition == 1:
            raise durable.PeerFailed("database is locked")
        return {"seconds": {"c1": [2.0]}}

    monkeypatch.setattr(durable, "measure_peer", peer)
    peers = [durable.Peer(name, script) for name, script in durable.PEER_SCRIPTS.items()]
    report = Report(durable.NAME)

    durable.interleave(report, Options(tmp_path, repeat=3), None, peers)

    assert report.parameters["interleaved"] == ["DBOS", "LangGraph", "LangGraph", "LangGraph"]
    alone, best = peers[0].figures(20)
    assert not alone.available and not best.available
    assert best.note == "not available: peer failed: database is locked"
    assert all(figure.available for figure in peers[1].figures(20))


def test_a_batch_of_engine_submits_from_threads_completes_every_run(tmp_path: Path) -> None:
    documents = durable.compiled(tmp_path / "project", durable.ACTION_WORKFLOW)
    options = Options(tmp_path, quick=True, repeat=1)
    batch = durable.Batch(options, documents, 5, concurrency=2, submit=True)

    sample = batch()

    assert sample.turns >= 5 * 2  # every run completed (the batch checks it), turn by turn
    assert sample.commits.writes <= 5 * 3


def test_a_peer_that_did_not_run_gives_its_reason_once() -> None:
    peer = durable.unavailable("DBOS runs/s, its best", "peers not installed", "runs/s")

    versus = durable.versus_peer("DBOS", peer, (summarize([100.0]), durable.SUBMIT_SETTING))

    assert not versus.available
    assert versus.note == "not available: peers not installed"
    assert versus.target is not None and versus.target.bound == durable.PEER_TARGETS["DBOS"]


def test_a_peer_is_compared_with_the_configurations_named_and_both_alone() -> None:
    peer = compare("LangGraph runs/s, its best", "runs/s", summarize([50.0]), note="8 threads: x")
    ours_alone = compare("openseal runs/s, concurrency 1", "runs/s", summarize([60.0]))
    peer_alone = compare("LangGraph runs/s, concurrency 1", "runs/s", summarize([40.0]))

    versus = durable.versus_peer(
        "LangGraph", peer, (summarize([150.0]), durable.SUBMIT_SETTING), (ours_alone, peer_alone)
    )

    assert versus.ratio == pytest.approx(3.0)
    assert versus.note == (
        f"openseal: {durable.SUBMIT_SETTING}; LangGraph: 8 threads; "
        "at concurrency 1: openseal 60.0, LangGraph 40.0 runs/s (1.50×)"
    )


def test_a_peer_comparison_pairs_the_ratio_of_each_pair_of_repetitions() -> None:
    peer = compare("LangGraph runs/s", "runs/s", summarize([50.0, 100.0]))
    submitted = compare("openseal runs/s, Engine.submit", "runs/s", summarize([150.0, 150.0]))

    assert durable.paired_ratios(submitted, peer) == pytest.approx([3.0, 1.5])


def test_an_uncounted_batch_listens_to_no_statement(tmp_path: Path) -> None:
    """The timed ``Engine.submit`` batches pay for no counting listeners (the peers' runs pay
    for none); the counts come from a batch of their own."""
    documents = durable.compiled(tmp_path / "project", durable.ACTION_WORKFLOW)
    options = Options(tmp_path, quick=True, repeat=1)
    batch = durable.Batch(options, documents, 3, concurrency=2, submit=True, counted=False)

    sample = batch()

    assert sample.turns >= 3 * 2
    assert (sample.commits.commits, sample.commits.statements) == (0, 0)
