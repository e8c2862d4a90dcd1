"""The README's demo and ``ilplayer learn`` beside one busy core: the thread count the library
chooses against ``OMP_NUM_THREADS=1``, the setting that is never slowed by a neighbour.

A neighbour process keeps one core busy (a one-thread torch loop) for the whole run. Each
command runs as a fresh process, once with no thread setting in its environment (the library
chooses: `ilplayer.core.threads`) and once with ``OMP_NUM_THREADS=1``, alternating, ``--repeats``
times; printed are the median wall times and their ratio (chosen / one thread). ``--idle``
runs without the neighbour, for the other side of the trade.

    python benchmarks/busy_neighbour.py
    python benchmarks/busy_neighbour.py --idle --repeats 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NEIGHBOUR = (
    "import torch\ntorch.set_num_threads(1)\nx = torch.randn(256, 256)\n"
    "while True:\n    x = torch.tanh(x @ x / 256)\n"
)


def commands(folder: Path, epochs: int) -> dict[str, list[str]]:
    """The demo, and ``ilplayer learn`` on the demo's kind of data written to ``folder``."""
    from ilplayer_experiments.random_constraints import make_dataset

    data = make_dataset(
        num_variables=16, num_constraints=2, box="binary", seed=0, solver="bruteforce"
    )
    import numpy as np

    np.savez(folder / "observations.npz", c=data.c_train.numpy(), y=data.y_train.numpy())
    python = [sys.executable, "-m", "ilplayer"]
    return {
        "demo": [*python, "demo", "--epochs", str(epochs), "--plot", ""],
        "learn": [
            *python,
            "learn",
            str(folder / "observations.npz"),
            "--num-constraints",
            "2",
            "--lb",
            "0",
            "--ub",
            "1",
            "--epochs",
            str(epochs),
            "--method",
            "combopt",
            "--restarts",
            "1",
        ],
    }


def timed(command: list[str], one_thread: bool) -> float:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    if one_thread:
        env["OMP_NUM_THREADS"] = "1"
    began = time.perf_counter()
    subprocess.run(
        command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--idle", action="store_true", help="no neighbour")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        runs = commands(Path(folder), args.epochs)
        neighbour = None if args.idle else subprocess.Popen([sys.executable, "-c", NEIGHBOUR])
        try:
            print(
                f"{'idle machine' if args.idle else 'beside one busy core'}; {args.epochs} epochs; "
                f"median of {args.repeats} runs each, alternating",
                flush=True,
            )
            for name, command in runs.items():
                seconds: dict[bool, list[float]] = {False: [], True: []}
                for repeat in range(args.repeats):
                    for one_thread in (False, True) if repeat % 2 == 0 else (True, False):
                        seconds[one_thread].append(timed(command, one_thread))
                chosen, one = statistics.median(seconds[False]), statistics.median(seconds[True])
                print(
                    f"{name:6s} library's choice {chosen:6.1f} s   OMP_NUM_THREADS=1 {one:6.1f} s   "
                    f"ratio {chosen / one:.2f}",
                    flush=True,
                )
        finally:
            if neighbour is not None:
                neighbour.kill()
                neighbour.wait()


if __name__ == "__main__":
    main()
