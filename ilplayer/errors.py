"""Every exception and warning ilplayer raises on purpose, under two bases.

``except ilplayer.Error`` catches all of ilplayer's own errors, and
``warnings.simplefilter("error", ilplayer.errors.Warning)`` turns all of its warnings into errors.
Each class is still a subclass of the builtin it names (``ValueError``, ``ImportError``,
``RuntimeWarning`` ...), so ``except ValueError`` keeps working. This module imports nothing
from ilplayer: everything else may import it.
"""

from __future__ import annotations

import builtins
import os
import sys
import warnings

__all__ = [
    "DataWarning",
    "Error",
    "NoGradientWarning",
    "NoSignalWarning",
    "ParameterError",
    "PluginLoadWarning",
    "SolverFailureWarning",
    "SolverNotInstalledError",
    "UnknownSolverError",
    "UnreadableModelError",
    "Warning",
    "warn_at_user_line",
]


class Error(Exception):
    """The base of every exception ilplayer raises on purpose."""


class Warning(builtins.Warning):  # ilplayer.errors.Warning, beside ilplayer.Error
    """The base of every warning ilplayer gives."""


class ParameterError(Error, ValueError):
    """A native parameter's value does not fit the parameter's type."""


class UnknownSolverError(Error, ValueError, LookupError):
    """No backend of that name is registered."""


class SolverNotInstalledError(Error, ImportError):
    """The backend is registered but the library it drives is not installed."""


class UnreadableModelError(Error, ValueError):
    """A model holds what a mixed-integer linear program cannot (a quadratic or nonlinear term,
    an SOS constraint, a semi-continuous variable, a constraint added lazily), or its file cannot
    be read; the message names the constraint, variable or file."""


class PluginLoadWarning(Warning, UserWarning):
    """A plugin distribution could not be loaded; its backends are missing."""


class SolverFailureWarning(Warning, RuntimeWarning):
    """A backend failed on some instances; they are marked ``Status.ERROR``."""


class NoSignalWarning(Warning, RuntimeWarning):
    """A backward pass produced an all-zero gradient for a whole batch."""


class NoGradientWarning(Warning, RuntimeWarning):
    """An input that requires grad gets no gradient from the layer's gradient method."""


class DataWarning(Warning, UserWarning):
    """The observations are valid but carry little or contradictory signal."""


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _library_file(filename: str) -> bool:
    """Whether a frame's file belongs to ilplayer or torch (not to the user's code)."""
    path = os.path.abspath(filename)
    return (
        path.startswith(_PACKAGE_DIR + os.sep)
        or f"{os.sep}torch{os.sep}" in path
        or filename.startswith("<frozen")
    )


def warn_at_user_line(message: str, category: type[builtins.Warning]) -> None:
    """``warnings.warn`` attributed to the first frame outside ilplayer and torch: the user's
    line (``loss.backward()``, ``layer(c, A, b)``), wherever in the library the warning rose."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and _library_file(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level + 1)
