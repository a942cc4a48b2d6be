"""DBOS Transact 3.x on SQLite: a workflow of three steps, run N times, one process.

Prints one JSON object: seconds per repetition of N runs, the version and the pragmas.
Each repetition uses a fresh system database so they measure the same thing.
"""

from __future__ import annotations

import logging
from importlib.metadata import version

from common import arguments, emit, pragmas, timed
from dbos import DBOS


@DBOS.step()
def transform(x: int) -> int:
    return x + 1


@DBOS.step()
def act(x: int) -> int:
    return x * 2  # the no-op skill call


@DBOS.step()
def finish(x: int) -> int:
    return x


@DBOS.workflow()
def three_steps(x: int) -> int:
    return finish(act(transform(x)))


def main() -> None:
    args = arguments(__doc__ or "")
    logging.disable(logging.WARNING)  # DBOS logs every launch; the JSON must stay alone
    seconds: list[float] = []
    seen: dict[str, object] = {}
    for rep in range(args.repeat):
        path = args.dir / f"dbos-{rep}.sqlite"
        DBOS(config={"name": "bench", "system_database_url": f"sqlite:///{path}"})
        DBOS.launch()
        timed(args.warmup, lambda i: three_steps(-1 - i))
        seconds.append(timed(args.runs, three_steps))
        DBOS.destroy(destroy_registry=False)
        seen = pragmas(path)
    emit(
        {
            "peer": "dbos",
            "version": version("dbos"),
            "runs": args.runs,
            "steps_per_run": 3,
            "seconds": seconds,
            "sqlite": seen,
        }
    )


if __name__ == "__main__":
    main()
