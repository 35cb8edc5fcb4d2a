"""``jax._src.config`` for JAX's test files: each JAX flag as an object with ``.value`` that is also
a context manager factory (``config.numpy_dtype_promotion("strict")``), over funcgrad's config.
Flags funcgrad lacks read as JAX's defaults and set nothing (they are recorded in ``unknown``)."""

from __future__ import annotations

import contextlib
import enum

import funcgrad

_cfg = funcgrad.config

# JAX flags that funcgrad does not have, with JAX's default values (read-only here).
_JAX_DEFAULTS = {
    "jax_legacy_prng_key": "allow",
    "jax_softmax_custom_jvp": False,
    "jax_use_simplified_jaxpr_constants": False,
    "jax_use_shardy_partitioner": True,
    "jax_custom_vjp3": False,
    "jax_explicit_x64_dtypes": "warn",  # (JAX's default, and what funcgrad does: truncate with a warning)
    "jax_traceback_filtering": "off",
    "jax_disable_bwd_checks": False,
    "jax_embedded_constants_max_bytes": 0,
}
unknown: set[str] = set()
_THREAD_LOCAL = {
    "jax_enable_x64": funcgrad.enable_x64,
    "jax_numpy_dtype_promotion": funcgrad.numpy_dtype_promotion,
    "jax_numpy_rank_promotion": funcgrad.numpy_rank_promotion,
    "jax_default_matmul_precision": funcgrad.default_matmul_precision,
}
_overrides: dict[str, object] = {}


def _read(name: str):
    if name in _overrides:
        return _overrides[name]
    try:
        return _cfg.read(name)
    except AttributeError:
        unknown.add(name)
        return _JAX_DEFAULTS.get(name)


def _write(name: str, value) -> None:
    try:
        _cfg.update(name, value)
    except AttributeError:
        unknown.add(name)
        _overrides[name] = value


def update(name: str, value) -> None:
    _write(name, value)


class _State:
    """One flag: ``flag.value`` reads it, ``flag(v)`` is a context manager setting it."""

    def __init__(self, name: str):
        self.name = name

    @property
    def value(self):
        return _read(self.name)

    def __call__(self, new_value=True):
        # JAX's contexts of these flags are thread-local, and so are funcgrad's (JaxTestCase's
        # defaults set in setUp then shield a test from a config.update of the global value)
        local = _THREAD_LOCAL.get(self.name)
        if local is not None:
            return local(new_value)
        return self._global_context(new_value)

    def get_global(self):
        from funcgrad import _config  # (the process-wide value, not this thread's)

        flag = _config._FLAGS.get(self.name)
        return _read(self.name) if flag is None else flag.value

    @contextlib.contextmanager
    def _global_context(self, new_value):
        old = _read(self.name)
        _write(self.name, new_value)
        try:
            yield
        finally:
            _write(self.name, old)


class _States(dict):
    def __missing__(self, name):
        return _State(name)


config_states = _States()


class _ConfigObject:
    """``config.config``: ``values``, ``update``, ``_read``."""

    @property
    def values(self):
        return {**_cfg.values, **_overrides}

    update = staticmethod(update)
    _read = staticmethod(_read)


config = _ConfigObject()


def parse_flags_with_absl() -> None:
    _cfg.parse_flags_with_absl()


class EffortLevel(enum.Enum):
    """JAX's effort levels (XLA's values), for ``compiler_options={"optimization_level": ...}``."""

    UNKNOWN = 0
    O0 = 9
    O1 = 19
    O2 = 29
    O3 = 39


class ExplicitX64Mode(enum.StrEnum):
    WARN = "warn"
    ERROR = "error"
    ALLOW = "allow"


class _MeshState:
    """JAX's thread-local mesh contexts, ``config.device_context`` (the concrete mesh
    ``set_mesh`` sets) and ``config.abstract_mesh_context_manager`` (``use_abstract_mesh``'s):
    ``set_local`` sets them, as pjit_test's test_set_mesh resets them after ``jax.set_mesh``."""

    def __init__(self, abstract: bool):
        self.abstract = abstract

    @property
    def value(self):
        from funcgrad import sharding

        return sharding.get_abstract_mesh() if self.abstract else sharding.get_mesh()

    def set_local(self, value) -> None:
        from funcgrad import _meshes, sharding

        if not self.abstract:
            sharding.set_mesh(value)
        elif value is None or value.empty:
            _meshes._context.abstract.clear()
        else:
            _meshes._context.abstract[:] = [value]


_MESH_STATES = {
    "device_context": _MeshState(abstract=False),
    "abstract_mesh_context_manager": _MeshState(abstract=True),
}


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    if name in _MESH_STATES:
        return _MESH_STATES[name]
    return _State(name if name.startswith("jax_") else f"jax_{name}")
