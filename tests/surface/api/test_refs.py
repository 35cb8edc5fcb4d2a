"""Mutable array references (``funcgrad.ref``, JAX's ``jax.ref``): eager reads and writes, and their
functionalisation under ``jit`` (Refs passed in, closed over, nested jits), each compared with
jax 0.10.2 running the same program; the refusals JAX makes (wrong shape or dtype, a Ref returned
from jit, a write of a vmapped or differentiated value into an outer Ref) with JAX's wording."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import ref as fref

F32 = np.float32


def _matches_jax(program, compare=np.testing.assert_array_equal) -> None:
    """``program(lib, jnp)`` run on funcgrad and on jax observes the same values (and dtypes and
    shapes) on both."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    ours, theirs = program(funcgrad, fnp), program(jax, jnp)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype and a.shape == b.shape
        compare(a, b)


def _program(lib, jnp):
    """The same stateful program on either library: returns what it observed."""
    seen = []
    r = lib.new_ref(jnp.arange(4, dtype=F32))
    r[1] = F32(7.0)
    r[...] += 1.0  # a weak float into a float32 Ref: cast, as JAX does
    seen.append(np.asarray(r[...]))
    seen.append(np.asarray(r[1:3]))

    @lib.jit
    def step(ref, x):  # a Ref passed in: read, written back after the call
        ref[...] = ref[...] * x
        return ref[0] + x

    seen.append(np.asarray(step(r, F32(2.0))))
    seen.append(np.asarray(step(r, F32(3.0))))
    seen.append(np.asarray(r[...]))

    counter = lib.new_ref(np.zeros((), F32))

    @lib.jit
    def tick(x):  # a Ref closed over: lifted into the program when first touched
        counter[...] += 1
        return x * counter[...]

    seen.append(np.asarray(tick(F32(1.5))))
    seen.append(np.asarray(tick(F32(1.5))))

    @lib.jit
    def twice(x):  # a jit calling one that writes a closed-over Ref
        return tick(x) + tick(x)

    seen.append(np.asarray(twice(F32(1.0))))
    seen.append(np.asarray(counter[...]))
    seen.append(np.asarray(lib.freeze(counter)))

    def body(c, x):  # a scan body writing a closed-over Ref: its value is carried through the loop
        counter[...] = counter[...] * x
        return c + 1, counter[...]

    xs = jnp.arange(1.0, 4.0, dtype=F32)
    seen.extend(np.asarray(v) for v in lib.lax.scan(body, np.int32(0), xs))
    seen.append(np.asarray(counter[...]))
    seen.extend(np.asarray(v) for v in lib.jit(lambda: lib.lax.scan(body, np.int32(0), xs))())
    seen.append(np.asarray(counter[...]))
    return seen


@pytest.mark.slow  # jax's side compiles a program per jit (7 s on 2 loaded cores)
def test_stateful_program_matches_jax():
    _matches_jax(_program)


def test_a_jitted_function_with_refs_traces_once_and_refs_are_leaves():
    traces = []
    r = funcgrad.new_ref(np.ones(3, F32))

    @funcgrad.jit
    def f(tree, x):
        traces.append(1)
        tree["a"][...] += x
        return tree["a"][...].sum()

    for x in (1.0, 2.0, 3.0):
        f({"a": r}, F32(x))
    assert len(traces) == 1
    np.testing.assert_array_equal(r[...], np.full(3, 7.0, F32))
    assert funcgrad.tree.leaves({"a": r}) == [r]
    assert isinstance(r, funcgrad.Ref) and not isinstance(r, funcgrad.Array)
    assert repr(funcgrad.typeof(r)) == "Ref{float32[3]}" and funcgrad.typeof(r).shape == (3,)
    assert len(r) == 3 and r.dtype == F32
    assert r.unsafe_buffer_pointer() == r[...].unsafe_buffer_pointer()  # (JAX's Ref method)


def test_refusals_match_jax_wording():
    r = funcgrad.new_ref(np.zeros(2, F32))
    with pytest.raises(ValueError, match="Invalid shape for `swap`"):
        r[...] = np.ones(3, F32)
    with pytest.raises(ValueError, match="Invalid dtype for `swap`"):
        r[...] = np.ones(2, np.int32)
    with pytest.raises(ValueError, match="mutable array references cannot be returned"):
        funcgrad.jit(lambda: funcgrad.new_ref(1.0))()
    with pytest.raises(
        ValueError, match="^performing a set/swap operation with vmapped value on an unbatched array"
    ):
        funcgrad.vmap(lambda x: r.__setitem__(..., x * fnp.ones(2, F32)) or x)(fnp.ones(3, F32))
    with pytest.raises(ValueError, match="differentiated value on a non-differentiated array reference"):
        funcgrad.grad(lambda x: r.__setitem__(..., x * fnp.ones(2, F32)) or x)(F32(1.0))
    # (make_jaxpr traces a write into a closed-over Ref without making it: its trace is a ref scope)
    funcgrad.make_jaxpr(lambda c: r.__setitem__(..., fnp.ones(2, F32)) or c)(1.0)
    assert np.asarray(r[...]).tolist() == [0.0, 0.0]
    with pytest.raises(ValueError, match="Can only call `get` on a `Ref`"):
        fref.get(np.zeros(2), ...)
    kept = []
    funcgrad.jit(lambda x: kept.append(funcgrad.new_ref(x)) or x)(F32(1.0))
    with pytest.raises(funcgrad.errors.UnexpectedTracerError, match="Ref"):
        kept[0][...]
    # Reads under grad and vmap see the Ref's value as a constant (nothing is refused).
    c = funcgrad.new_ref(F32(3.0))
    assert float(funcgrad.grad(lambda x: x * c[...])(F32(2.0))) == 3.0


def _mapped_refs_program(lib, jnp):
    """Refs among vmap's mapped arguments (JAX's array_refs guide, jax.experimental.random's
    ``split``): each element reads and writes its own slice; unmapped arguments stay shared."""
    seen = []
    r = lib.new_ref(jnp.zeros((3, 2), dtype=F32))

    def bump(ref, x):
        ref[...] += x
        return ref[0] * 2

    seen.append(np.asarray(lib.vmap(bump)(r, jnp.arange(6, dtype=F32).reshape(3, 2))))
    seen.append(np.asarray(r[...]))
    seen.append(np.asarray(lib.vmap(bump, in_axes=(1, None))(r, F32(1.0))))  # mapped along axis 1
    seen.append(np.asarray(r[...]))
    tree = {"count": lib.new_ref(jnp.zeros(4, dtype=F32)), "w": jnp.ones(4, dtype=F32)}

    def tick(t):
        t["count"][...] += 1
        return t["w"] * t["count"][...]

    seen.append(np.asarray(lib.jit(lib.vmap(tick))(tree)))  # under jit: the Ref is an argument
    seen.append(np.asarray(lib.vmap(tick)(tree)))
    seen.append(np.asarray(tree["count"][...]))
    return seen


@pytest.mark.slow  # (jax's side: 1-3 s)
def test_refs_mapped_by_vmap_match_jax():
    _matches_jax(_mapped_refs_program)


def test_a_write_keeps_the_refs_weak_type_as_jax():
    # jax.ref.set's docstring: a Python int written into an int32 Ref leaves it int32 (funcgrad's
    # Ref printed weak_type=True); a strong value written into a weakly typed Ref under a scan
    # makes it strong (JAX's array_refs guide).
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    def seen(lib, np_):
        a = lib.new_ref(np_.int32(0))
        a[...] = 4
        b = lib.new_ref(np_.zeros(2, dtype=F32))
        b[0] = 4.0
        c = lib.new_ref(np_.asarray(1.0, dtype=F32) + 1.0)  # (a strong float32)
        c[...] = F32(5.0)
        d = lib.new_ref(0)
        lib.lax.scan(lambda c, x: (d.__setitem__(..., d[...] + x), (c, x))[1], 0, np_.arange(3))
        # (read only by repr: JAX prints a Ref read eagerly before with its creation's weak type)
        return [repr(r).replace("int64", "int32") for r in (a, b, c, d)]  # (funcgrad's tests run in x64)

    assert seen(funcgrad, fnp) == seen(jax, jnp)


def test_a_ref_is_no_operand_of_array_functions_as_jax():
    # (JAX's array_refs guide: jnp.sin(x_ref) is a TypeError; funcgrad's was NumPy's ValueError)
    jax = pytest.importorskip("jax")
    for lib in (funcgrad, jax):
        with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
            lib.numpy.sin(lib.new_ref(1.0))


def test_an_ahead_of_time_compiled_call_reads_and_writes_refs_as_jit():
    # (JAX's mutable_array_test test_basic_aot / test_basic_aot_closure)
    @funcgrad.jit
    def f(x_ref, a):
        x_ref[...] += a
        x_ref[0] += 1.0
        return a * 2

    x = fref.new_ref(fnp.zeros(3))
    out = f.lower(x, fnp.ones(3)).compile()(x, fnp.ones(3))
    np.testing.assert_array_equal(np.asarray(out), [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(np.asarray(x[...]), [2.0, 1.0, 1.0])

    y = fref.new_ref(fnp.zeros(2))

    @funcgrad.jit
    def g():
        y[...] += 1.0

    c = g.lower().compile()
    c()
    c()
    np.testing.assert_array_equal(np.asarray(y[...]), [2.0, 2.0])


def _branches_and_while_program(lib, jnp):
    """Closed-over Refs written in cond branches and in while_loop's functions (JAX's
    mutable_array_test test_cond_both_branches_close_over_same_mutable_array): eagerly and under
    jit, the branch taken writes (funcgrad's branches were traced in order, the last one's constant
    kept), and a loop carries the Ref's value."""
    seen = []
    r = lib.new_ref(F32(0.0))
    n = lib.new_ref(np.int32(0))

    def f(pred, x):
        def true_fun(y):
            r[()] = F32(1.0)
            return y + 1

        def false_fun(y):
            r[...] += y
            return y

        out = lib.lax.cond(pred, true_fun, false_fun, x)

        def body(c):
            n[...] += 1
            return c + r[...]

        return out, lib.lax.while_loop(lambda c: c < 5.0, body, F32(0.5))

    for fun in (f, lib.jit(f)):
        for pred in (True, False):
            seen.extend(np.asarray(v) for v in fun(pred, F32(2.0)))
            seen.extend((np.asarray(r[...]), np.asarray(n[...])))
    return seen


def test_refs_written_in_cond_branches_and_while_loops_match_jax():
    _matches_jax(_branches_and_while_program)


def test_aliased_and_returned_refs_refused_in_jaxs_words():
    # (JAX's mutable_array_test MutableArrayErrorsTest: jax_mutable_array_checks, on by default)
    jax = pytest.importorskip("jax")

    def messages(lib):
        x_ref = lib.new_ref(F32(0.0))
        cases = [
            lambda: lib.jit(lambda x_ref: x_ref)(x_ref),
            lambda: lib.jit(lambda x_ref: {"a": x_ref})(x_ref),
            lambda: lib.jit(lambda x_ref, y_ref: x_ref[...] + y_ref[...])(x_ref, x_ref),
            lambda: lib.jit(lambda y_ref: x_ref[...] + y_ref[...])(x_ref),
            lambda: lib.lax.scan(lambda c, _: (None, None), (x_ref, x_ref), None, length=1),
            lambda: lib.lax.cond(True, lambda x1, x2: x1[...], lambda x1, x2: x2[...], x_ref, x_ref),
            lambda: lib.vmap(lambda ref_1, ref_2: None)(x_ref, x_ref),
            lambda: lib.lax.scan(lambda c, x: (c, lib.new_ref(c)), F32(0.0), None, length=2),
        ]
        out = []
        for case in cases:
            with pytest.raises(ValueError) as info:
                case()
            out.append(str(info.value).split("\n-----")[0])
        with pytest.raises(
            ValueError, match="traced for jit returned a mutable array reference.*\n\n.*created on line"
        ):
            lib.jit(lambda x: lib.new_ref(x))(F32(1.0))
        return out

    assert messages(funcgrad) == messages(jax)


def _traced_once_program(lib, jnp):
    """Bodies and branches touching a closed-over Ref run their Python once (JAX traces them once:
    its mutable_array_test test_scan_vjp_systematic_readonly pops a list in the body)."""
    counts = {"scan": 0, "cond": 0, "while": 0}
    r = lib.new_ref(F32(1.0))

    def body(c, x):
        counts["scan"] += 1
        r[...] = r[...] * x
        return c + r[...], r[...]

    def branch(x):
        counts["cond"] += 1
        r[...] += x
        return x

    def step(c):
        counts["while"] += 1
        r[...] += 1.0
        return c + 1

    outs = [*lib.lax.scan(body, F32(0.0), jnp.arange(1.0, 4.0, dtype=F32))]
    outs.append(lib.lax.cond(True, branch, lambda x: x, F32(2.0)))
    outs.append(lib.lax.while_loop(lambda c: c < 3, step, np.int32(0)))
    return [np.asarray(o) for o in (*outs, r[...])], counts


def test_bodies_touching_refs_are_traced_once_as_jax():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    (ours, n_ours), (theirs, n_theirs) = _traced_once_program(funcgrad, fnp), _traced_once_program(jax, jnp)
    assert n_ours == n_theirs == {"scan": 1, "cond": 1, "while": 1}
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(a, b)


def _operand_refs_program(lib, jnp):
    """Refs as operands (JAX's mutable_array_test test_scan_scanned_mut_array,
    test_grad_scan_extensive): a Ref scanned over gives the body its row, read and written in
    place; a Ref operand of cond is written by the branch taken."""
    seen = []
    r = lib.new_ref(jnp.arange(6.0, dtype=F32).reshape(3, 2))

    def body(c, row):
        row[1] = c
        row[...] += 1.0
        return c + row[0], row[...]

    for fun in (
        lambda: lib.lax.scan(body, F32(0.0), r, reverse=True),
        lib.jit(lambda: lib.lax.scan(body, F32(0.0), r)),
    ):
        seen.extend(np.asarray(v) for v in fun())
        seen.append(np.asarray(r[...]))

    def total(xs):
        xs_ref = lib.new_ref(xs)
        return lib.lax.scan(lambda c, x_ref: (c + x_ref[...] ** 2, None), F32(0.0), xs_ref)[0]

    seen.append(np.asarray(lib.grad(total)(jnp.arange(3.0, dtype=F32))))
    q = lib.new_ref(F32(1.0))
    for pred in (True, False):
        out = lib.lax.cond(
            pred, lambda a, y: (a.__setitem__(..., a[...] + y), y * 2)[1], lambda a, y: y, q, F32(2.0)
        )
        seen.extend((np.asarray(out), np.asarray(q[...])))
    return seen


def test_refs_as_scan_and_cond_operands_match_jax():
    _matches_jax(_operand_refs_program)


def test_a_freed_ref_is_unusable_inside_jit_as_jax():
    # (JAX's mutable_array_test test_double_free_ref_raises / test_deref_after_free_ref_raises;
    # freeing an eager Ref is a no-op, as in JAX)
    def use_after_free(x):
        ref = funcgrad.new_ref(x)
        funcgrad.free_ref(ref)
        return ref[...]

    with pytest.raises(ValueError, match=r"`get` must be called on `Ref` types: ~float32\[\]"):
        funcgrad.jit(use_after_free)(F32(1.0))

    def double_free():
        ref = funcgrad.empty_ref(funcgrad.ShapeDtypeStruct((), F32))
        funcgrad.free_ref(ref)
        funcgrad.free_ref(ref)

    with pytest.raises(ValueError, match="must be called on `Ref` types"):
        funcgrad.jit(double_free)()
    eager = funcgrad.new_ref(F32(2.0))
    assert funcgrad.free_ref(eager) == () and float(eager[...]) == 2.0


def _grad_stats_program(lib, jnp):
    """JAX's gradient-statistics plumbing (mutable_array_test test_custom_vjp_grad_stats_plumbing
    _basic, _basic_vjp3): a custom_vjp takes a Ref, saves it as a residual and its bwd writes the
    cotangent into it; under grad, vjp and a jitted primal, in scan bodies."""

    @lib.custom_vjp
    def stash(grads_ref, x):
        return x

    def stash_bwd(grads_ref, g):
        grads_ref[...] = g
        return None, g

    stash.defvjp(lambda grads_ref, x: (x, grads_ref), stash_bwd)

    def primal(grads_ref, x):
        x = stash(grads_ref, jnp.sin(x))
        return stash(grads_ref, jnp.sin(x))

    seen = []
    ref = lib.new_ref(F32(0.0))
    seen.append(np.asarray(lib.grad(lib.jit(primal), 1)(ref, F32(1.0))))
    seen.append(np.asarray(ref[...]))
    ref2 = lib.new_ref(F32(0.0))
    _, f_vjp = lib.vjp(lambda x: primal(ref2, x), F32(1.0))
    seen.append(np.asarray(f_vjp(F32(1.0))[0]))
    seen.append(np.asarray(ref2[...]))
    # bwd writing a closed-over Ref in a traced backward pass (test_custom_vjp_grad_stats_plumbing
    # _scan): a jitted call's and a scan body's (remat or not) transposition carry it; length 2:
    # the write happens at each iteration of the backward loop, the first iteration's last
    for jit, remat in ((False, True), (True, False)):
        ref3 = lib.new_ref(F32(0.0))

        def body(c, _, ref3=ref3):
            return jnp.sin(stash(ref3, jnp.sin(c))), ()

        def scanned(x, body=lib.remat(body) if remat else body):
            return lib.lax.scan(body, x, None, length=2)[0]

        seen.append(np.asarray(lib.grad(lib.jit(scanned) if jit else scanned)(F32(1.0))))
        seen.append(np.asarray(ref3[...]))
    return seen


def test_a_custom_vjp_writing_a_ref_it_was_given_matches_jax():
    _matches_jax(_grad_stats_program, lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6))
    # One Ref at two arguments: JAX's custom_vjp words (kernel/held_state.py raises the error the
    # surface registers), for jax too
    jax = pytest.importorskip("jax")
    for lib in (funcgrad, jax):
        f = lib.custom_vjp(lambda x_ref, y_ref: None)
        f.defvjp(lambda x_ref, y_ref: (None, None), lambda _, g: (None, None))
        r = lib.new_ref(F32(0.0))
        with pytest.raises(
            ValueError,
            match=r"but custom_vjp function .*<lambda> at 0x\w+>\)? got the same mutable array reference "
            r"of type Ref\{float32\[\]\} at x_ref and y_ref\.",
        ):
            f(r, r)


def _remat_program(lib):
    """JAX's mutable_array_test test_remat_basic_arg / test_remat_basic_closed_over: a checkpointed
    function writing a no-grad Ref (passed in or closed over), under grad, eagerly and under jit."""
    seen = []
    for jit in (False, True):

        @lib.remat
        def f(y, x_ref):
            out = y * y
            x_ref[...] += out
            return out

        x_ref = lib.new_ref(F32(1.0), kind="no_grad_no_remat")
        seen.append(np.asarray(lib.grad(lib.jit(f) if jit else f)(F32(2.0), x_ref)))
        seen.append(np.asarray(x_ref[...]))
        c_ref = lib.new_ref(F32(1.0), kind="no_grad_no_remat")

        @lib.remat
        def g(y, c_ref=c_ref):  # (a default binds this iteration's Ref; it is closed over as in JAX)
            out = y * c_ref[...]
            c_ref[...] += 1
            return out

        seen.append(np.asarray(lib.grad(lib.jit(g) if jit else g)(F32(2.0))))
        seen.append(np.asarray(c_ref[...]))
    # Nested checkpoints (test_remat_basic_closed_over_nested): the no-grad Ref's known value is
    # written while grad's partial evaluation runs the known part (funcgrad refused it)
    n_ref = lib.new_ref(F32(1.0), kind="no_grad_no_remat")

    @lib.remat
    @lib.remat
    def h(y):
        out = y * n_ref[...]
        n_ref[...] += 1
        return out * out

    seen.append(np.asarray(lib.grad(h)(F32(2.0))))
    seen.append(np.asarray(n_ref[...]))
    return seen


def test_checkpointed_functions_writing_refs_match_jax():
    jax = pytest.importorskip("jax")

    ours, theirs = _remat_program(funcgrad), _remat_program(jax)
    for a, b in zip(ours, theirs, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)


def _jit_closing_over_refs_under_grad(lib, jnp):
    """A jitted function closing over Refs, called under grad: its Python runs once on a cache
    miss (JAX's mutable_array_test test_jit_vjp_systematic_readonly pops from a list while it
    traces), a Ref written with a value grad does not touch is written back (NOTE: [jitted calls
    with Refs under a transformation])."""
    seen, traces = [], []
    consts = [lib.new_ref(F32(0.5)), lib.new_ref(F32(-1.0))]
    written = lib.new_ref(F32(0.0))

    def f(x):
        pool = list(consts)

        @lib.jit
        def inner(x):
            traces.append(1)
            total = x * pool.pop()[...]
            written[...] = pool.pop()[...] + 1.0
            return jnp.sin(total)

        return inner(x) + inner(x * 2.0)

    seen.append(np.asarray(lib.grad(f)(F32(0.3))))
    seen.append(np.asarray(written[...]))

    @lib.jit
    def step(x):
        traces.append(1)
        return jnp.sin(x * written[...])

    for _ in range(2):  # (the second call hits the cache: no Python)
        seen.append(np.asarray(lib.grad(step)(F32(0.7))))

    @lib.jit
    def given(r, x):  # (a Ref argument, under grad: traced once too)
        traces.append(1)
        r[...] += 1.0
        return jnp.sin(x * r[...])

    arg = lib.new_ref(F32(0.5))
    for _ in range(2):
        seen.append(np.asarray(lib.grad(given, 1)(arg, F32(0.7))))
    seen.append(np.asarray(arg[...]))
    seen.append(np.asarray(len(traces)))  # inner twice (a new function per call of f), step once
    return seen


def test_a_jit_closing_over_refs_under_grad_traces_once_as_jax():
    _matches_jax(_jit_closing_over_refs_under_grad, lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6))


def _vjp_of_ref_primals(lib, jnp):
    """JAX's mutable_array_test test_return_from_custom_vjp_fwd's first half, and a function
    writing a differentiated value into a Ref primal: the forward pass and the Ref's final value."""
    seen = []

    @lib.custom_vjp
    def f(x, ref):
        return x

    f.defvjp(lambda x, ref: (x, ref), lambda ref, g: g)

    def w(x, r):
        r[...] += x
        return x * 2.0

    for fun in (f, lib.jit(f), w):
        x_ref = lib.new_ref(F32(1.0))
        out, _ = lib.vjp(fun, F32(3.0), x_ref)
        seen += [np.asarray(out), np.asarray(x_ref[...])]
    return seen


def test_vjp_with_ref_primals_matches_jax():
    _matches_jax(_vjp_of_ref_primals)
    # JAX's refusals there (test_return_from_custom_vjp_fwd, test_argument_aliases_custom_vjp_fwd)
    x_ref = funcgrad.new_ref(F32(0.0))

    @funcgrad.custom_vjp
    def g(x, ref):
        return x

    g.defvjp(lambda x, _: (x, funcgrad.new_ref(0)), lambda ref, g: g)
    with pytest.raises(ValueError, match="custom_vjp fwd function"):
        funcgrad.vjp(g, 3.0, x_ref)

    @funcgrad.custom_vjp
    def h(x_ref, y_ref): ...

    h.defvjp(lambda x_ref, y_ref: (None, None), lambda _, g: (None, None))
    with pytest.raises(ValueError, match="x_ref and y_ref"):
        funcgrad.vjp(h, x_ref, x_ref)


def _views_of_a_ref(lib, jnp):
    """``ref.at[idx]`` inside jit, under grad (JAX's test_grad_get_transformed_ref): a view read and
    updated as a Ref."""

    @lib.jit
    def f(x):
        ref = lib.new_ref(jnp.ones(5, F32))
        ref.at[1:4][...] += x
        ref.at[::2][...] = ref.at[::2][...] * 3.0
        return (ref[...] ** 2).sum()

    x = jnp.array([1.0, 2.0, 3.0], F32)
    return [np.asarray(f(x)), np.asarray(lib.grad(f)(x))]


def test_views_of_a_ref_match_jax():
    _matches_jax(_views_of_a_ref)


def _cond_given_a_ref(lib, jnp):
    """A Ref passed to cond is written through the branch's parameter, eagerly and under jit."""
    x_ref = lib.new_ref(F32(0.0))

    def bump(r):
        r[...] += 2.0
        return r[...] * 3

    seen = [np.asarray(lib.lax.cond(True, bump, lambda r: r[...], x_ref)), np.asarray(x_ref[...])]
    run = lib.jit(lambda r: lib.lax.cond(False, lambda r: r[...], bump, r))
    return [*seen, np.asarray(run(x_ref)), np.asarray(x_ref[...])]


def test_a_ref_given_to_cond_and_closed_over_too_is_refused_as_jax():
    _matches_jax(_cond_given_a_ref)
    x_ref = funcgrad.new_ref(F32(0.0))
    with pytest.raises(ValueError, match="for cond, a mutable array reference of type Ref{float32\\[\\]} was "
                       "both closed over and passed as the argument y_ref"):  # fmt: skip
        both = lambda y_ref: x_ref[...] + y_ref[...]  # noqa: E731
        funcgrad.lax.cond(True, both, both, x_ref)


def _custom_vjp_of_a_differentiated_ref(lib, jnp):
    """JAX's mutable_array_test test_custom_vjp_differentiated_ref: a custom_vjp given a Ref made
    from a differentiated value; ``bwd``'s cotangent for it reaches that value."""

    @lib.custom_vjp
    def f(x_ref):
        return x_ref[...] * 2.0

    f.defvjp(lambda x_ref: (f(x_ref), None), lambda _, g: (g * 3.0,))
    seen = []
    for fun in (f, lib.jit(f)):
        seen.append(np.asarray(fun(lib.new_ref(F32(3.0)))))
        _, f_vjp = lib.vjp(lambda x, fun=fun: fun(lib.new_ref(x)), F32(3.0))
        seen.append(np.asarray(f_vjp(F32(1.0))[0]))
    return seen


def test_a_custom_vjp_of_a_differentiated_ref_matches_jax():
    _matches_jax(_custom_vjp_of_a_differentiated_ref)


def test_make_jaxpr_of_a_function_writing_a_ref_argument():
    # JAX's mutable_array_test test_basic: funcgrad's jaxpr is the functionalised program (the
    # Ref's value in, its final value out: NOTE: [refs are functionalised at trace time]; JAX
    # prints ref_swap equations); evaluated, it gives the final value jax's Ref holds. Nothing is
    # written while tracing.
    jax = pytest.importorskip("jax")

    def f(x_mut):
        x_mut[...] += 1.0
        x_mut[0] += 1
        x_mut[1] += 5

    r = funcgrad.new_ref(np.zeros(3, F32))
    closed = funcgrad.make_jaxpr(f)(r)
    assert np.asarray(r[...]).tolist() == [0.0, 0.0, 0.0]
    (final,) = funcgrad.core.eval_jaxpr(closed.jaxpr, closed.consts, np.zeros(3, F32))
    theirs = jax.new_ref(np.zeros(3, F32))
    f(theirs)
    np.testing.assert_array_equal(final, theirs[...])


@pytest.mark.parametrize("jit", [False, True])
def test_make_jaxpr_of_a_function_closing_over_refs(jit):
    # JAX's mutable_array_test test_closed_over_basic and test_basic's effects: make_jaxpr of a
    # function writing a Ref it closes over (directly or through a jit) traces without running;
    # the Ref's value is a constant of funcgrad's functionalised program, its final value an
    # output, and the program names a read and a write of it as JAX's effects do.
    jax = pytest.importorskip("jax")
    from jax._src.state.types import RefEffect

    from funcgrad import _effects

    seen = {}
    for lib in (funcgrad, jax):
        x_mut = lib.new_ref(np.zeros(3, F32))

        def f(x_mut=x_mut):
            x_mut[...] += 1.0
            x_mut[1] += 5

        g = lib.jit(f) if jit else f
        closed = lib.make_jaxpr(g)()
        assert np.asarray(x_mut[...]).tolist() == [0.0, 0.0, 0.0]
        effect = _effects.RefEffect if lib is funcgrad else RefEffect
        seen[lib] = sorted(type(e).__name__ for e in closed.effects if isinstance(e, effect))
        g()
        seen[lib, "value"] = np.asarray(x_mut[...])
        if lib is funcgrad:
            (final,) = funcgrad.core.eval_jaxpr(closed.jaxpr, closed.consts)
            np.testing.assert_array_equal(final, [1.0, 6.0, 1.0])
    assert seen[funcgrad] == seen[jax] == ["ReadEffect", "WriteEffect"]
    np.testing.assert_array_equal(seen[funcgrad, "value"], seen[jax, "value"])


def test_a_ref_in_scans_initial_carry_is_refused_as_jax():
    # (mutable_array_test test_closure_and_argument_aliases_scan; the body is traced once to tell
    # which of JAX's errors applies, and nothing is written)
    jax = pytest.importorskip("jax")

    def messages(lib):
        x_ref = lib.new_ref(F32(0.0))
        seen = []
        for body, init in [
            (lambda y_ref, _: (x_ref[...] + y_ref[...], None), x_ref),
            (lambda c, _: ((c[0], 2.0), None), (x_ref, 1.0)),
        ]:
            with pytest.raises(ValueError) as e:
                lib.lax.scan(body, init, None, length=1)
            seen.append(str(e.value).split(" at ", 1)[-1].split(":", 1)[-1])
        with pytest.raises((TypeError, ValueError)):  # (jax: a carry type error)
            lib.lax.scan(lambda c, _: (F32(1.0), None), x_ref, None, length=1)
        assert float(x_ref[...]) == 0.0
        return seen

    assert messages(funcgrad) == messages(jax)


def test_a_shape_dtype_struct_with_is_ref_stands_for_a_ref_as_jax():
    # JAX's mutable_array_test test_sharded_aot_mutable_sds: ShapeDtypeStruct(is_ref=True) is a
    # Ref's type (typeof), traced as a Ref by eval_shape and by jit's lower, whose compiled program
    # is then called with a Ref and writes it.
    jax = pytest.importorskip("jax")
    seen = {}
    for lib in (funcgrad, jax):

        def f(x_mut):
            x_mut[...] += 1.0
            x_mut[1] += 5
            return x_mut[0]

        sds = lib.ShapeDtypeStruct((3,), F32, is_ref=True)
        r = lib.new_ref(np.arange(3, dtype=F32))
        out = lib.jit(f).lower(sds).compile()(r)
        seen[lib] = (
            repr(sds).replace("funcgrad", "jax"),
            str(lib.typeof(sds)),
            sds == lib.ShapeDtypeStruct((3,), F32),
            repr(sds.update(is_ref=False)),
            repr(lib.eval_shape(f, sds)),
            np.asarray(r[...]).tolist(),
            float(out),
        )
    assert seen[funcgrad] == seen[jax]
    # eval_shape of a function returning its Ref argument: JAX's ValueError, naming the argument
    for lib in (funcgrad, jax):
        with pytest.raises(
            ValueError, match=r"mutable array references cannot be returned\.\n\n.*argument r\."
        ):
            lib.eval_shape(lambda r: r, lib.new_ref(np.zeros(3, F32)))
