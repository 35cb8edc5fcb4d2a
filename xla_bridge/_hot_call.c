/* xla_bridge._hot_call: the hot path of a jitted call, in C (NOTE: [array in C]).
 *
 * Layer: xla_bridge. Imports nothing and knows no jaxlib type: ``configure`` hands it, once, the
 * objects its guards compare with, and the native dispatcher it calls is an opaque callable.
 *
 * HotCall is the base type of ``xla_bridge.dispatch.Dispatcher``. Calling an instance does what
 * ``dispatch._PythonHotCall.__call__`` does (the same path in Python, used where this module is
 * not built; read it for the why of each step):
 *
 *   if the plain native dispatcher is made, there are no keyword arguments, the current trace
 *   is the eager one and jax's config is not loaded, and every argument is a NumPy array, a
 *   scalar or an Array holding a device buffer:
 *       res = native(*arguments, with each Array replaced by its buffer)
 *       a dict (several outputs) -> self._native_outputs(res)
 *       else -> Array._from_buffer(res, res.aval.weak_type)
 *   otherwise -> self._dispatch(args, kwargs)
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

static PyObject *s_native_plain, *s_trace, *s_buffer, *s_aval, *s_weak_type, *s_dispatch, *s_native_outputs;

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

static PyObject *
HotCall_call(HotCall *self, PyObject *args, PyObject *kwargs)
{
    if (g_state == NULL || (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0)) {
        return slow(self, args, kwargs);
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

    Py_ssize_t n = PyTuple_GET_SIZE(args);
    PyObject *flat = NULL; /* a copy of args, made at the first Array */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PyTuple_GET_ITEM(args, i);
        PyObject *t = (PyObject *)Py_TYPE(x);
        if (t == g_ndarray) {
            continue;
        }
        if (t == g_array) {
            PyObject *buf = PyObject_GetAttr(x, s_buffer);
            if (buf == NULL) {
                Py_XDECREF(flat);
                return NULL;
            }
            if (buf == Py_None) { /* host-backed: the slow path makes (and caches) its buffer */
                Py_DECREF(buf);
                Py_XDECREF(flat);
                return slow(self, args, kwargs);
            }
            if (flat == NULL) {
                /* A fresh tuple: PyTuple_GetSlice would return args itself, which may be the
                   caller's own tuple (f(*t)). */
                flat = PyTuple_New(n);
                if (flat == NULL) {
                    Py_DECREF(buf);
                    return NULL;
                }
                for (Py_ssize_t j = 0; j < n; j++) {
                    PyObject *item = PyTuple_GET_ITEM(args, j);
                    Py_INCREF(item);
                    PyTuple_SET_ITEM(flat, j, item);
                }
            }
            PyObject *old = PyTuple_GET_ITEM(flat, i);
            PyTuple_SET_ITEM(flat, i, buf); /* steals buf */
            Py_DECREF(old);
            continue;
        }
        int scalar = PySet_Contains(g_scalars, t);
        if (scalar < 0) {
            Py_XDECREF(flat);
            return NULL;
        }
        if (!scalar) {
            Py_XDECREF(flat);
            return slow(self, args, kwargs);
        }
    }

    PyObject *dict = PyObject_GenericGetDict((PyObject *)self, NULL);
    if (dict == NULL) {
        Py_XDECREF(flat);
        return NULL;
    }
    /* A strong reference: a cache miss inside the call may replace the dict's entry. */
    PyObject *native = Py_XNewRef(PyDict_GetItemWithError(dict, s_native_plain));
    Py_DECREF(dict);
    if (native == NULL || native == Py_None) {
        Py_XDECREF(native);
        Py_XDECREF(flat);
        if (PyErr_Occurred()) {
            return NULL;
        }
        return slow(self, args, kwargs);
    }
    self->calls++;
    PyObject *res = PyObject_Call(native, flat != NULL ? flat : args, NULL);
    Py_DECREF(native);
    Py_XDECREF(flat);
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

static PyMemberDef HotCall_members[] = {
    {"_native_calls", T_PYSSIZET, offsetof(HotCall, calls), 0, "Calls that took the native route."},
    {NULL},
};

/* A static type: no references to own, so object's dealloc serves (the Python subclass adds
   __dict__, __weakref__ and their GC support). */
static PyTypeObject HotCall_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "xla_bridge._hot_call.HotCall",
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
    PyObject *state, *eval_trace, *jax_config, *ndarray, *scalars, *array, *from_buffer;
    if (!PyArg_ParseTuple(args, "OOUOO!OO:configure", &state, &eval_trace, &jax_config, &ndarray,
                          &PyFrozenSet_Type, &scalars, &array, &from_buffer)) {
        return NULL;
    }
    Py_XSETREF(g_state, Py_NewRef(state));
    Py_XSETREF(g_eval_trace, Py_NewRef(eval_trace));
    Py_XSETREF(g_jax_config, Py_NewRef(jax_config));
    Py_XSETREF(g_ndarray, Py_NewRef(ndarray));
    Py_XSETREF(g_scalars, Py_NewRef(scalars));
    Py_XSETREF(g_array, Py_NewRef(array));
    Py_XSETREF(g_from_buffer, Py_NewRef(from_buffer));
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(state, EvalTrace, jax_config_module_name, ndarray, scalar_types, Array, "
     "Array._from_buffer): the objects the hot path's guards compare with."},
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
    INTERN(s_trace, "trace");
    INTERN(s_buffer, "_buffer");
    INTERN(s_aval, "aval");
    INTERN(s_weak_type, "weak_type");
    INTERN(s_dispatch, "_dispatch");
    INTERN(s_native_outputs, "_native_outputs");
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
    .m_name = "xla_bridge._hot_call",
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
