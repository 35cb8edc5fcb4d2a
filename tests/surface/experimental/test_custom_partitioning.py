"""``funcgrad.experimental.custom_partitioning`` on one device: the wrapped function's values eagerly
and under jit, its gradient (vs finite differences in float64) and vmap (vs a loop), static_argnums
and keyword arguments, and the sharding-rule parser against jax's (the oracle) on valid and invalid
rules. The sharded case (JAX's docstring example over 8 devices) is in
tests/surface/spmd/test_custom_partitioning_sharded.py."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.experimental.custom_partitioning import (
    BATCHING,
    ArrayMapping,
    CompoundFactor,
    SdyShardingRule,
    custom_partitioning,
)


def plain(x, eps=1e-5):
    return x / fnp.sqrt(fnp.mean(x**2, axis=-1, keepdims=True) + eps)


called = []
rms = partial(custom_partitioning, static_argnums=(1,))(plain)
rms.def_partition(
    partition=lambda *a: called.append("partition"),
    infer_sharding_from_operands=lambda *a: called.append("infer"),
    sharding_rule="... i -> ... i",
)
X = np.random.default_rng(0).normal(size=(3, 4))


def test_values_eager_jit_grad_vmap():
    want = np.asarray(plain(X, 1e-3))
    np.testing.assert_allclose(rms(X, 1e-3), want, rtol=1e-12)
    np.testing.assert_allclose(rms(X, eps=1e-3), want, rtol=1e-12)  # keyword bound to its position
    np.testing.assert_allclose(funcgrad.jit(rms, static_argnums=1)(X, 1e-3), want, rtol=1e-12)
    # grad vs central finite differences (float64)
    w = np.arange(4.0)
    loss = lambda x: (rms(x, 1e-3) * w).sum()  # noqa: E731
    g = np.asarray(funcgrad.jit(funcgrad.grad(loss))(X))
    h, fd = 1e-6, np.zeros_like(X)
    for idx in np.ndindex(X.shape):
        e = np.zeros_like(X)
        e[idx] = h
        fd[idx] = (float(loss(X + e)) - float(loss(X - e))) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
    # vmap vs a loop
    np.testing.assert_allclose(
        funcgrad.vmap(lambda r: rms(r, 1e-3))(X), np.stack([plain(r, 1e-3) for r in X])
    )
    assert called == []  # funcgrad never calls the partitioning callbacks (module docstring)


def test_pytrees_and_errors():
    @custom_partitioning
    def f(d):
        return {"s": d["a"] + d["b"], "p": d["a"] * d["b"]}

    f.def_partition(None, sharding_rule="i, i -> i, i")
    out = funcgrad.jit(f)({"a": np.ones(2), "b": np.arange(2.0)})
    np.testing.assert_array_equal(out["p"], [0.0, 1.0])
    with pytest.raises(ValueError, match="operand 0 has rank 2"):
        f({"a": np.ones((2, 2)), "b": np.ones((2, 2))})
    f.def_partition(None, sharding_rule="i -> i")
    with pytest.raises(ValueError, match="1 operand mappings but the call has 2 operands"):
        f({"a": np.ones(2), "b": np.ones(2)})
    with pytest.raises(TypeError, match="static"):
        funcgrad.jit(lambda x, e: rms(x, e))(X, 1e-3)  # a traced value in a static position
    with pytest.raises(ValueError, match="Unknown keyword arguments"):
        f.def_partition(None, sharding_rule=None, reduction_factors=("i",))
    with pytest.raises(TypeError, match="partition must be a callable"):
        f.def_partition(3)


RULES = [
    ("i j, j k -> i k", dict(reduction_factors=("j",))),
    ("... i -> ... i", {}),
    ("...2 (a b) c -> ...2 c", dict(a=2, b=3)),
    ("-> i", {}),
    ("i -> i", dict(i=2)),  # a whole-dimension factor given a size
    ("i (j) -> i", {}),
    ("i ... -> i", {}),
    ("i j -> i j", dict(reduction_factors=("j",), permutation_factors=("j",))),
    ("i -> i", dict(need_replication_factors=("k",))),
    ("1i -> i", {}),
    ("i.j -> i", {}),
    ("i j", {}),
    ("(a b -> a", {}),
]


@pytest.mark.parametrize(("rule", "kw"), RULES)
def test_rule_strings_match_jax(rule, kw):
    theirs = pytest.importorskip("jax._src.custom_partitioning_sharding_rule")
    try:
        want = str(theirs.str_to_sdy_sharding_rule(rule, **kw))
    except (ValueError, TypeError) as e:
        want = type(e)
    f = custom_partitioning(lambda x: x)
    try:
        f.def_partition(None, sharding_rule=rule, **kw)
        got = str(f.sharding_rule)
    except (ValueError, TypeError) as e:
        got = type(e)
    assert got == want


def test_rule_objects():
    rule = SdyShardingRule(
        (ArrayMapping(BATCHING, CompoundFactor("a", "b")),), (ArrayMapping("c"),), a=2, b=2
    )
    assert rule.factor_sizes == {"a": 2, "b": 2} and rule.operand_mappings[0][1] == ("a", "b")
    with pytest.raises(ValueError, match="at least two"):
        CompoundFactor("a")
    with pytest.raises(ValueError, match="beginning"):
        ArrayMapping("a", BATCHING)
    with pytest.raises(ValueError, match="must specify its size"):
        SdyShardingRule((ArrayMapping(CompoundFactor("a", "b")),), ())


def test_callbacks_without_a_sharding_rule_are_refused_as_jax():
    """Partitioning is Shardy's (JAX's default): sharding propagation callbacks without a
    ``sharding_rule`` are JAX's NotImplementedError, eagerly and under jit."""
    jax = pytest.importorskip("jax")
    from jax.experimental.custom_partitioning import custom_partitioning as jcp

    for lib, cp in ((funcgrad, custom_partitioning), (jax, jcp)):
        f = cp(lambda x: x)
        f.def_partition(partition=lambda *a: None, infer_sharding_from_operands=lambda *a: None)
        for call in (f, lib.jit(f)):
            with pytest.raises(NotImplementedError, match="provide sharding_rule to migrate to Shardy"):
                call(np.ones(4))
