/* funcgrad.kernel._array_base: the C half of funcgrad.Array (NOTE: [array in C]).
 *
 * Layer: kernel (bottom). Imports nothing; it knows no jaxlib type. It only forwards the buffer
 * protocol to whatever object holds the Array's value (a NumPy array, or a device buffer that
 * exports the protocol itself).
 *
 * ArrayBase holds the four fields every Array has (_value, _buffer, weak_type, _aval) and gives
 * the type what only C can give it:
 *   - the buffer protocol, so np.asarray(array) reads the value without a Python call (NumPy
 *     tries the buffer protocol before __array__). The view is always read-only (Arrays are
 *     immutable). Where the holder cannot export (a bfloat16 or sub-byte dtype, a buffer on a GPU
 *     or over several devices, a deleted buffer), the error makes NumPy fall back to the Python
 *     __array__, which handles every case;
 *   - _from_buffer/_from_owned, the constructors the dispatcher calls once per output.
 * funcgrad/kernel/array.py defines Array on top of it (every method is Python), and the same
 * base in Python where this module is not built.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

typedef struct {
    PyObject_HEAD
    PyObject *value;   /* host value (a NumPy array) or NULL */
    PyObject *buffer;  /* device buffer or NULL */
    PyObject *weak_type;
    PyObject *aval;
    PyObject *weakreflist;
} ArrayBase;

static int
ArrayBase_traverse(ArrayBase *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->value);
    Py_VISIT(self->buffer);
    Py_VISIT(self->weak_type);
    Py_VISIT(self->aval);
    return 0;
}

static int
ArrayBase_clear(ArrayBase *self)
{
    Py_CLEAR(self->value);
    Py_CLEAR(self->buffer);
    Py_CLEAR(self->weak_type);
    Py_CLEAR(self->aval);
    return 0;
}

static void
ArrayBase_dealloc(ArrayBase *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (self->weakreflist != NULL) {
        PyObject_ClearWeakRefs((PyObject *)self);
    }
    ArrayBase_clear(self);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static int
ArrayBase_getbuffer(ArrayBase *self, Py_buffer *view, int flags)
{
    if (flags & PyBUF_WRITABLE) {
        PyErr_SetString(PyExc_BufferError, "funcgrad.Array is immutable: it exports read-only buffers");
        return -1;
    }
    PyObject *holder = (self->value != NULL && self->value != Py_None) ? self->value : self->buffer;
    if (holder == NULL || holder == Py_None) {
        PyErr_SetString(PyExc_BufferError, "this Array holds no value to export");
        return -1;
    }
    if (PyObject_GetBuffer(holder, view, flags) < 0) {
        return -1;
    }
    /* view->obj is the holder: PyBuffer_Release goes to it, and it keeps the memory alive. */
    view->readonly = 1;
    return 0;
}

/* cls._from_buffer(buffer, weak_type=False) / cls._from_owned(value, weak_type=False) */
static PyObject *
make(PyTypeObject *cls, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, int is_buffer)
{
    const char *name = is_buffer ? "_from_buffer" : "_from_owned";
    PyObject *held = NULL, *weak = Py_False;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs < 1 || nargs + nkw > 2) {
        PyErr_Format(PyExc_TypeError, "%s(value, weak_type=False): takes 1 or 2 arguments", name);
        return NULL;
    }
    held = args[0];
    if (nargs == 2) {
        weak = args[1];
    }
    else if (nkw == 1) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, 0);
        if (!PyUnicode_Check(key) || PyUnicode_CompareWithASCIIString(key, "weak_type") != 0) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument %R", name, key);
            return NULL;
        }
        weak = args[1];
    }
    ArrayBase *self = (ArrayBase *)cls->tp_alloc(cls, 0);
    if (self == NULL) {
        return NULL;
    }
    Py_INCREF(held);
    if (is_buffer) {
        self->buffer = held;
    }
    else {
        self->value = held;
    }
    Py_INCREF(weak);
    self->weak_type = weak;
    return (PyObject *)self;
}

static PyObject *
ArrayBase_from_buffer(PyObject *cls, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return make((PyTypeObject *)cls, args, nargs, kwnames, 1);
}

static PyObject *
ArrayBase_from_owned(PyObject *cls, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return make((PyTypeObject *)cls, args, nargs, kwnames, 0);
}

static PyMethodDef ArrayBase_methods[] = {
    {"_from_buffer", (PyCFunction)(void (*)(void))ArrayBase_from_buffer,
     METH_FASTCALL | METH_KEYWORDS | METH_CLASS,
     "An Array backed only by a device buffer (read back to the host lazily)."},
    {"_from_owned", (PyCFunction)(void (*)(void))ArrayBase_from_owned,
     METH_FASTCALL | METH_KEYWORDS | METH_CLASS,
     "Wrap a freshly computed NumPy array without copying it."},
    {NULL},
};

static PyMemberDef ArrayBase_members[] = {
    {"_value", T_OBJECT, offsetof(ArrayBase, value), 0, NULL},
    {"_buffer", T_OBJECT, offsetof(ArrayBase, buffer), 0, NULL},
    {"weak_type", T_OBJECT, offsetof(ArrayBase, weak_type), 0, "Whether the dtype is weak (a Python scalar's)."},
    {"_aval", T_OBJECT, offsetof(ArrayBase, aval), 0, NULL},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(ArrayBase, weakreflist), READONLY, NULL},
    {NULL},
};

static PyType_Slot ArrayBase_slots[] = {
    {Py_tp_doc, "The fields and buffer protocol of funcgrad.Array (see funcgrad/kernel/array.py)."},
    {Py_tp_dealloc, ArrayBase_dealloc},
    {Py_tp_traverse, ArrayBase_traverse},
    {Py_tp_clear, ArrayBase_clear},
    {Py_tp_methods, ArrayBase_methods},
    {Py_tp_members, ArrayBase_members},
    {Py_tp_new, PyType_GenericNew},
    {Py_bf_getbuffer, ArrayBase_getbuffer},
    {0, NULL},
};

static PyType_Spec ArrayBase_spec = {
    .name = "funcgrad.kernel._array_base.ArrayBase",
    .basicsize = sizeof(ArrayBase),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .slots = ArrayBase_slots,
};

static int
module_exec(PyObject *module)
{
    PyObject *tp = PyType_FromSpec(&ArrayBase_spec);
    if (tp == NULL) {
        return -1;
    }
    if (PyModule_AddObject(module, "ArrayBase", tp) < 0) {
        Py_DECREF(tp);
        return -1;
    }
    return 0;
}

static PyModuleDef_Slot module_slots[] = {{Py_mod_exec, module_exec}, {0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "funcgrad.kernel._array_base",
    .m_doc = "The C half of funcgrad.Array: its fields, read-only buffer export and constructors.",
    .m_size = 0,
    .m_slots = module_slots,
};

PyMODINIT_FUNC
PyInit__array_base(void)
{
    return PyModuleDef_Init(&module_def);
}
