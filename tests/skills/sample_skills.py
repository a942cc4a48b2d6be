"""Entry points for the python adapter tests."""

from __future__ import annotations


def add(a: int, b: int = 1) -> dict[str, int]:
    return {"sum": a + b}


def explode(reason: str) -> None:
    raise ValueError(reason)


def wrong_shape() -> str:
    return "not an object"


NOT_CALLABLE = 3


def boom(a: int, b: int) -> None:
    raise ValueError(f"a is {a}")


CALLS: dict[str, int] = {}


def flaky(key: str, failures: int) -> dict[str, int]:
    """Fails the first ``failures`` calls for ``key``, then reports how many calls it took."""
    CALLS[key] = CALLS.get(key, 0) + 1
    if CALLS[key] <= failures:
        raise RuntimeError(f"attempt {CALLS[key]} failed")
    return {"attempts": CALLS[key]}


def sleepy(seconds: float) -> dict[str, float]:
    """Blocks its thread; the executor must give up on it at the step timeout."""
    import time

    time.sleep(seconds)
    return {"slept": seconds}


def where(a: int, b: int = 1) -> dict[str, object]:
    """Says which process ran it, after printing (which must not disturb the adapter)."""
    import os

    print("a skill's own output")
    return {"pid": os.getpid(), "marker": os.environ.get("OPENSEAL_TEST_MARKER")}


def stuck(a: int, b: int = 1) -> None:
    """Holds ``$OPENSEAL_TEST_LOCK`` for ``a`` seconds, with a child process of its own that
    holds it too; the lock is free only once both have ended."""
    import fcntl
    import os
    import subprocess
    import sys
    import time

    lock = open(os.environ["OPENSEAL_TEST_LOCK"], "a")  # noqa: SIM115 - held until killed
    fcntl.flock(lock, fcntl.LOCK_EX)
    subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"], pass_fds=[lock.fileno()]
    )
    time.sleep(a)


def vanish(a: int, b: int = 1) -> None:
    """Ends its process without a word."""
    import os

    os._exit(3)


def not_json(a: int, b: int = 1) -> object:
    return {1, 2}
