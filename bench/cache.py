"""cache: recompiling 500 unchanged files with the parse cache warm, cold and off.

* ``warm``: every file's tree comes from the cache; the later stages still run. Target
  ≤ 200 ms.
* ``cold``: a fresh, empty cache directory each repetition (parse and write entries).
* ``off``: ``OPENSEAL_CACHE=off`` — the baseline both are compared against.
"""

from __future__ import annotations

import itertools

from bench.generate import compile_once, write_many
from bench.harness import (
    Options,
    Report,
    Target,
    compare,
    environment,
    profile_text,
    repeat_timed,
    scaled,
)

NAME = "cache"


def run(options: Options) -> Report:
    report = Report(NAME)
    files = options.pick(quick=20, default=500)
    project = options.workdir / "project"
    write_many(project, files)
    report.parameters.update(files=files, repeat=options.repeat)

    with environment(OPENSEAL_CACHE="off"):
        compile_once(project)  # builds the HCL and expression parsers outside every timing
        off = report.add(
            compare(
                f"{files} files, cache off",
                "ms",
                scaled(repeat_timed(lambda: compile_once(project), repeat=options.repeat), 1000),
            )
        )

    counter = itertools.count()

    def cold() -> None:
        fresh = options.workdir / f"cold-{next(counter)}"
        with environment(OPENSEAL_CACHE=None, OPENSEAL_CACHE_DIR=str(fresh)):
            compile_once(project)

    report.add(
        compare(
            f"{files} files, cold cache",
            "ms",
            scaled(repeat_timed(cold, repeat=options.repeat, warmup=0), 1000),
            off,
        )
    )

    warm_directory = str(options.workdir / "warm")
    with environment(OPENSEAL_CACHE=None, OPENSEAL_CACHE_DIR=warm_directory):
        warm = report.add(
            compare(
                f"{files} files, warm cache",
                "ms",
                scaled(repeat_timed(lambda: compile_once(project), repeat=options.repeat), 1000),
                off,
                Target(200, on="value"),
            )
        )
        if warm.met is False and not options.quick:
            report.profiles[warm.name] = profile_text(lambda: compile_once(project))
    return report
