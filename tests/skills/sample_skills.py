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
