"""engine.optim against torch.optim: 25 steps of every configuration on the same MLP, float64.

The gradients come from the engine's own autograd (compared with PyTorch's at every step), so a
test fails if either the backward pass or the update rule differs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from oracle import require_torch

import engine
import engine.functional as F
from engine import nn, optim

STEPS = 25
RTOL = 1e-6
ATOL = 1e-12

CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True)),
    ("SGD", dict(lr=0.1, weight_decay=0.05)),
    ("SGD", dict(lr=0.1, momentum=0.8, dampening=0.3, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.5, maximize=True)),
    ("RMSprop", dict()),
    ("RMSprop", dict(lr=0.005, momentum=0.9)),
    ("RMSprop", dict(lr=0.005, centered=True)),
    ("RMSprop", dict(lr=0.003, alpha=0.9, centered=True, momentum=0.5, weight_decay=0.01)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("Adam", dict(lr=0.02, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.01, amsgrad=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
]


def _mlp():
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 3)).double()


def _torch_copy(torch, model):
    t = torch.nn.Sequential(
        torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3)
    ).double()
    with torch.no_grad():
        for tp, (_, ep) in zip(t.parameters(), model.named_parameters()):
            tp.copy_(torch.from_numpy(ep.data.copy()))
    return t


def _batches(seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((16, 4)), rng.integers(0, 3, 16)) for _ in range(STEPS)]


@pytest.mark.parametrize(
    "name,kwargs", CONFIGS, ids=[f"{n}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'default'}" for n, kw in CONFIGS]
)
def test_optimizer_matches_torch(name, kwargs):
    torch = require_torch()
    engine.manual_seed(1)
    model = _mlp()
    tmodel = _torch_copy(torch, model)
    opt = getattr(optim, name)(model.parameters(), **kwargs)
    topt = getattr(torch.optim, name)(tmodel.parameters(), **kwargs)
    for step, (x, y) in enumerate(_batches()):
        opt.zero_grad()
        loss = F.cross_entropy(model(engine.Tensor(x)), y)
        loss.backward()
        topt.zero_grad()
        tloss = torch.nn.functional.cross_entropy(tmodel(torch.from_numpy(x)), torch.from_numpy(y))
        tloss.backward()
        np.testing.assert_allclose(loss.item(), tloss.item(), rtol=RTOL, err_msg=f"loss at step {step}")
        for (pname, p), tp in zip(model.named_parameters(), tmodel.parameters()):
            np.testing.assert_allclose(
                p.grad.numpy(), tp.grad.numpy(), rtol=RTOL, atol=ATOL, err_msg=f"grad {pname} step {step}"
            )
        opt.step()
        topt.step()
    for (pname, p), tp in zip(model.named_parameters(), tmodel.parameters()):
        np.testing.assert_allclose(
            p.data, tp.detach().numpy(), rtol=RTOL, atol=ATOL, err_msg=f"{pname} after {STEPS} steps"
        )
        assert p.data.dtype == np.float64


def test_param_groups_with_own_lr_match_torch():
    torch = require_torch()
    engine.manual_seed(2)
    model = _mlp()
    tmodel = _torch_copy(torch, model)
    ep, tp = list(model.parameters()), list(tmodel.parameters())
    opt = optim.SGD([{"params": ep[:2], "lr": 0.5}, {"params": ep[2:]}], lr=0.05, momentum=0.9)
    topt = torch.optim.SGD([{"params": tp[:2], "lr": 0.5}, {"params": tp[2:]}], lr=0.05, momentum=0.9)
    assert opt.param_groups[0]["lr"] == 0.5 and opt.param_groups[1]["lr"] == 0.05
    assert opt.param_groups[1]["momentum"] == 0.9
    for x, y in _batches(3)[:10]:
        for o, m, t in ((opt, model, False), (topt, tmodel, True)):
            o.zero_grad()
            xx = torch.from_numpy(x) if t else engine.Tensor(x)
            yy = torch.from_numpy(y) if t else y
            (torch.nn.functional if t else F).cross_entropy(m(xx), yy).backward()
            o.step()
    for p, q in zip(ep, tp):
        np.testing.assert_allclose(p.data, q.detach().numpy(), rtol=RTOL, atol=ATOL)


def test_add_param_group_and_duplicates():
    a, b = nn.Parameter(np.ones(2)), nn.Parameter(np.ones(3))
    opt = optim.Adam([a], lr=0.1)
    opt.add_param_group({"params": [b], "lr": 0.01})
    assert opt.param_groups[1]["betas"] == (0.9, 0.999)
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})


def test_param_without_grad_is_skipped_and_no_graph_grows():
    a = nn.Parameter(np.array([1.0, 2.0]))
    b = nn.Parameter(np.array([3.0]))
    opt = optim.Adam([a, b], lr=0.1)
    (a * a).sum().backward()
    opt.step()
    assert b.data.tolist() == [3.0] and b not in opt.state
    assert np.all(a.data < [1.0, 2.0])
    assert a.is_leaf and a.grad_fn is None  # the update built no graph


def test_zero_grad_none_and_zeros():
    a = nn.Parameter(np.ones(2))
    opt = optim.SGD([a], lr=0.1)
    (a * 3).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert a.grad is not None and not a.grad.numpy().any()
    opt.zero_grad()
    assert a.grad is None


@pytest.mark.parametrize(
    "make",
    [
        lambda p: optim.SGD(p, lr=-0.1),
        lambda p: optim.Adam(p, lr=-1e-3),
        lambda p: optim.AdamW(p, lr=-1.0),
        lambda p: optim.RMSprop(p, lr=-0.01),
    ],
)
def test_negative_lr_is_an_error_naming_lr(make):
    with pytest.raises(ValueError, match="lr=-"):
        make([nn.Parameter(np.ones(2))])


@pytest.mark.parametrize(
    "make,match",
    [
        (lambda p: optim.SGD(p, lr=0.1, nesterov=True), "Nesterov"),
        (lambda p: optim.SGD(p, lr=0.1, momentum=-0.5), "momentum"),
        (lambda p: optim.Adam(p, betas=(1.0, 0.999)), "beta1"),
        (lambda p: optim.Adam(p, betas=(0.9, -0.1)), "beta2"),
        (lambda p: optim.Adam(p, weight_decay=-1), "weight_decay"),
        (lambda p: optim.RMSprop(p, alpha=-0.5), "alpha"),
    ],
)
def test_bad_hyperparameters(make, match):
    with pytest.raises(ValueError, match=match):
        make([nn.Parameter(np.ones(2))])


def test_bad_params():
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="single Tensor"):
        optim.SGD(nn.Parameter(np.ones(2)), lr=0.1)
    with pytest.raises(TypeError, match="floating-point"):
        optim.SGD([engine.Tensor(np.arange(3))], lr=0.1)


def _train(model, opt, batches):
    losses = []
    for x, y in batches:
        opt.zero_grad()
        loss = F.cross_entropy(model(engine.Tensor(x)), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("SGD", dict(lr=0.1, momentum=0.9)),
        ("Adam", dict(lr=0.01, amsgrad=True)),
        ("RMSprop", dict(centered=True, momentum=0.5)),
        ("AdamW", dict(lr=0.01)),
    ],
)
def test_save_load_model_and_optimizer_then_continue_identically(tmp_path, name, kwargs):
    batches = _batches(5)
    engine.manual_seed(3)
    model = _mlp()
    opt = getattr(optim, name)(model.parameters(), **kwargs)
    _train(model, opt, batches[:10])
    engine.save({"model": model.state_dict(), "optim": opt.state_dict()}, tmp_path / "ckpt.npz")
    reference = _train(model, opt, batches[10:])

    engine.manual_seed(99)  # a different initialisation, fully overwritten by the checkpoint
    model2 = _mlp()
    opt2 = getattr(optim, name)(model2.parameters(), **kwargs)
    ckpt = engine.load(tmp_path / "ckpt.npz")
    model2.load_state_dict(ckpt["model"])
    opt2.load_state_dict(ckpt["optim"])
    resumed = _train(model2, opt2, batches[10:])
    assert resumed == reference  # bit-identical
    for p, q in zip(model.parameters(), model2.parameters()):
        assert np.array_equal(p.data, q.data)


def test_optimizer_state_dict_layout_and_errors():
    a, b = nn.Parameter(np.ones(2)), nn.Parameter(np.ones(3))
    opt = optim.Adam([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
    (a.sum() + b.sum()).backward()
    opt.step()
    sd = opt.state_dict()
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1]]
    assert sd["state"][0]["step"] == 1 and sd["state"][1]["exp_avg"].shape == (3,)
    other = optim.Adam([nn.Parameter(np.ones(2))], lr=0.1)
    with pytest.raises(ValueError, match="parameter groups"):
        other.load_state_dict(sd)
    wrong = optim.Adam([{"params": [nn.Parameter(np.ones(2))]}, {"params": [nn.Parameter(np.ones(4))]}])
    with pytest.raises(ValueError, match=r"shape \(3,\).*shape \(4,\)"):
        wrong.load_state_dict(sd)


def test_step_closure_returns_loss():
    a = nn.Parameter(np.array([2.0]))
    opt = optim.SGD([a], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (a * a).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss.item() == 4.0 and a.data[0] == 2.0 - 0.25 * 4.0


def test_sgd_hand_computed_momentum():
    # f(θ) = θ²/2, g = θ. θ0 = 1, lr 0.1, μ 0.9: b1 = 1, θ1 = 0.9; b2 = 0.9·1 + 0.9 = 1.8, θ2 = 0.72
    a = nn.Parameter(np.array([1.0]))
    opt = optim.SGD([a], lr=0.1, momentum=0.9)
    for expected in (0.9, 0.72):
        opt.zero_grad()
        (0.5 * a * a).sum().backward()
        opt.step()
        assert a.data[0] == pytest.approx(expected, rel=1e-12)


def test_adamw_decay_uses_theta_before_the_step():
    # with a zero gradient the Adam step is 0, so θ ← θ(1 − ηλ) exactly
    a = nn.Parameter(np.array([2.0, -4.0]))
    opt = optim.AdamW([a], lr=0.1, weight_decay=0.5)
    a.grad = np.zeros(2)
    opt.step()
    np.testing.assert_allclose(a.data, [2.0 * 0.95, -4.0 * 0.95], rtol=1e-15)


def test_adam_first_step_is_lr_times_sign():
    # bias correction makes the first step ≈ η·g/|g| whatever the gradient's scale
    a = nn.Parameter(np.array([1.0, 1.0, 1.0]))
    opt = optim.Adam([a], lr=0.01)
    a.grad = np.array([1e-3, -5.0, 300.0])
    opt.step()
    np.testing.assert_allclose(a.data, [0.99, 1.01, 0.99], rtol=1e-6)


def test_float32_parameters_stay_float32():
    engine.manual_seed(0)
    model = nn.Linear(3, 2)
    opt = optim.Adam(model.parameters(), lr=0.01)
    F.mse_loss(model(engine.randn(4, 3)), engine.zeros(4, 2)).backward()
    opt.step()
    assert all(p.data.dtype == np.float32 for p in model.parameters())
    assert all(v.dtype == np.float32 for s in opt.state.values() for v in s.values() if isinstance(v, np.ndarray))


@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("Adam", dict(lr=0.1)),
        ("Adam", dict(lr=0.1, weight_decay=0.1, amsgrad=True)),
        ("AdamW", dict(lr=0.1, maximize=True)),
    ],
)
def test_adam_on_a_single_0d_parameter_matches_torch(name, kwargs):
    # a 0-d parameter once crashed: NumPy turns 0-d arithmetic into scalars, which take no out=
    torch = require_torch()
    rng = np.random.default_rng(5)
    start = rng.standard_normal()
    a = nn.Parameter(np.array(start))
    t = torch.tensor(start, dtype=torch.float64, requires_grad=True)
    opt, topt = getattr(optim, name)([a], **kwargs), getattr(torch.optim, name)([t], **kwargs)
    for _ in range(5):
        g = rng.standard_normal()
        a.grad, t.grad = np.array(g), torch.tensor(g, dtype=torch.float64)
        opt.step()
        topt.step()
        assert a.data.shape == ()
        np.testing.assert_allclose(a.data, t.detach().numpy(), rtol=1e-12, atol=0)
    assert a.data != start


def _adam_by_hand(name, kwargs, params, grads, state):
    """The Adam formulas one parameter at a time (the class docstring, in PyTorch's order): the
    reference the library's flat, whole-group step must match to the last bit."""
    lr, eps, wd = kwargs["lr"], 1e-8, kwargs.get("weight_decay", 1e-2 if name == "AdamW" else 0.0)
    beta1, beta2 = 0.9, 0.999
    for i, (p, g) in enumerate(zip(params, grads)):
        if g is None:
            continue
        s = state.setdefault(
            i,
            {
                "step": 0,
                "exp_avg": np.zeros_like(p),
                "exp_avg_sq": np.zeros_like(p),
                "max_exp_avg_sq": np.zeros_like(p),
            },
        )
        s["step"] += 1
        t = s["step"]
        g = -g if kwargs.get("maximize") else g
        if wd and name == "AdamW":
            p *= 1 - lr * wd
        elif wd:
            g = g + wd * p
        s["exp_avg"] += (1 - beta1) * (g - s["exp_avg"])
        s["exp_avg_sq"] *= beta2
        s["exp_avg_sq"] += (1 - beta2) * (g * g)
        v = s["exp_avg_sq"]
        if kwargs.get("amsgrad"):
            np.maximum(s["max_exp_avg_sq"], v, out=s["max_exp_avg_sq"])
            v = s["max_exp_avg_sq"]
        denominator = np.sqrt(v) / math.sqrt(1 - beta2**t) + eps
        p -= (lr / (1 - beta1**t)) * s["exp_avg"] / denominator


@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("Adam", dict(lr=0.01)),
        ("Adam", dict(lr=0.02, weight_decay=0.1, amsgrad=True)),
        ("AdamW", dict(lr=0.01, weight_decay=0.1, maximize=True)),
        ("AdamW", dict(lr=0.01, amsgrad=True)),
    ],
)
@pytest.mark.parametrize("foreach", [None, False, True])
def test_adam_flat_step_gives_the_formulas_bits(name, kwargs, foreach):
    """Adam steps a whole group at once on flat moments: the same parameters and moments, to the
    last bit, as the formulas applied one parameter at a time, through a parameter without a
    gradient (its set steps apart from then on), a 0-d parameter, and a state dict loaded half-way.
    ``foreach`` (PyTorch's keyword) is accepted and changes nothing."""
    rng = np.random.default_rng(11)
    shapes = [(5, 3), (3,), (), (2, 2, 2)]
    starts = [rng.standard_normal(s) for s in shapes]
    grads = [[rng.standard_normal(s) for s in shapes] for _ in range(8)]
    grads[2][1] = None  # skipped once
    params = [nn.Parameter(np.array(x)) for x in starts]
    opt = getattr(optim, name)([{"params": params[:2]}, {"params": params[2:]}], foreach=foreach, **kwargs)
    by_hand, state = [np.array(x) for x in starts], {}
    for step, gs in enumerate(grads):
        for p, g in zip(params, gs):
            p.grad = None if g is None else np.array(g)
        if step == 5:
            opt.load_state_dict(opt.state_dict())  # new state arrays: the flat step adopts them
        opt.step()
        _adam_by_hand(name, kwargs, by_hand, gs, state)
    assert opt.state[params[3]]["exp_avg"].base is not None  # views of one flat array
    for p, q in zip(params, by_hand):
        assert p.data.shape == q.shape
        assert np.array_equal(p.data, q)
    for i, p in enumerate(params):
        assert opt.state[p]["step"] == state[i]["step"]
        for key in ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if kwargs.get("amsgrad") else ()):
            assert np.array_equal(opt.state[p][key], state[i][key]), (i, key)
    assert [opt.state[p]["step"] for p in params] == [8, 7, 8, 8]
