"""engine.nn: Module bookkeeping, layers (against torch.nn with random upstream gradients), utils."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest
from oracle import check_against_torch, check_gradcheck, require_torch

import engine
import engine.functional as F
from engine import nn

RTOL, ATOL = 1e-6, 1e-9


def _rng(seed=0):
    return np.random.default_rng(seed)


# ---------------------------------------------------------------- Module bookkeeping


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(np.ones(3))
        self.fc = nn.Linear(3, 3)
        self.heads = nn.ModuleList([nn.Linear(3, 2), nn.Linear(3, 2)])
        self.extra = nn.ModuleDict({"out": nn.Linear(2, 1)})
        self.plain = [nn.Linear(2, 1)]  # a plain list of modules is not registered, as in PyTorch
        self.register_buffer("counter", engine.zeros(1))
        self.register_buffer("scratch", engine.zeros(2), persistent=False)

    def forward(self, x):
        h = self.fc(x * self.scale)
        return sum(head(h).sum() for head in self.heads)


def test_named_parameters_dotted_names_and_order():
    m = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), Block())
    names = [n for n, _ in m.named_parameters()]
    assert names == [
        "0.weight",
        "0.bias",
        "2.scale",
        "2.fc.weight",
        "2.fc.bias",
        "2.heads.0.weight",
        "2.heads.0.bias",
        "2.heads.1.weight",
        "2.heads.1.bias",
        "2.extra.out.weight",
        "2.extra.out.bias",
    ]
    assert len(list(m.parameters())) == len(names)
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in m.parameters())
    assert [n for n, _ in m.named_children()] == ["0", "1", "2"]
    assert [n for n, _ in m[2].named_children()] == ["fc", "heads", "extra"]
    assert len(list(m.modules())) == 1 + 3 + 3 + 2 + 1  # self; 0, 1, 2; fc, heads, extra; the 2 heads; extra.out
    assert m.num_parameters() == 2 * 3 + 3 + 3 + 9 + 3 + 2 * (6 + 2) + 2 + 1


def test_names_match_torch_for_the_same_architecture():
    torch = require_torch()

    def build(lib):
        return lib.Sequential(lib.Linear(4, 8), lib.BatchNorm1d(8), lib.ReLU(), lib.Linear(8, 2))

    ours, theirs = build(nn), build(torch.nn)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert list(ours.state_dict()) == list(theirs.state_dict())


def test_shared_parameter_counted_once():
    lin = nn.Linear(2, 2)
    m = nn.Sequential(lin, nn.ReLU(), lin)
    assert len(list(m.parameters())) == 2
    # the state dict names it under both paths, as PyTorch (so either checkpoint layout loads)
    assert list(m.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]


def test_repr_matches_torch():
    torch = require_torch()

    def build(n):
        return n.Sequential(
            n.Linear(4, 8),
            n.BatchNorm1d(8),
            n.ReLU(),
            n.Dropout(0.25),
            n.LayerNorm(8),
            n.LeakyReLU(0.2),
            n.GELU(),
            n.SiLU(),
            n.Tanh(),
            n.Sigmoid(),
            n.Softmax(dim=-1),
            n.Flatten(),
            n.Embedding(10, 4),
            n.BatchNorm2d(3, momentum=None, affine=False),
            n.Linear(3, 2, bias=False),
            n.Identity(),
            n.LayerNorm((2, 3), elementwise_affine=False),
            n.ModuleList([n.Linear(2, 2)]),
        )

    assert str(build(nn)) == str(build(torch.nn))


def test_train_eval_propagate_and_call_is_forward():
    m = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Dropout(0.5), nn.BatchNorm1d(2)))
    assert all(mod.training for mod in m.modules())
    assert m.eval() is m and not any(mod.training for mod in m.modules())
    m.train()
    assert all(mod.training for mod in m.modules())
    x = engine.randn(4, 2)
    m.eval()
    np.testing.assert_array_equal(m(x).data, m.forward(x).data)


def test_zero_grad_sets_none():
    m = nn.Linear(3, 2)
    m(engine.randn(4, 3)).sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())


def test_subclass_without_super_init_still_works():
    class Lazy(nn.Module):
        def __init__(self):  # forgot super().__init__()
            self.w = nn.Parameter(np.ones(2))

        def forward(self, x):
            return x * self.w

    m = Lazy()
    assert [n for n, _ in m.named_parameters()] == ["w"] and m.training
    m.eval()
    assert not m.training


def test_state_dict_contents_and_buffers():
    m = Block()
    sd = m.state_dict()
    assert "counter" in sd and "scratch" not in sd  # non-persistent buffers are not saved
    assert list(m.named_buffers()) and dict(m.named_buffers())["scratch"].shape == (2,)
    assert isinstance(sd["fc.weight"], engine.Tensor) and not sd["fc.weight"].requires_grad
    assert np.shares_memory(sd["fc.weight"].data, m.fc.weight.data)


def test_load_state_dict_from_torch_reproduces_its_outputs():
    torch = require_torch()
    torch.manual_seed(0)
    t = torch.nn.Sequential(
        torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6), torch.nn.Tanh(), torch.nn.Linear(6, 2)
    ).double()
    x = _rng().standard_normal((10, 4))
    t.train()
    t(torch.from_numpy(x))  # move the running stats away from their initial values
    t.eval()
    m = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.Tanh(), nn.Linear(6, 2)).double()
    result = m.load_state_dict({k: v.numpy() for k, v in t.state_dict().items()})  # NumPy arrays accepted
    assert result.missing_keys == [] and result.unexpected_keys == []
    m.eval()
    np.testing.assert_allclose(m(engine.Tensor(x)).data, t(torch.from_numpy(x)).detach().numpy(), rtol=1e-12)
    assert int(m[1].num_batches_tracked.item()) == 1


def test_load_state_dict_keeps_parameter_identity():
    m = nn.Linear(2, 2)
    w = m.weight
    m.load_state_dict({"weight": np.zeros((2, 2)), "bias": np.ones(2)})
    assert m.weight is w and not w.data.any() and m.weight.data.dtype == np.float32


def test_load_state_dict_errors_name_key_and_shapes():
    m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    sd = m.state_dict()
    missing = {k: v for k, v in sd.items() if k != "1.running_var"}
    with pytest.raises(ValueError, match=r"missing key '1\.running_var'"):
        m.load_state_dict(missing)
    with pytest.raises(ValueError, match=r"unexpected key 'head\.weight'"):
        m.load_state_dict({**sd, "head.weight": np.zeros(2)})
    with pytest.raises(ValueError, match=r"0\.weight: shape mismatch.*\(2, 4\).*\(2, 3\)"):
        m.load_state_dict({**sd, "0.weight": np.zeros((2, 4))})
    with pytest.raises(TypeError, match="dict"):
        m.load_state_dict([1, 2])
    result = m.load_state_dict(missing, strict=False)
    assert result.missing_keys == ["1.running_var"]
    with pytest.raises(ValueError, match="shape mismatch"):  # even non-strict
        m.load_state_dict({"0.weight": np.zeros((5, 5))}, strict=False)


def test_save_load_model_round_trip_exact(tmp_path):
    engine.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2))
    m(engine.randn(8, 3))  # update running stats
    engine.save(m.state_dict(), tmp_path / "m.npz")
    engine.manual_seed(1)
    m2 = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2))
    m2.load_state_dict(engine.load(tmp_path / "m.npz"))
    for (k, a), (k2, b) in zip(m.state_dict().items(), m2.state_dict().items()):
        assert k == k2 and a.data.dtype == b.data.dtype and np.array_equal(a.data, b.data)
    x = engine.randn(5, 3)
    m.eval(), m2.eval()
    assert np.array_equal(m(x).data, m2(x).data)


def test_containers():
    layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    layers.append(nn.ReLU())
    assert len(layers) == 4 and isinstance(layers[-1], nn.ReLU) and len(layers[1:]) == 3
    with pytest.raises(TypeError, match="Module"):
        layers.append(3)
    seq = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 3)), ("act", nn.ReLU())]))
    assert isinstance(seq.fc, nn.Linear) and [n for n, _ in seq.named_parameters()] == ["fc.weight", "fc.bias"]
    assert isinstance(seq[0:1], nn.Sequential) and len(seq[0:1]) == 1
    with pytest.raises(TypeError, match="not a Module"):
        nn.Sequential(nn.Linear(2, 2), "relu")
    with pytest.raises(NotImplementedError, match="ModuleList"):
        layers(engine.randn(1, 2))


def test_double_converts_parameters_and_buffers():
    m = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2)).double()
    assert all(t.data.dtype == np.float64 for t in m.state_dict().values() if t.data.dtype.kind == "f")
    assert m[1].num_batches_tracked.data.dtype == np.int64


def test_parameter_shares_tensor_data():
    t = engine.randn(3)
    p = nn.Parameter(t)
    assert p.requires_grad and np.shares_memory(p.data, t.data)
    assert repr(p).startswith("Parameter containing:")


# ---------------------------------------------------------------- Linear


def _torch_module_like(torch, ours, theirs):
    """Copy our parameters into the torch module (float64)."""
    theirs.double()
    with torch.no_grad():
        for name, p in ours.named_parameters():
            dict(theirs.named_parameters())[name].copy_(torch.from_numpy(p.data.astype(np.float64)))
    return theirs


def _compare_module(torch, ours, theirs, x, upstream_seed=1):
    """Forward, backward with a random upstream gradient; compare output, input and parameter grads."""
    xe = engine.Tensor(x.copy(), requires_grad=True)
    xt = torch.tensor(x.copy(), requires_grad=True)
    ye, yt = ours(xe), theirs(xt)
    np.testing.assert_allclose(ye.data, yt.detach().numpy(), rtol=RTOL, atol=ATOL, err_msg="forward")
    g = _rng(upstream_seed).standard_normal(ye.shape)
    ye.backward(g)
    yt.backward(torch.from_numpy(g))
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=RTOL, atol=ATOL, err_msg="input gradient")
    tparams = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(
            p.grad.numpy(), tparams[name].grad.numpy(), rtol=RTOL, atol=ATOL, err_msg=f"grad of {name}"
        )
        tparams[name].grad = None
        p.grad = None


def test_linear_matches_torch_batched():
    torch = require_torch()
    ours = nn.Linear(5, 3).double()
    theirs = _torch_module_like(torch, ours, torch.nn.Linear(5, 3))
    _compare_module(torch, ours, theirs, _rng().standard_normal((2, 4, 5)))
    no_bias = nn.Linear(5, 3, bias=False).double()
    assert no_bias.bias is None and [n for n, _ in no_bias.named_parameters()] == ["weight"]
    _compare_module(
        torch,
        no_bias,
        _torch_module_like(torch, no_bias, torch.nn.Linear(5, 3, bias=False)),
        _rng(2).standard_normal((6, 5)),
    )


def test_linear_gradcheck_and_errors():
    lin = nn.Linear(3, 2).double()
    check_gradcheck(lambda x: lin(x), [_rng().standard_normal((4, 3))])
    with pytest.raises(ValueError, match=r"Linear: input of shape \(4, 5\).*in_features=3"):
        lin(engine.randn(4, 5))
    with pytest.raises(ValueError, match="in_features"):
        nn.Linear(0, 3)


# ---------------------------------------------------------------- BatchNorm


@pytest.mark.parametrize(
    "cls,shape", [("BatchNorm1d", (8, 4)), ("BatchNorm1d", (6, 4, 5)), ("BatchNorm2d", (5, 4, 3, 3))]
)
@pytest.mark.parametrize(
    "kwargs",
    [{}, {"momentum": 0.3, "eps": 1e-3}, {"momentum": None}, {"affine": False}, {"track_running_stats": False}],
)
def test_batchnorm_train_and_eval_match_torch(cls, shape, kwargs):
    torch = require_torch()
    rng = _rng(3)
    ours = getattr(nn, cls)(4, **kwargs).double()
    theirs = getattr(torch.nn, cls)(4, **kwargs).double()
    if ours.weight is not None:  # non-trivial affine parameters
        ours.weight.data[...] = rng.uniform(0.5, 2.0, 4)
        ours.bias.data[...] = rng.standard_normal(4)
    _torch_module_like(torch, ours, theirs)
    for step in range(3):  # training: batch statistics, running statistics move
        x = 2.0 + 3.0 * rng.standard_normal(shape)
        _compare_module(torch, ours, theirs, x, upstream_seed=step)
        if ours.track_running_stats:
            np.testing.assert_allclose(ours.running_mean.data, theirs.running_mean.numpy(), rtol=1e-12)
            np.testing.assert_allclose(ours.running_var.data, theirs.running_var.numpy(), rtol=1e-12)
            assert int(ours.num_batches_tracked.item()) == int(theirs.num_batches_tracked) == step + 1
    ours.eval(), theirs.eval()
    _compare_module(torch, ours, theirs, rng.standard_normal(shape), upstream_seed=7)
    if ours.track_running_stats:  # evaluation leaves the running statistics alone
        np.testing.assert_allclose(ours.running_mean.data, theirs.running_mean.numpy(), rtol=1e-12)
        assert int(ours.num_batches_tracked.item()) == 3


def test_batchnorm_eval_uses_running_stats_and_gradcheck():
    bn = nn.BatchNorm1d(3).double()
    bn.running_mean.data[...] = [1.0, 2.0, 3.0]
    bn.running_var.data[...] = [4.0, 9.0, 16.0]
    bn.eval()
    x = np.zeros((2, 3))
    np.testing.assert_allclose(bn(engine.Tensor(x)).data, -np.array([[1 / 2, 2 / 3, 3 / 4]] * 2), rtol=1e-5)
    bn.train()
    check_gradcheck(lambda x: bn(x), [_rng().standard_normal((5, 3))])
    bn2 = nn.BatchNorm2d(2).double()
    check_gradcheck(lambda x: bn2(x), [_rng(1).standard_normal((3, 2, 2, 2))])


def test_batchnorm_errors():
    with pytest.raises(ValueError, match=r"BatchNorm1d: input has 3 channels.*num_features=4"):
        nn.BatchNorm1d(4)(engine.randn(5, 3))
    with pytest.raises(ValueError, match=r"BatchNorm2d: expected a 4-D input"):
        nn.BatchNorm2d(4)(engine.randn(5, 4))
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        nn.BatchNorm1d(4)(engine.randn(1, 4))
    nn.BatchNorm1d(4).eval()(engine.randn(1, 4))  # a single sample is fine in evaluation


# ---------------------------------------------------------------- LayerNorm


@pytest.mark.parametrize("normalized_shape,shape", [(6, (4, 6)), ((3, 4), (2, 5, 3, 4)), (5, (2, 3, 5))])
@pytest.mark.parametrize("affine", [True, False])
def test_layernorm_matches_torch(normalized_shape, shape, affine):
    torch = require_torch()
    rng = _rng(4)
    ours = nn.LayerNorm(normalized_shape, eps=1e-4, elementwise_affine=affine).double()
    theirs = torch.nn.LayerNorm(normalized_shape, eps=1e-4, elementwise_affine=affine).double()
    if affine:
        ours.weight.data[...] = rng.uniform(0.5, 2.0, ours.weight.shape)
        ours.bias.data[...] = rng.standard_normal(ours.bias.shape)
    _torch_module_like(torch, ours, theirs)
    x = 1.0 + 4.0 * rng.standard_normal(shape)
    _compare_module(torch, ours, theirs, x)
    ours.eval(), theirs.eval()  # no difference between modes
    _compare_module(torch, ours, theirs, x, upstream_seed=5)


def test_layernorm_gradcheck_and_error():
    ln = nn.LayerNorm(4).double()
    ln.weight.data[...] = [1.0, 2.0, 0.5, -1.0]
    check_gradcheck(lambda x: ln(x), [_rng().standard_normal((3, 4))])
    # the fused op's gradients for the weight and the bias too, over two normalised dims
    rng = _rng(7)
    check_gradcheck(
        lambda x, w, b: F.layer_norm(x, (2, 3), w, b, eps=1e-3),
        [rng.standard_normal((4, 2, 3)), rng.uniform(0.5, 2, (2, 3)), rng.standard_normal((2, 3))],
    )
    check_gradcheck(lambda x, b: F.layer_norm(x, 3, None, b), [rng.standard_normal((2, 3)), rng.standard_normal(3)])
    with pytest.raises(ValueError, match="normalized_shape"):
        ln(engine.randn(3, 5))


# ---------------------------------------------------------------- Dropout


def test_dropout_eval_is_identity():
    d = nn.Dropout(0.7).eval()
    x = engine.Tensor(_rng().standard_normal((50, 20)), requires_grad=True)
    y = d(x)
    np.testing.assert_array_equal(y.data, x.data)
    y.backward(np.full(y.shape, 2.0))
    np.testing.assert_array_equal(x.grad.numpy(), np.full(x.shape, 2.0))


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_train_keeps_expectation(p):
    engine.manual_seed(0)
    n = 200_000
    x = engine.Tensor(np.full(n, 3.0), requires_grad=True)
    y = nn.Dropout(p)(x)
    kept = y.data != 0
    # the number of zeros is Binomial(n, p): within 5 standard deviations
    sd_count = np.sqrt(n * p * (1 - p))
    assert abs((~kept).sum() - n * p) < 5 * sd_count
    np.testing.assert_allclose(y.data[kept], 3.0 / (1 - p), rtol=1e-12)  # survivors are scaled up
    # mean of y = 3/(1-p) · (kept fraction): its std is 3/(1-p)·√(p(1-p)/n)
    sd_mean = 3.0 / (1 - p) * np.sqrt(p * (1 - p) / n)
    assert abs(y.data.mean() - 3.0) < 5 * sd_mean
    y.backward(np.ones(n))
    np.testing.assert_allclose(x.grad.numpy(), kept / (1 - p))  # gradient flows only through the kept units


def test_dropout_edges_and_seed():
    x = engine.randn(10, 10)
    np.testing.assert_array_equal(nn.Dropout(0.0)(x).data, x.data)
    assert not nn.Dropout(1.0)(x).data.any()
    with pytest.raises(ValueError, match="p must be in"):
        nn.Dropout(1.5)
    engine.manual_seed(5)
    a = nn.Dropout(0.5)(engine.ones(100)).data
    engine.manual_seed(5)
    b = nn.Dropout(0.5)(engine.ones(100)).data
    assert np.array_equal(a, b)


# ---------------------------------------------------------------- Embedding, Flatten, activations, SwiGLU


def test_embedding_matches_torch_with_repeated_indices():
    torch = require_torch()
    ours = nn.Embedding(7, 3).double()
    theirs = _torch_module_like(torch, ours, torch.nn.Embedding(7, 3))
    idx = np.array([[0, 3, 3], [6, 0, 3]])
    ye, yt = ours(idx), theirs(torch.from_numpy(idx))
    np.testing.assert_array_equal(ye.data, yt.detach().numpy())
    g = _rng().standard_normal(ye.shape)
    ye.backward(g)
    yt.backward(torch.from_numpy(g))
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-12)
    with pytest.raises(IndexError, match="out of range"):
        ours(np.array([7]))


def test_flatten_matches_torch():
    torch = require_torch()
    x = _rng().standard_normal((2, 3, 4, 5))
    for args in [(), (0,), (1, 2), (2, -1)]:
        check_against_torch(lambda t: nn.Flatten(*args)(t), lambda t: torch.nn.Flatten(*args)(t), [x])
    with pytest.raises(ValueError, match="out of range"):
        nn.Flatten(5)(engine.Tensor(x))


@pytest.mark.parametrize(
    "name,args",
    [
        ("ReLU", ()),
        ("LeakyReLU", (0.2,)),
        ("Sigmoid", ()),
        ("Tanh", ()),
        ("GELU", ()),
        ("GELU", ("tanh",)),
        ("SiLU", ()),
        ("Softmax", (1,)),
        ("LogSoftmax", (-1,)),
        ("ELU", (0.5,)),
        ("Softplus", (2.0,)),
        ("Identity", ()),
    ],
)
def test_activation_modules_match_torch(name, args):
    torch = require_torch()
    x = _rng().standard_normal((4, 6)) * 3
    check_against_torch(lambda t: getattr(nn, name)(*args)(t), lambda t: getattr(torch.nn, name)(*args)(t), [x])


def test_swiglu_is_the_gated_mlp():
    torch = require_torch()
    engine.manual_seed(0)
    block = nn.SwiGLU(4, 6).double()
    assert block.w_down.out_features == 4 and block.w_gate.bias is None
    wg, wu, wd = (torch.from_numpy(lin.weight.data.copy()) for lin in (block.w_gate, block.w_up, block.w_down))

    def torch_block(x):
        return torch.nn.functional.linear(torch.nn.functional.silu(x @ wg.T) * (x @ wu.T), wd)

    check_against_torch(block, torch_block, [_rng().standard_normal((3, 5, 4))])
    assert nn.SwiGLU(4, 6, d_out=2)(engine.randn(3, 4)).shape == (3, 2)


def test_mlp_module_gradcheck():
    m = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.LayerNorm(4), nn.Linear(4, 2)).double()
    check_gradcheck(lambda x: m(x), [_rng().standard_normal((5, 3))])


# ---------------------------------------------------------------- nn.utils


def _params_with_grads(torch, seed=0, scale=1.0):
    rng = _rng(seed)
    shapes = [(3, 4), (4,), (2, 2, 3)]
    grads = [scale * rng.standard_normal(s) for s in shapes]
    ours = [nn.Parameter(np.zeros(s)) for s in shapes]
    theirs = [torch.zeros(s, dtype=torch.float64, requires_grad=True) for s in shapes]
    for p, t, g in zip(ours, theirs, grads):
        p.grad = g.copy()
        t.grad = torch.from_numpy(g.copy())
    return ours, theirs, grads


@pytest.mark.parametrize("max_norm,norm_type", [(1.0, 2.0), (100.0, 2.0), (0.5, 1.0), (0.3, float("inf")), (2.0, 3.0)])
def test_clip_grad_norm_matches_torch(max_norm, norm_type):
    torch = require_torch()
    ours, theirs, grads = _params_with_grads(torch)
    total = nn.utils.clip_grad_norm_(ours, max_norm, norm_type)
    t_total = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type)
    assert total.item() == pytest.approx(t_total.item(), rel=1e-12)
    for p, t in zip(ours, theirs):
        np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-12)


def test_clip_grad_norm_is_the_square_root_of_the_sum_of_squares():
    a, b = nn.Parameter(np.zeros(2)), nn.Parameter(np.zeros(1))
    a.grad, b.grad = np.array([3.0, 0.0]), np.array([4.0])
    total = nn.utils.clip_grad_norm_([a, b], max_norm=1.0)
    assert total.item() == pytest.approx(5.0)  # √(9 + 16), not 25
    np.testing.assert_allclose(
        np.concatenate([a.grad.numpy(), b.grad.numpy()]), np.array([3.0, 0.0, 4.0]) / (5.0 + 1e-6)
    )
    c = nn.Parameter(np.zeros(1))  # no grad: ignored
    assert nn.utils.clip_grad_norm_([c], 1.0).item() == 0.0
    with pytest.raises(ValueError, match="max_norm"):
        nn.utils.clip_grad_norm_([a], -1.0)


def test_clip_grad_value_matches_torch():
    torch = require_torch()
    ours, theirs, _ = _params_with_grads(torch, scale=2.0)
    nn.utils.clip_grad_value_(ours, 0.7)
    torch.nn.utils.clip_grad_value_(theirs, 0.7)
    for p, t in zip(ours, theirs):
        np.testing.assert_array_equal(p.grad.numpy(), t.grad.numpy())


def test_soft_update():
    engine.manual_seed(0)
    target, source = nn.Linear(3, 2).double(), nn.Linear(3, 2).double()
    before = [p.data.copy() for p in target.parameters()]
    nn.utils.soft_update(target, source, tau=0.1)
    for t, s, b in zip(target.parameters(), source.parameters(), before):
        np.testing.assert_allclose(t.data, 0.1 * s.data + 0.9 * b, rtol=1e-14)
    nn.utils.soft_update(target, source, tau=1.0)
    assert all(np.array_equal(t.data, s.data) for t, s in zip(target.parameters(), source.parameters()))
    with pytest.raises(ValueError, match="tau"):
        nn.utils.soft_update(target, source, tau=1.5)
    with pytest.raises(ValueError, match="same architecture"):
        nn.utils.soft_update(target, nn.Linear(3, 2, bias=False), tau=0.5)


def test_parameters_vector_round_trip():
    m = nn.Linear(3, 2).double()
    v = nn.utils.parameters_to_vector(m.parameters())
    assert v.shape == (8,)
    nn.utils.vector_to_parameters(np.arange(8.0), m.parameters())
    np.testing.assert_array_equal(m.weight.data.ravel(), np.arange(6.0))
    with pytest.raises(ValueError, match="8"):
        nn.utils.vector_to_parameters(np.arange(7.0), m.parameters())


def test_functional_layers_used_by_modules():
    # F.linear agrees with the module and checks shapes
    lin = nn.Linear(3, 2)
    x = engine.randn(4, 3)
    np.testing.assert_array_equal(F.linear(x, lin.weight, lin.bias).data, lin(x).data)
    with pytest.raises(ValueError, match="linear"):
        F.linear(engine.randn(4, 2), lin.weight)


def test_deepcopy_makes_an_independent_target_network():
    import copy

    engine.manual_seed(0)
    online = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3), nn.ReLU(), nn.Linear(3, 1))
    target = copy.deepcopy(online)
    assert [n for n, _ in target.named_parameters()] == [n for n, _ in online.named_parameters()]
    for a, b in zip(online.parameters(), target.parameters()):
        assert isinstance(b, nn.Parameter) and np.array_equal(a.data, b.data) and not np.shares_memory(a.data, b.data)
    online[0].weight.data += 1.0
    assert not np.array_equal(online[0].weight.data, target[0].weight.data)


def test_apply_and_get_submodule():
    m = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.Linear(3, 3), nn.Tanh()))
    m.apply(lambda mod: nn.init.zeros_(mod.weight) if isinstance(mod, nn.Linear) else None)
    assert all(not lin.weight.data.any() for lin in (m[0], m[1][0]))
    assert m.get_submodule("1.0") is m[1][0]
    with pytest.raises(AttributeError, match="no sub-module '5'"):
        m.get_submodule("1.5")
