"""Cells with large results: a frontier with its plans can be tens of megabytes.

Receiving a payload used to search and copy the whole buffer once per 64 KB chunk, so
the 71 MB result of the default Perseus crawl on GPT-3 8x96 took longer to arrive than
the cell's time limit plus grace, and the finished cell was recorded as killed.
"""

from __future__ import annotations

import socket
import threading
import time

from energyopt.bench import cellclient, cells
from energyopt.core.result import _jsonable

#: 60 MB: quadratic reading takes minutes here, linear reading well under a second.
PAYLOAD_BYTES = 60 * 2**20


def _send(sock: socket.socket, data: bytes) -> None:
    try:
        sock.sendall(data)
    except OSError:
        pass  # the reader gave up (a failing test) and closed its end
    finally:
        sock.close()


def test_a_large_payload_arrives_whole_and_in_time():
    payload = b"{" + b"7" * PAYLOAD_BYTES + b"}"
    a, b = socket.socketpair()
    writer = threading.Thread(target=_send, args=(a, b"ready 1\n" + payload + b"\nexit 0\n"))
    writer.start()
    reader = cellclient._Lines(b.fileno())
    tick = time.perf_counter()
    try:
        assert reader.until(tick + 30.0, cellclient._ended)
    finally:
        b.close()
        writer.join()
    assert reader.lines[0] == b"ready 1"
    assert reader.lines[1] == payload
    assert reader.lines == [b"ready 1", payload, b"exit 0"]


def test_read_stops_at_the_line_end_in_the_last_chunk_only():
    a, b = socket.socketpair()
    writer = threading.Thread(target=_send, args=(a, b"x" * PAYLOAD_BYTES + b"\nrest"))
    writer.start()
    try:
        out, state = cells.read_until(b.fileno(), time.perf_counter() + 30.0, until=b"\n")
    finally:
        b.close()
        writer.join()
    assert state == "line" and out.startswith(b"x" * 1000) and b"\n" in out


def test_plans_are_copied_not_walked_and_other_values_still_converted():
    import numpy as np

    assert _jsonable((3, 1, 4)) == [3, 1, 4]
    assert _jsonable([1, True, None]) == [1, True, None]  # a bool stays a bool
    assert _jsonable((np.int64(2), 5)) == [2, 5]
    assert _jsonable([1.5, float("nan")]) == [1.5, None]
