"""How many runs' writes share one commit by default: 8 on SQLite, 2 on PostgreSQL (a batch's
statements run one after the other on its connection there); a size given wins on both."""

from __future__ import annotations

from pathlib import Path

from openseal.runtime.store import Store
from tests.runtime.engine_support import engine, scripted

DEFAULTS = {"sqlite": 8, "postgresql": 2}


def test_the_default_batch_size_is_the_store_s_dialect_s(store: Store, tmp_path: Path) -> None:
    batched = engine(store, scripted(tmp_path, {})[0])
    assert batched.group is not None
    assert batched.group.size == DEFAULTS[store.dialect]


def test_a_batch_size_given_wins_over_the_default(store: Store, tmp_path: Path) -> None:
    for size in (2, 8, 16):
        batched = engine(store, scripted(tmp_path, {})[0], batch_size=size)
        assert batched.group is not None and batched.group.size == size
    assert engine(store, scripted(tmp_path, {})[0], batch_size=1).group is None
