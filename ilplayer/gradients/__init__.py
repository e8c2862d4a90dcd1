"""Gradient methods of the layer's backward pass, one module per method.

Each is pure torch on the tensors' own device. ``combopt`` is CombOptNet's (Paulus et al.,
2021), for the cost ``c`` and the constraints ``A, b``; a new method goes in its own module
here and is named by the layer's ``gradient=`` argument.
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

__all__ = ["BASES", "combopt_backward", "decompose", "project_onto_box", "softmin", "softmin_weights"]
