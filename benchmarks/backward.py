"""Backward-pass time per batch on CPU (issue: <= 0.5 ms for a batch of 8, n = 16).

Two figures per row: the bare math (``ilplayer.gradients.combopt_backward``) and the whole
autograd backward through ``ILPLayer`` (the math plus torch's autograd bookkeeping).
The solutions come from real forward passes with learned-constraint-like random data.

    python benchmarks/backward.py [--repeats 2000] [--threads 1]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import ilplayer
from ilplayer.gradients import combopt_backward


def timed(fn, repeats: int) -> tuple[float, float]:
    """Median and p90 wall time in ms over ``repeats`` calls (after warm-up)."""
    for _ in range(20):
        fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e3)
    samples.sort()
    return statistics.median(samples), samples[int(0.9 * len(samples))]


def bench(B: int, m: int, n: int, repeats: int) -> tuple[float, float, float, float]:
    constraints = ilplayer.StaticConstraints(m, n, lb=0, ub=1, seed=0)
    c = torch.rand(B, n) - 0.5
    c.requires_grad_()
    layer = ilplayer.ILPLayer(lb=0, ub=1, tau=0.5)
    A, b = constraints()
    y = layer(c, A, b)
    dy = (y.detach() - torch.randint(0, 2, y.shape).float()) * 2 / y.numel()
    lb, ub = torch.zeros(n), torch.ones(n)
    status = layer.last_status
    Ad, bd, yd = A.detach(), b.detach(), y.detach()
    math_ms = timed(lambda: combopt_backward(dy, Ad, bd, yd, status, lb, ub, tau=0.5), repeats)
    y = layer(c, A, b)
    full_ms = timed(
        lambda: torch.autograd.grad(y, [c, *constraints.parameters()], dy, retain_graph=True),
        repeats,
    )
    return (*math_ms, *full_ms)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(
        f"torch {torch.__version__}, {args.threads} thread(s), float32, CPU, "
        f"median / p90 over {args.repeats} calls"
    )
    print(
        f"{'B':>4} {'m':>3} {'n':>3} | {'math ms (median/p90)':>22} | {'autograd ms (median/p90)':>26}"
    )
    for B in (8, 256):
        for m in (1, 8):
            math_med, math_p90, full_med, full_p90 = bench(B, m, 16, args.repeats)
            print(
                f"{B:>4} {m:>3} {16:>3} | {math_med:>10.3f} / {math_p90:<9.3f} | "
                f"{full_med:>12.3f} / {full_p90:<11.3f}"
            )


if __name__ == "__main__":
    main()
