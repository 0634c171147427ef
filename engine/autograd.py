"""Reverse-mode automatic differentiation: the ``Function`` base class and the backward pass.

A primitive operation is a subclass of :class:`Function` with two static methods, as in
``torch.autograd.Function``::

    class Mul(Function):
        @staticmethod
        def forward(ctx, a, b):            # NumPy arrays in, a NumPy array out
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, grad):           # dL/d(out) in, one dL/d(input) per tensor input out
            a, b = ctx.saved_tensors
            return grad * b, grad * a

``Mul.apply(x, y)`` runs ``forward`` on the tensors' data and, when a gradient is wanted, records
the node so that :func:`backward` can walk the graph later. Three jobs are done here, once, so that
no op has to repeat them:

* **un-broadcasting**: an op may return a gradient with the (broadcast) shape of its output; it is
  summed back to each input's own shape here;
* **dtype**: a gradient is cast to its input's dtype;
* **accumulation**: a tensor used twice receives the sum of both gradients, and a leaf's ``.grad``
  is added to in place (a reference taken before a second ``backward`` sees the sum);
* **saved arrays are checked**: every tensor carries a version counter that in-place writes bump
  (``x[i] = v``, ``x += y``, ``x.add_(y)``, an optimizer step), and each write is stamped with the
  next number of one global sequence that also numbers the recorded ops. If an array an op saved
  was written after the op was recorded, the gradient would be computed from the wrong values, so
  :func:`backward` raises instead, naming the op (recording costs one number per op);
* **freeing**: after ``backward`` the saved arrays are released (unless ``retain_graph=True``); a
  second ``backward`` through the same ops is then an error, as in PyTorch.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import operator
import weakref
from heapq import heappop, heappush

import numpy as np

_grad_enabled = True
_tensor_class = None  # set by engine.tensor on import (avoids a circular import per op call)
_new_object = object.__new__
_data_of, _requires_grad_of = operator.attrgetter("data"), operator.attrgetter("_requires_grad")
# Every recorded node, every in-place write and every in-place rebase takes the next number, so
# that backward can tell whether a write (or a new history) came after a node used the tensor.
_sequence = itertools.count(1)
_rebased = False  # set once an in-place op has given some tensor a new history (see _parents)
_last_write = 0  # the sequence number of the latest in-place write (nodes recorded after it: no check)


# id(tensor) -> (weak reference to it, {handle id: hook}) for the few tensors with a
# ``register_hook``; an entry leaves with its tensor. (Not a WeakKeyDictionary: that compares keys
# with ==, which is elementwise for tensors.) Empty, it costs backward one truth test.
_tensor_hooks: dict = {}


class RemovableHandle:
    """What ``register_hook`` and the module hook registrations return: ``handle.remove()`` undoes it."""

    _ids = itertools.count()

    def __init__(self, hooks: dict):
        self.id = next(RemovableHandle._ids)
        self._hooks = hooks

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False


def register_hook(tensor, hook) -> RemovableHandle:
    """Call ``hook(grad)`` each time backward computes ``tensor``'s gradient (a Tensor); a returned
    Tensor replaces the gradient. As ``torch.Tensor.register_hook``."""
    if not callable(hook):
        raise TypeError(f"register_hook: the hook must be callable, got {type(hook).__name__}")
    if not tensor.requires_grad:
        raise RuntimeError("register_hook: cannot register a hook on a tensor that doesn't require gradient")
    key = id(tensor)
    if key not in _tensor_hooks:
        _tensor_hooks[key] = (weakref.ref(tensor, lambda _, key=key: _tensor_hooks.pop(key, None)), {})
    hooks = _tensor_hooks[key][1]
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


def _run_hooks(tensor, grad: np.ndarray) -> np.ndarray:
    """``grad`` through ``tensor``'s hooks, in registration order."""
    for hook in list(_tensor_hooks[id(tensor)][1].values()):
        result = hook(_tensor_class._wrap(grad))
        if result is not None:
            new = result.data if isinstance(result, _tensor_class) else np.asarray(result)
            if new.shape != grad.shape:
                raise RuntimeError(
                    f"register_hook: the hook returned a gradient of shape {new.shape}, expected {grad.shape}"
                )
            grad = new.astype(grad.dtype, copy=False)
    return grad


def is_grad_enabled() -> bool:
    """True unless inside ``with engine.no_grad():`` (or ``set_grad_enabled(False)``)."""
    return _grad_enabled


class _GradMode:
    """A grad mode: a context manager and a decorator, as ``torch.no_grad`` and its kin.

    ``mode`` is the value ``is_grad_enabled()`` takes inside (None: left as it is). As a decorator
    it wraps a plain function, or a generator function (the mode then holds while the generator
    runs, and the caller's mode is back whenever it yields, as PyTorch); bare ``@no_grad`` works too.
    """

    def __new__(cls, *args, **kwargs):
        self = super().__new__(cls)
        if args and callable(args[0]):  # bare @engine.no_grad: decorate at once
            self.__init__()
            return self(args[0])
        return self

    def __init__(self, mode=None):
        self.mode = mode
        self._previous = []

    def __enter__(self):
        global _grad_enabled
        self._previous.append(_grad_enabled)
        if self.mode is not None:
            _grad_enabled = self.mode
        return self

    def __exit__(self, *exc):
        global _grad_enabled
        _grad_enabled = self._previous.pop()
        return False

    def __call__(self, fn):
        mode = self.mode  # each call gets its own context (recursion and generators nest safely)
        if inspect.isgeneratorfunction(fn):

            @functools.wraps(fn)
            def generator(*args, **kwargs):
                gen = fn(*args, **kwargs)
                with _GradMode(mode):
                    request = gen.send(None)
                while True:
                    try:
                        response = yield request
                    except GeneratorExit:
                        with _GradMode(mode):
                            gen.close()
                        raise
                    except BaseException as err:  # noqa: BLE001 - handed to the generator, as torch
                        with _GradMode(mode):
                            request = gen.throw(err)
                    else:
                        with _GradMode(mode):
                            request = gen.send(response)

            return generator

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with _GradMode(mode):
                return fn(*args, **kwargs)

        return wrapper


class no_grad(_GradMode):
    """Context manager and decorator under which operations build no graph.

    Use it for evaluation and for parameter updates, exactly like ``torch.no_grad``.
    """

    def __init__(self, fn=None):
        super().__init__(False)


class enable_grad(_GradMode):
    """Turn graph building back on inside a ``no_grad`` block (a context manager or decorator)."""

    def __init__(self, fn=None):
        super().__init__(True)


class inference_mode(_GradMode):
    """As ``torch.inference_mode(mode=True)``: no graph inside (here the same as ``no_grad``;
    ``inference_mode(False)`` changes nothing)."""

    def __init__(self, mode=True):
        super().__init__(False if (mode is True or callable(mode)) else None)


class set_grad_enabled(_GradMode):
    """``set_grad_enabled(flag)``: called, it sets the mode at once; as ``with`` it restores the
    previous mode at the end of the block; as a decorator it holds while the function runs."""

    def __init__(self, mode):
        global _grad_enabled
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled: mode must be a bool, got {type(mode).__name__} {mode!r}")
        super().__init__(mode)
        self._before = _grad_enabled
        _grad_enabled = mode

    def __enter__(self):  # the mode is already set: remember what to restore
        self._previous.append(self._before)
        return self

    def __call__(self, fn):
        global _grad_enabled
        _grad_enabled = self._before  # a decorator changes nothing until fn runs
        return super().__call__(fn)


class Function:
    """Base class of every primitive op; the instance is the ``ctx`` and the graph node.

    Attributes set by :meth:`apply`: ``parents`` (the input tensors) and ``needs_input_grad``
    (one bool per input, set before ``forward`` runs and empty when no graph is recorded), which
    lets ``forward`` save only what ``backward`` will use and ``backward`` skip gradients nobody
    asked for.
    ``saved_tensors`` is ``()`` until ``save_for_backward`` and ``None`` once backward freed it.
    A subclass whose output may share memory with its first input (a view: reshape, permute,
    expand, basic indexing) sets ``shares_input = True``, so that both share one version counter.
    """

    __slots__ = ("parents", "needs_input_grad", "_seq", "__dict__")
    saved_tensors = ()
    shares_input = False

    @staticmethod
    def forward(ctx, *args, **kwargs):  # pragma: no cover - abstract
        raise NotImplementedError

    @staticmethod
    def backward(ctx, grad):  # pragma: no cover - abstract
        raise NotImplementedError

    def save_for_backward(self, *arrays):
        self.saved_tensors = arrays

    @classmethod
    def apply(cls, *inputs, **kwargs):
        """Run the op on Tensors ``inputs`` (keyword arguments are non-differentiable settings)."""
        ctx = cls.__new__(cls)
        # needs is known before forward, so that forward saves only what backward will need.
        # Speed: one to three inputs (nearly every op; three: a Linear with its bias) are spelled
        # out, more go through map and attrgetter; a list comprehension builds a function and a
        # frame per call, which cost a tiny MLP step ~1.5 % of its instructions
        n = len(inputs)
        if n == 2:
            a, b = inputs
            arrays = (a.data, b.data)
            needs = (a._requires_grad, b._requires_grad) if _grad_enabled else ()
        elif n == 1:
            arrays = (inputs[0].data,)
            needs = (inputs[0]._requires_grad,) if _grad_enabled else ()
        elif n == 3:
            a, b, c = inputs
            arrays = (a.data, b.data, c.data)
            needs = (a._requires_grad, b._requires_grad, c._requires_grad) if _grad_enabled else ()
        else:
            arrays = tuple(map(_data_of, inputs))
            needs = tuple(map(_requires_grad_of, inputs)) if _grad_enabled else ()
        ctx.needs_input_grad = needs
        recorded = True in needs
        data = cls.forward(ctx, *arrays, **kwargs)
        # Tensor._wrap spelled out (keep the two in step). Speed: one call less per op, and the
        # graph slots are written once (~0.1 µs of an op's ~1.5 µs of bookkeeping)
        out = _new_object(_tensor_class)
        out.data = data if isinstance(data, np.ndarray) else np.asarray(data)
        out._grad = None
        out._retain = False
        out._vc = [0, False, 0]
        out._history = None
        if recorded:
            ctx.parents = inputs
            ctx._seq = next(_sequence)
            out._ctx = ctx
            out._requires_grad = True
        else:
            out._ctx = None
            out._requires_grad = False
        if cls.shares_input:
            _share_version(out, inputs[0], recorded)
        return out

    def __repr__(self):
        return f"<{type(self).__name__}>"


def _share_version(out, source, recorded: bool) -> None:
    """A view shares its source's version counter (writing into either changes both)."""
    if np.may_share_memory(out.data, source.data):
        out._vc = source._vc
        if recorded:  # a graph now holds two tensors over one memory: see Tensor._inplace
            source._vc[1] = True


def _is_or_views(a, d) -> bool:
    return a is d or (isinstance(a, np.ndarray) and a.base is not None and a.base is d)


def _check_saved(node, output) -> None:
    """Raise if backward cannot use ``node``'s saved arrays: freed, or written in place since the
    node was recorded (a write stamps the tensor's counter with a later sequence number).

    ``output`` is the tensor backward reached ``node`` through: its output, or, once an in-place op
    gave that tensor a new history, the copy standing for its old value (the in-place op then
    flagged the node if it had saved the overwritten array).
    """
    saved = node.saved_tensors
    if saved is None:
        raise RuntimeError(
            f"backward: trying to backward through the graph a second time: the arrays that "
            f"{type(node).__name__} saved for its gradient were freed by the first backward(). "
            "Pass backward(retain_graph=True) the first time if you need to go through the graph "
            "again (or recompute the forward pass)."
        )
    seq = node._seq
    modified = None
    for i, p in enumerate(node.parents):
        counter = p._vc
        if counter[2] > seq:
            d = p.data
            for a in saved:
                if _is_or_views(a, d):
                    modified = (a, f"input {i}", counter)
    counter = output._vc
    if counter[2] > seq:
        for a in saved:
            if _is_or_views(a, output.data):
                modified = (a, "output 0", counter)
    overwritten = node.__dict__.get("_output_overwritten")
    if overwritten is not None:
        modified = overwritten
    if modified is not None:
        a, what, counter = modified
        raise RuntimeError(
            f"backward: one of the variables needed for gradient computation has been modified by "
            f"an inplace operation: the {a.dtype} array of shape {a.shape} that "
            f"{type(node).__name__} saved ({what}) was written after the forward pass (it is now at "
            f"version {counter[0]}). Something wrote into it between the forward pass and "
            "backward() (x[...] = v, x += y, x.add_(y), an optimizer step, ...), so its gradient "
            "would be computed from the wrong values. Make the change after backward(), or use an "
            "out-of-place op (x = x + y)."
        )


def unbroadcast(grad: np.ndarray, shape: tuple) -> np.ndarray:
    """Sum ``grad`` over the axes along which an input of ``shape`` was broadcast.

    Broadcasting copies an input along new leading axes and along axes of length 1; by the chain
    rule each copy's gradient flows back to the one original element, so those axes are summed.
    """
    if grad.shape == shape:
        return grad
    extra = grad.ndim - len(shape)
    if extra < 0:
        return np.broadcast_to(grad, shape)
    axes = tuple(range(extra)) + tuple(i + extra for i, n in enumerate(shape) if n == 1 and grad.shape[i + extra] != 1)
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)
    if extra:
        grad = grad.reshape(shape)
    return grad


def _as_used_by(tensor, node):
    """``tensor`` as it was when ``node`` used it: an in-place op may have given it a new history
    since, and ``node`` must send its gradient to the old one."""
    for rebased_at, before in tensor._history:
        if node._seq < rebased_at:
            return before
    return tensor


def _parents(node) -> tuple:
    parents = node.parents
    if not _rebased:  # the common case: no in-place op ever rewrote a history
        return parents
    for p in parents:
        if p._history is not None:
            return tuple(_as_used_by(q, node) if q._history is not None else q for q in parents)
    return parents


def topological_order(root, leaves: bool = True) -> list:
    """The tensors reachable from ``root`` that need a gradient, ``root`` first and each tensor
    after all its consumers: the order in which ``backward`` visits them (and the course's graph
    pictures draw them). ``leaves=False`` leaves out the tensors no op made (backward gives those
    their whole gradient at the end, so it need not walk them).

    Iterative depth-first search, so a chain of 100,000 ops needs no recursion.
    """
    order, visited = [], set()
    stack = [(root, False)]
    while stack:
        tensor, done = stack.pop()
        if done:
            order.append(tensor)
            continue
        if tensor in visited:
            continue
        visited.add(tensor)
        node = tensor._ctx
        if node is None:  # a leaf: nothing above it, so it is done as soon as it is reached
            if leaves:
                order.append(tensor)
            continue
        stack.append((tensor, True))
        for parent in _parents(node) if _rebased else node.parents:
            if parent._requires_grad and parent not in visited and (leaves or parent._ctx is not None):
                stack.append((parent, False))
    order.reverse()
    return order


def _accumulate(tensor, grad) -> None:
    """Add the array ``grad`` into ``tensor.grad``: in place when it holds an array of its own.

    A gradient backward stores is kept as a bare array in ``tensor._grad`` and wrapped into a Tensor
    only when ``.grad`` is read (``grad_array`` reads either form). Speed: a training step whose
    optimizer reads the arrays directly creates no Tensor per parameter (issue 27 had added one,
    +4 % instructions on a tiny MLP step).
    """
    existing = tensor._grad
    if existing is None:
        # .grad must hold the tensor's own writable array: an op may hand back a read-only
        # broadcast view (sum, mean), a view of another array, or a NumPy scalar (0-d inputs)
        if not (isinstance(grad, np.ndarray) and grad.flags.writeable and grad.base is None):
            grad = np.array(grad)
        tensor._grad = grad
        return
    bare = isinstance(existing, np.ndarray)
    data = existing if bare else existing.data
    if data.flags.writeable and data.shape == np.shape(grad) and data.dtype == grad.dtype:
        data += grad
        if not bare:
            existing._vc[0] += 1
    elif bare:
        tensor._grad = np.asarray(data + grad)
    else:
        existing.data = np.asarray(data + grad)


def grad_array(tensor):
    """The array of ``tensor.grad`` (or None), without wrapping a bare array into a Tensor."""
    grad = tensor._grad
    return grad if grad is None or isinstance(grad, np.ndarray) else grad.data


def backward(root, gradient: np.ndarray, retain_graph: bool = False) -> None:
    """Propagate ``gradient`` (dL/d root) to every leaf that requires a gradient.

    Leaves accumulate into ``.grad`` (so two ``backward`` calls add up, as in PyTorch); a non-leaf
    keeps its gradient only after ``retain_grad()``. Saved arrays are checked (not freed, not
    modified in place since the forward pass) before each op's backward, and freed after it
    unless ``retain_graph``.

    The walk visits the tensors in the order :func:`topological_order` guarantees (each after
    all its consumers) without computing that order first: every recorded node takes the next
    number of one sequence, so an op that uses a tensor always has a higher number than the op
    that made it. The walk takes the tensors that have received a gradient from a heap, highest
    node number first, as PyTorch's engine does. Speed: one pass over the graph instead of two
    (a depth-first sort, then the walk): −3 % instructions on 04's race step alone.
    """
    grads = {root: gradient}
    # The arrays a tensor's .grad holds, and the caller's: a second owner gets a copy. Only .grad
    # needs its own array (it is added to in place); an op's backward never writes into its
    # upstream gradient, so the walk itself may hand one array on to several inputs (as Add does).
    # Speed: one check per stored gradient instead of two set operations per edge.
    owned = {id(gradient)}
    # heap entries (-node number, id, tensor): the id breaks ties, so tensors are never compared
    ready = [] if root._ctx is None else [(-root._ctx._seq, id(root), root)]
    while ready:
        tensor = heappop(ready)[2]
        grad = grads.pop(tensor)
        if _tensor_hooks and id(tensor) in _tensor_hooks:
            grad = _run_hooks(tensor, grad)
        if tensor._retain:
            _store(tensor, grad, owned)
        node = tensor._ctx
        saved = node.saved_tensors
        if saved is None or (_last_write > node._seq and saved):
            _check_saved(node, tensor)
        input_grads = type(node).backward(node, grad)
        if not retain_graph and saved:
            node.saved_tensors = None
        if not isinstance(input_grads, tuple):
            input_grads = (input_grads,)
        for parent, needs, g in zip(_parents(node) if _rebased else node.parents, node.needs_input_grad, input_grads):
            if not needs or g is None:
                continue
            data = parent.data
            if g.shape != data.shape:
                g = unbroadcast(g, data.shape)
            if g.dtype is not data.dtype and g.dtype != data.dtype:  # (identity first: the usual case)
                g = g.astype(data.dtype)
            earlier = grads.get(parent)
            if earlier is not None:
                grads[parent] = earlier + g
                continue
            grads[parent] = g
            made_by = parent._ctx
            if made_by is not None:  # a leaf waits in grads for the end
                heappush(ready, (-made_by._seq, id(parent), parent))
    # what is left are the leaves, each holding the sum over all its consumers
    for leaf, grad in grads.items():
        if _tensor_hooks and id(leaf) in _tensor_hooks:
            grad = _run_hooks(leaf, grad)
        _store(leaf, grad, owned)


def _store(tensor, grad, owned: set) -> None:
    """Add ``grad`` into ``tensor.grad``; an array some ``.grad`` already holds (or the caller's) is
    copied first, so that no two gradients share memory."""
    if tensor._grad is None:
        if id(grad) in owned:
            grad = grad.copy()
        _accumulate(tensor, grad)
        owned.add(id(grad_array(tensor)))
    else:
        _accumulate(tensor, grad)  # added into the array .grad holds: nothing new is shared
