"""How a solving process keeps the memory it frees: glibc's malloc, told not to hand the top of
its heap back to the kernel after every solve.

A backend allocates and frees megabytes per batch (CP-SAT's model protos, HiGHS' and NumPy's
work arrays). glibc's default returns the free top of the heap to the kernel once it passes a
threshold that moves with the process's history, so a process that happened to free a large block
early kept its pages while another gave them back after every batch and faulted them in again
on the next, slower than with fixed thresholds, which fault nothing (benchmarks/worker_memory.py,
docs/records/parallel.md).
"""

from __future__ import annotations

import ctypes
import platform

__all__ = ["keep_freed_memory"]

MiB = 1 << 20
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3  # glibc's <malloc.h>


def keep_freed_memory(
    trim_threshold: int = 64 * MiB, top_pad: int = 16 * MiB, mmap_threshold: int = 32 * MiB
) -> bool:
    """Let this process's ``malloc`` keep up to ``trim_threshold`` bytes of freed heap (and grow
    the heap ``top_pad`` bytes at a time), and serve blocks below ``mmap_threshold`` from the heap
    instead of a fresh mapping each: repeated solves then reuse their memory instead of
    faulting it in again. Returns whether it applied (glibc only; elsewhere it does nothing).

    ilplayer's worker processes (process pools, Ray actors) and the ``ilplayer`` command call it
    when they start. Call it at the top of your own training script for the same effect on
    serial and thread solves; the cost is up to ``trim_threshold + top_pad`` bytes (80 MiB by
    default) of freed memory the process keeps instead of returning.
    """
    for name, value in (
        ("trim_threshold", trim_threshold),
        ("top_pad", top_pad),
        ("mmap_threshold", mmap_threshold),
    ):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{name} must be a non-negative number of bytes, got {value!r}")
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    mallopt = ctypes.CDLL(None).mallopt
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    settings = (
        (_M_TRIM_THRESHOLD, trim_threshold),
        (_M_TOP_PAD, top_pad),
        (_M_MMAP_THRESHOLD, mmap_threshold),
    )
    return all(mallopt(option, min(value, 2**31 - 1)) == 1 for option, value in settings)
