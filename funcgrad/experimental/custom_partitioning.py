"""``funcgrad.experimental.custom_partitioning``: JAX's ``custom_partitioning`` (a function with
user rules for how XLA's SPMD partitioner should split it over a mesh) and its Shardy sharding-rule
types ``SdyShardingRule``, ``ArrayMapping``, ``CompoundFactor`` and ``BATCHING``, as
``jax.experimental.custom_partitioning``.

What funcgrad does with the rules (stated plainly, as docs/differences_from_jax.md does): the
wrapped function is computed, eagerly, under ``jit``, ``grad``, ``vmap`` and over sharded inputs,
and the rules given to ``def_partition`` are validated (a sharding rule string is parsed into an
``SdyShardingRule`` with JAX's checks, and its operand/result counts and ranks are checked against
each call) but the partitioning callbacks (``partition``, ``infer_sharding_from_operands``,
``propagate_user_sharding``) are **never called**: under ``jit`` over a mesh the function is
staged whole and XLA's SPMD partitioner partitions it as it does any other computation. The
results are the same values as JAX's; the communication XLA chooses may differ from the one the
user's ``partition`` callback would have asked for. JAX emits a ``CustomSPMDPartitioning`` custom
call whose callbacks XLA invokes during partitioning; funcgrad has no such hook into XLA.

The call is bound as ``custom_partitioning_p``, a call primitive (funcgrad.extend.core's
``CallPrimitive``), so it has every rule: JVP and transpose (``grad``), batching (``vmap``) and a
lowering that inlines the function. (JAX's primitive has no JVP or batching rule: ``grad`` and
``vmap`` of a ``custom_partitioning`` function raise there, and work here.)

Layer: surface. Imports funcgrad.extend.core (the call primitive) and funcgrad.kernel's tracer type.

>>> import funcgrad, funcgrad.numpy as fnp
>>> @custom_partitioning
... def double(x):
...     return 2 * x
>>> _ = double.def_partition(partition=lambda mesh, args, result: None, sharding_rule="i j -> i j")
>>> funcgrad.jit(double)(fnp.ones((2, 3))).tolist()
[[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]]
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from funcgrad import tree_util
from funcgrad._meshes import get_abstract_mesh
from funcgrad.extend import linear_util as lu
from funcgrad.extend.core import CallPrimitive, Tracer

__all__ = [
    "BATCHING",
    "ArrayMapping",
    "CompoundFactor",
    "SdyShardingRule",
    "custom_partitioning",
    "custom_partitioning_p",
]

# The call primitive a ``custom_partitioning`` call binds (see the module docstring).
custom_partitioning_p = CallPrimitive("custom_partitioning")

# ----------------------------------------------------------------------------------------------
# Shardy sharding rules: an einsum-like description of which dimensions of the operands and
# results correspond (one "factor" per dimension), validated as JAX validates them.

# ``...`` (leading batch dimensions) is one character inside a parsed rule, as in JAX.
BATCHING: str = "\u2026"


def _check_factor(factor: str) -> None:
    if not factor or not factor[0].isalpha():
        raise ValueError(f"Factor names have to start with a letter, but got {factor[:1]!r}")
    bad = [c for c in factor[1:] if not (c == "_" or c.isalnum())]
    if bad:
        raise ValueError(f"Unknown character {bad[0]!r} in factor {factor!r}")


def _is_batching(factor: str) -> bool:
    # ``...`` alone, or ``...<digits>`` naming a batching group (``...`` is group 0).
    return bool(factor) and factor[0] == BATCHING and (len(factor) == 1 or factor[1:].isdigit())


class CompoundFactor(tuple):
    """Two or more factors sharing one dimension (its size is their product).

    >>> CompoundFactor("b", "c")
    ('b', 'c')
    """

    def __new__(cls, *factors):
        if len(factors) < 2:
            raise ValueError("A compound factor should contain at least two factors")
        for f in factors:
            if not isinstance(f, str):
                raise ValueError(f"Each element of CompoundFactor must be a str, but got {type(f)}")
            if _is_batching(f):
                raise ValueError("Ellipsis can't be used in a compound factor")
            _check_factor(f)
        return super().__new__(cls, factors)


class ArrayMapping(tuple):
    """The factors of one operand or result, one per dimension (a leading ``BATCHING`` stands for
    any number of batch dimensions).

    >>> ArrayMapping(BATCHING, CompoundFactor("b", "c"), "d")[1:]
    (('b', 'c'), 'd')
    """

    def __new__(cls, *dim_mappings):
        for i, d in enumerate(dim_mappings):
            if isinstance(d, CompoundFactor):
                continue
            if not isinstance(d, str):
                raise ValueError(
                    f"Each element of ArrayMapping must be a str or CompoundFactor, but got {type(d)}"
                )
            if _is_batching(d):
                if i != 0:
                    raise ValueError("Ellipsis can only be used at the beginning of a dimension")
            else:
                _check_factor(d)
        return super().__new__(cls, dim_mappings)


class SdyShardingRule:
    """A Shardy sharding rule: the ``ArrayMapping`` of each operand and result, the special factor
    kinds (reduction, need-replication, permutation; others are passthrough) and the sizes of
    factors used only inside compound factors.

    >>> rule = SdyShardingRule((ArrayMapping("i", "k"), ArrayMapping("k", "j")), (ArrayMapping("i", "j"),),
    ...                        reduction_factors=("k",))
    >>> print(rule)
    SdyShardingRule((('i', 'k'), ('k', 'j')), (('i', 'j'),), {} reduction_factors=('k',))
    """

    def __init__(
        self,
        operand_mappings: tuple[ArrayMapping, ...],
        result_mappings: tuple[ArrayMapping, ...],
        *,
        reduction_factors: tuple[str, ...] = (),
        need_replication_factors: tuple[str, ...] = (),
        permutation_factors: tuple[str, ...] = (),
        **factor_sizes: int,
    ):
        # factor -> whether some dimension is that factor alone (its size is then inferred)
        whole: dict[str, bool] = {}
        for mapping in tuple(operand_mappings) + tuple(result_mappings):
            for dim in mapping:
                if isinstance(dim, CompoundFactor):
                    for f in dim:
                        whole.setdefault(f, False)
                else:
                    whole[dim] = True
        for f in factor_sizes:
            if f not in whole:
                raise ValueError(f"Factor {f} is not used in the rule, but size is provided")
        for f, is_whole in whole.items():
            if not is_whole and f not in factor_sizes:
                raise ValueError(f"Factor {f} is only used in compound factors; must specify its size")
            if is_whole and f in factor_sizes:
                raise ValueError(f"Factor {f} represents a whole dimension; do not specify its size")
        special: set[str] = set()
        for kind, factors in (
            ("reduction_factors", reduction_factors),
            ("need_replication_factors", need_replication_factors),
            ("permutation_factors", permutation_factors),
        ):
            if not isinstance(factors, tuple):
                raise ValueError(f"{kind} must be a tuple of factors")
            if len(set(factors)) != len(factors):
                raise ValueError(f"{kind} contains duplicated factors")
            for f in factors:
                if f not in whole:
                    raise ValueError(f"Factor {f} in {kind} is not used in the rule")
                if f in special:
                    raise ValueError(
                        f"Factor {f} can only be in one of the reduction, need replication, or "
                        "permutation factor sets."
                    )
                special.add(f)
        self.operand_mappings = tuple(operand_mappings)
        self.result_mappings = tuple(result_mappings)
        self.factor_sizes = factor_sizes
        self.reduction_factors = reduction_factors
        self.need_replication_factors = need_replication_factors
        self.permutation_factors = permutation_factors

    def __str__(self):
        kinds = ("reduction_factors", "need_replication_factors", "permutation_factors")
        special = "".join(f" {k}={getattr(self, k)}" for k in kinds if getattr(self, k))
        return (
            f"SdyShardingRule({self.operand_mappings}, {self.result_mappings}, {self.factor_sizes}{special})"
        )

    __repr__ = __str__


def _parse_side(text: str) -> tuple[ArrayMapping, ...]:
    """One side of a rule string (``"i j, j k"``) into its ArrayMappings; ``""`` is one scalar."""
    text = " ".join(text.split())
    if not text:
        return (ArrayMapping(),)
    values: list[ArrayMapping] = []
    dims: list[Any] = []
    compound: list[str] | None = None  # the factors of an open ``(...)``
    word = ""
    i = 0

    def flush():
        nonlocal word
        if word:
            (dims if compound is None else compound).append(word)
            word = ""

    while i < len(text):
        c = text[i]
        i += 1
        if c == BATCHING:
            if word or compound is not None or dims:
                raise ValueError("Ellipsis can only be used at the beginning of a dimension")
            digits = ""
            while i < len(text) and text[i].isdigit():
                digits, i = digits + text[i], i + 1
            dims.append(BATCHING + (str(int(digits)) if digits else "0"))
        elif c in "(), ":
            flush()
            if c == "(":
                if compound is not None:
                    raise ValueError("Compound factors should be one level, nested brackets are not allowed")
                compound = []
            elif c == ")":
                if compound is None:
                    raise ValueError("Brackets are not balanced")
                if len(compound) <= 1:
                    raise ValueError("Brackets should contain at least two factors")
                dims.append(CompoundFactor(*compound))
                compound = None
            elif c == ",":
                values.append(ArrayMapping(*dims))
                dims = []
        elif c == "_" or c.isalnum():
            if not word and c.isdigit():
                raise ValueError(f"Factor names have to start with a letter, but got {c!r}")
            word += c
        else:
            raise ValueError(f"Unknown character {c!r}")
    if compound is not None:
        raise ValueError(f"Brackets are not balanced in rule: {text!r}")
    flush()
    values.append(ArrayMapping(*dims))
    return tuple(values)


def _rule_from_str(rule: str, **kinds_and_sizes) -> SdyShardingRule:
    """``"i j, j k -> i k"`` (einops-like: spaces separate factors, ``(a b)`` is a compound
    factor, a leading ``...`` any batch dimensions) into an SdyShardingRule."""
    if not isinstance(rule, str):
        raise TypeError(f"rule must be a str, but got {type(rule)}")
    sizes = {k: v for k, v in kinds_and_sizes.items() if not k.endswith("_factors")}
    if not all(isinstance(v, int) for v in sizes.values()):
        raise TypeError(f"factor_sizes must be a dict of str to int, but got {sizes}")
    if BATCHING in rule:
        raise ValueError(f"Unknown character {BATCHING!r}")
    rule = rule.replace("...", BATCHING)
    if "." in rule:
        raise ValueError("Character '.' must be used inside ellipsis '...'")
    if rule.count("->") != 1:
        raise ValueError(f"There is no single -> in rule: {rule!r}")
    operands, results = rule.split("->")
    return SdyShardingRule(_parse_side(operands), _parse_side(results), **kinds_and_sizes)


def _check_rule_against(rule: SdyShardingRule, args_flat, outs_flat, name: str) -> None:
    """A rule that does not describe the call (count of operands/results, or a rank) is an error
    naming the mismatch (JAX reports it from XLA's partitioner; here it is checked at the call)."""
    for what, mappings, values in (
        ("operand", rule.operand_mappings, args_flat),
        ("result", rule.result_mappings, outs_flat),
    ):
        if len(mappings) != len(values):
            raise ValueError(
                f"custom_partitioning {name}: the sharding rule {rule} has {len(mappings)} {what} "
                f"mappings but the call has {len(values)} {what}s "
                "(one mapping per flattened array: fix the rule)"
            )
        for k, (mapping, value) in enumerate(zip(mappings, values)):
            ndim = len(getattr(value, "shape", ()))
            batched = len(mapping) > 0 and isinstance(mapping[0], str) and _is_batching(mapping[0])
            fixed = len(mapping) - batched
            if (ndim < fixed) if batched else (ndim != fixed):
                raise ValueError(
                    f"custom_partitioning {name}: {what} {k} has rank {ndim} but the sharding rule maps "
                    f"it to {tuple(mapping)} ({fixed}{'+' if batched else ''} dimensions): fix the rule"
                )


# ----------------------------------------------------------------------------------------------
# custom_partitioning


class custom_partitioning:
    """A function with user rules for partitioning it over a mesh (JAX's ``custom_partitioning``).

    ``f = custom_partitioning(fun, static_argnums=())`` (or as a decorator) computes ``fun``;
    ``f.def_partition(partition, infer_sharding_from_operands=None, propagate_user_sharding=None,
    decode_shardings=True, sharding_rule=None, *, reduction_factors=(), need_replication_factors=(),
    permutation_factors=(), **factor_sizes)`` records the rules, with JAX's signature and checks
    (``sharding_rule`` is an ``SdyShardingRule``, an einsum-like string parsed into one, or a callable
    returning either). funcgrad computes the function whole and lets XLA's SPMD partitioner split it
    under ``jit``: **the callbacks are never called** (the module docstring says why).

    Positional arguments listed in ``static_argnums`` are passed through as Python values (they may
    not be traced arrays); keyword arguments are bound to positions by ``fun``'s signature.

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> @functools.partial(custom_partitioning, static_argnums=(1,))
    ... def scale(x, k):
    ...     return x * k
    >>> float(funcgrad.grad(lambda x: scale(x, 3.0).sum())(fnp.ones(2))[0])
    3.0
    """

    def __init__(self, fun: Callable, static_argnums: int | tuple[int, ...] = ()):
        if not callable(fun):
            raise TypeError(f"custom_partitioning expects a callable, got {type(fun).__name__}")
        self.fun = fun
        self.static_argnums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
        self.partition = None
        self.propagate_user_sharding = None
        self.infer_sharding_from_operands = None
        self.decode_shardings = True
        self.sharding_rule = None
        functools.update_wrapper(self, fun)

    def __getattr__(self, name):  # the wrapped function's attributes, as JAX's custom_* types forward
        if name == "fun":
            raise AttributeError(name)
        return getattr(self.fun, name)

    def def_partition(
        self,
        partition,
        infer_sharding_from_operands=None,
        propagate_user_sharding=None,
        decode_shardings=True,
        sharding_rule=None,
        *,
        reduction_factors=(),
        need_replication_factors=(),
        permutation_factors=(),
        **factor_sizes,
    ):
        """Record the partitioning rules; returns ``partition`` (as JAX's does).

        >>> f = custom_partitioning(lambda x, y: x @ y)
        >>> _ = f.def_partition(None, sharding_rule="i k, k j -> i j", reduction_factors=("k",))
        >>> f.sharding_rule.reduction_factors
        ('k',)
        """
        for what, fn in (
            ("partition", partition),
            ("infer_sharding_from_operands", infer_sharding_from_operands),
            ("propagate_user_sharding", propagate_user_sharding),
        ):
            if fn is not None and not callable(fn):
                raise TypeError(
                    f"custom_partitioning.def_partition: {what} must be a callable or None, got {fn!r}"
                )
        self.partition = partition
        self.infer_sharding_from_operands = infer_sharding_from_operands
        self.propagate_user_sharding = propagate_user_sharding
        self.decode_shardings = decode_shardings
        kinds = dict(
            reduction_factors=reduction_factors,
            need_replication_factors=need_replication_factors,
            permutation_factors=permutation_factors,
        )
        if sharding_rule is None or callable(sharding_rule) or isinstance(sharding_rule, SdyShardingRule):
            extra = {**{k: v for k, v in kinds.items() if v}, **factor_sizes}
            if extra:
                raise ValueError(
                    f"Unknown keyword arguments: {extra} (factor kinds and sizes go with a string "
                    "sharding_rule)"
                )
            self.sharding_rule = sharding_rule
        else:
            self.sharding_rule = _rule_from_str(sharding_rule, **kinds, **factor_sizes)
        return partition

    def __call__(self, *args, **kwargs):
        if self.sharding_rule is None and (
            self.propagate_user_sharding is not None or self.infer_sharding_from_operands is not None
        ):  # (funcgrad partitions with Shardy, which reads only a sharding_rule: JAX's refusal)
            raise NotImplementedError(
                "Shardy is used, but sharding propagation callbacks instead of sharding_rule are "
                "provided. Need to provide sharding_rule to migrate to Shardy."
            )
        try:
            bound = inspect.signature(self.fun).bind(*args, **kwargs)
        except (TypeError, ValueError) as e:
            if kwargs:
                raise TypeError(
                    f"custom_partitioning {self._name}: cannot bind the arguments ({e})"
                ) from None
            bound = None  # no signature to read (a builtin): positional arguments as given
        if bound is not None:
            bound.apply_defaults()
            if bound.kwargs:
                raise TypeError("keyword arguments could not be resolved to positions")
            args = bound.args
        for i in self.static_argnums:
            if not -len(args) <= i < len(args):
                raise ValueError(
                    f"custom_partitioning {self._name}: static_argnums {self.static_argnums} names argument "
                    f"{i}, but the call has {len(args)} positional arguments"
                )
        static = {i % len(args) for i in self.static_argnums}
        for i in static:
            if any(isinstance(leaf, Tracer) for leaf in tree_util.tree_leaves(args[i])):
                raise TypeError(
                    f"custom_partitioning {self._name}: argument {i} is static (static_argnums) but a traced "
                    "array was passed there; pass a Python value or remove it from static_argnums"
                )
        dynamic = [a for i, a in enumerate(args) if i not in static]
        flat, in_tree = tree_util.tree_flatten(dynamic)
        out_tree: list = []

        def flat_fun(*xs):
            it = iter(tree_util.tree_unflatten(in_tree, list(xs)))
            full = [a if i in static else next(it) for i, a in enumerate(args)]
            out_flat, tree = tree_util.tree_flatten(self.fun(*full))
            out_tree.append(tree)
            return out_flat

        outs = custom_partitioning_p.bind(lu.wrap_init(flat_fun), *flat)
        rule = self.sharding_rule
        if callable(rule) and not isinstance(rule, SdyShardingRule):
            # JAX calls it with (*static_args, mesh, arg_shapes, result_shapes): no mesh here, so
            # only a rule that does not need one is checked; the call itself never depends on it
            rule = None
        # (inside a fully manual shard_map body nothing partitions the call, so JAX never reads
        # the rule there: shard_map_test's test_custom_partitioning maps a matrix with 'i -> i')
        if isinstance(rule, SdyShardingRule) and not get_abstract_mesh().are_all_axes_manual:
            _check_rule_against(rule, flat, outs, self._name)
        return tree_util.tree_unflatten(out_tree[-1], list(outs))

    @property
    def _name(self) -> str:
        return getattr(self.fun, "__name__", repr(self.fun))


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
