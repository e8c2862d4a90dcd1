"""The argument types the command line shares: each refuses a bad value before any work starts."""

from __future__ import annotations

import argparse

from ilplayer.parallel.executors import EXECUTORS

__all__ = ["EXECUTOR_CHOICES", "bounds", "family", "json_object", "positive_int", "solver_name"]


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def solver_name(text: str) -> str:
    """Resolve a backend name now, so that a typo fails before any work starts."""
    from ilplayer.solvers.registry import resolve_solver_name

    try:
        resolve_solver_name(text)
    except (ValueError, LookupError) as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def json_object(text: str) -> dict:
    """A JSON object given on the command line (keyword options for a backend)."""
    import json

    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON ({exc}): {text}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(
            f"must be a JSON object such as '{{\"time_limit\": 10}}', got {text}"
        )
    return value


def family(text: str) -> str:
    """A benchmark instance family, checked before any benchmark starts."""
    from ilplayer.testing.instances import check_family

    try:
        return check_family(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


EXECUTOR_CHOICES = list(EXECUTORS)  # the library's names, in its order


def bounds(text: str) -> float | list[float]:
    """``"0"`` or ``"0,0,-5,..."`` (one per variable)."""
    try:
        values = [float(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be a number or a comma-separated list, got {text!r}"
        ) from None
    return values[0] if len(values) == 1 else values
