import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="03 · Backpropagation")

with app.setup:
    import altair as alt
    import marimo as mo
    import numpy as np

    import engine
    import engine.functional as F
    from engine import Tensor, nn, optim
    from engine.autograd import Function, unbroadcast
    from engine.course import exercises, metadata, plot, toc, ui, widgets
    from engine.course import graph as graphs
    from engine.course.labs import backprop as lab

    METADATA = metadata("03_backprop")


@app.cell(hide_code=True)
def _():
    ui.page_header(
        METADATA,
        r"""
    Backpropagation is the chain rule, applied once per operation, in the right order. The
    engine records every operation as a node of a graph while it computes; `backward()` then
    walks that graph from the output to the inputs, and each node multiplies the gradient it
    receives by its own small **local rule**. In this notebook you will

    - step through the backward pass of an expression, node by node, with the rule each node uses,
      and watch the shares add up at a value used several times;
    - see why deep learning differentiates in reverse: one backward pass for all inputs, against
      one forward-mode pass per input, what the backward pass keeps in memory, and how
      checkpointing trades that memory for a second forward pass;
    - write a dense layer's gradients by hand in NumPy and find them equal to autograd's;
    - check gradients with finite differences and see why the step $h$ cannot be too small, then
      write an op's backward yourself and watch the check catch three common bugs;
    - train small networks on 2-D data in a playground, and run the "overfit one batch" check.

    Each piece of the lesson (the op, the sort and the walk, the difference quotient, the network
    and its training loop) is code on this page. Open it with `marimo edit`, change a cell, and
    every figure that uses it runs again: the prompts marked **Change this cell** suggest where
    to start.
    """,
    )
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 1. The chain rule on a graph

    If $f$ depends on $x$ through an intermediate $r$, then

    $$
    \frac{\partial f}{\partial x} = \frac{\partial f}{\partial r}\,\frac{\partial r}{\partial x}.
    $$

    In a graph, $\partial f/\partial r$ is the gradient $g$ arriving at node $r$ from above and
    $\partial r/\partial x$ is the node's local rule: a `mul` node $r = a\,b$ sends $g\,b$ to $a$
    and $g\,a$ to $b$; an `add` node passes $g$ unchanged to both; `exp` sends $g\,e^a$. A value
    used twice receives the **sum** of the gradients from its two uses. Pick an expression and
    its inputs, then move the step slider: the orange node is where the backward pass is, teal
    nodes already hold their final gradient, and the text shows each op's rule as its docstring
    states it (the engine's ops, and for `mul` the class below).

    Each op is a `Function` with two halves side by side: `forward` computes $r$ from the input
    arrays and saves what the rule will need; `backward` receives $g = \partial f/\partial r$ and
    returns one share per input. Here is multiplication, the op behind every `·` in the
    expressions below (the stepper builds them with this very class):
    """)
    return


@app.class_definition
class Mul(Function):
    """r = a·b;  ∂r/∂a = b, ∂r/∂b = a."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)  # the rule needs both factors
        return a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * b, g * a  # g·∂r/∂a to a, g·∂r/∂b to b


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    **Change this cell:** in `Mul.backward`, swap the two shares (`return g * a, g * b`). The
    stepper's `mul` nodes then send each factor the other's share: for $f = (x\,y + \sin x)^2$
    at the default inputs, $\partial f/\partial x$ and $\partial f/\partial y$ below change, the
    line under the graph says they no longer match the engine's, and the gradient check of
    section 3 jumps from about $10^{-10}$ to about 1.

    The backward pass visits the nodes in a **topological order** of the graph, reversed, so
    that a node is processed only after every node that uses it has sent its share. A
    depth-first search finds one: place a tensor after all the tensors it was computed from,
    then read the list backwards.
    """)
    return


@app.function
def topological_sort(root):
    """Every tensor ``root`` depends on that needs a gradient, ``root`` first and each tensor after
    all the tensors that use it: a depth-first post-order (inputs before the op that reads them),
    reversed. (Recursive, which suits these small graphs; engine.autograd keeps its own stack, so
    that a chain of 100,000 ops needs no recursion.)"""
    order, visited = [], set()

    def visit(t):
        if t in visited:
            return
        visited.add(t)
        if t.grad_fn is not None:
            for parent in reversed(t.grad_fn.parents):  # the last input first, as engine.autograd does
                if parent.requires_grad:
                    visit(parent)
        order.append(t)

    visit(root)
    return order[::-1]


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    The walk itself: the output's gradient is $\partial f/\partial f = 1$; then, in that order,
    each tensor $r$ made by an op hands its gradient $\bar r$ to the op's `backward`, and each
    input $a$ adds the share it gets back to what it already has,

    $$
    \bar a \mathrel{+}= \bar r\,\frac{\partial r}{\partial a}.
    $$

    The `+=` is what makes a value used several times right. A share that has the shape of a
    broadcast input's copy (a bias added to every row) is summed back to the input's own shape
    (`unbroadcast`). Pick "x used three times" in the stepper to watch the shares arrive at $x$
    one by one and add up. The stepper's order and its gradients are these two functions'.
    """)
    return


@app.function
def backward_walk(root):
    """The backward pass: ∂f/∂f = 1, then for each tensor r in topological order, each input a of
    the op that made r receives ā += r̄ · ∂r/∂a (the op's backward). Returns {tensor: ∂f/∂tensor}."""
    grads = {root: np.ones_like(root.data)}
    for r in topological_sort(root):
        if r.grad_fn is None:  # an input: its gradient is complete
            continue
        shares = type(r.grad_fn).backward(r.grad_fn, grads[r])
        shares = shares if isinstance(shares, tuple) else (shares,)
        for a, share in zip(r.grad_fn.parents, shares):
            if a.requires_grad and share is not None:
                share = unbroadcast(share, a.shape)
                grads[a] = grads[a] + share if a in grads else share
    return grads


@app.cell
def _():
    expr = mo.ui.dropdown(
        options={spec["label"]: name for name, spec in graphs.EXPRESSIONS.items()},
        value="f = (x·y + sin x)²",
        label="expression",
    )
    x_val = mo.ui.slider(-3.0, 3.0, step=0.1, value=1.5, label="x", show_value=True)
    y_val = mo.ui.slider(-3.0, 3.0, step=0.1, value=-0.5, label="y", show_value=True)
    z_val = mo.ui.slider(-3.0, 3.0, step=0.1, value=0.3, label="z", show_value=True)
    return expr, x_val, y_val, z_val


@app.cell
def _(expr):
    # one position per step of the chosen expression's backward pass (its graph's shape, whatever the inputs)
    _last = len(graphs.expression_graph(expr.value, 1.0, 1.0, 1.0).order) - 1
    bp_step = mo.ui.slider(0, _last, step=1, value=0, label="backward step", show_value=True)
    return (bp_step,)


@app.cell
def _(bp_step, expr, x_val, y_val, z_val):
    # the expression built with the Mul above, sorted and walked by the two functions above, beside the engine's
    graph, input_grads, engine_grads = lab.stepper_graphs(
        expr.value, x_val.value, y_val.value, z_val.value, mul=Mul.apply, sort=topological_sort, walk=backward_walk
    )
    _k = bp_step.value
    graph_step = graph.step(_k)
    _note = f"Step {_k} of {len(graph.order) - 1}."
    _fig = lab.stepper_chart(graph, _k, height=260)  # the graph's drawing at step _k
    _grads = " · ".join(f"∂f/∂{name} = **{g:.6g}**" for name, g in sorted(input_grads.items()))
    graph_sums = graph.accumulation(_k)
    _gap = max(abs(input_grads.get(k, np.nan) - g) for k, g in engine_grads.items())
    _agree = (
        f"The engine's own `backward()` gives the same (largest difference {_gap:.1e})."
        if _gap < 1e-9
        else "The engine's own `backward()` gives "
        + " · ".join(f"∂f/∂{k} = **{g:.6g}**" for k, g in sorted(engine_grads.items()))
        + ": **they differ**, so a cell above no longer computes the chain rule."
    )
    _order = " → ".join(
        f"**{graph.node(i).label}**" if j == _k else graph.node(i).label for j, i in enumerate(graph.order)
    )
    _sums = [
        f"**{graph.node(i).label}** is read {n} times: {got} of {n} contributions arrived, partial sum "
        f"**{total:.6g}**" + (" (its final gradient)." if got == n else ".")
        for i, (total, got, n) in graph_sums.items()
    ]
    mo.vstack(
        [
            mo.hstack([expr, x_val, y_val, z_val], wrap=True),
            mo.md(rf"""$${graphs.EXPRESSIONS[expr.value]["latex"]} = {graph.node(graph.output).value:.6g}$$"""),
            bp_step,
            ui.chart(_fig),
            mo.md(  # one markdown block: each conversion costs about 1.5 ms, at every move of a slider
                f"{_note} {graph_step.text()}\n\n"
                f"Backward order (a topological order, reversed: every node after all the nodes that use it): "
                f"{_order}.\n\n"
                + ("  \n".join(_sums) if _sums else "No value is used twice in this expression.")
                + f"\n\nAfter the whole pass, `backward_walk` gives: {_grads}. "
                + _agree
            ),
        ]
    )
    return graph, graph_step, graph_sums, input_grads


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ### Why backward: vector–Jacobian products

    Each node's local rule is a **vector–Jacobian product**: it receives the row vector
    $\bar r = \partial f/\partial r$ and sends $\bar r\,\partial r/\partial a$ to each input $a$, without
    ever forming the Jacobian $\partial r/\partial a$ (for `tanh` on a vector that Jacobian is
    diagonal; the rule is an elementwise product). The chain rule can also run the other way:
    **forward mode** pushes a tangent $\dot x$ through the graph together with the values, each node
    computing a Jacobian–vector product $\dot r = (\partial r/\partial a)\,\dot a$. One forward-mode
    pass gives the derivative along **one** input direction; one reverse pass gives the derivative
    with respect to **all** inputs of one output. A loss is one number of millions of parameters,
    so deep learning runs in reverse (Baydin et al., *Automatic differentiation in machine
    learning: a survey*, 2018).

    Below, $f(x) = v\cdot\tanh(Wx)$ with $x\in\mathbb R^n$ and $h = 64$ hidden units, differentiated
    both ways in NumPy by the two functions below, each counting its multiply-adds (an $h\times n$
    matrix–vector product costs $hn$, an elementwise product or a dot product of length $h$ costs
    $h$), and checked against the engine's `backward()`.
    """)
    return


@app.function
def forward_mode(W, v, x):
    """Forward mode for f(x) = v·tanh(Wx): one pass per input direction eᵢ, each carrying a
    tangent beside the values (a Jacobian–vector product J·eᵢ):
        a = Wx, t = tanh a, f = v·t;    ȧ = W eᵢ, ṫ = (1 − t²) ⊙ ȧ, ∂f/∂xᵢ = ḟ = v·ṫ.
    Returns the gradient and the multiply-adds spent."""
    h, n = W.shape
    grad, madds = np.empty(n), 0
    for i in range(n):
        e_i = np.zeros(n)
        e_i[i] = 1.0
        t = np.tanh(W @ x)  # the values: Wx, tanh, and f = v·t would make h·n + 2h
        t_dot = (1.0 - t * t) * (W @ e_i)  # the tangents beside them: h·n + 2h
        grad[i] = v @ t_dot  # ḟ = v·ṫ: h
        madds += (h * n + 2 * h) + (h * n + 3 * h)
    return grad, madds


@app.function
def reverse_mode(W, v, x):
    """Reverse mode for f(x) = v·tanh(Wx): one forward pass that keeps its values, then one
    backward pass from ∂f/∂f = 1 (a vector–Jacobian product 1·J):
        a = Wx, t = tanh a, f = v·t;    t̄ = 1·v, ā = t̄ ⊙ (1 − t²), x̄ = Wᵀ ā.
    Returns the gradient and the multiply-adds spent."""
    h, n = W.shape
    t = np.tanh(W @ x)  # the forward pass, t kept for the backward pass: h·n + h, and f = v·t
    # (h more) is the value it reports, which the gradient does not need
    t_bar = 1.0 * v  # ∂f/∂t: h
    a_bar = t_bar * (1.0 - t * t)  # ∂f/∂a: 2h
    return W.T @ a_bar, (h * n + 2 * h) + 3 * h + h * n  # x̄ = Wᵀ ā: h·n


@app.function
def mode_costs(n, h=64):
    """The multiply-adds the two functions above count, in closed form: a plain forward pass
    h·n + 2h; forward mode n passes of values and tangents, n·((h·n + 2h) + (h·n + 3h)); reverse
    mode one forward and one backward pass, (h·n + 2h) + (3h + h·n). Returns the three."""
    forward = h * n + 2 * h
    return forward, n * (forward + h * n + 3 * h), forward + 3 * h + h * n


@app.cell
def _():
    mode_n = mo.ui.slider(steps=list(lab.MODE_INPUTS), value=100, label="inputs n", show_value=True)
    # the cost curves over n, in forward passes: the closed form, computed once
    mode_sweep = {_n: np.array(mode_costs(_n)[1:]) / mode_costs(_n)[0] for _n in lab.MODE_INPUTS}
    mode_chart = plot.curves(
        np.array(list(mode_sweep)),
        {
            "forward mode": np.array([c[0] for c in mode_sweep.values()]),
            "reverse mode": np.array([c[1] for c in mode_sweep.values()]),
        },
        x_title="inputs n",
        y_title="cost in forward passes",
        log_x=True,
        log_y=True,
        height=220,
        colors={"forward mode": "sgd", "reverse mode": "adam"},
        title="The full gradient of f: ℝⁿ → ℝ",
    )
    return mode_chart, mode_n, mode_sweep


@app.cell
def _(mode_chart, mode_n):
    modes = lab.mode_view(forward_mode, reverse_mode, mode_costs, mode_n.value, seed=0)
    _chart = mode_chart + plot.rule(mode_n.value, orient="x")
    _err = max(
        np.abs(modes.grad_forward_mode - modes.grad_autograd).max(),
        np.abs(modes.grad_reverse_mode - modes.grad_autograd).max(),
    )
    mo.vstack(
        [
            mode_n,
            mo.md(
                "| mode | passes | multiply-adds | in forward passes |\n|---|---|---|---|\n"
                f"| forward (JVPs) | {modes.jvp_passes} | {modes.jvp_madds:,} | {modes.forward_mode_in_forwards:.3g} |\n"
                f"| reverse (VJP) | {modes.vjp_passes} (1 forward + 1 backward) | {modes.vjp_madds:,} | "
                f"{modes.reverse_mode_in_forwards:.3g} |"
            ),
            ui.chart(_chart),
            mo.md(
                f"Both gradients equal autograd's to **{_err:.1e}**. Reverse mode costs "
                f"**{modes.reverse_mode_in_forwards:.3g}** forward passes whatever n is; forward mode costs "
                f"about 2n = **{modes.forward_mode_in_forwards:.3g}**. The price of reverse mode is memory: "
                "it keeps every intermediate value of the forward pass until the backward pass has used it."
            ),
        ]
    )
    return (modes,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ### What backward keeps

    The backward pass needs values from the forward pass: `tanh`'s rule uses its output
    ($1 - t^2$), a linear layer's weight gradient $dZ^\top X$ uses its input $X$. So every op saves
    what its rule will read, and it stays in memory until `backward()` has used it. Below, the
    playground's `mlp` (section 4; 2 inputs, width 64, 2 classes, tanh) runs one forward pass with a
    cross-entropy loss, and `saved_floats` walks the recorded graph with `topological_sort` (section
    1) and adds up what each op saved with `ctx.save_for_backward`, an array shared with a
    parameter or an earlier op counted once.
    """)
    return


@app.function
def saved_floats(loss, parameters):
    """What the graph of ``loss`` keeps for the backward pass: the arrays each op saved with
    ctx.save_for_backward, in backward order, each counted once (two ops may keep the same
    array) and the parameters left out (they are in memory anyway). Returns [(op, floats)]."""
    kept, per_op = [p.data for p in parameters], []
    for t in topological_sort(loss):
        if t.grad_fn is None:  # an input or a parameter: no op made it
            continue
        fresh = 0
        for a in t.grad_fn.saved_tensors or ():
            if isinstance(a, np.ndarray) and not any(np.shares_memory(a, k) for k in kept):
                kept.append(a)
                fresh += a.size
        per_op.append((type(t.grad_fn).__name__, fresh))
    return per_op


@app.cell
def _():
    mem_batch = mo.ui.slider(steps=[1, 8, 32, 128, 512, 2048, 8192], value=128, label="batch B", show_value=True)
    mem_depth = mo.ui.slider(1, 8, step=1, value=2, label="hidden layers", show_value=True)
    return mem_batch, mem_depth


@app.cell
def _(mem_batch, mem_depth):
    saved = lab.saved_for_backward(
        saved_floats,
        mlp(2, 2, 64, mem_depth.value, "tanh", seed=0),
        mem_batch.value,
        depth=mem_depth.value,
        width=64,
        seed=0,
    )
    _rows = "\n".join(f"| {op} | {n:,} |" for op, n in saved.per_op)
    mo.vstack(
        [
            mo.hstack([mem_batch, mem_depth]),
            mo.md(
                f"One forward pass on **{saved.batch}** examples leaves **{saved.activation_floats:,}** floats "
                f"({saved.activation_bytes / 1024:,.1f} KiB in float64) for the backward pass, "
                f"**{saved.activation_floats // saved.batch:,}** per example, against "
                f"**{saved.parameter_floats:,}** parameters. The saved activations grow in proportion to the "
                "batch and by B × width with each hidden layer; the parameters do not depend on the batch. "
                "This is why a large batch runs out of memory in training but not at inference, where "
                "`no_grad()` records nothing."
            ),
            mo.md("| op (backward order) | floats it saved |\n|---|---|\n" + _rows),
        ]
    )
    return (saved,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ### Memory against recompute

    When the saved activations outgrow the memory, keep fewer of them and compute the rest again.
    **Gradient checkpointing** (Chen et al., *Training deep nets with sublinear memory cost*, 2016;
    PyTorch's `torch.utils.checkpoint`) cuts a chain of $n$ layers into segments of $k$ layers. The
    forward pass runs under `no_grad()`, which records nothing, and keeps only each segment's
    input, its **checkpoint**. The backward pass then takes the segments from the last: it runs
    one segment forward again from its checkpoint, this time recording its graph, and calls
    `backward()` on it with the gradient that arrived from the segment above. At any moment the
    memory holds the checkpoints below the current segment and one segment's graph, about
    $\lceil n/k\rceil + k$ activations instead of $n + 1$: the fewest, $2\sqrt n$, at $k = \sqrt n$.
    The price is a second forward pass of every layer.

    Below, a chain $h_{i+1} = \tanh(h_i W_i^\top)$ of $n$ layers of width 32 on a batch of 16, with
    $f = \sum h_n$, is differentiated both ways by the two functions below; `saved_floats`
    (above) counts what each graph keeps.
    """)
    return


@app.function
def chain(h, weights):
    """A deep chain of dense tanh layers: h_{i+1} = tanh(h_i W_iᵀ) for each W_i of ``weights``."""
    for W in weights:
        h = (h @ W.T).tanh()
    return h


@app.function
def checkpointed_backward(x, weights, k):
    """Gradient checkpointing of f = Σ chain(x, weights): a forward pass under no_grad() that keeps
    the input of each segment of k layers; then, from the last segment, that segment's forward again
    from its checkpoint, recording its graph, and backward() with the gradient from the segment
    above (ones at the top). Leaves ∂f/∂W in each W.grad; returns the most floats held at once:
    the checkpoints below the current segment and that segment's saved arrays."""
    starts = list(range(0, len(weights), k))
    checkpoints, h = [], x
    with engine.no_grad():
        for s in starts:
            checkpoints.append(h.data)
            h = chain(h, weights[s : s + k])
    upstream, peak = np.ones(h.shape), 0
    for j in reversed(range(len(starts))):
        h0 = Tensor(checkpoints[j], requires_grad=True)
        out = chain(h0, weights[starts[j] : starts[j] + k])  # the segment's second forward pass
        segment = sum(n for _, n in saved_floats(out, weights[starts[j] : starts[j] + k]))
        peak = max(peak, sum(c.size for c in checkpoints[:j]) + segment)
        out.backward(upstream)
        upstream = h0.grad.numpy()  # ∂f/∂(this segment's input): the gradient for the segment below
    return peak


@app.cell
def _():
    ck_depth = mo.ui.slider(steps=list(lab.CHAIN_DEPTHS), value=16, label="layers n", show_value=True)
    ck_segment = mo.ui.slider(steps=list(lab.CHAIN_SEGMENTS), value=4, label="segment k", show_value=True)
    return ck_depth, ck_segment


@app.cell
def _(ck_depth, ck_segment):
    recompute = lab.checkpointing_view(chain, checkpointed_backward, saved_floats, ck_depth.value, ck_segment.value)
    _r = recompute
    _ks = np.array([_k for _k in lab.CHAIN_SEGMENTS if _k <= _r.depth])
    _chart = lab.remembered(
        ("checkpointing chart", _r.depth),
        lambda: plot.curves(  # the formula: once per n
            _ks,
            {"checkpointed ⌈n/k⌉ + k": np.ceil(_r.depth / _ks) + _ks, "plain n + 1": np.full(len(_ks), _r.depth + 1.0)},
            x_title="segment k",
            y_title="activations held at once",
            log_x=True,
            log_y=True,
            height=200,
            colors={"checkpointed ⌈n/k⌉ + k": "adam", "plain n + 1": "sgd"},
            dashed=("plain n + 1",),
            title=f"Peak memory of a chain of {_r.depth} layers",
        ),
    )
    mo.vstack(
        [
            mo.hstack([ck_depth, ck_segment]),
            mo.md(
                "| backward | floats held at once | in activations (16 × 32) | layer forward passes |\n|---|---|---|---|\n"
                f"| plain | {_r.plain_floats:,} | {_r.plain_floats / _r.activation:g} | {_r.depth} |\n"
                f"| checkpointed, k = {_r.segment} | {_r.checkpointed_floats:,} | "
                f"{_r.checkpointed_floats / _r.activation:g} | {2 * _r.depth} |"
            ),
            ui.chart(_chart + plot.rule(_r.segment, orient="x")),
            mo.md(
                f"Checkpointing holds **{_r.checkpointed_floats / _r.plain_floats:.0%}** of plain backprop's floats "
                f"for twice the forward work, and its gradients differ from plain backprop's by at most "
                f"**{_r.max_difference:.1e}** (the same operations on the same numbers)."
                + (
                    f" A segment of {ck_segment.value} layers covers the whole chain: one segment, the plain graph "
                    "after a forward pass that kept nothing."
                    if ck_segment.value >= _r.depth
                    else ""
                )
            ),
        ]
    )
    return (recompute,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 2. A dense layer by hand

    We write a layer the way PyTorch stores it. A batch $X$ has shape $n\times d_{in}$, one example
    per **row**; the weights $W$ have shape $d_{out}\times d_{in}$ and the bias $b$ has $d_{out}$
    entries; the layer computes

    $$
    Z = X W^\top + b \qquad (n\times d_{out}, \text{ the bias broadcast over the rows}).
    $$

    Why store $W$ as (out, in)? Row $w_j$ of $W$ is output unit $j$'s weight vector, so unit $j$
    computes $z_j = w_j\cdot x + b_j$, the textbook neuron; and $XW^\top$ applies every unit to every
    example in one matrix product. This is `nn.Linear`'s `weight` and `F.linear(x, W, b)`, and the
    convention of every notebook and cheat sheet in this course. Given the upstream gradient
    $dZ = \partial L/\partial Z$, the chain rule applied to each entry gives three matrix products:

    $$
    dW = dZ^\top X, \qquad db = \sum_{\text{rows}} dZ, \qquad dX = dZ\,W .
    $$

    The shapes check the formulas: $dW$ must have $W$'s shape, so $dZ^\top$ ($d_{out}\times n$) times
    $X$ ($n\times d_{in}$); $db$ sums over the batch because $b$ was copied to every row; $dX$
    passes the gradient on to the previous layer. Below they are computed in plain NumPy by this
    function and by the engine's autograd (through `F.linear`, the op `nn.Linear` calls) for
    random $X$, $W$, $b$ and a random upstream $dZ$:
    """)
    return


@app.function
def linear_backward(X, W, dZ):
    """The gradients of Z = X Wᵀ + b (W stored (out, in)) given dZ = ∂L/∂Z:
    dW = dZᵀ X,  db = Σ_rows dZ,  dX = dZ W."""
    return {"dW": dZ.T @ X, "db": dZ.sum(axis=0), "dX": dZ @ W}


@app.cell
def _():
    dense_n = mo.ui.slider(1, 64, step=1, value=4, label="batch n", show_value=True)
    dense_in = mo.ui.slider(1, 32, step=1, value=3, label="d_in", show_value=True)
    dense_out = mo.ui.slider(1, 32, step=1, value=2, label="d_out", show_value=True)
    # shown here: the cell they re-run sends its table and maps, not the sliders again
    mo.hstack([dense_n, dense_in, dense_out])
    return dense_in, dense_n, dense_out


@app.cell
def _(dense_in, dense_n, dense_out):
    dense = graphs.dense_layer_gradients(linear_backward, dense_n.value, dense_in.value, dense_out.value, seed=0)
    _diff = dense.max_difference
    _rows = "\n".join(f"| {k} | {dense.shapes[k]} | {_diff[k]:.1e} |" for k in ("dW", "db", "dX"))
    _small = dense_in.value * dense_out.value <= 64
    _m = float(np.abs(dense.by_hand["dW"]).max()) or 1.0
    _maps = mo.hstack(
        [
            ui.chart(
                plot.heatmap(
                    dense.by_hand["dW"],
                    x_title="input feature",
                    y_title="output unit",
                    title="dW = dZᵀX (NumPy)",
                    scheme="redblue",
                    domain=(-_m, _m),
                    annotate=_small,
                    height=160,
                )
            ),
            ui.chart(
                plot.heatmap(
                    dense.autograd["dW"],
                    x_title="input feature",
                    y_title="output unit",
                    title="dW (autograd)",
                    scheme="redblue",
                    domain=(-_m, _m),
                    annotate=_small,
                    height=160,
                )
            ),
        ],
        widths=[1, 1],
    )
    mo.vstack(
        [
            mo.md(f"X is {dense.shapes['X']}, W is {dense.shapes['W']} (out, in), Z = XWᵀ + b is {dense.shapes['Z']}."),
            mo.md("| gradient | shape | max abs(NumPy − autograd) |\n|---|---|---|\n" + _rows),
            _maps,
        ]
    )
    return (dense,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 3. The gradient check and its V

    To test a gradient, compare it with a central difference:

    $$
    f'(x) \approx \frac{f(x+h) - f(x-h)}{2h}, \qquad
    \text{error} \approx \underbrace{\frac{|f'''|}{6}h^2}_{\text{truncation}} + \underbrace{\frac{\varepsilon\,|f|}{h}}_{\text{round-off}} .
    $$

    A large $h$ leaves a truncation error that shrinks like $h^2$; a tiny $h$ subtracts two nearly
    equal numbers and divides the rounding error $\varepsilon$ by $h$. On a log-log plot the error is
    a **V**. Its bottom, where the sum's derivative is zero ($|f'''|\,h/3 = \varepsilon|f|/h^2$), is
    the rule

    $$
    h^* = \left(\frac{3\,\varepsilon\,|f(x)|}{|f'''(x)|}\right)^{1/3},
    $$

    $\varepsilon^{1/3}$ times a factor of the function. float32 has
    $\varepsilon\approx1.2\times10^{-7}$ ($\varepsilon^{1/3}\approx5\times10^{-3}$), float64
    $2.2\times10^{-16}$ ($\varepsilon^{1/3}\approx6\times10^{-6}$): this is why
    `engine.gradcheck` (like `torch.autograd.gradcheck`) works in float64. The measured bottom is
    flat and jagged: $\varepsilon|f|/h$ bounds the round-off, but the rounding errors of
    $f(x+h)$ and $f(x-h)$ add or cancel by chance, so the lowest dot falls anywhere within about a
    decade of $h^*$, and the error at $h^*$ is typically within a factor of five of the lowest
    dot's, above or below it. The line under the chart gives $h^*$ at the point you choose, the
    error there and the lowest dot.
    Here $f(x) = \sin(x)\,e^x/(1+x^2)$, the exact $f'$ and $f'''$ come from the quotient and
    product rules, and the dashed lines mark autograd's own error. The chart calls the first
    function at every $h$, the line the second:
    """)
    return


@app.function
def central_difference(f, x, h):
    """f′(x) ≈ (f(x + h) − f(x − h)) / 2h: error ≈ |f‴| h²/6 (truncation) + ε|f|/h (round-off)."""
    return (f(x + h) - f(x - h)) / (2 * h)


@app.function
def step_rule(f_x, f3_x, eps):
    """The bottom of the V: d/dh (|f‴| h²/6 + ε|f|/h) = |f‴| h/3 − ε|f|/h² = 0 at
    h* = (3ε|f|/|f‴|)^(1/3), ε^(1/3) times a factor of the function."""
    return (3 * eps * abs(f_x) / abs(f3_x)) ** (1 / 3)


@app.cell
def _():
    gc_x0 = mo.ui.slider(-2.0, 2.0, step=0.1, value=0.7, label="point x", show_value=True)
    gc_h = mo.ui.slider(steps=[10.0**k for k in range(-12, 1)], value=1e-4, label="step h", show_value=True)
    return gc_h, gc_x0


@app.cell
def _(gc_h, gc_x0):
    # the V over lab.FD_STEPS measured with central_difference, its bottom, and step_rule's h* against it
    fd, fd_best, fd_rule, _curves = lab.step_rule_view(central_difference, step_rule, gc_x0.value)
    fd_at_h = lab.finite_difference_errors(central_difference, gc_x0.value, hs=[gc_h.value])
    _chart = _curves + plot.rule(gc_h.value, orient="x")
    _row = " · ".join(
        f"{dt}: error **{fd_at_h.error(dt)[0]:.2e}** at h = {gc_h.value:.0e}, smallest "
        f"**{fd_best[dt][1]:.1e}** at h ≈ {fd_best[dt][0]:.0e}"
        for dt in ("float32", "float64")
    )
    _rule = " · ".join(fd_rule[dt].describe() for dt in ("float32", "float64"))
    mo.vstack(
        [
            mo.hstack([gc_x0, gc_h]),
            ui.chart(_chart),
            mo.md(_row + ". (Errors below 10⁻¹⁸ are drawn at 10⁻¹⁸.)"),
            mo.md("The rule: " + _rule + "."),
        ]
    )
    return fd, fd_at_h, fd_best, fd_rule


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    **Change this cell:** make `central_difference` (above the chart) the one-sided difference,
    `return (f(x + h) - f(x)) / h`. Its truncation error shrinks only like $h$ (the $f''$ term no
    longer cancels), so the V's left arm gets half as steep, the float64 bottom moves from
    $h \approx 10^{-6}$ to $h \approx 10^{-8}$ ($\sqrt\varepsilon$ instead of $\varepsilon^{1/3}$),
    and the smallest error grows from about $10^{-11}$ to a few times $10^{-9}$.

    ### The gradient check

    A gradient check runs the central difference on every input element: move one element by $\pm h$, hold the
    others, and compare the slope with what `backward()` put in its `.grad`. It works in float64
    with $h = 10^{-6}$, near the bottom of float64's V, and reduces $f$ to one number with a
    sum, as `engine.gradcheck` does (which also weights the sum at random so that errors cannot
    cancel).
    """)
    return


@app.function
def gradient_check(f, inputs, h=1e-6):
    """The largest |∂F/∂xᵢ (autograd) − (F(x + h eᵢ) − F(x − h eᵢ))/2h| over every element xᵢ of
    every input, in float64, with F = Σ f(inputs)."""
    arrays = [np.array(a, dtype=np.float64) for a in inputs]
    tensors = [Tensor(a, requires_grad=True) for a in arrays]
    f(*tensors).sum().backward()
    grads = [np.zeros_like(a) if t.grad is None else t.grad.numpy() for a, t in zip(arrays, tensors)]  # None: unused

    def total(k, i, value):  # F with element i of input k set to value
        moved = [a.copy() for a in arrays]
        moved[k][i] = value
        with engine.no_grad():
            return float(f(*(Tensor(a) for a in moved)).sum().data)

    worst = 0.0
    for k, a in enumerate(arrays):
        for i in np.ndindex(a.shape):
            numeric = central_difference(lambda v, k=k, i=i: total(k, i, v), a[i], h)
            worst = max(worst, abs(numeric - grads[k][i]))
    return worst


@app.cell
def _(expr, x_val, y_val, z_val):
    # the stepper's expression, built with the Mul of section 1, at the stepper's inputs
    grad_check_error = gradient_check(
        lambda x, y, z: graphs.EXPRESSIONS[expr.value]["build"](x, y, z, Mul.apply),
        [x_val.value, y_val.value, z_val.value],
    )
    mo.md(
        f"The gradient check of the stepper's expression ({graphs.EXPRESSIONS[expr.value]['label']}) at "
        f"x = {x_val.value:g}, y = {y_val.value:g}, z = {z_val.value:g}: largest difference "
        f"**{grad_check_error:.1e}**"
        + (
            ", within what rounding and the h² term leave: the gradients are right."
            if grad_check_error < 1e-6
            else ": **the gradients are wrong**."
        )
    )
    return (grad_check_error,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ### Write your own op

    A new op is a `Function` with a forward and a backward, and the gradient check is how you know
    its backward is right. Here is one to write: the block of a residual network, a dense layer
    added to its own input,

    $$
    Z = X + X W^\top + b \qquad (X:\ n\times d,\quad W:\ d\times d,\quad b:\ d \text{ entries, copied to every row}).
    $$

    Its backward returns one share per input. $X$ is read twice, by the skip and by the product,
    so its two shares add; $W$'s share is section 2's $dZ^\top X$; the bias was copied to every
    row, so its share is summed over the rows:

    $$
    dX = dZ + dZ\,W, \qquad dW = dZ^\top X, \qquad db = \sum_{\text{rows}} dZ .
    $$
    """)
    return


@app.class_definition
class ResidualLinear(Function):
    """Z = X + X Wᵀ + b (W square, b broadcast over the rows):
    dX = dZ + dZ W (X is read twice: its two shares add), dW = dZᵀ X, db = Σ_rows dZ."""

    @staticmethod
    def forward(ctx, X, W, b):
        ctx.save_for_backward(X, W)
        return X + X @ W.T + b

    @staticmethod
    def backward(ctx, dZ):
        X, W = ctx.saved_tensors
        return dZ + dZ @ W, dZ.T @ X, dZ.sum(axis=0)


@app.function
def with_bug(op, bug):
    """``op`` with one of the common backward bugs put into its shares (dX, dW, db):
    "no accumulation": dX = dZ W, the skip's share dZ not added;
    "missing transpose": dW = Xᵀ dZ, the transpose of dZᵀ X (the same shape: W is square);
    "broadcast not summed back": db = the bias's share of one row, dZ[0], not the sum over the rows."""

    class Buggy(op):
        @staticmethod
        def backward(ctx, dZ):
            dX, dW, db = op.backward(ctx, dZ)
            if bug == "no accumulation":
                dX = dZ @ ctx.saved_tensors[1]
            elif bug == "missing transpose":
                dW = dW.T
            elif bug == "broadcast not summed back":
                db = dZ[0]
            return dX, dW, db

    return Buggy


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    The table grades `ResidualLinear` on $\tanh(Z)$ for a random $X$ ($4\times3$), $W$ and $b$:
    `gradient_check` (above) on each input alone, and `engine.gradcheck` on all three, which names
    the worst element of the first input it finds wrong. The rows below it put one of three common
    bugs into the op's backward (`with_bug`): each leaves the shapes right, so nothing fails
    until the gradient is checked, and each shows up only in the input it touches. The third
    would hide in a test with a batch of one row, where one row's share is the sum. Under the
    table, pick a bug to inject and see where in each input autograd and the central
    difference disagree.

    **Change this cell:** in `ResidualLinear.backward`, return `dZ @ W` as the first share (forget
    the skip). The first row then fails on $X$ alone, like the "no accumulation" row. Or return
    `dZ` itself as the bias's share: the row stays right, because the engine sums a share with
    the output's shape back to the input's shape (`unbroadcast`, section 1), as PyTorch does.
    """)
    return


@app.cell
def _():
    op_checks = [lab.check_op(gradient_check, ResidualLinear)] + [
        lab.check_op(gradient_check, with_bug(ResidualLinear, _bug), bug=_bug) for _bug in lab.OP_BUGS
    ]
    _rows = "\n".join(
        f"| {_c.bug or '**your op**'} | "
        + " | ".join(f"{_c.errors[_k]:.1e}" for _k in ("X", "W", "b"))
        + f" | {'passes' if _c.gradcheck is True else _c.gradcheck} |"
        for _c in op_checks
    )
    _mine = op_checks[0]
    mo.vstack(
        [
            mo.md(
                "| backward | largest error in dX | in dW | in db | `engine.gradcheck` |\n|---|---|---|---|---|\n"
                + _rows
            ),
            mo.callout(
                mo.md(
                    "Your op's backward agrees with central differences on every input."
                    if not _mine.caught
                    else "Your op's backward is **wrong** in "
                    + ", ".join(f"d{_k}" for _k, _e in _mine.errors.items() if _e > 1e-6)
                    + ": compare it with the rules above."
                ),
                kind="success" if not _mine.caught else "warn",
            ),
        ]
    )
    return (op_checks,)


@app.cell
def _():
    op_bug = mo.ui.dropdown(options=["none", *lab.OP_BUGS], value="missing transpose", label="inject into the op")
    return (op_bug,)


@app.cell
def _(op_bug):
    # autograd minus central differences, element by element, for the op with the chosen bug put in
    _op = ResidualLinear if op_bug.value == "none" else with_bug(ResidualLinear, op_bug.value)
    op_errors = lab.op_error_maps(central_difference, _op)
    _all = np.vstack([np.atleast_2d(op_errors[_k]) for _k in ("X", "W", "b")])  # X's rows, W's rows, b: one map
    _m = max(float(np.abs(_all).max()), 0.1)  # rounding's 1e-10 stays white
    _map = ui.chart(
        plot.heatmap(
            _all,
            y_labels=[
                f"{_k} row {_i}" if _k != "b" else "b"
                for _k in ("X", "W", "b")
                for _i in range(np.atleast_2d(op_errors[_k]).shape[0])
            ],
            x_title="column",
            title="autograd − central difference, element by element",
            scheme="redblue",
            domain=(-_m, _m),
            annotate=True,
            height=200,
        )
    )
    _what = {
        "none": "Every element agrees to about 10⁻¹⁰: rounding and the h² term, nothing more.",
        "no accumulation": "Every element of dX is off, each by minus the share the skip sends it (the dZ that "
        "was never added); dW and db are untouched.",
        "missing transpose": "dW's diagonal is right and the rest is wrong: a matrix and its transpose share "
        "their diagonal, so a test that looked only at it would pass.",
        "broadcast not summed back": "Every entry of db is off, by minus the shares of the rows that were not "
        "summed; with a batch of one row there would be none.",
    }[op_bug.value]
    mo.vstack([op_bug, _map, mo.md(_what)])
    return (op_errors,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 4. The playground

    A multilayer perceptron with `depth` hidden layers of `width` units learns to separate 2-D
    points (75 % for training, 25 % held out for validation, the inputs standardised with the mean
    and spread of the training points alone, so the held-out points stay unseen), trained with
    cross-entropy on mini-batches of 32. The data set is a preset, drawn on a canvas where you can
    add points of any class, or clear it and draw your own. The page opens on a network trained
    with the default settings (moons, width 16, depth 2, tanh, Adam at η = 0.03, 60 epochs),
    trained in advance and shipped with the course. Change
    a setting and the picture shows the untrained network of your settings (its first loss is
    $\ln K$ only if its logits are equal at every point; the line under the map says how far they
    are from that) until **train** trains it. The background colour is the predicted class,
    paler where the network is unsure.
    Things to try: spirals with depth 1 against depth 3; a learning rate of 3 with SGD; ReLU
    with width 2 (dead units); sigmoid with depth 4.

    The network is `mlp` below. Training is the loop of every network in this course: for each
    mini-batch, the loss, its gradient by `backward()`, and one step of the optimizer
    (`train_step`), here with the cross-entropy of the logits $z$ and the classes $y$,
    $L = -\frac1B\sum_i \log \operatorname{softmax}(z_i)_{y_i}$. The page's figures of the
    playground call these functions.
    """)
    return


@app.function
def mlp(n_in, n_out, width=16, depth=2, activation="tanh", seed=0):
    """The playground's network, the logits of K classes for a batch of points x:
    h₀ = x,  h_l = φ(h_{l−1} W_lᵀ + b_l) for l = 1 … depth,  logits = h_depth W_outᵀ + b_out.
    W ~ N(0, 2/fan_in) (He) for ReLU-like φ, N(0, 2/(fan_in + fan_out)) (Glorot) otherwise; b = 0."""
    rng = np.random.default_rng(seed)
    sizes = [n_in] + [width] * depth + [n_out]
    layers = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        with engine.random.fork_rng(seed):  # nn.Linear's own first draws leave the global stream as it was
            layer = nn.Linear(fan_in, fan_out)
        std = np.sqrt(2 / fan_in) if activation in ("relu", "gelu", "silu") else np.sqrt(2 / (fan_in + fan_out))
        layer.weight.data = rng.normal(0, std, (fan_out, fan_in))
        layer.bias.data = np.zeros(fan_out)
        layers += [layer, lab.ACTIVATIONS[activation]()]  # φ: nn.Tanh(), nn.ReLU(), ...
    return nn.Sequential(*layers[:-1])  # no φ after the last layer: its outputs are the logits


@app.function
def train_step(model, optimizer, X, y):
    """One step on a batch: L = cross-entropy(model(X), y), then ∇L by backward(), then
    θ ← update(θ, ∇L). The old gradients are cleared first: backward() adds to .grad."""
    loss = F.cross_entropy(model(Tensor(X)), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return float(loss.data)


@app.function
def evaluate(model, X, y):
    """(cross-entropy, accuracy) of ``model`` on (X, y), without recording a graph."""
    with engine.no_grad():
        logits = model(Tensor(X))
        return float(F.cross_entropy(logits, y).data), float(np.mean(logits.data.argmax(1) == y))


@app.function
def train_playground(model, optimizer, data, epochs, batch_size=32, seed=1, progress=None):
    """Mini-batch training: each epoch visits the training points in a new random order, one
    train_step per batch, then records loss and accuracy on the training and validation sets.
    Stops when the training loss is no longer finite (diverged). Returns the history."""
    X, y, X_val, y_val = data
    rng = np.random.default_rng(seed)
    history = {"train_loss": [], "val_loss": [], "train_acc": [], "val_acc": []}
    with np.errstate(over="ignore", invalid="ignore"):  # a diverging run overflows: shown, not warned
        for epoch in range(epochs):
            order = rng.permutation(len(X))
            for start in range(0, len(X), batch_size):
                batch = order[start : start + batch_size]
                train_step(model, optimizer, X[batch], y[batch])
            for split, (Xs, ys) in (("train", (X, y)), ("val", (X_val, y_val))):
                loss, accuracy = evaluate(model, Xs, ys)
                history[f"{split}_loss"].append(loss)
                history[f"{split}_acc"].append(accuracy)
            if progress is not None:
                progress(epoch)
            if not np.isfinite(history["train_loss"][-1]):
                break
    return history


@app.function
def overfit_one_batch(model, X, y, steps=300, batch=16, lr=0.01):
    """The sanity check: Adam on the same ``batch`` examples only, ``steps`` times. A correct
    model, loss and update drive that loss to ≈ 0. Returns the loss at every step."""
    optimizer = optim.Adam(model.parameters(), lr=lr)
    return np.array([train_step(model, optimizer, X[:batch], y[:batch]) for _ in range(steps)])


@app.function
def train_default_playground():
    """What the page opens on: the default network trained on the default data, and the overfit
    check of that network, from seed 0 (the checkpoint ``backprop_playground``)."""
    d = lab.PLAYGROUND_DEFAULTS
    data = lab.make_playground_data(d["data"], n=lab.PLAYGROUND_POINTS, noise=d["noise"], seed=0)
    k = int(max(data[1].max(), data[3].max())) + 1
    model = mlp(2, k, d["width"], d["depth"], d["activation"], seed=0)
    initial_loss = evaluate(model, data[0], data[1])[0]
    history = train_playground(
        model, lab.playground_optimizer(d["optimizer"], model.parameters(), d["lr"]), data, d["epochs"]
    )
    run = lab.playground_run(model, data, history, initial_loss, grid_size=lab.PLAYGROUND_GRID)
    overfit = overfit_one_batch(
        mlp(2, k, lab.overfit_width(d["width"]), d["depth"], d["activation"], seed=0),
        data[0],
        data[1],
        steps=lab.OVERFIT_STEPS,
    )
    return {
        "settings": dict(d, points=lab.PLAYGROUND_POINTS, grid=lab.PLAYGROUND_GRID, overfit_steps=lab.OVERFIT_STEPS),
        "history": {k: np.array(v) for k, v in history.items()},
        "initial_loss": initial_loss,
        "grid_x": run.grid_x,
        "grid_y": run.grid_y,
        "grid_probs": run.grid_probs,
        "overfit_losses": overfit,
    }


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    **Change this cell:** delete `optimizer.zero_grad()` from `train_step`. Every `backward()`
    then adds to the gradients of all the steps before it, so each step follows the sum of all
    past gradients. The page no longer opens on the shipped network (it was trained by the cells
    as they were) and says so; press **train** and **overfit one batch** to see what your loop
    does: the loss curve below jumps about instead of falling smoothly, and the one-batch loss
    stalls far above 0.
    """)
    return


@app.cell
def _():
    _d = lab.PLAYGROUND_DEFAULTS  # the page opens on these, with the model trained on them
    _optimizers = {"SGD": "sgd", "SGD + momentum 0.9": "momentum", "Adam": "adam"}
    pg_data = mo.ui.dropdown(options=list(lab.DATASETS), value=_d["data"], label="data")
    # debounced: each noise level re-draws the canvas and the untrained network once, where the slider stops
    pg_noise = mo.ui.slider(0.0, 0.5, step=0.05, value=_d["noise"], label="noise", show_value=True, debounce=True)
    pg_width = mo.ui.slider(2, 64, step=2, value=_d["width"], label="width", show_value=True)
    pg_depth = mo.ui.slider(1, 4, step=1, value=_d["depth"], label="depth", show_value=True)
    pg_act = mo.ui.dropdown(options=list(lab.ACTIVATIONS), value=_d["activation"], label="activation")
    pg_opt = mo.ui.dropdown(
        options=_optimizers, label="optimizer", value=next(k for k, v in _optimizers.items() if v == _d["optimizer"])
    )
    pg_lr = mo.ui.slider(
        steps=[0.0001, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0],
        value=_d["lr"],
        label="learning rate",
        show_value=True,
    )
    pg_epochs = mo.ui.slider(5, 300, step=5, value=_d["epochs"], label="epochs", show_value=True)
    train_button = mo.ui.run_button(label="train")
    mo.vstack(
        [
            mo.hstack([pg_data, pg_noise, pg_width, pg_depth], wrap=True),
            mo.hstack([pg_act, pg_opt, pg_lr, pg_epochs, train_button], wrap=True),
        ]
    )
    return pg_act, pg_data, pg_depth, pg_epochs, pg_lr, pg_noise, pg_opt, pg_width, train_button


@app.cell
def _(pg_data, pg_noise):
    # the preset is the drawing's start (its keyboard path): edit it, or spray a set of your own
    pg_preset = lab.playground_preset(pg_data.value, pg_noise.value)
    pg_canvas = widgets.scatter(
        lab.CANVAS_CLASSES,
        bounds=lab.CANVAS_BOUNDS,
        size=(360, 360),
        start=(np.concatenate(pg_preset[0::2]), np.concatenate(pg_preset[1::2])),
    )
    pg_canvas_start = pg_canvas.value
    return pg_canvas, pg_canvas_start, pg_preset


@app.cell
def _(pg_canvas, pg_canvas_start, pg_preset):
    # an untouched canvas is the preset itself; a drawing is standardised and split like it
    pg_drawn = widgets.scatter_data(pg_canvas.value, bounds=lab.CANVAS_BOUNDS)
    pg_split = None
    pg_untouched = pg_canvas.value.get("data") == pg_canvas_start.get("data")
    if pg_untouched:
        pg_split = pg_preset
    elif pg_drawn.problem is None:
        pg_split = lab.split_drawn(pg_drawn.X, pg_drawn.y, seed=0)
    pg_classes = 0 if pg_split is None else int(max(pg_split[1].max(), pg_split[3].max())) + 1
    mo.vstack(
        [
            ui.cached_md("**The data** (drag to spray points of the chosen class; the preset above is the start)"),
            pg_canvas,
            mo.callout(mo.md(f"**No data set to train on.** {pg_drawn.problem}"), kind="warn")
            if pg_split is None
            else ui.cached_md(
                f"{sum(len(part) for part in pg_split[1::2])} points, "
                f"{len(np.unique(np.concatenate(pg_split[1::2])))} classes."
            ),
        ]
    )
    return pg_classes, pg_split, pg_untouched


@app.cell
def _(pg_act, pg_data, pg_depth, pg_noise, pg_untouched, pg_width):
    # the page opens on the defaults: their data, model and overfit check are shown before any click
    pg_same_net = pg_untouched and lab.is_default_playground(
        dict(
            data=pg_data.value,
            noise=pg_noise.value,
            width=pg_width.value,
            depth=pg_depth.value,
            activation=pg_act.value,
        )
    )
    return (pg_same_net,)


@app.cell
def _():
    # the shipped default run, loaded only if it was made by the lesson cells as they are on this page
    pg_default, pg_default_problem = lab.load_default_playground(
        mlp, train_step, evaluate, train_playground, overfit_one_batch, train_default_playground
    )
    return pg_default, pg_default_problem


@app.cell
def _(
    pg_act,
    pg_classes,
    pg_default,
    pg_default_problem,
    pg_depth,
    pg_epochs,
    pg_lr,
    pg_opt,
    pg_same_net,
    pg_split,
    pg_width,
    train_button,
):
    # the untrained network of the chosen settings: built again only when the data or the architecture changes
    pg_untrained, pg_first_loss = None, None
    if pg_split is not None:

        def _untrained():
            _model = mlp(2, pg_classes, pg_width.value, pg_depth.value, pg_act.value, seed=0)
            return (
                lab.playground_run(
                    _model, pg_split, initial_loss=evaluate(_model, *pg_split[:2])[0], grid_size=lab.PLAYGROUND_GRID
                ),
                lab.initial_loss(_model, pg_split[0], pg_split[1], pg_classes),
            )  # why it is not ln K

        pg_untrained, pg_first_loss = lab.remembered(
            ("untrained", id(pg_split), pg_width.value, pg_depth.value, pg_act.value, mlp, evaluate),
            _untrained,
            keep=pg_split,
        )
    pg_run, pg_run_is_default = None, False
    if train_button.value and pg_split is not None:
        _model = mlp(2, pg_classes, pg_width.value, pg_depth.value, pg_act.value, seed=0)
        _initial = evaluate(_model, *pg_split[:2])[0]
        _optimizer = lab.playground_optimizer(pg_opt.value, _model.parameters(), pg_lr.value)
        with mo.status.progress_bar(total=pg_epochs.value, title="training", remove_on_exit=True) as _bar:
            _history = train_playground(
                _model, _optimizer, pg_split, pg_epochs.value, progress=lambda _epoch: _bar.update()
            )
        pg_run = lab.playground_run(_model, pg_split, _history, _initial, grid_size=lab.PLAYGROUND_GRID)
    elif (
        pg_same_net
        and pg_default is not None
        and lab.is_default_playground(dict(optimizer=pg_opt.value, lr=pg_lr.value, epochs=pg_epochs.value))
    ):
        pg_run, pg_run_is_default = pg_default.run, True
    loss_overview = None  # the loss per epoch of a run, shown with its zoom below
    if pg_run is not None and not pg_run.diverged:
        # The loss per epoch, written in the cell: drag across it to pick a stretch of epochs.
        _h = pg_run.history
        _epochs = np.arange(1, len(_h["train_loss"]) + 1)
        _splits = np.array(["train", "validation"], dtype=object)
        _curves = plot.data(
            epoch=np.tile(_epochs, 2),
            loss=np.concatenate([_h["train_loss"], _h["val_loss"]]),
            split=np.repeat(_splits, len(_epochs)),
        )
        _brush = alt.selection_interval(name="epoch_zoom", encodings=["x"])
        loss_overview = ui.chart_control(
            alt.Chart(_curves, width="container", height=170, title="cross-entropy per epoch · drag across it to zoom")
            .mark_line()
            .encode(
                alt.X("epoch:Q", title="epoch"),
                alt.Y("loss:Q", title="cross-entropy", scale=alt.Scale(type="log")),
                alt.Color(
                    "split:N",
                    title="",
                    legend=alt.Legend(orient="bottom"),
                    scale=alt.Scale(domain=list(_splits), range=[plot.color("train"), plot.color("validation")]),
                ),
            )
            .add_params(_brush)
        )
    if pg_split is None:
        _out = mo.md("Draw a data set above to see the network.")
    else:
        _k = int(max(pg_split[1].max(), pg_split[3].max())) + 1
        _u, _f = pg_untrained, pg_first_loss
        _initial = (
            f"Initial training loss **{_u.initial_loss:.4f}**, ln K = **{np.log(_k):.4f}** for K = {_k} classes. "
            "The untrained logits z are not equal at each point, and around equal logits the loss is ln K − "
            f"(the true class's centred logit z_y − mean z, on average **{_f.true_class:.3f}**) + ½ (the mean "
            f"square of a point's centred logits, on average **{2 * _f.spread:.3f}**) ≈ **{_f.approximation:.4f}**."
        )
        if pg_run is None:
            _fig = lab.regions_map(_u, pg_split, title="untrained network")
            _side = mo.md(
                f"{_initial} The untrained network of the `mlp` cell. "
                + (
                    f"{pg_default_problem[0].upper()}{pg_default_problem[1:]}."
                    if pg_same_net and pg_default_problem
                    else f"These are not the settings the page opened on: **train** runs {pg_epochs.value} epochs with them."
                )
            )
        elif pg_run.diverged:
            _fig = lab.regions_map(_u, pg_split, title="untrained network")
            _side = mo.callout(
                mo.md(
                    f"**Training diverged** after {len(pg_run.history['train_loss'])} epochs: the loss "
                    f"became inf or NaN. The learning rate {pg_lr.value:g} is too large for "
                    f"{pg_opt.value}; lower it."
                ),
                kind="warn",
            )
        else:
            _h = pg_run.history
            _fig = lab.regions_map(pg_run, pg_split, title=f"after {len(_h['train_loss'])} epochs")
            _side = mo.vstack(
                [
                    mo.md(
                        "Trained with the default settings above and shipped with the course: this map and the curves "
                        "beside and below it come from the shipped checkpoint, which the lesson cells above made; **train** "
                        "runs them as they are now, with your settings. " + _initial
                    )
                    if pg_run_is_default
                    else mo.md("Trained just now by the lesson cells above, with your settings. " + _initial),
                    ui.chart(
                        plot.loss_curves(
                            {"train": _h["train_acc"], "validation": _h["val_acc"]},
                            y_title="accuracy",
                            height=150,
                            title="Accuracy",
                        )
                    ),
                    mo.md(
                        f"final: train loss **{_h['train_loss'][-1]:.4f}**, validation accuracy "
                        f"**{100 * _h['val_acc'][-1]:.1f} %**. " + lab.overfitting_note(_h)
                    ),
                ]
            )
        _out = mo.hstack([ui.chart(_fig), _side], widths=[1, 1])
    _out
    return loss_overview, pg_first_loss, pg_run, pg_run_is_default, pg_untrained


@app.cell
def _(loss_overview, pg_run):
    mo.stop(loss_overview is None)
    # The stretch brushed above (the second half of training until one is), on a linear axis.
    _h = pg_run.history
    _n = len(_h["train_loss"])
    _lo, _hi = ui.selected(loss_overview, "epoch_zoom", "epoch", default=[_n / 2, _n])
    _first, _last = max(1, int(np.ceil(_lo))), min(_n, int(np.floor(_hi)))
    if _last - _first < 1:  # narrower than two epochs: widen it to two
        _first = max(1, min(_first, _n - 1))
        _last = min(_n, _first + 1)
    _train = np.asarray(_h["train_loss"][_first - 1 : _last])
    _val = np.asarray(_h["val_loss"][_first - 1 : _last])
    _epochs = np.arange(_first, _last + 1)
    _zoom = (
        alt.Chart(
            plot.data(
                epoch=np.tile(_epochs, 2),
                loss=np.concatenate([_train, _val]),
                split=np.repeat(np.array(["train", "validation"], dtype=object), len(_epochs)),
            ),
            width="container",
            height=170,
            title=f"epochs {_first} to {_last}",
        )
        .mark_line(point=True)
        .encode(
            alt.X("epoch:Q", title="epoch", scale=alt.Scale(domain=[_first, _last], nice=False)),
            alt.Y("loss:Q", title="cross-entropy", scale=alt.Scale(zero=False)),
            alt.Color(
                "split:N",
                title="",
                legend=None,
                scale=alt.Scale(domain=["train", "validation"], range=[plot.color("train"), plot.color("validation")]),
            ),
        )
    )
    _overfits = _train[-1] < _train[0] and _val[-1] > _val[0]
    mo.vstack(
        [
            loss_overview,
            mo.md(
                f"Over epochs {_first} to {_last} the training loss went from **{_train[0]:.4f}** to "
                f"**{_train[-1]:.4f}** and the validation loss from **{_val[0]:.4f}** to **{_val[-1]:.4f}**"
                + (
                    ": the network is fitting its training points at the expense of new ones (overfitting)."
                    if _overfits
                    else "."
                )
            ),
            ui.chart(_zoom),
        ]
    )
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ### Overfit one batch

    Before a long training run, take **one** small batch (16 examples here) and train on it alone.
    A correct model, loss and update can memorise 16 points, so the loss must fall close to 0;
    if it stalls, something is wrong (a detached tensor, a forgotten `zero_grad()`, labels that
    do not match the inputs, a learning rate far off) and no amount of data will fix it.
    """)
    return


@app.cell
def _():
    overfit_button = mo.ui.run_button(label="overfit one batch")
    return (overfit_button,)


@app.cell
def _(
    overfit_button,
    pg_act,
    pg_classes,
    pg_default,
    pg_default_problem,
    pg_depth,
    pg_same_net,
    pg_split,
    pg_width,
):
    overfit_losses, _when = None, ""
    if overfit_button.value and pg_split is not None:
        _model = mlp(2, pg_classes, lab.overfit_width(pg_width.value), pg_depth.value, pg_act.value, seed=0)
        overfit_losses = overfit_one_batch(_model, pg_split[0], pg_split[1], steps=lab.OVERFIT_STEPS)
        _when = "Run just now by the lesson cells above. "
    elif pg_same_net and pg_default is not None:
        overfit_losses = pg_default.overfit_losses
        _when = (
            "Run on the default data and network and shipped with the course (the shipped checkpoint); the "
            "button reruns it with the lesson cells as they are now and the playground's width, depth and "
            "activation. "
        )
    if overfit_losses is not None:
        _ok = overfit_losses[-1] < 0.05
        _out = mo.vstack(
            [
                ui.chart(
                    plot.loss_curves(
                        {"train": overfit_losses},
                        x_title="step",
                        y_title="loss on the batch",
                        log_y=True,
                        height=180,
                        title=f"One batch, {lab.OVERFIT_STEPS} Adam steps",
                    )
                ),
                mo.callout(
                    mo.md(
                        f"{_when}Final loss on the batch: **{overfit_losses[-1]:.2e}**. "
                        + (
                            "The network can memorise a batch: the pipeline works."
                            if _ok
                            else "It did not get below 0.05: with this activation and size the network "
                            "struggles even to memorise (try tanh or more width), or a lesson cell above is "
                            "broken."
                        )
                    ),
                    kind="success" if _ok else "warn",
                ),
            ]
        )
    elif pg_split is None:
        _out = mo.md("Draw a data set in the playground first: the batch comes from its training points.")
    elif pg_same_net and pg_default_problem:
        _out = mo.md(f"{pg_default_problem[0].upper()}{pg_default_problem[1:]}.")
    else:
        _out = mo.md("The button runs the check with the playground's width, depth and activation.")
    mo.vstack([overfit_button, _out])
    return (overfit_losses,)


@app.cell
def _():
    _rule = lab.step_rule_view(central_difference, step_rule, 0.7)[2]["float64"]
    _decades = max(1.0, np.ceil(10 * _rule.decades_from_best) / 10)
    _reuse = graphs.expression_graph("reuse", 1.0, 1.0, 0.0)
    _one, _two = (
        lab.saved_for_backward(saved_floats, mlp(2, 2, 64, d, "tanh", seed=0), 100, depth=d, width=64) for d in (1, 2)
    )
    _held = lab.checkpointing_view(chain, checkpointed_backward, saved_floats, 16, 2)
    exercises_check = {
        "neuron": exercises.NumberExercise(
            question=r"**1.** For $f = \sigma(y\,x + z)$ at $x = 2$, $y = -1$, $z = 0.5$, use the local rules to find "
            r"$\partial f/\partial y$. (Three decimals; $\sigma(-1.5) \approx 0.1824$.)",
            truth=graphs.input_gradients(graphs.expression_graph("neuron", 2.0, -1.0, 0.5))["y"],
            hint="σ′(a) = σ(a)(1 − σ(a)), then the mul node sends g·x to y.",
            abs_tol=2e-3,
            placeholder="e.g. 0.25",
            label="∂f/∂y =",
        ),
        "dw": exercises.NumberExercise(
            question="**2.** `nn.Linear(10, 5)` maps a batch of 32 examples with 10 features to 5 outputs. How many "
            "rows does its weight gradient dW = dZᵀX have?",
            truth=graphs.dense_layer_gradients(linear_backward, 32, 10, 5).shapes["dW"][0],
            hint="dW has W's shape, and PyTorch stores W as (out, in).",
            placeholder="e.g. 32",
            label="rows of dW =",
        ),
        "h": exercises.NumberExercise(
            question="**3.** In float64 at x = 0.7, around which step h is the central difference most accurate? "
            f"Answer with the exponent, log₁₀ h (within {_decades:.1f} decades counts: the V's bottom is flat).",
            truth=float(np.log10(_rule.h)),
            hint="Balance h²|f‴|/6 against ε|f|/h with ε ≈ 2.2·10⁻¹⁶; at x = 0.7, |f| and |f‴| are both about 0.85.",
            explanation=f"The rule gives h* = {_rule.h:.1e}; the lowest measured dot is at h ≈ {_rule.best_h:.0e}, "
            f"{_rule.decades_from_best:.1f} decades away, where rounding happened to be kind.",
            abs_tol=_decades,
            placeholder="e.g. -3",
            label="log₁₀ h =",
        ),
        "uses": exercises.NumberExercise(
            question=r"**4.** In $f = x\,e^{x} + x\,y$, how many contributions are added up to make "
            r"$\partial f/\partial x$ during the backward pass?",
            truth=_reuse.uses(next(n.id for n in _reuse.nodes if n.label == "x")),
            hint="Count every place an op reads x: each one sends x a share (step through 'x used three times').",
            explanation="Two mul nodes and the exp node each read x.",
            placeholder="e.g. 2",
            label="contributions =",
        ),
        "modes": exercises.NumberExercise(
            question=r"**5.** For $f(x) = v\cdot\tanh(Wx)$ with $n = 500$ inputs and 64 hidden units, how many "
            "forward passes' worth of multiply-adds does **forward mode** spend on the full gradient? "
            "(Within 5 %.)",
            truth=mode_costs(500)[1] / mode_costs(500)[0],
            hint="One JVP pass per input, each computing the values and their tangents (about two forwards).",
            rel_tol=0.05,
            explanation="Reverse mode: about 2, whatever n is.",
            placeholder="e.g. 500",
            label="forward passes =",
        ),
        "saved": exercises.NumberExercise(
            question="**6.** The MLP of *What backward keeps* gets one more hidden layer of width 64. With a batch of "
            "100 examples, how many more floats does its forward pass keep for the backward pass?",
            truth=_two.activation_floats - _one.activation_floats,
            hint="The new linear layer reads its input, a batch of width-64 activations; tanh's output is then "
            "what the next layer reads (counted once).",
            explanation="B × width: one activation matrix per layer.",
            placeholder="e.g. 100",
            label="more floats =",
        ),
        "held": exercises.NumberExercise(
            question="**7.** In *Memory against recompute*, a chain of 16 layers is checkpointed with segments of 2 "
            "layers. How many activations (arrays of 16 × 32) does it hold at most during the backward pass?",
            truth=_held.checkpointed_floats / _held.activation,
            hint="While the top segment runs: the checkpoints below it, plus that segment's input and its outputs.",
            explanation="⌈n/k⌉ + k = 8 + 2; plain backprop holds n + 1 = 17.",
            placeholder="e.g. 17",
            label="activations =",
        ),
    }
    answers_check = ui.answer_boxes(exercises_check)
    return answers_check, exercises_check


@app.cell
def _(answers_check, exercises_check):
    ui.exercise_list("## 5. Check yourself", exercises_check, answers_check)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 6. The same in your own script

    Autograd on a scalar expression, a float64 gradient check, and a small MLP trained on moons
    (a few epochs, so the cell stays quick):
    """)
    return


@app.cell
def _():
    def _script():
        import numpy as np

        import engine
        import engine.functional as F
        from engine import nn, optim

        x = engine.tensor(np.array(1.5), requires_grad=True)
        y = engine.tensor(np.array(-0.5), requires_grad=True)
        f = (x * y + x.sin()) ** 2
        f.backward()  # the chain rule, node by node
        ok = engine.gradcheck(
            lambda a, b: (a * b + a.sin()) ** 2, (np.array([1.5]), np.array([-0.5]))
        )  # float64 central differences

        X, labels = engine.data.make_moons(200, noise=0.15, seed=0)
        with engine.random.fork_rng(0):
            model = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 2))
        opt = optim.Adam(model.parameters(), lr=0.03)
        for epoch in range(10):
            for xb, yb in engine.data.batches(X, labels, batch_size=32, seed=epoch):
                loss = F.cross_entropy(model(engine.tensor(xb)), yb)
                opt.zero_grad()  # gradients accumulate otherwise
                loss.backward()
                opt.step()
        return (
            f"x.grad = {float(x.grad):.6g}, y.grad = {float(y.grad):.6g}; gradcheck passed: {ok}; "
            f"last mini-batch loss after 10 epochs: {float(loss.data):.4f}"
        )

    mo.md(f"`{_script()}`")
    return


@app.cell(hide_code=True)
def _():
    mo.md(toc.nav_md(METADATA["id"]))
    return


if __name__ == "__main__":
    app.run()
