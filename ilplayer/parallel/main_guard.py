"""The main script and worker processes: under ``spawn`` and ``forkserver`` each worker runs the
main script again before it takes tasks. `unguarded_main_line` finds a pool started from the
script's top level outside an ``if __name__ == "__main__":`` guard (refused before a worker
starts); `main_file_hidden` starts workers for a script read from stdin as for ``python -c``.
"""

from __future__ import annotations

import contextlib
import os
import sys
import types
from collections.abc import Iterator
from typing import Any

__all__ = ["main_file_hidden", "main_without_a_file", "unguarded_main_line"]


def main_without_a_file() -> Any:
    """The main module when it names a file that is not there (a script read from stdin:
    ``__file__`` is ``'<stdin>'``), else None. ``python -c`` and notebooks name no file."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if (
        main is None
        or path is None
        or getattr(main, "__spec__", None) is not None
        or os.path.isfile(path)
    ):
        return None
    return main


@contextlib.contextmanager
def main_file_hidden(main: Any) -> Iterator[None]:
    """Workers started inside start with the main module naming no file (``main``: None, nothing
    to hide).

    A ``spawn`` or ``forkserver`` worker runs the main script's file again before it takes
    tasks; for ``'<stdin>'`` it died on FileNotFoundError and every row came back ERROR. The
    workers need nothing from the main module (their tasks are ilplayer's functions), so they
    are started while it names no file, as for ``python -c``.
    """
    if main is None:
        yield
        return
    path = main.__file__
    del main.__file__
    try:
        yield
    finally:
        main.__file__ = path


def unguarded_main_line() -> tuple[str, int] | None:
    """``(script, line)`` when this call comes from the main script's top-level code outside an
    ``if __name__ == "__main__":`` block; None when it does not, or when that cannot be told
    (an interactive session, ``python -c``, a notebook).

    Under ``spawn`` and ``forkserver`` every worker imports the main script again: top-level
    code that starts a pool then runs again in each worker, which dies while starting up.
    """
    import ast

    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or not path or not os.path.isfile(path):
        return None
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None and not (
        frame.f_globals is vars(main) and frame.f_code.co_name == "<module>"
    ):
        frame = frame.f_back
    if frame is None:
        return None  # not reached from the main script's top level
    line = frame.f_lineno
    try:
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if (
            isinstance(node, ast.If)
            and "__main__" in ast.unparse(node.test)
            and "__name__" in ast.unparse(node.test)
            and node.lineno <= line <= (node.end_lineno or node.lineno)
        ):
            return None
    return path, line
