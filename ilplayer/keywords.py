"""The layer's arguments: an oracle and a method, or the keyword shortcut
(``ILPLayer(lb=0, ub=1, solver="highs", tau=0.5)``), whose keywords each build the program,
the oracle or the method they belong to."""

from __future__ import annotations

from typing import Any

from ilplayer.errors import warn_at_user_line
from ilplayer.gradients import GRADIENTS, METHODS, GradientMethod
from ilplayer.oracle import Oracle
from ilplayer.program import Program

__all__ = ["METHOD_KEYWORDS", "from_keywords", "layer_parts", "method_object"]


# The keyword shortcut: which keywords build the program, the oracle and the method.
PROGRAM_KEYWORDS = ("lb", "ub", "sense", "integrality", "cost_map")
ORACLE_KEYWORDS = (
    "solver",
    "solver_options",
    "executor",
    "workers",
    "mp_context",
    "pool",
    "solve_ratio",
)
SAMPLED = ("perturbed", "imle", "aimle")
METHOD_KEYWORDS: dict[str, dict[str, str]] = {  # keyword: {method name: the method's field}
    "tau": {"combopt": "tau"},
    "basis": {"combopt": "basis"},
    "project_to_box": {"combopt": "project_to_box"},
    "feasibility_tol": {"combopt": "feasibility_tol"},
    "lambd": {"blackbox": "lambd", "frank-wolfe": "lambd", "imle": "lambd"},  # PyEPO's name
    "blackbox_lambda": {
        "blackbox": "lambd"
    },  # the keyword before lambd, kept for code written then
    "sigma": dict.fromkeys(SAMPLED, "sigma"),
    "samples": dict.fromkeys(SAMPLED, "samples"),
    "seed": dict.fromkeys(SAMPLED, "seed"),
    "noise": {"perturbed": "noise"},
}


def method_object(gradient: str | GradientMethod, given: dict[str, Any]) -> GradientMethod:
    """``gradient`` as a method object: a name with the keywords given for that method, or an
    object of yours (whose options are its own: keywords beside it are refused)."""
    if isinstance(gradient, GradientMethod):
        if given:
            name = sorted(given)[0]
            raise ValueError(
                f"{name} is an option of the gradient method: set it on the object "
                f"(method={type(gradient).__name__}(...)), not on the layer"
            )
        return gradient
    if gradient not in METHODS:
        raise ValueError(f"method must be one of {GRADIENTS} or a GradientMethod, got {gradient!r}")
    for name in given:
        owners = METHOD_KEYWORDS[name]
        if gradient not in owners:
            which = " or ".join(repr(owner) for owner in owners)
            raise ValueError(
                f"{name} applies to method={which} only; this layer has "
                f"method={gradient!r}: leave {name} out"
            )
    fields: dict[str, Any] = {}
    for name, value in given.items():
        field = METHOD_KEYWORDS[name][gradient]
        if field in fields:  # lambd and blackbox_lambda: one setting, two names
            raise ValueError(f"{name} and another keyword both set {gradient}'s {field}: give one")
        fields[field] = value
    return METHODS[gradient](**fields)


def from_keywords(options: dict[str, Any]) -> tuple[Oracle, GradientMethod]:
    """The program, oracle and method the keyword shortcut names (``ILPLayer(lb=0, ub=1,
    solver="highs", tau=0.5)``): every keyword goes to the one object it belongs to, and a
    keyword no object takes, or one of another method than the chosen one, is refused."""
    unknown = sorted(
        set(options) - {*PROGRAM_KEYWORDS, *ORACLE_KEYWORDS, *METHOD_KEYWORDS, "gradient", "method"}
    )
    if unknown:
        raise TypeError(f"ILPLayer() got an unexpected keyword argument {unknown[0]!r}")
    if "gradient" in options and "method" in options:
        raise ValueError(
            "give the gradient method once: method= (an object or a name), not also gradient="
        )
    program = Program(**{key: options[key] for key in PROGRAM_KEYWORDS if key in options})
    oracle_options = {key: options[key] for key in ORACLE_KEYWORDS if key in options}
    oracle = Oracle(program, **{"solver": "bruteforce", **oracle_options})
    if "gradient" in options:  # the name before method=, for code written then
        warn_at_user_line(
            f"ILPLayer(gradient={options['gradient']!r}) is ILPLayer(method="
            f"{options['gradient']!r}) now (one keyword, a method object or its name); "
            "gradient= will be removed in a later release",
            FutureWarning,
        )
    gradient = options.get("method", options.get("gradient", "combopt"))
    try:
        method = method_object(
            gradient, {key: options[key] for key in METHOD_KEYWORDS if key in options}
        )
    except BaseException:
        oracle.close()
        raise
    return oracle, method


def layer_parts(args: tuple[Any, ...], options: dict[str, Any]) -> tuple[Oracle, GradientMethod]:
    """The oracle and method of ``ILPLayer(*args, **options)``. Positional: ``(oracle,
    method)`` or the keyword form's ``(lb, ub)``; so that the keyword form names its method
    too (``ILPLayer(0, 1, method="blackbox")``), ``method=`` is a keyword of its own there."""
    if len(args) > 2:
        raise TypeError(
            f"ILPLayer() takes an oracle and a method, or lb and ub, positionally; got "
            f"{len(args)} positional arguments"
        )
    oracle = args[0] if args else options.pop("oracle", None)
    second = args[1] if len(args) > 1 else None
    if isinstance(oracle, Oracle):
        return oracle, _method_beside(oracle, second, options)
    for name, value in (("lb", oracle), ("ub", second)):
        if value is not None and not isinstance(value, (str, GradientMethod)):
            if name in options:
                raise TypeError(f"ILPLayer() got multiple values for argument {name!r}")
            options[name] = value  # ILPLayer(lb, ub, ...), the positional shortcut
        elif value is not None:
            if "method" in options:
                raise TypeError("ILPLayer() got multiple values for argument 'method'")
            options["method"] = value
    return from_keywords(options)


def _method_beside(oracle: Oracle, method: Any, options: dict[str, Any]) -> GradientMethod:
    """The method of a layer given an ``oracle``: positional or ``method=``, and nothing else."""
    if method is not None and "method" in options:
        raise TypeError("ILPLayer() got multiple values for argument 'method'")
    method = options.pop("method", method)
    if options:
        name = sorted(options)[0]
        where = "the method object" if name in METHOD_KEYWORDS else "the Oracle or its Program"
        raise ValueError(f"{name}: with an oracle, give it to {where}, not to the layer")
    if not (method is None or isinstance(method, (str, GradientMethod))):
        raise TypeError(
            f"method must be a GradientMethod (ilplayer.gradients) or its name, got {method!r}"
        )
    return method_object("combopt" if method is None else method, {})
