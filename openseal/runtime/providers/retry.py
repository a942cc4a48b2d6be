"""When a model call that failed for a passing reason is tried again.

A provider makes exactly one attempt per
:meth:`~openseal.runtime.providers.base.ModelProvider.complete` call and says, with
:class:`~openseal.runtime.providers.base.ModelUnavailable`, whether
trying again may help and how long the endpoint asked to be left alone (``Retry-After``). The
turn decides (``states/turn.py``): each attempt is reserved against the run's budgets first,
a short wait is spent inside the turn, a long one (or the ``max_retries``-th failure in a row)
puts the run to sleep until it has passed, holding no lease.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

#: first backoff step, in seconds; each further failure in a row doubles it
BASE_DELAY = 0.5
#: the longest backoff step
MAX_DELAY = 300.0
#: the longest ``Retry-After`` honoured as asked; a longer one is waited for this long
MAX_RETRY_AFTER = 86_400.0
#: the longest wait spent inside a turn, holding the run's lease; longer waits sleep the run
IN_TURN_WAIT = 10.0
#: retries inside one turn before the run sleeps, unless the profile sets ``max_retries``
DEFAULT_RETRIES = 2


def delay(attempt: int, retry_after: float | None = None) -> float:
    """Seconds to wait after the ``attempt``-th failure in a row.

    Capped exponential backoff with jitter (between half and all of the step, so workers that
    failed together do not come back together), and never less than the endpoint's
    ``Retry-After``.
    """
    step = min(MAX_DELAY, BASE_DELAY * 2 ** max(attempt - 1, 0))
    wait = random.uniform(step / 2, step)
    if retry_after is not None and retry_after > 0:
        wait = max(wait, min(retry_after, MAX_RETRY_AFTER))
    return wait


def retries_in_turn(model: Mapping[str, Any]) -> int:
    """How often a failed call is retried inside the turn (the profile's ``max_retries``)."""
    parameters = model.get("parameters") or {}
    value = parameters.get("max_retries", DEFAULT_RETRIES) if isinstance(parameters, Mapping) else 0
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
