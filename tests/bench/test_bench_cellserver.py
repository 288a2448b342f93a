"""The cell server's bookkeeping of its processes (:class:`energyopt.bench.cellserver._Server`)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from benchutil import ROOT

from energyopt.bench.cellserver import SPARES

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


#: Spares forked before the late imports, then renewed: the old ones must leave without a
#: cell (standard input stays open, so only the retire pipe can end them), new ones wait.
RENEW = textwrap.dedent(
    """
    import os, socket, tempfile
    from energyopt.bench import cellserver

    keep_r, keep_w = os.pipe()
    os.dup2(keep_r, 0)  # the spares' standard input: open as long as this process runs
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(os.path.join(tempfile.mkdtemp(), "s.sock"))
    listener.listen(8)
    listener.setblocking(False)
    server = cellserver._Server(listener)
    server.fill()
    early = set(server.spares)
    server.renew()
    late = set(server.spares)
    assert server.retired == early  # killed with the cells if the server ends first
    codes = sorted(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in early)
    alive = [os.waitpid(pid, os.WNOHANG)[0] == 0 for pid in late]
    for pid in late:
        os.kill(pid, 9)
    print(len(early), codes, len(late), late.isdisjoint(early), all(alive))
    """
)


def test_renewed_spares_leave_without_a_cell_and_new_ones_wait():
    run = subprocess.run(
        [sys.executable, "-c", RENEW], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == f"{SPARES} {[0] * SPARES} {SPARES} True True"
