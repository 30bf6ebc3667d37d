"""The memory budget: byte reservations by owner and use, never more than the total.

Reservations are taken before work is dispatched (synthesis waits when one does not fit) and
given back in parts as stages finish: after prove_start the buffers part, after prove_finish
the rest. Proving keys resident on devices are charged under "keys" and can be evicted to
make room. A high-water mark records the largest total ever reserved, so tests can assert the
budget was never exceeded. Thread-safe (the supervisor writes, API threads read).

Other owners share it: `cuzk serve` reserves request bodies under "uploads" from its HTTP
thread. When work waits for memory (`waiting`, set by the engine's dispatch), any release
calls `on_release` (the engine's wake-up), so the wait ends as soon as the bytes are back,
whoever gave them back.
"""

from __future__ import annotations

import threading
from collections import defaultdict


class BudgetError(ValueError):
    """A single request larger than the whole budget: it could never be satisfied."""


class MemoryBudget:
    def __init__(self, total_bytes: int):
        if total_bytes <= 0:
            raise ValueError("memory budget must be positive")
        self.total = int(total_bytes)
        self._lock = threading.Lock()
        self._parts: dict[object, dict[str, int]] = {}  # owner -> {use: bytes}
        self._reserved = 0
        self.high_water = 0
        self.waiting = False  # work waits for memory: the next release calls on_release
        self.on_release = None  # () -> None, called without the lock held

    @property
    def reserved(self) -> int:
        return self._reserved

    @property
    def available(self) -> int:
        return self.total - self._reserved

    def fits(self, nbytes: int) -> bool:
        return nbytes <= self.total - self._reserved

    def try_reserve(self, owner, parts: dict[str, int]) -> bool:
        """Reserve all `parts` ({use: bytes}) for `owner` at once, or nothing.

        Raises BudgetError when the request exceeds the whole budget."""
        need = sum(int(v) for v in parts.values())
        if need > self.total:
            raise BudgetError(f"needs {need} bytes, the whole memory budget is {self.total}")
        with self._lock:
            if need > self.total - self._reserved:
                return False
            mine = self._parts.setdefault(owner, {})
            for use, v in parts.items():
                mine[use] = mine.get(use, 0) + int(v)
            self._reserved += need
            self.high_water = max(self.high_water, self._reserved)
            return True

    def release(self, owner, use: str | None = None) -> int:
        """Give back one use of an owner's reservation (or all of it); returns bytes freed."""
        with self._lock:
            mine = self._parts.get(owner)
            if not mine:
                return 0
            if use is None:
                freed = sum(mine.values())
                del self._parts[owner]
            else:
                freed = mine.pop(use, 0)
                if not mine:
                    del self._parts[owner]
            self._reserved -= freed
            assert self._reserved >= 0
            wake = freed > 0 and self.waiting and self.on_release is not None
            if wake:
                self.waiting = False
        if wake:
            self.on_release()
        return freed

    def held(self, owner) -> int:
        with self._lock:
            return sum(self._parts.get(owner, {}).values())

    def by_use(self) -> dict[str, int]:
        with self._lock:
            out: dict[str, int] = defaultdict(int)
            for parts in self._parts.values():
                for use, v in parts.items():
                    out[use] += v
            return dict(out)
