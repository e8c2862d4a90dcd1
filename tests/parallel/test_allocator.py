"""keep_freed_memory: a process that calls it keeps a freed block for its next use instead of
handing it back to the kernel; ilplayer's worker processes call it when they start."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

import ilplayer

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc's malloc only"
)

# Allocate 20 MiB through malloc, touch it, free it: is it still resident (kept) afterwards?
# (Raw malloc: NumPy or torch would add allocators of their own between the probe and glibc.)
PROBE = """
import ctypes, os
def kept_after_free():
    def rss():
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    libc = ctypes.CDLL(None)
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    size = 20 << 20
    before = rss()
    block = libc.malloc(size)
    ctypes.memset(block, 1, size)
    libc.free(block)
    return rss() - before > size // 2
"""


def kept_after_free(keep: bool) -> bool:
    """The probe in a fresh interpreter that imported ilplayer, after ``keep_freed_memory()`` or not."""
    setup = "import ilplayer.parallel.malloc\n" + (
        "assert ilplayer.parallel.malloc.keep_freed_memory()\n" if keep else ""
    )
    code = setup + PROBE + "print(kept_after_free())"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return out.stdout.strip() == "True"


def probe_here() -> bool:
    namespace: dict = {}
    exec(PROBE, namespace)
    return namespace["kept_after_free"]()


def test_a_freed_block_is_kept_only_after_keep_freed_memory():
    assert (
        kept_after_free(keep=False) is False
    )  # glibc's defaults: mapped for itself, unmapped on free
    assert kept_after_free(keep=True) is True


def test_process_workers_keep_freed_memory():
    from ilplayer.parallel.lanes import ProcessLane

    lane = ProcessLane("forkserver")
    try:
        assert lane.submit(probe_here).result() is True
    finally:
        lane.terminate()


@pytest.mark.parametrize(
    "argument", [{"trim_threshold": -1}, {"top_pad": 1.5}, {"mmap_threshold": True}]
)
def test_bad_thresholds_are_refused(argument):
    name = next(iter(argument))
    with pytest.raises(ValueError, match=rf"{name} must be a non-negative number of bytes"):
        ilplayer.parallel.malloc.keep_freed_memory(**argument)
