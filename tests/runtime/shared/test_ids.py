"""Ids sort by creation: strictly within a process, so "newest first" lists are exact."""

from __future__ import annotations

import os
import time

from openseal.runtime.clock import new_id


def test_ids_of_one_process_increase_strictly_even_within_a_millisecond() -> None:
    ids = [new_id() for _ in range(20_000)]  # many share a millisecond
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids)


def test_an_id_begins_with_its_millisecond() -> None:
    before = time.time_ns() // 1_000_000
    made = new_id()
    after = time.time_ns() // 1_000_000
    assert made == made.lower() and before <= int(made[:12], 16) <= after + 1


def test_a_forked_child_does_not_continue_its_parents_sequence() -> None:
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:  # the child: one id, then out without running the test session's exit
        os.write(writer, new_id().encode())
        os._exit(0)
    os.close(writer)
    parent_next = new_id()
    os.waitpid(child, 0)
    child_id = os.read(reader, 64).decode()
    os.close(reader)
    assert len(child_id) == 32 and child_id != parent_next


def test_a_forked_child_draws_random_bits_of_its_own() -> None:
    new_id()  # the parent holds random bytes drawn ahead of use
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:
        time.sleep(0.002)  # a later millisecond: fresh random bits, not the last ones plus one
        os.write(writer, new_id().encode())
        os._exit(0)
    os.close(writer)
    time.sleep(0.002)
    parent_next = new_id()
    os.waitpid(child, 0)
    child_id = os.read(reader, 64).decode()
    os.close(reader)
    assert child_id[12:] != parent_next[12:]
