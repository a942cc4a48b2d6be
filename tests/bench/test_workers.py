"""The workers benchmark's reading of its figures: where the runs/s stop growing with the
worker processes, and the note that says so with the load they ran under."""

from __future__ import annotations

from bench import workers
from bench.harness import Report


def test_the_runs_stop_growing_at_the_first_count_that_adds_too_little() -> None:
    assert workers.stops_growing({1: 40.0, 2: 79.0, 4: 150.0, 8: 160.0}) == 8
    assert workers.stops_growing({1: 40.0, 2: 45.0, 4: 150.0}) == 2
    assert workers.stops_growing({1: 40.0, 2: 80.0, 4: 160.0, 8: 320.0}) is None


def test_the_growth_note_names_the_count_and_the_load() -> None:
    report = Report(workers.NAME)
    rates = {1: [40.0, 42.0], 2: [80.0], 4: [90.0], 8: [85.0]}
    loads: dict[int, list[float | None]] = {1: [3.0], 2: [4.5], 4: [6.0], 8: [8.25]}

    workers.growth(report, rates, loads)

    assert report.parameters["stops_growing_at"] == 4
    (note,) = report.notes
    assert note.startswith("the runs/s stop growing at 4 worker processes")
    assert "runs/s by worker processes 1: 41.0, 2: 80.0, 4: 90.0, 8: 85.0" in note
    assert note.endswith("by count: 1: 3.0; 2: 4.5; 4: 6.0; 8: 8.2")
