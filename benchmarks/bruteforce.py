"""Forward time of the built-in ``bruteforce`` backend per batch (binary box, n = 16).

python benchmarks/bruteforce.py [--repeats 200] [--threads 2]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import ilplayer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    n = 16
    solver = ilplayer.get_solver("bruteforce")
    print(
        f"torch {torch.__version__}, {args.threads} thread(s), n = {n} binary "
        f"({2**n} points), median / p90 ms per batch over {args.repeats} calls"
    )
    print(f"{'B':>4} {'m':>3} {'A':>12} | {'ms (median/p90)':>18}")
    for B in (8, 256):
        for m in (2, 8):
            for shared in (True, False):
                A, b = ilplayer.StaticConstraints(m, n, seed=0)()
                A, b = A.detach(), b.detach()
                if not shared:
                    A, b = A.expand(B, m, n).contiguous(), b.expand(B, m).contiguous()
                c = torch.rand(B, n) - 0.5
                for _ in range(5):
                    ilplayer.solve(c, A, b, solver=solver)
                samples = []
                for _ in range(args.repeats):
                    start = time.perf_counter()
                    ilplayer.solve(c, A, b, solver=solver)
                    samples.append((time.perf_counter() - start) * 1e3)
                samples.sort()
                kind = "shared" if shared else "per-instance"
                print(
                    f"{B:>4} {m:>3} {kind:>12} | {statistics.median(samples):>8.2f} / "
                    f"{samples[int(0.9 * len(samples))]:<8.2f}"
                )


if __name__ == "__main__":
    main()
