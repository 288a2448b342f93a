"""Who computes which cell when several ``bench`` processes share one results store.

Before a run starts a cell it *claims* it: a row of the store's ``claims`` table with the
cell's key, the run id, the host and process id of the ``bench`` process, and a heartbeat
(Unix time) that the process refreshes every :data:`HEARTBEAT_S` seconds while it runs.
A second process never starts a cell that is already stored or claimed by a live run; it
takes the next one, and waits for the others' cells at the end, so that when any of them
returns, every cell it was asked for is in the store. A claim is taken over when its owner
is gone:

* on the same host, as soon as its process no longer exists (SIGKILL, a reboot);
* on any host, once its heartbeat is older than :data:`STALE_AFTER_S` seconds.

A finished cell is committed together with the removal of its claim, and only by the run
holding the claim; a run whose claim was taken over meanwhile (it stalled for a minute)
stores its result only if the cell is still missing. So a cell is stored once, never
overwritten by a second computation, and never lost when a process dies.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import sys
import time

#: Seconds between two heartbeats of a running ``bench`` process.
HEARTBEAT_S = 5.0
#: A claim whose heartbeat is older than this is abandoned (its owner hung or its host died).
STALE_AFTER_S = 60.0


@dataclasses.dataclass(frozen=True)
class Owner:
    """The ``bench`` run that claims cells: its run id, host name and process id."""

    run_id: str
    host: str = dataclasses.field(default_factory=socket.gethostname)
    pid: int = dataclasses.field(default_factory=os.getpid)

    def holds(self, run_id: str, host: str, pid: int, heartbeat: float, now: float) -> bool:
        """Whether a claim row (``run_id``, ``host``, ``pid``, ``heartbeat``) is still held by
        a live run other than this one (``False``: it may be taken over)."""
        if run_id == self.run_id:
            return False
        if now - heartbeat > STALE_AFTER_S:
            return False
        if host != self.host:
            return True
        # Same host: an earlier run of this very process (it was interrupted), or a process
        # that is gone, holds nothing any more.
        return pid != self.pid and process_alive(pid)


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this host and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    if sys.platform.startswith("linux"):
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                # The state follows the parenthesised command name, which may contain spaces.
                state = fh.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        return state not in (b"Z", b"X")
    return True


def now() -> float:
    """Heartbeat clock: Unix time, comparable across hosts (to within their clock skew)."""
    return time.time()
