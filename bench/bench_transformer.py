"""A GPT-style training step: funcgrad vs jax vs torch (eager and ``torch.compile``).

Run: ``python bench/bench_transformer.py`` (``--quick`` for fewer rounds and repeats; ``--cases``
to pick some of ``step,eager,per_example``).

The model (float32, 3.3 M parameters): a decoder with vocabulary 256, context 128, width 256,
4 heads, 4 layers, pre-LayerNorm, a GELU (tanh form) MLP of width 1024, causal softmax attention
written with ``numpy`` ops (no fused attention), a separate output projection and the mean
next-token cross-entropy; batch 8. Every library starts from the same weights (NumPy's RNG), and
the losses and gradient norms are checked to agree (float32 tolerance) before anything is timed.

Rows:

- ``step``: ``jit(value_and_grad(loss))`` plus an SGD update written in tree ops, inside the same
  jitted function, steady state (torch: ``loss.backward()`` plus ``torch._foreach_add_``, eager,
  and with ``torch.compile`` of the loss, whose backward AOTAutograd compiles too);
- ``first call``: that step's first call in a fresh process, tracing and compilation included
  (the imports not);
- ``eager grad``: ``grad(loss)`` without ``jit`` (torch: ``loss.backward()``);
- ``per-example``: the 8 sequences' gradients, ``jit(vmap(grad(loss_single)))`` (torch:
  ``torch.func.vmap(torch.func.grad(...))``, eager).

``funcgrad+malloc`` is funcgrad with ``funcgrad.config.update("funcgrad_malloc_tuning", True)``
(NOTE: [eager allocations], an explicit process-wide opt-in). XLA's CPU runtime allocates each
call's temporaries (here about 120 MB of saved activations) and outputs with malloc, which glibc
serves from fresh ``mmap`` pages, so jax (and funcgrad before session 10) page-fault them in on
every call (about 30k minor faults and 55 ms of system time per jitted step). funcgrad now
serves XLA's buffers of 1 MiB and more from its own cache, scoped to jaxlib's allocations and on
by default (NOTE: [XLA's buffers kept between calls] in ``xla_bridge/buffer_cache.py``), so the
opt-in now changes only the eager rows' NumPy allocations. The column ``+malloc / this`` gives
its ratios to the peers.

Every measurement runs in its own subprocess (one library per process), the libraries taking
turns (round-robin) so that load on the shared machine hits them alike; each figure is the median
over rounds of each round's median. ``--threads 1`` runs every worker single-threaded (BLAS,
OpenMP, torch's intra-op pool, XLA's Eigen pool, pinned to one core): on a loaded shared machine
the libraries' thread pools (torch's spinning OpenMP workers above all) measure the load more
than the work. The output starts with ``uptime``'s load averages: this
workload is compute-bound, so read the ratios, not the absolute times, on a loaded machine. The
``... cpu`` rows give each worker's median CPU time per call beside the wall time: with
``--threads 1`` it leaves out the time a worker waited for a core.

Where the time goes (measured with ``--threads 1`` on the shared 2-core machine, load 14-17):

- Session 21 (load 16-20 all session). The per-example row, settled with numbers
  (``python bench/per_example_bound.py``, one thread, at load 17.6-18.5; ``--threads 1``'s
  environment): it is at its floor on this core. The program's 75 products
  (``make_jaxpr(vmap(grad(loss_single)))``, 2 B M N K each; jax's program has the same) do 21.34
  GFLOP: the 34 shared-weight GEMMs 13.15, the 17 per-example weight gradients 6.58, the 24
  attention products 1.61. XLA's ``cost_analysis()`` of the optimised program: 21.67 GFLOP and
  1462 MB accessed, 437 MB of it the products' operands and results, so 1025 MB of elementwise,
  reduction and copy traffic (jax's program: 21.91 GFLOP, 1809 MB). The core (AMD EPYC Zen 4)
  runs at 3.63 GHz (a dependent-add loop, CPU time) and executes AVX-512 FMAs on two 256-bit
  pipes: 32 float32 FLOP a cycle, 116 GFLOP/s peak (the 252 GFLOP/s of sessions 13-18 was an
  Intel core with two 512-bit FMA units). At the program's own shapes (best of 12 calls, a jitted
  ``lax.dot_general`` with operands on the device, and OpenBLAS's sgemm through ``np.matmul``):
  XLA 65-111 GFLOP/s (YNNPACK's shared-weight GEMMs 92-111; Eigen's per-example products 76-96;
  the attention's 65-100), OpenBLAS 73-104: every engine at 60-97% of the peak, and the products
  take 223.7 ms at the better of the two rates per shape (230.4 at XLA's; 184 at the peak). An XLA
  loop fusion streams 29.7 GB/s here (``a * b + a`` over 16 MB operands), so the other 1025 MB take
  >= 35 ms: the bound is 258.2 ms (219 at the theoretical peak), and funcgrad's program measures
  265.9 ms in the same process, 3% above it. ``--cases per_example --threads 1 --rounds 2``: 0.58x
  (270.7 against 464.3 ms CPU; rounds 275.8/435.3 and 265.7/493.3; torch 439.6; load 16.5-19.0).
  0.5x jax is 232 ms, below the bound at the attainable rates: on this core the goal holds only
  where jax's call costs more than twice funcgrad's floor (its fresh temporaries' page faults,
  NOTE: [XLA's buffers kept between calls], and its 350 MB more traffic are ~200 ms of its time,
  not enough). The 3% left is mostly the Eigen per-example products (76 against OpenBLAS's 87
  GFLOP/s on [8, 128, 1024]^T x [8, 128, 256]: ~3 ms a call) and one attention product (65
  against 85: ~1 ms); the ways around them that the notes below list (copies, padding, YNNPACK
  forms, oneDNN, every XLA flag) stand, and no XLA form reaches OpenBLAS's rate on them.
  The eager row: the cached value-and-gradient program of eager ``grad`` (NOTE: [eager grad
  program cache]) ran equation by equation whenever an input carried a device buffer -- and the
  first, uncached call leaves one on every parameter (its products run compiled and keep the
  transfer) -- so every later call here took that route (no buffer reuse or pool, 9k-121k minor
  faults a call), while the same call on fresh host parameters took the NumPy interpreter with
  NumPy's products (other bits in 3.2 M of the 3.3 M gradient values). Now only a placed operand
  (committed, or over several devices) takes that route, and the interpreter compiles the large
  products as EvalTrace does (NOTE: [cached programs on placed values] in
  ``funcgrad/kernel/numpy_plan.py``): the same bits on every route, and 434/458/805 -> 405/402/385
  ms a call (interleaved fresh-process pairs, load 17-20). Where the ~385 ms go (each interpreter
  step timed): the 75 products ~280 (at the rates above, ~30 of it copying NumPy operands into
  XLA's buffers: NumPy aligns to 16 bytes and XLA's CPU client aliases only 64-byte-aligned
  arrays, and the attention's operands are transposed views), multiplies 26, additions 15,
  reductions 10, divisions 9, the rest ~20, the interpreter and the recording ~11. NumPy's
  products in the interpreter would be ~40 ms faster at this load (OpenBLAS and XLA run these
  shapes at the same rate here) but give other bits than jax's and the uncached call's: not
  taken. Tried, not kept: the interpreter's pooled buffers allocated at 64-byte boundaries and
  such operands handed to XLA in place (``HostBufferSemantics.ZERO_COPY``), 378/384/364 against
  393/382/378 ms (interleaved fresh-process pairs, load 12-15): 2-4%, within the noise, since the
  parameters, the transposed views and the unpooled results are still copied. The full
  ``--threads 1 --rounds 2`` run at b4bf0e21 (load 14.5-18.6): step 0.80x
  torch.compile (259.6 against 323.9 ms CPU; jax 493.9, torch 398.7), first call 0.63x jax (12.7
  against 20.1 s wall), eager 0.93x torch (379.7 against 409.6 ms CPU; rounds 394.1 and 365.2;
  jax 676.8), per-example 0.59x jax (255.8 against 436.0; torch 423.4).
- Session 19 (no change to this benchmark's programs; the per-example row still not firm). The
  machine was loaded all session (load 11-18 on the 2 cores: every engineer's test runs) and the
  CPU times were about twice the quiet ones: YNNPACK's GEMMs ran 2.1-2.5x slower (1024x1024x256 in
  5.0 ms, 107 GFLOP/s) while the memory-bound fusions did not, and funcgrad's program is ~90%
  GEMMs under that load, so the ratio worsens with it: ``--cases per_example --threads 1 --rounds
  5`` 0.57x (261.9 against 457.9 ms CPU, load 14.3-17.7; one funcgrad round failed on a shared
  working tree's half-made edit). From a clean clone of ``main`` (a6c7baeb): ``--cases per_example
  --threads 1 --rounds 5`` 0.61x (258.8 against 426.6 ms CPU; rounds 0.61x, 0.53x, 0.64x, 0.60x,
  0.61x: funcgrad 256.6-270.4, jax 418.8-487.1; load 13.6-17.8); the full ``--threads 1 --rounds
  2`` at load 12.0-15.3: per-example 0.54x (262.8 against 488.7; rounds 0.54x, 0.54x), step 0.82x
  torch.compile (251.9 against 307.7 ms CPU; jax 477.7: the load doubled funcgrad's step, 126.1 in
  session 18, and torch.compile's by 14%), first call 0.81x jax (13.1 against 16.2 s wall), eager
  0.92x torch (389.2 against 422.3). At the session's end on a quiet machine (load 0.6-0.9;
  ``--cases per_example --threads 1 --rounds 3``): 0.62x (246.2 against 396.8 ms CPU), and the
  session's start commit (3fd4da3e) in the same conditions 0.58x (251.0 against 429.1): funcgrad's
  time is unchanged, and both sides take 1.7-2.1x session 18's quiet times (118.3 and 233.8 ms) on
  this session's machine (an AMD EPYC Zen 4), where the ratio sits higher.
  Measured and not kept (funcgrad's per-example program in fresh processes pinned to one core
  under ``chrt -f 1``, so that preemption by the load leaves the per-call times; 12 calls each;
  every output compared bit for bit with the default program's). XLA options (``XLA_FLAGS``; CPU
  ms per call against 237.5-247.9 for the default in the same runs): ``xla_cpu_opt_preset``
  FAST_RUNTIME 240.0, FAST_COMPILE 241.3; ``xla_cpu_scheduler_type`` CONCURRENCY_OPTIMIZED 243.0,
  MEMORY_OPTIMIZED 244.2; ``xla_cpu_prefer_vector_width=512`` 242.2 (the GELU's tanh fusions 2.1
  -> 1.6 ms a call, the rest level, the same bits); ``xla_cpu_max_isa=AVX2`` 242.7;
  ``xla_cpu_copy_insertion_use_region_analysis`` 242.4; ``xla_cpu_enable_fast_min_max=false``
  241.3; ``xla_cpu_experimental_xnn_graph_fusion_mode=XNN_GRAPH_FUSION_MODE_GREEDY_SLINKY`` 241.3;
  ``xla_cpu_use_onednn`` with ``xla_cpu_experimental_onednn_fusion_type=dot`` 243.9 (the
  transposed-left-operand dots become oneDNN fusions: the same bits, no faster);
  ``xla_cpu_experimental_ynn_fusion_type`` ``+eltwise`` 262.6, ``-reduce`` 238.5 (other bits);
  ``xla_cpu_use_fusion_emitters=false`` 254.8; ``xla_cpu_experimental_enable_tiling_propagation``
  255.4; ``xla_allow_excess_precision=false`` 244.5: level or slower. ``use_multi_output_fusion``,
  ``flatten_after_fusion``, ``small_call``, ``disable_new_fusion_emitters`` and
  ``disable_loop_unrolling`` are ``xla_cpu_`` strings in the library but no flag ("Unknown flag in
  XLA_FLAGS"); ``xla_cpu_enable_concurrency_optimized_scheduler`` is "[Deprecated, do not use]".
  The per-example Eigen dots as an explicit transposing copy of the left operand plus YNNPACK's
  dot (operands as parameters, fastest of 40 calls; B=8, K=128; [M, N], XLA's dot -> the copied
  form): [256, 1024] 5.46 -> 5.55 ms, [256, 768] 3.83 -> 4.15, [256, 256] 1.47 -> 1.29, [1024,
  256] (padded today) 6.72 -> 6.33; the output transposed instead (YNNPACK's [B, N, M] product,
  the small operand copied, then a transpose, behind barriers) 7.64, 5.50, 1.47, 8.04; with the
  GELU producing the [1024, 256] dot's operand and feeding the forward GEMM, 12.69 -> 13.27 (XLA
  fuses the GELU into the transposing copy, as in sessions 11-13). In the program, moving the dots
  whose small left operand has M >= N to YNNPACK (the attention output's and the head's [8, 256,
  256], the attention's dV [8, 4, 128, 64]): the dots level (1.5 and 0.9-1.0 ms each on either
  engine) and 3 ms of transposing copies more (thunks 239.1 -> 240.0 ms, load 14): not kept. A 2-D
  convolution form of the weight gradient ([1, T, M, 1] with a [T, 1, 1, N] kernel, which
  YNNPACK's convolution would take) is rewritten by XLA into the same copy and dot. oneDNN's
  fusions of the transposed dots alone: [256, 256] 1.27 ms, the others slower than Eigen. The
  per-example program has no batched dot an unbatched one could replace (its input gradients are
  already [1024, K] GEMMs with the shared weights; each batched dot is one example's weight
  gradient). The memory-bound fusions: the GELU's tanh is written once (the backward reads it),
  the GELU twice (for the forward GEMM, and padded for the per-example dot: 4 MB each a layer);
  the GEMM could read the padded copy against a zero-padded weight (K=1040), one write less (~0.6
  ms a call, 0.5%), but only through a rewrite across equations: not attempted. The unbatched
  sibling of the copied form is a gain and was kept (NOTE: [short transposed left operands copied
  on the CPU] in ``xla_bridge/rules/dot.py``): a 2-D [K, M]^T x [K, N] with K <= 256 and M >= 512
  copies its left operand for YNNPACK (0.65-1.00x alone; a GELU MLP's training step 3-5% less CPU
  time); this benchmark's step and per-example programs have no such dot (their weight gradients
  contract 1024 rows) and compile to the same HLO.
- Session 18 (the per-example row still at the line; run from a clean clone of ``main``):
  ``--cases per_example --threads 1 --rounds 3`` 0.49x (134.8 against 274.0 ms CPU; rounds 0.49x,
  0.49x, 0.47x; load 17.3-18.3) and 0.50x (126.4 against 254.6; rounds 0.44x, 0.50x, 0.51x; load
  14.4-19.7); another run, with a test process of this session beside it, 0.55x (140.0 against
  253.9; funcgrad's rounds 134.6-150.2 ms, jax's 248.7-341.8: the ratio follows the load); at the
  session's start on a quiet machine (load 1.1-1.2, ``--rounds 5``) 0.51x (125.0 against 243.0).
  The full ``--threads 1 --rounds 2`` run at load 15.6-19.3: per-example 0.51x (130.3 against
  255.8 ms CPU; rounds 0.51x, 0.51x), step 0.47x torch.compile (126.1 against 268.8), first call
  0.60x jax (10.3 against 17.1 s wall), eager 0.82x torch (266.3 against 323.3). One change: a
  transpose feeding a batched dot is folded into the dot's dimension numbers by the lowering when
  the dot then reads [B, M, K] x [B, K, N] or [B, N, K] (NOTE: [transposes folded into batched
  dots] in ``xla_bridge/rules/_folded_transposes.py``). XLA's CPU compiler folds transposes only
  into unbatched dots, so the scores' ``q @ swapaxes(k)`` got k^T as a transposing copy out of the
  qkv projection (0.25 ms a layer, against 0.05 for q's and v's plain slices) and the input
  gradient dS @ k read that copy as [B, N, K]; k is now read in place (as [B, N, K] by the scores,
  [B, K, N] by dS @ k): the copies 2.1 -> 1.2 ms a call, dS @ k 0.39 -> 0.33 ms a layer, thunks
  125.0/123.3 -> 123.2/124.1 ms (two profiles each, load 15-17), CPU time 133.9 -> 132.6 ms
  (medians of six interleaved fresh-process pairs, lower in four, load 18-20): about 1% (the
  step's attention has the same form; not measured apart). Checked, nothing general to take: the
  causal softmax's jaxpr (``make_jaxpr(vmap(grad(...)))``) is JAX's equation for equation (the
  max's JVP is JAX's rule: an equality mask, its float count, a division; XLA already turns the
  mask's multiply into a select; the -1e9 fill is a select, no broadcast is materialised by
  funcgrad's emitter); writing the scores as an einsum (k as [B, N, K] in both dots) made JAX's
  transpose rule give dk as [B, T, 64], an Eigen dot 0.52 against 0.40 ms a layer, so the fold
  keeps the program's own dk^T product. Fusions that write more than the math needs: YNNPACK's
  reduce fusions take the broadcast of their result in as their root whenever that broadcast has
  two users (XLA's library rewriter fuses a consumer only when it is the sole user, and
  ``IsBroadcastOpSupportedByYnn`` accepts any order-preserving broadcast): the softmax's max and
  the max-JVP's count are written as [8, 1, 4, 128, 128] broadcasts (0.165 and 0.23 ms a layer,
  ~1.6 ms a call), in jax's program alike, and no lowering keeps them out (XLA's CSE merges
  duplicate broadcasts). The 20 costliest other fusions by time and bytes (``xla_op_profile``, 20
  calls, load 10-14): the GELU's tanh (0.44 ms a layer, 8 MB at 19 GB/s: compute-bound, XLA's
  256-bit tanh), its backward (0.42, 40 GB/s), the padded dot's slices (0.34, 50 GB/s), the GELU
  written for the GEMM and padded for the per-example dot (0.19 + 0.18, 64-75 GB/s), the qkv
  cotangent's concatenation and its three transposing copies (0.14 + 0.115 + 0.12 + 0.09, 43-69
  GB/s), the k^T copies above (16 GB/s, now gone): each memory-bound at its bytes or tried before
  (sessions 13, 16, 17). Operands as parameters, the fold is level for [B, M, K] x [B, N, K] of
  32x128x64x128, 8x1024x256x256 and 4x512x512x512, and 1.25 -> 0.95 ms for 8x64x64x2048. The
  per-example Eigen dots: no angle found beyond those the notes below list. What is left is XLA's:
  the broadcasts above and the duplicated GELU and qkv copies need multi-output fusion, the Eigen
  dots a YNNPACK dot taking a transposed left operand (a newer jaxlib).
- Session 17 (the per-example row still not firm; run from a clean clone of ``main``, since a
  shared working tree's half-made edits failed some workers): ``--cases per_example --threads 1
  --rounds 3`` 0.47x (132.3 against 283.5 ms CPU; rounds 0.45x, 0.51x, 0.47x; load 7.7-10.1)
  and 0.50x (142.5 against 283.5; rounds 0.45x, 0.52x, 0.50x; load 13.5-18.6); the full
  ``--threads 1 --rounds 2`` run at load 8.5-16.2: per-example 0.51x (132.7 against 262.0),
  step 0.48x torch.compile (130.0 against 271.0), first call 0.45x jax (9.2 against 20.5 s
  wall), eager 0.79x torch (269.4 against 340.7). One change:
  ``jnp.matmul`` lowers batch axes as JAX's (``funcgrad/numpy/contractions.py``: size-1 batch
  axes squeezed, no operand broadcast). ``vmap`` of ``x[None] @ w`` kept the unit axis as a batch
  dimension of the dot, which XLA's CPU layout assignment moved (a ``{..., 0, 1}`` layout) and
  copied back to row-major; that also kept the attention's ``dO V^T`` product out of the
  YNNPACK fusion of the softmax gradient that jax's program forms: 8 copies and 8 standalone dots
  fewer, thunks 124.1 -> 122.8 ms (fastest of 10 calls, load 10; CPU-time pairs level within the
  noise). Checked, nothing to take: memory (no minor fault per call: 81,051 -> 81,142 faults
  over 40 more calls, 0.26 s of system time in all, against jax's ~21.6k faults a call;
  ``perf``: kernel 1.1%, libc 1.6% -- its memmove inside YNNPACK's packing --, Python 1%: the
  buffer cache of session 10 keeps XLA's temporaries and outputs, and no result is copied on the
  way out); the attention's optimised HLO beside jax's (the same fusions, but for the unit axis
  above); ~38 context switches a call (each Eigen dot handed to the runtime's worker thread),
  negligible. Tried, not kept: the transpose of a concatenation of cotangent pieces (NOTE: [sums
  of zero pads]) lowered as the concatenation of the transposed pieces, so that the qkv cotangent
  is written once in [B, T, 768] order: XLA then copies the concatenation into each of its three
  consumers, each reading the pieces transposed (concatenation fusions 4.5 ms against 1.7 for one
  concatenation and three transposing copies). Thunks now (122.8 ms): the 34 shared-weight GEMMs
  57.5 ms on YNNPACK, the 17 per-example weight gradients 34.8 ms on Eigen (transposed left
  operand: [8, 256, 1024] 3.0 ms each, ~180 GFLOP/s; the padded [8, 1040, 256] 2.7; [8, 256, 768]
  1.9; [8, 256, 256] 0.8), the attention ~15 ms (its 24 dots ~8), the other fusions and
  reductions ~15: at these engines' speeds the floor is ~110 ms, and the ratio moves with jax's
  CPU time (260-312 ms in this session's rounds) more than with funcgrad's (131-144).
- Session 16 (no change kept; the per-example row still at the line): ``--cases per_example
  --threads 1 --rounds 3`` 0.52x (127.4 against 243.8 ms CPU, load 0.7-12.2) and 0.50x (137.2
  against 273.6, load 9.7-12.0); the full ``--threads 1 --rounds 2`` run at load 10.7-16.5:
  per-example 0.49x (136.6 against 280.3), step 0.45x torch.compile (130.9 against 292.8),
  first call 0.77x jax, eager 0.81x torch. The program is at its floor for this XLA: the core
  runs at 3.94 GHz (a dependent-add loop), so its float32 peak is ~252 GFLOP/s (two 512-bit FMAs
  a cycle), and YNNPACK's 34 shared-weight GEMMs run at 233-244 (59.8 ms of thunks, 97% of
  peak; NumPy's OpenBLAS reaches 122 and torch's 105 on these shapes). Thunks (fastest of 8
  calls, 120.7 ms): those GEMMs 59.8, the 17 per-example Eigen dots 33.6 (6.6 GFLOP at 185-212
  GFLOP/s: the fc gradients [8, 256, 1024] 2.9 ms each, whose right operand's rows are 4 KiB,
  the padded projection gradients 2.65, qkv 1.9, attention-out and head 0.8), attention 16.2 ms
  over 97 operations (its 24 dots 9.2 at ~175 GFLOP/s, the rest softmax, masks, the max's JVP
  mask, q/k/v slicing and the cotangent's concatenation), everything else ~11. No minor faults
  and no system time per call (getrusage over 5 calls); Python's collector never runs in the
  timed loop. So 0.5x firmly (~115 ms) needs ~10% off a program whose GEMMs are at peak:
  Eigen's per-example dots at YNNPACK's speed would give ~6 ms, the attention's elementwise
  passes a few. Measured and not kept: XLA's remaining CPU options in jaxlib 0.10.2 (probed by
  compiling with each name in ``compiler_options``: ``xla_cpu_use_multi_output_fusion``,
  ``xla_cpu_disable_tiled_emitter``, ``xla_cpu_flatten_after_fusion`` and the other strings in
  the library are "No such compile option"; what exists was tried in sessions 10-14 or is a
  collective timeout); ``--xla_cpu_experimental_ynn_fusion_type=individual_dot`` and
  ``individual_dot,reduce`` (XLA's own reductions, fusable with their producers): level or
  slower in five fresh-process pairs; ``xla_cpu_prefer_vector_width=512``: the GELU's tanh
  fusions 1.6 -> 0.9 ms, the rest level, the program within the noise (and reductions vectorised
  wider may sum in another order). Alone (funcgrad, operands as parameters, one core, best of
  40 calls, two runs): [8, 128, 1024]^T x [8, 128, 256] with the pad 3.1-3.8 ms (jax's plain
  Eigen dot 5.3, its fresh output's faults included); the left operand copied transposed for
  YNNPACK 4.1; YNNPACK's swapped product [8, 256, 1024] 2.4-2.6 ms, an 8 MB transpose alone
  0.73-0.77, but the two in one program 3.9 (XLA's transpose reads the product's fresh result
  from memory), so no form beats the pad.
  Layout copies that move only a unit dimension (vmap's ``xi[None]``: XLA's dot canonicalisation
  gives the result a {..., 0, 1} layout and copies it to row-major) exist but total 0.3 ms.

- Session 14 (no change kept; the per-example row still at the line): ``--cases per_example
  --threads 1 --rounds 3`` 0.51x (127.0 against 250.3 ms CPU; rounds 135.5/269.3, 125.0/241.4,
  127.0/250.3; load 0.3-6.6) and 0.47x (129.8 against 279.1; rounds 0.43x, 0.47x, 0.50x as
  jax's time fell from 302.7 to 251.1 ms; load 12.9-15.3); the full ``--threads 1 --rounds 2``
  run at load 11.2-11.9:
  per-example 0.51x (128.6 against 252.4 ms), step 0.49x torch.compile (128.3 against 263.3),
  first call 0.67x jax, eager 0.81x torch. Where the time goes, steady state (``perf record``
  of 100 calls on one core after compiling, ``DNNL_JIT_PROFILE=2``): YNNPACK's GEMM kernel 45%,
  oneDNN's sgemm under the per-example Eigen dots 23%, Eigen's packing 4.8%, XLA's loop fusions
  ~15%, YNNPACK's transposes, reductions and elementwise kernels ~5%, memmove 1.2%; thunks
  (``xla_op_profile``'s timing, fastest of 12 calls, load 12.8): 114.8 ms, YNNPACK 63.9 (the
  shared GEMMs at ~245 GFLOP/s), the per-example Eigen dots 32.6 (6.6 GFLOP, ~200 GFLOP/s),
  attention dots 3.6, loop fusions 14.8 (jax's: 92.9, its fresh buffers' page faults included). The loop
  fusions move 829 MB at ~50 GB/s (233 fusions; jax 234, 859 MB): none is slow for its bytes;
  XLA's copies of cheap producers into each consumer (the GELU for the GEMM and for the padded
  dot, the qkv cotangent transposed three times, the layer-norm outputs as [1024, 256] and
  [8, 128, 256]) are 2.6 ms of them all, and the program does no recomputation (34 GEMMs: the
  forward and input-gradient products, once each). Angles evaluated and not kept:
  (1) the Eigen dot: XLA's dot thunk runs Eigen's contraction once per example, and tsl's
  contraction kernel skips packing only for an operand that is not transposed in Eigen's
  column-major view; of X^T G ([B, K, M] x [B, K, N]) only one operand can be, and which one
  fixes the result's layout. Measured alone (jax's program of the same ops, operands as
  parameters, one core, CPU ms, B=8, K=128, M=1024, N=256): plain 4.7-5.0, padded (the rule in
  ``xla_bridge/rules/dot.py``) 3.4-4.0, the swapped product alone (X read in place, no packing of
  it) 2.8-3.2 but its [N, M] result transposed back 4.6-4.95 (XLA's copy of 8 MB with 4 KiB rows:
  1.2-1.75 ms) and 3.4-4.2 with M padded before the swap (transpose and slice in one copy);
  X^T materialised for YNNPACK 4.8-5.2; pads of 8/16/32/64 floats within the noise (3.4-4.0).
  The M=256 dots (qkv, fc): X^T for YNNPACK saves 0.1 ms a dot alone (2.03 against 2.14 ms,
  2.85 against 2.93), less than the transposing layer-norm copy it needs in the program; padding
  N by 8 or 16 costs 0.5 ms (3.43-3.49 against 2.85). (2) Layouts: the entry layouts reach only
  parameters and results, and the per-example result must be row-major for the user.
  (3) A second, transposing GELU: XLA's loop emitter reads its inputs down 4 KiB columns (the
  3.5-8.8 ms of session 13) and nothing that survives to fusion keeps the producer out of a plain
  copy (no multi-output fusion in jaxlib 0.10.2). (4) The attention's dV = A^T dO dots
  ([32, 128, 128]^T x [32, 128, 64], Eigen, 0.53 ms each in the program): swapped behind a
  barrier, the transpose read by the concatenating consumer, 0.43 against 0.52 ms alone
  (swapping the other attention dot, M=64 < N, is slower: 0.56 against 0.39); ~0.4 ms a call
  in all, below what fresh-process pairs resolve here, so not added. What is left is a few ms
  spread over Eigen's packing (~6 ms), the pad and slice (~2 ms) and the duplicated producers
  (~2.6 ms), none of it reachable from one rule.
- Session 13 (``--cases per_example --threads 1 --rounds 3``, CPU time): 0.46x at the start
  (132.5 against 288.2 ms, load 0.3-12), 0.52x after the change below at load 16-18 (139.7
  against 267.9 ms), 0.45x in the full ``--threads 1 --rounds 2`` run at load 14-16 (140.3 against
  308.8 ms; 0.47x and 0.44x in the rounds; step 0.47x torch.compile, first call 0.59x jax, eager
  0.77x torch): still not firm; the ratio moves with the load more than with the change.
  Where the time goes, corrected: ``xla_op_profile.py`` timed XLA's Eigen dots to their hand-over
  to the runtime's worker thread (they run asynchronously even with one thread), so the Eigen
  share read 17% (19.7 ms); timed to their ``end:`` events (and in a ``perf`` profile of 120
  steady calls) the per-example weight gradients take 41-45 ms of ~141 (Eigen's packing 13.5 ms of
  it, oneDNN's sgemm kernel the rest at ~210 GFLOP/s), YNNPACK's GEMMs with the shared weights
  ~60 ms (13.2 GFLOP at ~225 GFLOP/s, this core's peak: every one of the 34 runs at 230), XLA's
  loop fusions ~16 ms, YNNPACK's reductions and attention dots ~7 ms. The floor is the 19.8 GFLOP
  at peak (88 ms) plus the memory-bound fusions (~25 ms), ~113 ms: a 10-15% cut is most of what
  is left. One change: Eigen packs the left operand of X^T @ dY by reading it down its columns,
  one row of M apart, and M=1024 float32 rows are 4 KiB, all in one L1 set; the MLP projection's
  four [8, 128, 1024] x [8, 128, 256] gradients now run on X padded to 1040 columns, the 16 extra
  result rows sliced off (NOTE: [rows of 4 KiB read transposed on the CPU]): 5.4 -> 3.3 ms for
  the dot, 0.34 ms for the slice, the pad taking the place of the copy of the GELU that XLA
  already made for the dot; per-example 2-5% less CPU time in eight interleaved fresh-process
  pairs (load 12-19). Tried, not kept (fresh-process pairs, ``perf``): every per-example dot on
  YNNPACK (its batched dots at K=128 run 190-215 GFLOP/s given a [B, M, K] operand): the dots
  drop from 41 to 32 ms, but XLA fuses each operand's producer into the transposing copy YNNPACK
  needs (layer-norm outputs 0.24-0.47 ms, the GELU 3.5-8.8 ms: its 4 KiB rows read with the GELU
  recomputed, against 0.35 ms for a plain copy) and the four GELU copies alone cost the gain;
  transposing the cotangent instead and the 8 MB result back (YNNPACK or Eigen's swapped product;
  XLA's result copy 1.1 ms) 0-2%, within the noise; nothing keeps the producer out of the copy
  (an optimization barrier is expanded and an identity ``reduce_window`` simplified before fusion;
  a transpose written as reshape-transpose-reshape escapes XLA's transpose folding, but jaxlib
  0.10.2's YNNPACK fusion does not take the transpose in); padding rows of 1 KiB (M=256) or the
  right operand: level; ``xla_cpu_experimental_enable_tiling_propagation``,
  ``xla_cpu_use_fusion_emitters=false``, oneDNN/XNNPACK fusion types and ``xla_cpu_use_onednn``:
  the transposed-operand dots stay Eigen, times level. jax's program runs the same Eigen dots on
  a copied [B, N, K] cotangent; its loop fusions move ~360 MB against funcgrad's ~300 MB.
- Session 12 (``--threads 1 --rounds 2``, CPU time, load 17-22): step 135 ms, 0.47x
  torch.compile's 286 ms and 0.43x jax's 312 ms; first call 0.59x jax (wall); eager 268 ms, 0.74x
  torch's 361 ms; per-example 147 ms against jax's 300 ms, 0.49x (0.47x and 0.52x in the two
  rounds); ``--cases per_example --rounds 3`` (load 15-20): 0.55x (143 against 261 ms;
  0.55x, 0.42x, 0.55x in the rounds: jax's CPU time ranged over 260-313 ms, funcgrad's
  131-144), so the goal is still not firmly met. One change: the cotangent of a value that also
  feeds a mean (every layer norm) ends in that mean's transpose, a broadcast, and XLA's
  fusion pass counts an addition with a broadcast operand as "effectively unary", free to
  duplicate: it copied the residual stream's whole chain of cotangent additions into each
  consumer (23 loop fusions of 15-69 operands in the per-example program, 1,047 MB of loop-fusion
  traffic). ``add_any`` now ends such a sum with a full-size addition (NOTE: [a broadcast last in
  a cotangent sum] in ``xla_bridge/rules/_cotangent_sums.py``): no loop fusion above 10
  operands, 785 MB; per-example 146/138/151 -> 132/134/144 ms and step 138/135 -> 128/134 ms in
  fresh-process pairs (load 17-22); not bit-exact against jax's program (the sum's order). Where
  the time goes now (``perf record`` of 30 calls in one process, ``DNNL_JIT_PROFILE=2`` so that
  oneDNN's JIT kernels have names; shares of ~144 ms): YNNPACK's GEMMs 42% (14.7 GFLOP, ~245
  GFLOP/s: the forward and input-gradient products with the shared weights), the per-example
  weight gradients 32% (XLA's Eigen dot, which is TensorFlow's contraction kernel: Eigen's packing
  9% plus oneDNN's JIT sgemm 21%; 6.6 GFLOP at ~148 GFLOP/s), XLA's loop fusions 11% (18%
  before), YNNPACK's other kernels 6% (weight packing transposes, reductions), Python, libc and
  the kernel 6%. Tried and not kept: XLA flags, per-example program (fresh-process pairs):
  ``--xla_cpu_experimental_xnn_graph_fusion_mode=XNN_GRAPH_FUSION_MODE_GREEDY`` level (132.9,
  132.8, 143.8 against 131.9, 133.9, 143.7 ms), ``--xla_cpu_experimental_ynn_fusion_type=``
  ``individual_dot,eltwise,reduce`` 192 and ``dot,eltwise,reduce`` 171 against 150 ms,
  ``--xla_cpu_experimental_enable_tiling_propagation`` 152 against 147, ``xla_cpu_use_xnnpack``,
  ``xla_cpu_use_onednn``, ``xla_cpu_experimental_onednn_custom_call`` and the concurrency-optimised
  scheduler off: level; no flag moves the transposed-left-operand batched dots off Eigen (jax's
  ``get_compile_options`` sets no CPU option funcgrad lacks: the same defaults). YNNPACK's batched
  dot with K=128 runs at only 155-175 GFLOP/s even when given the left operand as [B, M, K]
  (1024x256: 3.4 against Eigen's 4.9 ms; 256x1024, 256x768, 256x256: level), so only the MLP
  projection's gradient could gain (~1.4 ms a layer), and its left operand, the GELU, would need a
  transposing copy that XLA fuses with the GELU's strided reads (session 11). Left: XLA duplicates
  copy-like and elementwise producers that feed both a GEMM (through a [B*T, K] bitcast) and a
  per-example dot (through [B, T, K]): the GELU output is written twice a layer, the qkv
  cotangent transposed three times, the attention output twice (~3 ms); jaxlib 0.10.2 has no
  multi-output fusion on the CPU.
- Session 11 (``--threads 1 --rounds 2``, CPU time, load 16-20): step 141 ms, 0.51x
  torch.compile's 278 ms and 0.45x jax's 313 ms; first call 0.70x jax (wall); eager 270 ms, 0.80x
  torch's 337 ms; per-example 148 ms against jax's 284 ms, **0.52x** (0.56x and 0.49x in the two
  rounds; the wall-time row 0.50x); ``--cases per_example --rounds 3`` (load 17-20): 0.49x (0.52,
  0.46, 0.49); a second full run at load 9-11: step 0.50x torch.compile, first call 0.93x jax,
  eager 0.77x torch, per-example 150 against 267 ms, **0.56x**: jax's per-example time falls with
  the load (its page faults), funcgrad's does not, so the goal holds only at high load. One
  change: the attention's ``q, k, v = qkv[0], qkv[1],
  qkv[2]`` has as cotangent the sum of three zero pads, which XLA's CPU compiler materialised at
  full size and re-added in each of the sum's three consumers (input-gradient GEMM, weight
  gradient, bias gradient): 1.7 ms a layer; it is now one ``concatenate`` (NOTE: [sums of zero
  pads] in ``xla_bridge/rules/_pad_sums.py``), 0.3 ms a layer, in the step and the per-example
  program alike (per-example 152-161 -> 149-154 ms, step 139 -> 134 ms, fresh-process pairs, load
  10-11). The per-example program is the step's GEMMs (forward and input gradients as [1024, K]
  GEMMs with the shared weights, YNNPACK at 215-235 GFLOP/s) plus the per-example weight
  gradients as batched dots [8, 128, M] x [8, 128, N] contracting the positions: XLA's Eigen dot,
  which reads the transposed left operand at 180 GFLOP/s for M <= N and ~115 for M = 4N (the MLP
  projection's [8, 1024, 256]: 4.7 ms against 3.05 for the swapped product). Tried and not kept:
  the left operand copied to [8, M, K] for YNNPACK when M >= 2N (3.7 ms alone, but in the program
  XLA fuses the GELU that produces it into the transposing copy, whose strided reads take 2.4-4.6
  ms against 0.24 for the plain GELU: per-example 152 -> 164 ms; an optimization barrier before
  the copy does not stop it, XLA expands barriers before fusing); the swapped product transposed
  back (XLA's transpose of the 8 MB result costs 1.5 ms: 4.6 against 4.7 ms); for every batched
  dot of that form (164 ms); ``--xla_cpu_experimental_ynn_fusion_type`` (``dot``,
  ``dot,reduce``, ``individual_dot,reduce``: 143-155 ms against 144-151, noise at load 15),
  ``xla_cpu_use_onednn`` (level); jaxlib 0.10.2 has no multi-output fusion option. Left: XLA
  duplicates cheap elementwise chains into each consumer -- the residual stream's cotangent
  through the layer norms is recomputed from the top layer down in each consumer (40 fusions of
  30-60 operands, 9 ms of the per-example program, 7 ms of the step), and no barrier survives to
  fusion.
- Session 10 (``--threads 1 --rounds 2``, CPU time, load 14-16.5): step 133-137 ms, 0.54x
  torch.compile's 261 ms and 0.51x jax's 278 ms; per-example 139 ms, 0.54x jax's 256 ms (jax
  took 311 ms in the run before: 0.44-0.54x); eager 247 ms, 0.75x torch's 331 ms; the first call
  (CPU time, ``block`` of the first step in fresh processes, two rounds) 2.42-2.88 s against
  jax's 3.26-3.54 s (0.74-0.81x; the script's wall-clock row, 1.20x and 0.82x in two runs, is the
  load's). Two changes: XLA's temporaries and outputs no longer fault in (the buffer cache
  above: 30.8k -> 0 faults and 35-63 -> 0 ms of system time per step, 46.8k -> 0 per
  per-example call), and reductions are lowered without the unit dimensions that ``vmap`` of
  ``xi[None]`` makes, which XLA's YNNPACK reductions ran 7-20x slower (NOTE: [reductions without
  unit dimensions] in ``xla_bridge/rules/reductions.py``; per-example 166-169 -> 139-148 ms).
  The per-example program's thunks (``python bench/xla_op_profile.py per_example``) now take
  114 ms against the step's 106: the same GEMMs (the forward and input gradients as one
  [1024, K] GEMM each, shared weights, XNNPACK/YNNPACK at ~220 GFLOP/s) plus the per-example
  weight gradients as batched dots ([8, 128, M] x [8, 128, N] contracting the positions, XLA's
  own Eigen dot, 23 ms, 10% of the samples in Eigen's packing) and the 106 MB output. What was
  tried and not kept: ``--xla_cpu_experimental_ynn_fusion_type=dot`` (XLA's own reductions):
  per-example 166 -> 148 ms before the unit-dimension fix, but the step 133 -> 171-178 ms;
  merging the attention dots' two batch dimensions (8, 4) into one: level (0.34 ms either way,
  both YNNPACK); the transposed-left-operand batched dots (attention backward, per-example
  weight gradients) stay XLA's Eigen dot (YNNPACK's matcher takes no transposed left operand);
  copying such a left operand to [batch, M, K] behind an optimization barrier is faster alone
  (float32, batch 8, K=128: 1024x256 4.7 -> 3.3 ms, 256x256 0.80 -> 0.65, others level) but made
  the per-example program slower (138 -> 155-158 ms, two interleaved pairs), as NOTE: [transposed
  left operand on the CPU] in ``xla_bridge/rules/dot.py`` found before.

Earlier sessions:

- ``step``: funcgrad's user time is torch.compile's (252 against 246 ms of CPU per call, load
  12); the gap is system time, 55-58 ms against 9: XLA's temporaries of the step (120.4 MB,
  ``compiled.memory_analysis()``; jax's program 127.4 MB) are one allocation per call, which
  glibc serves with a fresh ``mmap`` and returns with ``munmap`` when the call ends (strace: one
  126,214,144-byte mmap/munmap pair per call), so all 30.8k pages fault in on every call
  (torch.compile: 4.6k). What was tried, besides the process-wide ``+malloc`` opt-in:
  jaxlib 0.10.2's CPU client takes no allocator or buffer pool (``get_tfrt_cpu_client``'s
  arguments: asynchronous, distributed client, node id/count, collectives, device count,
  topology timeouts, transfer server) and no XLA flag keeps temporaries between calls;
  ``--xla_multiheap_size_constraint_per_heap=16777216`` splits the allocation into 16 MiB heaps,
  which glibc then takes from its brk heap, but ``free`` trims the heap's top at the call's end
  (strace: brk shrinks by 3 x 32 MiB) and the faults stay (32.6k); the memory-optimised
  scheduler (``--xla_cpu_scheduler_type=CPU_SCHEDULER_TYPE_MEMORY_OPTIMIZED``) needs 130.1 MB;
  donating the parameters (``donate_argnums=0``, rebound each step as a training loop does)
  removes the outputs' allocations, which were not the faulting memory (33.5k faults against
  31.1k, no CPU time saved in two pairs); transparent huge pages are ``madvise``-only here and
  glibc's mapping is not advised (only glibc's ``hugetlb`` tunable would, process-wide at
  start). ``--xla_cpu_prefer_vector_width=512``, ``--xla_cpu_use_onednn=true`` and
  ``--xla_cpu_opt_preset=CPU_OPT_PRESET_FAST_RUNTIME`` measured within the noise (3-4
  interleaved pairs, load 10-17). So the step stays level with torch.compile only with the
  opt-in, and 1.2x its CPU time without.
  Transparent huge pages (session 9; getrusage per call in fresh processes, two rounds, load
  13-21, ``--glibc-tunables glibc.malloc.hugetlb=1``): this kernel gives huge pages only to
  advised memory, and glibc's ``hugetlb`` tunable advises its own mappings and heap, so XLA's
  126 MB block faults in as 2 MB pages: 154 faults per step instead of 30.8-33.2k, system time
  15-22 ms instead of 63-67, and user time lower as well (fewer TLB misses). CPU ms per step,
  funcgrad / funcgrad+malloc / torch.compile: 318-325 / 285-298 / 259-285 without the tunable,
  269-276 / 239-260 / 241-246 with it (every library started with it): funcgrad / torch.compile
  1.14-1.23x -> 1.12x, funcgrad+malloc 1.04-1.10x -> 0.99-1.06x. It is glibc's, read at process
  start (``GLIBC_TUNABLES`` in the environment), process-wide, and rounds small heaps up to 2 MB
  pages, so it stays the user's opt-in (funcgrad cannot set it from inside the process).
  This script, session 9 (``--threads 1 --rounds 2 --cases step,per_example``, load 12-20; then
  ``--cases step --glibc-tunables glibc.malloc.hugetlb=1``, load 12-13), step CPU time funcgrad /
  +malloc / torch.compile: 312 / 263 / 256 ms (1.22x, 1.03x), with the tunable 259 / 234 / 237 ms
  (1.09x, 0.99x). Rematerialising in the backward pass what torch.compile's partitioner
  recomputes, measured by putting the model's GELU and layer norms under ``checkpoint`` (not a
  change to the benchmark's program): temporaries 126.2 -> 109.4 MB (GELU) -> 91.5 MB (both),
  30.8k -> 22.3k faults, system time 57 -> 50 ms, user time unchanged: the faults scale with the
  residuals, and no rematerialisation policy brings 126 MB down to the few MB that would stop
  them (each layer's four GEMMs alone keep 7 MB of inputs for their weight gradients).
  Residuals by layer count (``memory_analysis()`` of the step with 1, 2 and 4 layers): funcgrad
  38.1 / 67.5 / 126.2 MB, jax 39.1 / 70.6 / 133.6 MB, so 29.4 MB per layer against jax's 31.5
  (plus 8.7 MB against 7.6 MB outside the layers): funcgrad's program keeps nothing per layer
  that jax's recomputes.
  Why 126 MB (session 8, ``python bench/xla_op_profile.py step`` prints ``memory_analysis()``;
  XLA's buffer assignment with ``--xla_dump_to``): the temporaries are the residuals the backward
  pass reads, live together where the forward pass ends -- per layer the MLP's pre-activation,
  ``tanh`` value and GELU output (3 x 4 MB, [8, 128, 1024]), the attention's softmax numerator and
  probabilities (2 x 2 MB) with the float mask of ``max``'s JVP (2 MB) and its boolean (0.5 MB),
  the q/k/v slices, layer-norm intermediates and residual stream (1 MB each) -- no f64, no
  one-hot or scatter beyond the embedding's gradient (a 256 x 256 scatter-add), no transpose XLA
  left unfused. jax's program of the same step keeps 133.6 MB, funcgrad's 126.2 MB. Size-1
  broadcasting inside the elementwise primitives (this session) had made funcgrad's 134.6 MB:
  each use of a broadcast operand got its own ``broadcast_in_dim``, which XLA materialised in
  front of its XNNPACK fusions (eight [8, 128, 256] and four [8, 4, 128, 128] copies); the
  emitter now writes each distinct broadcast once (NOTE: [one broadcast per operand] in
  ``xla_bridge/emitter.py``). Saving the ``max`` mask as a boolean instead (a select in the
  tangent), or counting ties without the float mask, left XLA's 126.2 MB unchanged.

- ``eager``: the GEMMs (NumPy's OpenBLAS, about torch's MKL speed for these shapes one at a
  time) are 55% of funcgrad's call; the rest is ~840 NumPy steps, as many as torch's autograd
  runs. The gap to torch was page faults: the cached program's 168 MB of intermediates came
  from memory glibc had handed back at the previous call's end (31.5k minor faults, ~55 ms of
  system time per call; torch's process keeps it in its heap). The program interpreter now keeps
  its own dead buffers between calls (NOTE: [eager buffers kept between calls] in
  ``funcgrad/kernel/numpy_plan.py``): 5.5k faults, 347 -> 312 ms of CPU per call; against torch
  in five interleaved pairs of fresh processes 0.955-1.035x (median 0.96x).
- ``per_example``: the program does the step's 21 GFLOP (its weight gradients as batched dots
  [8, 128, M] x [8, 128, N] contracting the 128 positions, which XLA's own dot runs at 130-150
  GFLOP/s one thread; transposing an operand first for XNNPACK, the result after, or eight 2-D
  dots measured 5-40% slower, ``dot_general`` with an optimization barrier) and writes 101 MB of
  per-example gradients, plus 79 MB of temporaries, all fresh pages on each call (hence the
  +malloc column). Its floor is the jitted step's own time plus that output, so 0.5x jax's time
  (183-188 ms of CPU here) is below what the step alone costs (215-275 ms): out of reach while
  the GEMMs run at these speeds (the step's 21 GFLOP at the 237 GFLOP/s peak of one core would
  be 90 ms alone). Checked again at load 10-17 (``--threads 1 --rounds 2``, and one worker per
  fresh process with getrusage): funcgrad's per-example program takes 1.22-1.35x its own jitted
  step's CPU time (user 403-431 ms against 333-363, 42.6-46.8k faults against 30.8k), and that
  step alone is 0.61x jax's per-example CPU time (500 against 821 ms): 0.5x jax would need the
  per-example program to cost less than the step, which does the same products with one
  gradient instead of eight. Measured per-example ratio: 0.83x jax (0.65x with ``+malloc``);
  session 9: 0.84x (0.72x), CPU time, load 12-20.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from _timing import block, fmt, run_script  # noqa: E402

VOCAB, CTX, WIDTH, HEADS, LAYERS, BATCH = 256, 128, 256, 4, 4, 8
LR = 1e-3

# ----------------------------------------------------------------------------------------------
# The problem, in NumPy (shared by every library)


def numpy_problem():
    """(params: dict name -> float32 array, tokens (B, T) int32, one-hot targets (B, T, V))."""
    import numpy as np

    rng = np.random.default_rng(0)

    def dense(m, n):
        return (rng.standard_normal((m, n)) * 0.02).astype(np.float32)

    p = {
        "wte": (rng.standard_normal((VOCAB, WIDTH)) * 0.02).astype(np.float32),
        "wpe": (rng.standard_normal((CTX, WIDTH)) * 0.01).astype(np.float32),
        "lnf_g": np.ones(WIDTH, np.float32),
        "lnf_b": np.zeros(WIDTH, np.float32),
        "head": dense(WIDTH, VOCAB),
    }
    for i in range(LAYERS):
        p[f"l{i}_ln1_g"] = np.ones(WIDTH, np.float32)
        p[f"l{i}_ln1_b"] = np.zeros(WIDTH, np.float32)
        p[f"l{i}_qkv"] = dense(WIDTH, 3 * WIDTH)
        p[f"l{i}_qkv_b"] = np.zeros(3 * WIDTH, np.float32)
        p[f"l{i}_o"] = dense(WIDTH, WIDTH)
        p[f"l{i}_o_b"] = np.zeros(WIDTH, np.float32)
        p[f"l{i}_ln2_g"] = np.ones(WIDTH, np.float32)
        p[f"l{i}_ln2_b"] = np.zeros(WIDTH, np.float32)
        p[f"l{i}_fc"] = dense(WIDTH, 4 * WIDTH)
        p[f"l{i}_fc_b"] = np.zeros(4 * WIDTH, np.float32)
        p[f"l{i}_proj"] = dense(4 * WIDTH, WIDTH)
        p[f"l{i}_proj_b"] = np.zeros(WIDTH, np.float32)
    tokens = rng.integers(0, VOCAB, size=(BATCH, CTX + 1))
    x = tokens[:, :-1].astype(np.int32)
    y = np.eye(VOCAB, dtype=np.float32)[tokens[:, 1:]]
    return p, x, y


def make_loss(jnp):
    """The model's mean next-token cross-entropy in a NumPy-like namespace (funcgrad.numpy,
    jax.numpy; torch gets its own transcription in ``torch_loss``)."""
    import numpy as np

    causal = np.tril(np.ones((CTX, CTX), dtype=bool))
    hd = WIDTH // HEADS

    def layer_norm(h, g, b):
        mu = jnp.mean(h, axis=-1, keepdims=True)
        var = jnp.mean((h - mu) ** 2, axis=-1, keepdims=True)
        return (h - mu) / jnp.sqrt(var + 1e-5) * g + b

    def gelu(h):
        return 0.5 * h * (1.0 + jnp.tanh(0.7978845608 * (h + 0.044715 * h**3)))

    def attention(h, p, i):
        B, T, _ = h.shape
        qkv = h @ p[f"l{i}_qkv"] + p[f"l{i}_qkv_b"]
        qkv = jnp.transpose(jnp.reshape(qkv, (B, T, 3, HEADS, hd)), (2, 0, 3, 1, 4))
        q, k, v = qkv[0], qkv[1], qkv[2]
        s = (q @ jnp.swapaxes(k, -1, -2)) * (1.0 / math.sqrt(hd))
        s = jnp.where(causal[:T, :T], s, -1e9)
        s = jnp.exp(s - jnp.max(s, axis=-1, keepdims=True))
        a = s / jnp.sum(s, axis=-1, keepdims=True)
        o = jnp.reshape(jnp.transpose(a @ v, (0, 2, 1, 3)), (B, T, WIDTH))
        return o @ p[f"l{i}_o"] + p[f"l{i}_o_b"]

    def loss(p, x, y):
        T = x.shape[1]
        h = p["wte"][x] + p["wpe"][:T]
        for i in range(LAYERS):
            h = h + attention(layer_norm(h, p[f"l{i}_ln1_g"], p[f"l{i}_ln1_b"]), p, i)
            m = gelu(layer_norm(h, p[f"l{i}_ln2_g"], p[f"l{i}_ln2_b"]) @ p[f"l{i}_fc"] + p[f"l{i}_fc_b"])
            h = h + m @ p[f"l{i}_proj"] + p[f"l{i}_proj_b"]
        logits = layer_norm(h, p["lnf_g"], p["lnf_b"]) @ p["head"]
        z = logits - jnp.max(logits, axis=-1, keepdims=True)
        logp = z - jnp.log(jnp.sum(jnp.exp(z), axis=-1, keepdims=True))
        return -jnp.sum(logp * y) / (x.shape[0] * T)

    return loss


def torch_loss():
    import numpy as np
    import torch

    causal = torch.tensor(np.tril(np.ones((CTX, CTX), dtype=bool)))
    hd = WIDTH // HEADS

    def layer_norm(h, g, b):
        mu = h.mean(-1, keepdim=True)
        var = ((h - mu) ** 2).mean(-1, keepdim=True)
        return (h - mu) / torch.sqrt(var + 1e-5) * g + b

    def gelu(h):
        return 0.5 * h * (1.0 + torch.tanh(0.7978845608 * (h + 0.044715 * h**3)))

    def attention(h, p, i):
        B, T, _ = h.shape
        qkv = h @ p[f"l{i}_qkv"] + p[f"l{i}_qkv_b"]
        qkv = qkv.reshape(B, T, 3, HEADS, hd).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(hd))
        s = torch.where(causal[:T, :T], s, -1e9)
        s = torch.exp(s - s.amax(-1, keepdim=True))
        a = s / s.sum(-1, keepdim=True)
        o = (a @ v).permute(0, 2, 1, 3).reshape(B, T, WIDTH)
        return o @ p[f"l{i}_o"] + p[f"l{i}_o_b"]

    def loss(p, x, y):
        T = x.shape[1]
        h = p["wte"][x] + p["wpe"][:T]
        for i in range(LAYERS):
            h = h + attention(layer_norm(h, p[f"l{i}_ln1_g"], p[f"l{i}_ln1_b"]), p, i)
            m = gelu(layer_norm(h, p[f"l{i}_ln2_g"], p[f"l{i}_ln2_b"]) @ p[f"l{i}_fc"] + p[f"l{i}_fc_b"])
            h = h + m @ p[f"l{i}_proj"] + p[f"l{i}_proj_b"]
        logits = layer_norm(h, p["lnf_g"], p["lnf_b"]) @ p["head"]
        z = logits - logits.amax(-1, keepdim=True)
        logp = z - torch.log(torch.exp(z).sum(-1, keepdim=True))
        return -(logp * y).sum() / (x.shape[0] * T)

    return loss


# ----------------------------------------------------------------------------------------------
# Workers (one library per process)


def timed(fn, repeats, **extra):
    """``{"seconds": median wall time, "cpu": median CPU time of this process}`` per call of
    ``fn`` (after two warm-up calls), plus ``extra``. The CPU time leaves out the time the worker
    waited for a core, which the shared machine's load adds to the wall time."""
    import statistics

    fn()
    fn()
    wall, cpu = [], []
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return {"seconds": statistics.median(wall), "cpu": statistics.median(cpu), **extra}


def _jaxlike(lib):
    if lib == "jax":
        import jax
        import jax.numpy as jnp

        return jnp, jax, jax.tree_util
    import funcgrad
    import funcgrad.numpy as fnp
    from funcgrad import tree_util

    return fnp, funcgrad, tree_util


def work_jaxlike(lib, case, repeats):
    jnp, J, tree = _jaxlike(lib)
    import numpy as np

    p, x, y = numpy_problem()
    loss = make_loss(jnp)
    p = {k: jnp.asarray(v) for k, v in p.items()}
    x, y = jnp.asarray(x), jnp.asarray(y)
    if case == "check":
        val, g = J.value_and_grad(loss)(p, x, y)
        norm = math.sqrt(sum(float(np.sum(np.asarray(v, np.float64) ** 2)) for v in g.values()))
        return {"loss": float(val), "grad_norm": norm}
    if case == "step":

        def step(p, x, y):
            val, g = J.value_and_grad(loss)(p, x, y)
            return val, tree.tree_map(lambda w, d: w - LR * d, p, g)

        f = J.jit(step)
        t0 = time.perf_counter()
        block(list(f(p, x, y)[1].values()))
        first = time.perf_counter() - t0
        return timed(lambda: block(list(f(p, x, y)[1].values())), repeats, first=first)
    if case == "eager":
        f = J.grad(loss)
        return timed(lambda: block(list(f(p, x, y).values())), repeats)
    if case == "per_example":

        def loss_single(p, xi, yi):
            return loss(p, xi[None], yi[None])

        f = J.jit(J.vmap(J.grad(loss_single), in_axes=(None, 0, 0)))
        return timed(lambda: block(list(f(p, x, y).values())), repeats)
    raise ValueError(case)


def work_torch(compiled, case, repeats):
    import numpy as np
    import torch

    if os.environ.get("BENCH_THREADS"):
        torch.set_num_threads(int(os.environ["BENCH_THREADS"]))
    torch.manual_seed(0)
    p, x, y = numpy_problem()
    p = {k: torch.tensor(v, requires_grad=True) for k, v in p.items()}
    x, y = torch.tensor(x, dtype=torch.long), torch.tensor(y)
    loss = torch_loss()
    if compiled:
        loss = torch.compile(loss)
    params = list(p.values())
    if case == "check":
        val = loss(p, x, y)
        val.backward()
        norm = math.sqrt(sum(float(np.sum(w.grad.numpy().astype(np.float64) ** 2)) for w in params))
        return {"loss": float(val), "grad_norm": norm}
    if case in ("step", "eager"):

        def run():
            for w in params:
                w.grad = None
            val = loss(p, x, y)
            val.backward()
            if case == "step":
                with torch.no_grad():
                    torch._foreach_add_(params, [w.grad for w in params], alpha=-LR)
            return val

        t0 = time.perf_counter()
        run()
        first = time.perf_counter() - t0
        return timed(run, repeats, first=first)
    if case == "per_example":
        from torch.func import grad, vmap

        detached = {k: v.detach() for k, v in p.items()}

        def loss_single(p, xi, yi):
            return loss(p, xi[None], yi[None])

        f = vmap(grad(loss_single), in_dims=(None, 0, 0))
        return timed(lambda: f(detached, x, y), repeats)
    raise ValueError(case)


def worker(lib, case, repeats):
    if os.environ.get("BENCH_THREADS") == "1" and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    if lib.startswith("torch"):
        return work_torch(lib == "torch.compile", case, repeats)
    if lib == "funcgrad+malloc":  # the opt-in of NOTE: [eager allocations], in this process only
        import funcgrad

        funcgrad.config.update("funcgrad_malloc_tuning", True)
        lib = "funcgrad"
    return work_jaxlike(lib, case, repeats)


# ----------------------------------------------------------------------------------------------
# Driver

CASE_LIBS = {
    "step": ["funcgrad", "funcgrad+malloc", "jax", "torch", "torch.compile"],
    "eager": ["funcgrad", "funcgrad+malloc", "jax", "torch"],
    "per_example": ["funcgrad", "funcgrad+malloc", "jax", "torch"],
}


def check(libs, env):
    """Every library's loss and gradient norm at the shared initial weights, compared with
    funcgrad's (float32 tolerance); raises on a disagreement."""
    got = {}
    for lib in libs:
        try:
            got[lib], _ = run_script(__file__, ["--worker", lib, "check", 1], ROOT, env, timeout=1800)
        except RuntimeError as e:
            print(f"  check {lib}: failed ({str(e).splitlines()[-1]})", file=sys.stderr)
    ref = got["funcgrad"]
    for lib, r in got.items():
        print(f"  check {lib}: loss {r['loss']:.6f}, |grad| {r['grad_norm']:.6f}", file=sys.stderr)
        for key in ("loss", "grad_norm"):
            if not math.isclose(r[key], ref[key], rel_tol=2e-4):
                raise SystemExit(f"{lib}'s {key} {r[key]} disagrees with funcgrad's {ref[key]}")
    return set(got)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--cases", default=",".join(CASE_LIBS))
    ap.add_argument(
        "--threads", type=int, default=None, help="threads per worker (default: each library's own)"
    )
    ap.add_argument(
        "--glibc-tunables",
        default=None,
        help="GLIBC_TUNABLES for every worker alike, e.g. glibc.malloc.hugetlb=1 (glibc reads it "
        "at process start: the process-wide opt-in of the notes above)",
    )
    args = ap.parse_args()
    env = {"GLIBC_TUNABLES": args.glibc_tunables} if args.glibc_tunables else {}
    if args.threads:
        n = str(args.threads)
        env |= {"BENCH_THREADS": n, "OMP_NUM_THREADS": n, "OPENBLAS_NUM_THREADS": n, "MKL_NUM_THREADS": n}
        if args.threads == 1:
            # (XLA_FLAGS holds XLA's --flags only: the "intra_op_parallelism_threads=1" this
            # line used to add is no XLA flag and was ignored.)
            flags = os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false"
            env["XLA_FLAGS"] = flags.strip()
    rounds = args.rounds or (1 if args.quick else 3)
    repeats = 3 if args.quick else 7
    have = {lib: importlib.util.find_spec(lib) is not None for lib in ("jax", "torch")}
    cases = args.cases.split(",")
    libs = [
        lib
        for lib in dict.fromkeys(sum((CASE_LIBS[c] for c in cases), []))
        if have.get(lib.split(".")[0], True)
    ]
    load = [subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()]
    ok = check(libs, env)
    samples: dict = {}
    for _ in range(rounds):
        for case in cases:
            for lib in CASE_LIBS[case]:
                if lib not in ok:
                    continue
                try:
                    r, _ = run_script(__file__, ["--worker", lib, case, repeats], ROOT, env, timeout=1800)
                except RuntimeError as e:
                    print(f"  {case} {lib}: failed ({str(e).splitlines()[-1]})", file=sys.stderr)
                    continue
                samples.setdefault((case, lib), []).append(r["seconds"])
                samples.setdefault((case + " cpu", lib), []).append(r["cpu"])
                if case == "step":
                    samples.setdefault(("first call", lib), []).append(r["first"])
                print(f"  {case} {lib}: {fmt(r['seconds'])} (cpu {fmt(r['cpu'])})", file=sys.stderr)
        load.append(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    print(f"threads per worker: {args.threads or 'library defaults'}")
    if args.glibc_tunables:
        print(f"GLIBC_TUNABLES={args.glibc_tunables} in every worker")
    report({k: statistics.median(v) for k, v in samples.items()}, rounds)
    print("\nload (uptime) before and after each round:\n  " + "\n  ".join(load))


def report(res, rounds):
    print(f"\n## transformer (3.3 M params, batch {BATCH}, float32; median of {rounds} round(s))\n")
    print(f"{'row':<16} {'library':<16} {'median':>10} {'funcgrad / this':>16} {'+malloc / this':>15}")
    print("-" * 77)
    for row in ("step", "step cpu", "first call", "eager", "eager cpu", "per_example", "per_example cpu"):
        bases = [res.get((row, "funcgrad")), res.get((row, "funcgrad+malloc"))]
        for (r, lib), t in res.items():
            if r != row:
                continue
            ratios = [
                f"{base / t:.2f}x" if base is not None and not lib.startswith("funcgrad") else ""
                for base in bases
            ]
            print(f"{row:<16} {lib:<16} {fmt(t):>10} {ratios[0]:>16} {ratios[1]:>15}")
    print(
        "goals: step <= 1.0x the best of jax/torch/torch.compile; first call <= 1.0x jax; "
        "eager <= 1.0x torch; per_example <= 0.5x jax\n"
        "(rows '... cpu': the median CPU time of the worker process per call, which the machine's "
        "load disturbs less than the wall time)"
    )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        lib, case, repeats = sys.argv[2], sys.argv[3], int(sys.argv[4])
        print(json.dumps(worker(lib, case, repeats)))
    else:
        main()
