"""``jax._src.test_util`` (and ``public_test_util``) for JAX's test files, over funcgrad.

Written from reading JAX's: the parameterized cases are sampled the same way (a product of the
options, ``JAX_NUM_GENERATED_CASES`` of them chosen by ``RandomState(42)``), each test's inputs come
from ``RandomState(adler32(test name))`` drawn in the same order, and the tolerances are JAX's
per-dtype defaults, so a test of a given name checks the same case on both sides of the runner.
The device is the CPU; the tests' device-specific decorators and queries answer for it.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
import os
import re
import textwrap
import unittest
import warnings
import zlib

import numpy as np
from absl.testing import parameterized

import funcgrad
import funcgrad.numpy as jnp
from funcgrad import test_util as _fg_tu
from funcgrad.kernel import monitoring as _monitoring
from funcgrad.test_util import check_grads, check_jvp, check_vjp  # noqa: F401

from . import _oracle_source
from . import config as _config
from . import dtypes as _dtypes
from .numpy_internal import promote_dtypes, promote_dtypes_inexact


class _IntFlag:
    def __init__(self, value):
        self.value = value


NUM_GENERATED_CASES = _IntFlag(int(os.getenv("JAX_NUM_GENERATED_CASES", "10")))
_MAX_RETRIES = int(os.getenv("JAX_MAX_CASES_SAMPLING_RETRIES", "100"))
SKIP_SLOW_TESTS = _IntFlag(False)
TEST_NUM_THREADS = _IntFlag(0)


def _x64() -> bool:
    return bool(_config._read("jax_enable_x64"))


# --- tolerances (JAX's public_test_util) -------------------------------------------------------

_default_tolerance = dict(_fg_tu.DEFAULT_TOLERANCE)
default_gradient_tolerance = dict(_fg_tu.DEFAULT_GRADIENT_TOLERANCE)


def default_tolerance():
    return _default_tolerance


def _dtype(x) -> np.dtype:
    if hasattr(x, "dtype"):
        return np.dtype(x.dtype)
    if type(x) in _dtypes.python_scalar_types_to_dtypes:
        return _dtypes.python_scalar_types_to_dtypes[type(x)]
    return np.asarray(x).dtype


def tolerance(dtype, tol=None):
    """The tolerance for ``dtype``: ``tol`` if a number, else its entry or the default's."""
    if tol is not None and not isinstance(tol, dict):
        return tol
    table = {np.dtype(k): v for k, v in (tol or {}).items()}
    d = _dtypes.canonicalize_dtype(np.dtype(dtype))
    return table.get(d, _default_tolerance.get(d, 0))


def _normalize_tolerance(tol):
    if isinstance(tol, dict):
        return {np.dtype(k): v for k, v in tol.items()}
    return dict.fromkeys(_default_tolerance, tol or 0)


def join_tolerance(tol1, tol2):
    out = _normalize_tolerance(tol1)
    for k, v in _normalize_tolerance(tol2).items():
        out[k] = max(v, out.get(k, 0))
    return out


def _assert_numpy_allclose(a, b, atol=None, rtol=None, err_msg=""):
    if a.dtype == b.dtype == _dtypes.float0:
        np.testing.assert_array_equal(a, b, err_msg=err_msg)
        return
    kw = {}
    if atol:
        kw["atol"] = atol
    if rtol:
        kw["rtol"] = rtol
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(_fg_tu._wide(a), _fg_tu._wide(b), err_msg=err_msg, **kw)


def check_close(xs, ys, atol=None, rtol=None, err_msg=""):
    _fg_tu._check_close(xs, ys, atol, rtol, err_msg)


def check_eq(xs, ys, err_msg=""):
    funcgrad.tree_util.tree_map(
        lambda x, y: _assert_numpy_allclose(np.asarray(x), np.asarray(y), err_msg=err_msg), xs, ys
    )


def rand_like(rng, x):
    return _fg_tu._random_like(rng, x)


# --- devices -------------------------------------------------------------------------------


def device_under_test() -> str:
    return "cpu"


def supported_dtypes():
    types = {
        np.bool_, _dtypes.int4, np.int8, np.int16, np.int32, np.int64, _dtypes.uint4, np.uint8,
        np.uint16, np.uint32, np.uint64, _dtypes.bfloat16, np.float16, np.float32, np.float64,
        np.complex64, np.complex128,
    }  # fmt: skip
    if not _x64():
        types -= {np.uint64, np.int64, np.float64, np.complex128}
    return types


def test_device_matches(device_types) -> bool:
    assert not isinstance(device_types, str), "device_types should be a list of strings"
    return "cpu" in device_types


test_device_matches.__test__ = False


def _false(*args, **kwargs):
    return False


is_device_rocm = is_device_cuda = is_cloud_tpu = is_device_tpu = is_device_tpu_at_least = _false
is_cuda_compute_capability_at_least = is_cuda_compute_capability_equal = is_cuda_version_at_least = _false
is_cloud_tpu_at_least = is_sanitized = is_asan = is_msan = is_tsan = is_gil_disabled = _false
pjrt_c_api_version_at_least = _false


def is_optimized_build() -> bool:
    return True


def stablehlo_version_at_least(required_version) -> bool:
    return True


def _only_if(predicate, reason):
    def decorator(test_method):
        @functools.wraps(test_method)
        def wrapper(self, *args, **kwargs):
            if not predicate():
                raise unittest.SkipTest(reason)
            return test_method(self, *args, **kwargs)

        return wrapper

    return decorator


def is_test_rbe() -> bool:
    """JAX's check for its remote-build test toolchain (an environment variable)."""
    return os.getenv("IS_JAX_RBE_TESTING", "").lower() in {"true", "1", "yes", "y"}


@contextlib.contextmanager
def _capture_output(stream):
    """JAX's ``capture_stdout``/``capture_stderr``: the file descriptor itself is redirected (so
    what host callbacks print from C++ threads is caught too); the function yielded returns the
    text once the block has ended."""
    import sys
    import tempfile

    box = []

    def get_output() -> str:
        if not box:
            raise ValueError("get_output() called while the context is active.")
        return box[0]

    with tempfile.TemporaryFile(mode="w+", encoding="utf-8") as tmp:
        stream = stream if stream is not None else sys.stdout
        saved = os.dup(stream.fileno())
        stream.flush()
        os.dup2(tmp.fileno(), stream.fileno())
        try:
            yield get_output
        finally:
            stream.flush()
            os.dup2(saved, stream.fileno())
            os.close(saved)
            tmp.seek(0)
            box.append(tmp.read())


def capture_stdout():
    import sys

    return _capture_output(sys.stdout)


def capture_stderr():
    import sys

    return _capture_output(sys.stderr)


@contextlib.contextmanager
def count_jit_compilation_cache_miss():
    """JAX's counter of jit compilations in the block: funcgrad's in-memory executable cache
    misses (each one an XLA compile)."""
    from funcgrad import xla_bridge

    start = xla_bridge.compile_cache_info()["misses"]
    yield lambda: xla_bridge.compile_cache_info()["misses"] - start


def skip_on_devices(*disabled_devices, skip_reason=None):
    return _only_if(lambda: "cpu" not in disabled_devices, skip_reason or f"skipped on {disabled_devices}")


def run_on_devices(*enabled_devices, skip_reason=None):
    return _only_if(lambda: "cpu" in enabled_devices, skip_reason or f"runs only on {enabled_devices}")


def device_supports_buffer_donation():
    return _only_if(lambda: True, "")


def skip_on_flag(flag_name, skip_value):
    return _only_if(lambda: _config._read(flag_name) != skip_value, f"skipped when {flag_name}={skip_value}")


def skip_under_pytest(reason: str):
    return unittest.skip("Running under pytest: " + reason)


def request_cpu_devices(nr_devices: int):
    """As JAX's: ask for at least ``nr_devices`` CPU devices before the backend starts."""
    if (funcgrad.config.jax_num_cpu_devices or -1) < nr_devices:
        try:
            funcgrad.config.update("jax_num_cpu_devices", nr_devices)
        except (RuntimeError, ValueError):  # the backend has started: as many as it has
            pass


def pytest_mark_if_available(marker: str):
    return lambda f: f


def thread_unsafe_test(*args, **kwargs):
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda f: f


thread_unsafe_test_class = thread_unsafe_test
JaxTestLoader = unittest.TestLoader


# --- shapes and random inputs -----------------------------------------------------------------


class ScalarShape:
    def __len__(self):
        return 0

    def __getitem__(self, i):
        raise IndexError(f"index {i} out of range.")


class _NumpyScalar(ScalarShape):
    pass


class _PythonScalar(ScalarShape):
    pass


NUMPY_SCALAR_SHAPE = _NumpyScalar()
PYTHON_SCALAR_SHAPE = _PythonScalar()


def is_valid_shape(shape, dtype):
    if shape == PYTHON_SCALAR_SHAPE:
        return np.dtype(dtype) == np.dtype(type(np.array(0, dtype=dtype).item()))
    return True


def _dims_of_shape(shape):
    if type(shape) in (list, tuple):
        return shape
    if isinstance(shape, ScalarShape):
        return ()
    if np.ndim(shape) == 0:
        return (shape,)
    raise TypeError(type(shape))


def _cast_to_shape(value, shape, dtype):
    if shape is NUMPY_SCALAR_SHAPE:
        return np.dtype(dtype).type(value)
    if shape is PYTHON_SCALAR_SHAPE:
        return np.asarray(value).item()
    return value


def dtype_str(dtype):
    return np.dtype(dtype).name


def format_shape_dtype_string(shape, dtype):
    if isinstance(shape, np.ndarray):
        return f"{dtype_str(dtype)}[{shape}]"
    if shape is NUMPY_SCALAR_SHAPE:
        return dtype_str(dtype)
    if shape is PYTHON_SCALAR_SHAPE:
        return "py" + dtype_str(dtype)
    if isinstance(shape, (list, tuple)):
        return f"{dtype_str(dtype)}[{','.join(str(d) for d in shape)}]"
    if type(shape) is int:
        return f"{dtype_str(dtype)}[{shape},]"
    raise TypeError(type(shape))


def _rand_dtype(rand, shape, dtype, scale=1.0, post=lambda x: x):
    dims = _dims_of_shape(shape)
    unsigned = _dtypes.issubdtype(dtype, np.unsignedinteger)

    def draw():
        v = scale * rand(*dims)
        return np.asarray(abs(v) if unsigned else v).astype(dtype)

    vals = draw()
    if _dtypes.issubdtype(dtype, np.complexfloating):
        vals = vals + 1.0j * draw()
    return _cast_to_shape(np.asarray(post(vals), dtype), shape, dtype)


def rand_fullrange(rng, standardize_nans=False):
    def gen(shape, dtype, post=lambda x: x):
        dtype = np.dtype(dtype)
        nbytes = dtype.itemsize * math.prod(_dims_of_shape(shape))
        vals = post(rng.randint(0, np.iinfo(np.uint8).max, size=nbytes, dtype=np.uint8)).view(dtype)
        if shape is PYTHON_SCALAR_SHAPE:
            if dtype == np.uint64:
                vals = vals.astype(np.int64)
            elif dtype == np.uint32 and not _x64():
                vals = vals.astype(np.int32)
        vals = vals.reshape(shape)
        if standardize_nans and np.issubdtype(dtype, np.floating):
            vals[np.isnan(vals)] = np.nan
        return _cast_to_shape(vals, shape, dtype)

    return gen


def rand_default(rng, scale=3):
    return functools.partial(_rand_dtype, rng.randn, scale=scale)


def rand_nonzero(rng):
    return functools.partial(
        _rand_dtype, rng.randn, scale=3, post=lambda x: np.where(x == 0, np.array(1, x.dtype), x)
    )


def rand_positive(rng):
    return functools.partial(_rand_dtype, rng.rand, scale=2, post=lambda x: x + 1)


def rand_small(rng):
    return functools.partial(_rand_dtype, rng.randn, scale=1e-3)


def rand_not_small(rng, offset=10.0):
    return functools.partial(
        _rand_dtype, rng.randn, scale=3.0, post=lambda x: x + np.where(x > 0, offset, -offset)
    )


def rand_small_positive(rng):
    return functools.partial(_rand_dtype, rng.rand, scale=2e-5)


def rand_uniform(rng, low=0.0, high=1.0):
    assert low < high
    return functools.partial(_rand_dtype, rng.rand, post=lambda x: x * (high - low) + low)


def rand_some_equal(rng):
    def post(x):
        flat = x.ravel()
        if len(flat) == 0:
            return x
        return np.where(rng.rand(*np.shape(x)) < 0.5, flat[0], x)

    return functools.partial(_rand_dtype, rng.randn, scale=100.0, post=post)


def _complex_from_real(sampler, shape, dtype):
    real = np.real(np.array(0, dtype=dtype)).dtype
    return _cast_to_shape(sampler(shape, real) + np.array(1j, dtype) * sampler(shape, real), shape, dtype)


def _with_specials(rng, specials, complex_first):
    """A sampler: rand_default's values, with each of ``specials`` (value, probability) put in at
    random places of floating arrays (one ``rng.rand`` draw per special, in order)."""
    base = rand_default(rng)

    def rand(shape, dtype):
        if complex_first and _dtypes.issubdtype(dtype, np.complexfloating):
            return _complex_from_real(rand, shape, dtype)
        if not _dtypes.issubdtype(dtype, np.floating):
            return base(shape, dtype)
        if _dtypes.issubdtype(dtype, np.complexfloating):
            return _complex_from_real(rand, shape, dtype)
        dims = _dims_of_shape(shape)
        masks = [rng.rand(*dims) < p for _, p in specials]
        vals = base(shape, dtype)
        for (value, _), mask in zip(specials, masks, strict=True):
            vals = np.where(mask, np.array(value, dtype=dtype), vals)
        return _cast_to_shape(np.asarray(vals, dtype=dtype), shape, dtype)

    return rand


def rand_some_inf(rng):
    return _with_specials(rng, [(np.inf, 0.1), (-np.inf, 0.1)], complex_first=False)


def rand_some_inf_and_nan(rng):
    return _with_specials(rng, [(np.inf, 0.1), (-np.inf, 0.1), (np.nan, 0.1)], complex_first=False)


def rand_some_nan(rng):
    base = rand_default(rng)

    def rand(shape, dtype):
        if _dtypes.issubdtype(dtype, np.complexfloating):
            return _complex_from_real(rand, shape, dtype)
        if not _dtypes.issubdtype(dtype, np.floating):
            return base(shape, dtype)
        u = rng.rand(*_dims_of_shape(shape))  # one draw: u < .05 a negative NaN, u < .1 a NaN
        vals = base(shape, dtype)
        vals = np.where(u < 0.1, np.array(np.nan, dtype=dtype), vals)
        vals = np.where(u < 0.05, np.array(-np.nan, dtype=dtype), vals)
        return _cast_to_shape(np.asarray(vals, dtype=dtype), shape, dtype)

    return rand


def rand_some_zero(rng):
    base = rand_default(rng)

    def rand(shape, dtype):
        zeros = rng.rand(*_dims_of_shape(shape)) < 0.5
        vals = np.where(zeros, np.array(0, dtype=dtype), base(shape, dtype))
        return _cast_to_shape(np.asarray(vals, dtype=dtype), shape, dtype)

    return rand


def rand_int(rng, low=0, high=None):
    def fn(shape, dtype):
        nonlocal high
        integer = np.issubdtype(dtype, np.integer)
        if low == 0 and high is None:
            if not integer:
                raise ValueError("rand_int requires an explicit `high` value for non-integer types.")
            high = np.iinfo(dtype).max
        return rng.randint(low, high=high, size=shape, dtype=dtype if integer else np.int64).astype(dtype)

    return fn


def rand_unique_int(rng, high=None):
    def fn(shape, dtype):
        return rng.choice(np.arange(high or math.prod(shape), dtype=dtype), size=shape, replace=False)

    return fn


def rand_indices_unique_along_axis(rng):
    def fn(dim, shape, axis, allow_negative=True):
        rest = shape[:axis] + shape[axis:][1:]  # (a negative axis too: shape[axis + 1:] is not it)
        rows = [rng.choice(dim, size=shape[axis], replace=False) for _ in range(math.prod(rest))]
        idx = np.array(rows, dtype=int).reshape(math.prod(rest), shape[axis])
        idx = np.moveaxis(idx.reshape(rest + (shape[axis],)), -1, axis)
        if allow_negative:
            idx[rng.choice([False, True], idx.shape)] -= dim
        return idx

    return fn


def rand_bool(rng):
    def gen(shape, dtype):
        return _cast_to_shape(np.asarray(rng.rand(*_dims_of_shape(shape)) < 0.5, dtype=dtype), shape, dtype)

    return gen


# --- parameterized cases ---------------------------------------------------------------------


@functools.cache
def _choice(n, m):
    return np.random.RandomState(42).choice(n, size=m, replace=False)


def sample_product_testcases(*args, **kw):
    """``NUM_GENERATED_CASES`` cases of the product of ``args`` (lists of dicts) and ``kw``."""
    groups = [list(a) for a in args]
    options = [(k, list(v)) for k, v in kw.items()]
    n = math.prod(len(g) for g in groups) * math.prod(len(v) for _, v in options)
    cases = []
    for i in _choice(n, min(n, NUM_GENERATED_CASES.value)):
        case = {}
        for g in groups:  # mixed radix: the first group varies fastest
            case.update(g[i % len(g)])
            i //= len(g)
        for k, v in options:
            case[k] = v[i % len(v)]
            i //= len(v)
        cases.append(case)
    return cases


def sample_product(*args, **kw):
    return parameterized.parameters(*sample_product_testcases(*args, **kw))


def cases_from_gens(*gens):
    per_size = int(NUM_GENERATED_CASES.value / 3) + 1
    for size in (1, 3, 10):
        for i in range(per_size):
            yield (f"_{size}_{i}",) + tuple(gen(size) for gen in gens)


def named_cases_from_sampler(gen):
    seen, retries = set(), 0
    rng = np.random.RandomState(42)

    def choose_one(x):
        x = x if isinstance(x, (list, tuple)) else list(x)
        return [x[rng.randint(len(x))]]

    while len(seen) < NUM_GENERATED_CASES.value and retries < _MAX_RETRIES:
        retries += 1
        cases = list(gen(choose_one))
        if not cases:
            continue
        if len(cases) > 1:
            raise RuntimeError("Generator is expected to only return a single case when sampling")
        if cases[0]["testcase_name"] in seen:
            continue
        retries = 0
        seen.add(cases[0]["testcase_name"])
        yield cases[0]


_sanitize = re.compile(r"[ \"'\[\](){}<>=,._]+")


def sanitize_test_name(s: str) -> str:
    return _sanitize.sub("_", s)


def parameterized_filterable(*, kwargs, testcase_name=None, one_containing=None):
    cases = []
    for kw in kwargs:
        name = kw.get("testcase_name") or (testcase_name(kw) if testcase_name else None)
        name = sanitize_test_name(str(name)) if name else f"_{len(cases)}"  # (JAX: str() of it)
        cases.append({"testcase_name": name, **{k: v for k, v in kw.items() if k != "testcase_name"}})
    if one_containing is not None:
        cases = [c for c in cases if one_containing in c["testcase_name"]][:1]
    return parameterized.named_parameters(*cases)


# --- config ----------------------------------------------------------------------------------


def with_config(**kwds):
    def decorator(cls):
        assert inspect.isclass(cls) and issubclass(cls, JaxTestCase)
        merged = {}
        for base in cls.__bases__:
            merged.update(getattr(base, "_default_thread_local_config", {}))
        merged.update(kwds)
        cls._default_thread_local_config = merged
        return cls

    return decorator


with_global_config = with_config


@contextlib.contextmanager
def global_config_context(**kwds):
    with contextlib.ExitStack() as stack:
        for name, value in kwds.items():
            stack.enter_context(_config.config_states[name](value))
        yield


thread_local_config_context = global_config_context


def strict_promotion_if_dtypes_match(dtypes):
    same = all(d == dtypes[0] for d in dtypes)
    return _config.numpy_dtype_promotion("strict" if same else "standard")


def promote_like_jnp(fun, inexact=False):
    promote = promote_dtypes_inexact if inexact else promote_dtypes

    def wrapper(*args, **kw):
        flat, tree = funcgrad.tree_util.tree_flatten(args)
        return fun(*funcgrad.tree_util.tree_unflatten(tree, promote(*flat)), **kw)

    return wrapper


def to_default_dtype(arr):
    arr = np.asarray(arr)
    default = _dtypes.default_types.get(arr.dtype.kind)
    return arr.astype(default()) if default else arr


def with_jax_dtype_defaults(func, use_defaults=True):
    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        result = func(*args, **kwargs)
        tm = funcgrad.tree_util.tree_map
        if isinstance(use_defaults, bool):
            return tm(to_default_dtype, result) if use_defaults else result
        return tm(lambda a, use: to_default_dtype(a) if use else a, result, use_defaults)

    return wrapped


def num_float_bits(dtype) -> int:
    return np.finfo(_dtypes.canonicalize_dtype(dtype)).bits


_version_re = re.compile(r"([0-9]+(?:\.[0-9]+)*)(?:(rc|dev).*)?")


def parse_version(v: str):
    m = _version_re.match(v)
    if m is None:
        raise ValueError(f"Unable to parse version '{v}'")
    return tuple(int(x) for x in m.group(1).split("."))


def numpy_version():
    return parse_version(np.__version__)


def jaxlib_version():
    import jaxlib

    return parse_version(jaxlib.__version__)


class ignore_warning:
    """Context manager and decorator: ignore warnings matching ``category``/``message``."""

    def __init__(self, **kw):
        self.kw = kw

    def __enter__(self):
        self._cm = warnings.catch_warnings()
        self._cm.__enter__()
        warnings.filterwarnings("ignore", **self.kw)

    def __exit__(self, *exc):
        return self._cm.__exit__(*exc)

    def __call__(self, f):
        @functools.wraps(f)
        def wrapper(*a, **k):
            with ignore_warning(**self.kw):
                return f(*a, **k)

        return wrapper


@contextlib.contextmanager
def set_env(**kwargs):
    old = {k: os.environ.get(k) for k in kwargs}
    os.environ.update({k: v for k, v in kwargs.items() if v is not None})
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def create_mesh(mesh_shape, axis_names, iota_order=False, axis_types=None):
    size = math.prod(mesh_shape)
    if len(funcgrad.devices()) < size:
        raise unittest.SkipTest(f"Test requires {size} global devices and found {len(funcgrad.devices())}.")
    if axis_types is None:  # (JAX's test meshes are Auto, where make_mesh's default is Explicit)
        axis_types = (funcgrad.sharding.AxisType.Auto,) * len(mesh_shape)
    names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)  # (as JAX's Mesh)
    return funcgrad.sharding.make_mesh(tuple(mesh_shape), names, axis_types)


@contextlib.contextmanager
def with_mesh(named_shape):
    """The block (or, as a decorator, the test) under ``with Mesh(...)`` of the first devices."""
    axis_names = tuple(n for n, _ in named_shape)
    shape = tuple(s for _, s in named_shape)
    size = math.prod(shape)
    devices = funcgrad.local_devices()
    if len(devices) < size:
        raise unittest.SkipTest(f"Test requires {size} local devices")
    with funcgrad.sharding.Mesh(np.array(devices[:size]).reshape(shape), axis_names):
        yield


def with_mesh_from_kwargs(f):
    return lambda *args, **kwargs: with_mesh(kwargs["mesh"])(f)(*args, **kwargs)


def iter_eqns(jaxpr):
    yield from jaxpr.eqns
    for eqn in jaxpr.eqns:
        for p in eqn.params.values():
            inner = getattr(p, "jaxpr", p)
            if hasattr(inner, "eqns"):
                yield from iter_eqns(inner)


def _dot_params(fun, args, key):
    jaxpr = funcgrad.make_jaxpr(fun)(*args)
    return [e.params.get(key) for e in iter_eqns(jaxpr.jaxpr) if str(e.primitive) == "dot_general"]


def assert_dot_precision(expected_precision, fun, *args):
    for precision in _dot_params(fun, args, "precision"):
        msg = f"Unexpected precision: {expected_precision} != {precision}"
        if isinstance(precision, tuple):
            assert precision[0] == expected_precision and precision[1] == expected_precision, msg
        else:
            assert precision == expected_precision, msg


def assert_dot_preferred_element_type(expected, fun, *args, **kwargs):
    for t in _dot_params(functools.partial(fun, **kwargs), args, "preferred_element_type"):
        assert expected == t, f"Unexpected preferred_element_type: {expected} != {t}"


def complex_plane_sample(dtype, size_re=10, size_im=None):
    """A grid over the complex plane: infinities, the extreme finite values, the smallest normal and
    log-spaced points in between, on both axes (as JAX's helper lays it out)."""
    size_im = size_re if size_im is None else size_im
    finfo = np.finfo(dtype)

    def axis(size):
        pts = np.zeros(3 + 2 * size, dtype=finfo.dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            ratio = 3.3219280948873626
            neg = -np.logspace(finfo.maxexp / ratio, finfo.minexp / ratio, size, dtype=finfo.dtype)
            pts[1 : size + 1] = neg
            pts[-size - 1 : -1] = -neg[::-1]
        if size > 1:
            pts[1], pts[-2] = finfo.min, finfo.max
        if size > 0:
            pts[size], pts[-size - 1] = -finfo.tiny, finfo.tiny
        pts[0], pts[-1] = -np.inf, np.inf
        return pts

    re_pts, im_pts = axis(size_re), axis(size_im)
    real = re_pts.reshape((1, -1)).repeat(3 + 2 * size_im, 0).astype(dtype)
    imag = np.zeros((3 + 2 * size_im, 3 + 2 * size_re), dtype=dtype)
    imag.imag[:] = im_pts.reshape((-1, 1))  # set in place: 1j * inf would make a NaN real part
    return real + imag


# JAX's mpmath references of the complex functions (pure NumPy/mpmath, run on NumPy values; the
# accuracy tests compare funcgrad's results with them), read from the oracle's test_util.
_oracle_source.define("_src/test_util.py", ("vectorize_with_mpmath", "numpy_with_mpmath"), globals())


# --- dtype lists -----------------------------------------------------------------------------


class _LazyDtypes:
    def supported(self, dtypes):
        ok = supported_dtypes()
        return [d for d in dtypes if d in ok]

    custom_floats = property(
        lambda self: self.supported(
            [
                _dtypes.bfloat16, _dtypes.float8_e4m3b11fnuz, _dtypes.float8_e4m3fn,
                _dtypes.float8_e4m3fnuz, _dtypes.float8_e5m2, _dtypes.float8_e5m2fnuz,
                _dtypes.float8_e3m4, _dtypes.float8_e4m3, _dtypes.float8_e8m0fnu, _dtypes.float4_e2m1fn,
            ]
        )
    )  # fmt: skip
    floating = property(lambda self: self.supported([np.float32, np.float64]))
    all_floating = property(
        lambda self: self.supported([_dtypes.bfloat16, np.float16, np.float32, np.float64])
    )
    integer = property(lambda self: self.supported([np.int32, np.int64]))
    all_integer = property(lambda self: self.supported([np.int8, np.int16, np.int32, np.int64]))
    unsigned = property(lambda self: self.supported([np.uint32, np.uint64]))
    all_unsigned = property(lambda self: self.supported([np.uint8, np.uint16, np.uint32, np.uint64]))
    complex = property(lambda self: self.supported([np.complex64, np.complex128]))
    boolean = property(lambda self: self.supported([np.bool_]))
    inexact = property(lambda self: self.floating + self.complex)
    all_inexact = property(lambda self: self.all_floating + self.complex)
    numeric = property(lambda self: self.floating + self.integer + self.unsigned + self.complex)
    all = property(
        lambda self: self.all_floating + self.all_integer + self.all_unsigned + self.complex + self.boolean
    )


dtypes = _LazyDtypes()


# --- the test case ---------------------------------------------------------------------------


def is_sequence(x) -> bool:
    try:
        iter(x)
    except TypeError:
        return False
    return True


class JaxTestCase(parameterized.TestCase):
    """JAX's test case on funcgrad: the same default flags (strict dtype promotion, rank promotion
    an error), a per-test ``RandomState``, and JAX's closeness assertions."""

    _default_thread_local_config = {
        "jax_enable_checks": True,
        "jax_numpy_dtype_promotion": "strict",
        "jax_numpy_rank_promotion": "raise",
        "jax_traceback_filtering": "off",
        "jax_legacy_prng_key": "error",
    }

    def setUp(self):
        super().setUp()
        self._rng = np.random.RandomState(zlib.adler32(self._testMethodName.encode()))
        for name, value in self._default_thread_local_config.items():
            self.enterContext(_config.config_states[name](value))

    def rng(self):
        return self._rng

    def assertCacheMisses(self, func, *, cpp=None, aot_call=None, tracing=None, lowering=None,
                          compilation_after_persistent_cache_miss=None):  # fmt: skip
        """JAX's counts of cache misses while ``func`` runs, from funcgrad's monitoring events: a
        jitted call that misses its caches traces (``cpp``, ``tracing``), a program is lowered
        (``lowering``) and compiled (``aot_call``: a compiled call that compiles again, and
        ``compilation_after_persistent_cache_miss``)."""
        counts = {"trace": 0, "lower": 0, "compile": 0}
        events = {
            _monitoring.JAXPR_TRACE_EVENT: "trace",
            _monitoring.JAXPR_TO_MLIR_MODULE_EVENT: "lower",
            _monitoring.BACKEND_COMPILE_EVENT: "compile",
        }

        def listen(event, duration, **kwargs):
            if event in events:
                counts[events[event]] += 1

        funcgrad.monitoring.register_event_duration_secs_listener(listen)
        try:
            func()
        finally:
            funcgrad.monitoring.unregister_event_duration_listener(listen)
        for expected, got in (
            (cpp, counts["trace"]), (aot_call, counts["compile"]), (tracing, counts["trace"]),
            (lowering, counts["lower"]), (compilation_after_persistent_cache_miss, counts["compile"]),
        ):  # fmt: skip
            if expected is not None:
                self.assertEqual(expected, got)

    def assertArraysEqual(self, actual, desired, *, check_dtypes=True, err_msg="", allow_object_dtype=False,
                          verbose=True):  # fmt: skip
        if check_dtypes:
            self.assertDtypesMatch(actual, desired)
        actual, desired = np.asarray(actual), np.asarray(desired)
        if not allow_object_dtype and object in (actual.dtype, desired.dtype):
            raise TypeError("assertArraysEqual may be poorly behaved when np.asarray casts to dtype=object.")
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(actual, desired, err_msg=err_msg, verbose=verbose)

    def assertArraysAllClose(self, actual, desired, *, check_dtypes=True, atol=None, rtol=None, err_msg=""):
        self.assertEqual(actual.shape, desired.shape)
        atol = max(tolerance(_dtype(actual), atol), tolerance(_dtype(desired), atol))
        rtol = max(tolerance(_dtype(actual), rtol), tolerance(_dtype(desired), rtol))
        _assert_numpy_allclose(actual, desired, atol=atol, rtol=rtol, err_msg=err_msg)
        if check_dtypes:
            self.assertDtypesMatch(actual, desired)

    def assertDtypesMatch(self, actual, desired, *, canonicalize_dtypes=True):
        if not _x64() and canonicalize_dtypes:
            self.assertEqual(
                _dtypes.canonicalize_dtype(_dtype(actual)), _dtypes.canonicalize_dtype(_dtype(desired))
            )
        else:
            self.assertEqual(_dtype(actual), _dtype(desired))

    def assertAllClose(self, actual, desired, *, check_dtypes=True, atol=None, rtol=None,
                       canonicalize_dtypes=True, err_msg=""):  # fmt: skip
        kw = dict(check_dtypes=check_dtypes, atol=atol, rtol=rtol, canonicalize_dtypes=canonicalize_dtypes,
                  err_msg=err_msg)  # fmt: skip
        if isinstance(actual, dict):
            self.assertIsInstance(desired, dict)
            self.assertEqual(set(actual), set(desired))
            for k in actual:
                self.assertAllClose(actual[k], desired[k], **kw)
        elif is_sequence(actual) and not hasattr(actual, "__array__"):
            if not (is_sequence(desired) and not hasattr(desired, "__array__")):
                self.fail(f"Expected sequence, got {desired}")
            self.assertEqual(len(actual), len(desired))
            for a, d in zip(actual, desired):
                self.assertAllClose(a, d, **kw)
        elif hasattr(actual, "__array__") or np.isscalar(actual):
            if not (hasattr(desired, "__array__") or np.isscalar(desired)):
                self.fail(f"Expected array-like, got {desired}")
            if check_dtypes:
                self.assertDtypesMatch(actual, desired, canonicalize_dtypes=canonicalize_dtypes)
            self.assertArraysAllClose(np.asarray(actual), np.asarray(desired), check_dtypes=False, atol=atol,
                                      rtol=rtol, err_msg=err_msg)  # fmt: skip
        elif actual == desired:
            return
        else:
            raise TypeError((type(actual), type(desired)))

    def assertMultiLineStrippedEqual(self, expected, what):
        squash = re.compile(r"\s*\n\s*")
        e = re.sub(squash, "\n", textwrap.dedent(expected).strip())
        w = re.sub(squash, "\n", textwrap.dedent(what).strip())
        self.assertMultiLineEqual(e, w, msg=f"Found\n{what}\nExpecting\n{expected}")

    @contextlib.contextmanager
    def assertNoWarnings(self):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            yield

    @contextlib.contextmanager
    def _recorded(self, warning, matches, what):
        with warnings.catch_warnings(record=True) as ws:
            warnings.simplefilter("always")
            yield
        if not any(isinstance(w.message, warning) and matches(str(w.message)) for w in ws):
            self.fail(f"Expected warning not found {warning}:{what!r}, got {[str(w.message) for w in ws]}")

    def assertWarns(self, warning, *, msg=None):
        return self._recorded(warning, lambda s: msg is None or msg in s, msg)

    def assertWarnsRegex(self, warning, regex):
        pattern = re.compile(regex) if isinstance(regex, str) else regex
        return self._recorded(warning, lambda s: pattern is None or bool(pattern.search(s)), regex)

    def assertDeprecationWarnsOrRaises(self, deprecation_id, message, *, error_class=ValueError):
        return self.assertWarnsRegex(DeprecationWarning, message)

    def _CompileAndCheck(self, fun, args_maker, *, check_dtypes=True, tol=None, rtol=None, atol=None,
                         check_cache_misses=True):  # fmt: skip
        """``fun`` eagerly and under ``jit`` (traced once, then from the cache) give the same values."""
        args = args_maker()
        tracing = [True]

        def wrapped(*a):
            self.assertTrue(tracing[0])
            return fun(*a)

        python_ans = fun(*args)
        tm = funcgrad.tree_util.tree_map
        self.assertEqual(tm(np.shape, python_ans), tm(lambda x: np.shape(np.asarray(x)), python_ans))
        python_ans = fun(*args)
        cfun = funcgrad.jit(wrapped)
        monitored = cfun(*args)
        tracing[0] = False
        compiled = cfun(*args)
        close = functools.partial(
            self.assertAllClose, check_dtypes=check_dtypes, atol=atol or tol, rtol=rtol or tol
        )
        close(monitored, python_ans)
        close(compiled, python_ans)
        args = args_maker()
        tracing[0] = True
        python_ans = fun(*args)
        tracing[0] = False
        close(cfun(*args), python_ans)

    def _CheckAgainstNumpy(self, numpy_reference_op, lax_op, args_maker, check_dtypes=True, tol=None,
                           atol=None, rtol=None, canonicalize_dtypes=True):  # fmt: skip
        args = args_maker()
        lax_ans = lax_op(*args)
        numpy_ans = numpy_reference_op(*args)
        self.assertAllClose(lax_ans, numpy_ans, check_dtypes=check_dtypes, atol=atol or tol, rtol=rtol or tol,
                            canonicalize_dtypes=canonicalize_dtypes)  # fmt: skip


class BufferDonationTestCase(JaxTestCase):
    def assertDeleted(self, x):
        self.assertTrue(x.is_deleted())

    def assertNotDeleted(self, x):
        self.assertFalse(x.is_deleted())


del jnp


def with_explicit_mesh(sizes, names, axis_types=None, iota_order=False):
    """The test run under ``set_mesh`` of an Explicit mesh, passed as ``mesh=``."""
    axis_types = (funcgrad.sharding.AxisType.Explicit,) * len(names) if axis_types is None else axis_types

    def decorator(fn):
        @functools.wraps(fn)
        def mesh_fn(*args, **kwargs):
            mesh = create_mesh(sizes, names, iota_order, axis_types=axis_types)
            with funcgrad.sharding.set_mesh(mesh):
                return fn(*args, **kwargs, mesh=mesh)

        return mesh_fn

    return decorator


def _pjit_implementation(*args, **kwargs):
    return funcgrad.jit(*args, **kwargs)


def _noop_jit_implementation(fun, *args, **kwargs):
    return fun


_pjit_implementation._name = "jit"
_noop_jit_implementation._name = "noop"
# (api_test runs some tests under jit and without: JAX's pair of implementations)
JIT_IMPLEMENTATION = (_pjit_implementation, _noop_jit_implementation)


def check_raises(thunk, err_type, msg):
    """JAX's: ``thunk()`` raises ``err_type`` whose message starts with ``msg``."""
    try:
        thunk()
        raise AssertionError(f"{err_type.__name__} not raised")
    except err_type as e:
        assert str(e).startswith(msg), f"\n{e}\n\n{msg}\n"


def check_raises_regexp(thunk, err_type, pattern):
    """JAX's: ``thunk()`` raises ``err_type`` whose message matches ``pattern`` at its start."""
    try:
        thunk()
        raise AssertionError(f"{err_type.__name__} not raised")
    except err_type as e:
        assert re.match(pattern, str(e)), f"{e}\n\n{pattern}\n"


def _check_dtypes_match(xs, ys):
    """JAX's: leaf by leaf, equal dtypes (canonical ones in 32-bit mode)."""

    def match(x, y):
        a, b = _dtype(x), _dtype(y)
        if not _x64():
            a, b = _dtypes.canonicalize_dtype(a), _dtypes.canonicalize_dtype(b)
        assert a == b, (a, b)

    funcgrad.tree_util.tree_map(match, xs, ys)
