"""Native solver parameters checked against the type of the parameter they set.

Solver libraries convert what they are given: SCIP stores ``lp/threads=1.5`` as 1 and a string
in a boolean parameter as true, Gurobi stores ``Presolve=0.7`` as 0. A parameter passed through
``params=`` then silently means something else than the user wrote. Plugins call
`native_value` with the parameter's current value (which carries its type) before
setting it.
"""

from __future__ import annotations

import numbers
from typing import Any

from ilplayer.errors import ParameterError

__all__ = ["native_value"]


def native_value(backend: str, key: str, value: Any, current: Any) -> Any:
    """``value`` converted to the type of ``current`` (the parameter's present value), or a
    `ParameterError` (a ``ValueError``) naming ``params``, the backend, the parameter
    and what was wrong.

    bool parameters take ``True``/``False`` (or 0/1); integer parameters an integer (or an
    integral float such as ``2.0``), never a bool; real parameters any real number but a bool;
    string parameters a string. Other types of ``current`` pass ``value`` through unchanged
    for the library to check.
    """

    def reject(expected: str) -> ParameterError:
        return ParameterError(f"params: {backend} rejected {key}={value!r}: expected {expected}")

    if isinstance(current, bool):
        if isinstance(value, bool):
            return value
        if isinstance(value, numbers.Integral) and value in (0, 1):
            return bool(value)
        raise reject("a bool")
    if isinstance(current, numbers.Integral):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise reject("an integer")
        if isinstance(value, numbers.Integral):
            return int(value)
        if float(value).is_integer():
            return int(float(value))
        raise reject("an integer (the library would truncate it)")
    if isinstance(current, numbers.Real):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise reject("a real number")
        return float(value)
    if isinstance(current, str):
        if not isinstance(value, str):
            raise reject("a string")
        return value
    return value
