"""Pausing the cyclic garbage collector around work that allocates and frees nothing."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the garbage collector while a large tree is built and walked.

    Parsing, loading and compiling allocate a great many small objects and no
    cycles worth collecting; with the collector running, its full collections
    over the growing trees make big files cost more than their size (python-hcl2's
    own parse is dominated by it). The collector's state is restored.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def let_go(*objects: object) -> None:
    """Free ``objects`` (networkx graphs, done with) now rather than at a collection.

    networkx caches views on a graph (its nodes, edges, degrees) that refer back to it,
    so a graph whose views were used is a reference cycle: with the collector paused, every
    such graph a compile drops would be held to its end. Emptying each one's attributes
    breaks the cycle; the objects must not be used afterwards.
    """
    for thing in objects:
        vars(thing).clear()
