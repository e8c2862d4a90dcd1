"""Knapsack from sentence descriptions (paper, "Knapsack from Sentence Description").

An instance is 10 items, each described by one sentence that states its price (10-45) and its
weight (15-35) in one of several wordings; the label is the best selection under capacity 100:
``max p·y s.t. w·y <= 100, y in {0, 1}^10``. Sentences are embedded by an offline sentence model
([SENTENCE_MODELS][ilplayer_experiments.sentences.SENTENCE_MODELS]; default MiniLM, 384-d;
the paper used 4 096-d InferSent).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import torch

from ilplayer.core.records import Status
from ilplayer.core.seeding import derive_seed
from ilplayer.layer import solve
from ilplayer.solvers.registry import preferred_backend
from ilplayer_experiments.cache import cached
from ilplayer_experiments.sentences import embed_sentences

__all__ = [
    "CAPACITY",
    "KnapsackData",
    "KnapsackNet",
    "capacity",
    "knapsack_ilploss_config",
    "make_dataset",
    "make_instances",
    "train_knapsack_ilploss",
    "training_solver",
]

ITEMS_PER_INSTANCE = 10
CAPACITY = 100
PRICE_RANGE = (10, 45)
WEIGHT_RANGE = (15, 35)
TEMPLATES = (
    "{item} costs {price} dollars and weighs {weight} kilograms.",
    "For {price} dollars you get {item}, which has a weight of {weight} kg.",
    "{item}: weight {weight} kg, price ${price}.",
    "This {item} weighs {weight} kilos and sells for {price} dollars.",
    "You can buy {item} at a price of {price} dollars; it weighs {weight} kg.",
    "Weighing {weight} kilograms, {item} is priced at {price} dollars.",
    "{item} ({weight} kg) is available for {price} dollars.",
    "A price of {price} dollars buys {item} of {weight} kilograms.",
)
ITEMS = (
    "a lamp",
    "a backpack",
    "a tent",
    "a camera",
    "a kettle",
    "a drill",
    "a guitar",
    "a bicycle",
    "a telescope",
    "a chair",
    "a rug",
    "a printer",
    "a speaker",
    "a blender",
    "a mirror",
    "a suitcase",
    "a heater",
    "a monitor",
    "a toolbox",
    "a vase",
)


@dataclass(frozen=True)
class KnapsackData:
    """Sentences, the numbers they state, and the optimal selections (float64 tensors)."""

    sentences: list[list[str]]
    prices: torch.Tensor
    weights: torch.Tensor
    y: torch.Tensor

    def to_dict(self) -> dict[str, Any]:
        return {field.name: getattr(self, field.name) for field in fields(self)}


def _sentence(template: str, item: str, price: int, weight: int) -> str:
    text = template.format(item=item, price=price, weight=weight).replace("This a ", "This ")
    return text[0].upper() + text[1:]


def capacity(items: int) -> float:
    """The knapsack's capacity for ``items`` items: the paper's 100 for 10, in proportion
    beyond (10 per item), so that the share of the items that fits stays about the same."""
    return CAPACITY * items / ITEMS_PER_INSTANCE


def exact_solver(items: int) -> str:
    """The backend that labels knapsacks of ``items`` items: bruteforce up to 16 (65,536
    selections), HiGHS beyond."""
    return "bruteforce" if items <= 16 else "highs"


def training_solver(items: int, rows: int = 1) -> str:
    """The backend that solves the network's knapsacks of ``items`` items and ``rows`` weight
    rows while training and scoring: bruteforce up to 16 items; beyond, the built-in
    ``knapsack`` backend for one row (meet in the middle) and the preferred MIP backend for more.
    The untrained network's items weigh nearly the same, and on such knapsacks the MIP backends
    branch deep (``python benchmarks/knapsack_epoch.py``)."""
    if items <= 16:
        return "bruteforce"
    return "knapsack" if rows == 1 else preferred_backend(2**items)


def make_instances(
    count: int, seed: int, solver: str | None = None, items: int = ITEMS_PER_INSTANCE
) -> KnapsackData:
    """``count`` instances of ``items`` items: random prices and weights, one sentence per item,
    optimal labels (by ``solver``; default bruteforce up to 16 items, else highs)."""
    if isinstance(items, bool) or not isinstance(items, int) or items < 1:
        raise ValueError(f"items must be a positive integer, got {items!r}")
    solver = solver or exact_solver(items)
    rng = np.random.default_rng([seed, 7] if items == ITEMS_PER_INSTANCE else [seed, 7, items])
    shape = (count, items)
    prices = rng.integers(PRICE_RANGE[0], PRICE_RANGE[1] + 1, shape)
    weights = rng.integers(WEIGHT_RANGE[0], WEIGHT_RANGE[1] + 1, shape)
    templates = rng.integers(len(TEMPLATES), size=shape)
    names = rng.integers(len(ITEMS), size=shape)
    sentences = [
        [_sentence(TEMPLATES[t], ITEMS[i], p, w) for t, i, p, w in zip(t_row, i_row, p_row, w_row)]
        for t_row, i_row, p_row, w_row in zip(templates, names, prices, weights)
    ]
    p = torch.tensor(prices, dtype=torch.float64)
    w = torch.tensor(weights, dtype=torch.float64)
    y, status = solve(
        -p,
        w[:, None, :],
        torch.full((count, 1), capacity(items), dtype=torch.float64),
        0,
        1,
        solver=solver,
    )
    if not (status == Status.OPTIMAL).all():
        raise RuntimeError("knapsack labels left unsolved; check the solver")
    return KnapsackData(sentences, p, w, y)


def make_dataset(
    seed: int = 0,
    train_size: int = 4500,
    test_size: int = 500,
    cache: bool = False,
    items: int = ITEMS_PER_INSTANCE,
) -> tuple[KnapsackData, KnapsackData]:
    """Training and test instances (the paper's 4 500 / 500) of ``items`` items."""
    if cache:
        params: dict[str, Any] = dict(seed=seed, train=train_size, test=test_size)
        if items != ITEMS_PER_INSTANCE:
            params["items"] = items
        train, test = cached(
            "knapsack",
            params,
            lambda: tuple(
                part.to_dict() for part in make_dataset(seed, train_size, test_size, items=items)
            ),
        )
        return KnapsackData(**train), KnapsackData(**test)
    both = make_instances(train_size + test_size, seed, items=items)
    split = lambda rows: KnapsackData(
        [both.sentences[i] for i in rows], both.prices[rows], both.weights[rows], both.y[rows]
    )
    return split(range(train_size)), split(range(train_size, train_size + test_size))


def _standard_scale(flat: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each column's mean, and its spread times sqrt(columns) (1 for a constant column)."""
    spread = flat.std(0)
    spread = torch.where(spread > 1e-3 * spread.median(), spread, torch.ones_like(spread))
    return flat.mean(0), spread * flat.shape[-1] ** 0.5


class KnapsackNet(torch.nn.Module):
    """Sentence embedding of each item -> its price and weight (supplementary): a two-layer MLP
    (hidden 512, ReLU, sigmoid output) scaled to the true ranges, then by 0.01; the capacity is
    fixed to ``capacity`` * 0.01. Returns the ILP ``min c·y s.t. A y <= b``: ``c`` = -prices (unit
    length), ``A`` (B, rows, items) = weights, ``b`` (B, rows) = ``capacity`` * 0.01.
    ``hidden`` = 0 makes the readout linear (one layer, then the sigmoid).

    The embeddings first pass ``(x - shift) / scale`` (identity until
    [standardise][ilplayer_experiments.knapsack.KnapsackNet.standardise] sets them from the
    training embeddings); both are buffers, so a saved model keeps them.

    ``rows`` > 1 reads that many weight rows per item (each a knapsack row under the same
    capacity), as ILP-Loss' authors do for their knapsack (four rows for the one hidden
    constraint: a negative one row fails to cut, another may).

    ``output``: ``"ranges"`` (the paper: the sigmoid scaled to the true ranges) or ``"identity"``
    (the ILP-Loss authors' knapsack: the last layer's outputs are the price and the weights as
    they are, unbounded and of either sign, under a capacity of 1)."""

    OUTPUTS = ("ranges", "identity")
    shift: torch.Tensor
    scale: torch.Tensor

    def __init__(
        self,
        embed_dim: int = 384,
        hidden: int = 512,
        capacity: float = CAPACITY,
        rows: int = 1,
        output: str = "ranges",
    ) -> None:
        super().__init__()
        if output not in self.OUTPUTS:
            raise ValueError(f"output must be one of {self.OUTPUTS}, got {output!r}")
        if isinstance(hidden, bool) or not isinstance(hidden, int) or hidden < 0:
            raise ValueError(
                f"hidden must be a non-negative integer (0: a linear readout), got {hidden!r}"
            )
        self.capacity, self.rows, self.output = capacity, rows, output
        head = [torch.nn.Sigmoid()] if output == "ranges" else []
        body = [torch.nn.Linear(embed_dim, hidden), torch.nn.ReLU()] if hidden else []
        self.mlp = torch.nn.Sequential(*body, torch.nn.Linear(hidden or embed_dim, 1 + rows), *head)
        self.register_buffer("shift", torch.zeros(embed_dim))
        self.register_buffer("scale", torch.ones(embed_dim))

    @torch.no_grad()
    def standardise(self, embeddings: torch.Tensor) -> None:
        """Centre each input dimension on its mean over ``embeddings`` (..., embed_dim; the
        training set's) and divide it by its spread times sqrt(embed_dim), so that every
        dimension has the same spread and an input about unit length. Adam moves each weight by
        about the same step, so a dimension's share of a step follows its spread: raw, the few
        wide dimensions of a sentence vector drown the many narrow ones that carry the numbers.
        Dimensions constant over ``embeddings`` are only centred."""
        shift, scale = _standard_scale(
            embeddings.reshape(-1, embeddings.shape[-1]).to(self.shift.dtype)
        )
        self.shift.copy_(shift)
        self.scale.copy_(scale)

    def outputs(self, embeddings: torch.Tensor) -> torch.Tensor:
        """The network's raw outputs (..., 1 + rows) on the standardised embeddings."""
        return self.mlp((embeddings - self.shift) / self.scale)

    def forward(self, embeddings: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        out = self.outputs(embeddings)
        if self.output == "ranges":
            price = 0.01 * (PRICE_RANGE[0] + (PRICE_RANGE[1] - PRICE_RANGE[0]) * out[..., 0])
            weight = 0.01 * (WEIGHT_RANGE[0] + (WEIGHT_RANGE[1] - WEIGHT_RANGE[0]) * out[..., 1:])
            top = 0.01 * self.capacity
        else:
            price, weight, top = out[..., 0], out[..., 1:], 1.0
        c = -price / torch.linalg.vector_norm(price, dim=-1, keepdim=True).clamp_min(
            torch.finfo(price.dtype).tiny
        )
        b = torch.full((len(embeddings), self.rows), top, dtype=weight.dtype, device=weight.device)
        return c, weight.transpose(-1, -2), b


KNAPSACK_VALIDATION = (
    100  # ILP-Loss' split: 4 400 training and 100 validation instances of the 4 500
)


def train_knapsack(
    train: KnapsackData,
    test: KnapsackData,
    embed_train: torch.Tensor,
    embed_test: torch.Tensor,
    *,
    epochs: int = 100,
    lr: float = 5e-4,
    batch_size: int = 8,
    tau: float | None = 0.5,
    seed: int = 0,
    solver: str = "bruteforce",
    patience: int | None = None,
    on_epoch: Any = None,
    checkpoint: Any = None,
    hidden: int = 512,
    standardise: bool = False,
    schedule: str = "constant",
) -> tuple[KnapsackNet, list[dict[str, float]]]:
    """Learn prices and weights jointly from (sentences, optimal selection) pairs: CombOptNet
    gradients reach the cost and the constraint; MSE between selections shifted to [-0.5, 0.5].

    ``patience``: none (the paper: train ``epochs``, keep the last model), or the ILP-Loss
    authors' protocol: 100 training instances validate every epoch (the same split as
    `train_knapsack_ilploss`), the model of the best validation epoch is returned (its
    record is [selected_record][ilplayer.learning.selection.selected_record]'s), and training stops after
    ``patience`` epochs without a gain. ``checkpoint``: an
    [`EpochCheckpoint`][ilplayer.learning.checkpoint.EpochCheckpoint] to save every epoch to and resume from.
    ``hidden``: the network's hidden width (the paper's 512; 0: a linear readout);
    ``standardise``: standardise the inputs on the training embeddings first
    ([KnapsackNet.standardise][ilplayer_experiments.knapsack.KnapsackNet.standardise]);
    ``schedule``: the rate ``lr`` throughout (``"constant"``, the paper's) or decayed to 0 over the
    run's steps by a half cosine (``"cosine"``), so that the last epoch is not one of the swings
    a constant rate leaves (5-10 points from epoch to epoch at 10 items)."""
    from ilplayer.layer import ILPLayer
    from ilplayer.learning.loop import fit_epochs, keep_if_best
    from ilplayer.metrics import exact_match

    if patience is not None and (
        isinstance(patience, bool) or not isinstance(patience, int) or patience < 1
    ):
        raise ValueError(f"patience must be a positive integer or None, got {patience!r}")
    if schedule not in ("constant", "cosine"):
        raise ValueError(f"schedule must be 'constant' or 'cosine', got {schedule!r}")
    torch.manual_seed(derive_seed(seed, 1))
    model = KnapsackNet(embed_train.shape[-1], hidden=hidden, capacity=capacity(train.y.shape[1]))
    if standardise:
        model.standardise(embed_train)
    layer = ILPLayer(0, 1, solver=solver, tau=tau)
    kept, held = torch.arange(len(train.y)), None
    if patience is not None:
        order = torch.randperm(
            len(train.y), generator=torch.Generator().manual_seed(derive_seed(seed, 4))
        )
        held, kept = order[:KNAPSACK_VALIDATION], order[KNAPSACK_VALIDATION:]
    # saved with the checkpoint: the best model so far, and the steps taken (the cosine's position)
    best: dict[str, Any] = {"accuracy": -1.0, "epoch": 0, "state": None, "step": 0}
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    steps = epochs * math.ceil(len(kept) / batch_size)

    def batch_loss(rows: torch.Tensor) -> tuple[torch.Tensor, dict[str, int]]:
        if schedule == "cosine":
            optimizer.param_groups[0]["lr"] = (
                lr * 0.5 * (1 + math.cos(math.pi * best["step"] / steps))
            )
            best["step"] += 1
        rows = kept[rows]
        y = layer(*model(embed_train[rows]))
        return torch.nn.functional.mse_loss(y - 0.5, train.y[rows].to(y.dtype) - 0.5), {}

    def evaluate() -> dict[str, float]:
        scores = {"accuracy": exact_match(layer(*model(embed_test)).double(), test.y)}
        if held is not None:
            scores["validation_accuracy"] = exact_match(
                layer(*model(embed_train[held])).double(), train.y[held]
            )
        return scores

    def stop(record: dict[str, float]) -> bool:
        if held is None:
            return False
        keep_if_best(best, model, record["validation_accuracy"], epoch=record["epoch"])
        return record["epoch"] - best["epoch"] >= patience

    try:
        history = fit_epochs(
            len(kept),
            epochs=epochs,
            batch_size=batch_size,
            seed=seed,
            optimizer=optimizer,
            batch_loss=batch_loss,
            evaluate=evaluate,
            on_epoch=on_epoch,
            stop=stop,
            checkpoint=checkpoint,
            loop=best,
        )
    finally:
        layer.close()
    if best["state"] is not None:
        model.load_state_dict(best["state"])
    return model, history


def embedding_probe(
    seed: int = 0,
    train_size: int = 4500,
    test_size: int = 500,
    ridge: float = 1e-2,
    model: str = "minilm",
    items: int = ITEMS_PER_INSTANCE,
    standardise: bool = False,
) -> dict[str, float]:
    """How precisely the sentence embeddings state the numbers: a ridge-regression probe from
    each item's embedding to its true price and weight (supervision CombOptNet never gets),
    its held-out RMSE, and the exact-match accuracy of the knapsacks (of ``items`` items)
    solved with the probe's numbers, an estimate of what a readout of this embedding can reach.
    ``standardise``: the embeddings standardised first, as
    [KnapsackNet.standardise][ilplayer_experiments.knapsack.KnapsackNet.standardise] does
    (the ridge then weighs every dimension alike)."""
    train, test = make_dataset(
        seed=seed, train_size=train_size, test_size=test_size, cache=True, items=items
    )

    def embed(data: KnapsackData) -> torch.Tensor:
        vectors = embed_sentences([s for row in data.sentences for s in row], model=model)
        return torch.from_numpy(vectors).double()

    e_train, e_test = embed(train), embed(test)
    if standardise:
        shift, scale = _standard_scale(e_train)
        e_train, e_test = (e_train - shift) / scale, (e_test - shift) / scale
    x_train, x_test = (np.c_[e.numpy(), np.ones(len(e))] for e in (e_train, e_test))
    gram = x_train.T @ x_train + ridge * np.eye(x_train.shape[1])
    result: dict[str, float] = {}
    predicted = {}
    for name in ("prices", "weights"):
        truth = getattr(train, name).flatten().numpy()
        estimate = x_test @ np.linalg.solve(gram, x_train.T @ truth)
        held_out = getattr(test, name).flatten().numpy()
        result[f"{name}_rmse"] = float(np.sqrt(np.mean((estimate - held_out) ** 2)))
        predicted[name] = torch.from_numpy(estimate).reshape(len(test.y), -1)
    capacities = torch.full((len(test.y), 1), capacity(items), dtype=torch.float64)
    y, _ = solve(
        -predicted["prices"],
        predicted["weights"][:, None, :],
        capacities,
        0,
        1,
        solver=exact_solver(items),
    )
    result["exact_match_with_probe_numbers"] = float((y == test.y).all(dim=-1).double().mean())
    return result


def knapsack_ilploss_config(**overrides: Any) -> Any:
    """ILP-Loss' knapsack settings: as the authors' ``conf/knapsack/ilploss`` (four weight rows
    per item for the one hidden constraint, the batch's other selections as negatives, validation
    every 8 epochs, a rate rising for 4 epochs and falling for 4, the temperature cut after 4
    validations without a gain), but with batches of 10 and a peak rate of 1e-3 (theirs: 40 and
    5e-4, which after 48 epochs here scored 12.6 % held out against 23.4 %, docs/records/ilploss.md),
    10 random neighbours per size at every item count (theirs: as many as items, which at 20 items
    and 400 epochs scored 20.5 % against 19.5 %, within the restarts' spread) and at most
    400 epochs, stopped after 20 validations without a gain (theirs: 100 validations or 12 hours).
    The held-out accuracy was still rising at 100 epochs, the earlier limit: 400 took 10 items from
    28.1 to 42.7 %, 15 from 22.5 to 32.1 % (three restarts each). ``overrides`` change any of them."""
    from ilplayer.learning.settings import ILPLossConfig

    return ILPLossConfig(
        epochs=400,
        lr=1e-3,
        batch_size=10,
        cycle_epochs=4,
        validate_every=8,
        temperature_patience=4,
        stop_patience=20,
        samples_per_hop=10,
        k=4,
    ).replace(**overrides)


def train_knapsack_ilploss(
    train: KnapsackData,
    test: KnapsackData,
    embed_train: torch.Tensor,
    embed_test: torch.Tensor,
    *,
    seed: int = 0,
    solver: str = "bruteforce",
    config: Any = None,
    clip_norm: float | None = None,
    output: str = "ranges",
    on_epoch: Any = None,
    checkpoint: Any = None,
) -> tuple[KnapsackNet, list[dict[str, float]]]:
    """The same network as `train_knapsack` (prices and weights from the sentences) trained
    with ILP-Loss: each observed selection must satisfy its predicted weight row, and each nearby
    selection that is better under the predicted prices must break that row or become worse (the
    cost is learned, so it is one of the rows a negative can be cut by). Nothing is solved while
    training; 100 training instances validate (temperature, stop, the model kept), and the
    layer solves them and the test instances at each validation. ``clip_norm`` clips the gradients'
    norm (the authors clip to 0.01; at their settings it changed nothing measurable here).
    ``output``: the network's last layer, [KnapsackNet][ilplayer_experiments.knapsack.KnapsackNet]'s.
    ``checkpoint``: an [`EpochCheckpoint`][ilplayer.learning.checkpoint.EpochCheckpoint] to save every
    epoch to and resume from."""
    from ilplayer.layer import ILPLayer
    from ilplayer.learning.ilploss import fit_ilploss
    from ilplayer.learning.ilploss_terms import ilp_loss_terms, sample_negatives
    from ilplayer.metrics import exact_match

    config = config or knapsack_ilploss_config()
    torch.manual_seed(derive_seed(seed, 1))
    model = KnapsackNet(
        embed_train.shape[-1], capacity=capacity(train.y.shape[1]), rows=config.k, output=output
    )
    order = torch.randperm(
        len(train.y), generator=torch.Generator().manual_seed(derive_seed(seed, 4))
    )
    held, kept = order[:KNAPSACK_VALIDATION], order[KNAPSACK_VALIDATION:]
    y_train = train.y.to(embed_train.dtype)
    n = train.y.shape[1]
    lo, hi = torch.zeros(n, dtype=embed_train.dtype), torch.ones(n, dtype=embed_train.dtype)
    layer = ILPLayer(0, 1, solver=solver)
    splits = {"validation": (embed_train[held], train.y[held]), "test": (embed_test, test.y)}

    def batch_terms(
        rows: torch.Tensor, temperature: float, g: torch.Generator
    ) -> dict[str, torch.Tensor]:
        rows = kept[rows]
        c, A, b = model(embed_train[rows])
        y = y_train[rows]
        with torch.no_grad():
            candidates = sample_negatives(
                y,
                A.detach(),
                b.detach(),
                lo,
                hi,
                config.hops,
                config.samples_per_hop,
                g,
                batch=True,
            )
        return ilp_loss_terms(
            A,
            b,
            c,
            y,
            candidates,
            lo,
            hi,
            temperature,
            config.margin_pos,
            config.margin_neg,
            learned_cost=True,
        )

    def accuracy(which: str) -> float:
        embeddings, y = splits[which]
        return exact_match(layer(*model(embeddings)).double(), y)

    try:
        history = fit_ilploss(
            model,
            len(kept),
            config,
            batch_terms,
            accuracy,
            seed=seed,
            box_width=1.0,
            on_epoch=on_epoch,
            clip_norm=clip_norm,
            checkpoint=checkpoint,
        )
    finally:
        layer.close()
    return model, history
