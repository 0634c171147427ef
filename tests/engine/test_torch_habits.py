"""PyTorch habits and edge cases (issue 12): each case against torch where torch has an answer,
gradients with a random upstream gradient (never only through .sum()) and, where the function is
smooth there, central differences in float64. Deliberate differences are asserted as such and
listed in docs/differences-from-pytorch.md.
"""

from __future__ import annotations

import os
import stat
import warnings

import numpy as np
import pytest
from torch_compare import check_op, oracle

import engine
import engine.functional as F
from engine import nn, optim

# every case in this file runs with NumPy's RuntimeWarnings as errors: the engine's own
# computations (means, norms, log-probabilities) must never leak one
pytestmark = [pytest.mark.oracle, pytest.mark.filterwarnings("error::RuntimeWarning")]

INF = float("inf")
NAN = float("nan")


def TF():
    import torch.nn.functional as tf

    return tf


# ---------------------------------------------------------------- losses


def test_cross_entropy_with_minus_inf_non_target_logits_is_finite(torch):
    z = np.array([[0.0, -INF, 1.0, 0.5], [-INF, 2.0, -INF, 0.0], [0.3, 0.1, -0.2, -INF]])
    target = np.array([2, 1, 0])
    for reduction in ("mean", "sum", "none"):
        out, _ = oracle(
            lambda x: F.cross_entropy(x, target, reduction=reduction),
            lambda x: TF().cross_entropy(x, torch.tensor(target), reduction=reduction),
            [z],
        )
        assert np.all(np.isfinite(out.data))
    check_op(
        lambda x: F.cross_entropy(x, target, label_smoothing=0.0),
        lambda x: TF().cross_entropy(x, torch.tensor(target)),
        [z],
    )


def test_nll_loss_with_minus_inf_log_probabilities_elsewhere_is_finite(torch):
    log_p = np.array([[-0.1, -INF, -2.5], [-INF, -0.3, -1.0]])
    target = np.array([0, 2])
    out, _ = oracle(
        lambda x: F.nll_loss(x, target, reduction="none"),
        lambda x: TF().nll_loss(x, torch.tensor(target), reduction="none"),
        [log_p],
    )
    assert np.all(np.isfinite(out.data))


def test_cross_entropy_of_a_minus_inf_target_logit_is_inf_as_torch(torch):
    z = np.array([[0.0, -INF, 1.0]])
    e = F.cross_entropy(engine.tensor(z), np.array([1]))
    t = TF().cross_entropy(torch.tensor(z), torch.tensor([1]))
    assert e.item() == t.item() == INF


@pytest.mark.parametrize(
    "case", ["all ignored", "zero total weight", "empty batch", "empty probabilities", "nll all ignored"]
)
def test_mean_over_nothing_is_nan_as_torch(case, torch):
    rng = np.random.default_rng(0)
    z = rng.standard_normal((3, 4))
    if case == "all ignored":
        e_fn = lambda x: F.cross_entropy(x, np.full(3, -100))  # noqa: E731
        t_fn = lambda x: TF().cross_entropy(x, torch.full((3,), -100))  # noqa: E731
    elif case == "zero total weight":
        w = np.array([0.0, 0.0, 1.0, 1.0])
        e_fn = lambda x: F.cross_entropy(x, np.array([0, 1, 1]), weight=w)  # noqa: E731
        t_fn = lambda x: TF().cross_entropy(x, torch.tensor([0, 1, 1]), weight=torch.tensor(w))  # noqa: E731
    elif case == "empty batch":
        z = z[:0]
        e_fn = lambda x: F.cross_entropy(x, np.zeros(0, dtype=np.int64))  # noqa: E731
        t_fn = lambda x: TF().cross_entropy(x, torch.zeros(0, dtype=torch.long))  # noqa: E731
    elif case == "empty probabilities":
        z = z[:0]
        e_fn = lambda x: F.cross_entropy(x, np.zeros((0, 4)))  # noqa: E731
        t_fn = lambda x: TF().cross_entropy(x, torch.zeros(0, 4, dtype=torch.float64))  # noqa: E731
    else:
        e_fn = lambda x: F.nll_loss(x, np.full(3, -100))  # noqa: E731
        t_fn = lambda x: TF().nll_loss(x, torch.full((3,), -100))  # noqa: E731
    x_e = engine.tensor(z, requires_grad=True)
    x_t = torch.tensor(z, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        loss = e_fn(x_e)
        loss.backward()
    loss_t = t_fn(x_t)
    loss_t.backward()
    assert np.isnan(loss.item()) and np.isnan(loss_t.item())
    np.testing.assert_array_equal(x_e.grad.numpy(), x_t.grad.numpy())  # 0 where ignored, NaN where weight 0


def test_kl_div_default_reduction_is_torchs_mean(torch):
    log_q = np.log(np.array([[0.2, 0.8], [0.5, 0.5]]))
    p = np.array([[0.5, 0.5], [0.9, 0.1]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch warns that 'mean' is not the KL
        oracle(lambda x: F.kl_div(x, p), lambda x: TF().kl_div(x, torch.tensor(p)), [log_q])
    assert F.kl_div(engine.tensor(log_q), p).item() == pytest.approx(
        F.kl_div(engine.tensor(log_q), p, reduction="sum").item() / 4
    )


# ---------------------------------------------------------------- reductions


def test_std_gradient_is_zero_at_zero_variance(torch):
    for shape, dim in (((4,), None), ((2, 3), 1), ((2, 3), (0, 1))):
        x = np.ones(shape)
        oracle(lambda t: t.std(dim=dim), lambda t: t.std(dim=dim), [x])
    x = np.array([[1.0, 1.0, 1.0], [0.5, 2.0, -1.0]])  # one constant row, one not
    oracle(lambda t: t.std(dim=1), lambda t: t.std(dim=1), [x])
    check_op(
        lambda t: t.std(dim=0, correction=0),
        lambda t: t.std(dim=0, correction=0),
        [np.random.default_rng(1).standard_normal((4, 3))],
    )


@pytest.mark.parametrize("method", ["sum", "mean", "var", "std", "amax", "amin"])
def test_an_empty_dim_tuple_reduces_every_dim_as_torch(method, torch):
    x = np.random.default_rng(2).standard_normal((2, 3))
    e_fn = lambda t: getattr(t, method)(dim=())  # noqa: E731
    if method in ("var", "std"):
        # torch 2.13's var/std(dim=()) give the right value but an infinite gradient: compare with
        # var()/std() over every dim, and with central differences
        assert getattr(torch.tensor(x), method)(dim=()).item() == pytest.approx(
            getattr(torch.tensor(x), method)().item()
        )
        check_op(e_fn, lambda t: getattr(t, method)(), [x])
    else:
        oracle(e_fn, e_fn, [x])


def test_max_with_nan_shares_the_gradient_among_the_nans_as_torch(torch):
    x = np.array([1.0, NAN, 3.0, NAN])
    oracle(lambda t: t.max(), lambda t: t.max(), [x])
    oracle(lambda t: t.min(), lambda t: t.min(), [x])
    oracle(lambda t: t.amax(), lambda t: t.amax(), [x])  # amax: NaN gradient everywhere, as torch
    m = np.array([[1.0, NAN, 3.0], [4.0, 5.0, 6.0]])
    oracle(lambda t: t.max(dim=1).values, lambda t: t.max(dim=1).values, [m])
    assert engine.tensor(m).max(dim=1).indices.data.tolist() == [1, 2]


def test_relu_maximum_minimum_gradients_at_nan_as_torch(torch):
    x = np.array([1.0, NAN, -3.0, 0.0])
    oracle(lambda t: t.relu(), lambda t: t.relu(), [x])
    oracle(lambda t: F.relu(t), lambda t: TF().relu(t), [x])
    a = np.array([1.0, NAN, 2.0, NAN, 2.0, 5.0])
    b = np.array([NAN, 1.0, 2.0, NAN, 3.0, 4.0])
    oracle(lambda s, t: engine.maximum(s, t), lambda s, t: torch.maximum(s, t), [a, b])
    oracle(lambda s, t: engine.minimum(s, t), lambda s, t: torch.minimum(s, t), [a, b])


def test_flip_returns_a_copy(torch):
    x = engine.arange(3.0)
    y = x.flip(0)
    x[0] = 9.0
    x_t = torch.arange(3.0)
    y_t = x_t.flip(0)
    x_t[0] = 9.0
    assert y.data.tolist() == y_t.tolist() == [2.0, 1.0, 0.0]
    check_op(lambda t: t.flip((0, 1)), lambda t: t.flip((0, 1)), [np.arange(6.0).reshape(2, 3)])


def test_masked_fill_with_a_tensor_value_gets_its_gradient(torch):
    mask = np.array([[True, False, True], [False, False, True]])
    check_op(
        lambda x, v: x.masked_fill(mask, v.sum()),
        lambda x, v: x.masked_fill(torch.tensor(mask), v.sum()),
        [np.random.default_rng(3).standard_normal((2, 3)), np.array([0.5, 1.5])],
    )


# ---------------------------------------------------------------- empty sizes


def test_max_along_a_non_empty_dim_of_an_empty_tensor(torch):
    v, i = engine.zeros(0, 3).max(dim=1)
    v_t, i_t = torch.zeros(0, 3).max(dim=1)
    assert v.shape == tuple(v_t.shape) == (0,) and i.shape == (0,)
    with pytest.raises(IndexError):
        torch.zeros(0, 3).max(dim=0)
    for fn, op in (
        (lambda t: t.max(dim=0), "max"),
        (lambda t: t.amax(dim=0), "amax"),
        (lambda t: t.argmax(dim=0), "argmax"),
        (lambda t: t.min(dim=0), "min"),
    ):
        with pytest.raises(IndexError, match=f"{op}: Expected reduction dim 0 to have non-zero size"):
            fn(engine.zeros(0, 3))
    with pytest.raises(ValueError, match="max: the tensor is empty"):
        engine.zeros(0, 3).max()


@pytest.mark.parametrize("method", ["logsumexp", "log_softmax", "softmax"])
def test_reductions_over_an_empty_dim_as_torch(method, torch):
    for shape, dim in (((2, 0), 1), ((0, 3), 1), ((2, 0, 3), 1)):
        x = np.zeros(shape)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            oracle(lambda t: getattr(t, method)(dim), lambda t: getattr(t, method)(dim), [x])


def test_attention_with_no_keys_as_torch(torch):
    rng = np.random.default_rng(4)
    q, k, v = rng.standard_normal((2, 3, 4)), np.zeros((2, 0, 4)), np.zeros((2, 0, 5))
    oracle(
        lambda a, b, c: F.scaled_dot_product_attention(a, b, c),
        lambda a, b, c: TF().scaled_dot_product_attention(a, b, c),
        [q, k, v],
    )
    q0 = np.zeros((2, 0, 4))
    oracle(
        lambda a, b, c: F.scaled_dot_product_attention(a, b, c),
        lambda a, b, c: TF().scaled_dot_product_attention(a, b, c),
        [q0, rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 5))],
    )


# ---------------------------------------------------------------- implicit dims and defaults


@pytest.mark.parametrize("ndim", [1, 2, 3, 4])
def test_softmax_without_dim_follows_torch_and_warns(ndim, torch):
    x = np.random.default_rng(5).standard_normal((2, 3, 4, 5)[:ndim])
    for fn, t_fn in ((F.softmax, TF().softmax), (F.log_softmax, TF().log_softmax)):
        with pytest.warns(UserWarning, match="Implicit dimension choice"):
            t_out = t_fn(torch.tensor(x))
        with pytest.warns(UserWarning, match="Implicit dimension choice"):
            e_out = fn(engine.tensor(x))
        np.testing.assert_allclose(e_out.data, t_out.numpy(), rtol=1e-12)
    with pytest.warns(UserWarning, match="Implicit dimension choice"):
        out = nn.Softmax()(engine.tensor(x))
    np.testing.assert_allclose(out.data, torch.nn.Softmax(dim=0 if ndim in (1, 3) else 1)(torch.tensor(x)).numpy())


def test_scheduler_step_before_optimizer_step_warns_as_torch(torch):
    p = nn.Parameter(engine.zeros(1))
    opt = optim.SGD([p], lr=0.1)
    sched = optim.lr_scheduler.StepLR(opt, step_size=1)
    with pytest.warns(UserWarning, match=r"lr_scheduler.step\(\)` before `optimizer.step\(\)"):
        sched.step()
    p_t = torch.nn.Parameter(torch.zeros(1))
    opt_t = torch.optim.SGD([p_t], lr=0.1)
    sched_t = torch.optim.lr_scheduler.StepLR(opt_t, step_size=1)
    with pytest.warns(UserWarning, match=r"lr_scheduler.step\(\)` before `optimizer.step\(\)"):
        sched_t.step()
    opt2 = optim.SGD([p], lr=0.1)
    sched2 = optim.lr_scheduler.StepLR(opt2, step_size=1)
    p.grad = np.ones(1, dtype=np.float32)
    opt2.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched2.step()  # the right order: silent
        optim.lr_scheduler.schedule_values(lambda o: optim.lr_scheduler.StepLR(o, 2), 5)


def test_clip_grad_norm_with_a_nan_gradient_makes_every_gradient_nan(torch):
    grads = [np.array([1.0, NAN]), np.array([3.0, 4.0])]
    ours = [nn.Parameter(engine.tensor(np.zeros(2))) for _ in grads]
    theirs = [torch.nn.Parameter(torch.zeros(2, dtype=torch.float64)) for _ in grads]
    for p, q, g in zip(ours, theirs, grads):
        p.grad, q.grad = g.copy(), torch.tensor(g)
    kept = ours[1].grad.numpy()
    total = nn.utils.clip_grad_norm_(ours, 1.0)
    total_t = torch.nn.utils.clip_grad_norm_(theirs, 1.0)
    assert np.isnan(total.item()) and np.isnan(total_t.item())
    for p, q in zip(ours, theirs):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())
    assert kept is ours[1].grad.numpy()  # scaled in place, as torch


# ---------------------------------------------------------------- modules


def test_tied_parameters_keep_both_keys_in_the_state_dict(torch):
    def build(lib):
        class Tied(lib.nn.Module if lib is torch else nn.Module):
            def __init__(self):
                super().__init__()
                mod = lib.nn if lib is torch else nn
                self.emb = mod.Embedding(5, 3)
                self.head = mod.Linear(3, 5, bias=False)
                self.head.weight = self.emb.weight

        return Tied()

    ours, theirs = build(engine), build(torch)
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["emb.weight", "head.weight"]
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    checkpoint = {k: engine.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()}
    ours.load_state_dict(checkpoint)  # a torch checkpoint with both keys loads
    np.testing.assert_array_equal(ours.head.weight.data, theirs.head.weight.detach().numpy())
    shared = nn.Linear(2, 2)
    twice = nn.Sequential(shared, nn.ReLU(), shared)
    twice_t = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU())
    twice_t.append(twice_t[0])
    assert list(twice.state_dict()) == list(twice_t.state_dict())


def test_plain_lists_of_modules_are_not_registered_as_torch(torch):
    def build(lib):
        mod = torch.nn if lib is torch else nn

        class Net(mod.Module):
            def __init__(self):
                super().__init__()
                self.plain = [mod.Linear(2, 2)]
                self.plain_dict = {"a": mod.Linear(2, 2)}
                self.listed = mod.ModuleList([mod.Linear(2, 3), mod.Linear(3, 1)])
                self.named = mod.ModuleDict({"enc": mod.Linear(1, 2), "dec": mod.Linear(2, 1)})
                self.extra = mod.ParameterList([mod.Parameter(lib.zeros(2))])
                self.by_key = mod.ParameterDict({"bias": mod.Parameter(lib.zeros(1))})

        return Net()

    ours, theirs = build(engine), build(torch)
    names = [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_parameters()] == names
    assert not any(n.startswith("plain") for n in names)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()]
    assert len(ours.named) == 2 and "enc" in ours.named and isinstance(ours.named["dec"], nn.Linear)


# ---------------------------------------------------------------- NumPy interop and construction


def test_numpy_interop(torch):
    t = engine.tensor([1.0, 2.0])
    arr = np.asarray(t)
    assert arr.dtype == np.float32 and arr.tolist() == [1.0, 2.0]
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    assert np.array(t).tolist() == np.asarray(torch.tensor([1.0, 2.0])).tolist()
    both = engine.tensor([engine.tensor(1.0), engine.tensor(2.0)])
    both_t = torch.tensor([torch.tensor(1.0), torch.tensor(2.0)])
    assert both.dtype == np.float32 == both_t.numpy().dtype and both.data.tolist() == [1.0, 2.0]
    assert (np.float32(2.0) * t).data.tolist() == [2.0, 4.0]  # NumPy still defers to our operators


@pytest.mark.parametrize(
    "call, error, torch_call",
    [
        (lambda e: e.tensor("abc"), TypeError, lambda t: t.tensor("abc")),
        (lambda e: e.zeros(2, 3).sum(dim=1.5), TypeError, lambda t: t.zeros(2, 3).sum(dim=1.5)),
        (lambda e: e.zeros(2, 3).unsqueeze(1.0), TypeError, lambda t: t.zeros(2, 3).unsqueeze(1.0)),
        (lambda e: e.zeros(2, 3).flatten(5), IndexError, lambda t: t.zeros(2, 3).flatten(5)),
        (lambda e: e.zeros(2, 3).flatten(0, 7), IndexError, lambda t: t.zeros(2, 3).flatten(0, 7)),
        (lambda e: e.randn(2.5), TypeError, lambda t: t.randn(2.5)),
        (lambda e: e.zeros(2).reshape(2.0), TypeError, lambda t: t.zeros(2).reshape(2.0)),
    ],
)
def test_bad_arguments_raise_errors_that_name_the_op(call, error, torch_call, torch):
    with pytest.raises(Exception):
        torch_call(torch)
    with pytest.raises(error) as info:
        call(engine)
    op = str(info.value).split(":")[0]
    assert op in {"tensor", "sum", "unsqueeze", "flatten", "randn", "reshape"}, str(info.value)


def test_squeeze_of_a_tuple_of_dims_as_torch(torch):
    for shape, dims in (((1, 1, 3), (0, 1)), ((1, 2, 1), (0, 1)), ((2, 1, 1), (-1, -2)), ((1, 2), ())):
        e = engine.zeros(*shape).squeeze(dims)
        t = torch.zeros(*shape).squeeze(dims)
        assert e.shape == tuple(t.shape)
    check_op(lambda x: x.squeeze((0, 2)), lambda x: x.squeeze((0, 2)), [np.ones((1, 3, 1))])


# ---------------------------------------------------------------- checkpoints


def test_save_respects_the_umask_and_keeps_an_existing_files_mode(tmp_path, torch):
    old = os.umask(0o022)
    try:
        engine.save({"w": engine.ones(2)}, tmp_path / "new.npz")
        torch.save({"w": torch.ones(2)}, tmp_path / "new.pt")
        mode = stat.S_IMODE(os.stat(tmp_path / "new.npz").st_mode)
        assert mode == stat.S_IMODE(os.stat(tmp_path / "new.pt").st_mode) == 0o644
        os.chmod(tmp_path / "new.npz", 0o600)
        engine.save({"w": engine.zeros(2)}, tmp_path / "new.npz")
        assert stat.S_IMODE(os.stat(tmp_path / "new.npz").st_mode) == 0o600
    finally:
        os.umask(old)


def test_save_writes_through_a_symbolic_link(tmp_path):
    target = tmp_path / "real" / "model.npz"
    target.parent.mkdir()
    engine.save({"w": engine.zeros(2)}, target)
    link = tmp_path / "latest.npz"
    link.symlink_to(target)
    engine.save({"w": engine.ones(2)}, link)
    assert link.is_symlink()
    assert engine.load(target)["w"].data.tolist() == [1.0, 1.0]
    assert sorted(p.name for p in target.parent.iterdir()) == ["model.npz"]  # no temporary left


def test_save_into_a_missing_folder_names_the_users_path(tmp_path):
    path = tmp_path / "nope" / "model.npz"
    with pytest.raises(FileNotFoundError) as info:
        engine.save({"w": engine.zeros(1)}, path)
    assert str(path) in str(info.value) and ".engine-save-" not in str(info.value)


def test_loading_the_wrong_file_is_a_clear_error_that_never_mentions_pickle(tmp_path):
    np.save(tmp_path / "array.npy", np.zeros(3))
    (tmp_path / "notes.npz").write_text("hello")
    with open(tmp_path / "objects.npz", "wb") as f:  # a pickled object array under an .npz name
        np.save(f, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    np.savez(tmp_path / "plain.npz", x=np.zeros(2))
    for name, phrase in (
        ("array.npy", ".npy format"),
        ("notes.npz", "not a zip archive"),
        ("objects.npz", ".npy format"),
        ("plain.npz", "no engine structure record"),
    ):
        with pytest.raises(ValueError) as info:
            engine.load(tmp_path / name)
        message = str(info.value)
        assert phrase in message and "pickle" not in message.replace("a pickle,", ""), message
        assert "allow_pickle" not in message


# ---------------------------------------------------------------- no NumPy warnings from the engine


WARNING_CASES = {
    "mean of an empty tensor": lambda: engine.zeros(0).mean(),
    "mean over an empty dim": lambda: engine.zeros(2, 0).mean(dim=1),
    "std at zero variance (backward)": lambda: engine.ones(3, requires_grad=True).std().backward(),
    "std over dims at zero variance": lambda: engine.ones(2, 3, requires_grad=True).std(dim=1).sum().backward(),
    "cross-entropy with -inf": lambda: F.cross_entropy(
        engine.tensor([[0.0, -INF, 1.0]], requires_grad=True), np.array([2])
    ).backward(),
    "nll with -inf": lambda: F.nll_loss(engine.tensor([[-0.1, -INF]], requires_grad=True), np.array([0])).backward(),
    "cross-entropy all ignored": lambda: F.cross_entropy(
        engine.ones(2, 3, requires_grad=True), np.array([-100, -100])
    ).backward(),
    "amax with NaN": lambda: engine.tensor([1.0, NAN], requires_grad=True).amax().backward(),
    "max with NaN": lambda: engine.tensor([1.0, NAN], requires_grad=True).max().backward(),
    "logsumexp of -inf": lambda: engine.tensor([-INF, -INF], requires_grad=True).logsumexp(0),
    "logsumexp over an empty dim": lambda: engine.zeros(2, 0).logsumexp(1),
    "log_softmax over an empty dim": lambda: engine.zeros(2, 0).log_softmax(1),
    "sqrt at 0 (backward)": lambda: engine.zeros(2, requires_grad=True).sqrt().sum().backward(),
    "log of integers with 0": lambda: engine.arange(3).log2(),
    "attention with no keys": lambda: (
        F.scaled_dot_product_attention(
            engine.ones(1, 2, 4, requires_grad=True), engine.zeros(1, 0, 4), engine.zeros(1, 0, 4)
        )
        .sum()
        .backward()
    ),
    "clip_grad_norm_ with NaN": lambda: nn.utils.clip_grad_norm_([_with_grad(np.array([NAN, 1.0]))], 1.0),
}


def _with_grad(g):
    p = nn.Parameter(engine.tensor(np.zeros_like(g)))
    p.grad = g
    return p


@pytest.mark.parametrize("case", list(WARNING_CASES))
def test_no_numpy_runtime_warning_leaks(case):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        WARNING_CASES[case]()
