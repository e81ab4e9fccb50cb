"""KeyedLocks: one holder at a time per key, keys independent, nothing kept once released."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from hindsight_insights.store.locks import KeyedLocks


def _most_at_once(locks: KeyedLocks, keys: list[str]) -> int:
    inside, most, guard = 0, 0, threading.Lock()

    def hold(key: str) -> None:
        nonlocal inside, most
        with locks.held(key):
            with guard:
                inside += 1
                most = max(most, inside)
            time.sleep(0.02)
            with guard:
                inside -= 1

    with ThreadPoolExecutor(len(keys)) as pool:
        list(pool.map(hold, keys))
    return most


def test_one_key_has_one_holder_at_a_time() -> None:
    assert _most_at_once(KeyedLocks(), ["slot"] * 6) == 1


def test_other_keys_do_not_wait() -> None:
    assert _most_at_once(KeyedLocks(), [f"slot-{n}" for n in range(6)]) > 1


def test_a_released_key_leaves_nothing_behind() -> None:
    locks = KeyedLocks()
    _most_at_once(locks, ["a", "a", "b"])
    assert len(locks) == 0
