"""The conformance kit, the fuzzers and the instance families.

The kit is the pytest suite every solver plugin runs (`ilplayer.testing.conformance`; importing
`ilplayer.testing` itself needs no pytest, so the instance families serve the library too).

Subclass `SolverConformance` in a test module of the plugin and name the backend::

    from ilplayer.testing import SolverConformance

    class TestMySolver(SolverConformance):
        solver_name = "mysolver"
        solver_options = {}            # optional: options for get_solver

Every family of `FAMILIES` is compared with the exact ``bruteforce`` backend (status per
instance; objective within 1e-6), and `FUZZ_CASES` seeded fuzz cases with an exhaustive
NumPy oracle: a suboptimal ``OPTIMAL`` or a false ``INFEASIBLE`` fails with the instance as a
reproducer. Infeasible instances must get a status, time limits must be honoured, the spec
must pickle. A backend that is not installed, or has no usable licence, is
skipped with the reason.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "FAMILIES",
    "Instances",
    "SolverConformance",
    "assert_agrees_with_bruteforce",
    "assert_correct_on_fuzzed_instances",
    "make_instances",
]


def __getattr__(name: str) -> Any:
    """The kit's names, imported on first use (they need pytest)."""
    if name in __all__:
        import ilplayer.testing.conformance as conformance

        return getattr(conformance, name)
    raise AttributeError(f"module 'ilplayer.testing' has no attribute {name!r}")
