"""Outputs and gradients of every gradient method and every cost loss on fixed seeded cases,
written to a file, or two such files compared bit for bit: run it on an old commit (a git
worktree first on PYTHONPATH) and on the new one to show that a refactoring changed no number.

    git worktree add /tmp/old <commit> && PYTHONPATH=/tmp/old python scripts/equivalence.py write /tmp/old.pt
    python scripts/equivalence.py write /tmp/new.pt && python scripts/equivalence.py compare /tmp/old.pt /tmp/new.pt

Only the keyword form of ``ILPLayer`` and losses given a layer are used: both exist in every
release since the methods did.
"""

from __future__ import annotations

import argparse
import sys

import torch

import ilplayer
from ilplayer import losses

METHODS = {
    "combopt": {"tau": 0.5},
    "blackbox": {},
    "identity": {},
    "perturbed": {"sigma": 0.5, "samples": 4, "seed": 1},
    "imle": {"seed": 2},
    "aimle": {"seed": 3},
    "frank-wolfe": {},
}
LOSSES = {
    "spo+": lambda layer, pool: losses.SPOPlus(layer),
    "fy": lambda layer, pool: losses.FenchelYoung(layer, sigma=0.5, samples=4, seed=4),
    "pg": lambda layer, pool: losses.PerturbationGradient(layer, sigma=0.5),
    "nce": lambda layer, pool: losses.NCE(layer, pool=pool, solve_ratio=0.5, seed=5),
    "cmap": lambda layer, pool: losses.ContrastiveMAP(layer, pool=pool, seed=6),
    "ptltr": lambda layer, pool: losses.PointwiseLTR(layer, pool=pool, seed=7),
    "prltr": lambda layer, pool: losses.PairwiseLTR(layer, pool=pool, seed=8),
    "lsltr": lambda layer, pool: losses.ListwiseLTR(layer, pool=pool, seed=9),
    "rfy": lambda layer, pool: losses.RegularizedFenchelYoung(layer),
    "cave": lambda layer, pool: losses.CaVE(layer),
}
TAKES_Y = ("fy", "nce", "cmap", "rfy", "cave")


def cases(solver: str) -> dict[str, torch.Tensor]:
    """Every method's y and gradients, every loss's value and gradient, for ``solver``."""
    generator = torch.Generator().manual_seed(0)
    c = torch.randn(6, 8, generator=generator, dtype=torch.float64)
    A = torch.rand(3, 8, generator=generator, dtype=torch.float64)
    b = torch.full((3,), 2.5, dtype=torch.float64)
    weights = torch.randn(6, 8, generator=generator, dtype=torch.float64)
    out: dict[str, torch.Tensor] = {}
    for sense in ("min", "max"):
        for name, options in METHODS.items():
            x, A_, b_ = (
                c.clone().requires_grad_(),
                A.clone().requires_grad_(),
                b.clone().requires_grad_(),
            )
            with ilplayer.ILPLayer(
                0, 1, solver=solver, sense=sense, gradient=name, executor="serial", **options
            ) as layer:
                y = layer(x, A_, b_)
                grads = torch.autograd.grad((y * weights).sum(), (x, A_, b_), allow_unused=True)
            out[f"{sense} {name} y"] = y.detach()
            for label, grad in zip(("c", "A", "b"), grads):
                if grad is not None:
                    out[f"{sense} {name} d{label}"] = grad
        with ilplayer.ILPLayer(0, 1, solver=solver, sense=sense, executor="serial") as layer:
            c_true = torch.randn(6, 8, generator=generator, dtype=torch.float64)
            y_true, _ = (
                layer.oracle.solve_batch(c_true, A, b)
                if hasattr(layer, "oracle")
                else layer.solve_batch(c_true, A, b)
            )
            for name, make in LOSSES.items():
                pred = torch.randn(6, 8, generator=generator, dtype=torch.float64).requires_grad_()
                loss = make(layer, y_true.clone())(
                    pred, y_true if name in TAKES_Y else c_true, A, b
                )
                out[f"{sense} loss {name}"] = loss.detach()
                out[f"{sense} loss {name} grad"] = torch.autograd.grad(loss, pred)[0]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    write = commands.add_parser("write", help="compute the cases and save them")
    write.add_argument("out")
    write.add_argument("--solvers", nargs="*", default=["bruteforce", "highs"])
    compare = commands.add_parser("compare", help="compare two saved files bit for bit")
    compare.add_argument("first")
    compare.add_argument("second")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.command == "write":
        torch.save({solver: cases(solver) for solver in args.solvers}, args.out)
        return 0
    first, second = torch.load(args.first), torch.load(args.second)
    differ = [
        f"{solver}: {key}"
        for solver in first
        for key in first[solver]
        if key not in second.get(solver, {})
        or not torch.equal(first[solver][key], second[solver][key])
    ]
    total = sum(len(values) for values in first.values())
    print(f"{total - len(differ)} of {total} tensors bit-identical")
    for line in differ:
        print("  differs:", line)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
