/* xla_bridge._hot_call: the hot path of a jitted call, in C (NOTE: [array in C]).
 *
 * Layer: xla_bridge. Imports nothing and knows no jaxlib type: ``configure`` hands it, once, the
 * objects its guards compare with, and the native dispatcher it calls is an opaque callable.
 *
 * HotCall is the base type of ``xla_bridge.dispatch.Dispatcher``. Calling an instance takes the
 * native route of the route table (NOTE: [jitted call route] in xla_bridge/dispatch.py) in C: it
 * is the twin of ``Dispatcher._native_route`` (read it for the why of each step), under the same
 * guards (no redirect is set, the current trace is the eager one, jax's config is not loaded, the
 * dispatcher for the call is made), with the same keys:
 *
 *   - top-level leaves (NumPy arrays, scalars, Arrays holding a device buffer), no static or
 *     keyword arguments: ``_native_plain(*leaves)``;
 *   - static arguments, containers or keyword arguments: ``_native(tree, statics, *leaves)``,
 *     split as ``Dispatcher._split`` splits and keyed as ``strict_static_key`` keys (static positions
 *     as ``(position, value, type)`` triples, static keywords as sorted ``(name, value, type)``
 *     triples in a ``_KwStatics``: NOTE: [strict static keys]), containers flattened by the
 *     pytree registry, Arrays swapped for their buffers; so both twins share the cache entries
 *     (tests/bridge/test_dispatch_routes.py drives both with the same cases).
 *
 *   A call that passed a NumPy array of ``_WAIT_BYTES`` or more waits for its outputs when
 *   ``_native_wait`` says so (NOTE: [synchronous CPU dispatch]). Outputs: a dict (several) -> ``self._native_outputs(res)``, else
 *   ``Array._from_buffer(res, res.aval.weak_type)``. Anything else (a host-backed Array's first
 *   call, a missing static argument, an unhashable one, a dispatcher not made yet) goes to
 *   ``self._dispatch(args, kwargs)``, which words every error.
 *
 * ``_native_calls`` counts the calls that took the native route (``_dispatch_hits``).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

/* The only C field is the counter. The native dispatcher is read from the instance's __dict__
   (``_native_plain``), where the Python subclass keeps it with the rest of its state: the
   subclass then owns every object reference, and this type needs no GC support of its own. */
typedef struct {
    PyObject_HEAD
    Py_ssize_t calls; /* _native_calls */
} HotCall;

/* Set once by configure(). */
static PyObject *g_state;        /* the kernel's thread-local trace state (has .trace) */
static PyObject *g_eval_trace;   /* the EvalTrace type */
static PyObject *g_jax_config;   /* "jax._src.config": while it is in sys.modules, take the slow path */
static PyObject *g_ndarray;      /* numpy.ndarray */
static PyObject *g_scalars;      /* frozenset of scalar types passed through as they are */
static PyObject *g_array;        /* funcgrad.Array */
static PyObject *g_from_buffer;  /* Array._from_buffer */
static PyObject *g_kw_statics;   /* dispatch._KwStatics */
static PyObject *g_flatten;      /* the pytree registry's flatten: obj -> (leaves list, treedef) */
static PyObject *g_call_state;   /* dispatch._call_state: {"redirect": None or a callable} */
static Py_ssize_t g_wait_bytes;  /* dispatch._WAIT_BYTES: a NumPy argument this large makes a call wait */

static PyObject *s_native_plain, *s_native, *s_static_argnums, *s_static_argnames, *s_named_positional, *s_trace, *s_buffer, *s_aval, *s_weak_type, *s_dispatch, *s_native_outputs, *s_redirect, *s_native_wait, *s_block, *s_nbytes;

static PyObject *
slow(HotCall *self, PyObject *args, PyObject *kwargs)
{
    PyObject *kw = kwargs;
    PyObject *res;
    if (kw == NULL) {
        kw = PyDict_New();
        if (kw == NULL) {
            return NULL;
        }
    }
    else {
        Py_INCREF(kw);
    }
    res = PyObject_CallMethodObjArgs((PyObject *)self, s_dispatch, args, kw, NULL);
    Py_DECREF(kw);
    return res;
}

/* Each Array in ``seq`` (a tuple or list) replaced by its device buffer, in a fresh list when
   ``seq`` is a tuple (never the caller's own tuple, f(*t)) or in place in a list we own.
   Returns 1 when every element is a leaf the native dispatcher takes as it is (a NumPy array, a
   scalar, an Array with a buffer), 0 when ``check_leaves`` and some element is not (a container:
   flatten first), 2 when an Array has no device buffer yet (the Python path makes and caches
   one), -1 on error. ``*out`` is set (new reference) only when the result is 1 and something
   was replaced. ``*host`` is set to 1 when a NumPy array of ``wait_bytes`` or more was seen. */
static int
swap_buffers(PyObject *seq, int check_leaves, PyObject **out, int *host)
{
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    PyObject *copy = NULL;
    *out = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = items[i];
        PyObject *t = (PyObject *)Py_TYPE(x);
        if (t == g_ndarray) {
            if (!*host) { /* is it large enough for PJRT to copy it in the background? */
                PyObject *nbytes = PyObject_GetAttr(x, s_nbytes);
                Py_ssize_t n = nbytes != NULL ? PyLong_AsSsize_t(nbytes) : -1;
                Py_XDECREF(nbytes);
                if (n == -1 && PyErr_Occurred()) {
                    Py_XDECREF(copy);
                    return -1;
                }
                *host = n >= g_wait_bytes;
            }
            continue;
        }
        if (t == g_array) {
            PyObject *buf = PyObject_GetAttr(x, s_buffer);
            if (buf == NULL) {
                Py_XDECREF(copy);
                return -1;
            }
            if (buf == Py_None) {
                Py_DECREF(buf);
                Py_XDECREF(copy);
                return 2;
            }
            if (copy == NULL) {
                if (PyList_CheckExact(seq)) {
                    copy = Py_NewRef(seq); /* a list the caller made: edit it in place */
                }
                else {
                    copy = PySequence_List(seq);
                    if (copy == NULL) {
                        Py_DECREF(buf);
                        return -1;
                    }
                }
            }
            PyList_SetItem(copy, i, buf); /* steals buf, drops the Array */
            continue;
        }
        if (!check_leaves) {
            continue; /* leaves of a flattened tree: the native dispatcher judges the rest */
        }
        int scalar = PySet_Contains(g_scalars, t);
        if (scalar <= 0) {
            Py_XDECREF(copy);
            return scalar; /* 0: not a leaf; -1: error */
        }
    }
    *out = copy;
    return 1;
}

/* native(tree, statics, *leaves) */
static PyObject *
call_native(PyObject *native, PyObject *tree, PyObject *statics, PyObject *leaves)
{
    Py_ssize_t n = PySequence_Fast_GET_SIZE(leaves);
    PyObject *argv = PyTuple_New(n + 2);
    if (argv == NULL) {
        return NULL;
    }
    PyTuple_SET_ITEM(argv, 0, Py_NewRef(tree));
    PyTuple_SET_ITEM(argv, 1, Py_NewRef(statics));
    PyObject **items = PySequence_Fast_ITEMS(leaves);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTuple_SET_ITEM(argv, 2 + i, Py_NewRef(items[i]));
    }
    PyObject *res = PyObject_Call(native, argv, NULL);
    Py_DECREF(argv);
    return res;
}

/* NOTE: [synchronous CPU dispatch]: a call that passed a NumPy array waits for its outputs when
   the instance's ``_native_wait`` says so (dispatch._wait). Steals ``res``; NULL on error. */
static PyObject *
wait_outputs(PyObject *dict, PyObject *res, int host)
{
    if (res == NULL || !host) {
        return res;
    }
    PyObject *wait = PyDict_GetItemWithError(dict, s_native_wait); /* borrowed */
    int yes = wait != NULL ? PyObject_IsTrue(wait) : (PyErr_Occurred() ? -1 : 0);
    if (yes <= 0) {
        if (yes < 0) {
            Py_DECREF(res);
            return NULL;
        }
        return res;
    }
    if (PyDict_CheckExact(res)) {
        PyObject *key, *bufs;
        Py_ssize_t pos = 0;
        while (PyDict_Next(res, &pos, &key, &bufs)) {
            PyObject *seq = PySequence_Fast(bufs, "hot path: several outputs must be a list");
            if (seq == NULL) {
                Py_DECREF(res);
                return NULL;
            }
            for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
                PyObject *r = PyObject_CallMethodNoArgs(PySequence_Fast_GET_ITEM(seq, i), s_block);
                if (r == NULL) {
                    Py_DECREF(seq);
                    Py_DECREF(res);
                    return NULL;
                }
                Py_DECREF(r);
            }
            Py_DECREF(seq);
        }
        return res;
    }
    PyObject *r = PyObject_CallMethodNoArgs(res, s_block);
    if (r == NULL) {
        Py_DECREF(res);
        return NULL;
    }
    Py_DECREF(r);
    return res;
}

static PyObject *
wrap_outputs(HotCall *self, PyObject *res)
{
    if (res == NULL) {
        return NULL;
    }
    if (PyDict_CheckExact(res)) {
        PyObject *out = PyObject_CallMethodOneArg((PyObject *)self, s_native_outputs, res);
        Py_DECREF(res);
        return out;
    }
    PyObject *aval = PyObject_GetAttr(res, s_aval);
    if (aval == NULL) {
        Py_DECREF(res);
        return NULL;
    }
    PyObject *weak = PyObject_GetAttr(aval, s_weak_type);
    Py_DECREF(aval);
    if (weak == NULL) {
        Py_DECREF(res);
        return NULL;
    }
    PyObject *call_args[2] = {res, weak};
    PyObject *out = PyObject_Vectorcall(g_from_buffer, call_args, 2, NULL);
    Py_DECREF(weak);
    Py_DECREF(res);
    return out;
}

/* The native dispatcher kept under ``key`` in the instance dict (new reference), or NULL
   (error set, or not made yet). */
static PyObject *
native_of(PyObject *dict, PyObject *key)
{
    PyObject *native = PyDict_GetItemWithError(dict, key);
    if (native == NULL || native == Py_None) {
        return NULL;
    }
    /* A strong reference: a cache miss inside the call may replace the dict's entry. */
    return Py_NewRef(native);
}

/* The route with static arguments or containers: native(treedef or count, statics, *leaves),
   as Dispatcher._dispatch does it. ``has_containers``: the caller already found an argument that
   is not a leaf (so the arguments are flattened without scanning them again). NULL with no error
   set: take the Python path. */
static PyObject *
tree_route(HotCall *self, PyObject *dict, PyObject *args, PyObject *kwargs, PyObject *snums, int has_containers,
           int host)
{
    Py_ssize_t n = PyTuple_GET_SIZE(args), ns = PyTuple_GET_SIZE(snums);
    PyObject *statics = NULL, *dyn = NULL, *tree = NULL, *leaves = NULL, *res = NULL;
    if (ns) {
        PyObject *npos_obj = PyDict_GetItemWithError(dict, s_named_positional);
        if (npos_obj == NULL) {
            return NULL;
        }
        Py_ssize_t npos = PyLong_AsSsize_t(npos_obj);
        Py_ssize_t last = PyLong_AsSsize_t(PyTuple_GET_ITEM(snums, ns - 1));
        if ((npos == -1 || last == -1) && PyErr_Occurred()) {
            return NULL;
        }
        if (last >= (n > npos ? n : npos)) {
            return NULL; /* a static argument is missing: _stage words the error */
        }
        statics = PyList_New(0);
        dyn = PyList_New(0);
        if (statics == NULL || dyn == NULL) {
            goto done;
        }
        Py_ssize_t j = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            int is_static = 0;
            for (; j < ns; j++) {
                Py_ssize_t s = PyLong_AsSsize_t(PyTuple_GET_ITEM(snums, j));
                if (s >= i) {
                    is_static = s == i;
                    break;
                }
            }
            int failed;
            if (is_static) { /* a (position, value, type) triple, as strict_static_key makes it
                                (NOTE: [strict static keys] in dispatch.py) */
                PyObject *v = PyTuple_GET_ITEM(args, i);
                PyObject *pair = Py_BuildValue("(nOO)", i, v, (PyObject *)Py_TYPE(v));
                failed = pair == NULL || PyList_Append(statics, pair) < 0;
                Py_XDECREF(pair);
            }
            else {
                failed = PyList_Append(dyn, PyTuple_GET_ITEM(args, i)) < 0;
            }
            if (failed) {
                goto done;
            }
        }
        Py_SETREF(statics, PyList_AsTuple(statics));
        Py_SETREF(dyn, PyList_AsTuple(dyn));
        if (statics == NULL || dyn == NULL) {
            goto done;
        }
    }
    else {
        statics = PyTuple_New(0);
        dyn = Py_NewRef(args);
        if (statics == NULL) {
            goto done;
        }
    }
    PyObject *swapped;
    int r;
    if (kwargs != NULL) {
        /* Keyword arguments: static ones join the statics (sorted by name, in a _KwStatics),
           the others are flattened with the positional ones as (dyn, dyn_kw). */
        PyObject *names = PyDict_GetItemWithError(dict, s_static_argnames); /* borrowed */
        if (names == NULL) {
            goto done;
        }
        PyObject *static_kw = PyList_New(0), *dyn_kw = PyDict_New();
        PyObject *key, *value;
        Py_ssize_t pos = 0;
        int ok = static_kw != NULL && dyn_kw != NULL;
        while (ok && PyDict_Next(kwargs, &pos, &key, &value)) {
            int is_static = PySequence_Contains(names, key);
            if (is_static < 0) {
                ok = 0;
            }
            else if (is_static) {
                PyObject *item = PyTuple_Pack(3, key, value, (PyObject *)Py_TYPE(value)); /* typed */
                ok = item != NULL && PyList_Append(static_kw, item) == 0;
                Py_XDECREF(item);
            }
            else {
                ok = PyDict_SetItem(dyn_kw, key, value) == 0;
            }
        }
        ok = ok && PyList_Sort(static_kw) == 0;
        PyObject *kw_tuple = ok ? PyList_AsTuple(static_kw) : NULL;
        /* _KwStatics(statics, kw_tuple), made as the tuple it is (a NamedTuple: a tuple subclass
           without fields of its own), not through its Python __new__. */
        PyObject *kw_statics = NULL;
        if (kw_tuple != NULL) {
            PyTypeObject *kw_type = (PyTypeObject *)g_kw_statics;
            kw_statics = kw_type->tp_alloc(kw_type, 2);
            if (kw_statics != NULL) {
                PyTuple_SET_ITEM(kw_statics, 0, Py_NewRef(statics));
                PyTuple_SET_ITEM(kw_statics, 1, Py_NewRef(kw_tuple));
            }
        }
        PyObject *pair = kw_statics != NULL ? PyTuple_Pack(2, dyn, dyn_kw) : NULL;
        Py_XDECREF(kw_tuple);
        Py_XDECREF(static_kw);
        Py_XDECREF(dyn_kw);
        if (pair == NULL) {
            Py_XDECREF(kw_statics);
            goto done;
        }
        Py_SETREF(statics, kw_statics);
        Py_SETREF(dyn, pair);
        r = 0; /* always flattened */
    }
    else if (has_containers) {
        r = 0;
    }
    else {
        r = swap_buffers(dyn, 1, &swapped, &host);
    }
    if (r < 0 || r == 2) {
        goto done;
    }
    if (r == 1) { /* top-level leaves: the argument count is the tree */
        tree = PyLong_FromSsize_t(PyTuple_GET_SIZE(dyn));
        leaves = swapped != NULL ? swapped : Py_NewRef(dyn);
    }
    else { /* containers: flatten here, so that Arrays are seen */
        PyObject *flat = PyObject_CallOneArg(g_flatten, dyn);
        if (flat == NULL) {
            goto done;
        }
        if (!PyTuple_Check(flat) || PyTuple_GET_SIZE(flat) != 2 || !PyList_Check(PyTuple_GET_ITEM(flat, 0))) {
            Py_DECREF(flat);
            PyErr_SetString(PyExc_SystemError, "hot path: the pytree flatten returned an unexpected value");
            goto done;
        }
        leaves = Py_NewRef(PyTuple_GET_ITEM(flat, 0));
        tree = Py_NewRef(PyTuple_GET_ITEM(flat, 1));
        Py_DECREF(flat);
        r = swap_buffers(leaves, 0, &swapped, &host); /* the flattened list is ours: edited in place */
        Py_XDECREF(swapped);
        if (r != 1) {
            goto done;
        }
    }
    if (tree == NULL) {
        goto done;
    }
    PyObject *native = native_of(dict, s_native);
    if (native == NULL) {
        goto done;
    }
    self->calls++;
    res = call_native(native, tree, statics, leaves);
    Py_DECREF(native);
    if (res == NULL && PyTuple_GET_SIZE(statics) != 0
        && (PyErr_ExceptionMatches(PyExc_TypeError) || PyErr_ExceptionMatches(PyExc_ValueError))) {
        /* jaxlib reports unhashable statics as ValueError/TypeError: the Python path words it. */
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        if (PyObject_Hash(statics) == -1) {
            PyErr_Clear();
            self->calls--;
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
        }
        else {
            PyErr_Restore(type, value, tb);
        }
    }
    else if (res != NULL) {
        res = wrap_outputs(self, wait_outputs(dict, res, host));
    }
done:
    Py_XDECREF(statics);
    Py_XDECREF(dyn);
    Py_XDECREF(tree);
    Py_XDECREF(leaves);
    return res;
}

static PyObject *
HotCall_call(HotCall *self, PyObject *args, PyObject *kwargs)
{
    if (g_state == NULL) {
        return slow(self, args, kwargs);
    }
    PyObject *redirect = PyDict_GetItemWithError(g_call_state, s_redirect); /* borrowed */
    if (redirect != Py_None) {
        if (redirect == NULL && PyErr_Occurred()) {
            return NULL;
        }
        return slow(self, args, kwargs); /* a call-wide mode: the route table's redirect row */
    }
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) == 0) {
        kwargs = NULL;
    }
    PyObject *trace = PyObject_GetAttr(g_state, s_trace);
    if (trace == NULL) {
        return NULL;
    }
    int eager = (PyObject *)Py_TYPE(trace) == g_eval_trace;
    Py_DECREF(trace);
    if (!eager) {
        return slow(self, args, kwargs);
    }
    PyObject *modules = PyImport_GetModuleDict();
    if (modules == NULL || PyDict_Contains(modules, g_jax_config) != 0) {
        if (PyErr_Occurred()) {
            return NULL;
        }
        return slow(self, args, kwargs);
    }
    PyObject *dict = PyObject_GenericGetDict((PyObject *)self, NULL);
    if (dict == NULL) {
        return NULL;
    }
    PyObject *res = NULL;
    int has_containers = 0, host = 0;
    PyObject *snums = PyDict_GetItemWithError(dict, s_static_argnums); /* borrowed */
    if (snums == NULL || !PyTuple_Check(snums)) {
        goto slow_path;
    }
    if (PyTuple_GET_SIZE(snums) == 0 && kwargs == NULL) {
        /* The hot path proper: top-level leaves, the plain dispatcher. */
        PyObject *swapped;
        int r = swap_buffers(args, 1, &swapped, &host);
        if (r < 0) {
            goto done;
        }
        if (r == 1) {
            PyObject *native = native_of(dict, s_native_plain);
            if (native == NULL) {
                Py_XDECREF(swapped);
                goto slow_path;
            }
            self->calls++;
            if (swapped != NULL) {
                PyObject *t = PyList_AsTuple(swapped);
                Py_DECREF(swapped);
                res = t != NULL ? PyObject_Call(native, t, NULL) : NULL;
                Py_XDECREF(t);
            }
            else {
                res = PyObject_Call(native, args, NULL);
            }
            Py_DECREF(native);
            res = wrap_outputs(self, wait_outputs(dict, res, host));
            goto done;
        }
        if (r == 2) {
            goto slow_path;
        }
        has_containers = 1; /* r == 0 */
    }
    res = tree_route(self, dict, args, kwargs, snums, has_containers, host);
    if (res != NULL || PyErr_Occurred()) {
        goto done;
    }
slow_path:
    if (!PyErr_Occurred()) {
        res = slow(self, args, kwargs);
    }
done:
    Py_DECREF(dict);
    return res;
}

static PyMemberDef HotCall_members[] = {
    {"_native_calls", T_PYSSIZET, offsetof(HotCall, calls), 0, "Calls that took the native route."},
    {NULL},
};

/* A static type: no references to own, so object's dealloc serves (the Python subclass adds
   __dict__, __weakref__ and their GC support). */
static PyTypeObject HotCall_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "funcgrad.xla_bridge._hot_call.HotCall",
    .tp_basicsize = sizeof(HotCall),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "The hot path of a jitted call (see xla_bridge/dispatch.py, Dispatcher).",
    .tp_call = (ternaryfunc)HotCall_call,
    .tp_members = HotCall_members,
    .tp_new = PyType_GenericNew,
};

static PyObject *
configure(PyObject *module, PyObject *args)
{
    PyObject *state, *eval_trace, *jax_config, *ndarray, *scalars, *array, *from_buffer, *flatten, *kw_statics;
    PyObject *call_state;
    Py_ssize_t wait_bytes;
    if (!PyArg_ParseTuple(args, "OOUOO!OOOOO!n:configure", &state, &eval_trace, &jax_config, &ndarray,
                          &PyFrozenSet_Type, &scalars, &array, &from_buffer, &flatten, &kw_statics,
                          &PyDict_Type, &call_state, &wait_bytes)) {
        return NULL;
    }
    if (!PyType_Check(kw_statics) || !PyType_IsSubtype((PyTypeObject *)kw_statics, &PyTuple_Type)
        || ((PyTypeObject *)kw_statics)->tp_basicsize != PyTuple_Type.tp_basicsize) {
        PyErr_SetString(PyExc_TypeError, "configure: _KwStatics must be a tuple subclass without fields");
        return NULL;
    }
    Py_XSETREF(g_state, Py_NewRef(state));
    Py_XSETREF(g_eval_trace, Py_NewRef(eval_trace));
    Py_XSETREF(g_jax_config, Py_NewRef(jax_config));
    Py_XSETREF(g_ndarray, Py_NewRef(ndarray));
    Py_XSETREF(g_scalars, Py_NewRef(scalars));
    Py_XSETREF(g_array, Py_NewRef(array));
    Py_XSETREF(g_from_buffer, Py_NewRef(from_buffer));
    Py_XSETREF(g_flatten, Py_NewRef(flatten));
    Py_XSETREF(g_kw_statics, Py_NewRef(kw_statics));
    Py_XSETREF(g_call_state, Py_NewRef(call_state));
    g_wait_bytes = wait_bytes;
    Py_RETURN_NONE;
}

/* NOTE: [XLA's buffers kept between calls]: the cache lives in _buffer_cache.h (no Python objects
   there); these two functions are its Python face. */
#include "_buffer_cache.h"

static PyObject *
buffer_cache_install_py(PyObject *Py_UNUSED(module), PyObject *args)
{
    const char *suffix;
    Py_ssize_t cap;
    if (!PyArg_ParseTuple(args, "sn", &suffix, &cap)) {
        return NULL;
    }
#if BUFFER_CACHE_SUPPORTED
    if (cap < 0) {
        PyErr_SetString(PyExc_ValueError, "buffer_cache_install: cap must be >= 0");
        return NULL;
    }
    return PyLong_FromLong(buffer_cache_install(suffix, (size_t)cap));
#else
    (void)suffix;
    return PyLong_FromLong(0);
#endif
}

static PyObject *
buffer_cache_stats_py(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(args))
{
#if BUFFER_CACHE_SUPPORTED
    pthread_mutex_lock(&bc_lock);
    PyObject *r = Py_BuildValue("{s:i,s:k,s:k,s:n,s:n,s:n,s:n}", "installed", bc_installed, "hits", bc_hits,
                                "maps", __atomic_load_n(&bc_maps, __ATOMIC_RELAXED), "live", (Py_ssize_t)bc_nlive,
                                "kept", (Py_ssize_t)bc_nkept, "kept_bytes", (Py_ssize_t)bc_kept_bytes, "cap",
                                (Py_ssize_t)bc_cap);
    pthread_mutex_unlock(&bc_lock);
    return r;
#else
    return Py_BuildValue("{s:i}", "installed", 0);
#endif
}

static PyObject *
buffer_cache_trim_py(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(args))
{
#if BUFFER_CACHE_SUPPORTED
    size_t bytes;
    Py_BEGIN_ALLOW_THREADS
    bytes = bc_trim();
    Py_END_ALLOW_THREADS
    return PyLong_FromSize_t(bytes);
#else
    return PyLong_FromLong(0);
#endif
}

static PyMethodDef module_methods[] = {
    {"buffer_cache_trim", buffer_cache_trim_py, METH_NOARGS,
     "buffer_cache_trim() -> int: give the buffer cache's kept blocks back to the system; the bytes."},
    {"buffer_cache_install", buffer_cache_install_py, METH_VARARGS,
     "buffer_cache_install(object_suffix, cap_bytes) -> int: serve the large buffers of the loaded "
     "shared object whose path ends with object_suffix from funcgrad's cache, keeping at most "
     "cap_bytes of freed blocks (NOTE: [XLA's buffers kept between calls]); the number of "
     "references redirected (0: none, -1: installed before)."},
    {"buffer_cache_stats", buffer_cache_stats_py, METH_NOARGS,
     "buffer_cache_stats() -> dict: the buffer cache's counters (hits, maps, live, kept, kept_bytes, cap)."},
    {"configure", configure, METH_VARARGS,
     "configure(state, EvalTrace, jax_config_module_name, ndarray, scalar_types, Array, "
     "Array._from_buffer, flatten, _KwStatics, call_state, wait_bytes): the objects the hot path "
     "compares with, calls and reads."},
    {NULL},
};

static int
module_exec(PyObject *module)
{
#define INTERN(var, text)                           \
    if ((var = PyUnicode_InternFromString(text)) == NULL) { \
        return -1;                                  \
    }
    INTERN(s_native_plain, "_native_plain");
    INTERN(s_native, "_native");
    INTERN(s_static_argnums, "_static_argnums");
    INTERN(s_static_argnames, "_static_argnames");
    INTERN(s_named_positional, "_named_positional");
    INTERN(s_trace, "trace");
    INTERN(s_buffer, "_buffer");
    INTERN(s_aval, "aval");
    INTERN(s_weak_type, "weak_type");
    INTERN(s_dispatch, "_dispatch");
    INTERN(s_native_outputs, "_native_outputs");
    INTERN(s_redirect, "redirect");
    INTERN(s_native_wait, "_native_wait");
    INTERN(s_block, "block_until_ready");
    INTERN(s_nbytes, "nbytes");
#undef INTERN
    if (PyType_Ready(&HotCall_type) < 0) {
        return -1;
    }
    Py_INCREF(&HotCall_type);
    if (PyModule_AddObject(module, "HotCall", (PyObject *)&HotCall_type) < 0) {
        Py_DECREF(&HotCall_type);
        return -1;
    }
    return 0;
}

static PyModuleDef_Slot module_slots[] = {{Py_mod_exec, module_exec}, {0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "funcgrad.xla_bridge._hot_call",
    .m_doc = "The hot path of a jitted call in C (xla_bridge.dispatch.Dispatcher's base).",
    .m_size = 0,
    .m_methods = module_methods,
    .m_slots = module_slots,
};

PyMODINIT_FUNC
PyInit__hot_call(void)
{
    return PyModuleDef_Init(&module_def);
}
