"""Task sessions: ``nox -l`` lists them, ``nox -s lint`` runs one.

Each session makes its own virtual environment (torch pinned first: ``torch==2.13.0`` is the
local CPU wheel, any other version downloads CUDA). ``nox --no-venv -s lint types docs`` runs
those three in the current environment instead (the test suite does, tests/house/test_lint.py).
"""

from __future__ import annotations

import nox

nox.options.sessions = ["lint", "types", "core", "tests", "docs", "build"]
PLUGINS = [f"plugins/ilplayer-{name}" for name in ("highs", "gurobi", "cpsat", "scip", "pyomo")]
EXTRAS = "test,all,ray,pyepo,docs"
TORCH = "torch==2.13.0"


def _install(session: nox.Session, *args: str) -> None:
    """``pip install`` into the session's environment; nothing under ``--no-venv``, where the
    current environment is used as it is."""
    if session.venv_backend != "none":
        session.install(*args)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check, ruff format --check and the pre-commit hooks over the whole tree."""
    _install(session, "ruff>=0.6", "pre-commit>=3", "pre-commit-hooks>=4")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("pre-commit", "run", "--all-files", "--show-diff-on-failure")


@nox.session
def types(session: nox.Session) -> None:
    """mypy over the library, the plugins and the experiments (pyproject.toml's [tool.mypy])."""
    _install(session, TORCH)
    _install(session, "-e", ".[test]", "-e", "experiments", *_editable(PLUGINS))
    session.run("python", "-m", "mypy")


@nox.session
def core(session: nox.Session) -> None:
    """The library's tests with no extra installed: the core, the built-in backends, no
    plugin; tests that need more skip and say what."""
    _install(session, TORCH)
    _install(session, "-e", ".[test]")
    session.run(
        "python",
        "-m",
        "pytest",
        "-q",
        "-n",
        "2",
        "--dist",
        "loadfile",
        "tests/solving",
        "tests/gradients",
        "tests/losses",
        "tests/learning",
        "tests/parallel",
        *session.posargs,
    )


@nox.session
def tests(session: nox.Session) -> None:
    """The whole suite with every extra and plugin (what the README's test command runs)."""
    _install(session, TORCH)
    _install(session, "-e", f".[{EXTRAS}]", "-e", "experiments[all]", *_editable(PLUGINS))
    session.run("python", "-m", "pytest", "-q", "-n", "2", "--dist", "loadfile", *session.posargs)


@nox.session
def docs(session: nox.Session) -> None:
    """The documentation site, strict: a broken link or reference fails."""
    _install(session, TORCH)
    _install(session, "-e", ".[docs]", "-e", "experiments")
    session.run("mkdocs", "build", "--strict", "--site-dir", session.create_tmp() + "/site")


@nox.session
def build(session: nox.Session) -> None:
    """The wheels and sdists of ilplayer, the plugins and the experiments; the library's wheel
    is checked to hold no experiment."""
    _install(session, "build>=1")
    out = session.create_tmp() + "/dist"
    for project in (".", *PLUGINS, "experiments"):
        session.run("python", "-m", "build", "--outdir", out, project)
    session.run("python", "scripts/check_wheel.py", out)


def _editable(paths: list[str]) -> list[str]:
    return [arg for path in paths for arg in ("-e", path)]
