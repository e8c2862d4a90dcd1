"""``ilplayer experiment knapsack``: one training run on the knapsack-from-text dataset, one
JSON record (`run_knapsack`), with the paper's recipe or the one that closes its gap offline."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import torch

from ilplayer.learning.checkpoint import EpochCheckpoint
from ilplayer.learning.selection import selected_record
from ilplayer_experiments.paper import ILPLOSS_KNAPSACK, deviations, paper_accuracy, papers_size
from ilplayer_experiments.runner import METHODS, load_record, run_name, save_record, versions

__all__ = ["KNAPSACK_DEFAULTS", "KNAPSACK_RECIPES", "run_knapsack"]

KNAPSACK_DEFAULTS = dict(
    epochs=100,
    lr=5e-4,
    batch_size=8,
    tau=0.5,
    patience=None,
    hidden=512,
    standardise=False,
    schedule="constant",
)
# recipe -> (sentence model, CombOptNet's settings): "paper", MiniLM for its InferSent; "best", what closes
# the gap to the paper's cell offline (docs/records/experiments.md). Names state the change from the paper's.
KNAPSACK_RECIPES: dict[str, tuple[str, dict[str, Any]]] = {
    "paper": ("minilm", {}),
    "best": ("minilm-layers", {"standardise": True, "schedule": "cosine"}),
}


def _knapsack_settings(
    method: str, recipe: str, sentence_model: str | None, overrides: dict[str, Any]
) -> tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]:
    """``run_knapsack``'s sentence model, hyper-parameters, variant (the change from the paper's
    settings) and overrides (with the recipe's)."""
    from ilplayer_experiments import knapsack, sentences

    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if recipe not in KNAPSACK_RECIPES:
        raise ValueError(f"recipe must be one of {sorted(KNAPSACK_RECIPES)}, got {recipe!r}")
    recipe_model, recipe_hyper = KNAPSACK_RECIPES[recipe]
    if recipe_hyper and method != "combopt":
        raise ValueError(
            f"recipe {recipe!r} is CombOptNet's (method 'combopt'); {method} keeps its own settings"
        )
    overrides = {**recipe_hyper, **overrides}
    sentence_model = sentence_model or recipe_model
    defaults: dict[str, Any] = KNAPSACK_DEFAULTS
    if method == "ilploss":
        defaults = knapsack.knapsack_ilploss_config().as_dict()
    unknown = set(overrides) - set(defaults)
    if unknown:
        raise ValueError(f"unknown hyper-parameter(s) {sorted(unknown)} for knapsack")
    hyper = {**defaults, **overrides}
    record_variant = {k: v for k, v in sorted(overrides.items()) if v != defaults[k]}
    if method in ("lp", "mlp"):  # the baselines train their own networks, without a solver
        if {"hidden", "standardise", "schedule"} & set(record_variant):
            raise ValueError(
                f"hidden, standardise and schedule set CombOptNet's training; {method} has its own"
            )
        for key in ("tau", "patience", "hidden", "standardise", "schedule"):
            hyper.pop(key)
    if sentence_model not in sentences.SENTENCE_MODELS:
        raise ValueError(
            f"sentence_model must be one of {sorted(sentences.SENTENCE_MODELS)}, got {sentence_model!r}"
        )
    return sentence_model, hyper, record_variant, overrides


def run_knapsack(
    seed: int,
    out_dir: str | Path,
    *,
    solver: str | None = None,
    plot: bool = True,
    train_size: int = 4500,
    test_size: int = 500,
    method: str = "combopt",
    resume: bool = False,
    items: int = 10,
    sentence_model: str | None = None,
    recipe: str = "paper",
    progress: bool = True,
    **overrides: Any,
) -> dict[str, Any]:
    """Train on the knapsack-from-text dataset (one restart per seed) with ``method``
    ("combopt", "ilploss", the "lp" relaxation with greedy rounding, or the "mlp") and write a
    record. ``items`` per instance (the paper's 10; the capacity in proportion,
    [capacity][ilplayer_experiments.knapsack.capacity]), the sentences embedded by
    ``sentence_model`` ([SENTENCE_MODELS][ilplayer_experiments.sentences.SENTENCE_MODELS]),
    default the ``recipe``'s: "paper" (the paper's settings, MiniLM for its InferSent) or, for
    CombOptNet, "best" (MiniLM's hidden states, the inputs standardised, a cosine rate;
    [KNAPSACK_RECIPES][ilplayer_experiments.knapsack_runs.KNAPSACK_RECIPES]); ``overrides`` win
    over the recipe's. ``solver``: default [training_solver][ilplayer_experiments.knapsack.training_solver]
    (bruteforce up to 16 items; beyond, ``knapsack`` for CombOptNet's one row, the preferred
    MIP backend for ILP-Loss' four)."""
    from tqdm import tqdm

    from ilplayer_experiments import knapsack, sentences

    sentence_model, hyper, record_variant, overrides = _knapsack_settings(
        method, recipe, sentence_model, overrides
    )
    rows = knapsack.knapsack_ilploss_config(**overrides).k if method == "ilploss" else 1
    solver = solver or knapsack.training_solver(items, rows)
    prefix = "knapsack" if method == "combopt" else f"knapsack-{method}"
    prefix += "" if items == 10 else f"-{items}items"
    prefix += "" if sentence_model == "minilm" else f"-{sentence_model}"
    name = run_name(prefix, {"seed": seed}, record_variant)
    if resume and (finished := load_record(out_dir, name)) is not None:
        return finished
    start = time.perf_counter()
    # One dataset (seed 0), as in the paper's restarts; the seed picks the restart.
    train, test = knapsack.make_dataset(
        seed=0, train_size=train_size, test_size=test_size, cache=True, items=items
    )

    def embed(data: Any) -> torch.Tensor:
        return sentences.embed_items(data.sentences, model=sentence_model, progress=progress)

    # Hours at 20 items and more: every epoch of the two trained methods saved, --resume goes on from it.
    checkpoint = EpochCheckpoint(Path(out_dir) / f"{name}.checkpoint.pt")
    if not resume:
        checkpoint.remove()
    resumed_at = checkpoint.epochs_done()
    embed_train, embed_test = embed(train), embed(test)
    bar = tqdm(
        total=hyper["epochs"],
        initial=resumed_at,
        desc=f"{method} seed {seed}",
        unit="epoch",
        disable=not progress,
        dynamic_ncols=True,
    )

    def on_epoch(record: dict[str, float]) -> None:
        bar.update(1)

    with bar:
        if method == "combopt":
            _, history = knapsack.train_knapsack(
                train,
                test,
                embed_train,
                embed_test,
                seed=seed,
                solver=solver,
                checkpoint=checkpoint,
                on_epoch=on_epoch,
                **hyper,
            )
        elif method == "ilploss":
            config = knapsack.knapsack_ilploss_config(**overrides)
            _, history = knapsack.train_knapsack_ilploss(
                train,
                test,
                embed_train,
                embed_test,
                seed=seed,
                solver=solver,
                config=config,
                checkpoint=checkpoint,
                on_epoch=on_epoch,
            )
        elif method == "lp":
            from ilplayer_experiments.lp_baseline import train_lp_knapsack

            _, history = train_lp_knapsack(
                train, test, embed_train, embed_test, seed=seed, on_epoch=on_epoch, **hyper
            )
            solver = "cvxpylayers"
        else:
            from ilplayer_experiments.baselines import train_knapsack_mlp

            _, history = train_knapsack_mlp(
                train, test, embed_train, embed_test, seed=seed, on_epoch=on_epoch, **hyper
            )
            solver = "none"
    checkpoint.remove()
    record = {
        "task": "knapsack",
        "method": method,
        "box": "binary",
        "m": 1,
        "n": items,
        "seed": seed,
        "sentence_model": sentences.SENTENCE_MODELS[sentence_model],
        "capacity": knapsack.capacity(items),
        "variant": record_variant,
        "hyperparameters": hyper,
        "solver": solver,
        "executor": None,
        "workers": None,
        # the model training returned: the best validation epoch's where there is one, else the last
        "accuracy": selected_record(history)["accuracy"],
        "box_baseline_accuracy": 0.0,
        "paper_accuracy": (
            paper_accuracy("knapsack", "binary", method, record_variant, 1)
            if papers_size("knapsack", items)
            else None
        ),
        "ilploss_reported": ILPLOSS_KNAPSACK.get(method, {}).get(items),
        "history": history,
        "wall_time_s": time.perf_counter() - start,
        "resumed_at_epoch": resumed_at,
        "versions": versions(solver),
        "deviations_from_paper": deviations(
            "knapsack", sentences.SENTENCE_MODEL_TITLES[sentences.SENTENCE_MODELS[sentence_model]]
        ),
    }
    references: dict[str, Any] = (
        {} if record["paper_accuracy"] is None else {"paper": record["paper_accuracy"]}
    )
    save_record(record, out_dir, name, references if plot else None)
    return record
