"""Learnable constraint sets ``A y <= b``, initialised as the random constraints of supplementary A.

Each constraint is a hyperplane with normal ``a_j``, its own origin ``o_j`` and a signed offset
``r_j`` (paper, "Constraint parametrization"): ``a_j·(y - o_j) <= r_j``, i.e.
``b_j = r_j + a_j·o_j``. (The paper writes ``b = r - a·o`` in its code's ``A y + b <= 0``
convention; it is the same hyperplane.) A learnable origin lets a constraint rotate about a
point near the data instead of about the global origin.
"""

from __future__ import annotations

import torch

from ilplayer.core.bounds import Bounds, as_bounds, check_box
from ilplayer.testing.instances import sample_random_constraints

__all__ = ["ORIGINS", "StaticConstraints"]

ORIGINS = ("learnable", "corner", "center")


class StaticConstraints(torch.nn.Module):
    """A learnable set of ``m`` constraints on ``n`` variables; ``forward()`` returns ``(A, b)``.

    Args:
        num_constraints: ``m`` (0: no constraints, the box alone; with known equalities
            beside them, see [`learn_constraints`][ilplayer.learning.learn.learn_constraints]).
        num_variables: ``n``.
        lb: the variable box's lower bounds (used to place the origins).
        ub: its upper bounds.
        origin: ``"learnable"`` (the paper: ``b = r + a·o`` with learnable ``o``),
            ``"corner"`` (direct ``A, b`` with the origin fixed at ``lb``) or ``"center"``
            (origin fixed at the box centre): the ablation rows of the supplementary.
        normalize: divide each row ``(a_j, b_j)`` by ``|a_j|`` (as the reference does).
        seed: seed of the initialisation (supplementary A, without the feasibility flip:
            CombOptNet recovers from an infeasible start).
        dtype: parameter dtype.

    Example:
        >>> A, b = StaticConstraints(num_constraints=4, num_variables=16, lb=0, ub=1, seed=0)()
        >>> A.shape, b.shape
        (torch.Size([4, 16]), torch.Size([4]))
    """

    def __init__(
        self,
        num_constraints: int,
        num_variables: int,
        lb: Bounds = 0,
        ub: Bounds = 1,
        origin: str = "learnable",
        normalize: bool = True,
        seed: int | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        if (
            isinstance(num_constraints, bool)
            or not isinstance(num_constraints, int)
            or num_constraints < 0
        ):
            raise ValueError(
                f"num_constraints must be a non-negative integer, got {num_constraints!r}"
            )
        if (
            isinstance(num_variables, bool)
            or not isinstance(num_variables, int)
            or num_variables < 1
        ):
            raise ValueError(f"num_variables must be a positive integer, got {num_variables!r}")
        if origin not in ORIGINS:
            raise ValueError(f"origin must be one of {ORIGINS}, got {origin!r}")
        if not isinstance(normalize, bool):
            raise TypeError(f"normalize must be True or False, got {normalize!r}")
        if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
            raise TypeError(f"dtype must be a floating torch dtype, got {dtype!r}")
        check_box(lb, ub)
        generator = torch.Generator()
        generator.manual_seed(torch.seed() if seed is None else seed)
        normals, offsets, origins = sample_random_constraints(
            num_constraints, num_variables, lb, ub, generator=generator
        )
        lo = torch.as_tensor(as_bounds(lb, num_variables, "lb"), dtype=torch.float64)
        hi = torch.as_tensor(as_bounds(ub, num_variables, "ub"), dtype=torch.float64)
        self.origin = origin
        self.normalize = normalize
        self.normals = torch.nn.Parameter(normals.to(dtype))
        self.offsets = torch.nn.Parameter(offsets.to(dtype))
        if origin == "learnable":
            self.origins = torch.nn.Parameter(origins.to(dtype))
        else:
            fixed = lo if origin == "corner" else (lo + hi) / 2
            self.register_buffer("origins", fixed.expand(num_constraints, -1).to(dtype).clone())

    @classmethod
    def from_rows(
        cls,
        A: torch.Tensor,
        b: torch.Tensor,
        lb: Bounds = 0,
        ub: Bounds = 1,
        origin: str = "learnable",
        dtype: torch.dtype = torch.float64,
    ) -> StaticConstraints:
        """The constraints ``A y <= b`` in this parametrisation (``forward()`` gives them back with
        unit rows); a learnable origin sits on its hyperplane, nearest the box's centre."""
        A, b = torch.as_tensor(A, dtype=dtype), torch.as_tensor(b, dtype=dtype)
        if A.dim() != 2 or b.shape != A.shape[:1]:
            raise ValueError(
                f"A must be (m, n) and b (m,), got {tuple(A.shape)} and {tuple(b.shape)}"
            )
        model = cls(A.shape[0], A.shape[1], lb, ub, origin=origin, seed=0, dtype=dtype)
        norm = torch.linalg.vector_norm(A, dim=-1, keepdim=True)
        A, b = A / norm, b / norm[:, 0]
        with torch.no_grad():
            model.normals.copy_(A)
            if origin == "learnable":
                n = A.shape[1]
                centre = model.origins.new_tensor(
                    (as_bounds(lb, n, "lb") + as_bounds(ub, n, "ub")) / 2
                )
                model.origins.copy_(centre + (b - A @ centre)[:, None] * A)
            model.offsets.copy_(b - (A * model.origins).sum(-1))
        return model

    def forward(self) -> tuple[torch.Tensor, torch.Tensor]:
        A = self.normals
        b = self.offsets + (self.normals * self.origins).sum(-1)
        if self.normalize:
            norm = torch.linalg.vector_norm(A, dim=-1)
            A, b = A / norm[:, None], b / norm
        return A, b

    def extra_repr(self) -> str:
        m, n = self.normals.shape
        return f"num_constraints={m}, num_variables={n}, origin={self.origin!r}, normalize={self.normalize}"
