"""The cache registry (NOTE: [caches have an owner] in funcgrad/kernel/caches.py): every cache is
registered where it is defined, ``funcgrad.clear_caches()`` empties each one, and a module-level
cache that is not registered fails the source scan below."""

from __future__ import annotations

import ast
import functools
import importlib
import pathlib
import sys
import weakref

import ml_dtypes
import numpy as np
import pytest

import funcgrad
import funcgrad.custom_derivatives as custom_derivatives
import funcgrad.numpy as fnp
import funcgrad.scipy.linalg
from funcgrad.kernel import caches

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Every cache the library keeps today, by registry name (a new one is added here by its author).
KNOWN = {
    "kernel.numpy_plans",
    "kernel.held_consts",
    "kernel.eager_buffer_pools",
    "kernel.user_rules_memo",
    "kernel.eager_programs",
    "kernel.surface_templates",
    "kernel.jaxpr_keys",
    "kernel.dtype_is_inexact",
    "kernel.derived_jaxprs",
    "primitives.shard_map_programs",
    "primitives.meshes_in",
    "numpy.result_type",
    "numpy.linalg_solve_jaxprs",
    "numpy.linalg_cho_jaxprs",
    "custom_derivatives.closure_conversions",
    "experimental.ode_integrators",
    "jit.instances",
    "jit.functions",
    "xla_bridge.compiled_programs",
    "xla_bridge.single_programs",
    "xla_bridge.executables",
    "xla_bridge.spmd_executables",
}

# Module-level objects that look like caches (an empty dict at import, a memoised function) but are
# not: forgetting them would break something or free nothing. (module, name) -> why.
NOT_CACHES = {
    ("funcgrad.kernel.caches", "_registry"): "the registry itself",
    ("funcgrad.experimental._checkify_rules", "_SITE_CODES"): "error-site codes that compiled programs carry",
    ("funcgrad.xla_bridge.backends", "_backends"): "the PJRT clients, which own every live buffer",
    ("funcgrad.xla_bridge.backends", "cpu_client_options"): "options given before the CPU client starts",
    ("funcgrad.xla_bridge.backends", "_shardings"): "one sharding per device, compared by identity",
    ("funcgrad.xla_bridge.sharded", "_replicated"): "one sharding per devices and mesh, compared by identity",
    ("funcgrad.xla_bridge.dtypes", "_avals"): "interned avals, compared by identity on every call",
    ("funcgrad.xla_bridge.emitter", "lowering_rules"): "the lowering-rule table",
    ("funcgrad.xla_bridge.emitter", "rule_modules"): "where each lowering rule was defined",
    ("funcgrad.xla_bridge.plugins", "_loaded_plugins"): "PJRT plugins loaded into the process (once each)",
    ("funcgrad.xla_bridge.plugins", "_plugin_apis"): "the loaded plugins' C APIs",
    ("funcgrad.xla_bridge.distributed", "_state"): "the distributed runtime's service and client",
    (
        "funcgrad._config",
        "_CONTEXT_STATES",
    ): "the thread-local config states, one per flag (the alias reads them)",
    (
        "funcgrad.xla_bridge.runtime_tokens",
        "_tokens",
    ): "the runtime token of the last effectful execution per device, which effects_barrier waits on",
    # Registries that users or libraries fill (JAX's public tables): clearing them would drop rules.
    ("funcgrad.experimental.jet", "call_param_updaters"): "JAX's table of call-parameter updaters for jet",
    (
        "funcgrad.experimental.mesh_utils",
        "device_kind_handler_dict",
    ): "mesh layouts registered per device kind",
    ("funcgrad.export._serialization", "_serializers"): "registered pytree-node serializers",
    ("funcgrad.export._serialization", "_deserializers"): "registered pytree-node deserializers",
    (
        "funcgrad.export._shape_poly",
        "_ATOMS",
    ): "the operands of each named non-polynomial dimension atom, read by live DimExprs",
    ("funcgrad.extend.backend", "_factories"): "backend factories registered with register_backend_factory",
    ("funcgrad.extend.backend", "_made"): "the backends those factories made (they own buffers)",
    ("funcgrad._vmappables", "vmappables"): "types registered with register_vmappable",
    ("funcgrad._vmappables", "_handlers"): "the handlers of those types",
    ("funcgrad.interpreters.partial_eval", "dce_rules"): "JAX's dead-code rule table",
    (
        "funcgrad.experimental.key_reuse._core",
        "key_reuse_signatures",
    ): "JAX's table of key-reuse signatures per primitive",
    ("funcgrad.experimental.roofline.roofline", "_rooflines"): "roofline rules (register_roofline's table)",
    (
        "funcgrad._key_reuse",
        "_by_data",
    ): "the consumption state of live key arrays' data (entries leave with their data)",
    ("funcgrad._ref_scopes", "HITYPES"): "high-level types registered with hijax.register_hitype",
    (
        "funcgrad.numpy._arraylike",
        "_VERSIONS",
    ): "the one checking version of each public function (x.clip is fnp.clip)",
    ("funcgrad._ref_scopes", "_SCOPES"): "the ref scopes of the traces in progress (empty between)",
    ("funcgrad._control_flow_state", "_STAND_INS"): "stand-ins of the Refs given to conds (held weakly)",
    ("funcgrad._placement", "unreduced_ops"): "the unreduced-value operations funcgrad.sharding registers",
    ("funcgrad._placement", "switched_ops"): "auto_axes, which funcgrad.sharding registers (a registry)",
    ("funcgrad.primitives._unreduced_rules", "_unreduced_rules"): "each primitive's unreduced-axes rule",
    ("funcgrad.primitives._unreduced_rules", "reduced_rules"): "shard_map's reduced-axes rule (a registry)",
    (
        "funcgrad.primitives._unreduced_rules",
        "_drops_reduced",
    ): "the primitives whose results are never reduced",
    (
        "funcgrad.interpreters.partial_eval",
        "partial_eval_jaxpr_custom_rules",
    ): "JAX's partial-eval rule table",
    ("funcgrad.random._keys", "PRNGS"): "the PRNG implementations by name",
}

_DICT_LIKE = {"dict", "OrderedDict", "WeakKeyDictionary", "WeakValueDictionary", "defaultdict"}
_MEMOISERS = {"lru_cache", "cache"}


def _name(node) -> str | None:
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)


def _caches_in_source(source: str) -> list[str]:
    """The module-level names of ``source`` bound to an empty dict-like object or a memoised
    function: what a cache looks like where it is defined."""
    found = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            value = node.value
            empty = (isinstance(value, ast.Dict) and not value.keys) or (
                isinstance(value, ast.Call)
                and _name(value.func) in _DICT_LIKE
                and not value.args
                and not value.keywords
            )
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if empty:
                found += [t.id for t in targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.FunctionDef):
            decorators = [d.func if isinstance(d, ast.Call) else d for d in node.decorator_list]
            if any(_name(d) in _MEMOISERS for d in decorators):
                found.append(node.name)
    return found


@functools.cache
def _module_level_caches() -> tuple:
    """(module, name) of every such object in the library's source (parsed once per process: a
    scan of the whole library takes 1.4 s of CPU and three places here ask for it)."""
    found = []
    for folder, package in (
        ("funcgrad", "funcgrad"),
        ("primitives", "funcgrad.primitives"),
        ("xla_bridge", "funcgrad.xla_bridge"),
    ):
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = [p for p in path.relative_to(ROOT / folder).with_suffix("").parts if p != "__init__"]
            module = ".".join([package, *parts])
            if module.startswith("funcgrad.as_jax"):  # importing it installs the jax alias (by design)
                continue
            found += [(module, name) for name in _caches_in_source(path.read_text())]
    return tuple(found)


def _fill() -> dict:
    """Run what fills the caches on one device; returns objects that must stay alive meanwhile."""
    keep = {}
    f = funcgrad.jit(lambda x: x * 2 + 1)
    f(np.ones(3))
    for _ in range(2):  # derives the JVP of the jitted program; then its cached eager grad
        funcgrad.grad(lambda x: fnp.sum(f(x)))(np.ones(3))
    loss = lambda w: fnp.sum(fnp.tanh(w @ w) ** 2)  # noqa: E731
    for _ in range(3):  # eager grad: recorded, then cached from the second sighting
        funcgrad.grad(loss)(np.eye(3) * 0.5)
        funcgrad.grad(lambda w: fnp.sum(fnp.tanh(w * 2.0) ** 2))(np.ones((96, 96)))  # pooled buffers
    a, b = np.eye(3) * 2.0 + 0.1, np.ones(3)
    funcgrad.grad(lambda a: fnp.sum(fnp.linalg.solve(a, b)))(a)
    funcgrad.grad(lambda a: fnp.sum(funcgrad.scipy.linalg.solve(a @ a.T, b, assume_a="pos")))(a)
    fnp.linalg.eigh(a)  # an eager factorisation: one program
    fnp.negative(np.array([1, 2], ml_dtypes.uint4))  # no NumPy kernel: compiled on its own
    keep["converted"] = fun = lambda x: x * 2.0  # noqa: E731 - (held: the cache is weak in it)
    custom_derivatives.closure_convert(fun, 1.0)
    return keep


def _fill_multi_device_routes() -> None:
    from funcgrad.experimental import ode
    from funcgrad.sharding import Mesh, NamedSharding
    from funcgrad.sharding import PartitionSpec as P

    mesh = Mesh(np.array(funcgrad.devices()[:1]), ("x",))
    g = funcgrad.jit(lambda x: x * 3, in_shardings=NamedSharding(mesh, P("x")))
    np.testing.assert_array_equal(g(np.ones(4)), 3.0)
    sm = funcgrad.shard_map(lambda x: x * 2, mesh=mesh, in_specs=P("x"), out_specs=P("x"))
    np.testing.assert_array_equal(sm(np.ones(4)), 2.0)  # eager: per device (NOTE: [eager shard_map])
    # under grad the shard_map equation runs as its compiled one-equation program
    np.testing.assert_array_equal(funcgrad.grad(lambda x: sm(x).sum())(np.ones(4)), 2.0)
    ode._wrapper(lambda y, t: -y, 1e-6, 1e-6, 10, np.inf)  # one jitted integrator per problem


def _import_every_cache_owner() -> None:
    for module in {m for m, _ in _module_level_caches()} | {
        "funcgrad.xla_bridge.spmd",
        "funcgrad.experimental.ode",
        "funcgrad.jitting",
    }:
        importlib.import_module(module)


def test_the_registry_holds_every_known_cache():
    _import_every_cache_owner()
    missing = KNOWN - set(caches.registered_caches())
    assert not missing, f"caches no longer registered: {sorted(missing)}"


def test_clear_caches_empties_a_jit_call_and_an_eager_grad():
    f = funcgrad.jit(lambda x: fnp.sin(x) * 2)
    f(np.ones(2))
    loss = lambda x: fnp.sum(fnp.exp(x) ** 2)  # noqa: E731
    for _ in range(2):
        funcgrad.grad(loss)(np.ones(2))
    sizes = caches.cache_sizes()
    for name in ("jit.functions", "xla_bridge.executables", "kernel.eager_programs"):
        assert sizes[name] > 0, name
    funcgrad.clear_caches()
    assert f.cache_info().currsize == 0
    assert {n: s for n, s in caches.cache_sizes().items() if s} == {}
    # And everything still works afterwards, tracing and compiling again.
    np.testing.assert_allclose(f(np.ones(2)), 2 * np.sin(1.0))
    np.testing.assert_allclose(funcgrad.grad(loss)(np.ones(2)), 2 * np.exp(2.0))


@pytest.mark.slow
def test_clear_caches_empties_every_registered_cache():
    keep = _fill()
    _fill_multi_device_routes()
    sizes = caches.cache_sizes()
    empty = sorted(n for n in KNOWN if not sizes.get(n))
    assert not empty, f"not filled by this test: {empty}"
    funcgrad.clear_caches()
    assert {n: s for n, s in caches.cache_sizes().items() if s} == {}
    del keep


def _is_registered(obj) -> bool:
    """Registered itself, or an owner reached through a registered ``CacheGroup``."""
    for r in caches.registered_caches().values():
        if obj is r or (isinstance(r, caches.CacheGroup) and any(obj is o for o in r.owners())):
            return True
    return False


# Classes whose module-level instances are caches (memo objects of their own).
CACHE_CLASSES = ("DerivedJaxprs", "ProgramCache")


def test_every_module_level_cache_is_registered():
    _import_every_cache_owner()
    unregistered = []
    for module, name in _module_level_caches():
        obj = getattr(importlib.import_module(module), name)
        if (module, name) in NOT_CACHES or _is_registered(obj):
            continue
        unregistered.append(f"{module}.{name}")
    # Module-level instances of the memo classes, in every module imported by now.
    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith("funcgrad"):
            continue
        for name, obj in list(vars(module).items()):
            if type(obj).__name__ in CACHE_CLASSES and not _is_registered(obj):
                unregistered.append(f"{module_name}.{name}")
    assert not unregistered, (
        f"module-level caches that are not registered: {unregistered}. Register each where it is "
        "defined (funcgrad.kernel.caches.register_cache), or list it in NOT_CACHES with the reason"
    )
    stale = [f"{m}.{n}" for m, n in NOT_CACHES if not hasattr(importlib.import_module(m), n)]
    assert not stale, f"NOT_CACHES names objects that no longer exist: {stale}"


def test_the_scan_sees_a_new_cache():
    # The scan above can fail: an unregistered empty dict or memoised function is seen, a
    # registered one (wrapped where it is defined) is not.
    source = """
import collections, functools
_memo: dict = {}
_order = collections.OrderedDict()
_table = {"a": 1}
_kept = register_cache("x", {})

@functools.lru_cache(maxsize=8)
def f(x):
    return x

@register_cache("y")
@functools.cache
def g(x):
    return x
"""
    assert _caches_in_source(source) == ["_memo", "_order", "f", "g"]


def test_register_cache_forms():
    d = caches.register_cache("test.dict", {})
    d[1] = 2

    class Owner:
        def __init__(self):
            self.memo = {"k": 1}

    group = caches.register_cache("test.group", caches.CacheGroup(lambda o: o.memo))
    owner = group.add(Owner())
    assert caches.cache_sizes()["test.dict"] == 1 and caches.cache_sizes()["test.group"] == 1
    caches.clear_all()
    assert d == {} and owner.memo == {}
    ref = weakref.ref(owner)
    del owner
    assert ref() is None and len(group) == 0  # the group holds its owners weakly
    with pytest.raises(TypeError, match="clear"):
        caches.register_cache("test.bad", object())
    caches.unregister_cache("test.dict")
    caches.unregister_cache("test.group")
    assert "test.dict" not in caches.registered_caches()
