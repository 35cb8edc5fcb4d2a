"""The differential fuzzer: random small programs run on funcgrad and on jax (the oracle), compared.

A *case* is a program of 1-6 operations over 1-3 input arrays, drawn from two tables -- the primitive
table (op_db, through the ``funcgrad.lax`` function of each elementwise primitive entry) and a table
of public surface functions (``ops.SURFACE``: ``numpy``, ``lax``, ``nn``, ``scipy.special``,
``linalg``, ``fft``, with their argument constraints) -- under a stack of 0-3 transformations (jit,
vmap, grad, value_and_grad, jvp, vjp, jacfwd, jacrev, hessian). A case *is* its source text
(``programs.Case.script``): the runner executes that text once with funcgrad's modules bound to the
names ``T, np, lax, nn, special`` and once with jax's, so the reproducer printed for a failing case is
exactly what ran.

Modules, one job each:

- ``opbase``: ``Op`` (an operation's source template) and the parameter rules the tables use;
- ``ops``: the operation tables (surface functions, and the op_db bridge) and their argument rules;
  ``ops_extra``: the newer part of the surface table (control flow under transformations, nested
  custom derivatives, checkpoint policies, more linear algebra and fft, norms of every ord, segment
  reductions, reduce_window, conv_general_dilated, clamped dynamic slices, scatters with duplicates,
  searchsorted's methods, size= set functions); ``ops_more``: session 7's (boolean masks, casts of
  NaN/inf, wide shifts, complex functions under derivatives, einsum/tensordot/pad/roll/clip forms,
  linspace/arange dtypes, float0 tangents, has_aux/argnums, jacobians of pytrees; long run only);
  ``ops_edges``: session 8's (scipy.stats, the rest of scipy.special and scipy.linalg, reverse
  cumulative ops, transformations inside programs; long run only); ``ops_struct``: session 9's
  (jax.random from keys made every way, under vmap/jit and differentiated; pytrees in and out,
  static/donated/keyword/scalar arguments, has_aux, argnums, allow_int; long run only); ``ops_mix``:
  session 10's (transformations of transformations inside programs, vmap's named axes and
  collectives and axes beyond 0, linear algebra per row and on stacks, fft/convolution/pooling
  forms, the lax API's corners, explicit dtype mixes; long run only); ``ops_wide``: session 11's
  (reductions with all their keywords, narrow dtypes with weak scalars, ``.at[]`` modes, keys;
  long run only); ``ops_comp``: session 12's (stacks of transformations inside programs over loop
  and custom-rule bodies with mixed dtypes and weak scalars, dots and convolutions with
  ``precision``/``preferred_element_type``, generic ``reduce_window`` of narrow and integer
  dtypes, typed loop carries, ``linearize`` then ``linear_transpose``, ``pure_callback``'s vmap
  methods; long run only); ``ops_models``: session 13's (whole small models -- MLP, CNN, attention,
  RNN/GRU over ``scan`` -- under the transformations of training, sorting with NaN and ties,
  gradients at kinks, integer edges and NumPy scalars, float16/bfloat16 reductions, complex,
  batched and singular linear algebra, ``jax.random`` draws of every distribution; long run
  only); ``ops_prog``: session 14's (random *programs*: chains of 3-8 operations over two operands
  with broadcasting, casts to every dtype, NumPy and Python scalars, ``.at[]`` modes, under 1-3
  random transformations -- jit, grad with argnums/has_aux/allow_int, jvp, vjp, jacobians,
  hessian, vmap with random axes and pytree in_axes, checkpoint, custom_jvp/custom_vjp,
  cond/switch/while/fori/scan/map; each step checked by jax's abstract evaluation as drawn; session
  17's ``progy.*`` programs: dtype mixes, half-precision reductions, reduction keywords, einsum
  subscripts, norms of every ord, jax.nn keywords, random samplers' gradients; session 18's
  ``progz.*`` (steps in ``ops_progz``): jax.scipy's special functions, stats distributions, linalg,
  signal/integrate/optimize, set functions with size=, sorting/searchsorted with NaN and ties,
  histogram/bincount/digitize/interp/polynomials, cumulative ops with dtype=, nan-reductions, fft
  norms, under pytree jit/grad/vmap (dict in_axes, pytree out_axes), stop_gradient of pytrees,
  custom rules with nondiff_argnums, hessians and holomorphic jacobians of pytree outputs; session
  19's ``progq.*`` (steps in ``ops_progq``): jax.numpy's unusual keywords (where=/initial=/keepdims/
  dtype=/mode=), integer and unsigned wraps and shifts, weak scalars in long expressions, indexing
  and ``.at[]`` with every mode, scan with reverse/unroll, while/fori loops under vmap with batched
  predicates, typed random keys under vmap/jit, linalg of stacks, jax.nn's attention/one_hot/
  logsumexp keywords, complex programs under holomorphic and conjugate gradients; long run
  only);
  ``ops_shard``: session 15's (random chains sharded on 8 devices -- ``jit`` with
  random in/out shardings, ``with_sharding_constraint``, ``device_put``, ``shard_map`` with
  collectives and ``check_vma`` both ways, explicit meshes with ``reshard`` and ``out_sharding=``
  -- under ops_prog's transformations, the result compared with its sharding; specs drawn wrong
  must raise the same exception type; needs
  ``XLA_FLAGS=--xla_force_host_platform_device_count=8``, else nothing is drawn; long run only);
  ``ops_lax``: session 16's (``jax.lax`` primitives with random parameters: dot_general's dimension
  numbers, conv_general_dilated's layouts/strides/padding/dilations/group counts, gather/scatter
  dimension numbers and modes, reduce_window, dynamic slices out of range, pad, sort, top_k,
  cumulative ops, bit and integer ops, special functions; parameters jax refuses run under
  ``_err``, both sides raising the same type; long run only, ``FUNCGRAD_FUZZ_ONLY=laxp.``), with
  ``ops_lax2``: session 17's draws for it (control flow with pytree carries, associative_scan,
  reduce_precision's bits, convert_element_type between every pair of dtypes, lax.linalg with every
  flag, lax.fft's types and lengths, ragged_dot, collectives under vmap, integer wraps, complex
  branch cuts with signed zeros, nextafter and half-precision functions bit for bit;
  ``FUNCGRAD_FUZZ_EAGER=1`` draws no jit at all, so funcgrad's eager interpreter computes). The long
  run's programs also return pytrees (dict/tuple/namedtuple/list, None leaves) and draw bfloat16
  under derivatives, complex64 and uint16;
- ``ops_quad``: session 20's four-way table (not a program table: each drawn call runs eagerly and
  under ``jit``, in 64-bit and JAX's 32-bit mode, then its ``jvp``/``vjp`` in float64): ops_lax's
  random-parameter calls and the lax calls they do not draw (integer_pow's negative exponents,
  iota, split, concatenation of empty operands, reductions over chosen axes, approx_max_k,
  scatter_apply, multi-key sorts with NaN and -0, reduce_window with negative padding), and
  jax.numpy at edge inputs (empty/0-d/size-1, NaN/inf/-0, huge/tiny, integer extremes: linalg, fft,
  nan-reductions, quantiles, histograms, interp/unwrap/convolve/polynomials/trapezoid/cross/kron);
  ``python -m _fuzz.ops_quad --seed N --calls K --pool edge|lax|lax_more`` from tests/integration;
  session 21's pools for it: ``sig`` (``ops_sig``: every public function of jax.numpy/linalg/fft,
  jax.nn and jax.scipy.special, its arguments drawn from its signature and docstring, with arrays
  of every dtype and Python scalars; ``sig:new`` the functions no older table names),
  ``random``/``index``/``half`` (``ops_quad_more``: every jax.random sampler bit for bit with edge
  parameters, raw and typed keys, vmap over keys; ``x[idx]`` and ``.at[]`` with every mode;
  float16/bfloat16 programs and complex branch cuts);
- ``programs``: the hypothesis strategies (inputs with zeros, ties, empty and size-1 dimensions,
  NaN/inf where the operations are defined there; programs; transformation stacks) and ``Case``;
- ``compare``: running both sides and comparing them (dtype-aware tolerances, exact NaN/inf positions,
  dtypes and weak types);
- ``divergences``: the ONE list of documented differences from jax, rendered into
  docs/differences_from_jax.md (64-bit mode's NumPy-2 rules among them; in JAX's 32-bit mode
  funcgrad follows JAX's dtype rules, and nothing about dtypes is excused there).

This package is test support: it imports jax (the oracle) and is never imported by funcgrad.
"""
