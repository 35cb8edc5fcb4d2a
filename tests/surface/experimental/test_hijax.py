"""``funcgrad.experimental.hijax``: a mutable high-level type (a box of named arrays whose set of
names may change) defined as flax defines its hijax Variables -- ``register_hitype``, a
``MutableHiType`` with quasi-dynamic data, ``HiPrimitive``s for get and set -- works eagerly and
as state of a jitted function (read before, written back after, its structure changed inside;
traced once), and under eval_shape (nothing written back). NOTE: [mutable high-level values]."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.experimental import hijax


class Box:
    def __init__(self, items):
        self.items = dict(items)

    def cur_qdd(self):  # the structure: names and types
        return tuple((k, funcgrad.typeof(v).normalize()) for k, v in sorted(self.items.items()))

    def get(self):
        return get_p.bind(self)

    def set(self, items):
        set_p.bind(self, items)


class GetItems(hijax.HiPrimitive):
    def impl(self, box):
        return dict(box.items)

    to_lojax = impl


class SetItems(hijax.HiPrimitive):
    def impl(self, box, items):
        box.items = dict(items)
        return []

    to_lojax = impl


get_p, set_p = GetItems("get_items"), SetItems("set_items")


class BoxType(hijax.MutableHiType):
    def __eq__(self, other):
        return type(other) is BoxType

    def __hash__(self):
        return hash(BoxType)

    # Each item is lowered through its type's lo_ty/lower_val/raise_val, as flax's Variables do
    # (an array is itself; a typed key its raw data).
    def lo_ty_qdd(self, qdd):
        return [lo for _, aval in qdd for lo in aval.lo_ty()]

    def new_from_loval(self, qdd, *lo):
        return Box(_raise(qdd, lo))

    def read_loval(self, qdd, box):
        items = box.get()
        return [lo for k, aval in qdd for lo in aval.lower_val(items[k])]

    def update_from_loval(self, qdd, box, *lo):
        box.set(_raise(qdd, lo))


def _raise(qdd, lo):
    it = iter(lo)
    return {k: aval.raise_val(*[next(it) for _ in aval.lo_ty()]) for k, aval in qdd}


hijax.register_hitype(Box, lambda b: BoxType())


def test_a_mutable_box_is_state_of_a_jitted_function():
    traces = []

    @funcgrad.jit
    def step(box, x):
        traces.append(1)
        items = box.get()
        items["a"] = items["a"] + x
        items["seen"] = x * 2  # a new name: the structure changes inside
        box.set(items)
        return items["a"].sum()

    b = Box({"a": fnp.zeros(2, np.float32)})
    assert float(step(b, np.float32(1))) == 2.0
    np.testing.assert_array_equal(b.get()["a"], np.ones(2, np.float32))
    assert float(b.get()["seen"]) == 2.0 and sorted(b.get()) == ["a", "seen"]
    c = Box({"a": fnp.zeros(2, np.float32)})
    step(c, np.float32(3))
    assert len(traces) == 1 and float(c.get()["seen"]) == 6.0  # same structure in: no retrace
    assert isinstance(funcgrad.typeof(b), BoxType)
    before = dict(b.get())
    out = funcgrad.eval_shape(step, b, np.float32(1))
    assert out.shape == () and b.get()["a"] is before["a"]  # eval_shape writes nothing back


def test_a_box_holding_a_typed_key():
    @funcgrad.jit
    def draw(box):
        items = box.get()
        key, sub = funcgrad.random.split(items["key"])
        box.set({"key": key})
        return funcgrad.random.normal(sub, (2,))

    b = Box({"key": funcgrad.random.key(0)})
    first, second = draw(b), draw(b)
    assert not np.allclose(first, second)  # the key advanced in the box between the calls
    key, sub = funcgrad.random.split(funcgrad.random.key(0))
    np.testing.assert_allclose(first, funcgrad.random.normal(sub, (2,)))


def test_a_box_closed_over_by_jit_or_touched_in_a_scan_body_is_state():
    # NOTE: [mutable high-level values], NOTE: [state in loop bodies]: jax 0.10.2 gives these
    # numbers for flax's hijax Variable in the same programs.
    b = Box({"a": fnp.zeros((), np.float32)})

    @funcgrad.jit
    def bump(x):
        items = b.get()
        b.set({"a": items["a"] + x})
        return items["a"] * 2

    assert float(bump(np.float32(1))) == 0.0 and float(b.get()["a"]) == 1.0
    assert float(bump(np.float32(2))) == 2.0 and float(b.get()["a"]) == 3.0  # read anew on a cache hit

    def body(c, x):
        items = b.get()
        b.set({"a": items["a"] * x})
        return c + 1, items["a"]

    xs = fnp.arange(1.0, 4.0, dtype=np.float32)
    c, ys = funcgrad.lax.scan(body, 0, xs)
    assert int(c) == 3 and ys.tolist() == [3.0, 3.0, 6.0] and float(b.get()["a"]) == 18.0
    ys = funcgrad.jit(lambda: funcgrad.lax.scan(body, 0, xs)[1])()
    assert ys.tolist() == [18.0, 18.0, 36.0] and float(b.get()["a"]) == 108.0


def test_checkpoint_of_a_function_touching_a_box_refuses():
    # docs/differences_from_jax.md ("Mutable values in loops"): a box's structure may change inside,
    # which a checkpoint's recomputation cannot carry (Refs can: test_refs.py); refused, the box
    # unchanged.
    b = Box({"a": fnp.ones((), np.float32)})

    def f(x):
        b.set({"a": b.get()["a"] * x})
        return x * 2.0

    for fun in (funcgrad.checkpoint(f), funcgrad.grad(funcgrad.checkpoint(f))):
        with pytest.raises(NotImplementedError, match="checkpoint of a function that touches a mutable box"):
            fun(np.float32(3.0))
        assert float(b.get()["a"]) == 1.0


def test_a_cond_given_a_ref_whose_branch_writes_a_box():
    # The Ref reaches the branch as a stand-in written back after the cond; the box is state of
    # the branch (NOTE: [state in loop bodies]): both written, as eager Python would.
    b = Box({"a": fnp.zeros((), np.float32)})
    r = funcgrad.new_ref(np.float32(1.0))

    def branch(ref):
        b.set({"a": b.get()["a"] + ref[...]})
        ref[...] += 1.0
        return ref[...]

    out = funcgrad.lax.cond(True, branch, lambda ref: ref[...], r)
    assert float(out) == 2.0 and float(r[...]) == 2.0 and float(b.get()["a"]) == 1.0


def test_a_vjp_hi_primitive_is_a_custom_vjp_of_its_expansion_as_jax():
    # JAX's jax.experimental.hijax.VJPHiPrimitive (hijax_test's Square): its value is expand's, its
    # gradient its vjp_fwd/vjp_bwd_retval rules' (here deliberately not expand's derivative, so
    # the rule is seen to run), under jit and vmap too; vjp_bwd's accumulators as well.
    jax = pytest.importorskip("jax")
    from jax.experimental import hijax as jhijax

    seen = {}
    for lib, hx in ((funcgrad, hijax), (jax, jhijax)):

        class Square(hx.VJPHiPrimitive):
            def __init__(self, aval, accums=False):
                self.in_avals, self.out_aval, self.params = (aval,), aval, {}
                super().__init__()

            def expand(self, x):
                return x * x

            def vjp_fwd(self, nzs_in, x):
                return x * x, x

            def vjp_bwd_retval(self, x, g):
                return (3.0 * x * g,)

            def batch_dim_rule(self, axis_data, dims):
                return dims[0]

        class SquareAccum(Square):
            vjp_bwd_retval = hx.VJPHiPrimitive.vjp_bwd_retval

            def vjp_bwd(self, x, g, x_acc):
                x_acc.accum(5.0 * x * g)

        class SquareJvp(Square):  # (a forward-mode rule: jvp, and grad through it)
            def jvp(self, primals, tangents):
                (x,), (t,) = primals, tangents
                return self(x), 2.0 * x * t

        x = np.float32(1.5)
        sq, sq_acc = Square(lib.typeof(x)), SquareAccum(lib.typeof(x))
        sq_jvp = SquareJvp(lib.typeof(x))
        seen[lib] = [
            float(sq(x)),
            float(lib.jit(sq)(x)),
            float(lib.grad(sq)(x)),
            float(lib.grad(lib.jit(sq))(x)),
            float(lib.grad(sq_acc)(x)),
            np.asarray(lib.vmap(Square(lib.typeof(x)))(np.arange(3, dtype=np.float32))).tolist(),
            [float(t) for t in lib.jvp(sq_jvp, (x,), (np.float32(1.0),))],
        ]
    assert seen[funcgrad] == seen[jax]


class NewBox(hijax.HiPrimitive):
    def impl(self):
        return Box({})

    to_lojax = impl


new_p = NewBox("new_box")


def test_boxes_made_inside_jit_and_boxes_changing_structure_as_jax():
    # JAX's hijax_test test_qdd / test_nested_jit: a box a jitted function makes (a high-level
    # primitive's result) is its own, not state from outside, whatever it holds; a closed-over box
    # whose structure changed since the last trace is traced again (funcgrad reused the trace and
    # wrote back its stale final state).
    jax = pytest.importorskip("jax")
    from jax._src.hijax import Box as JaxBox
    from jax._src.hijax import new_box

    box, jbox = Box({}), JaxBox([])

    @funcgrad.jit
    def f(x):
        b = new_p.bind()
        b.set({"a": fnp.arange(3)})
        b.set({"a": x, "b": x + 1.0})
        box.set({"c": x})
        return b.get()["b"]

    @jax.jit
    def f_jax(x):
        b = new_box()
        b.set(jax.numpy.arange(3))
        b.set([x, x + 1.0])
        jbox.set([x])
        return b.get()[1]

    assert float(f(np.float32(1.0))) == float(f_jax(np.float32(1.0))) == 2.0
    box.set({}), jbox.set([])

    @funcgrad.jit
    def g():
        items = box.get()
        box.set({**items, f"k{len(items)}": np.float32(1.0)})

    @jax.jit
    def g_jax():
        jbox.set(jbox.get() + [np.float32(1.0)])

    g(), g(), g_jax(), g_jax()
    assert len(box.items) == len(jbox.get()) == 2


def _quantized_type(hx, name):
    """JAX's hijax_test QArray, registered with ``hx`` (funcgrad's or jax's hijax): int8 values and
    a float32 scale per row, lowered to those two arrays. Returns the value class (named ``name``)
    and its type class."""

    class Value:
        def __init__(self, arr, scale):
            self.arr, self.scale = arr, scale

    Value.__name__ = Value.__qualname__ = name

    class Ty(hx.HiType):
        def __init__(self, shape):
            self.shape = shape

        def __eq__(self, other):
            return type(other) is Ty and other.shape == self.shape

        def __hash__(self):
            return hash(self.shape)

        def lo_ty(self):
            return [hx.ShapedArray(self.shape, np.int8), hx.ShapedArray(self.shape[:1], np.float32)]

        def lower_val(self, q):
            return [q.arr, q.scale]

        def raise_val(self, arr, scale):
            return Value(arr, scale)

    hx.register_hitype(Value, lambda q: Ty(q.arr.shape))
    return Value, Ty


def test_an_immutable_high_level_value_crosses_jit_as_its_low_level_values_as_jax():
    # JAX's hijax_test test_basic_register: a value of a registered type without quasi-dynamic
    # data enters a jitted function as its low-level values (lower_val) and comes out raised
    # (raise_val); funcgrad refused it as a non-array argument. (Inside, funcgrad gives the raised
    # value, JAX a tracer of the type whose operations are its high-level primitives.)
    jax = pytest.importorskip("jax")
    from jax.experimental import hijax as jhijax

    seen = {}
    for lib, hx in ((funcgrad, hijax), (jax, jhijax)):
        QArray, QArrayTy = _quantized_type(hx, "QArray")
        q = QArray(np.ones((2, 3), np.int8), np.array([1.5, 2.0], np.float32))
        out = lib.jit(lambda q: q)(q)  # (inside, JAX's is a tracer of its type; funcgrad's raised)
        aot = lib.jit(lambda q: q).lower(q).compile()(q)  # (test_stages: ahead of time too)
        seen[lib] = (type(out).__name__, np.asarray(out.arr).tolist(), np.asarray(out.scale).tolist())
        seen[lib] += (type(aot).__name__, np.asarray(aot.scale).tolist())
        # eval_shape's answer for it is its type (test_eval_shape)
        seen[lib] += (lib.eval_shape(lib.jit(lambda q=q: q)) == QArrayTy((2, 3)),)
    assert seen[funcgrad] == seen[jax] and seen[jax][-1] is True


def test_a_custom_vjp_bwd_writing_a_box_under_grad_of_jit_as_jax():
    # JAX's hijax_test test_custom_vjp_plumbing[jit]: the bwd of a custom_vjp writes a box closed
    # over; grad of the jitted function traces that backward pass, which carries the box's values
    # in and out (NOTE: [state written by a backward pass]; funcgrad refused it).
    jax = pytest.importorskip("jax")
    from jax._src.hijax import Box as JaxBox

    seen = {}
    for lib, box in ((funcgrad, Box({"g": np.float32(0.0)})), (jax, JaxBox(np.float32(0.0)))):

        @lib.custom_vjp
        def foo(x):
            return x

        def foo_bwd(_, g, box=box, lib=lib):
            box.set({"g": g} if lib is funcgrad else g)
            return (g,)

        foo.defvjp(lambda x, foo=foo: (foo(x), None), foo_bwd)
        grad = lib.grad(lib.jit(lambda x, foo=foo: 2.0 * foo(2.0 * x)))(np.float32(1.0))
        seen[lib] = (float(grad), float(box.get()["g"] if lib is funcgrad else box.get()))
    assert seen[funcgrad] == seen[jax] == (4.0, 2.0)


def test_vjp_hi_primitive_perturbation_flags_and_linearize_rule_as_jax():
    # hijax_test test_symbolic_zeros / test_linearize_rule: vjp_fwd gets which inputs are
    # differentiated (nzs_in), vjp_bwd a dropping accumulator for the others; lin/linearized are a
    # forward-mode rule (linearize, grad through it).
    jax = pytest.importorskip("jax")
    from jax.experimental import hijax as jhijax

    seen = {}
    for lib, hx in ((funcgrad, hijax), (jax, jhijax)):
        flags = []

        class Mul(hx.VJPHiPrimitive):
            def __init__(self, aval, flags=flags):
                self.in_avals, self.out_aval, self.params, self.flags = (aval, aval), aval, {}, flags
                super().__init__()

            def expand(self, x, y):
                return x * y

            def vjp_fwd(self, nzs_in, x, y):
                self.flags.append(tuple(bool(n) for n in nzs_in))
                return self(x, y), (x, y)

            def vjp_bwd(self, res, g, x_acc, y_acc):
                x, y = res
                x_acc.accum(g * y)
                y_acc.accum(x * g)

        class Cube(hx.VJPHiPrimitive):
            def __init__(self, aval):
                self.in_avals, self.out_aval, self.params = (aval,), aval, {}
                super().__init__()

            def expand(self, x):
                return x**3

            def lin(self, nzs_in, x):
                return self(x), x

            def linearized(self, x, t):
                return 3.0 * x * x * t

        mul = lambda x, y, lib=lib, Mul=Mul: Mul(lib.typeof(x))(x, y)  # noqa: E731
        cube = lambda x, lib=lib, Cube=Cube: Cube(lib.typeof(x))(x)  # noqa: E731
        x, y = np.float32(2.0), np.float32(3.0)
        seen[lib] = [
            float(lib.grad(mul)(x, y)),
            float(lib.grad(mul, 1)(x, y)),
            list(flags),
            float(lib.linearize(cube, x)[1](np.float32(1.0))),
            float(lib.jit(cube)(x)),
        ]
    assert seen[funcgrad] == seen[jax]


def test_grad_of_an_immutable_high_level_argument_is_raised_from_its_parts():
    # hijax_test test_hitypes_as_grad_args: grad differentiates the value's low-level parts and
    # gives its gradient as a value of the type (closed form: d/dp (p.a**2 + 3 p.b) = (2a, 3)).
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    class PairTy(hijax.HiType):
        def __eq__(self, other):
            return type(other) is PairTy

        def __hash__(self):
            return hash(PairTy)

        def lo_ty(self):
            return [hijax.ShapedArray((), np.float32)] * 2

        def lower_val(self, p):
            return [p.a, p.b]

        def raise_val(self, a, b):
            return Pair(a, b)

    hijax.register_hitype(Pair, lambda p: PairTy())
    g = funcgrad.grad(lambda p, c: p.a**2 + 3.0 * p.b + c)(Pair(np.float32(2.0), np.float32(5.0)), 1.0)
    assert type(g) is Pair and (float(g.a), float(g.b)) == (4.0, 3.0)


def _tuple_type(lib, hx, spec_base):
    """hijax_test's tuple type: ``HiTup`` values, ``TupTy`` types, ``MakeTup``/``GetTupElt``
    VJPHiPrimitives (a high-level result, a high-level argument)."""

    class HiTup:
        def __init__(self, elts):
            self.elts = tuple(elts)

    class TupSpec(spec_base):
        def __init__(self, val):
            self.val = val

    class TupTy(hx.HiType):
        def __init__(self, tys):
            self.tys = tuple(tys)

        def __eq__(self, other):
            return type(other) is TupTy and self.tys == other.tys

        def __hash__(self):
            return hash(self.tys)

        def lo_ty(self):
            return list(self.tys)

        def lower_val(self, t):
            return list(t.elts)

        def raise_val(self, *elts):
            return HiTup(elts)

        def to_tangent_aval(self):
            return TupTy(ty.to_tangent_aval() for ty in self.tys)

        def normalize(self):
            return TupTy(ty.normalize() for ty in self.tys)

        def dec_rank(self, size, spec):
            return TupTy(ty.dec_rank(size, s) for ty, s in zip(self.tys, spec.val))

        def inc_rank(self, size, spec):
            return TupTy(ty.inc_rank(size, 0) for ty in self.tys)

        def leading_axis_spec(self):
            return TupSpec(tuple(ty.leading_axis_spec() for ty in self.tys))

    hx.register_hitype(HiTup, lambda t: TupTy(map(lib.typeof, t.elts)))

    class MakeTup(hx.VJPHiPrimitive):
        def __init__(self, in_avals):
            self.in_avals, self.out_aval, self.params = tuple(in_avals), TupTy(in_avals), {}
            super().__init__()

        def expand(self, *elts):
            return HiTup(elts)

        def jvp(self, primals, tangents):
            return make(*primals), make(*map(hx.instantiate_zeros, tangents))

    class GetTupElt(hx.VJPHiPrimitive):
        def __init__(self, in_aval, idx):
            self.in_avals, self.out_aval, self.params = (in_aval,), in_aval.tys[idx], {"idx": idx}
            super().__init__()

        def expand(self, tup):
            return tup.elts[self.idx]

        def jvp(self, primals, tangents):
            return get(primals[0], self.idx), get(tangents[0], self.idx)

    def make(*elts):
        return MakeTup([lib.typeof(e) for e in elts])(*elts)

    def get(tup, idx):
        return GetTupElt(lib.typeof(tup), idx)(tup)

    return make, get


def test_immutable_high_level_values_through_control_flow_as_jax():
    # hijax_test test_tuple_basic/test_tuple_scan/test_while_loop: a VJPHiPrimitive making or
    # taking a high-level value, and such values as scan's xs and ys (JAX asks for `length`) and
    # a while_loop's carry, or made by a scan body (funcgrad refused them as non-arrays); make_jaxpr
    # of such a function.
    jax = pytest.importorskip("jax")
    from jax._src.hijax import MappingSpec
    from jax.experimental import hijax as jhijax

    seen = {}
    for lib, hx, spec_base in ((funcgrad, hijax, object), (jax, jhijax, MappingSpec)):
        seen[lib] = _control_flow_row(lib, hx, spec_base)
    assert seen[funcgrad] == seen[jax]


def _control_flow_row(lib, hx, spec_base) -> list:
    make, get = _tuple_type(lib, hx, spec_base)
    row = [float(get(make(1.0, 2.0), 1)), float(lib.jit(lambda: get(make(1.0, 2.0), 0))())]
    tup = make(np.arange(3.0, dtype=np.float32), np.arange(12.0, dtype=np.float32).reshape(3, 4))

    def body(c, x):
        return c + get(x, 0), make(get(x, 0) + 1, get(x, 1) * 2)

    with pytest.raises(ValueError, match="must provide `length` to `scan`"):
        lib.lax.scan(body, np.float32(0), tup)
    scan = lambda t: lib.lax.scan(body, np.float32(0), t, length=3)  # noqa: E731
    for run in (scan, lib.jit(scan)):
        c, ys = run(tup)
        row += [float(c), np.asarray(get(ys, 0)).tolist(), np.asarray(get(ys, 1)).tolist()]
    # (its body traced once for both calls: the control-flow trace cache knows it, as JAX's)
    calls = []
    counted = lambda c, x: (calls.append(None), body(c, x))[1]  # noqa: E731
    for _ in range(2):
        lib.lax.scan(counted, np.float32(0), tup, length=3)
    row += [len(calls)]
    pair = make(np.float32(1.0), np.float32(3.0))
    step = lambda ic: (ic[0] + 1, make(get(ic[1], 1), get(ic[1], 0) * 2))  # noqa: E731
    n, out = lib.lax.while_loop(lambda ic: ic[0] < 3, step, (0, pair))
    row += [int(n), float(get(out, 0)), float(get(out, 1))]
    lib.make_jaxpr(lambda t: lib.lax.while_loop(lambda ic: ic[0] < 3, step, (0, t)))(pair)
    # a scan body making such a value of what it closes over (test_hitypes_as_scan_captured)
    _, ys = lib.lax.scan(lambda c, x: (c, make(x * get(pair, 1), x)), 0.0, np.arange(3.0, dtype=np.float32))
    row += [np.asarray(get(ys, 0)).tolist(), np.asarray(get(ys, 1)).tolist()]
    row += [float(lib.jvp(lambda x: get(make(x, 2 * x), 1), (1.0,), (1.0,))[1])]
    # jvp of a function of such a value, its tangent one too (test_custom_types_and_primitive)
    dot = make(np.float32(1.0), np.float32(0.5))
    row += [float(v) for v in lib.jvp(lambda t: get(t, 0) * get(t, 1), (pair,), (dot,))]
    y, y_dot = lib.jvp(lambda t: make(get(t, 1) * 2, get(t, 0)), (pair,), (dot,))
    row += [float(get(y, 0)), float(get(y_dot, 0)), float(get(y_dot, 1))]
    return row


def test_a_box_given_to_cond_or_made_inside_jit_and_written_in_a_branch_as_jax():
    # hijax_test test_cond_box_arg: a mutable box as a cond operand is written by the branch
    # taken (funcgrad refused it as a non-array), and a box made inside jit and written by a
    # branch recursed forever (its values, bound to the branch's trace, were lifted again).
    jax = pytest.importorskip("jax")
    from jax._src.hijax import Box as JaxBox

    def fg_new(x):
        b = new_p.bind()
        b.set({"v": x})
        return b

    def jax_new(x):
        b = JaxBox(None)
        b.set(x)
        return b

    fg = (fg_new, lambda b: b.get()["v"], lambda b, v: b.set({"v": v}))
    jx = (jax_new, lambda b: b.get(), lambda b, v: b.set(v))
    seen = {}
    for lib, (new, get, put) in ((funcgrad, fg), (jax, jx)):

        def closed_over(x, new=new, get=get, put=put, lib=lib):
            b = new(x)
            lib.lax.cond(x > 0, lambda _: put(b, get(b) + 1.0), lambda _: None, 1.0)
            return get(b)

        def operand(x, new=new, get=get, put=put, lib=lib):
            b = new(x)
            lib.lax.cond(x > 0, lambda box, y: put(box, get(box) + y), lambda *_: None, b, 2.0)
            return get(b)

        seen[lib] = [
            float(f(x)) for f in (lib.jit(closed_over), operand, lib.jit(operand)) for x in (1.0, -1.0)
        ]
    assert seen[funcgrad] == seen[jax] == [2.0, -1.0, 3.0, -1.0, 3.0, -1.0]


def test_a_ref_holding_an_immutable_high_level_value_as_jax():
    # hijax_test test_ref_to_tuple: new_ref of a high-level value, read and written whole, eagerly,
    # as a jitted function's argument and inside a scan body (funcgrad's new_ref refused it).
    jax = pytest.importorskip("jax")
    from jax._src.hijax import MappingSpec
    from jax.experimental import hijax as jhijax

    seen = {}
    for lib, hx, spec_base in ((funcgrad, hijax, object), (jax, jhijax, MappingSpec)):
        make, get = _tuple_type(lib, hx, spec_base)

        def write(r, x, make=make, get=get):
            t = r[...]
            r[...] = make(get(t, 1) + x, get(t, 0))
            return x

        def scanned(x, lib=lib, write=write, make=make):
            r = lib.new_ref(make(x, x))
            lib.lax.scan(lambda c, _: (write(r, c), None), x, None, length=3)
            return r[...]

        r = lib.new_ref(make(1.0, 2.0))
        made_inside = lambda lib=lib, make=make, get=get: get(lib.new_ref(make(1, 2))[...], 1)  # noqa: E731
        row = [float(lib.jit(made_inside)())]
        write(r, 1.0)
        lib.jit(write)(r, 1.0)
        for t in (r[...], scanned(1.0), lib.ref.freeze(r)):
            row += [(float(get(t, 0)), float(get(t, 1)), lib.typeof(get(t, 0)).weak_type)]
        seen[lib] = row
    assert seen[funcgrad] == seen[jax]


def test_empty_ref_of_a_high_level_type_as_jax():
    # hijax_test test_empty_ref_and_freeze: empty_ref of a high-level type holds a value of it (zeros
    # of its low-level types), which freeze gives back raised (funcgrad asked the type for a dtype).
    # A Ref of such a value read with its get method (funcgrad's Ref had none).
    jax = pytest.importorskip("jax")
    from jax.experimental import hijax as jhijax

    seen = {}
    for lib, hx in ((funcgrad, hijax), (jax, jhijax)):
        Q, _ = _quantized_type(hx, "Q")
        ty = lib.typeof(Q(np.ones((2, 3), np.int8), np.ones(2, np.float32)))
        out = lib.jit(lambda lib=lib, ty=ty: lib.freeze(lib.empty_ref(ty)))()
        seen[lib] = [type(out).__name__, *(str(lib.typeof(v)) for v in (out.arr, out.scale))]

        # (test_swap_ref_hitype: a traced Ref's get method; slices covering the shape, which
        # JAX's types accept through their ref_get_to_lojax rules, are read whole)
        def sliced(q1, q2, lib=lib):
            r = lib.new_ref(q1)
            first = r[...]
            r[...] = q2
            return first, r.get()

        q1, q2 = (Q(np.full((2, 3), v, np.int8), np.full(2, v, np.float32)) for v in (1, 2))
        for q in lib.jit(sliced)(q1, q2):
            seen[lib] += [np.asarray(q.arr).tolist(), np.asarray(q.scale).tolist()]
    assert seen[funcgrad] == seen[jax]
    assert seen[jax][:3] == ["Q", "int8[2,3]", "float32[2]"]


def test_a_closed_over_box_changing_structure_back_reuses_its_trace_as_jax():
    # hijax_test test_closed_over_type_changing_box: a jitted function keeps a trace per structure
    # of the boxes it closes over; a box set back to an earlier structure reuses that trace
    # (funcgrad kept only the last one and traced again).
    jax = pytest.importorskip("jax")
    from jax._src.hijax import Box as JaxBox

    fg_box = Box({})
    fg = (lambda: fg_box.get().get("v"), lambda v: fg_box.set({} if v is None else {"v": v}))
    jax_box = JaxBox(None)
    jx = (jax_box.get, jax_box.set)
    seen = {}
    for lib, (get, put) in ((funcgrad, fg), (jax, jx)):
        traces = []

        def f(get=get, put=put, traces=traces):
            traces.append(None)
            x = get()
            put(0 if x is None else x + 1)

        f = lib.jit(f)
        row = []
        for _ in range(2):
            put(None)
            for _ in range(3):
                f()
            row += [int(get()), len(traces)]
        seen[lib] = row
    assert seen[funcgrad] == seen[jax] == [2, 2, 2, 2]


def test_a_while_loop_body_changing_a_box_type_is_refused_as_jax():
    # hijax_test test_while_loop_typechange_error: funcgrad ran the loop and dropped the writes (the
    # box kept its first value, silently); JAX raises. A loop keeping the type runs as JAX's.
    jax = pytest.importorskip("jax")
    from jax._src.hijax import Box as JaxBox

    seen = {}
    for lib, new, get, put in (
        (funcgrad, lambda v: Box({"v": v}), lambda b: b.get()["v"], lambda b, v: b.set({"v": v})),
        (jax, JaxBox, lambda b: b.get(), lambda b, v: b.set(v)),
    ):
        row = []
        for start, factor in ((np.float32(1.0), 2.0), (np.int32(1), 2.5)):
            box = new(start)

            def body(i, box=box, factor=factor, get=get, put=put):
                put(box, get(box) * factor)
                return i + 1

            try:
                row.append(int(lib.lax.while_loop(lambda i: i < 5, body, 0)))
                row.append(float(get(box)))
            except TypeError as e:
                row.append(str(e))
        seen[lib] = row
    assert seen[funcgrad] == seen[jax] == [5, 32.0, "type-changing mutations not allowed in while_loop body"]
