"""The package's layering, read from the imports of its source (no import is executed).

The rows below are the package's rooms (its subpackages) and the root modules; every import
inside ``ilplayer/`` points down the table (or stays within its own room, without a circle).
The experiments (``experiments/ilplayer_experiments``, a distribution of their own) sit on top
and the library never imports them; nothing inside imports the package face
``ilplayer/__init__.py``. Imports under ``TYPE_CHECKING`` are annotations only: the layers do
not count them, the circle test does. CONTRIBUTING.md, "Architecture", explains the rows.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "ilplayer"

LAYERS = [
    ("errors",),  # every exception and warning, under two bases
    ("core",),  # inputs checked into host arrays, the records, the decision pool, threads, output
    ("readers",),  # the models users have: cvxpy, Pyomo, gurobipy, MPS/LP, PyEPO
    ("solvers",),  # the solver contract, registry, specs, the persistent-model shortcuts, built-ins
    ("plugin_api",),  # the plugin authors' face
    ("program",),  # the static program
    ("parallel",),  # executors, workers, Ray, dispatch and the answer check, the kept backends
    ("oracle",),  # a program with its backend, pools and decision pool
    ("gradients",),  # the gradient methods
    ("metrics",),  # the scores, the post-hoc regret among them
    ("losses",),  # the losses
    ("keywords",),  # the layer's arguments and its keyword shortcut
    ("layer", "cvxpy_layer"),  # ILPLayer and solve(); cvxpy problems as layers
    ("testing",),  # the conformance kit, the fuzzers, the instance families
    ("learning",),  # learning constraints from observations
    ("cli",),  # the command line
    ("__init__", "__main__"),  # the package face, python -m ilplayer
]
RANK = {name: rank for rank, row in enumerate(LAYERS) for name in row}
MAX_ROOT_MODULES = 12


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> int:
    """A module's row: its room's, or its own for a root module."""
    return RANK[module.split(".")[0]]


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imports_of(path: Path, annotations: bool = False) -> set[str]:
    """The ilplayer modules ``path`` imports at run time ("" is the package face); with
    ``annotations``, those it imports for annotations only (under ``TYPE_CHECKING``) too."""
    tree = ast.parse(path.read_text())
    skip = set() if annotations else _type_checking_lines(tree)
    found: set[str] = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            found |= {
                a.name[len("ilplayer.") :] if a.name != "ilplayer" else ""
                for a in node.names
                if a.name == "ilplayer" or a.name.startswith("ilplayer.")
            }
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "ilplayer":  # "from ilplayer import hookspecs" names a submodule
                for alias in node.names:
                    sub = PACKAGE / alias.name
                    found.add(alias.name if sub.is_dir() or sub.with_suffix(".py").exists() else "")
            elif node.module.startswith("ilplayer."):
                found.add(node.module[len("ilplayer.") :])
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path}: use absolute imports (line {node.lineno})")
    return found


GRAPH = {module_name(p): imports_of(p) for p in sorted(PACKAGE.rglob("*.py"))}
WITH_ANNOTATIONS = {
    module_name(p): imports_of(p, annotations=True) for p in sorted(PACKAGE.rglob("*.py"))
}


def test_every_module_has_a_layer():
    missing = [m for m in GRAPH if m.split(".")[0] not in RANK]
    assert not missing, f"add these modules' rooms to LAYERS (and to CONTRIBUTING.md): {missing}"


def test_the_root_holds_the_face_and_few_modules():
    root = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(root) <= MAX_ROOT_MODULES, (
        f"{len(root)} root modules (move them into a room): {root}"
    )


def test_the_library_never_imports_the_experiments():
    """Annotation-only imports count: the wheel must work without ``ilplayer_experiments``."""
    offenders = sorted(
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if "ilplayer_experiments" in p.read_text()
    )
    assert not offenders, f"library modules naming the experiments: {offenders}"


def test_every_imported_module_exists():
    missing = sorted(
        (m, t) for m, targets in GRAPH.items() for t in targets if t and t not in GRAPH
    )
    assert not missing, missing


def test_no_module_imports_the_package_face():
    offenders = sorted(m for m, targets in GRAPH.items() if "" in targets)
    assert not offenders, f"import from the defining module, not from ilplayer: {offenders}"


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if m != "__init__"))
def test_imports_point_down(module):
    upward = sorted(t for t in GRAPH[module] if t and layer_of(t) > layer_of(module))
    assert not upward, f"{module} (layer {layer_of(module)}) imports higher layers: {upward}"


def test_no_import_circle():
    """Not even through an import for annotations only: a circle there still ties the two modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in WITH_ANNOTATIONS.get(node, ()):
            if target not in WITH_ANNOTATIONS:
                continue
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in WITH_ANNOTATIONS.get(node, ()):
                circles.append(sorted(component))

    for node in WITH_ANNOTATIONS:
        if node not in index:
            visit(node)
    assert not circles, f"import circles: {circles}"


def test_every_public_exception_and_warning_lives_in_errors_under_its_base():
    """``except ilplayer.Error`` catches ilplayer's errors, ``ilplayer.errors.Warning`` its warnings,
    and each is still the builtin it names."""
    import builtins

    import ilplayer
    from ilplayer import errors

    defined_elsewhere = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "errors.py":
            continue
        defined_elsewhere.extend(
            f"{path.name}:{node.name}"
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.ClassDef)
            and not node.name.startswith("_")  # a private signal is no API
            and any(
                ast.unparse(base).endswith(("Error", "Warning", "Exception")) for base in node.bases
            )
        )
    assert not defined_elsewhere, f"exceptions or warnings outside errors.py: {defined_elsewhere}"
    for name in errors.__all__:
        cls = getattr(errors, name)
        if not isinstance(cls, type) or name in ("Error", "Warning"):
            continue
        if name in ilplayer.__all__:  # the face's errors are the same classes
            assert getattr(ilplayer, name) is cls
        if issubclass(cls, builtins.Warning):
            assert issubclass(cls, ilplayer.errors.Warning) and cls.__mro__[2] is not object
        else:
            assert issubclass(cls, ilplayer.Error) and cls.__mro__[2] is not object


def test_no_module_imports_another_modules_private_name():
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ilplayer"):
                found.extend(
                    f"{path.name}: {node.module}.{a.name}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")
                )
    assert not found, f"private names imported across modules: {found}"


FACES = ("__init__", "gradients", "losses", "metrics", "plugin_api", "learning.learn", "testing")
"""Modules that gather other modules' names for their readers: the package face, the
subpackages' faces, the scores (``ilplayer.metrics``, the two-stage ones among them), the plugin
authors' API, the learning API and the conformance kit."""


def test_no_module_but_a_face_re_exports_another_modules_names():
    found = {}
    for path in PACKAGE.rglob("*.py"):
        if module_name(path) in FACES:
            continue
        tree = ast.parse(path.read_text())
        imported = {
            alias.asname or alias.name.split(".")[0]
            for node in tree.body
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for alias in node.names
        }
        listed = [
            element.value
            for node in tree.body
            if isinstance(node, ast.Assign)
            and any(getattr(target, "id", None) == "__all__" for target in node.targets)
            for element in node.value.elts
        ]
        if again := sorted(set(listed) & imported):
            found[module_name(path)] = again
    assert not found, f"import these from the module that defines them: {found}"


def test_no_module_is_over_400_lines():
    long = {
        str(p.relative_to(PACKAGE)): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 400
    }
    assert not long, f"modules over 400 lines (split them along their jobs): {long}"


def test_no_function_is_over_60_lines_of_code():
    """Its signature and body; the docstring does not count (what a thing is and how to use it
    may take the words it needs)."""
    long = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                lines -= (first.end_lineno or first.lineno) - first.lineno + 1
            if lines > 60:
                long[f"{module_name(path)}.{node.name}"] = lines
    assert not long, f"functions over 60 lines of code (split them into named steps): {long}"
