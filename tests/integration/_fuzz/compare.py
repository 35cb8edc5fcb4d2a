"""Run a fuzzer case on funcgrad and on jax, compare, and classify the outcome.

Comparison, leaf by leaf (containers compared by their structure, a list and a tuple alike): equal
shapes; equal dtypes; equal weak types (``weak_type``, checked last); NaN at the same positions;
infinities at the same positions with the same sign;
integers and booleans exactly; floating values within a tolerance of the *coarser* of the two dtypes
(float64 1e-7, float32 2e-4, 16-bit 2e-2), relative to each value and, for cancellation, to the
largest finite magnitude of jax's leaf. A difference is then looked up in the documented list
(``divergences.DOCUMENTED``); nothing is excused by loosening a tolerance.

Outcomes: ``agree``; ``invalid`` (jax rejects the case and funcgrad raises too); ``documented`` (a
listed difference, named); ``error`` (funcgrad raises where jax does not), ``unraised`` (funcgrad
computes where jax raises: a JAX user's error would go unseen) and ``mismatch`` -- these three fail
the test.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as onp

from _fuzz import divergences, programs
from _fuzz.programs import _BF16, HELPERS, Case

_RTOL = {8: 1e-7, 4: 2e-4, 2: 2e-2}


@dataclasses.dataclass
class Mismatch:
    kind: str  # structure | shape | dtype | nan | inf | value | weak_type
    leaf: int
    fg: object
    jax: object
    detail: str = ""
    excess: float = 0.0  # for "value": the largest error relative to the tolerance's scale


@dataclasses.dataclass
class Outcome:
    status: str  # agree | invalid | documented | error | unraised | mismatch
    case: Case
    fg: object = None
    jax: object = None
    mismatch: Mismatch | None = None
    divergence: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status in ("agree", "invalid", "documented")

    def message(self) -> str:
        what = self.error or (
            self.mismatch and f"{self.mismatch.kind} of leaf {self.mismatch.leaf}: {self.mismatch.detail}"
        )
        return (
            f"funcgrad disagrees with jax ({self.status}): {what}\n  case: {self.case.describe()}\n"
            f"  funcgrad: {self.fg!r}\n  jax:      {self.jax!r}\n"
            f"--- standalone reproducer ---\n{self.case.script()}"
        )


_SIDES: dict = {}


def _side(name):
    if name not in _SIDES:
        if name == "jax":
            import jax
            import jax.ad_checkpoint
            import jax.nn
            import jax.numpy
            import jax.scipy.integrate  # noqa: F401 - T.scipy.integrate/optimize/signal in ops_progz's
            import jax.scipy.linalg  # noqa: F401 - T.scipy.linalg in ops_edges' expressions
            import jax.scipy.optimize  # noqa: F401
            import jax.scipy.signal  # noqa: F401
            import jax.scipy.special
            import jax.scipy.stats  # noqa: F401 - T.scipy.stats in ops_edges' expressions

            mods = (jax, jax.numpy, jax.lax, jax.nn, jax.scipy.special)
        else:
            import funcgrad
            import funcgrad.ad_checkpoint
            import funcgrad.lax
            import funcgrad.nn
            import funcgrad.numpy
            import funcgrad.scipy.integrate  # noqa: F401 - T.scipy.integrate/optimize/signal in ops_progz's
            import funcgrad.scipy.linalg  # noqa: F401 - T.scipy.linalg in ops_edges' expressions
            import funcgrad.scipy.optimize  # noqa: F401
            import funcgrad.scipy.signal  # noqa: F401
            import funcgrad.scipy.special
            import funcgrad.scipy.stats  # noqa: F401 - T.scipy.stats in ops_edges' expressions

            mods = (funcgrad, funcgrad.numpy, funcgrad.lax, funcgrad.nn, funcgrad.scipy.special)
        ns = {}
        exec(HELPERS, ns)
        _SIDES[name] = (mods, ns)
    return _SIDES[name]


# The side running now ("funcgrad" or "jax"): a case stopped for its time (the long run's limit)
# says whose program it was.
RUNNING: list = [None]


def run(case: Case, side: str, fast: bool = False):
    """``case`` on one side, in the case's mode: its output flattened to a list of NumPy arrays and a
    structure string. ``fast`` compiles jax's side as one program (see ``check``)."""
    RUNNING[0] = side
    programs.set_mode(case.x64, jax_only=side == "jax")
    mods, helpers = _side(side)
    ns = dict(helpers)
    exec(case.build_source(), ns)
    fn = ns["build"](*mods)
    if fast:
        fn = mods[0].jit(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fn(*[x.copy() if isinstance(x, onp.ndarray) else x for x in case.inputs])
        leaves = []
        return _flatten(out, leaves), leaves


def _flatten(tree, leaves):
    """The structure of ``tree`` as a string, its leaves appended to ``leaves`` as NumPy arrays; a
    leaf is ``*``, or ``~`` where it is weakly typed (a Python scalar, or an array with
    ``weak_type``: weak types are compared too, as they decide later promotions)."""
    if tree is None:  # (a None leaf of an output pytree: no leaf, in both libraries)
        return "None"
    if isinstance(tree, (tuple, list)):
        return "(" + ",".join(_flatten(t, leaves) for t in tree) + ")"
    if isinstance(tree, dict):
        return "{" + ",".join(f"{k}:{_flatten(tree[k], leaves)}" for k in sorted(tree)) + "}"
    leaves.append(onp.asarray(tree))
    python_scalar = type(tree) in (int, float, complex)
    return "~" if getattr(tree, "weak_type", python_scalar) else "*"


def _weak_mismatch(fg_struct, jx_struct, fg, jx):
    """A ``weak_type`` Mismatch for the first leaf weak on one side only (structures equal but for
    the markers), or None."""
    marks = [(a, b) for a, b in zip(fg_struct, jx_struct) if a in "*~"]
    for i, (a, b) in enumerate(marks):
        if a != b:
            return Mismatch("weak_type", i, fg[i], jx[i], f"weak_type {a == '~'} vs jax {b == '~'}")
    return None


def _is_array(x) -> bool:
    return isinstance(x, onp.ndarray)  # (an input may be a Python scalar)


def _inexact(dtype) -> bool:
    return dtype.kind in "fc" or dtype == _BF16


def _wide(x):
    """x as float64/complex128 (bfloat16 and float16 included) for arithmetic on its values."""
    if x.dtype.kind == "c":
        return onp.asarray(x, onp.complex128)
    return onp.asarray(x.astype(onp.float32) if x.dtype == _BF16 else x, onp.float64)


def _eps(dtype) -> float:
    import ml_dtypes

    return float(ml_dtypes.finfo(dtype).eps)


def _coarser_rtol(a, b):
    sizes = [d.itemsize // (2 if d.kind == "c" else 1) for d in (a.dtype, b.dtype) if _inexact(d)]
    return _RTOL.get(min(sizes), 2e-2) if sizes else 0.0


def compare_leaf(i, fg, jx) -> Mismatch | None:
    """The first way leaf ``i`` of funcgrad (``fg``) differs from jax's (``jx``), or None."""
    if fg.shape != jx.shape:
        return Mismatch("shape", i, fg.shape, jx.shape, f"{fg.shape} vs jax {jx.shape}")
    rtol = _coarser_rtol(fg, jx)
    if not _inexact(jx.dtype) or not _inexact(fg.dtype):
        same = onp.array_equal(fg.astype(jx.dtype) if fg.dtype != jx.dtype else fg, jx)
        if not same:
            return Mismatch("value", i, fg, jx, "exact values differ")
    else:
        a, b = onp.asarray(_wide(fg), onp.complex128), onp.asarray(_wide(jx), onp.complex128)
        for part in (onp.real, onp.imag):
            x, y = part(a), part(b)
            if not onp.array_equal(onp.isnan(x), onp.isnan(y)):
                return Mismatch(
                    "nan", i, fg, jx, f"NaN at {onp.argwhere(onp.isnan(x) != onp.isnan(y))[:4].tolist()}"
                )
            inf_x, inf_y = onp.where(onp.isinf(x), onp.sign(x), 0), onp.where(onp.isinf(y), onp.sign(y), 0)
            if not onp.array_equal(inf_x, inf_y):
                return Mismatch("inf", i, fg, jx, f"inf at {onp.argwhere(inf_x != inf_y)[:4].tolist()}")
            fin = onp.isfinite(x) & onp.isfinite(y)
            scale = onp.max(onp.abs(y[fin]), initial=0.0)
            err = onp.abs(x[fin] - y[fin])
            # relative to each value, and to a hundredth of the leaf's largest magnitude (cancellation)
            excess = onp.max(err / (onp.abs(y[fin]) + 1e-2 * max(1.0, scale)), initial=0.0)
            if excess > rtol:
                return Mismatch(
                    "value", i, fg, jx, f"relative error up to {excess:.3g} (rtol {rtol:g})", excess
                )
    if fg.dtype != jx.dtype:
        return Mismatch("dtype", i, fg, jx, f"{fg.dtype} vs jax {jx.dtype}")
    return None


def check(case: Case) -> Outcome:
    """Run ``case`` on both sides and classify the result (see the module docstring).

    jax's eager mode compiles each operation for each new shape, which makes the oracle the fuzzer's
    main cost, so jax's side first runs as one compiled program; XLA may simplify a whole program
    (``0 * inf`` in a one-hot product becomes a select, giving 0 where the operation gives NaN), so
    where that disagrees with funcgrad, jax runs again as the case says (eagerly where it is not
    jitted), and that is the answer compared."""
    try:
        fg_struct, fg = run(case, "funcgrad")
        fg_error = None
    except Exception as e:
        fg_error = f"funcgrad raised {type(e).__name__}: {str(e)[:500]}"
    outcome = None
    for fast in (True, False):
        try:
            jx_struct, jx = run(case, "jax", fast)
        except Exception as e:  # jax rejects this program: nothing to compare against
            outcome = Outcome("invalid", case, error=f"jax raised {type(e).__name__}: {e}")
            continue
        if fg_error is not None:
            outcome = Outcome("error", case, jax=jx, error=fg_error)
        elif fg_struct.replace("~", "*") != jx_struct.replace("~", "*"):
            m = Mismatch("structure", -1, fg_struct, jx_struct, f"{fg_struct} vs jax {jx_struct}")
            outcome = Outcome("mismatch", case, fg, jx, m)
        else:
            m = next((m for m in map(compare_leaf, range(len(fg)), fg, jx) if m is not None), None)
            if (
                m is not None
                and m.kind == "value"
                and (_as_accurate_as_jax(case, m) or _within_jitter(case, m))
            ):
                m = None
            if m is None:
                m = _weak_mismatch(fg_struct, jx_struct, fg, jx)
            outcome = Outcome("mismatch" if m else "agree", case, fg, jx, m)
        if outcome.status == "agree":
            return outcome
    if outcome.status == "invalid" and fg_error is None:  # (jax raised, as the case says, twice)
        outcome = Outcome("unraised", case, fg=fg, error=f"funcgrad computes where {outcome.error[:500]}")
    return outcome if outcome.status == "invalid" else _classify(outcome)


def _as_accurate_as_jax(case: Case, m: Mismatch) -> bool:
    """Whether a narrow-float leaf that differs from jax's is as close to the float64 answer as jax's.

    float32 results of an ill-conditioned program (a pole, cancellation) differ by more than float32's
    tolerance between any two correct implementations; the same program on inputs widened to float64
    (jax, compiled) tells which errors are rounding: funcgrad's error from it may be at most four
    times jax's (two float32 roundings of an intermediate near a pole differ by such factors: arccos
    of a float32 cos(0.001)), plus the tolerance. Wide leaves (float64) are not excused."""
    if _coarser_rtol(m.fg, m.jax) <= _RTOL[8] or m.fg.dtype != m.jax.dtype:
        return False
    wide = [_wide(x) if _is_array(x) and _inexact(x.dtype) else x for x in case.inputs]
    try:
        # (in 64-bit mode even for a 32-bit case: there float64 inputs would enter as float32)
        _, ref = run(dataclasses.replace(case, inputs=wide, x64=True), "jax", fast=True)
    except Exception:
        return False
    finally:
        programs.set_mode(case.x64, jax_only=True)
    if m.leaf >= len(ref) or ref[m.leaf].shape != m.jax.shape:
        return False
    ref = onp.asarray(_wide(ref[m.leaf]), onp.complex128)
    fg, jx = onp.asarray(_wide(m.fg), onp.complex128), onp.asarray(_wide(m.jax), onp.complex128)
    fin = onp.isfinite(ref) & onp.isfinite(fg) & onp.isfinite(jx)
    rtol = _coarser_rtol(m.fg, m.jax)
    scale = onp.abs(ref[fin]) + 1e-2 * max(1.0, onp.max(onp.abs(ref[fin]), initial=0.0))
    return bool(onp.all(onp.abs(fg[fin] - ref[fin]) <= 4 * onp.abs(jx[fin] - ref[fin]) + rtol * scale))


def _within_jitter(case: Case, m: Mismatch) -> bool:
    """Whether the difference is smaller than jax's own response to moving the inputs by a few ulps.

    Where a program cancels catastrophically (``x / x`` at ``x = 1e-20``, whose derivative is the
    difference of two numbers near 1e19), its rounding error is far above any tolerance in every
    precision, and no two implementations agree; jax's answers at inputs 8 ulps up and down measure
    that error, and funcgrad's answer must lie within twice the spread they show (plus the tolerance).
    A well-conditioned program has no spread, so nothing is excused there."""
    answers = []
    for sign in (1, -1):
        moved = [
            (x * (1 + sign * 8 * _eps(x.dtype))).astype(x.dtype) if _is_array(x) and _inexact(x.dtype) else x
            for x in case.inputs
        ]
        try:
            _, out = run(dataclasses.replace(case, inputs=moved), "jax", fast=True)
        except Exception:
            return False
        if m.leaf >= len(out) or out[m.leaf].shape != m.jax.shape:
            return False
        answers.append(onp.asarray(_wide(out[m.leaf]), onp.complex128))
    fg, jx = onp.asarray(_wide(m.fg), onp.complex128), onp.asarray(_wide(m.jax), onp.complex128)
    spread = onp.maximum(onp.abs(answers[0] - jx), onp.abs(answers[1] - jx))
    fin = onp.isfinite(fg) & onp.isfinite(jx) & onp.isfinite(spread)
    rtol = _coarser_rtol(m.fg, m.jax)
    scale = onp.abs(jx[fin]) + 1e-2 * max(1.0, onp.max(onp.abs(jx[fin]), initial=0.0))
    return bool(onp.all(onp.abs(fg[fin] - jx[fin]) <= 2 * spread[fin] + rtol * scale))


def _classify(outcome: Outcome) -> Outcome:
    entry = divergences.match(outcome)
    if entry is not None:
        outcome.status, outcome.divergence = "documented", entry.name
    return outcome
