"""The published figures the demonstrations are compared with: the CombOptNet paper's mean
accuracy per cell and its standard deviation (figures and supplementary tables), its
ablations, its keypoint-matching table, ILP-Loss' authors' knapsack results, and where a task
cannot follow the paper offline (`deviations`).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ILPLOSS_KNAPSACK",
    "PAPER",
    "PAPER_ABLATIONS",
    "PAPER_MATCHING",
    "PAPER_STD",
    "deviations",
    "paper_accuracy",
    "papers_size",
]

PAPER = {  # paper, Figs. "Random Constraints" and "Weighted Set Covering": mean accuracy (%)
    ("rc", "binary"): {1: 97.8, 2: 94.2, 4: 77.4, 8: 46.5},
    ("rc", "dense"): {1: 87.3, 2: 70.2, 4: 29.6, 8: 2.3},
    ("wsc", "binary"): {4: 100.0, 6: 97.2, 8: 79.7, 10: 56.7},
    ("knapsack", "binary"): {1: 64.7},  # one learned constraint
}
# Paper, supplementary tables (1 x m constraints, 20 runs): the standard deviation of each cell.
PAPER_STD = {
    ("rc", "binary"): {1: 0.7, 2: 10.1, 4: 13.5, 8: 12.4},
    ("rc", "dense"): {1: 2.5, 2: 11.6, 4: 10.4, 8: 1.2},
    ("wsc", "binary"): {4: 0.0, 6: 6.4, 8: 12.1, 10: 14.8},
    ("knapsack", "binary"): {1: 2.8},
}
# Paper, table "keypoint matching" (SPair-71k, per-variable accuracy): a different dataset from
# the offline stand-in; shown for orientation only.
PAPER_MATCHING = {
    "combopt": {4: 83.1, 5: 80.7, 6: 78.6, 7: 76.1},
    "bbgm": {4: 84.3, 5: 81.6, 6: 79.0, 7: 76.5},
}
# Supplementary ablation tables (2 restarts x 10 datasets): {(task, box, variant): {m: accuracy}}.
PAPER_ABLATIONS = {
    ("rc", "binary", "basis=canonical"): {1: 96.3, 2: 70.8, 4: 14.4, 8: 2.7},
    ("rc", "binary", "tau=None"): {2: 83.1, 4: 55.4, 8: 37.7},
    ("rc", "binary", "tau=1.0"): {2: 95.7, 4: 70.2, 8: 36.0},
    ("rc", "binary", "origin=corner"): {1: 97.4, 2: 94.9, 4: 59.0, 8: 26.9},
    ("rc", "binary", "origin=center"): {1: 98.0, 2: 97.1, 4: 70.5, 8: 44.6},
    ("rc", "binary", "k=2"): {1: 97.3, 2: 95.1, 4: 87.8, 8: 63.1},
    ("rc", "binary", "k=4"): {1: 96.9, 2: 95.1, 4: 88.7, 8: 77.7},
    ("rc", "dense", "basis=canonical"): {1: 88.6, 2: 71.6, 4: 26.8, 8: 4.0},
    ("rc", "dense", "tau=None"): {2: 70.8, 4: 21.4, 8: 2.2},
    ("rc", "dense", "tau=1.0"): {2: 73.0, 4: 31.9, 8: 2.2},
    ("rc", "dense", "origin=corner"): {1: 86.7, 2: 74.6, 4: 32.6, 8: 2.8},
    ("rc", "dense", "origin=center"): {1: 83.0, 2: 43.8, 4: 11.6, 8: 1.1},
    ("rc", "dense", "k=2"): {1: 87.8, 2: 73.4, 4: 32.7, 8: 2.4},
    ("rc", "dense", "k=4"): {1: 85.0, 2: 64.6, 4: 28.3, 8: 2.9},
    ("wsc", "binary", "basis=canonical"): {4: 8.4, 6: 2.0, 8: 0.2, 10: 0.0},
    ("wsc", "binary", "tau=None"): {4: 88.2, 6: 64.3, 8: 45.1, 10: 32.3},
    ("wsc", "binary", "tau=1.0"): {4: 99.9, 6: 95.6, 8: 70.3, 10: 51.2},
    ("wsc", "binary", "tau=2.0"): {4: 98.8, 6: 90.6, 8: 66.4, 10: 51.2},
    ("wsc", "binary", "tau=5.0"): {4: 97.5, 6: 90.2, 8: 64.2, 10: 49.7},
    ("wsc", "binary", "origin=corner"): {4: 99.4, 6: 94.1, 8: 78.5, 10: 47.7},
}


_MATCHING_DEVIATIONS = [
    "offline keypoint stand-in instead of SPair-71k images",
    "backbone: a small MLP trained from scratch at backbone_lr; the paper fine-tunes "
    "a pretrained VGG16 at 2.5e-6",
]


_SIZES = {"rc": 16, "knapsack": 10}  # variables of Random Constraints, items of the knapsack


def papers_size(task: str, n: int | None) -> bool:
    """Whether ``n`` (variables; the knapsack's items) is the paper's size for ``task``: the paper
    has no figure for other sizes. None (records before sizes were recorded) counts as the paper's."""
    return n is None or _SIZES.get(task, n) == n


_REAL_MATCHING_DEVIATIONS = {
    "faces": [
        "faces with 68 landmarks (dlib's PASCAL VOC photographs, pairs of two faces in random similarity "
        "warps) instead of SPair-71k",
        "the head sees each keypoint's crop position beside its descriptor",
    ],
    "spair": [],
}
_FROZEN_VGG = (
    "backbone: HED's VGG16 (ImageNet VGG16 fine-tuned for edges), frozen, with an MLP head trained at "
    "backbone_lr; the paper fine-tunes ImageNet VGG16 at 2.5e-6",
    "constraints' rate 5e-3 (the paper's 1e-4 moves them too little in 4 000 steps)",
)


def deviations(task: str, sentence_model: str = "", data: str = "synthetic") -> list[str]:
    """Where a run of ``task`` cannot follow the paper offline: every record of the task says so,
    and the report names it in the table's title instead of "paper's settings". The knapsack's
    names the ``sentence_model`` that embedded its sentences (a description); the matching's
    its ``data`` (synthetic, faces or spair)."""
    if task == "knapsack":
        return [f"sentences embedded by {sentence_model}; the paper used InferSent (4096-d)"]
    if task == "matching" and data != "synthetic":
        return [*_REAL_MATCHING_DEVIATIONS[data], *_FROZEN_VGG]
    return list(_MATCHING_DEVIATIONS) if task == "matching" else []


def paper_accuracy(
    task: str, box: str, method: str, variant: dict[str, Any], m: int
) -> float | None:
    """The paper's mean accuracy for this cell, or None where the paper gives no number (its
    MLP and CVXPY baselines appear only in figures)."""
    if task == "matching":
        return PAPER_MATCHING.get(method, {}).get(m // 2)
    if method != "combopt":
        return None
    shown = {k: v for k, v in variant.items() if k != "epochs"}
    if not shown:
        return PAPER.get((task, box), {}).get(m)
    if len(shown) == 1:
        ((key, value),) = shown.items()
        return PAPER_ABLATIONS.get((task, box, f"{key}={value}"), {}).get(m)
    return None


ILPLOSS_KNAPSACK = {
    "combopt": {10: 62.4, 15: 46.0, 20: 27.8},
    "ilploss": {10: 63.6, 15: 56.6, 20: 47.0, 25: 37.2, 30: 27.0},
}
"""ILP-Loss' internal knapsack results by item count, % exact (one seed each, its authors' notebooks)."""
