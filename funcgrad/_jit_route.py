"""The redirect row of ``jit``'s route table and the flags that choose it (NOTE: [jit flags]):
``set_jit_flags`` (called by ``funcgrad.config``), and the rows a jitted call takes while a flag is
set -- its Python (``disable_jit``), the staged route (a user context, a thread's own mode, a
transfer guard), a refusal (``no_execution``); 32-bit mode sets jaxlib's x64 state instead.

Layer: surface, below ``funcgrad.jitting`` (whose ``PjitFunction`` the rows call: ``_split``,
``_call``, ``_fun``) and above ``funcgrad._disable_jit``, ``funcgrad._user_contexts`` and
``funcgrad._transfer_guard``, whose changes it follows. Imports those, the kernel and the bridge's
``dispatch.set_call_redirect``.
"""

from __future__ import annotations

from funcgrad import _disable_jit, _transfer_guard, _user_contexts
from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import tree_util as tu
from funcgrad.xla_bridge.dispatch import set_call_redirect
from funcgrad.xla_bridge.native import follow_x64

__all__ = ["set_jit_flags"]


# NOTE: [jit flags]
# funcgrad.config's jit-related flags live here (``set_jit_flags``): ``log_compiles`` and
# ``explain_cache_misses`` log (logger "funcgrad") on every trace (each trace compiles a program),
# ``enable_checks`` type-checks every traced jaxpr, ``no_tracing`` refuses to trace. ``disable_jit``
# (``funcgrad._disable_jit``'s, followed here: NOTE: [disable_jit]) and ``no_execution`` set the
# route table's redirect row while they are set (the bridge's
# ``set_call_redirect``, NOTE: [jitted call route]) -- calling the Python function, or refusing --
# which every call reads once (a dict lookup, in C on the hot path); nothing is swapped on a class.
_jit_flags = {
    "log_compiles": False,
    "explain_cache_misses": False,
    "enable_checks": False,
    "no_tracing": False,
    "no_execution": False,
    "user_context": False,
    "x32": False,
    "modes": False,
    "transfer_guard": False,
    "key_reuse": False,
}


def set_jit_flags(**flags) -> None:
    """Set jit flags (called by ``funcgrad.config``, NOTE: [jit flags])."""
    unknown = set(flags) - set(_jit_flags)
    if unknown:
        raise TypeError(f"set_jit_flags: unknown flags {sorted(unknown)}")
    _jit_flags.update({k: bool(v) for k, v in flags.items()})
    if "x32" in flags:  # (32-bit mode keeps the native route: jaxlib's x64 state follows the mode)
        follow_x64(not _jit_flags["x32"])
    if _jit_flags["no_execution"]:
        set_call_redirect(_refuse_execution)
    elif _disable_jit.threads_inside():  # (a thread's own disable_jit: each call asks its thread)
        set_call_redirect(_call_per_thread)
    elif _disable_jit.process_wide():
        set_call_redirect(_call_python)
    elif (
        _jit_flags["user_context"]
        or _jit_flags["modes"]
        or _jit_flags["transfer_guard"]
        or _jit_flags["key_reuse"]  # (NOTE: [key reuse]: each call checks its key arguments)
    ):
        set_call_redirect(_call_staged)
    else:
        set_call_redirect(None)


def _user_contexts_moved(away: bool) -> None:
    set_jit_flags(user_context=away)


# NOTE: [user contexts]: a context moved before this module was imported is taken up now.
_user_contexts.changed_hook = _user_contexts_moved
_user_contexts_moved(_user_contexts.contexts_away())
_disable_jit.follow(set_jit_flags)  # NOTE: [disable_jit]


def _call_staged(self, args, kwargs):
    """A user context, a thread's own mode or a transfer guard is set: the staged
    route, whose trace cache key holds the context's value; a guard is asked about the arguments
    first (NOTE: [transfer guard]: a host argument of an eager call is an implicit host-to-device
    transfer)."""
    if _jit_flags["transfer_guard"] and type(core.current_trace()) is core.EvalTrace:
        _, _, dyn, dyn_kw = self._split(args, kwargs, check=False)
        _transfer_guard.jit_arguments(tu.tree_leaves((dyn, dyn_kw)), self._device)
    return self._call(args, kwargs)


def _call_python(self, args, kwargs):
    """``disable_jit``: run the function's Python, op by op (as JAX does)."""
    return self._fun(*args, **kwargs)


def _call_per_thread(self, args, kwargs):
    """Some thread has its own ``disable_jit``: this call follows its own thread's."""
    if _disable_jit.jit_disabled():
        return self._fun(*args, **kwargs)
    return _call_staged(self, args, kwargs)


def _refuse_execution(self, args, kwargs):
    raise RuntimeError(
        f"jit({self._name}) was called while no_execution is set (jax_no_execution): compiled "
        "programs may not run. Leave the no_execution() context, or use eval_shape/lower to inspect it."
    )


if not _dt.x64_enabled:  # JAX_ENABLE_X64=0 at import (NOTE: [x64 mode]): 32-bit from the start
    set_jit_flags(x32=True)
