"""A reader for SPair-71k's own layout, for a user who has the data set on disk.

The paper's matching experiment runs on SPair-71k (Min et al., 2019), which cannot be fetched
here. Given its folder, as its archive unpacks::

    SPair-71k/JPEGImages/<category>/<image>.jpg
    SPair-71k/PairAnnotation/{trn,val,test}/<pair>:<category>.json   (src_imname, trg_imname,
        src_bndbox, trg_bndbox, src_kps, trg_kps, kps_ids, category)

``read_pairs`` lists a split's pairs and ``pair_descriptors`` turns them into matching data: each
image cropped to its object's box and resized (the paper's 256 x 256), the backbone's
descriptors at ``p`` of the pair's keypoints, the target's in a random order.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ilplayer.core.seeding import torch_generator
from ilplayer_experiments import vgg
from ilplayer_experiments.matching import MatchingData

__all__ = ["SPLITS", "SPairPair", "pair_descriptors", "read_pairs"]

SPLITS = {"train": "trn", "val": "val", "test": "test"}


@dataclass(frozen=True)
class SPairPair:
    """One annotated pair: the images' paths, their objects' boxes ``(x1, y1, x2, y2)`` and the
    matched keypoints (K, 2), row k of both showing keypoint ``kps_ids[k]``."""

    category: str
    source: Path
    target: Path
    source_box: tuple[float, ...]
    target_box: tuple[float, ...]
    source_kps: np.ndarray
    target_kps: np.ndarray
    kps_ids: tuple[str, ...]


def read_pairs(
    root: str | Path, split: str = "train", categories: tuple[str, ...] | None = None
) -> list[SPairPair]:
    """The pairs of ``split`` ("train", "val" or "test") under ``root`` (the SPair-71k folder),
    of ``categories`` only where given, in file-name order."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {sorted(SPLITS)}, got {split!r}")
    root = Path(root)
    folder = root / "PairAnnotation" / SPLITS[split]
    if not folder.is_dir():
        raise FileNotFoundError(
            f"{folder}: no such folder; root must be SPair-71k's folder "
            "(with JPEGImages/ and PairAnnotation/)"
        )
    pairs = []
    for path in sorted(folder.glob("*.json")):
        record = json.loads(path.read_text())
        try:
            category = record["category"]
            if categories is not None and category not in categories:
                continue
            source_kps = np.asarray(record["src_kps"], dtype=float).reshape(-1, 2)
            target_kps = np.asarray(record["trg_kps"], dtype=float).reshape(-1, 2)
            ids = tuple(str(i) for i in record["kps_ids"])
            pair = SPairPair(
                category,
                root / "JPEGImages" / category / record["src_imname"],
                root / "JPEGImages" / category / record["trg_imname"],
                tuple(float(v) for v in record["src_bndbox"]),
                tuple(float(v) for v in record["trg_bndbox"]),
                source_kps,
                target_kps,
                ids,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(
                f"{path}: not a SPair-71k pair annotation ({type(exc).__name__}: {exc})"
            ) from None
        if not len(source_kps) == len(target_kps) == len(ids):
            raise ValueError(
                f"{path}: {len(source_kps)} source and {len(target_kps)} target keypoints "
                f"for {len(ids)} ids"
            )
        pairs.append(pair)
    if not pairs:
        raise ValueError(
            f"{folder}: no pair annotation" + (f" of {list(categories)}" if categories else "")
        )
    return pairs


def _crop(
    path: Path, box: tuple[float, ...], points: np.ndarray, size: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The image's box resized to ``size`` x ``size`` (RGB in [0, 255], (3, S, S)) and the points
    in its pixels."""
    from PIL import Image

    x1, y1, x2, y2 = box
    with Image.open(path) as image:
        crop = image.convert("RGB").resize(
            (size, size), Image.Resampling.BILINEAR, box=(x1, y1, x2, y2)
        )
    pixels = torch.from_numpy(np.asarray(crop, dtype=np.float32).copy()).permute(2, 0, 1)
    scale = np.array([size / max(x2 - x1, 1e-9), size / max(y2 - y1, 1e-9)])
    return pixels, torch.from_numpy((points + 0.5 - np.array([x1, y1])) * scale).float()


def pair_descriptors(
    pairs: list[SPairPair], p: int, backbone: vgg.VGG16Features, *, size: int = 256, seed: int = 0
) -> MatchingData:
    """Matching data of the pairs with ``p`` keypoints or more: ``p`` of them drawn per pair, the
    backbone's descriptors on each image's box crop, the target's keypoints in a random order.
    An image in many pairs goes through the backbone once, at every keypoint it shows in them."""
    g = torch_generator(seed, 51)
    drawn = []  # (pair, its p keypoint rows, the target order)
    shown: dict[
        tuple[Path, tuple[float, ...]], set[tuple[float, float]]
    ] = {}  # (image, box) -> its points
    for pair in pairs:
        if len(pair.kps_ids) < p:
            continue
        chosen = torch.randperm(len(pair.kps_ids), generator=g)[:p].numpy()
        drawn.append(
            (pair, chosen, torch.randperm(p, generator=g))
        )  # target j shows source order[j]
        for image, box, points in (
            (pair.source, pair.source_box, pair.source_kps),
            (pair.target, pair.target_box, pair.target_kps),
        ):
            shown.setdefault((image, box), set()).update(
                (float(x), float(y)) for x, y in points[chosen]
            )
    if not drawn:
        raise ValueError(f"no pair has {p} keypoints or more")
    described: dict[tuple[Path, tuple[float, ...]], dict[tuple[float, float], torch.Tensor]] = {}
    for (image, box), at in shown.items():
        located = sorted(at)
        pixels, xy = _crop(image, box, np.array(located), size)
        described[image, box] = dict(
            zip(located, vgg.keypoint_descriptors(backbone, pixels[None], xy[None])[0])
        )
    source, target, labels = [], [], []
    for pair, chosen, order in drawn:
        of_source, of_target = (
            described[pair.source, pair.source_box],
            described[pair.target, pair.target_box],
        )
        source.append(
            torch.stack([of_source[float(x), float(y)] for x, y in pair.source_kps[chosen]])
        )
        target.append(
            torch.stack(
                [of_target[float(x), float(y)] for x, y in pair.target_kps[chosen][order.numpy()]]
            )
        )
        match = torch.zeros(p, p, dtype=torch.float64)
        match[order, torch.arange(p)] = 1.0
        labels.append(match.flatten())
    return MatchingData(torch.stack(source), torch.stack(target), torch.stack(labels))
