"""What the transformations know about a primitive beyond its rules: one typed, frozen record.

Layer: kernel (bottom). Imports nothing of funcgrad.

# NOTE: [primitive traits]
# A fact about a primitive that another layer asks about -- jet (its series come from its JVP
# rule), checkify (it may make a NaN), sparsify (how a sparse operand passes through it), vmap
# (the rule of a collective for the vmap that binds its axis), dead-code elimination (it has side
# effects) -- is stated once, where the primitive is declared (its family file), with
# ``Primitive.def_traits(...)``, and read from ``primitive.traits``. Never a list of names kept
# elsewhere, never a switch on ``primitive.name``. The record is frozen: ``def_traits`` replaces
# it, so a fact cannot change behind the back of a reader that holds it, and a misspelled fact is
# a ``TypeError`` at declaration, not an attribute nobody reads. ``__post_init__`` checks each
# fact's type; the completeness test checks the facts against the rules (a ``taylor_from_jvp``
# reason needs a JVP rule and no Taylor rule of its own, a linear primitive a transpose rule).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

# How a sparse (BCOO) operand passes through a primitive under ``sparsify`` (NOTE: [sparsify] in
# funcgrad/experimental/sparse/_transform.py, which has one rule per kind). A primitive without a
# kind takes the dense form of its sparse operands.
SPARSE_KINDS = {
    "zero_preserving": "f(0) == 0 elementwise for every parameter: applied to the stored values",
    "zero_preserving_linear": "f(0) == 0 and f(a + b) == f(a) + f(b) elementwise (neg, conj, real, "
    "imag, copy): applied to the stored values as they are, duplicated indices included",
    "positive_power": "x ** y elementwise (integer_pow): zero preserving when y > 0",
    "product": "an elementwise product: the result keeps the sparse factor's pattern",
    "quotient": "x / y: a sparse x over a dense y keeps x's pattern",
    "sum": "x + y: two sparse operands of one layout concatenate their entries",
    "difference": "x - y: two sparse operands of one layout concatenate x's and -y's entries",
    "reshape": "a reshape of an operand without dense dimensions (bcoo_reshape)",
    "transpose": "an axis permutation (bcoo_transpose)",
    "concatenate": "a concatenation of sparse operands of one layout (bcoo_concatenate)",
    "stack": "a stack of sparse operands of one layout (each given the new axis, then bcoo_concatenate)",
    "slice": "a static slice (bcoo_slice)",
    "dynamic_slice": "a slice at traced start indices of a sparse operand (bcoo_dynamic_slice)",
    "rev": "a reversal of axes (bcoo_rev)",
    "squeeze": "removing size-1 axes (bcoo_squeeze)",
    "broadcast_in_dim": "a broadcast of a sparse operand (bcoo_broadcast_in_dim)",
    "reduce_sum": "a sum over axes (bcoo_reduce_sum)",
    "dot_general": "a contraction with one or two sparse operands (bcoo_dot_general)",
    "call": "a call of the jaxpr in its ``call_jaxpr_param``: that jaxpr is sparsified in turn",
    "cond": "a cond/switch: each branch is sparsified; they must agree on sparse and dense results",
    "while": "a while loop: its functions are sparsified over the sparse carry",
    "scan": "a scan: its body is sparsified (sparse constants and carry; no sparse xs, as JAX's)",
    "gather": "a gather from a sparse operand at dense indices (bcoo_gather)",
    "conv_general_dilated": "a convolution with sparse operands (bcoo_conv_general_dilated)",
    "densifying": "f(0) != 0 (cos, exp, comparisons, ...): the result would be dense, which sparsify "
    "refuses in JAX's words",
}


@dataclasses.dataclass(frozen=True)
class PrimitiveTraits:
    """The facts about a primitive that transformations read (NOTE: [primitive traits]).

    - ``linear``: linear in its (float) inputs jointly, or may appear in a linear program (control
      flow, checkpoint): it needs a transpose rule (``deflinear`` sets it).
    - ``not_differentiable``: its JVP is zero (``defjvp_zero`` sets it); jet gives zero series.
    - ``taylor_from_jvp``: why its jet is the kernel's generic rule (the jet of its JVP rule, one
      order lower, ``kernel/taylor.py``) instead of a ``def_taylor`` rule of its own.
    - ``may_produce_nan``: it can make a NaN from operands without one (``checkify``'s
      ``nan_checks`` test its results).
    - ``sparse``: a key of ``SPARSE_KINDS``: how ``sparsify`` passes a sparse operand through it.
    - ``collective_batch``: for a collective, ``rule(axis_size, axis_name, values, dims, **params)
      -> (out, out_dim)``: its meaning under the vmap that binds its axis (NOTE: [named axes]).
    - ``call_jaxpr_param``: the parameter holding the jaxpr of a call-like primitive whose impl is
      "evaluate that jaxpr" (jit, checkpoint, custom_jvp_call, ...): the debugging tools step into
      it equation by equation, introspection follows values through it.
    - ``jaxpr_params``: the parameters that hold jaxprs (set by the call-primitive kit and the
      control-flow primitives); such primitives are tested by their own suites, not by op_db.
    - ``forwards_operands``: output i is input i (an identity barrier): dependency sweeps follow
      each operand to its own output instead of to all of them.
    - ``contraction``: a matrix-product-like contraction (``dot_general``, convolutions), the
      values checkpoint's ``dots_saveable`` policy keeps.
    - ``inner_axis_env``: ``params -> context manager`` binding the named axes its jaxprs see
      (shard_map's mesh axes, NOTE: [named axes]) while the type checker reads them.
    - ``has_side_effects``: the equation does something besides computing its results (a host
      callback that prints): dead-code elimination keeps it even when nothing reads its results.
    - ``kept_when_dead``: its JVP rule refuses it whatever the operands (a host function or a
      foreign kernel has no derivative): dead-code elimination keeps it, since JAX removes nothing
      while tracing, so a transformation of a staged program (``jvp`` of a ``jit``) meets it and
      refuses as JAX's does. Not a side effect: compiled, XLA drops it and the host function does
      not run (as in JAX, whose lowering removes it). A function of an equation's params instead
      of True: kept where its rule may refuse (``scatter_mul`` without ``unique_indices``, a
      ``custom_jvp_call`` of a rule that refuses, as ``.at[].apply``'s).
    - ``runs_user_rules``: its rules call the user's Python functions (custom_jvp, custom_vjp,
      custom_vmap), which must run on every eager call: eager grad caches no program holding one
      (NOTE: [eager grad program cache]) and a surface template replays it by binding.
    - ``transposes_zero_cotangents``: the backward pass runs its transpose even when no cotangent
      reaches it (``custom_lin``: a custom_vjp's bwd is the user's and need not be linear in its
      cotangents, so zero in does not mean zero out; JAX calls it too).
    - ``identity_element``: an ``e`` with ``p(x, e) == p(e, x) == x`` exactly, in every
      floating-point case (``mul``: 1); ``kernel/simplify.py`` drops such equations.
    - ``places_operand``: its result is its one operand placed along the dimensions
      ``params["broadcast_dimensions"]`` of ``params["shape"]`` (``broadcast_in_dim``):
      ``simplify`` joins two, and the interpreter of cached eager programs lets NumPy's
      broadcasting stand for it.
    - ``reshapes_operand``: its result is its one operand's elements, row-major, in another shape
      (``reshape``); ``kernel/simplify.py`` joins a reshape of a reshape into one.
    - ``takes_tokens``: its operands may be tokens (``after_all``; NOTE: [tokens]); staging
      refuses a token operand of any other primitive of the catalog unless it carries jaxprs
      (``jaxpr_params``: jit, control flow pass tokens through), as JAX's lax does (a user's
      primitive may take one).
    - ``half_floats_compiled``: its eager host step runs compiled for float16 and bfloat16
      operands (NOTE: [one eager step]): XLA expands it (asin, logistic, a cumulative sum, a sum
      accumulated in the half type, ...) into steps rounded to the half type, whose results
      NumPy's loops (one rounding of a float32 result, or another order) do not reproduce.
    - ``compiled_eagerly``: ``(operands, params) -> bool``, whether an eager call with these
      (non-empty, floating) operands runs compiled alone, the Arrays handed over as they are
      (NOTE: [eager products are XLA's] in primitives/dot.py: NumPy's BLAS sums in another order
      than XLA's CPU dot). It decides at ``EvalTrace`` only: the host step stays the impl, and a
      primitive whose host step itself must be XLA's calls ``hooks.eager_compiled`` from its impl
      (that NOTE says why these stay two).

    >>> t = PrimitiveTraits(linear=True)
    >>> t.linear, t.taylor_from_jvp
    (True, None)
    >>> PrimitiveTraits(sparse="dense")
    Traceback (most recent call last):
    ...
    ValueError: PrimitiveTraits: sparse must be one of SPARSE_KINDS or None, got 'dense'
    """

    linear: bool = False
    not_differentiable: bool = False
    taylor_from_jvp: str | None = None
    may_produce_nan: bool = False
    sparse: str | None = None
    collective_batch: Callable | None = None
    call_jaxpr_param: str | None = None
    jaxpr_params: tuple[str, ...] = ()
    forwards_operands: bool = False
    contraction: bool = False
    inner_axis_env: Callable | None = None
    has_side_effects: bool = False
    kept_when_dead: bool | Callable = False
    runs_user_rules: bool = False
    transposes_zero_cotangents: bool = False
    identity_element: int | None = None
    places_operand: bool = False
    reshapes_operand: bool = False
    takes_tokens: bool = False
    half_floats_compiled: bool = False
    compiled_eagerly: Callable | None = None

    def __post_init__(self):
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            ok = _CHECKS[f.type](value)
            if not ok:
                raise TypeError(f"PrimitiveTraits: {f.name} must be {f.type}, got {value!r}")
        if self.sparse is not None and self.sparse not in SPARSE_KINDS:
            raise ValueError(
                f"PrimitiveTraits: sparse must be one of SPARSE_KINDS or None, got {self.sparse!r}"
            )
        if self.taylor_from_jvp == "":
            raise ValueError("PrimitiveTraits: taylor_from_jvp is the reason, a non-empty string")
        if self.call_jaxpr_param is not None and self.call_jaxpr_param not in self.jaxpr_params:
            raise ValueError(
                f"PrimitiveTraits: call_jaxpr_param {self.call_jaxpr_param!r} is not one of jaxpr_params "
                f"{self.jaxpr_params}"
            )


def _optional(kind) -> Callable[[Any], bool]:
    return lambda v: v is None or isinstance(v, kind)


# One type check per annotation (the annotations are strings under ``from __future__``).
_CHECKS: dict[str, Callable[[Any], bool]] = {
    "bool": lambda v: type(v) is bool,
    "bool | Callable": lambda v: type(v) is bool or callable(v),
    "str | None": _optional(str),
    "Callable | None": lambda v: v is None or callable(v),
    "tuple[str, ...]": lambda v: type(v) is tuple and all(type(s) is str for s in v),
    "int | None": lambda v: v is None or type(v) is int,
}
