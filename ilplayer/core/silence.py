"""The process's standard output, silenced at the file-descriptor level: solver libraries
(HiGHS's banner, scipy's HiGHS) print from C, where ``sys.stdout`` cannot catch them."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

__all__ = ["quiet_stdout"]


@contextlib.contextmanager
def quiet_stdout() -> Iterator[None]:
    """File descriptor 1 pointed at /dev/null for the block."""
    sys.stdout.flush()
    saved, devnull = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    try:
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)
