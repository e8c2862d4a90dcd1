"""``ilplayer``: the command line's entry point (``python -m ilplayer``, the ``ilplayer`` script)."""

from __future__ import annotations

import argparse
import importlib.metadata
import sys
from collections.abc import Sequence
from typing import Any

from ilplayer.cli.arguments import json_object, positive_int, solver_name
from ilplayer.cli.learn_options import add_learn_parser
from ilplayer.cli.solvers import print_table, solvers_table
from ilplayer.core.threads import library_threads
from ilplayer.parallel.malloc import keep_freed_memory

__all__ = ["COMMANDS_GROUP", "main"]

COMMANDS_GROUP = "ilplayer.commands"  # entry points: callables that add subcommands to the parser
SETTLE = 0.2  # seconds of a first look at the machine before a command picks torch's threads
# where a subcommand a user may expect lives when its distribution is not installed
ELSEWHERE = dict.fromkeys(
    ("demo", "experiment", "report", "bench"),
    "ilplayer-experiments (pip install -e experiments, in the repository)",
)


def _add_fuzz(commands: Any) -> None:
    """``ilplayer fuzz``."""
    fuzz = commands.add_parser(
        "fuzz",
        help="check backends against exhaustive enumeration (--milp: against scipy.optimize.milp)",
    )
    fuzz.add_argument(
        "--solver",
        action="append",
        type=solver_name,
        default=None,
        help="backend to check (repeatable; default: every available backend and "
        "the Pyomo paths to HiGHS and Gurobi)",
    )
    fuzz.add_argument(
        "--solver-options",
        type=json_object,
        default=None,
        help="keyword options for the one --solver checked, as a JSON object (what "
        'solver_options takes), e.g. \'{"params": {"presolve": "on"}}\': check '
        "native parameter overrides before training with them",
    )
    fuzz.add_argument(
        "--instances",
        type=positive_int,
        default=10000,
        help="instances per backend (default 10000)",
    )
    fuzz.add_argument("--start", type=int, default=0, help="first case seed")
    fuzz.add_argument("--out", default="fuzz-failures", help="folder for reproducers (JSON)")
    fuzz.add_argument("--json", default=None, help="write the table as JSON here")
    fuzz.add_argument("--replay", default=None, help="solve a saved reproducer again")
    fuzz.add_argument(
        "--milp",
        action="store_true",
        help="mixed-integer programs (continuous variables, infinite bounds) checked "
        "against scipy.optimize.milp, on the backends that solve them",
    )


def add_installed_commands(commands: Any) -> None:
    for entry in sorted(
        importlib.metadata.entry_points(group=COMMANDS_GROUP), key=lambda e: e.name
    ):
        entry.load()(commands)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ilplayer", description="Differentiable ILP layers.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("solvers", help="list the registered solver backends")
    add_learn_parser(commands)
    commands.choices["learn"].set_defaults(library_threads=True)
    _add_fuzz(commands)
    add_installed_commands(commands)
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in ELSEWHERE and argv[0] not in commands.choices:
        parser.error(f"'{argv[0]}' comes with {ELSEWHERE[argv[0]]}")
    args = parser.parse_args(argv)
    keep_freed_memory()  # this process solves too: set up as its workers are
    if getattr(args, "library_threads", False):
        with library_threads(settle=SETTLE):
            return _run(args)
    return _run(args)


def _run(args: argparse.Namespace) -> int:
    if args.command == "fuzz":
        from ilplayer.cli.fuzz import run_fuzz

        return run_fuzz(args)
    if args.command == "learn":
        from ilplayer.cli.learn import run_learn

        return run_learn(args)
    if args.command == "solvers":
        print_table(solvers_table())
        return 0
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
