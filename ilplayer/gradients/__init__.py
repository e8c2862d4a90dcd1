"""Gradient methods of the layer's backward pass.

Each is pure torch on the tensors' own device. ``combopt`` (``combopt.py``) is CombOptNet's
(Paulus et al., 2021), for the cost ``c`` and the constraints ``A, b``; ``blackbox``,
``identity`` and ``perturbed`` (``costs.py``) are for ``c`` only. A new method goes in a
module here and is named by the layer's ``gradient=`` argument.
"""

from __future__ import annotations

from ilplayer.gradients.combopt import (
    BASES,
    combopt_backward,
    decompose,
    project_onto_box,
    softmin,
    softmin_weights,
)
from ilplayer.gradients.costs import (
    COST_METHODS,
    blackbox_gradient,
    identity_gradient,
    perturbed_gradient,
    perturbed_mean,
)

GRADIENTS = ("combopt", *COST_METHODS)

__all__ = ["BASES", "COST_METHODS", "GRADIENTS", "blackbox_gradient", "combopt_backward", "decompose",
           "identity_gradient", "perturbed_gradient", "perturbed_mean", "project_onto_box", "softmin",
           "softmin_weights"]
