"""Keypoint matching on real photographs: pairs of two different faces, VGG16 descriptors.

A pair shows two different faces of one split, each in a random view (``faces.views``), and
``p`` landmarks of ``faces.DISTINCTIVE`` on both, the target's in a random order: the task is
the semantic matching of the paper's SPair-71k experiment (same kind of object, another
instance). The frozen backbone's descriptors of every view are computed once and cached; the
pairs are drawn from them. Beside the trained methods (``matching.train_matching``) stand two
untrained baselines: the backbone's descriptors with the Hungarian algorithm (zero-shot) and
the keypoints' positions in their crops with the Hungarian algorithm (coordinates).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ilplayer.core.seeding import torch_generator
from ilplayer_experiments import faces, vgg
from ilplayer_experiments.cache import cached
from ilplayer_experiments.matching import MatchingData, assign, matching_accuracy

__all__ = [
    "CROP",
    "FacePairs",
    "ViewDescriptors",
    "face_pairs",
    "face_splits",
    "untrained_baselines",
    "view_descriptors",
    "with_positions",
]

CROP = 160  # a view's side in pixels: relu5_1 at 10 x 10


@dataclass(frozen=True)
class ViewDescriptors:
    """Every view of a split's faces: ``descriptors`` (V, 68, D), ``landmarks`` (V, 68, 2) in
    crop pixels, ``face`` (V,) the face each view shows."""

    descriptors: torch.Tensor
    landmarks: torch.Tensor
    face: torch.Tensor


def view_descriptors(
    split: list[faces.Face],
    folder: Path,
    backbone: vgg.VGG16Features,
    *,
    per_face: int,
    seed: int,
    size: int = 0,
    key: dict[str, Any] | None = None,
) -> ViewDescriptors:
    """The backbone's descriptors at the 68 landmarks of ``per_face`` views of each face; cached
    under ``key`` (what names the backbone and the split) where one is given."""
    size = size or CROP

    def build() -> dict[str, torch.Tensor]:
        shown = faces.views(split, folder, per_face, size=size, seed=seed)
        return {
            "descriptors": vgg.keypoint_descriptors(backbone, shown.images, shown.landmarks).half(),
            "landmarks": shown.landmarks,
            "face": shown.face,
        }

    if key is None:
        return ViewDescriptors(**build())
    params = {
        **key,
        "faces": [(face.photo, face.box) for face in split],
        "per_face": per_face,
        "seed": seed,
        "size": size,
        "warp": faces.WARP,
    }
    return ViewDescriptors(**cached("faces-descriptors", params, build))


@dataclass(frozen=True)
class FacePairs:
    """Matching pairs and the positions of their keypoints (N, p, 2), for the coordinates baseline."""

    data: MatchingData
    source_xy: torch.Tensor
    target_xy: torch.Tensor


def face_pairs(
    views: ViewDescriptors, p: int, num_pairs: int, *, seed: int, stream: int
) -> FacePairs:
    """``num_pairs`` pairs of two different faces, a random view of each and ``p`` distinctive
    landmarks, in a random order on the target."""
    if not 2 <= p <= len(faces.DISTINCTIVE):
        raise ValueError(f"p must be between 2 and {len(faces.DISTINCTIVE)}, got {p}")
    shown = sorted(set(views.face.tolist()))
    if len(shown) < 2:
        raise ValueError("a split needs two faces or more to make pairs of different faces")
    g = torch_generator(seed, stream)
    by_face = {face: torch.nonzero(views.face == face).flatten() for face in shown}
    distinctive = torch.tensor(faces.DISTINCTIVE)
    source, target, source_xy, target_xy = [], [], [], []
    y = torch.zeros(num_pairs, p, p, dtype=torch.float64)
    for k in range(num_pairs):
        a, b = (shown[i] for i in torch.randperm(len(shown), generator=g)[:2].tolist())
        va = by_face[a][torch.randint(len(by_face[a]), (), generator=g)]
        vb = by_face[b][torch.randint(len(by_face[b]), (), generator=g)]
        points = distinctive[torch.randperm(len(distinctive), generator=g)[:p]]
        order = torch.randperm(p, generator=g)  # target j shows source order[j]
        source.append(views.descriptors[va, points])
        target.append(views.descriptors[vb, points[order]])
        source_xy.append(views.landmarks[va, points])
        target_xy.append(views.landmarks[vb, points[order]])
        y[k, order, torch.arange(p)] = 1.0
    data = MatchingData(
        torch.stack(source).float(), torch.stack(target).float(), y.reshape(num_pairs, p * p)
    )
    return FacePairs(data, torch.stack(source_xy), torch.stack(target_xy))


def with_positions(pairs: FacePairs, size: int = CROP) -> MatchingData:
    """The pairs' data with each keypoint's crop position, centred and in crop widths, after its
    descriptor: what a head needs to weigh appearance against geometry, as BB-GM's graph does."""
    data = pairs.data

    def joined(descriptors: torch.Tensor, xy: torch.Tensor) -> torch.Tensor:
        return torch.cat([descriptors, (xy / size - 0.5).to(descriptors.dtype)], dim=-1)

    return MatchingData(
        joined(data.source, pairs.source_xy), joined(data.target, pairs.target_xy), data.y
    )


def face_splits(
    folder: Path,
    backbone: vgg.VGG16Features,
    p: int,
    sizes: tuple[int, int, int],
    *,
    seed: int,
    per_face: int = 8,
    test_share: float = 0.3,
    key: dict[str, Any] | None = None,
) -> tuple[FacePairs, FacePairs, FacePairs]:
    """(train, val, test) pairs: test faces from photographs never seen in training; val pairs
    from the training faces in other views (they pick the epoch only)."""
    train_faces, test_faces = faces.split_by_photograph(faces.read_faces(folder), test_share)
    fit = view_descriptors(train_faces, folder, backbone, per_face=per_face, seed=seed, key=key)
    held = view_descriptors(
        train_faces, folder, backbone, per_face=max(2, per_face // 4), seed=seed + 1000, key=key
    )
    test = view_descriptors(
        test_faces, folder, backbone, per_face=per_face, seed=seed + 2000, key=key
    )
    return (
        face_pairs(fit, p, sizes[0], seed=seed, stream=41),
        face_pairs(held, p, sizes[1], seed=seed, stream=42),
        face_pairs(test, p, sizes[2], seed=seed, stream=43),
    )


def untrained_baselines(
    data: MatchingData, source_xy: torch.Tensor | None = None, target_xy: torch.Tensor | None = None
) -> dict[str, float]:
    """The Hungarian algorithm on minus the descriptors' cosine (zero-shot) and, where the
    keypoints' crop positions are given, on their squared distance (coordinates)."""
    costs = {
        "zero_shot_assignment_accuracy": -torch.einsum(
            "npd,nqd->npq",
            torch.nn.functional.normalize(data.source.double(), dim=-1),
            torch.nn.functional.normalize(data.target.double(), dim=-1),
        )
    }
    if source_xy is not None and target_xy is not None:
        costs["coordinates_accuracy"] = torch.cdist(source_xy.double(), target_xy.double()) ** 2
    return {
        name: matching_accuracy(assign(cost.flatten(1)), data.y) for name, cost in costs.items()
    }
