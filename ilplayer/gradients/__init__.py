"""Gradient methods of the layer's backward pass, one module each, holding the method's solves
as well as its maths (pure torch on the tensors' own device).

``combopt`` ([`CombOptNet`][ilplayer.gradients.CombOptNet], Paulus et al., 2021) gives gradients for the cost ``c`` and
the constraints ``A, b``; ``blackbox`` (`Blackbox`), ``identity`` (`Identity`) and
``perturbed`` (`Perturbed`), ``imle`` (`IMLE`), ``aimle`` (`AdaptiveIMLE`)
and ``frank-wolfe`` (`FrankWolfe`) for ``c`` only. The sampling methods draw their noise
from a [`Perturbation`][ilplayer.gradients.Perturbation], which the perturbed Fenchel-Young loss
takes too. A method is an object holding its options;
the layer's ``method=`` takes one, or its name as a shortcut ([`METHODS`][ilplayer.gradients.METHODS]). A new method
is a `GradientMethod` subclass in a module here, added to `METHODS`.
"""

from __future__ import annotations

from ilplayer.gradients.base import GradientMethod, MethodRun
from ilplayer.gradients.blackbox import Blackbox, blackbox_gradient
from ilplayer.gradients.combopt import (
    BASES,
    CombOptNet,
    combopt_backward,
    decompose,
    project_onto_box,
    softmin,
    softmin_weights,
)
from ilplayer.gradients.frank_wolfe import FrankWolfe
from ilplayer.gradients.identity import Identity, identity_gradient
from ilplayer.gradients.imle import IMLE, AdaptiveIMLE
from ilplayer.gradients.perturbation import NOISES, Perturbation
from ilplayer.gradients.perturbed import Perturbed, perturbed_gradient, perturbed_mean

METHODS: dict[str, type[GradientMethod]] = {
    m.name: m for m in (CombOptNet, Blackbox, Identity, Perturbed, IMLE, AdaptiveIMLE, FrankWolfe)
}
"""Every gradient method by the name the layer's ``method=`` takes."""
GRADIENTS = tuple(METHODS)
COST_METHODS = tuple(name for name, method in METHODS.items() if not method.constraint_gradients)

__all__ = [
    "BASES",
    "COST_METHODS",
    "GRADIENTS",
    "IMLE",
    "METHODS",
    "NOISES",
    "AdaptiveIMLE",
    "Blackbox",
    "CombOptNet",
    "FrankWolfe",
    "GradientMethod",
    "Identity",
    "MethodRun",
    "Perturbation",
    "Perturbed",
    "blackbox_gradient",
    "combopt_backward",
    "decompose",
    "identity_gradient",
    "perturbed_gradient",
    "perturbed_mean",
    "project_onto_box",
    "softmin",
    "softmin_weights",
]
