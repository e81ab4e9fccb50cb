"""Keeping a claim alive while its work runs."""

from __future__ import annotations

import logging
import threading
from types import TracebackType

from worker.clock import Clock
from worker.tasks import Claim, TaskBoard

log = logging.getLogger(__name__)


def beat_interval(lease_s: float) -> float:
    """A third of the lease: two beats may be missed before the claim lapses."""
    return max(lease_s / 3, 0.05)


class Heartbeat:
    """Renews a claim's lease every `every_s` seconds of real time until the block ends. The lease itself is measured
    on the worker's clock; the heartbeat only has to beat well within it (a third of the lease), so a reflection that
    takes longer than one lease keeps its claim, and a worker that is killed loses it one lease later."""

    def __init__(self, board: TaskBoard, claim: Claim, clock: Clock, every_s: float) -> None:
        self._board = board
        self._claim = claim
        self._clock = clock
        self._every_s = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"lease-{claim.kind}-{claim.subject}", daemon=True)
        self.lost = False

    def _beat(self) -> None:
        while not self._stop.wait(self._every_s):
            try:
                if not self._board.renew(self._claim, self._clock.now()):
                    self.lost = True
                    log.warning("the claim on %s %s was lost while it ran", self._claim.kind, self._claim.subject)
                    return
            except Exception:  # the state database is unreachable: try again at the next beat
                log.warning("could not renew the claim on %s %s", self._claim.kind, self._claim.subject, exc_info=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()
