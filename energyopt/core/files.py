"""The user's files, read with bounded cost; outputs written whole or not at all.

Every reader of a file the user names (instances, profiles, traces, logs) goes
through :func:`read_bytes` or :func:`read_csv_text`, so that one set of rules holds:

- only a regular file is read: a device (``/dev/zero`` reports 0 bytes and never
  ends), a FIFO (opening it blocks until a writer comes) or a folder is refused after
  ``stat``, and the file is opened non-blocking and checked again, so a FIFO swapped
  in between the two never blocks;
- at most ``cap + 1`` bytes are read, whatever ``stat`` said;
- a CSV table is checked before any parser sees it: the header's length, its number
  of columns and repeated names, the number of rows, and that every row has as many
  fields as the header (a truncated row is an error, never a row of NaN); the first
  problem stops the check.

:func:`atomic_write` writes an output through a temporary file in the same folder
renamed over the target, so a full disk leaves the old file (or none), never a
truncated one, and the error names the file.

Errors are one-line :class:`~energyopt.core.errors.InstanceError` (bad input) or
:class:`~energyopt.core.errors.OutputPathError` (an output that cannot be written).
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from energyopt.core.errors import InstanceError, OutputPathError

#: Most bytes of one CSV table (a published trace or profile is under 1 MiB).
MAX_CSV_BYTES = 64 * 2**20

#: Longest header line of a CSV table (the formats here have under 200 characters).
MAX_HEADER_BYTES = 64 * 2**10

#: Most columns of a CSV table (the widest format here, a ZeusMonitor log of a node,
#: has 3 + one per GPU).
MAX_COLUMNS = 256

#: Longest CSV field (the ``csv`` module's own default limit).
MAX_FIELD_BYTES = 128 * 2**10

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((word for test, word in _KINDS if test(mode)), "not a regular file")


def _mib(n: int) -> str:
    return f"{n / 2**20:.3g} MiB"


def check_regular(path: str | Path, what: str = "file") -> None:
    """Refuse ``path`` unless it is an existing regular file (it is not opened)."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise InstanceError(f"{path}: cannot read the {what}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        raise InstanceError(f"{path}: is {_kind(mode)}, not a regular {what}")


def read_bytes(path: str | Path, *, cap: int, what: str = "file") -> bytes:
    """The bytes of the regular file ``path``, at most ``cap`` of them.

    Raises
    ------
    InstanceError
        One line naming ``path``: missing, unreadable, not a regular file, or larger
        than ``cap`` bytes (counted as read, not as ``stat`` reports).
    """
    where = str(path)
    check_regular(path, what)
    try:
        flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0)
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InstanceError(f"{where}: cannot read the {what}: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):  # replaced between stat and open
            raise InstanceError(f"{where}: is {_kind(mode)}, not a regular {what}")
        data = _read_at_most(fd, cap + 1)
    except OSError as exc:
        raise InstanceError(f"{where}: cannot read the {what}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > cap:
        raise InstanceError(f"{where}: more than {_mib(cap)}, the most a {what} may hold")
    return data


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks, got = [], 0
    while got < limit:
        chunk = os.read(fd, min(limit - got, 2**20))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_text(path: str | Path, *, cap: int, what: str = "file") -> str:
    """:func:`read_bytes` decoded as UTF-8 (a leading byte-order mark is dropped)."""
    data = read_bytes(path, cap=cap, what=what)
    nul = data.find(b"\0")
    if nul >= 0:
        raise InstanceError(f"{path}: holds a NUL byte at offset {nul}: not text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InstanceError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def read_csv_text(path: str | Path, *, max_rows: int, what: str = "CSV table") -> str:
    """The text of the CSV file ``path``, checked cheaply before any parser sees it.

    Checks, stopping at the first problem: the size (:data:`MAX_CSV_BYTES`), the header
    (at most :data:`MAX_HEADER_BYTES` long, at most :data:`MAX_COLUMNS` columns, no
    empty or repeated name), at most ``max_rows`` rows, and every row with as many
    fields as the header. Blank lines are skipped, as ``pandas.read_csv`` skips them.
    """
    text = read_text(path, cap=MAX_CSV_BYTES, what=what)
    check_csv(str(path), text, max_rows=max_rows)
    return text


def check_csv(where: str, text: str, *, max_rows: int) -> None:
    """The checks of :func:`read_csv_text` on ``text`` (the contents of ``where``)."""
    end = text.find("\n")
    header_line = text if end < 0 else text[:end]
    if len(header_line) > MAX_HEADER_BYTES:
        raise InstanceError(
            f"{where}: header line longer than {MAX_HEADER_BYTES} characters: not a table "
            "of this format"
        )
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader, None)
        if not header:
            raise InstanceError(f"{where}: empty: no header line")
        _check_header(where, header)
        rows = 0
        for row in reader:
            if not row:
                continue
            rows += 1
            if rows > max_rows:
                raise InstanceError(f"{where}: more than {max_rows} rows")
            if len(row) != len(header):
                raise InstanceError(
                    f"{where}, line {reader.line_num}: {len(row)} fields, the header has "
                    f"{len(header)} (a truncated or run-on row)"
                )
    except csv.Error as exc:
        raise InstanceError(f"{where}, line {reader.line_num}: not CSV ({exc})") from None


def _check_header(where: str, header: list[str]) -> None:
    if len(header) > MAX_COLUMNS:
        raise InstanceError(f"{where}: header has {len(header)} columns, more than {MAX_COLUMNS}")
    seen: set[str] = set()
    for k, name in enumerate(header):
        key = name.strip()
        if not key:
            raise InstanceError(f"{where}: header column {k + 1} has no name")
        if key in seen:
            raise InstanceError(f"{where}: header column {key[:40]!r} appears more than once")
        seen.add(key)


@contextlib.contextmanager
def atomic_write(path: str | Path, what: str = "output", *, mode: str = "w") -> Iterator[IO]:
    """Open a temporary file beside ``path``; on success rename it over ``path``.

    On any error the temporary file is removed and ``path`` is left as it was; an
    ``OSError`` (a full disk) becomes a one-line :class:`OutputPathError` naming ``path``.
    """
    target = Path(path)
    tmp_name = None
    try:
        fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        # Text as UTF-8 and newlines as given, whatever the locale: bytes that
        # ``instances verify`` compares must not depend on the machine.
        text_options = {} if "b" in mode else {"encoding": "utf-8", "newline": ""}
        with os.fdopen(fd, mode, **text_options) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, 0o666 & ~_umask())
        os.replace(tmp_name, target)
        tmp_name = None
    except OSError as exc:
        raise OutputPathError(
            f"{target}: cannot write the {what}: {exc.strerror or type(exc).__name__}"
        ) from None
    finally:
        if tmp_name is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)


def write_text(path: str | Path, text: str, what: str = "output") -> None:
    """``text`` into ``path`` with :func:`atomic_write`."""
    with atomic_write(path, what) as handle:
        handle.write(text)


def _umask() -> int:
    """The process umask; read from ``/proc`` where it can be, since setting it to read
    it (the portable way) races with threads creating files meanwhile."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0)
    os.umask(mask)
    return mask
