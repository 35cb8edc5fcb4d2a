"""``jax._src.config`` under the alias: each flag as JAX's state object, ``.value`` and a context
manager when called (JAX's export guide: ``with config.jax_export_calling_convention_version(10):``),
on funcgrad's flags (``funcgrad.config``)."""

from funcgrad import _config
from funcgrad._config import config


class _State:
    def __init__(self, name: str):
        self.name = name

    @property
    def value(self):
        return config.read(self.name)

    def __call__(self, new_val):
        return _config._scoped(self.name, new_val)


def __getattr__(name: str):
    flag = name if name.startswith("jax_") else f"jax_{name}"  # (JAX's spelling: config.enable_x64)
    if flag in _config._CONTEXT_STATES:  # (thread-local contexts, as JAX's: NOTE: [x64 mode per thread])
        return _config._CONTEXT_STATES[flag]
    if name.startswith("jax_") or flag in config.values:
        config.read(flag)  # (an unknown flag: funcgrad's AttributeError)
        return _State(flag)
    if name in ("config", "update"):
        return config if name == "config" else config.update
    raise AttributeError(f"jax._src.config (funcgrad.as_jax) has no {name!r}: a JAX internal")
