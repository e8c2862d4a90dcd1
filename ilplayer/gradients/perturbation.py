"""Random costs around the predicted ones: one `Perturbation` (the noise's kind, its scale
``sigma``, the number of ``samples``, the ``seed`` of its stream) is what the perturbed layer
(`Perturbed`), I-MLE (`IMLE`) and the perturbed Fenchel-Young loss draw from. The two methods
are perturbations themselves (they add their backward's settings), so a method object can be
handed to the loss: ``FenchelYoung(oracle, perturbation=Perturbed(sigma=0.5))``."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import torch

from ilplayer.gradients.base import is_number, seeded_generator

__all__ = ["NOISES", "TINY", "Perturbation", "away_from_zero", "standard_noise", "sum_of_gamma"]

NOISES = ("additive", "multiplicative", "sum-of-gamma")
"""``additive``: ``c + sigma Z``, ``Z ~ N(0, I)``; ``multiplicative``: ``c * exp(sigma Z -
sigma^2 / 2)`` (signs kept, mean ``c``; PyEPO's DPOMul and PFYMul); ``sum-of-gamma``: ``c +
sigma G``, ``G`` I-MLE's Sum-of-Gamma noise (``kappa``, ``iterations`` terms)."""
TINY = 1e-7  # |c| below this divides as +-TINY in the multiplicative gradient (PyEPO's _EPS)


def standard_noise(
    samples: int,
    shape: tuple[int, ...],
    generator: torch.Generator | None,
    device: torch.device | str = "cpu",
) -> torch.Tensor:
    """Standard normal noise (samples, *shape) for costs of ``shape`` (B, n), drawn with each
    row's samples together (PyEPO's order), so that PyEPO's seed gives PyEPO's draws."""
    noise = torch.randn(
        (*shape[:-1], samples, shape[-1]), generator=generator, dtype=torch.float64, device=device
    )
    return noise.movedim(-2, 0)


def sum_of_gamma(
    shape: tuple[int, ...],
    kappa: float,
    iterations: int,
    generator: torch.Generator | None,
    device: torch.device | str = "cpu",
) -> torch.Tensor:
    """Sum-of-Gamma noise (I-MLE's, PyEPO's ``sumGammaDistribution``): ``(sum_{i<=s}
    Gamma(1/kappa, kappa/i) - log s) / kappa``, float64 on ``device``."""
    alpha = torch.full((iterations, *shape), 1.0 / kappa, dtype=torch.float64, device=device)
    gammas = torch._standard_gamma(alpha, generator=generator)
    weights = kappa / torch.arange(1, iterations + 1, dtype=torch.float64, device=device)
    draws = (gammas * weights.view(iterations, *([1] * len(shape)))).sum(0)
    return (draws - math.log(iterations)) / kappa


def away_from_zero(c: torch.Tensor) -> torch.Tensor:
    """``c`` with entries smaller than TINY in size set to +-TINY (sign kept, 0 -> +TINY)."""
    return torch.where(c.abs() < TINY, torch.where(c >= 0, TINY, -TINY).to(c.dtype), c)


@dataclass(frozen=True)
class Perturbation:
    """``samples`` random cost vectors around each row of ``c``, of scale ``sigma``, with noise
    of kind ``noise`` (one of [`NOISES`][ilplayer.gradients.perturbation.NOISES]; ``kappa`` and
    ``iterations`` shape the Sum-of-Gamma noise and apply to it only); ``seed`` fixes the stream
    (one per device, copied with its owner; None: torch's global stream).

    Example:
        >>> p = Perturbation(sigma=0.5, samples=4, seed=0)
        >>> p.costs(torch.zeros(2, 3))[0].shape
        torch.Size([4, 2, 3])
    """

    sigma: float = 1.0
    samples: int = 8
    seed: int | None = None
    noise: str = "additive"
    kappa: float = 5.0
    iterations: int = 10
    _generators: dict[str, torch.Generator] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        for label in ("sigma", "kappa"):
            value = getattr(self, label)
            if not (is_number(value) and value > 0):
                raise ValueError(f"{label} must be a positive number, got {value!r}")
            object.__setattr__(self, label, float(value))
        for label in ("samples", "iterations"):
            value = getattr(self, label)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{label} must be a positive integer, got {value!r}")
        if self.seed is not None and (
            isinstance(self.seed, bool) or not isinstance(self.seed, numbers.Integral)
        ):
            raise ValueError(f"seed must be an integer or None, got {self.seed!r}")
        object.__setattr__(self, "seed", None if self.seed is None else int(self.seed))
        if self.noise not in NOISES:
            raise ValueError(f"noise must be one of {NOISES}, got {self.noise!r}")
        if self.noise != "sum-of-gamma":
            for label, default in (("kappa", 5.0), ("iterations", 10)):
                if getattr(self, label) != default:
                    raise ValueError(
                        f"{label} shapes noise='sum-of-gamma' only; this perturbation's noise is "
                        f"{self.noise!r}: leave {label} out"
                    )

    def noise_generator(self, device: torch.device) -> torch.Generator | None:
        """The noise stream on ``device``: seeded once per device when ``seed`` is given."""
        return seeded_generator(self._generators, self.seed, device)

    def draw(self, shape: tuple[int, ...], device: torch.device | str = "cpu") -> torch.Tensor:
        """The next ``samples`` draws of the noise (samples, *shape), float64 on ``device``."""
        device = torch.device(device)
        generator = self.noise_generator(device)
        if self.noise == "sum-of-gamma":
            return sum_of_gamma(
                (self.samples, *shape), self.kappa, self.iterations, generator, device
            )
        return standard_noise(self.samples, shape, generator, device)

    def perturb(self, c: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """The perturbed costs (samples, B, n) of ``c`` (B, n) under drawn ``noise``: ``c *
        exp(sigma Z - sigma^2 / 2)`` (multiplicative), else ``c + sigma Z``."""
        if self.noise == "multiplicative":
            return c[None] * torch.exp(self.sigma * noise - 0.5 * self.sigma**2)
        return c[None] + self.sigma * noise

    def costs(self, c: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(perturbed costs, noise)``, both (samples, B, n) float64: a fresh draw around ``c``
        (B, n), which is detached."""
        noise = self.draw(tuple(c.shape), c.device)
        return self.perturb(c.detach().double(), noise), noise
