"""The ahead-of-time stages of a jitted call (``jax.stages``): ``jit(f).trace(x)`` is a ``Traced``,
``.lower()`` a ``Lowered`` (StableHLO text, cost analysis), ``.compile()`` a ``CompiledCall``; each
stage's ``args_info`` is an ``ArgInfo`` tree. ``ShapeDtypeStruct`` is the shape-and-dtype stand-in
that ``eval_shape`` and ``Lowered.out_info`` return.

Layer: surface, one floor under ``funcgrad.jitting`` (which makes these stages and re-exports them).
Imports the kernel, ``xla_bridge`` (lowering, compiling, running, the SPMD route) and the sharding
types (``_shardings``, ``_sharding_types``); never ``jitting`` itself: a stage holds its
``JittedFunction`` as a value and reads only the attributes the bridge's ``Dispatcher`` defines
(``_name``, ``_device``, ``_split``) and ``_arg_names``/``_donated``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from funcgrad import xla_bridge
from funcgrad._layouts import Format, Layout, default_layout
from funcgrad._meshes import get_mesh
from funcgrad._ref_scopes import lower_hi_values
from funcgrad._sharding_types import type_sharding
from funcgrad._shardings import (
    Mesh,
    NamedSharding,
    PartitionSpec,
    Sharding,
    SingleDeviceSharding,
    from_bridge,
    sharding_leaves,
)
from funcgrad.kernel import core
from funcgrad.kernel import tree_util as tu
from funcgrad.xla_bridge.dispatch import Staged
from funcgrad.xla_bridge.execute import compiled, run
from funcgrad.xla_bridge.lowering import lower_jaxpr
from funcgrad.xla_bridge.spmd_route import needs_spmd, spmd

__all__ = ["ArgInfo", "CompiledCall", "Lowered", "ShapeDtypeStruct", "Traced", "result_paths"]


class ShapeDtypeStruct:
    """A shape and dtype (and weak type, for values from Python scalars) standing in for an array
    (``eval_shape``'s result).

    >>> from funcgrad import jit
    >>> ShapeDtypeStruct((2,), "float32"), jit(lambda x: x * 2).eval_shape(1.0)
    (ShapeDtypeStruct(shape=(2,), dtype=float32), ShapeDtypeStruct(shape=(), dtype=float64, weak_type=True))
    """

    __slots__ = ("shape", "dtype", "weak_type", "_sharding", "_layout", "is_ref", "manual_axis_type")

    def __init__(
        self,
        shape,
        dtype,
        weak_type: bool = False,
        *,
        sharding=None,
        is_ref: bool = False,
        manual_axis_type=None,
    ):
        if dtype is None:
            raise ValueError("ShapeDtypeStruct: dtype must be specified.")  # (JAX's words)
        self.shape = tuple(shape)
        # An extended dtype (a typed key's key<fry>: funcgrad/random/_keys.py KeyTy) is kept as is.
        extended = not isinstance(dtype, np.dtype | type | str) and isinstance(
            getattr(dtype, "type", None), type
        )
        self.dtype = dtype if extended else np.dtype(dtype)
        self.weak_type = weak_type
        self._layout = None
        if isinstance(sharding, Format):  # (JAX's: a device-local layout and a sharding)
            if sharding.layout is Layout.AUTO:
                raise TypeError(  # (JAX's words)
                    "`Layout.AUTO` cannot be used in place of a device-local layout in a "
                    f"`ShapeDtypeStruct`. Got {sharding}"
                )
            self._layout, sharding = sharding.layout, sharding.sharding
        if hasattr(sharding, "check_compatible_aval"):
            sharding.check_compatible_aval(self.shape)  # (JAX's ValueError for a spec past the rank)
        elif isinstance(sharding, PartitionSpec) and len(sharding) > len(self.shape):
            scalar = " For scalars the PartitionSpec should be P()" if not self.shape else ""
            raise ValueError(  # (JAX's words)
                f"PartitionSpec {sharding} is only valid for values of rank at least {len(sharding)}, but "
                f"was applied to a value of rank {len(self.shape)}.{scalar}"
            )
        self._sharding = sharding  # a Sharding or PartitionSpec (over the mesh in scope), or None
        # A Ref of this type (JAX's AbstractRef): ``jit(f).lower(sds)`` traces ``f`` given a Ref,
        # ``typeof`` gives ``Ref{...}`` (funcgrad.ref.abstract_ref).
        self.is_ref = bool(is_ref)
        # (JAX's: the manual axes a value of a checked shard_map body varies along, eval_shape's)
        self.manual_axis_type = manual_axis_type

    @property
    def sharding(self):
        """The sharding given; a bare ``PartitionSpec`` is a ``NamedSharding`` over the mesh in
        scope (``set_mesh``) when read, as JAX's (a TypeError without one)."""
        s = self._sharding
        if isinstance(s, PartitionSpec):
            if get_mesh() is None:
                raise TypeError(  # (JAX's words)
                    "When specifying PartitionSpec to `ShapeDtypeStruct`, the context mesh cannot be empty. "
                    "Please use `jax.set_mesh` to set the mesh context."
                )
            return _resolve_spec(s)
        return s

    @property
    def format(self) -> Format:
        """Its layout (None: the default) and sharding, as JAX's ``ShapeDtypeStruct.format``.

        >>> import funcgrad
        >>> s = funcgrad.sharding.SingleDeviceSharding(funcgrad.devices()[0])
        >>> ShapeDtypeStruct((2, 3), "float32", sharding=Format(Layout((0, 1)), s)).format.layout
        Layout(major_to_minor=(0, 1), tiling=None, sub_byte_element_size_in_bits=0)
        """
        return Format(self._layout, self.sharding)

    @property
    def aval(self) -> core.ShapedArray:
        """The abstract value it stands for; a ``sharding`` over explicit mesh axes is part of it
        (NOTE: [sharding in types]), as when ``make_jaxpr`` traces JAX's explicit-sharding types."""
        aval = core.ShapedArray(self.shape, self.dtype, self.weak_type)
        if self.manual_axis_type is not None:
            aval = aval.with_manual_axis_type(self.manual_axis_type)
        s = self._sharding
        if s is None:
            return aval
        if isinstance(s, PartitionSpec):
            s = _resolve_spec(s)
        return _typed_as(aval, s)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")  # (as an array's, and JAX's)
        return self.shape[0]

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    @classmethod
    def like(cls, x) -> ShapeDtypeStruct:
        """The shape, dtype and weak type of ``x`` (an array, a traced value, a Python or NumPy
        scalar, another ``ShapeDtypeStruct``), as ``jax.ShapeDtypeStruct.like``.

        >>> ShapeDtypeStruct.like(np.ones(2, np.float32))
        ShapeDtypeStruct(shape=(2,), dtype=float32)
        >>> ShapeDtypeStruct.like(1.0)
        ShapeDtypeStruct(shape=(), dtype=float64, weak_type=True)
        """
        if isinstance(x, ShapeDtypeStruct):
            return cls(x.shape, x.dtype, x.weak_type, sharding=x._sharding)
        try:
            aval = core.get_aval(x)
        except TypeError:  # (another library's shape-and-dtype struct)
            return cls(
                x.shape, x.dtype, getattr(x, "weak_type", False), sharding=getattr(x, "sharding", None)
            )
        # As JAX's: a committed array's sharding (an uncommitted one has none), a traced value's
        # type's sharding over explicit mesh axes.
        if isinstance(x, core.Tracer):
            sharding = getattr(aval, "_sharding", None)
        else:
            sharding = getattr(x, "sharding", None) if getattr(x, "committed", True) else None
        # (JAX's Python bools are not weakly typed: only int, float and complex are.)
        return cls(aval.shape, aval.dtype, aval.weak_type and aval.dtype != np.bool_, sharding=sharding)

    def update(self, **kwargs) -> ShapeDtypeStruct:
        """A copy with the given ``shape``, ``dtype``, ``weak_type`` or ``sharding`` replaced, as
        ``jax.ShapeDtypeStruct.update``.

        >>> ShapeDtypeStruct((2, 3), "float32").update(shape=(6,))
        ShapeDtypeStruct(shape=(6,), dtype=float32)
        """
        unknown = set(kwargs) - {"shape", "dtype", "weak_type", "sharding", "is_ref"}
        if unknown:
            raise TypeError(f"update() got an unexpected keyword argument {sorted(unknown)[0]!r}")
        if self._layout is not None and isinstance(kwargs.get("sharding"), Sharding):  # (JAX's words)
            raise ValueError(
                f"You are updating ShapeDtypeStruct with a {type(kwargs['sharding'])} when the original "
                f"ShapeDtypeStruct had a concrete layout {self.format}. This might lead to bugs. If you "
                "want to do this, create a new ShapeDtypeStruct via the constructor."
            )
        return ShapeDtypeStruct(
            kwargs.get("shape", self.shape),
            kwargs.get("dtype", self.dtype),
            kwargs.get("weak_type", self.weak_type),
            sharding=kwargs.get("sharding", self._sharding if self._layout is None else self.format),
            is_ref=kwargs.get("is_ref", self.is_ref),
        )

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        s = (
            self._sharding
            if isinstance(self._sharding, PartitionSpec) and get_mesh() is None
            else self.sharding
        )
        sharding = "" if s is None else f", sharding={s!r}"
        ref = ", is_ref=True" if self.is_ref else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{sharding}{weak}{ref})"

    # weak_type is part of the type, as in JAX: a Python scalar's f64[] is not an array's f64[].
    def __eq__(self, other):
        return isinstance(other, ShapeDtypeStruct) and (
            self.shape,
            self.dtype,
            self.weak_type,
            self.is_ref,
        ) == (other.shape, other.dtype, other.weak_type, other.is_ref)

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak_type, self.is_ref))


def abstract_keys(tree):
    """``ShapeDtypeStruct``s of a typed PRNG key dtype as key arrays over their data's abstract
    value (``uint32[*shape, *key_shape]``), which is what the transformations see of a key array
    (NOTE: [public pytree registry]): JAX takes them as abstract keys
    (``eval_shape(random.split, ShapeDtypeStruct((), key.dtype))``, ``jit(f).lower`` of one)."""

    def key_of(x):
        aval = getattr(x, "aval", None) if type(x) is ShapeDtypeStruct else None
        if hasattr(getattr(x, "dtype", None), "_impl") and hasattr(aval, "raise_val"):
            (data,) = aval.lo_ty()
            return aval.raise_val(data)
        return x

    is_sds = lambda x: isinstance(x, ShapeDtypeStruct)  # noqa: E731
    if all(key_of(x) is x for x in tu.tree_leaves(tree, is_leaf=is_sds)):
        return tree  # (the arguments as given: static ones are not rebuilt)
    return tu.tree_map(key_of, tree, is_leaf=is_sds)


class _RefStaged(Staged):
    """A staged call whose program reads or writes Refs (``plan``, a ``RefPlan``): its outputs are
    the function's, then the written Refs' final values; the call unflattens them as a pair."""

    # (box_variants: the traces of its signature for other structures of the boxes it closes
    # over, funcgrad/jitting.py's _box_variants)
    __slots__ = ("plan", "user_tree", "box_variants")
    stateful = True

    def __init__(self, closed, out_tree, hoisted, ins, outs, plan, n_outs):
        n_finals = len(closed.out_avals) - n_outs
        pair = (tu.tree_unflatten(out_tree, list(range(n_outs))), list(range(n_finals)))
        super().__init__(closed, tu.tree_structure(pair), hoisted, ins, outs)
        self.plan = plan
        self.user_tree = out_tree


@dataclasses.dataclass(frozen=True)
class ArgInfo:
    """One array argument of a traced, lowered or compiled call (``jax.stages.ArgInfo``): its
    abstract value and whether it is donated. ``args_info`` of a ``Traced``/``Lowered``/
    ``Compiled`` is the ``(args, kwargs)`` tree of them, static arguments left out.

    >>> import funcgrad.numpy as fnp
    >>> from funcgrad import jit
    >>> f = jit(lambda x, n: x * n, static_argnums=1, donate_argnums=0)
    >>> (info,), kwargs = f.trace(fnp.ones(3), 2).args_info
    >>> info.shape, info.dtype, info.donated, kwargs
    ((3,), dtype('float64'), True, {})
    """

    _aval: Any
    donated: bool

    @property
    def shape(self):
        return self._aval.shape

    @property
    def dtype(self):
        return self._aval.dtype


class _Stage:
    """What JAX's stages (``Traced``, ``Lowered``, ``Compiled``) read from ``args_info``: the
    arguments' tree structure, their abstract values in that tree, and the donated positions."""

    args_info = None

    @property
    def in_tree(self):
        """The tree structure of ``(positional arguments, keyword arguments)``."""
        return tu.tree_structure(self.args_info)

    @property
    def in_avals(self):
        """The arguments' abstract values, in the ``(args, kwargs)`` tree; an argument given an
        ``in_shardings=`` over explicit mesh axes is typed by it, as JAX's."""
        leaves, tree = tu.tree_flatten(self.args_info)
        avals = [x._aval for x in leaves]
        ins = getattr(getattr(self, "_staged", None), "in_shardings", None)
        if ins is not None and len(ins) >= len(avals):
            ins = list(ins)[len(ins) - len(avals) :]
            avals = [
                a if s is None or a._sharding is not None else _typed_as(a, s) for a, s in zip(avals, ins)
            ]
        return tu.tree_unflatten(tree, avals)

    @property
    def donate_argnums(self) -> tuple:
        """The flat positions of the donated arguments."""
        return tuple(i for i, x in enumerate(tu.tree_leaves(self.args_info)) if x.donated)


class Traced(_Stage):
    """A traced jitted call: ``.jaxpr`` (ClosedJaxpr), ``.in_avals``, ``.out_info``,
    ``.args_info``, ``.lower()``."""

    def __init__(self, fun, staged: Staged, donated, flat=(), args_info=None):
        self.args_info = args_info
        self._fun = fun
        self._staged = staged
        self._donated = donated
        self._flat = flat
        self.jaxpr = staged.closed
        self.out_info = tu.tree_unflatten(staged.out_tree, staged.closed.out_avals)

    def lower(self, *, lowering_platforms: tuple | None = None, _private_parameters=None) -> Lowered:
        """The lowered call; ``lowering_platforms`` (JAX's keyword): lower for that platform
        instead of the function's own (``("tpu",)``: a module for a TPU, not compiled here)."""
        del _private_parameters  # (JAX's internal lowering parameters: none apply)
        if self._staged.hoisted:
            raise TypeError(
                f"jit({self._fun._name}).lower: the function closes over a value traced by an "
                "enclosing transformation; lower it outside of grad/vmap/jit"
            )
        if lowering_platforms is not None and len(tuple(lowering_platforms)) != 1:
            raise NotImplementedError(
                "lower(lowering_platforms=...) with several platforms: funcgrad lowers for one; "
                "use funcgrad.export.export(f, platforms=...) for a multi-platform module"
            )
        platform = None if lowering_platforms is None else tuple(lowering_platforms)[0]
        lowered = Lowered(self._fun, self._staged, self._donated, self._flat, platform)
        lowered.args_info = self.args_info
        return lowered

    def __str__(self):
        return str(self.jaxpr)


def result_paths(out_tree) -> tuple:
    """JAX's names of a function's results in a lowered module (``jax.result_info``): ``result``
    followed by each leaf's path in the output tree.

    >>> result_paths(tu.tree_structure(1.0)), result_paths(tu.tree_structure({"a": (1, 2)}))
    (('result',), ("result['a'][0]", "result['a'][1]"))
    """
    if out_tree.num_leaves == 1 and out_tree.num_nodes == 1:
        return ("result",)
    # (a custom node's positions read [0], as in JAX's result names, not [<flat index 0>])
    return tuple(
        "result"
        + tu.keystr(tuple(tu.SequenceKey(k.key) if isinstance(k, tu.FlattenedIndexKey) else k for k in path))
        for path in leaf_key_paths(out_tree)
    )


def leaf_key_paths(treedef) -> list:
    """Each leaf's key path in a tree of structure ``treedef``: read from the tree rebuilt with
    placeholder leaves, or from the treedef alone (``treedef_paths``) for a custom node whose
    unflatten checks its leaves.

    >>> [tu.keystr(p) for p in leaf_key_paths(tu.tree_structure({"a": (1, 2)}))]
    ["['a'][0]", "['a'][1]"]
    """
    try:
        example = tu.tree_unflatten(treedef, [0] * treedef.num_leaves)
        return [path for path, _ in tu.tree_flatten_with_path(example)[0]]
    except Exception:
        return treedef_paths(treedef, ())


def treedef_paths(treedef, prefix: tuple) -> list:
    """Each leaf's key path, read from the treedef alone (no node is rebuilt): sequence indices,
    dict keys, namedtuple fields, and positions for other nodes."""
    node = treedef.node_data()
    if node is None:
        return [prefix]
    kind, aux = node
    children = treedef.children()
    if kind in (tuple, list):
        keys = [tu.SequenceKey(i) for i in range(len(children))]
    elif kind is dict or (isinstance(kind, type) and issubclass(kind, dict) and aux is not None):
        keys = [tu.DictKey(k) for k in aux]
    elif isinstance(kind, type) and issubclass(kind, tuple) and hasattr(kind, "_fields"):
        keys = [tu.GetAttrKey(f) for f in kind._fields]
    else:
        keys = [tu.SequenceKey(i) for i in range(len(children))]  # (as JAX's result names read them)
    out = []
    for key, child in zip(keys, children):
        out += treedef_paths(child, (*prefix, key))
    return out


_DIALECTS = (None, "stablehlo", "hlo")


def _with_abstract_shardings(staged: Staged, flat) -> tuple | None:
    """The program's input shardings, with those of the ``ShapeDtypeStruct`` arguments lowered
    for (``jit(f).lower(ShapeDtypeStruct(shape, dtype, sharding=s))``: the program takes its
    argument laid out as ``s``, as JAX's; it was compiled for one device). ``staged.in_shardings``
    itself when no such argument spreads over several devices."""
    given = [
        x.sharding if isinstance(x, ShapeDtypeStruct) and isinstance(x.sharding, NamedSharding) else None
        for x in flat
    ]
    if not any(s is not None and len(s.device_set) > 1 and isinstance(s.mesh, Mesh) for s in given):
        return staged.in_shardings
    n = len(staged.closed.in_avals)
    ins = list(staged.in_shardings) if staged.in_shardings is not None else [None] * n
    offset = n - len(flat)
    for i, (s, x) in enumerate(zip(given, flat)):
        if s is not None and ins[offset + i] is None and isinstance(s.mesh, Mesh):
            s.shard_shape(x.shape)  # (JAX's IndivisibleError for a shape the axes do not divide)
            ins[offset + i] = s._bridge(len(x.shape))
    return tuple(ins)


class Lowered(_Stage):
    """A lowered jitted call: ``.as_text()`` (StableHLO, or XLA's HLO), ``.compile()``."""

    args_info = None  # the Traced's (ArgInfo tree), set by Traced.lower

    def __init__(self, fun, staged: Staged, donated, flat=(), platform: str | None = None):
        self._fun = fun
        self._staged = staged
        self._donated = donated
        self._spmd = None
        in_shardings = _with_abstract_shardings(staged, flat)
        read = fun._read_flags(staged, flat)  # NOTE: [unread arguments choose no devices]
        self._read = read
        kept = flat if read is None else [x for x, r in zip(flat, read) if r]
        if staged.spmd or in_shardings is not staged.in_shardings or needs_spmd(staged.closed, kept):
            # A program over several devices (NOTE: [SPMD call route]): lowered with its shardings.
            self._flat, self._in_shardings = flat, in_shardings  # (compile's with compiler_options)
            self._spmd = spmd().prepare(
                staged.closed, flat, fun._name, donated, in_shardings, staged.out_shardings,
                names=(staged.arg_names, staged.result_names),
            )  # fmt: skip
            self._text = self._spmd.text
        else:
            if platform is not None:
                platform = xla_bridge.normalize_platform(platform)
            elif fun._device is None:
                platform = xla_bridge.default_platform()
            else:
                platform = xla_bridge.normalize_platform(fun._device.platform)
            self._text = lower_jaxpr(
                staged.closed, fun._name, donated, platform=platform,
                arg_names=staged.arg_names, result_names=staged.result_names,
            ).text  # fmt: skip

    def as_text(self, dialect: str | None = None, *, debug_info: bool = False) -> str:
        """The module text as JAX prints it: StableHLO (``dialect`` None or ``"stablehlo"``) as
        MLIR prints the module, or XLA's HLO before optimisation (``"hlo"``), its instructions
        named from the operations' locations (NOTE: [operation locations] in
        xla_bridge/emitter.py). ``debug_info``: with the locations (StableHLO) or the
        instructions' metadata (HLO), as JAX's.

        >>> import funcgrad.numpy as fnp
        >>> from funcgrad import jit
        >>> def f(x):
        ...     return fnp.sin(x) * 2.0
        >>> print(jit(f).lower(fnp.ones(3)).as_text())  # doctest: +NORMALIZE_WHITESPACE
        module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
          func.func public @main(%arg0: tensor<3xf64>) -> (tensor<3xf64> {jax.result_info = "result"}) {
            %0 = stablehlo.sine %arg0 : tensor<3xf64>
            %cst = stablehlo.constant dense<2.000000e+00> : tensor<f64>
            %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f64>) -> tensor<3xf64>
            %2 = stablehlo.multiply %0, %1 : tensor<3xf64>
            return %2 : tensor<3xf64>
          }
        }
        >>> hlo = jit(f).lower(fnp.ones(3)).as_text("hlo")
        >>> print(hlo.split("ENTRY")[1].strip())  # doctest: +NORMALIZE_WHITESPACE
        main.1 {
          x.1 = f64[3]{0} parameter(0)
          sin.1 = f64[3]{0} sine(x.1)
          constant.1 = f64[] constant(2)
          broadcast.1 = f64[3]{0} broadcast(constant.1), dimensions={}
          ROOT mul.1 = f64[3]{0} multiply(sin.1, broadcast.1)
        }
        """
        _check_dialect(dialect)
        if dialect == "hlo":
            return xla_bridge.hlo_text(self._text, debug_info)
        return xla_bridge.mlir_text(self._text, debug_info)

    @property
    def out_info(self):
        """The outputs' shapes and dtypes (``ShapeDtypeStruct`` leaves in the output's tree), as
        JAX's ``Lowered.out_info``.

        >>> import funcgrad.numpy as fnp
        >>> from funcgrad import jit
        >>> jit(lambda x: (x, x.sum())).lower(fnp.ones(3)).out_info[1]
        ShapeDtypeStruct(shape=(), dtype=float64)
        """
        staged = self._staged
        tree, avals = staged.out_tree, staged.closed.out_avals
        if type(staged) is _RefStaged:  # the function's outputs, not the Refs' final values
            tree, avals = staged.user_tree, avals[: staged.user_tree.num_leaves]
        return tu.tree_unflatten(
            tree, [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type, sharding=a._sharding) for a in avals]
        )

    def compiler_ir(self, dialect: str | None = None):
        """The program as the compiler's objects, as JAX's: for ``"stablehlo"`` (or None) jaxlib's
        MLIR ``ir.Module`` (``str()`` prints it), for ``"hlo"`` jaxlib's ``XlaComputation``
        (``.as_hlo_text()``, ``.as_serialized_hlo_module_proto()``).

        >>> import funcgrad.numpy as fnp
        >>> from funcgrad import jit
        >>> lowered = jit(fnp.sin).lower(1.0)
        >>> lowered.compiler_ir("hlo").as_hlo_text().startswith("HloModule")
        True
        >>> "stablehlo.sine" in str(lowered.compiler_ir())
        True
        """
        _check_dialect(dialect)
        if dialect == "hlo":
            return xla_bridge.hlo_computation(self._text)
        return xla_bridge.mlir_module(self._text)

    def cost_analysis(self) -> dict:
        """XLA's cost estimate of the program before optimisation, as JAX's
        ``Lowered.cost_analysis``: ``flops``, ``bytes accessed`` and per-operand byte counts.

        >>> import funcgrad.numpy as fnp
        >>> from funcgrad import jit
        >>> jit(lambda a, b: a @ b).lower(fnp.ones((8, 4)), fnp.ones((4, 2))).cost_analysis()["flops"]
        128.0
        """
        return xla_bridge.hlo_cost_analysis(self._text)

    def compile(self, compiler_options: dict | None = None) -> CompiledCall:
        """Compile with XLA (cached) on the function's device; the result is callable with
        arguments like these. ``compiler_options``: XLA's options by name, as JAX's
        (``{"xla_cpu_enable_fast_math": True}``); XLA refuses an unknown name or a bad value with
        an ``XlaBridgeError`` (a ``funcgrad.errors.JaxRuntimeError``).

        >>> import funcgrad.numpy as fnp
        >>> from funcgrad import jit
        >>> c = jit(lambda x: 2 * x).lower(fnp.ones(2)).compile({"xla_cpu_enable_fast_math": True})
        >>> c(fnp.ones(2)).tolist()
        [2.0, 2.0]
        """
        f = self._fun
        options = _compiler_options(compiler_options)
        # (jit's own compiler_options, updated by these, as JAX's)
        options = {**(getattr(f, "_compiler_options", None) or {}), **(options or {})} or None
        if self._spmd is not None:
            program = self._spmd
            if options:  # (the same program compiled again with these options, cached per options)
                staged = self._staged
                program = spmd().prepare(
                    staged.closed, self._flat, f._name, self._donated, self._in_shardings,
                    staged.out_shardings, names=(staged.arg_names, staged.result_names),
                    compiler_options=options,
                )  # fmt: skip
            out = CompiledCall(f, self._staged, program)
        else:
            out = CompiledCall(
                f,
                self._staged,
                compiled(
                    self._staged.closed,
                    f._name,
                    self._donated,
                    f._device,
                    compiler_options=options,
                    arg_names=self._staged.arg_names,
                    result_names=self._staged.result_names,
                ),  # fmt: skip
            )
        out.args_info = getattr(self, "args_info", None)
        out._donated = tuple(self._donated or ())
        out._read = self._read
        return out


def _check_dialect(dialect) -> None:
    if dialect not in _DIALECTS:
        raise ValueError(
            f"unknown dialect: {dialect!r}; use None or 'stablehlo' (the StableHLO module) or "
            "'hlo' (XLA's HLO)"
        )


def _compiler_options(options) -> dict | None:
    """``Lowered.compile``'s ``compiler_options`` checked: a dict of option names to a bool, int,
    float or str each (what XLA's option parser takes)."""
    if options is None:
        return None
    if not isinstance(options, dict):
        raise TypeError(
            "compile: compiler_options must be a dict of XLA option names to values, "
            f"got {type(options).__name__}"
        )
    for name, value in options.items():
        if not isinstance(name, str) or not isinstance(value, (bool, int, float, str)):
            raise TypeError(
                f"compile: compiler_options entry {name!r}: {value!r} must be an option name (str) "
                "with a bool, int, float or str value"
            )
    return options


def _compiled_argument_names(flat, arg_names, names) -> list:
    """The names a compiled call's arguments go by in JAX's errors: the traced function's
    parameters where they are known, else their paths (``argument args[0]``). A tracer among them
    is a transformation of a compiled function, refused in JAX's words; their types are checked
    where they are passed to the program (``execute.run``, JAX's words)."""
    for x in flat:
        if isinstance(x, core.Tracer):
            raise TypeError(
                "Cannot apply JAX transformations to a function lowered and compiled for a particular "
                f"signature. Detected argument of Tracer type {type(x)}."
            )
    labels = list(arg_names[len(arg_names) - len(flat) :]) if arg_names else []
    return labels if len(labels) == len(flat) and all(labels) else names


class CompiledCall(_Stage):
    """A compiled jitted call; call it with arguments of the lowered shapes/dtypes."""

    args_info = None  # the Lowered's (ArgInfo tree), set by Lowered.compile
    _donated = ()  # the Lowered's donation flags, one per program input, set by Lowered.compile
    _read = None  # which program inputs it reads (None: all), set by Lowered.compile

    def __init__(self, fun, staged: Staged, c):
        self._fun = fun
        self._staged = staged
        self._compiled = c
        self._in_avals = staged.closed.in_avals  # (the program's, flat)

    @property
    def out_info(self):
        """The outputs' shapes, dtypes and the shardings the compiled program gives them
        (``ShapeDtypeStruct`` leaves in the output's tree), as JAX's ``Compiled.out_info``."""
        staged = self._staged
        avals = staged.closed.out_avals
        shardings = getattr(self._compiled.executable, "out_shardings", None)
        formats = self._formats("get_output_layouts", avals, shardings)
        tree = staged.out_tree
        if type(staged) is _RefStaged:  # the function's outputs, not the Refs' final values
            tree, avals = staged.user_tree, avals[: staged.user_tree.num_leaves]
        return tu.tree_unflatten(
            tree,
            [
                ShapeDtypeStruct(a.shape, a.dtype, a.weak_type, sharding=f.sharding)
                for a, f in zip(avals, formats)
            ],
        )

    def __call__(self, *args, **kwargs):
        # As JAX's ``Compiled``: called with the dynamic arguments only (the static ones were fixed
        # when it was lowered: ``jit(f, static_argnums=0).lower(7, 8).compile()(5)``).
        f = self._fun
        expected = None if self.args_info is None else tu.tree_structure(self.args_info)
        given = (args, kwargs)
        lowered = lower_hi_values(given)  # (as jit's call: high-level values lowered)
        leaves, tree = tu.tree_flatten_with_path(lowered)
        # (the structure as given is checked here: high-level values are one leaf in args_info;
        # with none lowered it is the flattened one's, not flattened again)
        if expected is not None and (tree if lowered is given else tu.tree_structure(given)) == expected:
            expected = None
        flat = [x for _, x in leaves]
        plan = getattr(self._staged, "plan", None)
        if plan is not None and (expected is None or tree == expected):
            # Refs are read before and written back after the program (NOTE: [refs are
            # functionalised at trace time]), as jit's own call does
            values = plan.inputs(flat)
            out, finals = self._staged.out_tree.unflatten(run(self._compiled, values))
            plan.write_back(flat, finals)
            return out
        if (expected is not None and tree != expected) or len(flat) != len(self._in_avals):
            raise TypeError(
                "Function compiled with input pytree does not match the input pytree it was "
                f"called with: compiled jit({f._name}) for {expected if expected is not None else ''}"
                f"({len(self._in_avals)} array leaves, static arguments left out), called with {tree}"
            )
        names = [f"argument {('args', 'kwargs')[p[0].idx]}{tu.keystr(p[1:])}" for p, _ in leaves]
        names = _compiled_argument_names(flat, getattr(self._staged, "arg_names", None), names)
        donated = tuple(self._donated)[len(self._donated) - len(flat) :] if self._donated else None
        # (on one device or several: NOTE: [one compiled program] in xla_bridge/programs.py)
        return tu.tree_unflatten(self._staged.out_tree, run(self._compiled, flat, donated, names))

    def as_text(self) -> str:
        """XLA's optimized HLO."""
        return self._compiled.executable.as_hlo_text()

    def runtime_executable(self):
        """The executable the runtime holds (jaxlib's loaded executable), as JAX's
        ``Compiled.runtime_executable``: an opaque object for debugging, not a serialization.

        >>> import funcgrad.numpy as fnp
        >>> from funcgrad import jit
        >>> jit(lambda x: x + 4).lower(1.0).compile().runtime_executable() is not None
        True
        """
        executable = self._compiled.executable
        loaded = getattr(executable, "_loaded", None)
        return executable if loaded is None else loaded

    @property
    def input_formats(self):
        """The layout and sharding of each argument the program takes, read back from XLA (JAX's
        ``Compiled.input_formats``: ``(args' Formats, kwargs' Formats)``; funcgrad/_layouts.py).

        >>> import funcgrad.numpy as fnp
        >>> from funcgrad import jit
        >>> (x_format,), kwargs = jit(lambda x: x.T).lower(fnp.ones((2, 3))).compile().input_formats
        >>> x_format.layout, kwargs
        (Layout(major_to_minor=(0, 1), tiling=(), sub_byte_element_size_in_bits=0), {})
        """
        formats = self._formats("get_parameter_layouts", self._in_avals, self._compiled.in_shardings)
        read = self._read
        if read is not None and len(read) == len(formats):
            # An argument the program never reads has neither (JAX's keep_unused=False drops it:
            # NOTE: [unread arguments choose no devices]).
            formats = [f if r else Format(None, None) for f, r in zip(formats, read)]
        if self.args_info is not None:
            return tu.tree_unflatten(tu.tree_structure(self.args_info), formats)
        return tuple(formats), {}

    @property
    def output_formats(self):
        """The layout and sharding of each result, read back from XLA (JAX's
        ``Compiled.output_formats``), in the structure of the function's output."""
        avals = self._staged.closed.out_avals
        shardings = getattr(self._compiled.executable, "out_shardings", None)
        return tu.tree_unflatten(self._staged.out_tree, self._formats("get_output_layouts", avals, shardings))

    @property
    def input_shardings(self):
        """The sharding of each argument the program takes (JAX's ``Compiled.input_shardings``:
        ``(args' shardings, kwargs' shardings)``), as ``input_formats`` reads them.

        >>> import funcgrad.numpy as fnp
        >>> from funcgrad import jit
        >>> (s,), kwargs = jit(lambda x: x * 2).lower(fnp.ones(3)).compile().input_shardings
        >>> type(s).__name__, kwargs
        ('SingleDeviceSharding', {})
        """
        return tu.tree_map(lambda f: f.sharding, self.input_formats, is_leaf=lambda x: isinstance(x, Format))

    @property
    def output_shardings(self):
        """The sharding of each result, in the structure of the function's output (JAX's
        ``Compiled.output_shardings``)."""
        return tu.tree_map(lambda f: f.sharding, self.output_formats, is_leaf=lambda x: isinstance(x, Format))

    def _formats(self, which: str, avals, shardings) -> list:
        loaded = getattr(self._compiled.executable, "_loaded", None)
        pjrt = list(getattr(loaded, which)()) if loaded is not None else []
        pjrt = pjrt[len(pjrt) - len(avals) :]  # (after the hoisted constants a program takes first)
        out = []
        for i, aval in enumerate(avals):
            layout = Layout.from_pjrt_layout(pjrt[i]) if i < len(pjrt) else default_layout(aval.ndim)
            if shardings is None:
                sharding = SingleDeviceSharding(self._compiled.device)
            else:
                sharding = from_bridge(shardings[len(shardings) - len(avals) + i], aval.ndim)
                if len(sharding.device_set) == 1 and sharding.is_fully_replicated:  # (as JAX's)
                    sharding = SingleDeviceSharding(next(iter(sharding.device_set)))
            out.append(Format(layout, sharding))
        return out

    def memory_analysis(self):
        """XLA's memory plan of the compiled program, as ``jax``'s ``Compiled.memory_analysis``:
        ``argument_size_in_bytes``, ``output_size_in_bytes``, ``alias_size_in_bytes`` and
        ``temp_size_in_bytes`` (the scratch memory: activations, residuals, temporaries).

        >>> import funcgrad.numpy as fnp
        >>> from funcgrad import jit
        >>> stats = jit(fnp.sin).lower(fnp.ones(4)).compile().memory_analysis()
        >>> stats.argument_size_in_bytes, stats.output_size_in_bytes
        (32, 32)
        """
        return self._compiled.executable.memory_analysis()

    def cost_analysis(self) -> dict:
        """XLA's cost estimate of the compiled program, as ``jax``'s ``Compiled.cost_analysis``:
        a dict with ``flops``, ``transcendentals``, ``bytes accessed`` and per-operand byte
        counts (``bytes accessed0{}``, ...). Estimates, not measurements.

        >>> import funcgrad.numpy as fnp
        >>> from funcgrad import jit
        >>> cost = jit(lambda a, b: a @ b).lower(fnp.ones((8, 4)), fnp.ones((4, 2))).compile().cost_analysis()
        >>> cost["flops"]
        128.0
        """
        return self._compiled.executable.cost_analysis()


def _resolve_spec(spec):
    return sharding_leaves(spec, 0, "ShapeDtypeStruct", "sharding")[0]


def _typed_as(aval, s):
    """``aval`` typed by the sharding ``s`` (a ``NamedSharding`` over a mesh with explicit axes;
    NOTE: [sharding in types]; ``s`` may be its bridge sharding); otherwise ``aval`` as it is."""
    s = getattr(s, "_fg_user", s)
    if not isinstance(s, NamedSharding) or not isinstance(s.mesh, Mesh) or not s.mesh.explicit_axes:
        return aval
    return aval.update(
        sharding=type_sharding(s.mesh.abstract_mesh, s.spec._normalized(aval.ndim, "in_shardings"))
    )
