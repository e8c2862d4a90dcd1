"""What the experiments' subcommands do, given their parsed arguments (`ilplayer_experiments.cli`
adds them to ``ilplayer``): ``run_demo``, ``run_experiments``, ``run_bench``. Each returns the exit
status: 0 done, 1 a wrong answer found, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

__all__ = ["run_bench", "run_demo", "run_experiments"]


def run_demo(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from ilplayer.learning.loop import train_static_constraints
    from ilplayer.learning.settings import BackendConfig, TrainingConfig
    from ilplayer_experiments.paper import PAPER
    from ilplayer_experiments.random_constraints import make_dataset

    print(
        f"Random Constraints demo: learn {args.m} hidden constraints on {{0,1}}^{args.n} from "
        f"(cost, optimal solution) pairs; solver {args.solver!r}, seed {args.seed}"
    )
    start = time.perf_counter()
    data = make_dataset(
        num_variables=args.n,
        num_constraints=args.m,
        box="binary",
        seed=args.seed,
        solver=args.solver,
    )
    print(
        f"dataset: {len(data.c_train)} train / {len(data.c_test)} held-out instances "
        f"({time.perf_counter() - start:.1f} s)"
    )
    with tqdm(total=args.epochs, unit="epoch", dynamic_ncols=True) as bar:

        def report(record: dict[str, float]) -> None:
            bar.update(1)
            bar.set_postfix(
                loss=f"{record['loss']:.4f}", accuracy=f"{100 * record['accuracy']:.1f}%"
            )

        _, history = train_static_constraints(
            data,
            TrainingConfig(epochs=args.epochs, lr=args.lr),
            BackendConfig(solver=args.solver, executor=args.executor, workers=args.workers),
            seed=args.seed,
            on_epoch=report,
        )
    paper = PAPER[("rc", "binary")].get(args.m) if args.n == 16 else None
    baseline = 100 * data.box_baseline_accuracy
    print(
        f"held-out exact-match accuracy: CombOptNet {100 * history[-1]['accuracy']:.1f} %  |  "
        f"box-constrained baseline {baseline:.1f} %"
        + (f"  |  paper (mean of 10 seeds) {paper} %" if paper else "")
    )
    print(f"wall time {time.perf_counter() - start:.0f} s")
    if args.plot:
        try:
            from ilplayer_experiments.plots import plot_training
        except ImportError:  # pragma: no cover - matplotlib is the [demo] extra
            print("no plot: pip install 'ilplayer-experiments[demo]' for matplotlib")
            return 0
        references = {"box-constrained baseline": baseline}
        if paper:
            references["paper (mean of 10 seeds)"] = paper
        path = plot_training(
            history,
            args.plot,
            f"Random Constraints, binary, n={args.n}, m={args.m}, seed {args.seed}",
            references,
        )
        print(f"plot: {path}")
    return 0


def parse_int_list(text: str) -> list[int]:
    """``"3"``, ``"0-9"`` or ``"1,2,4,8"``."""
    values: list[int] = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        values.extend(range(int(low), int(high) + 1) if high else [int(low)])
    return values


def parse_ablation(items: list[str]) -> dict[str, object]:
    overrides: dict[str, object] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--ablation takes KEY=VALUE, got {item!r}")
        if key == "tau":
            overrides[key] = None if value in ("hard", "none") else float(value)
        elif key in (
            "lr",
            "backbone_lr",
            "blackbox_lambda",
            "temperature",
            "temperature_factor",
            "margin_pos",
            "margin_neg",
            "cycle_epochs",
            "time_limit",
            "test_time_limit",
            "lr_decay",
        ):
            overrides[key] = float(value)
        elif key in (
            "epochs",
            "batch_size",
            "k",
            "iterations",
            "validate_every",
            "stop_patience",
            "samples_per_hop",
            "temperature_patience",
            "hidden",
        ):
            overrides[key] = int(value)
        elif key == "standardise":
            if value.lower() not in ("true", "false"):
                raise SystemExit(f"--ablation standardise takes true or false, got {value!r}")
            overrides[key] = value.lower() == "true"
        else:
            overrides[key] = value
    return overrides


def _run_matching(args: argparse.Namespace) -> int:
    """``ilplayer experiment matching``: every p and seed, then the summary plot of real data."""
    from ilplayer_experiments.runner import run_matching

    for p in parse_int_list(args.p):
        for seed in parse_int_list(args.seeds):
            record = run_matching(
                p,
                seed,
                args.out,
                method=args.method,
                solver=args.solver,
                data=args.data,
                data_root=args.data_root,
                views=args.views,
                **{"epochs": args.epochs, **parse_ablation(args.ablation)},
            )
            beside = (
                f"zero-shot {100 * record['zero_shot_assignment_accuracy']:.1f} %"
                if "zero_shot_assignment_accuracy" in record
                else f"untrained backbone {100 * record['untrained_assignment_accuracy']:.1f} %"
            )
            print(
                f"matching {args.data} p={p} {args.method} seed {seed}: accuracy "
                f"{100 * record['accuracy']:.1f} %, permutations {100 * record['permutation_fraction']:.0f} % "
                f"({beside}) in {record['wall_time_s']:.0f} s",
                flush=True,
            )
    if args.data != "synthetic":
        _plot_matching(Path(args.out), args.data)
    return 0


def _plot_matching(out: Path, data: str) -> None:
    """``matching-DATA.png`` in ``out`` from every record of that data there (matplotlib: [demo])."""
    from ilplayer_experiments.plots import plot_matching

    records = [json.loads(path.read_text()) for path in sorted(out.glob(f"matching-{data}-*.json"))]
    try:
        print(
            f"wrote {plot_matching(records, out / f'matching-{data}.png', f'Keypoint matching, {data}')}"
        )
    except ImportError:
        print(
            "no summary plot: matplotlib is not installed (pip install 'ilplayer-experiments[demo]')"
        )


def run_experiments(args: argparse.Namespace) -> int:
    from ilplayer.learning.settings import BackendConfig
    from ilplayer_experiments.knapsack_runs import run_knapsack
    from ilplayer_experiments.runner import run_decision_focused, run_static_constraints

    if args.task in ("shortest-path", "knapsack-regret", "tsp"):
        methods = tuple(args.methods) if args.methods else None
        from ilplayer_experiments.decision_focused import METHODS, PYEPO_METHODS

        unknown = sorted(set(methods or ()) - set(METHODS))
        if unknown:
            raise SystemExit(f"--methods: unknown {unknown}; choose from {list(METHODS)}")
        run_decision_focused(
            args.task,
            args.out,
            methods=methods,
            solvers=tuple(args.solvers) if args.solvers else None,
            seeds=tuple(parse_int_list(args.seeds)),
            epochs=args.epochs,
            train_size=args.train_size,
            test_size=args.test_size,
            pyepo=not args.no_pyepo,
            resume=args.resume,
            executor=args.executor,
            workers=args.workers,
            pyepo_processes=args.pyepo_processes,
            pyepo_solvers=tuple(args.pyepo_solvers) if args.pyepo_solvers else None,
            report=lambda line: print(line, flush=True),
            pyepo_methods=tuple(m for m in methods if m in PYEPO_METHODS) if methods else None,
            task_options={
                key: getattr(args, key)
                for key in ("grid", "items", "dim", "nodes", "formulation")
                if hasattr(args, key)
            },
        )
        return 0
    if args.task == "knapsack":
        recipe = args.recipe or ("best" if args.method == "combopt" else "paper")
        if recipe == "best" and args.method != "combopt":
            raise SystemExit(
                f"--recipe best: CombOptNet's (--method combopt); {args.method} keeps its own settings"
            )
        for seed in parse_int_list(args.seeds):
            given: dict[str, Any] = {
                **({} if args.epochs is None else {"epochs": args.epochs}),
                **parse_ablation(args.ablation),
            }
            if args.patience is not None:
                if args.method != "combopt":
                    raise SystemExit(
                        f"--patience: CombOptNet's (--method combopt); {args.method} has its own stop"
                    )
                given["patience"] = args.patience
            record = run_knapsack(
                seed,
                args.out,
                method=args.method,
                resume=args.resume,
                items=args.items,
                sentence_model=args.sentence_model,
                recipe=recipe,
                solver=args.solver,
                **given,
            )
            paper, reported = record["paper_accuracy"], record.get("ilploss_reported")
            print(
                f"knapsack {args.items} items {args.method} restart {seed}: accuracy "
                f"{100 * record['accuracy']:.1f} %"
                + (f" (paper {paper} %)" if paper is not None else "")
                + (f" (ILP-Loss' authors: {reported} %)" if reported is not None else "")
                + f" in {record['wall_time_s']:.0f} s",
                flush=True,
            )
        return 0
    if args.task in ("nsp", "mkp", "knapsack-2s", "alloy"):
        return _run_two_stage(args)
    if args.task == "sudoku":
        from ilplayer_experiments.sudoku_runs import run_command

        return run_command(args, parse_int_list(args.seeds))
    if args.task == "matching":
        return _run_matching(args)

    box = getattr(args, "box", "binary")
    backend = BackendConfig(solver=args.solver, executor=args.executor, workers=args.workers)
    overrides = {
        **({} if args.epochs is None else {"epochs": args.epochs}),
        **parse_ablation(args.ablation),
    }
    for m in parse_int_list(args.m):
        for seed in parse_int_list(args.seeds):
            for restart in parse_int_list(args.restarts):
                record = run_static_constraints(
                    args.task,
                    m,
                    seed,
                    args.out,
                    box=box,
                    backend=backend,
                    method=args.method,
                    resume=args.resume,
                    restart=restart,
                    **overrides,
                )
                paper = record["paper_accuracy"]
                again = f" restart {restart}" if restart else ""
                print(
                    f"{args.task} {box} m={m} seed={seed}{again} {record['variant'] or ''}: accuracy "
                    f"{100 * record['accuracy']:.1f} % (box-constrained "
                    f"{100 * record['box_baseline_accuracy']:.1f} %"
                    + (f", paper {paper} %" if paper is not None else "")
                    + f") in {record['wall_time_s']:.0f} s with {record['solver'] or args.method}",
                    flush=True,
                )
    return 0


def run_bench(args: argparse.Namespace) -> int:
    from ilplayer_experiments import bench

    if args.bench == "scale":
        from ilplayer_experiments.bench.scale import SCALE_SIZES, plot_scale, scale_benchmark

        sizes: dict[str, tuple[int, ...]] = (
            {family: tuple(args.sizes) for family in args.families}
            if args.sizes
            else dict(SCALE_SIZES)
        )
        print(
            f"ilplayer bench scale on {args.backend}: one thread, each size in a fresh process",
            flush=True,
        )
        rows = scale_benchmark(
            tuple(args.families),
            args.backend,
            sizes,
            args.instances,
            report=lambda line: print(line, flush=True),
        )
        if args.plot and rows:
            plot_scale(rows, args.plot)
            print(f"wrote {args.plot}")
        if args.json:
            import json
            from pathlib import Path

            Path(args.json).write_text(json.dumps(rows, indent=1))
            print(f"wrote {args.json}")
        return 0
    if args.bench == "parallel":
        rows = bench.parallel_benchmark(
            args.solver,
            args.batch,
            args.workers,
            args.repeats,
            args.executors,
            tuple(args.families or bench.PARALLEL_FAMILIES),
            runs=args.runs,
        )
        _write_bench_rows(rows, args.json, args.plot)
        return 0
    torch_threads_note = "torch intra-op threads: 1 in the layer's backward (backward_threads)"
    print(f"ilplayer bench {args.bench}; one thread per solver; {torch_threads_note}", flush=True)
    backends = tuple(args.backends) if getattr(args, "backends", None) else bench.MIP_BACKENDS
    sized = {"n": args.n, "batch": args.batch} if hasattr(args, "n") else {}
    if getattr(args, "families", None):
        sized["families"] = tuple(args.families)
    rows = []
    if args.bench in ("solvers", "all"):
        rows += bench.solvers_benchmark(
            backends,
            reference=args.bench == "all" or args.reference,
            through_layer=getattr(args, "through_layer", False),
            **sized,
        )
    if args.bench in ("warm", "all"):
        warm = dict(sized)
        warm.setdefault("families", ("binary m=8", "dense m=8"))
        rows += bench.warm_benchmark(backends, **warm)
    if args.bench in ("reuse", "all"):
        reuse_backends = backends if getattr(args, "backends", None) else ("gurobi", "highs")
        family = args.families[0] if getattr(args, "families", None) else "dense m=4"
        rows += bench.reuse_benchmark(reuse_backends, family=family)
    if args.bench in ("backward", "all"):
        rows += bench.backward_benchmark()
    for kind in dict.fromkeys(row["benchmark"] for row in rows):
        print()
        bench.print_rows([row for row in rows if row["benchmark"] == kind])
    if (
        args.bench == "all"
    ):  # printed as it runs; Ray's start-up per family is left to bench parallel
        for name in bench.installed_backends(backends):
            print()
            rows += bench.parallel_benchmark(
                name, executors=("serial", "ideal", "threads", "processes")
            )
    _write_bench_rows(rows, args.json, args.plot)
    return 0


def _write_bench_rows(
    rows: list[dict[str, object]], json_path: str | None, plot_path: str | None
) -> None:
    """Print the speed targets the rows can check, then write the rows (targets included)."""
    import json
    from pathlib import Path

    from ilplayer_experiments import bench

    targets = bench.target_rows(rows)
    if targets:
        print("\nthe speed targets this run can check (docs/records/bench.md)")
        bench.print_rows(targets)
    rows = rows + targets
    if json_path:
        Path(json_path).write_text(json.dumps(rows, indent=1))
        print(f"wrote {json_path}")
    if plot_path and rows:
        print(f"wrote {bench.plot_rows(rows, plot_path)}")


def _run_two_stage(args: argparse.Namespace) -> int:
    """``ilplayer experiment nsp | mkp | knapsack-2s | alloy``."""
    report = lambda line: print(line, flush=True)
    if args.task == "knapsack-2s":
        from ilplayer_experiments.knapsack_two_stage import run_knapsack

        run_knapsack(
            args.out,
            methods=tuple(args.methods),
            capacities=tuple(args.capacities),
            sigmas=tuple(args.sigmas),
            runs=args.runs,
            train=args.train,
            test=args.test,
            solver=args.solver,
            model=args.sentence_model,
            epochs=args.epochs,
            report=report,
        )
        return 0
    if args.task == "alloy":
        from ilplayer_experiments.alloy import run_alloy

        run_alloy(
            args.out,
            methods=args.methods,
            factors=tuple(args.factors),
            runs=args.runs,
            train=args.train,
            test=args.test,
            solver=args.solver,
            integer=args.integer,
            model=args.sentence_model,
            epochs=args.epochs,
            report=report,
        )
        return 0
    epochs = {key: int(value) for key, value in (item.split("=", 1) for item in args.epochs)}
    trained = {"combopt", "post-hoc", "odece"} | ({"relaxed"} if args.task == "mkp" else set())
    unknown = sorted(set(epochs) - trained)
    if unknown:
        raise SystemExit(f"--epochs: {unknown}: only {', '.join(sorted(trained))} train for epochs")
    if args.task == "mkp":
        from ilplayer_experiments.knapsack_capacities import run_capacities
        from ilplayer_experiments.multi_knapsack import run_mkp, run_mkp_seeds

        options = dict(
            methods=tuple(args.methods),
            solver=args.solver,
            train=args.train,
            test=args.test,
            epochs=epochs,
            report=report,
        )
        if args.runs > 1:
            if args.predict == "capacities":
                raise SystemExit("--runs: only with --predict sizes")
            run_mkp_seeds(args.out, runs=args.runs, first_seed=args.seed, **options)
            return 0
        run = run_capacities if args.predict == "capacities" else run_mkp
        run(args.out, seed=args.seed, **options)
        return 0
    from ilplayer_experiments.nurse_scheduling import FACTORS
    from ilplayer_experiments.two_stage_runs import run_nsp

    run_nsp(
        args.out,
        methods=tuple(args.methods),
        factors=tuple(args.factors or FACTORS),
        draws=args.draws,
        setting=args.setting,
        solver=args.solver,
        epochs=epochs,
        train_size=args.train,
        test_size=args.test,
        data_dir=args.data,
        alphas=tuple(args.alphas),
        report=lambda line: print(line, flush=True),
    )
    return 0
