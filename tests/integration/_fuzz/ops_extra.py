"""More of the fuzzer's surface table: where the generator was blind (appended to ``ops.SURFACE``).

Transformations of control flow (scan with tuple carries and reverse/unroll, fori_loop with array
and traced bounds -- a while loop --, cond/switch whose branches differ in weak type), custom
derivatives nested and under an inner vmap or grad, checkpoint policies with names and dots, linear
algebra beyond 2x2 and its other outputs (lstsq, svd's and qr's factors, triangular_solve, eigh),
the fft family's lengths and norms, vector and matrix norms of every ``ord``, the segment
reductions, ``reduce_window``, ``conv_general_dilated`` with dilations, strides and feature groups,
dynamic slices with traced and out-of-range starts, scatters with duplicate indices,
``put_along_axis``, ``searchsorted``'s methods, and the size= forms of ``nonzero``/``argwhere``/the
set functions. The helpers they call (``_signal``, ``_conv``, ``_window``, ``_matrix3``, ...) are in
``programs.HELPERS``, so a reproducer still runs on its own.

>>> EXTRA[0].name
'lax.scan_tuple'
"""

from __future__ import annotations

from hypothesis import strategies as st

from _fuzz.opbase import B, Op, U, _axes, _Raw, axis, keyed

_INF = [_Raw("np.inf"), _Raw("-np.inf")]
_POLICIES = [
    "T.checkpoint_policies.dots_saveable",
    "T.checkpoint_policies.dots_with_no_batch_dims_saveable",
    "T.checkpoint_policies.save_only_these_names('h')",
    "T.checkpoint_policies.save_anything_except_these_names('h')",
    "T.checkpoint_policies.nothing_saveable",
    "T.checkpoint_policies.everything_saveable",
]

EXTRA: list[Op] = [
    # control flow under the stack's transformations
    Op(
        "lax.scan_tuple",
        f"lax.scan(lambda c, xs: (c * xs[0] + xs[1], (c - xs[1], xs[0] * 2)), np.ones_like({U}[0]), "
        f"({U}, np.cos({U})), reverse={{r}}, unroll={{u}})[1][{{i}}]",
        params=keyed(r=st.booleans(), u=st.sampled_from([1, 2, True]), i=st.integers(0, 1)),
    ),
    Op(
        "lax.scan_carry_out",
        f"lax.scan(lambda c, a: ((c[0] * 0.5 + a, c[1] + c[0] * a), None), "
        f"(np.zeros_like({U}[0]), np.ones_like({U}[0])), {U})[0][{{i}}]",
        params=keyed(i=st.integers(0, 1)),
    ),
    Op(
        "lax.fori_array_bounds",
        f"lax.fori_loop(np.asarray({{lo}}), np.asarray({{hi}}), lambda i, a: a * 0.5 + np.sin(a) * i, {U})",
        params=keyed(lo=st.integers(-1, 1), hi=st.integers(0, 3)),
    ),
    Op(
        "lax.fori_traced_bound",
        f"lax.fori_loop(0, np.sum({U} > 0), lambda i, a: a * 1.5 - i, {U})",
        specials=False,
    ),
    Op(
        "lax.while_elementwise",
        # the predicate reduces over a batch-dependent value: under vmap the trips differ per row
        f"lax.while_loop(lambda c: (c[0] < 3) & (np.max(c[1], initial=0.0) < {{t}}), "
        f"lambda c: (c[0] + 1, c[1] * 1.5 + 1.0), (0, {U}))[1]",
        kinds="f",
        specials=False,
        params=keyed(t=st.sampled_from([2.0, 5.0])),
    ),
    Op(
        "lax.cond_weak_branch",
        f"lax.cond(np.sum({U}) > 0, lambda a: np.sum(a), lambda a: {{c}}, {U})",
        params=keyed(c=st.sampled_from([2.0, 3, -1.5])),
    ),
    Op(
        "lax.switch_weak_branches",
        f"lax.switch({{i}}, [lambda a: np.max(a, initial=0), lambda a: {{c}}, lambda a: np.sum(a * a)], {U})",
        params=keyed(i=st.integers(-1, 3), c=st.sampled_from([2, 0.5])),
    ),
    Op(
        "lax.cond_operands",
        f"lax.cond(np.any({U} > 0), lambda a, b: (a * 2, np.sum(b)), "
        f"lambda a, b: (a - 1, np.max(b, initial=0)), {U}, {B})[{{i}}]",
        arity=2,
        params=keyed(i=st.integers(0, 1)),
    ),
    # custom derivatives nested, and under transformations inside the program
    Op("custom_nested", f"_custom_jvp(T, np, _custom_vjp(T, np, {U}))", kinds="f", specials=False),
    Op("custom_inner_vmap", f"T.vmap(lambda a: _custom_vjp(T, np, a) * 2)({U})", kinds="f", specials=False),
    Op("custom_inner_grad", f"T.grad(lambda a: np.sum(_custom_jvp(T, np, a)))({U})", kinds="f"),
    Op(
        "custom_jvp_nondiff",
        f"_custom_jvp_nondiff(T, np, {U}, {{k}})",
        kinds="f",
        params=keyed(k=st.sampled_from([2, 0.5])),
    ),
    Op(
        "checkpoint_policy",
        f"T.checkpoint(lambda a: np.tanh(T.ad_checkpoint.checkpoint_name(np.sin(a) * 2.0, 'h') * a) "
        f"+ np.dot(np.ravel(a), np.ravel(a)), policy={{p}}, prevent_cse={{c}})({U})",
        kinds="f",
        params=keyed(p=st.sampled_from(_POLICIES).map(_Raw), c=st.booleans()),
    ),
    # linear algebra: other outputs, 3x3, triangular solves
    Op(
        "linalg.lstsq",
        f"np.linalg.lstsq(_matrix(np, {U}, 'any'), _matrix(np, {U}, 'spd')[0])[0]",
        specials=False,
    ),
    Op(
        "linalg.svd_factor",
        f"np.abs(np.linalg.svd(_matrix(np, {U}, 'any'))[{{i}}])",
        specials=False,
        params=keyed(i=st.sampled_from([0, 2])),
    ),
    Op("linalg.qr_q", f"np.abs(np.linalg.qr(_matrix(np, {U}, 'any'))[0])", specials=False),
    Op("linalg.eigh_w", f"np.linalg.eigh(_matrix(np, {U}, 'spd'))[0]", specials=False),
    Op(
        "linalg.triangular_solve",
        f"lax.linalg.triangular_solve(np.tril(_matrix(np, {U}, 'spd')), _matrix(np, {U}, 'any'), "
        f"left_side={{s}}, lower=True, transpose_a={{t}})",
        specials=False,
        params=keyed(s=st.booleans(), t=st.booleans()),
    ),
    *(
        Op(f"linalg.{f}3", f"np.linalg.{f}(_matrix3(np, {U})){part}", specials=False)
        for f, part in [
            ("det", ""),
            ("inv", ""),
            ("cholesky", ""),
            ("eigvalsh", ""),
            ("slogdet", "[1]"),
            ("pinv", ""),
        ]
    ),
    Op(
        "linalg.solve3",
        f"np.linalg.solve(_matrix3(np, {U}), np.ravel({B})[:3] if np.size({B}) >= 3 else np.ones(3))",
        arity=2,
        specials=False,
    ),
    # norms of every ord
    Op(
        "np.linalg.norm_vec",
        f"np.linalg.norm({U}, ord={{ord}}, axis=-1, keepdims={{k}})",
        kinds="bifc",
        params=keyed(ord=st.sampled_from([None, 0, 1, 2, -1, -2, 3, 0.5, *_INF]), k=st.booleans()),
    ),
    Op(
        "np.linalg.norm_mat",
        f"np.linalg.norm(_matrix(np, {U}, 'any'), ord={{ord}})",
        specials=False,
        params=keyed(ord=st.sampled_from([None, "fro", "nuc", 1, -1, 2, -2, *_INF])),
    ),
    Op(
        "np.vector_norm_ord",
        f"np.linalg.vector_norm({U}, ord={{ord}}, axis={{axis}})",
        params=lambda s: st.fixed_dictionaries(
            {"ord": st.sampled_from([1, 2, 0, 4, *_INF]), "axis": _axes(s)}
        ),
    ),
    # the fft family: lengths (padding, truncation) and norms
    Op(
        "fft.fft_n_norm",
        f"np.fft.{{f}}({U}, n={{n}}, norm={{norm}})",
        kinds="bifc",
        specials=False,
        params=keyed(
            f=st.sampled_from(["fft", "ifft", "rfft", "ihfft"]).map(_Raw),
            n=st.sampled_from([None, 1, 3, 5]),
            norm=st.sampled_from([None, "ortho", "forward", "backward"]),
        ),
    ),
    Op(
        "fft.irfft_hfft",
        f"np.fft.{{f}}({U}, n={{n}}, norm={{norm}})",
        kinds="bifc",
        specials=False,
        params=keyed(
            f=st.sampled_from(["irfft", "hfft"]).map(_Raw),
            n=st.sampled_from([None, 2, 5]),
            norm=st.sampled_from([None, "ortho", "forward"]),
        ),
    ),
    *(
        Op(f"fft.{f}", f"np.fft.{f}({U})", kinds="bifc", specials=False)
        for f in ["rfftn", "fft2", "ifft2", "ifftn"]
    ),
    Op(
        "fft.irfftn",
        f"np.fft.irfftn({U}, s={{s}})",
        kinds="bifc",
        specials=False,
        params=keyed(s=st.sampled_from([None, (4,)])),
    ),
    Op("fft.ifftshift", f"np.fft.ifftshift({U}, axes={{axis}})", kinds="bifc", params=axis()),
    # segment reductions (ids negative or beyond num_segments are dropped)
    Op(
        "ops.segment",
        f"T.ops.segment_{{f}}({U}, {{ids}}(np.arange(np.shape({U})[0])), num_segments={{n}}, "
        f"indices_are_sorted={{s}})",
        params=keyed(
            f=st.sampled_from(["sum", "prod", "max", "min"]).map(_Raw),
            ids=st.sampled_from(
                ["(lambda i: i % 2)", "(lambda i: i // 2)", "(lambda i: i % 3 - 1)", "(lambda i: i * 2)"]
            ).map(_Raw),
            n=st.sampled_from([1, 2, 3]),
            s=st.booleans(),
        ),
    ),
    # windows and convolutions
    Op(
        "lax.reduce_window",
        f"_window(T, np, {U}, {{op}}, {{w}}, {{stride}}, {{pad}})",
        params=keyed(
            op=st.sampled_from(["add", "max", "min", "mul"]),
            w=st.integers(1, 3),
            stride=st.integers(1, 2),
            pad=st.sampled_from(["VALID", "SAME", ((1, 0), (0, 2))]),
        ),
    ),
    Op(
        "lax.conv_dilated",
        f"_conv(T, np, {U}, {{g}}, {{stride}}, {{pad}}, {{ld}}, {{rd}}, {{layout}})",
        kinds="bif",
        params=keyed(
            g=st.sampled_from([1, 2]),
            stride=st.integers(1, 2),
            pad=st.sampled_from(["VALID", "SAME", ((1, 2),), ((-1, 1),)]),
            ld=st.integers(1, 2),
            rd=st.integers(1, 2),
            layout=st.sampled_from(["NCW", "NWC"]),
        ),
    ),
    # dynamic slices with traced and out-of-range starts (clamped)
    Op(
        "lax.dynamic_slice_nd",
        f"lax.dynamic_slice({U}, tuple({{s}} for _ in np.shape({U})), "
        f"tuple(min(d, {{n}}) for d in np.shape({U})))",
        params=keyed(s=st.sampled_from([-3, 0, 2, 7]), n=st.integers(0, 2)),
    ),
    Op(
        "lax.dynamic_update_traced",
        f"lax.dynamic_update_slice_in_dim({U}, {U}[:1] * 2, np.argmax(np.ravel({U})) + {{k}}, axis=0)",
        params=keyed(k=st.sampled_from([-2, 0, 3])),
    ),
    # scatters with duplicate indices and flags, put_along_axis
    Op(
        "at.scatter_dup",
        f"np.asarray({U}).at[np.array([1, 1, 0, -1])].{{method}}({{v}}, indices_are_sorted={{s}}, "
        f"unique_indices=False, mode={{mode}})",
        params=keyed(
            method=st.sampled_from(["set", "add", "multiply", "min", "max"]).map(_Raw),
            v=st.sampled_from([2, -1.5, 0.5]),
            s=st.booleans(),
            mode=st.sampled_from([None, "drop", "clip", "promise_in_bounds"]),
        ),
    ),
    Op(
        "np.put_along_axis",
        f"np.put_along_axis({U}, np.argsort({U}, axis=-1)[..., :1] * {{k}}, {{v}}, axis=-1, inplace=False, "
        f"mode={{mode}})",
        params=keyed(
            k=st.sampled_from([1, -1, 3]),
            v=st.sampled_from([9, -0.5]),
            mode=st.sampled_from([None, "clip", "fill"]),
        ),
    ),
    Op(
        "np.searchsorted_method",
        f"np.searchsorted(np.sort(np.ravel({B})), {U}, side={{side}}, method={{m}})",
        arity=2,
        params=keyed(
            side=st.sampled_from(["left", "right"]),
            m=st.sampled_from(["scan", "scan_unrolled", "sort", "compare_all"]),
        ),
    ),
    # size= forms
    Op(
        "np.nonzero_size",
        f"np.nonzero({U}, size={{n}}, fill_value={{fv}})[{{i}}]",
        params=keyed(n=st.sampled_from([0, 2, 5]), fv=st.sampled_from([None, -1, 7]), i=st.integers(-1, 0)),
    ),
    Op(
        "np.argwhere_size",
        f"np.argwhere({U}, size={{n}}, fill_value={{fv}})",
        params=keyed(n=st.sampled_from([1, 3]), fv=st.sampled_from([None, -1])),
    ),
    Op("np.flatnonzero_size", f"np.flatnonzero({U}, size={{n}})", params=keyed(n=st.sampled_from([0, 2, 4]))),
    Op(
        "np.unique_returns",
        f"np.unique({U}, size=3, fill_value={{fv}}, {{what}}=True)[1]",
        params=keyed(
            fv=st.sampled_from([None, 0]),
            what=st.sampled_from(["return_index", "return_inverse", "return_counts"]).map(_Raw),
        ),
    ),
    Op(
        "np.setop_size",
        f"np.{{f}}({U}, {B}, size={{n}}, fill_value={{fv}})",
        arity=2,
        params=keyed(
            f=st.sampled_from(["union1d", "setdiff1d", "intersect1d", "setxor1d"]).map(_Raw),
            n=st.sampled_from([1, 4]),
            fv=st.sampled_from([None, -2]),
        ),
    ),
]
