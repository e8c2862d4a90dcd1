"""Generated datasets are cached on disk, keyed by their generator's parameters."""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import torch

T = TypeVar("T")
CACHE_ENV = "ILPLAYER_CACHE"


def cache_dir() -> Path:
    """``$ILPLAYER_CACHE``, else ``~/.cache/ilplayer``."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "ilplayer")


def cached(kind: str, params: dict[str, Any], build: Callable[[], T]) -> T:
    """``build()`` once per ``(kind, params)``; later calls load the saved result.

    ``build`` must return plain containers of tensors, numbers and strings: they load with
    ``weights_only=True`` (no arbitrary unpickling). An entry that does not load that way (a
    truncated file, an older format) is rebuilt.
    """
    key = hashlib.sha256(json.dumps([kind, params], sort_keys=True).encode()).hexdigest()[:16]
    path = cache_dir() / "datasets" / f"{kind}-{key}.pt"
    if path.exists():
        try:
            return torch.load(path, weights_only=True)
        except Exception as error:
            warnings.warn(
                f"rebuilding the unreadable cache entry {path}: {error!s:.200}", stacklevel=2
            )
    value = build()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    torch.save(value, tmp)
    tmp.replace(path)  # atomic: parallel runs never read half a file
    return value
