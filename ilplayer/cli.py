"""``ilplayer`` command line: ``solvers``, ``demo``, ``learn``, ``experiment``, ``report``,
``bench``, ``fuzz``."""

from __future__ import annotations

import argparse
import importlib.metadata
import sys
import time
from collections.abc import Sequence


def _distribution_version(name: str | None) -> str:
    if not name:
        return "-"
    try:
        return f"{name} {importlib.metadata.version(name)}"
    except importlib.metadata.PackageNotFoundError:
        return f"{name} (not installed)"


def solvers_table() -> list[list[str]]:
    """Rows of ``ilplayer solvers``: name, distribution, available, licence, capabilities."""
    from ilplayer.plugins import registered_specs

    rows = [["name", "distribution", "available", "licence", "capabilities"]]
    for name, spec in sorted(registered_specs().items()):
        available = spec.is_available()
        licence, capabilities = "-", "-"
        if available:
            cls = spec.load()
            try:
                licence = cls.license_status().value
            except Exception as exc:  # report, never crash the listing
                licence = f"error: {exc}"
            capabilities = ", ".join(sorted(cap.value for cap in cls.capabilities)) or "-"
        elif spec.missing_requirements():
            licence = f"missing {', '.join(spec.missing_requirements())}"
        rows.append([name, _distribution_version(spec.distribution), "yes" if available else "no",
                     licence, capabilities])
    return rows


def _print_table(rows: list[list[str]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for index, row in enumerate(rows):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
        if index == 0:
            print("  ".join("-" * width for width in widths))


def run_demo(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from ilplayer.experiments.random_constraints import make_dataset
    from ilplayer.experiments.runner import PAPER
    from ilplayer.training import BackendConfig, TrainingConfig, train_static_constraints

    print(f"Random Constraints demo: learn {args.m} hidden constraints on {{0,1}}^{args.n} from "
          f"(cost, optimal solution) pairs; solver {args.solver!r}, seed {args.seed}")
    start = time.perf_counter()
    data = make_dataset(num_variables=args.n, num_constraints=args.m, box="binary",
                        seed=args.seed, solver=args.solver)
    print(f"dataset: {len(data.c_train)} train / {len(data.c_test)} held-out instances "
          f"({time.perf_counter() - start:.1f} s)")
    with tqdm(total=args.epochs, unit="epoch", dynamic_ncols=True) as bar:
        def report(record: dict[str, float]) -> None:
            bar.update(1)
            bar.set_postfix(loss=f"{record['loss']:.4f}", accuracy=f"{100 * record['accuracy']:.1f}%")

        _, history = train_static_constraints(
            data, TrainingConfig(epochs=args.epochs, lr=args.lr),
            BackendConfig(solver=args.solver, executor=args.executor, workers=args.workers),
            seed=args.seed, on_epoch=report)
    paper = PAPER[("rc", "binary")].get(args.m) if args.n == 16 else None
    baseline = 100 * data.box_baseline_accuracy
    print(f"held-out exact-match accuracy: CombOptNet {100 * history[-1]['accuracy']:.1f} %  |  "
          f"box-constrained baseline {baseline:.1f} %"
          + (f"  |  paper (mean of 10 seeds) {paper} %" if paper else ""))
    print(f"wall time {time.perf_counter() - start:.0f} s")
    if args.plot:
        try:
            from ilplayer.experiments.plots import plot_training
        except ImportError:  # pragma: no cover - matplotlib is the [demo] extra
            print("no plot: pip install 'ilplayer[demo]' for matplotlib")
            return 0
        references = {"box-constrained baseline": baseline}
        if paper:
            references["paper (mean of 10 seeds)"] = paper
        path = plot_training(history, args.plot, f"Random Constraints, binary, n={args.n}, "
                             f"m={args.m}, seed {args.seed}", references)
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
        elif key in ("lr", "backbone_lr", "blackbox_lambda"):
            overrides[key] = float(value)
        elif key in ("epochs", "batch_size", "k", "iterations"):
            overrides[key] = int(value)
        else:
            overrides[key] = value
    return overrides


def run_experiments(args: argparse.Namespace) -> int:
    from ilplayer.experiments.runner import run_decision_focused, run_knapsack, run_static_constraints
    from ilplayer.training import BackendConfig

    if args.task in ("shortest-path", "knapsack-regret"):
        methods = tuple(args.methods) if args.methods else None
        from ilplayer.experiments.decision_focused import METHODS

        unknown = sorted(set(methods or ()) - set(METHODS))
        if unknown:
            raise SystemExit(f"--methods: unknown {unknown}; choose from {list(METHODS)}")
        run_decision_focused(args.task, args.out, methods=methods,
                             solvers=tuple(args.solvers) if args.solvers else None,
                             seeds=tuple(parse_int_list(args.seeds)), epochs=args.epochs,
                             train_size=args.train_size, test_size=args.test_size,
                             pyepo=not args.no_pyepo, resume=args.resume, executor=args.executor,
                             workers=args.workers, pyepo_processes=args.pyepo_processes,
                             report=lambda line: print(line, flush=True))
        return 0
    if args.task == "knapsack":
        for seed in parse_int_list(args.seeds):
            record = run_knapsack(seed, args.out, epochs=args.epochs, method=args.method,
                                  resume=args.resume)
            paper = record["paper_accuracy"]
            print(f"knapsack {args.method} restart {seed}: accuracy {100 * record['accuracy']:.1f} %"
                  + (f" (paper {paper} %)" if paper is not None else "")
                  + f" in {record['wall_time_s']:.0f} s", flush=True)
        return 0
    if args.task == "matching":
        from ilplayer.experiments.runner import run_matching

        for p in parse_int_list(args.p):
            for seed in parse_int_list(args.seeds):
                record = run_matching(p, seed, args.out, method=args.method, solver=args.solver,
                                      **{"epochs": args.epochs, **parse_ablation(args.ablation)})
                print(f"matching p={p} {args.method} seed {seed}: accuracy "
                      f"{100 * record['accuracy']:.1f} % (untrained backbone "
                      f"{100 * record['untrained_assignment_accuracy']:.1f} %) in "
                      f"{record['wall_time_s']:.0f} s", flush=True)
        return 0

    box = getattr(args, "box", "binary")
    backend = BackendConfig(solver=args.solver, executor=args.executor, workers=args.workers)
    overrides = {"epochs": args.epochs, **parse_ablation(args.ablation)}
    for m in parse_int_list(args.m):
        for seed in parse_int_list(args.seeds):
            for restart in parse_int_list(args.restarts):
                record = run_static_constraints(args.task, m, seed, args.out, box=box, backend=backend,
                                                method=args.method, resume=args.resume,
                                                restart=restart, **overrides)
                paper = record["paper_accuracy"]
                again = f" restart {restart}" if restart else ""
                print(f"{args.task} {box} m={m} seed={seed}{again} {record['variant'] or ''}: accuracy "
                      f"{100 * record['accuracy']:.1f} % (box-constrained "
                      f"{100 * record['box_baseline_accuracy']:.1f} %"
                      + (f", paper {paper} %" if paper is not None else "")
                      + f") in {record['wall_time_s']:.0f} s with {record['solver'] or args.method}", flush=True)
    return 0


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _solver_name(text: str) -> str:
    """Resolve a backend name now, so that a typo fails before any work starts."""
    from ilplayer.plugins import resolve_solver_name

    try:
        resolve_solver_name(text)
    except (ValueError, LookupError) as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _json_object(text: str) -> dict:
    """A JSON object given on the command line (keyword options for a backend)."""
    import json

    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON ({exc}): {text}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"must be a JSON object such as '{{\"time_limit\": 10}}', got {text}")
    return value


def _family(text: str) -> str:
    """A benchmark instance family, checked before any benchmark starts."""
    from ilplayer.bench import check_family

    try:
        return check_family(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


EXECUTOR_CHOICES = ["auto", "serial", "threads", "processes", "ray"]


def default_fuzz_backends() -> list[str]:
    """Every available backend, and the Pyomo paths to HiGHS and Gurobi when Pyomo is there."""
    from ilplayer.plugins import available_solvers

    names = [name for name in available_solvers() if name != "pyomo"]
    if "pyomo" in available_solvers():
        names += ["pyomo:appsi_highs", "pyomo:highs", "pyomo:gurobi_persistent"]
    return names


def run_fuzz(args: argparse.Namespace) -> int:
    import json
    import warnings
    from pathlib import Path

    from ilplayer.fuzz import fuzz_backend, fuzz_cases_for, judge, load_reproducer, oracle, save_reproducer, solve_case
    from ilplayer.plugins import get_solver
    from ilplayer.types import Status

    options = args.solver_options
    if options is not None and len(args.solver or []) != 1 and not args.replay:
        print("fuzz: --solver-options needs exactly one --solver (the options are that backend's)")
        return 2
    if args.replay:
        try:
            backend, case, saved = load_reproducer(args.replay)
        except FileNotFoundError:
            print(f"fuzz --replay: {args.replay}: no such file", file=sys.stderr)
            return 2
        except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
            print(f"fuzz --replay: {args.replay} is not a reproducer written by ilplayer fuzz "
                  f"({type(exc).__name__}: {exc})", file=sys.stderr)
            return 2
        name = args.solver[0] if args.solver else backend
        options = saved if options is None and name == backend else options or {}
        try:
            solver = get_solver(name, **options)
        except (TypeError, ValueError) as exc:
            print(f"fuzz: {name} rejected the options {options}: {exc}")
            return 2
        try:
            y, status = solve_case(case, solver)
        finally:
            solver.close()
        reference = oracle(case)
        verdicts = judge(case, reference, y, status)
        shown = f" with {options}" if options else ""
        print(f"case {case.seed} ({', '.join(case.kinds)}) on {name}{shown}")
        print(f"  status  {Status.names(status)}\n  verdict {verdicts}")
        print(f"  oracle  strict {reference.strict.tolist()}  loose {reference.loose.tolist()}")
        return 1 if {"wrong-optimal", "false-infeasible"} & set(verdicts) else 0
    cases = fuzz_cases_for(args.instances, args.start)
    rows, failed = [], False
    for name in args.solver or default_fuzz_backends():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                solver = get_solver(name, **(options or {}))
        except Exception as exc:  # not installed, no licence: say so and go on
            if options is not None and isinstance(exc, (TypeError, ValueError)):
                print(f"fuzz: {name} rejected --solver-options {options}: {exc}")
                return 2
            print(f"{name}: skipped ({type(exc).__name__}: {exc})", flush=True)
            continue
        try:
            report = fuzz_backend(solver, cases)
        finally:
            solver.close()
        rows.append(report.row())
        for case, verdicts, y, status in report.failures:
            save_reproducer(args.out, name, case, verdicts, y, status, options)
        failed |= not report.correct
        print(f"{name}: {report.instances} instances, {report.count('wrong-optimal')} wrong optimal, "
              f"{report.count('false-infeasible')} false infeasible, "
              f"{100 * report.not_optimal_fraction:.2f} % not optimal on feasible ones "
              f"({report.seconds:.0f} s)", flush=True)
    header = list(rows[0]) if rows else []
    if rows:
        _print_table([header] + [[str(row[k]) for k in header] for row in rows])
    if any(row["wrong_optimal"] or row["false_infeasible"] or row["not_optimal"] or row["not_infeasible"]
           for row in rows):
        print(f"reproducers: {args.out}/ (replay one with: ilplayer fuzz --replay FILE)")
    if args.json:
        Path(args.json).write_text(json.dumps({"instances": args.instances, "start": args.start,
                                               "rows": rows}, indent=1))
        print(f"wrote {args.json}")
    return 1 if failed else 0


def _bounds(text: str) -> float | list[float]:
    """``"0"`` or ``"0,0,-5,..."`` (one per variable)."""
    try:
        values = [float(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number or a comma-separated list, got {text!r}") from None
    return values[0] if len(values) == 1 else values


def _which_model(epoch: int) -> str:
    return "the start, untrained" if epoch == 0 else f"model of epoch {epoch}"


def run_learn(args: argparse.Namespace) -> int:
    import json
    import warnings
    from pathlib import Path

    import numpy as np
    import torch

    from ilplayer.executors import default_workers
    from ilplayer.learn import LearnConfig, check_solutions, holdout_size, learn_constraints, load_solutions
    from ilplayer.training import BackendConfig

    try:
        c, y, lb, ub = load_solutions(args.train, args.lb, args.ub)
        train_rows = len(c)  # the rows after them in c_all, y_all are the test file's
        c_all, y_all = c, y  # every observation, in the files' order, for the checks below
        if args.test:
            c_test, y_test, lb_test, ub_test = load_solutions(args.test, lb, ub)
            if c_test.shape[1] != c.shape[1]:
                raise ValueError(f"{args.test}: {c_test.shape[1]} variables, but {args.train} has "
                                 f"{c.shape[1]}")
            c_all, y_all = np.vstack([c, c_test]), np.vstack([y, y_test])
        else:
            c_test = y_test = None  # type: ignore[assignment]  # learn_constraints holds pairs out
            if not 0 < args.test_fraction < 1:
                raise ValueError(f"--test-fraction must lie strictly between 0 and 1, got {args.test_fraction}")
            print(f"no --test file: holding out {holdout_size(len(c), args.test_fraction)} of {len(c)} "
                  f"observations (--test-fraction {args.test_fraction})")
        config = LearnConfig(epochs=args.epochs, lr=args.lr, batch_size=args.batch_size, tau=args.tau,
                             k=args.k, box_relative_steps=args.box_relative_steps, init=args.init)
    except (ValueError, FileNotFoundError) as exc:
        print(f"ilplayer learn: {exc}", file=sys.stderr)
        return 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_solutions(c_all, y_all, lb, ub, lambda i: f"{args.train} row {i}" if i < train_rows
                        else f"{args.test} row {i - train_rows}")
    for warning in caught:
        print(f"warning: {warning.message}", file=sys.stderr)
    held_out = len(c_test) if c_test is not None else holdout_size(len(c), args.test_fraction)
    print(f"learning {args.num_constraints * args.k} constraints on {c.shape[1]} variables from "
          f"{len(c) - (0 if c_test is not None else held_out)} observations ({held_out} held out)")
    result = learn_constraints(c, y, lb, ub, args.num_constraints, c_test=c_test, y_test=y_test,
                               test_fraction=args.test_fraction, config=config, seed=args.seed,
                               validation_fraction=args.validation_fraction,
                               restarts=args.restarts, test_every=args.test_every, polish=args.polish,
                               restart_workers=args.restart_workers or min(args.restarts, default_workers()),
                               backend=BackendConfig(args.solver, None, args.executor, args.workers))
    print(f"exact-match accuracy: train {100 * result.train_accuracy:.1f} %, held out "
          f"{100 * result.test_accuracy:.1f} % ({_which_model(result.settings['selected_epoch'])}; "
          f"{result.settings['solver']}, {result.wall_time_s:.0f} s)")
    polished = result.settings["polish"]
    if polished:
        print(f"polish: {polished['rows_before']} -> {polished['rows_after']} constraints, {polished['judged_on']} "
              f"accuracy {100 * polished['accuracy_before']:.1f} -> {100 * polished['accuracy_after']:.1f} %, "
              + ("kept" if polished["kept"] else "not kept: the trained constraints stay"))
        other = polished.get("other")
        if other:
            print(f"polish of {_which_model(other['epoch'])}: validation accuracy {100 * other['accuracy_before']:.1f}"
                  f" -> {100 * other['accuracy_after']:.1f} %, not taken")
    if args.json:
        record = {"train": str(args.train), "test": str(args.test) if args.test else None,
                  **result.record()}
        Path(args.json).write_text(json.dumps(record, indent=1))
        print(f"wrote {args.json}")
    if args.out:
        A, b = result.constraints()
        torch.save({"A": A, "b": b, "lb": result.settings["lb"], "ub": result.settings["ub"],
                    "state_dict": result.model.state_dict(), "settings": result.settings}, args.out)
        print(f"wrote {args.out} (A, b, the box and the model's state_dict)")
    return 0


def run_bench(args: argparse.Namespace) -> int:
    from ilplayer import bench

    if args.bench == "parallel":
        rows = bench.parallel_benchmark(args.solver, args.batch, args.workers, args.repeats, args.executors,
                                        tuple(args.families or bench.PARALLEL_FAMILIES))
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
        rows += bench.solvers_benchmark(backends, reference=args.bench == "all" or args.reference,
                                        through_layer=getattr(args, "through_layer", False), **sized)
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
    if args.bench == "all":  # printed as it runs; Ray's start-up per family is left to bench parallel
        for name in bench.installed_backends(backends):
            print()
            rows += bench.parallel_benchmark(name, executors=("serial", "ideal", "threads", "processes"))
    _write_bench_rows(rows, args.json, args.plot)
    return 0


def _write_bench_rows(rows: list[dict[str, object]], json_path: str | None, plot_path: str | None) -> None:
    """Print the speed targets the rows can check, then write the rows (targets included)."""
    import json
    from pathlib import Path

    from ilplayer import bench

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


def main(argv: Sequence[str] | None = None) -> int:
    from ilplayer import separation

    parser = argparse.ArgumentParser(prog="ilplayer", description="Differentiable ILP layers.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("solvers", help="list the registered solver backends")
    demo = commands.add_parser("demo", help="learn hidden constraints (Random Constraints, binary)")
    demo.add_argument("--m", type=_positive_int, default=2, help="number of hidden constraints (default 2)")
    demo.add_argument("--n", type=_positive_int, default=16, help="number of variables (default 16)")
    demo.add_argument("--epochs", type=_positive_int, default=100, help="training epochs (paper: 100)")
    demo.add_argument("--lr", type=float, default=5e-4, help="Adam learning rate (paper: 5e-4)")
    demo.add_argument("--seed", type=int, default=0, help="dataset and initialisation seed")
    demo.add_argument("--solver", type=_solver_name, default="bruteforce",
                      help="backend name (ilplayer solvers)")
    demo.add_argument("--executor", choices=EXECUTOR_CHOICES, default="auto")
    demo.add_argument("--workers", type=_positive_int, default=None,
                      help="parallel workers (default: all cores)")
    demo.add_argument("--plot", default="ilplayer-demo.png",
                      help="PNG of accuracy and loss per epoch ('' for none)")
    experiment = commands.add_parser("experiment", help="the paper's demonstrations").add_subparsers(
        dest="task", required=True)
    for task, help_text, m_default in (("rc", "Random Constraints (supplementary A)", "2"),
                                       ("wsc", "weighted set cover (m = universe size)", "4")):
        sub = experiment.add_parser(task, help=help_text)
        if task == "rc":
            sub.add_argument("--box", choices=["binary", "dense"], default="binary")
        sub.add_argument("--m", default=m_default, help="4, or a list such as 1,2,4,8")
        sub.add_argument("--seeds", default="0", help="dataset seeds: 3, 0-9 or 0,2,5")
        sub.add_argument("--restarts", default="0",
                         help="training restarts per dataset: 0 (one run, seeded by the dataset "
                              "seed) or 0-1 (the paper's appendix: two per dataset)")
        sub.add_argument("--solver", type=_solver_name, default=None,
                         help="default: bruteforce up to 2^16 points, else a MIP backend")
        sub.add_argument("--executor", choices=EXECUTOR_CHOICES, default="auto")
        sub.add_argument("--workers", type=_positive_int, default=None)
        sub.add_argument("--out", default="results", help="folder for the JSON records and PNGs")
        sub.add_argument("--epochs", type=int, default=100)
        sub.add_argument("--method", choices=["combopt", "mlp", "lp"], default="combopt",
                         help="CombOptNet, the MLP baseline (no solver) or the LP relaxation "
                              "through cvxpylayers ([baselines] extra)")
        sub.add_argument("--ablation", action="append", default=[], metavar="KEY=VALUE",
                         help="override a hyper-parameter: basis=canonical, tau=hard, tau=1, "
                              "origin=corner|center, loss=l1|huber|l0, k=2, lr=1e-3 (repeatable)")
        sub.add_argument("--resume", action="store_true",
                         help="skip runs whose record is already in --out (long protocols)")
    knap = experiment.add_parser("knapsack", help="knapsack from sentence descriptions ([text] extra)")
    knap.add_argument("--seeds", default="0", help="restarts: 3, 0-2 or 0,2,5")
    knap.add_argument("--out", default="results")
    knap.add_argument("--epochs", type=int, default=100)
    knap.add_argument("--resume", action="store_true", help="skip restarts already recorded in --out")
    knap.add_argument("--method", choices=["combopt", "mlp", "lp"], default="combopt",
                      help="CombOptNet, the MLP baseline or the LP relaxation with greedy rounding")
    for task, help_text in (("shortest-path", "learn edge costs, 5x5 grid (PyEPO data): regret"),
                            ("knapsack-regret", "learn item values, 32 items (PyEPO data): regret")):
        sub = experiment.add_parser(task, help=help_text)
        sub.add_argument("--methods", nargs="*", default=None,
                         help="2s spo+ pfyl dbb nid dpo combopt (default: all)")
        sub.add_argument("--solvers", nargs="*", type=_solver_name, default=None,
                         help="backends (default: every installed MIP backend)")
        sub.add_argument("--seeds", default="0", help="training seeds: 3, 0-2 or 0,2,5")
        sub.add_argument("--epochs", type=_positive_int, default=10)
        sub.add_argument("--train-size", type=_positive_int, default=1000)
        sub.add_argument("--test-size", type=_positive_int, default=1000)
        sub.add_argument("--no-pyepo", action="store_true", help="skip PyEPO's own baselines")
        sub.add_argument("--executor", choices=EXECUTOR_CHOICES, default="auto",
                         help="where ilplayer solves each batch (auto: threads for backends that "
                              "release the GIL)")
        sub.add_argument("--workers", type=_positive_int, default=None)
        sub.add_argument("--pyepo-processes", type=_positive_int, default=1,
                         help="PyEPO's own solver processes (its default: 1)")
        sub.add_argument("--resume", action="store_true", help="skip runs already recorded in --out")
        sub.add_argument("--out", default="results/dfl")
    match = experiment.add_parser("matching", help="keypoint-matching stand-in (n = p^2, m = 2p)")
    match.add_argument("--p", default="4", help="keypoints per image: 4, or a list such as 4,5")
    match.add_argument("--seeds", default="0", help="dataset seeds: 3, 0-2 or 0,2,5")
    match.add_argument("--method", choices=["combopt", "bbgm"], default="combopt",
                       help="CombOptNet with learned constraints, or BB-GM (assignment solver "
                            "with blackbox-differentiation gradients)")
    match.add_argument("--solver", default=None, help="CombOptNet backend (default: bruteforce "
                       "up to 2^16 points, else a MIP backend)")
    match.add_argument("--epochs", type=int, default=10)
    match.add_argument("--ablation", action="append", default=[], metavar="KEY=VALUE",
                       help="override a hyper-parameter: lr (constraints), backbone_lr, tau, "
                            "blackbox_lambda, iterations, batch_size (repeatable)")
    match.add_argument("--out", default="results")
    learn = commands.add_parser("learn", help="learn hidden constraints from your (cost, solution) pairs")
    learn.add_argument("train", help="observations: .npz with arrays c (N, n) and y (N, n) "
                       "(optionally lb, ub), or .csv with columns c0.., y0..")
    learn.add_argument("--test", default=None, help="held-out observations, same format")
    learn.add_argument("--test-fraction", type=float, default=0.2,
                       help="without --test: the share of TRAIN held out (default 0.2)")
    learn.add_argument("--lb", type=_bounds, default=None, help="lower bounds: 0 or 0,0,-5,...")
    learn.add_argument("--ub", type=_bounds, default=None, help="upper bounds: 1 or 1,1,5,...")
    learn.add_argument("--num-constraints", type=_positive_int, required=True,
                       help="constraints to learn (times --k)")
    learn.add_argument("--k", type=_positive_int, default=2,
                       help="learn k x num-constraints (default 2: steadier, see docs/learn.md; the paper: 1)")
    learn.add_argument("--validation-fraction", type=float, default=0.1,
                       help="share of TRAIN used to pick the best epoch (default 0.1; 0: keep the last)")
    learn.add_argument("--restarts", type=_positive_int, default=1,
                       help="train from this many initialisations and keep the best on the "
                            "validation split (default 1; the paper's appendix: 2)")
    learn.add_argument("--restart-workers", type=_positive_int, default=None,
                       help="restarts trained at once, in worker processes (default: one per core, "
                            "up to --restarts; 1: one after the other). The result is the same")
    learn.add_argument("--test-every", type=_positive_int, default=1,
                       help="measure the held-out accuracy on every Nth epoch and the last (default 1; "
                            "the model is the same, only the curve is sparser)")
    learn.add_argument("--epochs", type=_positive_int, default=100, help="(paper: 100)")
    learn.add_argument("--lr", type=float, default=5e-4, help="Adam learning rate (paper: 5e-4)")
    learn.add_argument("--batch-size", type=_positive_int, default=8, help="(paper: 8)")
    learn.add_argument("--tau", type=float, default=0.5, help="soft-min temperature (paper: 0.5)")
    learn.add_argument("--box-relative-steps", action=argparse.BooleanOptionalAction, default=False,
                       help="step the offsets and origins by lr x the box's width, as on [0, 1] "
                            "(the paper: off; no change on a binary box)")
    learn.add_argument("--init", choices=[*separation.INITS, "auto"], default="auto",
                       help="random: the paper's random hyperplanes; separating: hyperplanes that cut off "
                            "the box optima and keep every observed solution; auto (default): separating "
                            "where a variable takes more than two values, else random (docs/learn.md)")
    learn.add_argument("--polish", action=argparse.BooleanOptionalAction, default=True,
                       help="refit the trained constraints to what the observations prove and drop spare "
                            "rows, kept if the validation accuracy does not fall (default: on; the paper: off)")
    learn.add_argument("--seed", type=int, default=0, help="initialisation and shuffling seed")
    learn.add_argument("--solver", type=_solver_name, default=None,
                       help="backend (default: bruteforce for small boxes, else the preferred MIP backend)")
    learn.add_argument("--executor", choices=EXECUTOR_CHOICES, default="auto")
    learn.add_argument("--workers", type=_positive_int, default=None)
    learn.add_argument("--json", default=None, help="write the record (accuracies, settings, curves) here")
    learn.add_argument("--out", default=None, help="save the learned A, b and model here (torch.save)")
    report = commands.add_parser("report", help="a results folder -> a markdown report")
    report.add_argument("folder", nargs="?", default="results")
    report.add_argument("--out", default="docs/records/results.md")
    report.add_argument("--title", default="Results")
    bench = commands.add_parser("bench", help="benchmarks (ratios within one run)").add_subparsers(
        dest="bench", required=True)
    parallel = bench.add_parser("parallel", help="serial vs threads vs processes vs Ray throughput")
    parallel.add_argument("--solver", default=None, help="backend (default: the preferred MIP backend)")
    parallel.add_argument("--batch", type=_positive_int, default=256)
    parallel.add_argument("--workers", type=_positive_int, default=2)
    parallel.add_argument("--repeats", type=_positive_int, default=5)
    parallel.add_argument("--executors", nargs="*", default=["serial", "ideal", "threads", "processes", "ray"],
                          help="what to time, interleaved (default: all); ideal = the same tasks in bare "
                               "processes without a pool, the machine's ceiling")
    parallel.add_argument("--families", nargs="*", type=_family, default=None,
                          help="instance families (default: 'binary m=4' 'dense m=4' 'set cover')")
    parallel.add_argument("--json", default=None, help="write the rows as JSON here")
    parallel.add_argument("--plot", default=None, help="write a PNG of the speed-ups here ([demo] extra)")
    for name, help_text in (("solvers", "ms per instance of each backend, as a ratio to the first"),
                            ("warm", "warm starts on and off when training revisits its instances"),
                            ("reuse", "ilplayer.solve called repeatedly vs a reused ILPLayer"),
                            ("backward", "the backward beside a busy process, torch's threads vs one"),
                            ("all", "solvers, warm, reuse, backward, and parallel for each backend")):
        sub = bench.add_parser(name, help=help_text)
        if name in ("solvers", "warm", "reuse", "all"):
            sub.add_argument("--backends", nargs="*", type=_solver_name, default=None,
                             help="backends to compare (default: gurobi, cpsat, highs, scip where installed)")
        if name in ("solvers", "warm", "reuse", "all"):
            sub.add_argument("--families", nargs="*", type=_family, default=None,
                             help="instance families, e.g. 'dense m=8' 'binary m=8' 'set cover' knapsack")
        if name == "solvers":
            sub.add_argument("--reference", action="store_true",
                             help="add a row for the CombOptNet reference's way of solving: a fresh "
                                  "Gurobi model per instance, Gurobi's defaults (bench all adds it)")
            sub.add_argument("--through-layer", action="store_true",
                             help="time ilplayer's backends as a layer's forward calls them "
                                  "(validation and the core's box check included)")
        if name in ("solvers", "warm", "all"):
            sub.add_argument("--n", type=_positive_int, default=16, help="variables (default 16)")
            sub.add_argument("--batch", type=_positive_int, default=64, help="instances per batch (default 64)")
        sub.add_argument("--json", default=None, help="write the rows as JSON here")
        sub.add_argument("--plot", default=None, help="write a PNG of the ratios here ([demo] extra)")
    fuzz = commands.add_parser("fuzz", help="check backends against exhaustive enumeration")
    fuzz.add_argument("--solver", action="append", type=_solver_name, default=None,
                      help="backend to check (repeatable; default: every available backend and "
                           "the Pyomo paths to HiGHS and Gurobi)")
    fuzz.add_argument("--solver-options", type=_json_object, default=None,
                      help="keyword options for the one --solver checked, as a JSON object (what "
                           "solver_options takes), e.g. '{\"params\": {\"presolve\": \"on\"}}': check "
                           "native parameter overrides before training with them")
    fuzz.add_argument("--instances", type=_positive_int, default=10000,
                      help="instances per backend (default 10000)")
    fuzz.add_argument("--start", type=int, default=0, help="first case seed")
    fuzz.add_argument("--out", default="fuzz-failures", help="folder for reproducers (JSON)")
    fuzz.add_argument("--json", default=None, help="write the table as JSON here")
    fuzz.add_argument("--replay", default=None, help="solve a saved reproducer again")
    args = parser.parse_args(argv)
    if args.command == "fuzz":
        return run_fuzz(args)
    if args.command == "learn":
        return run_learn(args)
    if args.command == "solvers":
        _print_table(solvers_table())
        return 0
    if args.command == "report":
        from ilplayer.experiments.report import write_report

        print(f"wrote {write_report(args.folder, args.out, args.title)}")
        return 0
    if args.command == "experiment":
        return run_experiments(args)
    if args.command == "bench":
        return run_bench(args)
    return run_demo(args)


if __name__ == "__main__":
    sys.exit(main())
