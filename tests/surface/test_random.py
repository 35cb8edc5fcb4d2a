"""funcgrad.random: bit-exact with JAX's threefry (x64), pure, batchable, and sensible statistics."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.random as fr

# jax, the oracle, compiles and runs every case beside funcgrad: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
jax.config.update("jax_enable_x64", True)
jr = jax.random
jnp = jax.numpy


@pytest.mark.parametrize("seed", [0, 1, 42, 2**31 + 5, 2**40 + 3])
def test_keys_and_split_match_jax(seed):
    k, jk = fr.PRNGKey(seed), jr.PRNGKey(seed)
    np.testing.assert_array_equal(np.asarray(k), np.asarray(jk))
    np.testing.assert_array_equal(np.asarray(fr.split(k)), np.asarray(jr.split(jk)))
    np.testing.assert_array_equal(np.asarray(fr.split(k, 5)), np.asarray(jr.split(jk, 5)))
    np.testing.assert_array_equal(np.asarray(fr.fold_in(k, 123)), np.asarray(jr.fold_in(jk, 123)))


def test_fold_in_refuses_python_ints_outside_uint32_as_jax():
    # (JAX converts the data with jnp.uint32: NumPy's OverflowError; funcgrad wrapped them)
    k, jk = fr.key(3), jr.key(3)
    for data in (-1, 2**32, 2**40):
        for lib, key in ((fr, k), (jr, jk)):
            with pytest.raises(OverflowError, match=f"Python integer {data} out of bounds for uint32"):
                lib.fold_in(key, data)
    for data in (0, 2**32 - 1, np.int64(2**40)):  # (a NumPy integer wraps, as in JAX)
        np.testing.assert_array_equal(fr.key_data(fr.fold_in(k, data)), jr.key_data(jr.fold_in(jk, data)))


@pytest.mark.parametrize("x64", [False, True])
def test_seed_words_match_jax_in_both_modes(x64):
    # The high word is a logical shift in the seed's canonical dtype: 0 for int32/uint32 seeds and
    # for every seed in 32-bit mode (funcgrad sign-extended to int64 first: np.int32(-2) gave
    # [4294967295, 4294967294]); a float seed is a TypeError. Found by JAX's random_test.
    seeds = [(-1, int), (-2, np.int32), (-3, np.int64), (2**31 + 100, np.uint32), (-(2**31) - 100, int)]
    try:
        funcgrad.config.update("jax_enable_x64", x64)
        jax.config.update("jax_enable_x64", x64)
        for value, typ in seeds:
            s = typ(value)
            np.testing.assert_array_equal(fr.key_data(fr.key(s)), jr.key_data(jr.key(s)))
            np.testing.assert_array_equal(fr.PRNGKey(s), jr.PRNGKey(s))
            if typ is not int:
                np.testing.assert_array_equal(funcgrad.jit(fr.PRNGKey)(s), jax.jit(jr.PRNGKey)(s))
        with pytest.raises(TypeError, match="PRNG key seed must be an integer"):
            fr.PRNGKey(np.pi)
    finally:
        funcgrad.config.update("jax_enable_x64", True)
        jax.config.update("jax_enable_x64", True)


def test_loggamma_gradient_of_a_float64_input_in_32_bit_mode_matches_jax():
    # exp(log-sample) underflows to 0 at tiny alpha; the rule's floor took the input's raw float64
    # tiny (0 in float32) and gave 0 / 0 = NaN where jax gives 0 (JAX's random_lax_test testGammaGrad)
    alphas = np.full((3,), 1e-4)
    try:
        funcgrad.config.update("jax_enable_x64", False)
        jax.config.update("jax_enable_x64", False)
        ours = funcgrad.grad(lambda a: funcgrad.numpy.exp(fr.loggamma(fr.PRNGKey(0), a)).sum())(alphas)
        np.testing.assert_array_equal(ours, np.zeros(3, np.float32))  # jax's value (its compile: 3 s)
    finally:
        funcgrad.config.update("jax_enable_x64", True)
        jax.config.update("jax_enable_x64", True)


def test_multinomial_of_many_trials_is_one_program_and_jax_bits():
    # Eagerly the scan of binomials ran op by op (JAX's testMultinomialExample, 1e5 trials, ran for
    # minutes); now one compiled program, its counts JAX's.
    p = np.array([[0.5, 0.2, 0.3], [1.0, 0.0, 0.0]])
    np.testing.assert_array_equal(fr.multinomial(fr.key(0), 1e5, p), jr.multinomial(jr.key(0), 1e5, p))


def test_multivariate_normal_under_rank_promotion_raise():
    # mean (n,) against samples (k, n) broadcast implicitly, which 'raise' (JAX's test default) refused
    mean, cov = np.zeros(2), np.array([[2.0, 0.5], [0.5, 1.0]])
    with funcgrad.numpy_rank_promotion("raise"):
        ours = fr.multivariate_normal(fr.key(0), mean, cov, (10,))
    np.testing.assert_allclose(ours, jr.multivariate_normal(jr.key(0), mean, cov, (10,)), rtol=1e-12)


@pytest.mark.parametrize("shape", [(), (3,), (2, 5)])
def test_distributions_match_jax(shape):
    k, jk = fr.PRNGKey(7), jr.PRNGKey(7)
    np.testing.assert_array_equal(np.asarray(fr.uniform(k, shape)), np.asarray(jr.uniform(jk, shape)))
    np.testing.assert_allclose(np.asarray(fr.normal(k, shape)), np.asarray(jr.normal(jk, shape)), rtol=1e-12)
    np.testing.assert_array_equal(
        np.asarray(fr.randint(k, shape, -3, 17)), np.asarray(jr.randint(jk, shape, -3, 17))
    )
    # float32 scaling may differ by an ulp: XLA fuses the multiply-add into an FMA.
    np.testing.assert_allclose(
        np.asarray(fr.uniform(k, shape, np.float32, -2.0, 3.0)),
        np.asarray(jr.uniform(jk, shape, np.float32, -2.0, 3.0)),
        rtol=1e-6,
    )
    np.testing.assert_array_equal(
        np.asarray(fr.bernoulli(k, 0.3, shape)), np.asarray(jr.bernoulli(jk, 0.3, shape))
    )


def test_statistics_and_purity():
    k = fr.PRNGKey(0)
    x = np.asarray(fr.normal(k, (20000,)))
    assert abs(x.mean()) < 0.03 and abs(x.std() - 1) < 0.03
    np.testing.assert_array_equal(np.asarray(fr.normal(k, (5,))), np.asarray(fr.normal(k, (5,))))
    k1, k2 = fr.split(k)
    assert not np.array_equal(np.asarray(fr.normal(k1, (5,))), np.asarray(fr.normal(k2, (5,))))
    c = np.asarray(fr.categorical(fr.PRNGKey(3), np.log(np.tile([0.2, 0.8], (4000, 1)))))
    assert abs(c.mean() - 0.8) < 0.03


def test_vmap_over_keys_matches_loop():
    keys = fr.split(fr.PRNGKey(0), 4)
    batched = funcgrad.vmap(lambda k: fr.normal(k, (3,)))(keys)
    for i in range(4):
        np.testing.assert_allclose(np.asarray(batched[i]), np.asarray(fr.normal(np.asarray(keys)[i], (3,))))


def test_bad_key_errors():
    with pytest.raises(TypeError, match="uint32"):
        fr.normal(np.array([0, 1]), (2,))
    # a batch of keys is refused with JAX's ValueError (typed keys or raw data alike)
    for keys in (fr.split(fr.PRNGKey(0), 3), fr.split(fr.key(0), 3)):
        with pytest.raises(ValueError, match="single key.*shape \\(3,\\)"):
            fr.normal(keys, (2,))


# ----------------------------------------------------------------------------------------------
# Every sampler against jax.random with the same key (JAX's algorithms, step by step)

K = 11
P = np.array([0.1, 0.2, 0.3, 0.4])
LOGITS = np.log(np.array([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]]))
SAMPLERS = [
    # name, call(module, key), exact
    (
        "uniform_array_bounds",
        lambda m, k: m.uniform(k, (3,), minval=np.array([0.0, 1.0, 2.0]), maxval=3.0),
        True,
    ),
    ("randint_int8", lambda m, k: m.randint(k, (5,), -5, 100, np.int8), True),
    ("randint_array_bounds", lambda m, k: m.randint(k, (3,), np.array([0, 5, 10]), 20), True),
    ("truncated_normal", lambda m, k: m.truncated_normal(k, -1.0, np.array([1.0, 2.0])), False),
    ("bernoulli_high", lambda m, k: m.bernoulli(k, 0.3, (6,), mode="high"), True),
    ("gumbel_high", lambda m, k: m.gumbel(k, (4,), mode="high"), False),
    ("categorical", lambda m, k: m.categorical(k, LOGITS), True),
    ("categorical_broadcast_shape", lambda m, k: m.categorical(k, LOGITS, shape=(4, 2)), True),
    ("categorical_no_replace", lambda m, k: m.categorical(k, LOGITS, shape=(2, 2), replace=False), True),
    ("gamma", lambda m, k: m.gamma(k, np.array([0.5, 2.0, 5.0])), False),
    ("gamma_shape", lambda m, k: m.gamma(k, 0.3, (2, 3)), False),
    ("loggamma", lambda m, k: m.loggamma(k, 0.1, (3,)), False),
    ("beta", lambda m, k: m.beta(k, 2.0, np.array([3.0, 0.5]), (2, 2)), False),
    ("dirichlet", lambda m, k: m.dirichlet(k, np.array([1.0, 2.0, 3.0]), (2,)), False),
    ("chisquare", lambda m, k: m.chisquare(k, 3.0, (3,)), False),
    ("f", lambda m, k: m.f(k, 3.0, 5.0, (3,)), False),
    ("t", lambda m, k: m.t(k, 3.0, (3,)), False),
    ("cauchy", lambda m, k: m.cauchy(k, (3,)), False),
    ("laplace", lambda m, k: m.laplace(k, (3,)), False),
    ("logistic", lambda m, k: m.logistic(k, (3,)), False),
    ("pareto", lambda m, k: m.pareto(k, 2.0, (3,)), False),
    ("lognormal", lambda m, k: m.lognormal(k, 0.5, (3,)), False),
    ("maxwell", lambda m, k: m.maxwell(k, (3,)), False),
    ("double_sided_maxwell", lambda m, k: m.double_sided_maxwell(k, 0.5, 2.0, (3,)), False),
    ("weibull_min", lambda m, k: m.weibull_min(k, 1.0, 1.5, (3,)), False),
    ("rayleigh", lambda m, k: m.rayleigh(k, 2.0, (3,)), False),
    ("wald", lambda m, k: m.wald(k, 1.5, (3,)), False),
    ("triangular", lambda m, k: m.triangular(k, 0.0, 0.3, 1.0, (3,)), False),
    ("generalized_normal", lambda m, k: m.generalized_normal(k, 1.5, (3,)), False),
    ("ball", lambda m, k: m.ball(k, 3, shape=(2,)), False),
    ("permutation_int", lambda m, k: m.permutation(k, 10), True),
    ("permutation_axis", lambda m, k: m.permutation(k, np.arange(12).reshape(3, 4), axis=1), True),
    ("permutation_independent", lambda m, k: m.permutation(k, np.arange(12).reshape(3, 4), 1, True), True),
    ("choice", lambda m, k: m.choice(k, 10, (4,)), True),
    (
        "choice_no_replace",
        lambda m, k: m.choice(k, np.arange(20.0).reshape(10, 2), (4,), replace=False),
        True,
    ),
    ("choice_p", lambda m, k: m.choice(k, 4, (5,), p=P), True),
    ("choice_p_no_replace", lambda m, k: m.choice(k, 4, (3,), replace=False, p=P), True),
    ("rademacher", lambda m, k: m.rademacher(k, (6,)), True),
    ("geometric", lambda m, k: m.geometric(k, 0.3, (6,)), True),
    ("poisson", lambda m, k: m.poisson(k, np.array([0.5, 3.0, 12.0, 50.0])), True),
    ("binomial", lambda m, k: m.binomial(k, np.array([5.0, 30.0, 100.0]), np.array([0.3, 0.5, 0.8])), True),
    ("multinomial", lambda m, k: m.multinomial(k, 10.0, np.array([0.2, 0.3, 0.5])), True),
]


@pytest.mark.parametrize("name, call, exact", SAMPLERS, ids=[s[0] for s in SAMPLERS])
def test_sampler_matches_jax(name, call, exact):
    ours, theirs = np.asarray(call(fr, fr.PRNGKey(K))), np.asarray(call(jr, jr.PRNGKey(K)))
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
    if exact:
        np.testing.assert_array_equal(ours, theirs)
    else:
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name, call, exact", SAMPLERS[:12:3], ids=[s[0] for s in SAMPLERS[:12:3]])
def test_sampler_jit_and_vmap_over_keys(name, call, exact):
    keys = fr.split(fr.PRNGKey(3), 3)
    eager = np.stack([np.asarray(call(fr, keys[i])) for i in range(3)])
    np.testing.assert_allclose(np.asarray(funcgrad.vmap(lambda k: call(fr, k))(keys)), eager, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(funcgrad.jit(lambda k: call(fr, k))(keys[0])), eager[0], rtol=1e-12)


def test_float64_normal_bits_as_jax_eager_and_vmapped():
    # NOTE: [rolled threefry rounds]: float64 normals hash in a loop of 5 steps, the rest unrolled
    from funcgrad.random import _cipher

    shape = (3, 5)
    want = np.asarray(jr.normal(jr.key(3), shape, np.float64))
    np.testing.assert_array_equal(np.asarray(fr.normal(fr.key(3), shape, np.float64)), want)
    keys = fr.split(fr.key(1), 3)  # vmap: the jitted sampler's route, batched
    batched = funcgrad.vmap(lambda k: fr.normal(k, shape, np.float64))(keys)
    each = [np.asarray(fr.normal(keys[i], shape, np.float64)) for i in range(3)]
    np.testing.assert_array_equal(np.asarray(batched), np.stack(each))
    words = np.random.default_rng(0).integers(0, 2**32, (4, 9), dtype=np.uint32)
    with _cipher.rolled_rounds():  # (eagerly: the loop's steps run one by one)
        rolled = _cipher._threefry2x32(words[0, 0], words[1, 0], words[2], words[3])
    unrolled = _cipher._threefry2x32(words[0, 0], words[1, 0], words[2], words[3])
    np.testing.assert_array_equal(np.asarray(rolled), np.asarray(unrolled))


def test_gumbel_highest_float32_matches_jax_to_an_ulp():
    ours = np.asarray(fr.gumbel(fr.PRNGKey(K), (64,), np.float32, mode="highest"))
    theirs = np.asarray(jr.gumbel(jr.PRNGKey(K), (64,), np.float32, mode="highest"))
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_distributions_have_the_right_laws():
    import scipy.stats as sst

    k = fr.PRNGKey(0)
    n = 4000
    checks = [
        (fr.gamma(k, 2.5, (n,)), sst.gamma(2.5).cdf),
        (fr.beta(k, 2.0, 3.0, (n,)), sst.beta(2.0, 3.0).cdf),
        (fr.t(k, 4.0, (n,)), sst.t(4.0).cdf),
        (fr.chisquare(k, 3.0, (n,)), sst.chi2(3.0).cdf),
        (fr.laplace(k, (n,)), sst.laplace().cdf),
        (fr.wald(k, 1.5, (n,)), sst.invgauss(1.5).cdf),
        (fr.weibull_min(k, 1.0, 1.5, (n,)), sst.weibull_min(1.5).cdf),
        (fr.triangular(k, 0.0, 0.3, 1.0, (n,)), sst.triang(0.3).cdf),
    ]
    for samples, cdf in checks:
        assert sst.kstest(np.asarray(samples), cdf).pvalue > 1e-3
    counts = np.asarray(fr.poisson(k, 4.0, (n,)))
    assert abs(counts.mean() - 4.0) < 0.2 and abs(counts.var() - 4.0) < 0.5


def test_gamma_family_reparameterised_gradients():
    key = fr.PRNGKey(1)
    # d sample / d alpha at a fixed CDF value: -(dF/dalpha) / (dF/dx) at the sample (implicit
    # differentiation of x = F^-1(u; alpha), with F = scipy's regularized incomplete gamma).
    import scipy.special as ss

    for alpha in (0.4, 1.0, 3.5):
        x = float(fr.gamma(key, alpha))
        g = float(funcgrad.grad(lambda a: fr.gamma(key, a))(alpha))
        h = 1e-6
        dF_da = (ss.gammainc(alpha + h, x) - ss.gammainc(alpha - h, x)) / (2 * h)
        dF_dx = np.exp((alpha - 1) * np.log(x) - x - ss.gammaln(alpha))
        assert g == pytest.approx(-dF_da / dF_dx, rel=1e-5)
    jg = jax.grad(lambda a: jr.gamma(jr.PRNGKey(1), a))(2.0)
    assert float(funcgrad.grad(lambda a: fr.gamma(key, a))(2.0)) == pytest.approx(float(jg), rel=1e-10)
    jl = jax.grad(lambda a: jr.loggamma(jr.PRNGKey(1), a))(0.3)
    assert float(funcgrad.grad(lambda a: fr.loggamma(key, a))(0.3)) == pytest.approx(float(jl), rel=1e-8)
    gb = funcgrad.grad(lambda a, b: fr.beta(key, a, b), argnums=(0, 1))(2.0, 3.0)
    jb = jax.grad(lambda a, b: jr.beta(jr.PRNGKey(1), a, b), argnums=(0, 1))(2.0, 3.0)
    np.testing.assert_allclose(np.asarray(gb), np.asarray(jb), rtol=1e-8)
    alpha = np.array([1.0, 2.0, 3.0])
    gd = funcgrad.grad(lambda a: fr.dirichlet(key, a)[0])(alpha)
    jd = jax.grad(lambda a: jr.dirichlet(jr.PRNGKey(1), a)[0])(alpha)
    np.testing.assert_allclose(np.asarray(gd), np.asarray(jd), rtol=1e-8)


def test_dirichlet_of_an_empty_alpha_is_empty_as_jax():
    # (the program fuzzer, seed 17017) jax normalises with jax.nn.softmax, whose maximum starts at
    # -inf; funcgrad's written-out softmax raised max's "zero-size array" ValueError
    for shape in ((2, 0), (0, 3, 0), (0, 2)):
        alpha = np.ones(shape)
        got = fr.dirichlet(fr.PRNGKey(K), alpha)
        assert got.shape == jr.dirichlet(jr.PRNGKey(K), alpha).shape == shape


def test_linalg_based_samplers():
    cov = np.array([[2.0, 0.3], [0.3, 1.0]])
    for method in ("cholesky", "eigh", "svd"):
        ours = fr.multivariate_normal(fr.PRNGKey(K), np.zeros(2), cov, (3,), method=method)
        theirs = jr.multivariate_normal(jr.PRNGKey(K), jnp.zeros(2), cov, (3,), method=method)
        np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-8)
    q = fr.orthogonal(fr.PRNGKey(K), 4, m=3)
    np.testing.assert_allclose(
        np.asarray(q), np.asarray(jr.orthogonal(jr.PRNGKey(K), 4, m=3)), rtol=1e-8, atol=1e-12
    )


def test_key_utilities_and_errors():
    k = fr.PRNGKey(5)  # raw data (typed keys: tests/surface/random_keys/test_typed_keys.py)
    assert fr.key_impl(k) == fr.key_impl(fr.key(5)) == jr.key_impl(jr.PRNGKey(5)) == "threefry2x32"
    assert str(fr.key_dtype()) == str(jr.key_dtype()) == "key<fry>"
    np.testing.assert_array_equal(fr.key_data(fr.wrap_key_data(k)), k)
    np.testing.assert_array_equal(fr.clone(k), k)
    np.testing.assert_array_equal(fr.key_data(fr.key(5)), jr.key_data(jr.key(5)))
    with pytest.raises(ValueError, match="unknown PRNG implementation"):
        fr.PRNGKey(0, impl="threefry")  # the name is threefry2x32 (rbg/unsafe_rbg: test_extend_random)
    with pytest.raises(ValueError, match="parameter shapes"):
        fr.gamma(k, np.ones(3), (2,))
    with pytest.raises(ValueError, match="replace=False"):
        fr.choice(k, 3, (5,), replace=False)
    with pytest.raises(funcgrad.dtypes.TypePromotionError, match="safely cast"):
        fr.beta(k, np.ones(2), np.ones(2), dtype=np.float32)
    with pytest.raises(ValueError, match="floating"):
        fr.gamma(k, 1.0, dtype=np.int32)


def test_out_sharding_of_an_unsharded_type_places_on_the_default_device():
    # flax's Dropout draws with out_sharding=typeof(x).sharding; outside any mesh that sharding is
    # over an empty abstract mesh, and JAX places the result on the default device.
    x = funcgrad.numpy.ones(3)
    s = funcgrad.typeof(x).sharding
    want = fr.bernoulli(fr.key(0), 0.5, (3,))
    np.testing.assert_array_equal(fr.bernoulli(fr.key(0), 0.5, (3,), out_sharding=s), want)
    np.testing.assert_array_equal(
        funcgrad.jit(lambda k: fr.bernoulli(k, 0.5, (3,), out_sharding=s))(fr.key(0)), want
    )
    np.testing.assert_array_equal(funcgrad.numpy.zeros(3, out_sharding=s), np.zeros(3))


def test_out_sharding_of_a_pmap_body_type_as_jax():
    # flax's Dropout inside nnx.pmap (transforms_test TestPmap::test_basic_demo_single): the body's
    # typeof(x).sharding is over the pmap's abstract mesh of Manual axes, which lays out nothing
    def draw(rand, typeof, x, k):
        return rand.bernoulli(k, 0.5, x.shape, out_sharding=typeof(x).sharding)

    ours = funcgrad.pmap(lambda x, k: draw(fr, funcgrad.typeof, x, k), axis_size=1)(
        funcgrad.numpy.ones((1, 3)), fr.split(fr.key(0), 1)
    )
    theirs = jax.pmap(lambda x, k: draw(jax.random, jax.typeof, x, k), axis_size=1)(
        jax.numpy.ones((1, 3)), jax.random.split(jax.random.key(0), 1)
    )
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


def test_the_original_threefry_streams_are_jax_bit_for_bit():
    # jax_threefry_partitionable=False (mctx's tests pin values drawn so): bits of every width,
    # split, and a sampler, eager and jitted, equal to JAX's in the same mode; the flag is part of
    # jit's key.
    def draws(m):
        k = m.random.PRNGKey(42)
        bits = [m.random.bits(k, (3, 3), dt) for dt in (np.uint8, np.uint64)]  # (32: in normal)
        return [
            *(np.asarray(b) for b in bits),
            np.asarray(m.jit(lambda k: m.random.bits(k, (5,), np.uint16))(k)),
            np.asarray(m.random.key_data(m.random.split(m.random.key(7), 3))),
            np.asarray(m.random.normal(k, (3,))),
        ]

    def both():
        return draws(funcgrad), draws(jax)

    fg_default = draws(funcgrad)
    try:
        funcgrad.config.update("jax_threefry_partitionable", False)
        jax.config.update("jax_threefry_partitionable", False)
        got, want = both()
    finally:
        funcgrad.config.update("jax_threefry_partitionable", True)
        jax.config.update("jax_threefry_partitionable", True)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert not np.array_equal(got[0], fg_default[0])  # (the two streams differ)
    for g, w in zip(draws(funcgrad), fg_default):  # back in the default mode, the default stream
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("impl", ["rbg", "unsafe_rbg", "threefry2x32"])
def test_default_prng_impl_flag_and_bits_dtype_as_jax(impl):
    # jax_default_prng_impl picks the generator of keys made without impl= and of raw key data;
    # bits' default dtype is the mode's unsigned integer (uint64 in 64-bit mode), as JAX's.
    jr = jax.random
    with jax.enable_x64(True):
        funcgrad.config.update("jax_default_prng_impl", impl)
        jax.config.update("jax_default_prng_impl", impl)
        try:
            assert fr.PRNGKey(0).shape == jr.PRNGKey(0).shape
            assert fr.key_impl(fr.key(0)) == jr.key_impl(jr.key(0)) == impl
            got, want = fr.bits(fr.PRNGKey(2), (3,)), jr.bits(jr.PRNGKey(2), (3,))
            assert got.dtype == want.dtype == np.uint64
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
            jitted = funcgrad.jit(lambda s: fr.normal(fr.key(s), (3,)))(3)
            np.testing.assert_allclose(np.asarray(jitted), np.asarray(jr.normal(jr.key(3), (3,))), rtol=1e-12)
        finally:
            funcgrad.config.update("jax_default_prng_impl", "threefry2x32")
            jax.config.update("jax_default_prng_impl", "threefry2x32")
    with pytest.raises(ValueError, match="jax_default_prng_impl"):
        funcgrad.config.update("jax_default_prng_impl", "philox")


def _stateful_rng_program(random, lib):
    """JAX's ``jax.experimental.random`` docstrings as one program: what it draws, in order."""
    rng = random.stateful_rng(42)
    seen = [rng.uniform(), rng.uniform()]
    jit_uniform = lib.jit(rng.uniform)  # a bound method: the counter is closed-over state
    seen += [jit_uniform(), jit_uniform()]
    rng = random.stateful_rng(123)  # (spawn and key shapes: run_jax_docstrings --public)
    seen.append(lib.vmap(lambda r, x: x + r.uniform())(rng.split(3), lib.numpy.zeros(3)))
    seen.append(lib.jit(lambda r: r.normal(1.0, 2.0, size=2))(rng))  # a generator passed to jit
    seen.append(rng._counter[...])
    return [np.asarray(v) for v in seen]


def test_stateful_rng_draws_jaxs_numbers():
    from jax.experimental import random as jax_stateful

    from funcgrad.experimental import random as stateful

    ours, theirs = _stateful_rng_program(stateful, funcgrad), _stateful_rng_program(jax_stateful, jax)
    for a, b in zip(ours, theirs, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    with pytest.raises(TypeError, match="requires an explicit seed"):
        funcgrad.jit(lambda: stateful.stateful_rng())()
    with pytest.raises(ValueError, match="cannot operate on split stateful generator"):
        stateful.stateful_rng(0).split(2).key()
    with pytest.raises(ValueError, match="Expected base_key to be a typed PRNG key"):
        stateful.StatefulPRNG(fr.PRNGKey(0), funcgrad.new_ref(0))
    assert isinstance(stateful.stateful_rng().uniform(), funcgrad.Array)  # seeded by NumPy's entropy


def test_draws_of_2_to_the_32_elements_or_more_are_staged_without_numpy():
    # A counter of 2**32 elements or more is 64-bit (JAX's iota_2x32_shape): staged, XLA computes
    # it, so eval_shape of a 1e12-element draw allocates nothing (random_lax_test's
    # test_eval_shape_big_random_array); the lowering's words equal the eager NumPy counter.
    from funcgrad.primitives.rng import iota_2x32_shape_p

    out = funcgrad.eval_shape(lambda k: fr.normal(k, (10**12,)), fr.PRNGKey(0))
    assert out.shape == (10**12,) and out.dtype == np.float64
    staged = funcgrad.jit(lambda: iota_2x32_shape_p.bind(shape=(3, 4, 5)))()
    eager = iota_2x32_shape_p.bind(shape=(3, 4, 5))
    for s, e in zip(staged, eager):
        np.testing.assert_array_equal(np.asarray(s), np.asarray(e))
    np.testing.assert_array_equal(np.asarray(eager[1]).ravel(), np.arange(60, dtype=np.uint32))


def test_keys_are_one_leaf_in_custom_rules_with_symbolic_zeros():
    # JAX's random_test test_keyarray_custom_vjp_symbolic_zeros: fwd gets a CustomVJPPrimal around
    # the key array (it was around the key's uint32 data, inside a key array), bwd and a custom_jvp
    # rule a float0 SymbolicZero of the keys' shape (was a NumPy float0 array)
    from funcgrad.custom_derivatives import CustomVJPPrimal, SymbolicZero

    seen = []

    @funcgrad.custom_vjp
    def f(x, state):
        return state

    def fwd(x, state):
        seen.append(state[1])
        return funcgrad.tree_util.tree_map(lambda p: p.value, state), None

    def bwd(_, ct):
        seen.append(ct[1])
        return ct[0], ct

    f.defvjp(fwd, bwd, symbolic_zeros=True)
    keys = fr.split(fr.key(1), 3)
    assert float(funcgrad.grad(lambda t: f(t, (8.0, keys))[0])(3.0)) == 1.0
    assert type(seen[0]) is CustomVJPPrimal and seen[0].value.shape == (3,) and not seen[0].perturbed
    assert type(seen[1]) is SymbolicZero and seen[1].shape == (3,) and seen[1].dtype == funcgrad.dtypes.float0

    @funcgrad.custom_jvp
    def h(x, k):
        return x * 2.0

    def h_jvp(primals, tangents):
        seen.append(tangents[1])
        return h(*primals), tangents[0] * 2.0

    h.defjvp(h_jvp, symbolic_zeros=True)
    assert float(funcgrad.grad(h)(1.0, fr.key(0))) == 2.0
    assert type(seen[2]) is SymbolicZero and seen[2].shape == () and seen[2].dtype == funcgrad.dtypes.float0


@pytest.mark.parametrize("impl", ["threefry2x32", "rbg"])
def test_bits_of_uint64_in_32_bit_mode_draws_32_bits_as_jax(impl):
    # (the fuzzer) JAX canonicalizes bits' dtype: uint64 in 32-bit mode draws uint32 bits, the same
    # as dtype=uint32 (funcgrad drew 64 bits and truncated them, or kept uint64 for rbg)
    from jax._src import config as jax_config

    with jax_config.enable_x64(False):
        want = jax.random.bits(jax.random.key(3, impl=impl), (3,), dtype=np.uint64)
    previous = funcgrad.config.jax_enable_x64
    funcgrad.config.update("jax_enable_x64", False)
    try:
        got = funcgrad.random.bits(funcgrad.random.key(3, impl=impl), (3,), dtype=np.uint64)
    finally:
        funcgrad.config.update("jax_enable_x64", previous)
    assert got.dtype == want.dtype == np.uint32
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_uniform_bounds_of_more_dimensions_than_shape_as_jax():
    # JAX reshapes the scaled draw to ``shape`` and takes its maximum with ``minval``: bounds of
    # shape (1,) with shape () give one (1,) draw (flashbax's sum tree vmaps so); randint,
    # truncated_normal, bernoulli refuse them as JAX's do
    import jax.numpy as jnp

    def program(r, np_):
        k = r.PRNGKey(0)
        one = r.uniform(k, (), np.float32, np_.array([0.25]), np_.array([0.5]))
        bounds = np_.linspace(0.0, 1.0, 4)
        vm = (jax if r is jax.random else funcgrad).vmap(r.uniform, in_axes=(0, None, None, 0, 0))
        many = vm(r.split(k, 3), (), np.float32, bounds[:-1, None], bounds[1:, None])
        return np.asarray(one), np.asarray(many)

    for a, b in zip(program(fr, funcgrad.numpy), program(jax.random, jnp)):
        assert a.shape == b.shape and np.array_equal(a, b)
    k = fr.PRNGKey(0)
    with pytest.raises(ValueError, match=r"parameter shapes \[\(3,\), \(\)\] must broadcast"):
        fr.uniform(k, (2, 1), np.float32, funcgrad.numpy.zeros(3), 1.0)  # (JAX fails to lower it)
    with pytest.raises(ValueError, match="randint: parameter shapes"):
        fr.randint(k, (), funcgrad.numpy.array([0]), 10)


_EAGER_BITS = {
    "gamma": lambda r, k: r.gamma(k, 0.5, (64,), np.float32),
    "loggamma": lambda r, k: r.loggamma(k, 0.5, (64,), np.float32),
    "beta": lambda r, k: r.beta(k, 0.5, 2.0, (64,), np.float32),
    "dirichlet": lambda r, k: r.dirichlet(k, np.array([0.5, 1.0, 2.0]), (16,), np.float32),
    "chisquare": lambda r, k: r.chisquare(k, 3.0, (64,), np.float32),
    "f": lambda r, k: r.f(k, 1.0, 2.0, (64,), np.float32),
    "t": lambda r, k: r.t(k, 3.0, (64,), np.float32),
    "exponential": lambda r, k: r.exponential(k, (64,), np.float32),
    "gumbel_high": lambda r, k: r.gumbel(k, (64,), np.float32, mode="high"),
    "laplace": lambda r, k: r.laplace(k, (64,), np.float32),
    "logistic": lambda r, k: r.logistic(k, (64,), np.float32),
    "cauchy": lambda r, k: r.cauchy(k, (64,), np.float32),
    "lognormal": lambda r, k: r.lognormal(k, 0.5, (64,), np.float32),
    "pareto": lambda r, k: r.pareto(k, 3.0, (64,), np.float32),
    "rayleigh": lambda r, k: r.rayleigh(k, 2.0, (64,), np.float32),
    "wald": lambda r, k: r.wald(k, 1.5, (64,), np.float32),
    "weibull_min": lambda r, k: r.weibull_min(k, 1.0, 2.0, (64,), np.float32),
    "generalized_normal": lambda r, k: r.generalized_normal(k, 1.5, (64,), np.float32),
    "ball": lambda r, k: r.ball(k, 3, 2, (16,), np.float32),
    "multivariate_normal": lambda r, k: r.multivariate_normal(
        k, np.zeros(2, np.float32), np.array([[2, 0.5], [0.5, 1]], np.float32), (8,), np.float32
    ),
}


@pytest.mark.parametrize("name", sorted(_EAGER_BITS))
def test_eager_draws_are_jaxs_bits(name):
    # (session 21's random fuzzer) JAX jits every sampler, so an eager draw is one compiled program;
    # funcgrad's ran op by op, its log/exp/log1p/tan NumPy's: float32 draws differed from jax's in
    # the last bits (gamma 13 of 64, gumbel 26, cauchy 24, pareto 26, ...). Typed and raw keys take
    # turns over the samplers (the key's unwrapping is one path for all of them; each kind is an
    # eager program of its own, so both for every sampler doubled the compiles: 16.6 -> 10 CPU-s).
    fn = _EAGER_BITS[name]
    make = ("key", "PRNGKey")[sorted(_EAGER_BITS).index(name) % 2]
    want = np.asarray(fn(jax.random, getattr(jax.random, make)(42)))
    got = np.asarray(fn(fr, getattr(fr, make)(42)))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
