"""Independent random streams from one user seed.

A run derives every stream it needs -- dataset, initialisation, shuffling, noise -- from the
user's seed and a fixed stream number, so that changing one part (say, the number of epochs)
never shifts the random numbers of another.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["derive_seed", "torch_generator"]


def derive_seed(seed: int, stream: int) -> int:
    """A 32-bit seed for ``stream`` of ``seed``, independent of every other stream (NumPy's
    ``SeedSequence`` hashing)."""
    return int(np.random.SeedSequence([seed, stream]).generate_state(1)[0])


def torch_generator(seed: int, stream: int) -> torch.Generator:
    """A CPU ``torch.Generator`` seeded with `derive_seed`."""
    return torch.Generator().manual_seed(derive_seed(seed, stream))
