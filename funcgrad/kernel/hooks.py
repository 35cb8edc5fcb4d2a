"""What the layers above hand the kernel, held in one place (filled through ``kernel.register``).

Layer: kernel. Imports nothing.

# NOTE: [kernel registration]
# The kernel may not import the catalog, the bridge or the surface (design.md), yet it needs a
# little from each: its transformations need a few array operations (materialised zeros, adding
# cotangents, moving a batch axis -- the catalog's primitives), an eager ``jit`` call needs a
# compiler and a device-backed ``Array`` needs a way to read itself back (the bridge), source
# lines need to know which files are library code (every layer), and ``Array``/``Tracer`` need
# their operators and methods (the NumPy surface). Each upper layer hands these over once, at
# import time, through the one function ``funcgrad.kernel.register``; kernel code reads them here.
# Until an entry is registered, reading it raises an error that says which import provides it.
"""

from __future__ import annotations

# What provides each entry, for the error raised when it is missing.
_PROVIDERS = {
    "add_any": "funcgrad.primitives",
    "mul": "funcgrad.primitives",
    "zeros": "funcgrad.primitives",
    "full_like": "funcgrad.primitives",
    "moveaxis": "funcgrad.primitives",
    "broadcast_batch": "funcgrad.primitives",
    "batched_aval": "funcgrad.primitives",
    "broadcast_in_dim": "funcgrad.primitives",
    "reduce_sum": "funcgrad.primitives",
    "reshape": "funcgrad.primitives",
    "sum_to_scalar": "funcgrad.primitives",
    "typed_as": "funcgrad.primitives",
}


def _same_value(out, like):
    return out


def _no_manual_adapter(in_avals, out_avals):
    return None


def _no_default_precision():
    """``default_precision`` until ``funcgrad._config`` registers its reader: a dot's
    ``precision=None`` is XLA's default."""
    return None


def _aliased_ref_error(fun, traced_for, ref, first, second) -> ValueError:
    """``aliased_ref_error`` until ``funcgrad._ref_errors`` registers JAX's words (it is loaded
    with ``funcgrad.ref``: no Ref exists before)."""
    return ValueError(f"the same mutable array reference at both {first} and {second}")


def _note_nothing(array) -> None:
    """``note_constant`` until ``kernel.partial_eval`` is imported (no trace stages before)."""


class KernelHooks:
    """The registered entries. Array operations (``add_any(x, y)``, ``zeros(aval)``,
    ``full_like(x, v)``, ``mul(x, y)`` (``y`` may be a Python number), ``moveaxis(x, src, dst)``,
    ``broadcast_batch(x, size, dim)``, ``batched_aval(aval, size, dim)``, ``broadcast_in_dim``,
    ``reduce_sum``, ``reshape``, ``sum_to_scalar``)
    come from ``primitives``;
    ``jit_impl``, ``device_to_numpy``, ``eager_on_devices``, ``buffer_placed`` and
    ``eager_compiled`` from
    ``xla_bridge``;
    ``library_dirs`` from any layer."""

    def __init__(self):
        self.jit_impl = None  # (*args, jaxpr, name, donated_invars, device) -> list; None: interpret
        self.device_to_numpy = None  # (buffer) -> a read-only np.ndarray
        # (primitive, args, params) -> outputs computed where device-backed operands live (values
        # over several devices stay there), or NotImplemented to compute on the host.
        self.eager_on_devices = None
        # (buffer) -> whether an eager operation on a value with this device buffer runs where it
        # lives (committed to a device, or over several); False for a transfer cached on a value
        # the host computes (NOTE: [cached programs on placed values] in kernel/numpy_plan.py).
        self.buffer_placed = None
        # (primitive, args, params) -> outputs of the primitive compiled alone, for what NumPy
        # cannot compute (NOTE: [narrow dtypes on the host]); None: computed with NumPy.
        self.eager_compiled = None
        # NOTE: [sharding in types] (the surface's ``funcgrad._shardings``):
        # (primitive, avals_in, out, params) -> out with its shardings on explicit mesh axes;
        # (buffer, ndim) -> the sharding of a device buffer's abstract value, or None.
        self.apply_sharding = None
        self.aval_sharding = None
        self.default_sharding = None
        # NOTE: [varying axes in staged types] (the surface's ``funcgrad.parallel``): while a
        # checked shard_map body is staged, (primitive, avals_in, out, params) -> out typed with
        # the manual axes each result varies along; None otherwise.
        self.apply_vma = None
        # NOTE: [custom_vjp in a checked body] (the surface's ``funcgrad._shard_map_body``):
        # (in_avals, out_avals) -> the adapter of a custom_vjp called in a checked shard_map body
        # being staged (its bwd sees and returns JAX's typed cotangents), or None.
        self.custom_vjp_manual = _no_manual_adapter
        # (out, like) -> ``out`` (made by a ``*_like`` of ``like``) cast to vary along the manual
        # axes ``like`` varies along in a checked shard_map body, as JAX's full_like pvary's it
        # (``funcgrad.lax.parallel``); ``out`` itself until then.
        self.vary_like = _same_value
        # NOTE: [placement in context] (the surface's ``funcgrad._meshes``): () -> the mesh that
        # ``set_mesh`` set in this thread, or None; the entry itself is None while no thread has
        # one, so eager operations pay one attribute read for it.
        self.context_mesh = None
        self.library_dirs: tuple[str, ...] = ()
        # The catalog's primitives (``primitives``): their operands are arrays unless their traits
        # say otherwise; a user's primitive may take a token (NOTE: [tokens]).
        self.catalog: frozenset = frozenset()
        # (array) -> None: a 0-d Array was just made; the innermost trace staging a jaxpr notes it
        # as a literal (NOTE: [constants made while tracing]; set by ``kernel.partial_eval``).
        self.note_constant = _note_nothing
        # () -> the calling thread's values of the settings that change what a trace makes, a
        # tuple that ``jit``'s and control flow's trace caches key on (NOTE: [x64 mode per thread]
        # in kernel/dtypes.py): the 64-bit mode (``kernel.dtypes``' default) until
        # ``funcgrad._config`` registers its key of every such flag; ``mode_names`` are the
        # flags' names, in the key's order.
        self.mode_key = None
        self.mode_names: tuple[str, ...] = ()
        # () -> what a dot's ``precision=None`` stands for in the calling thread
        # (``jax_default_matmul_precision``: ``funcgrad._config``; the catalog's dot reads it).
        self.default_precision = _no_default_precision
        # (fun, traced_for, ref, first, second) -> the ValueError for one Ref passed at two places
        # (named ``first`` and ``second``) of ``fun`` traced for ``traced_for``, in JAX's words
        # (``funcgrad._ref_errors``; NOTE: [held state operands]).
        self.aliased_ref_error = _aliased_ref_error
        # () -> a context manager entered inside a trace: the Refs touched there from outside
        # become its extra inputs and outputs (``funcgrad._ref_scopes.discover_state``; None until
        # ``funcgrad.ref`` is loaded, when no Ref exists; NOTE: [state written by a backward pass]).
        self.state_discovery = None
        # (fun, **options) -> ``jit(fun, **options)`` without the retrace warning
        # (``funcgrad.jitting``): the surface below jit runs the eager calls of the functions JAX
        # jits as one compiled program through it, and op by op until jit is imported (NOTE:
        # [eager library functions as one program] in kernel/library_programs.py).
        self.library_jit = None
        # The classes standing for arrays in ``isinstance`` checks (the surface's
        # ``funcgrad.Array``), and every operator, method and property installed on ``Array`` and
        # ``Tracer`` so far (name -> (function, is a property)), which they get as abstract members.
        self.array_interfaces: tuple[type, ...] = ()
        self.array_members: dict = {}

    def __getattr__(self, name):
        # Only reached for entries that are not registered yet.
        if name.startswith("__") or name not in _PROVIDERS:
            # Protocol probes (inspect.unwrap's __wrapped__, copy, pickle) must see a plain
            # AttributeError, or doctest collection of any module importing ``hooks`` crashes.
            raise AttributeError(name)
        raise RuntimeError(
            f"funcgrad kernel operation '{name}' is not registered: import {_PROVIDERS[name]} "
            "(`import funcgrad.numpy` or `import funcgrad.primitives` does) before transforming functions."
        )


hooks = KernelHooks()
