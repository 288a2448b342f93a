"""core/files.py: bounded reads of regular files only, checked CSV text, atomic writes."""

from __future__ import annotations

import errno
import os
import resource
from pathlib import Path

import pytest

from energyopt.core.errors import InstanceError, OutputPathError
from energyopt.core.files import (
    MAX_COLUMNS,
    atomic_write,
    check_csv,
    read_bytes,
    read_csv_text,
    read_text,
    write_text,
)


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def test_the_cap_counts_bytes_read_not_stat(tmp_path):
    path = tmp_path / "f.json"
    path.write_bytes(b"x" * 101)
    assert read_bytes(path, cap=101) == b"x" * 101
    with pytest.raises(InstanceError, match=r"f\.json: more than .* MiB"):
        read_bytes(path, cap=100)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_a_device_is_refused_before_reading():
    # /dev/zero reports 0 bytes and never ends: stat's size says nothing about it.
    with pytest.raises(InstanceError, match="/dev/zero: is a character device, not a regular"):
        read_bytes("/dev/zero", cap=10)


def test_a_fifo_and_a_folder_are_refused_without_blocking(tmp_path):
    fifo = tmp_path / "x.json"
    os.mkfifo(fifo)  # no writer: opening it for reading would block for ever
    with pytest.raises(InstanceError, match=r"x\.json: is a FIFO \(named pipe\)"):
        read_text(fifo, cap=10, what="instance file")
    with pytest.raises(InstanceError, match="is a folder"):
        read_text(tmp_path, cap=10)
    with pytest.raises(InstanceError, match="cannot read the file: No such file"):
        read_text(tmp_path / "missing", cap=10)


def test_text_must_be_utf8_without_nul(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(b"\xef\xbb\xbfa,b\n")  # a byte-order mark is dropped
    assert read_text(path, cap=100) == "a,b\n"
    path.write_bytes(b"a,b\n1,\0\n")
    with pytest.raises(InstanceError, match="NUL byte at offset 6"):
        read_text(path, cap=100)
    path.write_bytes(b"a,b\n\xff,1\n")
    with pytest.raises(InstanceError, match=r"not UTF-8 text \(byte 4\)"):
        read_text(path, cap=100)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty: no header line"),
        ("a,b,a\n1,2,3\n", "header column 'a' appears more than once"),
        ("a,,b\n1,2,3\n", "header column 2 has no name"),
        (",".join(f"c{i}" for i in range(MAX_COLUMNS + 1)) + "\n", "columns, more than"),
        ("x" * 70_000 + "\n", "header line longer than"),
        ("a,b,c\n1,2,3\n1,2\n", r"line 3: 2 fields, the header has 3"),
        ("a,b\n1,2,3\n", r"line 2: 3 fields, the header has 2"),
        ("a,b\n1,2\n3,4\n5,6\n", "more than 2 rows"),
    ],
)
def test_csv_checks(text, message):
    with pytest.raises(InstanceError, match=message):
        check_csv("t.csv", text, max_rows=2)


def test_blank_lines_and_quoted_commas_are_fine():
    check_csv("t.csv", 'a,b\n\n"x,y",2\n\n', max_rows=1)


def test_a_duplicate_header_is_found_cheaply_in_a_huge_file(tmp_path):
    # The header is checked before any row is read: the rows cost nothing.
    path = tmp_path / "dup.csv"
    path.write_text("a,b,a\n" + "1,2,3\n" * 500_000)
    before = cpu_s()
    with pytest.raises(InstanceError, match="appears more than once"):
        read_csv_text(path, max_rows=1_000_000)
    assert cpu_s() - before < 2.0


def test_atomic_write_replaces_whole_or_not_at_all(tmp_path, monkeypatch):
    path = tmp_path / "out.json"
    write_text(path, "first\n")
    assert path.read_text() == "first\n"

    def full_disk(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(
        OutputPathError, match=r"out\.json: cannot write the instance file: No space"
    ):
        write_text(path, "second\n", "instance file")
    assert path.read_text() == "first\n"  # the old file stays whole
    new = tmp_path / "new.json"
    with pytest.raises(OutputPathError, match=r"new\.json"):
        write_text(new, "x", "instance file")
    assert not new.exists()  # no 0-byte file left behind
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]  # no temporary file


def test_atomic_write_keeps_the_umask_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        with atomic_write(tmp_path / "a.txt") as handle:
            handle.write("x")
    finally:
        os.umask(old)
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o644
