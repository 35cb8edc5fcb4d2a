"""funcgrad as a GradBench tool: one module per eval, plus the protocol server (``server``) and
the timing helper (``runs``).

This is benchmark code, outside the library's layers: it imports the public ``funcgrad`` surface
only (``funcgrad``, ``funcgrad.numpy``, ``funcgrad.lax``, ``funcgrad.scipy``), NumPy for the
conversion of GradBench's JSON inputs, and nothing from GradBench itself, so the tool runs without
a GradBench checkout. Each eval module exposes the functions its eval names (``objective`` and
``jacobian`` for gmm, ``primal`` and ``gradient`` for lse, ``rr``/``rf``/``fr``/``ff`` for particle
and saddle, ...), each a :class:`~funcgrad_tool.runs.Evaluation` that turns the eval's JSON input
into arrays (untimed), runs the compiled program ``min_runs`` times or for ``min_seconds``
(timed, waiting for the result), and turns the result back into JSON (untimed).
"""

EVALS = (
    "hello",
    "gmm",
    "ba",
    "ht",
    "kmeans",
    "llsq",
    "lse",
    "lstm",
    "ode",
    "det",
    "particle",
    "saddle",
)
