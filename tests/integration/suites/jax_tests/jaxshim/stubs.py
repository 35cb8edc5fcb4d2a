"""Stand-ins for JAX internals that test files import at module level but only some tests use
(``jax._src.interpreters.mlir``, ``pxla``, ``literals``, ``sharding_impls``, ...): the names the
imports need, each a funcgrad equivalent where one exists; any other attribute raises an
AttributeError naming a JAX internal, so only the tests that use it fail."""

from __future__ import annotations

import functools
import sys
import types

import numpy as np

import funcgrad


class Missing:
    """A JAX internal the shims do not provide: importable (so that the test file loads), and an
    error naming it when a test uses it."""

    def __init__(self, name):
        self._name = name

    def __call__(self, *args, **kwargs):
        raise NotImplementedError(f"{self._name}: a JAX internal that the jax_tests shims do not provide")

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        if attr == "cache_clear":  # (a setUp clearing an internal cache: funcgrad has none of it)
            return lambda: None
        return Missing(f"{self._name}.{attr}")

    def __repr__(self):
        return f"<missing JAX internal {self._name}>"


class Internal(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return Missing(f"{self.__name__}.{name}")


def _missing_function(name):
    """A JAX function funcgrad lacks that a test file names at import (in a parameter's name)."""

    def missing(*args, **kwargs):
        raise NotImplementedError(f"jax._src.lax.parallel.{name}: not provided by funcgrad")

    missing.__name__ = missing.__qualname__ = name
    return missing


def _axis_index_of_val(x, val, axis_name):
    """The first instance along ``axis_name`` whose ``x`` equals ``val`` (as JAX's internal helper:
    a pmin of the instance indices where they are equal)."""
    lax, fnp = funcgrad.lax, funcgrad.numpy
    idx = lax.axis_index(axis_name)
    big = fnp.full(fnp.shape(x), fnp.iinfo(idx.dtype).max, idx.dtype)
    return lax.pmin(fnp.where(val == x, fnp.full(fnp.shape(x), idx, idx.dtype), big), axis_name)


def _select_kind(select_prim):
    name = getattr(select_prim, "name", str(select_prim))
    return {"ge": "ge", "le": "le"}[name]


def _select_and_gather_add(
    tangents, operand, select_prim, window_dimensions, window_strides, padding, base_dilation, window_dilation
):
    """JAX's internal helper, as funcgrad's primitive of the same name (the tangent of
    reduce_window_max/min)."""
    from funcgrad.primitives import windowed

    params = windowed.window_params(
        len(funcgrad.numpy.shape(operand)),
        window_dimensions,
        window_strides,
        padding,
        base_dilation,
        window_dilation,
    )
    return windowed.select_and_gather_add_p.bind(
        tangents, operand, select=_select_kind(select_prim), **params
    )


def _select_and_scatter_add(source, operand, select_prim, window_dimensions, window_strides, padding):
    """JAX's internal helper, as funcgrad's primitive of the same name (its transpose)."""
    from funcgrad.primitives import windowed

    params = windowed.window_params(
        len(funcgrad.numpy.shape(operand)), window_dimensions, window_strides, padding
    )
    params.pop("base_dilation")
    return windowed.select_and_scatter_add_p.bind(source, operand, select=_select_kind(select_prim), **params)


def _pargmax(x, axis_name):
    """JAX's internal ``lax.parallel.pargmax`` (the index of the maximum over a named axis)."""
    if isinstance(axis_name, tuple | list):
        raise TypeError(f"pargmin only accepts a single axis, got {axis_name}")
    return _axis_index_of_val(x, funcgrad.lax.pmax(x, axis_name), axis_name)


def _pargmin(x, axis_name):
    """JAX's internal ``lax.parallel.pargmin``."""
    if isinstance(axis_name, tuple | list):
        raise TypeError(f"pargmin only accepts a single axis, got {axis_name}")
    return _axis_index_of_val(x, funcgrad.lax.pmin(x, axis_name), axis_name)


# (JAX's names: parameterized tests name their cases after them, collective=pargmax)
_pargmax.__name__, _pargmin.__name__ = "pargmax", "pargmin"


def _single_device_sharding(device, *, memory_kind=None):
    return funcgrad.sharding.SingleDeviceSharding(device)


NAMES = {
    "jax._src.interpreters": {},
    "jax._src.interpreters.mlir": {},
    "jax._src.interpreters.pxla": {},
    "jax._src.interpreters.batching": {"__getattr__": None},
    "jax._src.interpreters.partial_eval": {},
    "jax._src.literals": {},
    "jax._src.lax.utils": {},
    "jax._src.lax.linalg": {},
    "jax._src.lax.windowed_reductions": {},
    "jax._src.lax.control_flow": {},
    "jax._src.lax.parallel": {},
    "jax._src.lax.eval_jaxpr": {},
    "jax._src.linear_util": {},
    "jax._src.debugging": {},
    "jax._src.compilation_cache": {"is_persistent_cache_enabled": lambda: False},
    "jax._src.interpreters.ad": {},
    "jax._src.array": {"ArrayImpl": None},
    "jax._src.sharding_impls": {
        "make_single_device_sharding": _single_device_sharding,
        "NamedSharding": funcgrad.sharding.NamedSharding,
        "SingleDeviceSharding": funcgrad.sharding.SingleDeviceSharding,
    },
    "jax._src.errors": {},
    "jax._src.callback": {  # (roofline_test reads jax._src.callback.io_callback)
        "io_callback": funcgrad.experimental.io_callback,
        "pure_callback": funcgrad.pure_callback,
    },
    "jax._src.indexing": {},
    "jax._src.lib.cuda_versions": {},
    "jax._src.lib.gpu_solver": {},
    "jax._src.numpy.indexing": {},
    "jax._src.numpy.fft": {},
    # (key_reuse_test keys a table on JAX's random primitives at import; funcgrad's random
    # functions are compositions, so these stand-ins fail only the tests that use them)
    "jax._src.random": {
        "clone": funcgrad.random.clone,
        "random_clone_p": Missing("jax._src.random.random_clone_p"),
    },
    "jax._src.random.core": {},
    "jax._src.random.prng": {
        n: Missing(f"jax._src.random.prng.{n}")
        for n in (
            "random_bits_p",
            "random_seed_p",
            "random_split_p",
            "random_wrap_p",
            "random_fold_in_p",
            "random_unwrap_p",
        )
    },
    "jax._src.random.threefry2x32": {},
    "jax._src.random.rbg": {},
    "jax._src.abstract_arrays": {},
    "jax._src.mesh_utils": {},
    "jax._src.debugger": {},
    "jax._src.scipy": {},
    "jax._src.scipy.special": {},
    "jax._src.cudnn": {},
    "jax._src.cudnn.scaled_matmul_stablehlo": {},
    "jax._src.ad_checkpoint": {},
    "jax._src.custom_derivatives": {},
    "jax._src.api_util": {},
    "jax._src.shard_map": {},
    "jax._src.earray": {},
    "jax._src.deprecations": {},
    "jax._src.tpu": {},
    "jax._src.tpu.linalg": {},
    "jax._src.tpu.linalg.svd": {},
    "jax._src.tpu.linalg.qdwh": {},
    "jax._src.scipy.sparse": {},
    "jax._src.scipy.sparse.linalg": {},
    "jax._src.dlpack": {},
    "jax._src.monitoring": {},
    "jax._src.profiler": {},
    "jax._src.op_shardings": {},
    "jax._src.mesh": {},
    "jax._src.sharding": {},
    "jax._src.source_info_util": {},
    "jax._src.compute_on": {},
    "jax._src.effects": {},
    "jax._src.lib.mlir": {},
    "jax._src.lib.mlir.dialects": {},
    "jax._src.layout": {},
    "jax._src.pmap": {},
    "jax._src.state.discharge": {},
    "jax._src.state.indexing": {},
    "jax._src.state.primitives": {},
    "jax._src.stages": {},
}


class _EffectTypeSet:
    """JAX's registries of effect types (``effects.ordered_effects``, ...): funcgrad's jaxprs carry
    no such effects, so registering one is accepted and changes nothing."""

    def add_type(self, effect_type) -> None:
        del effect_type

    def contains(self, eff) -> bool:
        del eff
        return False


def _tpu_svd(a, full_matrices, compute_uv=True, hermitian=False, max_iterations=10, subset_by_index=None):
    """JAX's QDWH-based SVD (``jax._src.tpu.linalg.svd.svd``) as funcgrad's ``lax.linalg.svd``
    (LAPACK's; the tests compare values with SciPy's)."""
    out = funcgrad.lax.linalg.svd(
        a, full_matrices=full_matrices, compute_uv=compute_uv, subset_by_index=subset_by_index
    )
    return tuple(out) if compute_uv else out


def install() -> None:
    import ml_dtypes
    from funcgrad.primitives import linalg as _linalg_p

    import funcgrad._debugger
    import funcgrad._layouts
    import funcgrad.ad_checkpoint
    import funcgrad.debug
    import funcgrad.dlpack
    import funcgrad.errors
    import funcgrad.experimental.mesh_utils
    import funcgrad.extend.backend
    import funcgrad.extend.core
    import funcgrad.extend.linear_util
    import funcgrad.extend.random
    import funcgrad.interpreters.ad
    import funcgrad.lax.linalg
    import funcgrad.monitoring
    import funcgrad.profiler
    import funcgrad.ref
    import funcgrad.scipy.sparse.linalg
    import funcgrad.stages
    import funcgrad.tree_util
    from funcgrad import _effects
    from funcgrad.experimental import hijax, multihost_utils
    from funcgrad.kernel import monitoring as _kernel_monitoring
    from funcgrad.random import _core as _random_core
    from funcgrad.random import _impls, _keys

    fill = {
        "jax._src.dlpack": {  # (JAX's set of the dtypes DLPack carries, funcgrad's list)
            **vars(funcgrad.dlpack),
            "SUPPORTED_DTYPES_SET": frozenset({*funcgrad.dlpack._SUPPORTED, np.dtype(ml_dtypes.bfloat16)}),
        },
        "jax._src.errors": vars(funcgrad.errors),
        "jax._src.effects": {
            "Effect": _effects.Effect,
            **{
                n: _EffectTypeSet()
                for n in (
                    "lowerable_effects",
                    "control_flow_allowed_effects",
                    "remat_allowed_effects",
                    "custom_derivatives_allowed_effects",
                    "ordered_effects",
                    "partial_eval_jaxpr_custom_rule_allowed_effects",
                )
            },
        },
        "jax._src.linear_util": vars(funcgrad.extend.linear_util),
        "jax._src.monitoring": {  # (JAX's getters of its listener lists: copies)
            **vars(funcgrad.monitoring),
            "get_event_listeners": lambda: list(_kernel_monitoring._event),
            "get_event_duration_listeners": lambda: list(_kernel_monitoring._duration),
        },
        "jax._src.profiler": vars(funcgrad.profiler),
        "jax._src.mesh": {  # (JAX's empty_concrete_mesh: a Mesh of no devices, which set_mesh clears)
            **vars(funcgrad.sharding),
            "empty_concrete_mesh": funcgrad.sharding.Mesh(np.empty((), dtype=object), ()),
            "empty_abstract_mesh": funcgrad.sharding.AbstractMesh((), ()),
        },
        "jax._src.sharding": {
            "Sharding": funcgrad.sharding.Sharding,
            "IndivisibleError": funcgrad._shardings.IndivisibleError,
        },
        "jax._src.array": {
            "ArrayImpl": funcgrad.Array,
            "make_array_from_callback": funcgrad.make_array_from_callback,
        },
        "jax._src.interpreters.batching": vars(funcgrad.interpreters.batching),
        "jax._src.interpreters.partial_eval": vars(funcgrad.interpreters.partial_eval),
        "jax._src.interpreters.mlir": vars(funcgrad.interpreters.mlir),
        "jax._src.interpreters.pxla": vars(funcgrad.interpreters.pxla),
        "jax._src.custom_derivatives": vars(funcgrad.custom_derivatives),
        "jax._src.interpreters.ad": {  # (with VJPHiPrimitive's accumulators, JAX's internal classes)
            **vars(funcgrad.interpreters.ad),
            "GradAccum": hijax._Accum,
            "NullAccum": hijax._NullAccum,
        },
        "jax._src.ad_checkpoint": {  # (JAX's module also holds the policies by name)
            **vars(funcgrad.checkpoint_policies),
            **vars(funcgrad.ad_checkpoint),
        },
        "jax._src.shard_map": {"shard_map": funcgrad.shard_map},
        "jax._src.lax.parallel": {**vars(funcgrad.lax), "pargmax": _pargmax, "pargmin": _pargmin},
        "jax._src.debugging": {
            "debug_print": funcgrad.debug.print,
            "debug_callback": funcgrad.debug.callback,
            "inspect_array_sharding": funcgrad.debug.inspect_array_sharding,
            "visualize_sharding": funcgrad.debug.visualize_sharding,
            "visualize_array_sharding": funcgrad.debug.visualize_array_sharding,
        },
        "jax._src.lax.linalg": {**vars(funcgrad.lax.linalg), "geqrf": _linalg_p.geqrf},
        "jax._src.lax.control_flow": {
            n: getattr(funcgrad.lax, n) for n in ("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp")
        },
        "jax._src.lax.windowed_reductions": {
            "_select_and_gather_add": _select_and_gather_add,
            "_select_and_scatter_add": _select_and_scatter_add,
        },
        "jax._src.tpu.linalg.svd": {"svd": _tpu_svd},
        "jax._src.layout": {"Layout": funcgrad._layouts.Layout, "Format": funcgrad._layouts.Format},
        "jax._src.pmap": {
            "host_local_array_to_global_array": multihost_utils.host_local_array_to_global_array,
        },
        "jax._src.stages": vars(funcgrad.stages),
        "jax._src.state.discharge": {"run_state": _run_state},
        "jax._src.state.primitives": {
            "ref_get": lambda ref, idx: ref[idx],
            "ref_set": _ref_set,
            "ref_addupdate": lambda ref, idx, x: funcgrad.ref.addupdate(ref, idx, x),
            "ref_swap": funcgrad.ref.swap,
        },
        "jax._src.tpu.linalg.qdwh": {"qdwh": funcgrad.lax.linalg.qdwh},
        "jax._src.scipy.sparse.linalg": vars(funcgrad.scipy.sparse.linalg),
        "jax._src.random": {"default_prng_impl": _random_core.default_prng_impl},
        "jax._src.random.prng": {
            "random_wrap": lambda data, *, impl: funcgrad.random.wrap_key_data(data, impl=impl),
            "random_unwrap": funcgrad.random.key_data,
            "prngs": _keys.PRNGS,
            "PRNGImpl": _keys.PRNGImpl,
            "PRNGKeyArray": _keys.KeyArray,
            "KeyTy": _keys.KeyTy,
            "random_seed": _impls.random_seed,
            "seed_with_impl": _impls.seed_with_impl,
        },
        "jax._src.random.rbg": {
            "rbg_prng_impl": _impls.rbg_prng_impl,
            "unsafe_rbg_prng_impl": _impls.unsafe_rbg_prng_impl,
        },
        "jax._src.abstract_arrays": {"array_types": funcgrad.extend.core.array_types},
        "jax._src.mesh_utils": vars(funcgrad.experimental.mesh_utils),
        "jax._src.debugger": vars(funcgrad._debugger),
        "jax._src.random.threefry2x32": {
            "threefry2x32_p": funcgrad.extend.random.threefry2x32_p,
            "threefry_2x32": _impls.threefry_2x32,
            "threefry_prng_impl": _impls.threefry_prng_impl,
            "threefry_seed": _impls.threefry_prng_impl.seed,
            "threefry_split": _impls.threefry_prng_impl.split,
            "threefry_fold_in": _impls.threefry_prng_impl.fold_in,
            "threefry_random_bits": _impls.threefry_prng_impl.random_bits,
        },
    }
    for name, names in NAMES.items():
        if name in sys.modules:
            continue
        module = Internal(name)
        module.__path__ = []
        module.__dict__.update({k: v for k, v in names.items() if v is not None})
        module.__dict__.update({k: v for k, v in fill.get(name, {}).items() if not k.startswith("__")})
        sys.modules[name] = module
    tree = sys.modules.get("jax._src.tree_util")
    if tree is None:
        import jax._src.tree_util as tree  # the alias's
    tree.tree_map = getattr(tree, "tree_map", funcgrad.tree_util.tree_map)
    import jax._src.lib as lib  # the alias's

    if not hasattr(lib, "version"):  # (jaxlib's version tuple, which eigh_test compares)
        from importlib.metadata import version

        lib.version = tuple(int(p) for p in version("jaxlib").split(".")[:3])
    import jax._src.dispatch as dispatch  # the alias's (empty)
    import jax._src.lib as lib  # the alias's

    if not hasattr(lib, "jaxlib_extension_version"):  # (tests gate features on it: jaxlib's own)
        from jaxlib import xla_client

        lib.jaxlib_extension_version = getattr(xla_client, "_version", 0)
    if not hasattr(lib, "xla_client"):  # (jaxlib's own module: aot_test reads its types)
        from jaxlib import xla_client

        lib.xla_client = xla_client
    if "jax._src.lib.mlir.dialects.hlo" not in sys.modules:  # (jaxlib's StableHLO dialect, as JAX's)
        from jaxlib.mlir.dialects import stablehlo

        sys.modules["jax._src.lib.mlir.dialects.hlo"] = stablehlo
        _dialects = sys.modules.get("jax._src.lib.mlir.dialects")
        if _dialects is not None:
            _dialects.hlo = stablehlo
    if not hasattr(lib, "lapack"):  # (jaxlib's LAPACK kernels, which ffi_test calls through jax.ffi)
        from jaxlib import lapack

        lib.lapack = sys.modules["jax._src.lib.lapack"] = lapack
    if not hasattr(lib, "_jax"):  # (jaxlib's extension: the interoperability tests read it)
        from jaxlib import _jax

        lib._jax = _jax

    import jax._src.api as src_api  # the alias's

    for name in ("device_put_sharded", "device_put_replicated"):  # (JAX 0.10's, no longer public)
        if name not in vars(src_api):
            setattr(src_api, name, globals()[f"_{name}"])
    if not hasattr(dispatch, "apply_primitive"):
        dispatch.apply_primitive = _apply_primitive
    if not hasattr(dispatch, "simple_impl"):  # (a primitive whose impl is itself compiled alone)
        dispatch.simple_impl = lambda prim: prim.def_impl(functools.partial(_apply_primitive, prim))
    if not hasattr(dispatch, "runtime_tokens"):  # (JAX's ordered-effect tokens: tests clear them)
        dispatch.runtime_tokens = _RuntimeTokens()
    import jax._src.core as jcore  # the alias's
    import jax._src.xla_bridge as xb  # the alias's

    for name in ("backend_xla_version", "register_backend_factory"):  # (JAX's home of jex.backend's)
        if not hasattr(xb, name):
            setattr(xb, name, getattr(funcgrad.extend.backend, name))
    if not hasattr(src_api, "clear_backends"):
        src_api.clear_backends = funcgrad.extend.backend.clear_backends
    for name in ("mapped_aval", "unmapped_aval", "set_current_trace", "take_current_trace", "TraceTag"):
        if not hasattr(jcore, name):  # (JAX's home of jex.core's)
            setattr(jcore, name, getattr(funcgrad.extend.core, name))
    import jax.extend.core.primitives as extend_primitives

    for name in ("call_p", "closed_call_p"):  # (JAX's generic call primitives: funcgrad's own)
        if not hasattr(jcore, name):
            setattr(jcore, name, getattr(extend_primitives, name))
    import jax.ref

    for name in ("new_ref", "freeze", "empty_ref", "free_ref"):  # (jax.ref's, which core holds in JAX)
        if not hasattr(jcore, name):
            setattr(jcore, name, getattr(jax.ref, name))
    if not hasattr(jcore, "aval_mapping_handlers"):  # (JAX's vmap rules of avals: hijax_test sets one)
        jcore.aval_mapping_handlers = {}
    if not hasattr(jcore, "cur_qdd"):  # (a mutable high-level value's quasi-dynamic data)
        from funcgrad.experimental.hijax import cur_qdd

        jcore.cur_qdd = cur_qdd
    if not hasattr(jcore.Primitive, "def_effectful_abstract_eval"):
        # (a test file's own effectful primitive, defined at import: funcgrad's jaxprs carry no
        # effects, so the rule's effects are dropped here and the tests about them fail alone)
        def _def_effectful_abstract_eval(self, rule):
            return self.def_abstract_eval(lambda *a, **k: rule(*a, **k)[0])

        jcore.Primitive.def_effectful_abstract_eval = _def_effectful_abstract_eval
    from funcgrad.kernel.array import Array as _ArrayImpl

    if not hasattr(_ArrayImpl, "_committed"):  # (JAX's private name of Array.committed)
        _ArrayImpl._committed = property(lambda self: self.committed)
    import jax._src.state.types as state_types  # the alias's

    if not hasattr(state_types, "RefEffect"):  # (jaxprs carry no effects in funcgrad)
        state_types.RefEffect = type("RefEffect", (), {})
    import jax._src.checkify as checkify  # the alias's: jaxprs carry no effects in funcgrad

    if not hasattr(checkify, "ErrorEffect"):
        checkify.ErrorEffect = _missing_function("checkify.ErrorEffect")


class _RuntimeTokens:
    """JAX's ``dispatch.runtime_tokens`` as far as tests use it: ``clear()`` after a test."""

    def clear(self) -> None:
        funcgrad.effects_barrier()


def _apply_primitive(prim, *args, **params):
    """JAX's eager impl of a primitive with only a lowering: the primitive compiled alone."""
    return funcgrad.jit(lambda *xs: prim.bind(*xs, **params))(*args)


def _stacked_onto(devices, name, xs):
    """The arrays ``xs`` stacked, entry ``i`` on ``devices[i]`` where it is put (JAX's
    ``batched_device_put``: an array already there is not moved), as one Array with a
    NamedSharding over a one-axis mesh of ``devices``."""
    mesh = funcgrad.sharding.Mesh(np.array(devices), (name,))
    sharding = funcgrad.sharding.NamedSharding(mesh, funcgrad.sharding.P(name))
    shards = [funcgrad.device_put(funcgrad.numpy.expand_dims(x, 0), d) for x, d in zip(xs, devices)]
    shape = (len(devices), *np.shape(xs[0]))
    return funcgrad.make_array_from_single_device_arrays(shape, sharding, shards)


def _device_put_sharded(shards, devices):
    """JAX's ``api.device_put_sharded`` (public until JAX 0.8): the shards stacked, one per device."""
    from collections.abc import Sequence

    if not isinstance(shards, Sequence):
        raise TypeError(f"device_put_sharded `shards` input must be a sequence; got {type(shards)}")
    if len(shards) != len(devices):
        raise ValueError(f"len(shards) = {len(shards)} must equal len(devices) = {len(devices)}.")

    def put(*xs):
        avals = [funcgrad.typeof(x) for x in xs]
        for a1, a2 in zip(avals[:-1], avals[1:]):
            if a1 != a2:
                raise ValueError(
                    "the shards passed to device_put_sharded must have "
                    f"consistent shape and dtype, but got {a1} and {a2}."
                )
        return _stacked_onto(devices, "_device_put_sharded", xs)

    return funcgrad.tree_util.tree_map(put, *shards)


def _device_put_replicated(x, devices):
    """JAX's ``api.device_put_replicated``: ``x`` stacked once per device, one copy on each."""
    from collections.abc import Sequence

    if not isinstance(devices, Sequence) or not devices:
        raise ValueError("`devices` argument to `device_put_replicated must be a non-empty sequence.")

    def put(leaf):
        return _stacked_onto(devices, "_device_put_replicated", [leaf] * len(devices))

    return funcgrad.tree_util.tree_map(put, x)


def _ref_set(ref, idx, value) -> None:
    ref[idx] = value


def _run_state(f):
    """JAX's ``state.discharge.run_state``: ``f`` of Refs as a function of their initial values,
    returning their final values."""

    def run(init):
        refs = funcgrad.tree_util.tree_map(funcgrad.ref.new_ref, init)
        f(refs)
        return funcgrad.tree_util.tree_map(lambda r: r[...], refs)

    return run
