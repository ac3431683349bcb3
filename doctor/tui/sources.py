"""Where the watch's frames come from: a running server, a saved snapshot, or a repository.

``read()`` blocks (HTTP, NVML, /proc, the disk) and is called from a worker thread, never
from the UI.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from triton_doctor.evidence import Evidence
from triton_doctor.records import record
from triton_doctor.result import Result
from triton_doctor.tui.state import Frame, frame_time


@record
class Source:
    """``collect`` gives the Evidence, ``judge`` the findings on it.

    ``live`` sources are read again every interval (a server); the others only when the user
    asks (``r``): a repository is then read from disk again, a snapshot judged again.
    """

    collect: Callable[[], Evidence]
    judge: Callable[[Evidence], Result]
    title: str
    live: bool
    #: When the Evidence was taken if it holds no sample time (a saved snapshot's "created").
    taken_at: float | None = None

    def read(self) -> Frame:
        evidence = self.collect()
        at = frame_time(evidence, self.taken_at if self.taken_at is not None else time.time())
        return Frame(at, evidence, self.judge(evidence))
