"""funcgrad.tree_util / funcgrad.tree (the full jax.tree_util surface), funcgrad.flatten_util.ravel_pytree
and funcgrad.ops segment reductions, against JAX (as the oracle) and NumPy loops."""

from __future__ import annotations

import collections
import dataclasses
import functools
import operator

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import ops, tree, tree_util
from funcgrad.flatten_util import ravel_pytree
from funcgrad.testing import check_grads

# jax, the oracle, compiles and runs every case beside funcgrad: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

jax = pytest.importorskip("jax")
flatten_util = pytest.importorskip("jax.flatten_util")

jax.config.update("jax_enable_x64", True)
jtu = jax.tree_util


def test_tree_util_matches_jax_on_standard_trees():
    t = {"a": [1, (2, 3)], "b": None, "c": collections.namedtuple("P", "x y")(4, {"d": 5})}
    assert tree_util.tree_leaves(t) == jtu.tree_leaves(t)
    assert [c.num_leaves for c in tree_util.treedef_children(tree_util.tree_structure(t))] == [
        c.num_leaves for c in jtu.treedef_children(jtu.tree_structure(t))
    ]
    assert tree_util.flatten_one_level(t) == jtu.flatten_one_level(t)
    with pytest.raises(ValueError, match="leaf"):
        tree_util.flatten_one_level(3)
    assert tree_util.is_tree_node(list) and not tree_util.is_tree_node(float)
    outer, inner = tree_util.tree_structure([0, 0, 0]), tree_util.tree_structure({"u": 0, "v": 0})
    x = [{"u": i, "v": -i} for i in range(3)]
    assert tree_util.tree_transpose(outer, inner, x) == jtu.tree_transpose(
        jtu.tree_structure([0, 0, 0]), jtu.tree_structure({"u": 0, "v": 0}), x
    )
    assert tree_util.tree_transpose(outer, None, x) == {"u": [0, 1, 2], "v": [0, -1, -2]}
    with pytest.raises(TypeError, match="Mismatch"):  # (JAX's word)
        tree_util.tree_transpose(outer, inner, [{"u": 1, "v": 2}])
    with pytest.raises(ValueError, match="pytree structure error"):  # (JAX's kind of error)
        tree_util.tree_broadcast((1, 2, 3), (0, {"a": 0, "b": 0}))
    _, unravel = ravel_pytree((np.arange(3.0, dtype=np.float32), np.arange(2, dtype=np.int32)))
    with pytest.raises(TypeError, match="given array of dtype bool, but expected dtype"):
        unravel(fnp.zeros(5, bool))
    full = [(0, 0), {"a": 0, "b": [0, 0]}]
    assert tree_util.tree_broadcast([1, 2], full) == jtu.tree_broadcast([1, 2], full)
    assert tree_util.tree_reduce_associative(operator.add, [1, (2, 3), {"a": 4}, 5]) == 15
    assert tree_util.tree_reduce_associative(operator.add, [], identity=0) == 0
    with pytest.raises(TypeError, match="identity"):
        tree_util.tree_reduce_associative(operator.add, [])


def test_tree_short_names():
    assert tree.transpose(tree.structure([0, 0]), tree.structure((0, 0)), [(1, 2), (3, 4)]) == (
        [1, 3],
        [2, 4],
    )
    assert tree.broadcast(1, {"a": 0, "b": [0]}) == {"a": 1, "b": [1]}
    assert tree.reduce_associative(operator.mul, [2, 3, 4]) == 24

    # jax.tree.static is a dataclass field marked static (its docstring's example)
    @tree_util.register_dataclass
    @dataclasses.dataclass
    class MyOp:
        x: object
        y: object
        op: str = tree.static(default="add")

    leaves, treedef = tree.flatten(MyOp(x=1.0, y=2.0))
    assert leaves == [1.0, 2.0] and tree.unflatten(treedef, [3.0, 4.0]) == MyOp(3.0, 4.0, "add")
    assert dataclasses.fields(MyOp)[2].metadata["static"] is True


def test_partial_is_a_pytree_through_jit_and_grad():
    add = tree_util.Partial(fnp.add, 1.0)
    assert tree_util.tree_leaves(add) == [1.0]
    assert float(funcgrad.jit(lambda f, x: f(x))(add, 2.0)) == 3.0
    # The bound argument is differentiable.
    g = funcgrad.grad(lambda a: tree_util.Partial(fnp.multiply, a)(3.0))(2.0)
    assert float(g) == 3.0
    # A Partial of a functools.partial keeps only its own arguments as children.
    inner = functools.partial(fnp.multiply, 2.0)
    p = tree_util.Partial(inner, 5.0)
    assert tree_util.tree_leaves(p) == [5.0] and float(p()) == 10.0
    assert isinstance(tree_util.tree_map(lambda x: x * 2, p), tree_util.Partial)
    assert float(tree_util.tree_map(lambda x: x * 2, p)()) == 20.0


def test_register_static_and_keys_class():
    @tree_util.register_static
    class Mode(str):
        pass

    assert tree_util.tree_leaves([Mode("a"), 1.0]) == [1.0]
    calls = []

    @funcgrad.jit
    def f(x, m):
        calls.append(m)
        return x + 1 if m == "add" else x - 1

    assert float(f(1.0, Mode("add"))) == 2.0 and float(f(1.0, Mode("sub"))) == 0.0
    assert float(f(5.0, Mode("add"))) == 6.0 and len(calls) == 2  # static: retraced per value, cached

    @tree_util.register_pytree_with_keys_class
    class Box:
        def __init__(self, a, b):
            self.a, self.b = a, b

        def tree_flatten_with_keys(self):
            return ((tree_util.GetAttrKey("a"), self.a), (tree_util.GetAttrKey("b"), self.b)), "aux"

        @classmethod
        def tree_unflatten(cls, aux, children):
            assert aux == "aux"
            return cls(*children)

    paths = [tree_util.keystr(p) for p, _ in tree_util.tree_leaves_with_path(Box(1, [2]))]
    assert paths == [".a", ".b[0]"]
    doubled = tree_util.tree_map(lambda x: 2 * x, Box(1, [2]))
    assert (doubled.a, doubled.b) == (2, [4])


def test_ravel_pytree_matches_jax_and_round_trips():
    tree_ = {"w": np.arange(6.0).reshape(2, 3), "b": np.ones(2, np.float32), "n": (np.int32(3),)}
    flat, unravel = ravel_pytree(tree_)
    jflat, _ = flatten_util.ravel_pytree(tree_)
    np.testing.assert_array_equal(np.asarray(flat), np.asarray(jflat))
    assert flat.dtype == jflat.dtype == np.float64
    back = unravel(flat)
    assert back["b"].dtype == np.float32 and back["n"][0].dtype == np.int32 and back["w"].shape == (2, 3)
    np.testing.assert_array_equal(np.asarray(back["w"]), tree_["w"])
    same = ravel_pytree({"w": np.zeros((2, 3)), "b": np.zeros(2, np.float32), "n": (np.int32(0),)})[1]
    assert unravel == same and hash(unravel) == hash(same)  # usable as a static jit argument
    empty, unravel_empty = ravel_pytree({})
    assert empty.shape == (0,) and empty.dtype == np.float32 and unravel_empty(empty) == {}
    with pytest.raises(TypeError, match="dtype"):
        unravel(flat.astype(np.float32))
    # leaves of one dtype: unravel is dtype-polymorphic, as JAX's (jax-ml/jax#7809)
    one = {"a": np.ones(2, np.float32)}
    assert (
        ravel_pytree(one)[1](np.ones(2))["a"].dtype
        == flatten_util.ravel_pytree(one)[1](np.ones(2))["a"].dtype
    )


def test_ravel_pytree_under_transformations():
    params = {"w": np.array([[1.0, 2.0], [3.0, 4.0]]), "b": np.array([0.5, -0.5])}

    def loss(p):
        return fnp.sum(fnp.tanh(p["w"] @ p["b"]) ** 2)

    flat, unravel = ravel_pytree(params)
    g_flat = funcgrad.grad(lambda f: loss(unravel(f)))(flat)
    g_tree = funcgrad.grad(loss)(params)
    np.testing.assert_allclose(np.asarray(g_flat), np.asarray(ravel_pytree(g_tree)[0]))
    jitted = funcgrad.jit(lambda p: ravel_pytree(p)[0])(params)
    np.testing.assert_array_equal(np.asarray(jitted), np.asarray(flat))
    check_grads(lambda f: loss(unravel(f)), (flat,), order=2)


def _segment_ref(data, ids, n, op, init):
    out = np.full((n, *data.shape[1:]), init, dtype=data.dtype)
    for row, i in zip(data, ids):
        if 0 <= i < n:
            out[i] = op(out[i], row)
    return out


@pytest.mark.parametrize(
    "name, op, init",
    [("segment_sum", np.add, 0), ("segment_prod", np.multiply, 1), ("segment_max", np.maximum, -np.inf),
     ("segment_min", np.minimum, np.inf)],
)  # fmt: skip
def test_segment_ops_against_a_loop_and_jax(name, op, init):
    rng = np.random.default_rng(0)
    data = rng.normal(size=(9, 2))
    ids = np.array([0, 3, 3, -1, 7, 0, 1, 3, 2])
    ours = getattr(ops, name)
    want = _segment_ref(data, ids, 5, op, init)
    np.testing.assert_allclose(np.asarray(ours(data, ids, num_segments=5)), want)
    np.testing.assert_allclose(np.asarray(getattr(jax.ops, name)(data, ids, num_segments=5)), want)
    np.testing.assert_allclose(np.asarray(ours(data, ids, 5, bucket_size=4)), want)
    np.testing.assert_allclose(
        np.asarray(funcgrad.jit(lambda d, i: ours(d, i, num_segments=5))(data, ids)), want
    )
    np.testing.assert_allclose(
        np.asarray(ours(data[:3], ids[:3])), _segment_ref(data[:3], ids[:3], 4, op, init)
    )
    batched = funcgrad.vmap(lambda d: ours(d, ids, 5))(np.stack([data, 2 * data]))
    np.testing.assert_allclose(np.asarray(batched[1]), _segment_ref(2 * data, ids, 5, op, init))
    if name == "segment_prod":
        # As in JAX: scatter-multiply is differentiable in its updates only for unique indices.
        with pytest.raises(NotImplementedError, match="unique_indices"):
            funcgrad.grad(lambda d: ours(d, ids, 5).sum())(data)
    else:
        check_grads(
            lambda d: fnp.where(fnp.isfinite(ours(d, ids, 5)), ours(d, ids, 5), 0.0), (data,), order=1
        )
    ints = (data * 10).astype(np.int32)
    got = ours(ints, ids, 5)
    assert got.dtype == np.int32
    if name in ("segment_sum", "segment_prod"):
        np.testing.assert_array_equal(np.asarray(got), _segment_ref(ints, ids, 5, op, init))


@pytest.mark.parametrize(
    "prefix, other",
    [
        ({"x": None, "y": 1}, {"x": 1.0, "y": 2}),  # None where the other has a leaf (equinox's GAN example)
        ([1, 2], [1, 2, 3]),
        ({"a": 1}, {"a": 1, "b": 2}),
        ((1, (2,)), (1, [2])),
    ],
)
def test_tree_map_mismatch_errors_are_jaxs(prefix, other):
    # jax.tree.map / tree_map_with_path name the key path where a tree is not a prefix of another
    for ours, theirs, f in [
        (tree_util.tree_map, jtu.tree_map, lambda a, b: a),
        (tree.map_with_path, jax.tree.map_with_path, lambda p, a, b: a),
    ]:
        with pytest.raises(ValueError) as want:
            theirs(f, prefix, other)
        with pytest.raises(ValueError) as got:
            ours(f, prefix, other)
        assert str(got.value) == str(want.value)
    with pytest.raises(ZeroDivisionError):  # f's own errors pass through as they are
        tree_util.tree_map(lambda a, b: 1 / 0, [1], [2])


def test_segment_errors():
    with pytest.raises(TypeError, match="integers"):
        ops.segment_sum(np.ones(3), np.array([0.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="one id per row"):
        ops.segment_sum(np.ones(3), np.array([0, 1]))
    with pytest.raises(funcgrad.core.ConcretizationTypeError, match="num_segments"):
        funcgrad.jit(lambda d, i: ops.segment_sum(d, i))(np.ones(3), np.array([0, 1, 1]))


def test_segment_ops_of_scalar_data_as_jax():
    # JAX's scatter broadcasts a 0-d data to one value per id (jraph's segment_softmax of a
    # constant logit): every reduction, eager and jitted
    import jax

    ids = np.array([0, 0, 2, 1, 3, 2, 1, 5])
    for name in ("segment_sum", "segment_prod", "segment_max", "segment_min"):
        theirs = np.asarray(getattr(jax.ops, name)(np.float32(2.0), ids, 7))
        ours = getattr(ops, name)(np.float32(2.0), ids, 7)
        jitted = funcgrad.jit(lambda d, i, name=name: getattr(ops, name)(d, i, 7))(np.float32(2.0), ids)
        np.testing.assert_array_equal(np.asarray(ours), theirs)
        np.testing.assert_array_equal(np.asarray(jitted), theirs)


@pytest.mark.parametrize(
    "fields",
    [
        dict(data_fields=["x"], meta_fields=[], drop_fields=["y", "z"]),  # drop_fields
        dict(data_fields=["x"], meta_fields=[]),  # missing y, z
        dict(data_fields=["x", "y", "z", "w"], meta_fields=[]),  # unexpected w
        dict(data_fields=["x", "y", "z"], meta_fields=["x"]),  # overlap
        dict(data_fields=["x"]),  # only one list
        dict(),  # every field data
    ],
)
def test_register_dataclass_checks_as_jax(fields):
    # JAX's register_dataclass validation (its tree_util_test): types and words of the errors.
    def outcome(register):
        @dataclasses.dataclass
        class Foo:
            x: int
            y: int = 42
            z: int = 42

        try:
            register(Foo, **fields)
        except (TypeError, ValueError) as e:
            return type(e), str(e).replace("Foo", "C")
        return None

    assert outcome(tree_util.register_dataclass) == outcome(jax.tree_util.register_dataclass)


def test_keystr_of_keys_that_are_not_key_entries_as_jax():
    # (tree_util_test testFlattenWithPathWithIsLeafArgument) a node registered with plain keys
    # ("x" rather than GetAttrKey("x")): keystr prints each as str() does, as JAX's
    class Pair:
        def __init__(self, x, y):
            self.x, self.y = x, y

    def paths(tu):
        tu.register_pytree_with_keys(Pair, lambda o: ((("x", o.x), (2, o.y)), None), lambda _, xy: Pair(*xy))
        tree = {"p": Pair([1], 2.5), "q": None}
        found = [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(tree)]
        keys = ("x", 1, None, 2.5, tu.DictKey("a"), tu.SequenceKey(3), tu.GetAttrKey("w"))
        return found, [tu.keystr((k,)) for k in keys], [tu.keystr(keys, simple=True, separator="/")]

    assert paths(tree_util) == paths(jax.tree_util)
