"""Losses: between the layer's solutions and target solutions (learning constraints, paper
supplementary A, on solutions scaled by `normalize_solution`), and for learning costs,
which solve their own batches through a layer: `SPOPlus`, `FenchelYoung`,
`PerturbationGradient`, `RegularizedFenchelYoung`, `CaVE`, and over a pool of known decisions `NCE`,
`ContrastiveMAP`, `PointwiseLTR`, `PairwiseLTR`, `ListwiseLTR`; and for predicted constraint
parameters, `PostHocRegretLoss` (the two-stage post-hoc regret with a perturbed gradient) and
`FeasibilityLoss` (Odece's infeasibility- and optimality-preserving losses) and
`RelaxedPostHocLoss` (the post-hoc regret through both stages' relaxations, as 2S).

Every cost loss solves through an [Oracle][ilplayer.Oracle] (or the oracle of a layer given
instead), and takes ``solve_ratio`` and ``pool`` ([decision_pool][ilplayer.core.decision_pool]): the
share of its calls that solve, the rest answered from the pool (or, for the pool losses, the
share that adds the predicted costs' solutions to the pool). Left out, the oracle's own rule
applies in training mode (the layer's mode when a layer was given, else the loss's own).
Without ``A`` and ``b`` a loss solves under the program's rows."""

from __future__ import annotations

from ilplayer.losses.cave import CaVE, binding_normals, cone_projection
from ilplayer.losses.cost import (
    CostLoss,
    FenchelYoung,
    PerturbationGradient,
    RegularizedFenchelYoung,
    SPOPlus,
)
from ilplayer.losses.feasibility import FeasibilityLoss
from ilplayer.losses.pool import (
    NCE,
    ContrastiveMAP,
    ListwiseLTR,
    PairwiseLTR,
    PointwiseLTR,
    PoolLoss,
)
from ilplayer.losses.post_hoc import PostHocRegretLoss
from ilplayer.losses.relaxed import RelaxedPostHocLoss
from ilplayer.losses.solutions import LOSSES, normalize_solution

__all__ = [
    "LOSSES",
    "NCE",
    "CaVE",
    "ContrastiveMAP",
    "CostLoss",
    "FeasibilityLoss",
    "FenchelYoung",
    "ListwiseLTR",
    "PairwiseLTR",
    "PerturbationGradient",
    "PointwiseLTR",
    "PoolLoss",
    "PostHocRegretLoss",
    "RegularizedFenchelYoung",
    "RelaxedPostHocLoss",
    "SPOPlus",
    "binding_normals",
    "cone_projection",
    "normalize_solution",
]
