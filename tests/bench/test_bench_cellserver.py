"""The cell server's bookkeeping of its processes (:class:`energyopt.bench.cellserver._Server`)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from benchutil import ROOT

#: A spare that becomes a cell and crashes at once, in the worst moment: after the server
#: has read the messages of its cells and before it reaps the ended ones. Run in a fresh
#: interpreter, as ``reap`` waits for any child of its process.
RACE = textwrap.dedent(
    """
    import os, socket
    from energyopt.bench import cellserver

    server = cellserver._Server(listener=None)
    client, cell_end = socket.socketpair()
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the spare: takes the cell, reports it, dies at once
        os.read(go_r, 1)
        socket.send_fds(server.ctrl_child, [str(os.getpid()).encode()], [cell_end.fileno()])
        os._exit(3)
    cell_end.close()
    server.spares.add(pid)
    started = []

    def fill():  # the server forks new spares once it has read the messages
        if not started:
            started.append(pid)
            os.write(go_w, b"x")
            os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # ended, not yet reaped

    server.fill = fill
    client.settimeout(0.5)
    line = b""
    for _ in range(3):
        server.reap()
        try:
            line = client.recv(100)
            break
        except TimeoutError:
            pass
    print(line.decode().strip() or "no exit line")
    """
)


def test_a_cell_that_crashes_at_once_gets_its_exit_line():
    run = subprocess.run(
        [sys.executable, "-c", RACE], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "exit 3"
