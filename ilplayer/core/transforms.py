"""What ilplayer does under torch's function transforms and compiler: tell a wrapped tensor
(torch.func) from one with values, and keep a solve out of torch.compile's tracing."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

__all__ = ["transformed", "untraced"]


def untraced(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` left untraced by torch.compile (``torch.compiler.disable``), without importing
    torch's compiler at ilplayer's import (seconds in every worker process): the disabled
    function is made on the first call that dynamo traces."""
    disabled: list[Callable[..., Any]] = []

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if torch.compiler.is_compiling():
            if not disabled:
                disabled.append(torch.compiler.disable(function))
            return disabled[0](*args, **kwargs)
        return function(*args, **kwargs)

    return wrapper


def transformed(tensor: torch.Tensor) -> bool:
    """Whether ``tensor`` is wrapped by a torch.func transform (vmap's batched tensors hold no
    value a Python ``if`` can read)."""
    return bool(torch._C._functorch.is_functorch_wrapped_tensor(tensor))
