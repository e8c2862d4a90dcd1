"""The package's layering, read from the imports of its source (no import is executed).

Every import inside ``ilplayer/`` points down the table below (or within its own row, without
a circle); the applications (``ilplayer/apps/``: the experiments, the benchmarks' kit, the
command line) sit on top and the library never imports them; only the CLI's commands import
the experiments; nothing inside imports the package face ``ilplayer/__init__.py``. Imports under ``TYPE_CHECKING`` are
annotations only: the layers do not count them, the circle test does. CONTRIBUTING.md,
"Architecture", explains the rows.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "ilplayer"

LAYERS = [
    ("errors", "matrices", "stdio", "threads", "transforms"),  # errors; rows; stdout; threads; torch.func
    ("types", "seeding", "checkpoint"),                     # shared records, random streams, a loop's saved state
    ("readers", "readers.rows", "readers.mps", "readers.files", "readers.gurobi",  # models users have
     "readers.pyomo_model", "readers.cvxpy_problem", "readers.pyepo_model"),
    ("bounds", "problem", "program", "solver", "engine", "gates", "reduced_costs", "params"),  # input, backends
    ("spec", "hookspecs"),                                  # how a plugin describes a backend
    ("solvers", "solvers.builtin", "solvers.bruteforce", "solvers.knapsack"),  # the built-in backends
    ("plugins", "plugin_api"),                              # the registry, the plugin authors' face
    ("executors", "workers", "ray_executor", "allocator",   # pools of workers, their processes (malloc), Ray,
     "auto_dispatch", "main_guard"),                        # the pool-or-caller choice, the main script's guard
    ("dispatch", "decision_pool", "oracle"),                # batch -> tasks -> answers; pooled answers; the oracle
    ("gradients", "gradients.base", "gradients.combopt", "gradients.blackbox", "gradients.identity", "formulations",
     "gradients.perturbation", "gradients.perturbed", "gradients.imle", "gradients.frank_wolfe", "two_stage", "metrics",
     "losses", "losses.solutions", "losses.cost", "losses.pool", "losses.cave", "losses.post_hoc", "losses.feasibility",
     "losses.relaxed", "instances",
     "backend_cache", "separation", "polish", "observations", "equalities"),
    ("layer", "cvxpy_layer"),                               # ILPLayer and solve(); cvxpy problems as layers
    ("constraints",),                                       # learnable constraint sets
    ("ilploss_terms",),                                     # ILP-Loss' negatives, terms and balancer
    ("training", "ilploss"),                                # the learning loops: CombOptNet's, ILP-Loss'
    ("restarts", "selection"),                              # training runs, in turn or in processes; the one kept
    ("learn",),                                             # learning from the user's data
    ("testing", "testing.fuzz", "testing.milp_fuzz"),       # the conformance kit and its fuzzed cases
    ("__init__",),                                          # the package face
    # the applications (ilplayer/apps/): built on the library, never imported by it
    ("apps", "apps.bench", "apps.bench.solvers", "apps.bench.parallel", "apps.bench.targets",
     "apps.bench.scale"),                                   # the benchmarks' kit
    ("apps.experiments",),                                  # the papers' demonstrations (a package)
    ("apps.arguments",),                                    # the argument types the command line shares
    ("apps.commands", "apps.fuzz_command", "apps.learn_command"),  # what each subcommand does (and learn's options)
    ("apps.cli", "__main__"),                               # the command line's entry points
]
RANK = {name: rank for rank, row in enumerate(LAYERS) for name in row}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def is_application(module: str) -> bool:
    return module == "apps" or module.startswith("apps.")


def layer_of(module: str) -> int:
    if module.startswith("apps.experiments"):
        return RANK["apps.experiments"]
    return RANK[module]


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
            found |= {a.name[len("ilplayer."):] if a.name != "ilplayer" else ""
                      for a in node.names if a.name == "ilplayer" or a.name.startswith("ilplayer.")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "ilplayer":  # "from ilplayer import hookspecs" names a submodule
                for alias in node.names:
                    sub = PACKAGE / alias.name
                    found.add(alias.name if sub.is_dir() or sub.with_suffix(".py").exists() else "")
            elif node.module.startswith("ilplayer."):
                found.add(node.module[len("ilplayer."):])
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path}: use absolute imports (line {node.lineno})")
    return found


GRAPH = {module_name(p): imports_of(p) for p in sorted(PACKAGE.rglob("*.py"))}
WITH_ANNOTATIONS = {module_name(p): imports_of(p, annotations=True) for p in sorted(PACKAGE.rglob("*.py"))}


def test_every_module_has_a_layer():
    missing = [m for m in GRAPH if not m.startswith("apps.experiments") and m not in RANK]
    assert not missing, f"add these modules to LAYERS (and to CONTRIBUTING.md): {missing}"


def test_every_imported_module_exists():
    missing = sorted((m, t) for m, targets in GRAPH.items() for t in targets if t and t not in GRAPH)
    assert not missing, missing


def test_no_module_imports_the_package_face():
    offenders = sorted(m for m, targets in GRAPH.items() if "" in targets)
    assert not offenders, f"import from the defining module, not from ilplayer: {offenders}"


def test_the_library_never_imports_the_applications():
    """Only ``python -m ilplayer`` (``__main__``) reaches into ``ilplayer/apps/`` from outside;
    annotation-only imports count."""
    offenders = sorted((m, t) for m, targets in WITH_ANNOTATIONS.items()
                       if not is_application(m) and m != "__main__" for t in targets if is_application(t))
    assert not offenders, f"library modules importing the applications: {offenders}"


def test_only_the_demonstrations_and_the_commands_import_the_demonstrations():
    offenders = sorted(m for m, targets in GRAPH.items()
                       if not m.startswith("apps.experiments") and m not in ("apps.cli", "apps.commands")
                       and any(t.startswith("apps.experiments") for t in targets))
    assert not offenders, offenders


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
    """``except ilplayer.Error`` catches ilplayer's errors, ``ilplayer.Warning`` its warnings,
    and each is still the builtin it names."""
    import builtins

    import ilplayer
    from ilplayer import errors

    defined_elsewhere = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "errors.py":
            continue
        defined_elsewhere.extend(
            f"{path.name}:{node.name}" for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_")  # a private signal is no API
            and any(ast.unparse(base).endswith(("Error", "Warning", "Exception")) for base in node.bases))
    assert not defined_elsewhere, f"exceptions or warnings outside errors.py: {defined_elsewhere}"
    for name in errors.__all__:
        cls = getattr(errors, name)
        if not isinstance(cls, type) or name in ("Error", "Warning"):
            continue
        assert getattr(ilplayer, name) is cls
        if issubclass(cls, builtins.Warning):
            assert issubclass(cls, ilplayer.Warning) and cls.__mro__[2] is not object
        else:
            assert issubclass(cls, ilplayer.Error) and cls.__mro__[2] is not object


def test_no_module_imports_another_modules_private_name():
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ilplayer"):
                found.extend(f"{path.name}: {node.module}.{a.name}" for a in node.names
                             if a.name.startswith("_") and not a.name.startswith("__"))
    assert not found, f"private names imported across modules: {found}"



FACES = ("__init__", "apps.bench", "gradients", "losses", "metrics", "plugin_api", "learn", "testing")
"""Modules that gather other modules' names for their readers: the package face, the
subpackages' faces, the scores (``ilplayer.metrics``, the two-stage ones among them), the plugin
authors' API, the learning API and the conformance kit."""


def test_no_module_but_a_face_re_exports_another_modules_names():
    found = {}
    for path in PACKAGE.rglob("*.py"):
        if module_name(path) in FACES:
            continue
        tree = ast.parse(path.read_text())
        imported = {alias.asname or alias.name.split(".")[0] for node in tree.body
                    if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}
        listed = [element.value for node in tree.body if isinstance(node, ast.Assign)
                  and any(getattr(target, "id", None) == "__all__" for target in node.targets)
                  for element in node.value.elts]
        if again := sorted(set(listed) & imported):
            found[module_name(path)] = again
    assert not found, f"import these from the module that defines them: {found}"


def test_no_module_is_over_400_lines():
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 400}
    assert not long, f"modules over 400 lines (split them along their jobs): {long}"


def test_no_function_is_over_80_lines_of_code():
    """Its signature and body; the docstring does not count (what a thing is and how to use it
    may take the words it needs)."""
    long = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                lines -= (first.end_lineno or first.lineno) - first.lineno + 1
            if lines > 80:
                long[f"{module_name(path)}.{node.name}"] = lines
    assert not long, f"functions over 80 lines of code (split them into named steps): {long}"
