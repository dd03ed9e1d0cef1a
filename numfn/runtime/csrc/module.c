/*
 * numfn.runtime._numfn_native: the Python face of numfn's native runtime (see numfn_native.h): the thread pool's
 * controls and the table of routines generated programs call.
 *
 * To add a routine: put it in a .c file in this directory (setup.py compiles every one into this module), declare
 * it in numfn_native.h and list it in `numfn_routines` below.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "numfn_native.h"

void numfn_pool_init(void);

/* sort.c's routines, three per element type */
#define SORT_ROUTINES(t, T) {"numfn_sort_" #t, (void *)numfn_sort_##t},                                             \
                            {"numfn_argsort_" #t, (void *)numfn_argsort_##t},                                       \
                            {"numfn_select_" #t, (void *)numfn_select_##t},

const numfn_routine numfn_routines[] = {
    {"numfn_parallel_for", (void *)numfn_parallel_for},
    NUMFN_SORT_TYPES(SORT_ROUTINES)
    {NULL, NULL},
};

static PyObject *
module_set_threads(PyObject *module, PyObject *arg)
{
    (void)module;
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (n < 1) n = 1;
    if (n > 1024) n = 1024;
    int threads;
    Py_BEGIN_ALLOW_THREADS   /* it waits for a running region, which may belong to a thread that wants the GIL */
    threads = numfn_pool_configure((int)n);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(threads);
}

static PyObject *
module_parallel_for_address(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return PyLong_FromVoidPtr(numfn_pool_slot);
}

static PyObject *
module_routines(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    PyObject *d = PyDict_New();
    if (d == NULL) return NULL;
    for (const numfn_routine *r = numfn_routines; r->name != NULL; r++) {
        PyObject *address = PyLong_FromVoidPtr(r->address);
        if (address == NULL || PyDict_SetItemString(d, r->name, address) < 0) {
            Py_XDECREF(address);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(address);
    }
    return d;
}

static PyMethodDef module_methods[] = {
    {"set_threads", module_set_threads, METH_O,
     "set_threads(n)\n--\n\nUse n threads (the caller's and n - 1 workers) for parallel kernels from the next region on; "
     "1 turns the pool off. Waits for a running region. Returns the number of threads in use."},
    {"parallel_for_address", module_parallel_for_address, METH_NOARGS,
     "parallel_for_address()\n--\n\nWhat a program's buffer table gets in its last slot: the address of "
     "numfn_parallel_for while more than one thread is in use, else 0."},
    {"routines", module_routines, METH_NOARGS,
     "routines()\n--\n\nThe native routines generated programs may call: {name: address}."},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "numfn.runtime._numfn_native",
    .m_doc = "numfn's native runtime: the thread pool of parallel kernels and the routines generated code calls.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__numfn_native(void)
{
    numfn_pool_init();
    PyObject *m = PyModule_Create(&native_module);
    if (m == NULL) return NULL;
#ifdef Py_GIL_DISABLED
    PyUnstable_Module_SetGIL(m, Py_MOD_GIL_NOT_USED);
#endif
    /* the address of the slot itself, for the dispatch extension, which reads it at every call */
    PyObject *slot = PyCapsule_New((void *)&numfn_pool_slot, "numfn.runtime._numfn_native.pool_slot", NULL);
    if (slot == NULL || PyModule_AddObject(m, "pool_slot", slot) < 0) {
        Py_XDECREF(slot);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
