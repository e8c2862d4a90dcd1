"""Learnable constraint parametrisations and the supplementary's random constraints."""

from __future__ import annotations

import pytest
import torch

import ilplayer
from ilplayer.testing.instances import INITIAL_OFFSET


def test_learnable_origins_follow_the_hyperplane_parametrisation():
    module = ilplayer.StaticConstraints(3, 5, lb=0, ub=1, normalize=False, seed=0)
    A, b = module()
    expected_b = module.offsets + (module.normals * module.origins).sum(-1)
    torch.testing.assert_close(b, expected_b)
    names = {name for name, _ in module.named_parameters()}
    assert names == {"normals", "offsets", "origins"}


@pytest.mark.parametrize("origin, point", [("corner", [-5.0] * 4), ("center", [0.5] * 4)])
def test_direct_parametrisations_fix_the_origin(origin, point):
    module = ilplayer.StaticConstraints(
        2,
        4,
        lb=-5 if origin == "corner" else 0,
        ub=5 if origin == "corner" else 1,
        origin=origin,
        seed=0,
    )
    assert {name for name, _ in module.named_parameters()} == {"normals", "offsets"}
    torch.testing.assert_close(module.origins, torch.tensor([point, point]))


def test_initialisation_matches_supplementary_a():
    g = torch.Generator().manual_seed(0)
    normals, offsets, origins = ilplayer.testing.instances.sample_random_constraints(
        50, 16, -5, 5, generator=g
    )
    torch.testing.assert_close(normals.norm(dim=-1), torch.ones(50, dtype=torch.float64))
    assert (offsets == INITIAL_OFFSET).all()
    assert origins.min() >= -2.5 and origins.max() <= 2.5  # the centre sub-cube, half the edge


def test_feasible_point_stays_feasible_after_the_sign_flip():
    g = torch.Generator().manual_seed(1)
    corner = torch.tensor([0.0, 1.0] * 4, dtype=torch.float64)
    normals, offsets, origins = ilplayer.testing.instances.sample_random_constraints(
        8, 8, 0, 1, generator=g, feasible_point=corner
    )
    A, b = normals, offsets + (normals * origins).sum(-1)
    assert (A @ corner <= b).all()


def test_normalised_rows_have_unit_normals_and_same_half_spaces():
    module = ilplayer.StaticConstraints(3, 4, seed=0)
    with torch.no_grad():
        module.normals.mul_(3.0)
    A, b = module()
    torch.testing.assert_close(A.norm(dim=-1), torch.ones(3))
    module.normalize = False
    A_raw, b_raw = module()
    points = torch.randint(0, 2, (50, 4)).float()
    assert torch.equal(points @ A.T <= b, points @ A_raw.T <= b_raw)


def test_bad_origin_is_refused():
    with pytest.raises(
        ValueError, match=r"origin must be one of \('learnable', 'corner', 'center'\)"
    ):
        ilplayer.StaticConstraints(2, 4, origin="global")
