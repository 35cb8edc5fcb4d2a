"""``jax._src.config`` under the alias: each flag as JAX's state object, ``.value`` and a context
manager when called (JAX's export guide: ``with config.jax_export_calling_convention_version(10):``),
on funcgrad's flags (``funcgrad.config``)."""

import contextlib

from funcgrad import _config
from funcgrad._config import config

_THREAD_LOCAL = {
    "jax_enable_x64": _config.enable_x64,
    "jax_numpy_rank_promotion": _config.numpy_rank_promotion,
    "jax_numpy_dtype_promotion": _config.numpy_dtype_promotion,
    "jax_default_matmul_precision": _config.default_matmul_precision,
    "jax_default_device": _config.default_device,
    "jax_disable_jit": _config.disable_jit,
}


class _State:
    def __init__(self, name: str):
        self.name = name

    @property
    def value(self):
        return config.read(self.name)

    @contextlib.contextmanager
    def __call__(self, new_val):
        previous = config.read(self.name)
        config.update(self.name, new_val)
        try:
            yield
        finally:
            config.update(self.name, previous)


def __getattr__(name: str):
    flag = name if name.startswith("jax_") else f"jax_{name}"  # (JAX's spelling: config.enable_x64)
    if flag in _THREAD_LOCAL:  # (thread-local contexts, as JAX's: NOTE: [x64 mode per thread])
        return _THREAD_LOCAL[flag]
    if name.startswith("jax_") or flag in config.values:
        config.read(flag)  # (an unknown flag: funcgrad's AttributeError)
        return _State(flag)
    if name in ("config", "update"):
        return config if name == "config" else config.update
    raise AttributeError(f"jax._src.config (funcgrad.as_jax) has no {name!r}: a JAX internal")
