"""Real photographs for keypoint matching: dlib's faces with 68 labelled landmarks.

The photographs (PASCAL VOC images with the iBUG 68-point landmarks, in dlib's
``examples/faces``) come from Debian's ``dlib`` source package, fetched at first use into the
cache (``fetch_faces``); they are not in the repository, as they carry their own terms. A face is
cropped around its box and shown in random similarity warps (``views``): two views of one face
make a matching pair, ``p`` of its distinctive landmarks drawn per pair. Faces are split by
photograph, so no test face is seen in training.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import tarfile
import tempfile
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ilplayer.core.seeding import torch_generator
from ilplayer_experiments.cache import cache_dir

__all__ = [
    "DISTINCTIVE",
    "Face",
    "FaceViews",
    "fetch_faces",
    "read_faces",
    "split_by_photograph",
    "views",
]

# Twenty landmarks of the iBUG scheme that a person can point at (the jaw's ends and chin, the
# brows' ends, the eyes' corners, the nose's tip and wings, the mouth's corners and lips).
DISTINCTIVE = (0, 8, 16, 17, 21, 22, 26, 36, 39, 42, 45, 30, 31, 35, 48, 54, 51, 57, 4, 12)
LANDMARK_FILES = ("training_with_face_landmarks.xml", "testing_with_face_landmarks.xml")
SOURCE_PACKAGE = "dlib"
WARP: dict[str, Any] = {
    "max_rotation": 45.0,
    "scale": (0.8, 1.25),
    "shift": 0.15,
}  # views' defaults


@dataclass(frozen=True)
class Face:
    """One labelled face: its photograph (a file name), box ``(left, top, width, height)`` and
    the 68 landmarks (68, 2) in the photograph's pixels."""

    photo: str
    box: tuple[float, float, float, float]
    landmarks: np.ndarray


def faces_dir() -> Path:
    return cache_dir() / "faces"


def fetch_faces(folder: Path | None = None) -> Path:
    """dlib's ``examples/faces`` in ``folder`` (the cache's by default), fetched from Debian's
    source package on first use with ``apt-get source --download-only``, under a source list of
    its own derived from the machine's Debian sources (nothing of the system's is changed)."""
    folder = folder or faces_dir()
    if all((folder / name).exists() for name in LANDMARK_FILES):
        return folder
    if shutil.which("apt-get") is None:
        raise RuntimeError(
            "the faces come from Debian's dlib source package, and this machine has no apt-get; "
            f"put dlib's examples/faces folder (with {LANDMARK_FILES[0]}) at {folder}"
        )
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "lists" / "partial").mkdir(parents=True)
        (work / "cache" / "archives" / "partial").mkdir(parents=True)
        (work / "src.list").write_text(
            "".join(f"deb-src {uri} {suite} main\n" for uri, suite in _debian_suites())
        )
        options = [
            "-o",
            f"Dir::Etc::SourceList={work / 'src.list'}",
            "-o",
            "Dir::Etc::SourceParts=/nonexistent",
            "-o",
            f"Dir::State::Lists={work / 'lists'}",
            "-o",
            f"Dir::Cache={work / 'cache'}",
        ]
        for command in (["update"], ["source", "--download-only", SOURCE_PACKAGE]):
            done = subprocess.run(
                ["apt-get", "-q", *options, *command], cwd=work, capture_output=True, text=True
            )
            if done.returncode != 0:
                raise RuntimeError(
                    f"apt-get {' '.join(command)} failed: {done.stderr.strip()[-500:]}"
                )
        archives = sorted(
            path
            for path in work.glob(f"{SOURCE_PACKAGE}_*.orig.tar.*")
            if "models" not in path.name
        )
        if not archives:
            raise RuntimeError(
                f"apt-get source {SOURCE_PACKAGE} left no original archive in {work}"
            )
        _extract_faces(archives[0], folder)
    return folder


def _debian_suites() -> list[tuple[str, str]]:
    """(URI, suite) of the machine's Debian sources (deb822 or one-line), security ones aside:
    the source package is in the main archive."""
    found: list[tuple[str, str]] = []
    for path in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]:
        if not path.is_file():
            continue
        text = path.read_text(errors="replace")
        if path.suffix == ".sources":
            for stanza in text.split("\n\n"):
                fields = dict(
                    line.split(":", 1)
                    for line in stanza.splitlines()
                    if ":" in line and not line.lstrip().startswith("#")
                )
                uris, suites = fields.get("URIs", "").split(), fields.get("Suites", "").split()
                found += [(uri, suite) for uri in uris for suite in suites]
        elif path.suffix == ".list":
            for line in text.splitlines():
                words = line.split()
                if len(words) >= 3 and words[0] == "deb" and not words[1].startswith("["):
                    found.append((words[1], words[2]))
    main = [
        (uri, suite) for uri, suite in found if "debian" in uri and "security" not in uri + suite
    ]
    if not main:
        raise RuntimeError(
            "no Debian archive in /etc/apt/sources.list(.d): cannot fetch dlib's faces"
        )
    return main


def _extract_faces(archive: Path, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            parts = Path(member.name).parts
            if member.isfile() and parts[-3:-1] == ("examples", "faces"):
                source = tar.extractfile(member)
                assert source is not None  # a regular file
                (folder / parts[-1]).write_bytes(source.read())


def read_faces(folder: Path) -> list[Face]:
    """Every face with all 68 landmarks in dlib's landmark files of ``folder``."""
    faces: list[Face] = []
    for name in LANDMARK_FILES:
        path = folder / name
        if not path.exists():
            continue
        for image in ElementTree.parse(path).getroot().iter("image"):
            for box in image.iter("box"):
                parts = {
                    int(part.get("name", "-1")): (
                        float(part.get("x", "nan")),
                        float(part.get("y", "nan")),
                    )
                    for part in box.iter("part")
                }
                if sorted(parts) != list(range(68)):
                    continue
                faces.append(
                    Face(
                        image.get("file", ""),
                        tuple(
                            float(box.get(key, "0"))
                            for key in ("left", "top", "width", "height")  # type: ignore[arg-type]
                        ),
                        np.array([parts[i] for i in range(68)]),
                    )
                )
    if not faces:
        raise ValueError(f"{folder}: no face with 68 landmarks in {', '.join(LANDMARK_FILES)}")
    return faces


def split_by_photograph(
    faces: list[Face], test_share: float = 0.3
) -> tuple[list[Face], list[Face]]:
    """(train, test) faces, whole photographs to each side: the photographs in name order fill
    the test side until it holds ``test_share`` of the faces, taken from the end of the list."""
    photos = sorted({face.photo for face in faces})
    test_photos: set[str] = set()
    for photo in reversed(photos):
        if sum(face.photo in test_photos for face in faces) >= test_share * len(faces):
            break
        test_photos.add(photo)
    if len(test_photos) == len(photos):
        raise ValueError("every photograph went to the test side: too few photographs to split")
    return (
        [face for face in faces if face.photo not in test_photos],
        [face for face in faces if face.photo in test_photos],
    )


@dataclass(frozen=True)
class FaceViews:
    """Warped crops of faces: ``images`` (V, 3, S, S) in [0, 255] RGB, ``landmarks`` (V, 68, 2)
    in crop pixels, ``face`` (V,) the index of each view's face."""

    images: torch.Tensor
    landmarks: torch.Tensor
    face: torch.Tensor


def views(
    faces: list[Face],
    folder: Path,
    per_face: int,
    *,
    size: int = 160,
    seed: int = 0,
    max_rotation: float = WARP["max_rotation"],
    scale: tuple[float, float] = WARP["scale"],
    shift: float = WARP["shift"],
) -> FaceViews:
    """``per_face`` random similarity warps of each face's crop (its box widened to twice its
    size, centred on the landmarks), resampled to ``size`` x ``size``: a rotation of up to
    ``max_rotation`` degrees, a scale in ``scale`` and a shift of up to ``shift`` of the crop.
    Matching by position with squared distances ignores shifts and scales, so the rotation is
    what keeps geometry from answering alone."""
    from PIL import Image

    g = torch_generator(seed, 31)
    images, landmarks, owner = [], [], []
    photos: dict[str, torch.Tensor] = {}
    for index, face in enumerate(faces):
        if face.photo not in photos:
            with Image.open(folder / face.photo) as photo:
                photos[face.photo] = torch.from_numpy(
                    np.asarray(photo.convert("RGB"), dtype=np.float32).copy()
                )
        photo = photos[face.photo].permute(2, 0, 1)[None]  # (1, 3, H, W)
        height, width = photo.shape[-2:]
        centre = torch.as_tensor(face.landmarks.mean(axis=0), dtype=torch.float32)
        half = max(face.box[2], face.box[3])  # half the crop: twice the box
        for _ in range(per_face):
            angle = math.radians(max_rotation) * (2 * torch.rand((), generator=g).item() - 1)
            zoom = scale[0] + (scale[1] - scale[0]) * torch.rand((), generator=g).item()
            offset = shift * 2 * half * (2 * torch.rand(2, generator=g) - 1)
            # crop pixel u in [0, size) -> photo pixel: centre + offset + R (u - size/2) * (2 half / size) / zoom
            rotation = torch.tensor(
                [[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]]
            )
            step = 2 * half / size / zoom
            grid_u = (
                torch.stack(
                    torch.meshgrid(
                        torch.arange(size) + 0.5, torch.arange(size) + 0.5, indexing="xy"
                    ),
                    dim=-1,
                )
                - size / 2
            )
            photo_xy = centre + offset + step * grid_u @ rotation.T  # (S, S, 2)
            normalised = torch.stack(
                [2 * photo_xy[..., 0] / width - 1, 2 * photo_xy[..., 1] / height - 1], dim=-1
            )
            crop = torch.nn.functional.grid_sample(
                photo, normalised[None], mode="bilinear", padding_mode="border", align_corners=False
            )[0]
            points = torch.as_tensor(face.landmarks, dtype=torch.float32) + 0.5 - (centre + offset)
            images.append(crop.clamp(0, 255))
            landmarks.append(points @ rotation / step + size / 2)
            owner.append(index)
    return FaceViews(torch.stack(images), torch.stack(landmarks), torch.as_tensor(owner))
