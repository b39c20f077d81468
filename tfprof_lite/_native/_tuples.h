/*
 * Helpers of the decoders that build Python objects of given tuple classes
 * (_hlodecode.c, _memdecode.c): skipping fields outside the subset they read,
 * and filling instances of tuple subclasses (named tuples) directly.
 */
#ifndef TFPROF_LITE_TUPLES_H
#define TFPROF_LITE_TUPLES_H

#include "_decoder.h"

#define WIRE_I64 1u
#define WIRE_I32 5u

/* A field outside the subset, skipped as an unknown field (groups decline). */
static inline int skip_field(Ptr *pp, Ptr end, uint32_t wire) {
    uint64_t v;
    Span s;
    switch (wire) {
    case WIRE_VARINT:
        return wire_varint(pp, end, &v);
    case WIRE_LEN:
        return wire_len(pp, end, &s);
    case WIRE_I64:
        if (end - *pp < 8) {
            return DECLINE;
        }
        *pp += 8;
        return OK;
    case WIRE_I32:
        if (end - *pp < 4) {
            return DECLINE;
        }
        *pp += 4;
        return OK;
    default:
        return DECLINE;
    }
}

/* How instances are made: allocated here (CPython before 3.14, whose tuples
   keep no cached hash that a plain allocation would leave unset), or through
   ``tuple.__new__`` (later versions, and builds with TUPLES_VIA_NEW); set by
   tuple_make_init(). */
static int tuple_direct = 0;
static PyObject *tuple_new_fn = NULL; /* tuple.__new__ */

/* Call once from the module's init; -1 with an exception set on failure. */
static inline int tuple_make_init(void) {
    PyObject *info = PySys_GetObject("version_info"); /* borrowed */
    PyObject *major = info ? PySequence_GetItem(info, 0) : NULL;
    PyObject *minor = info ? PySequence_GetItem(info, 1) : NULL;
    long v = major && minor ? PyLong_AsLong(major) * 100 + PyLong_AsLong(minor) : -1;
    Py_XDECREF(major);
    Py_XDECREF(minor);
    if (v < 0 || PyErr_Occurred()) {
        PyErr_Clear();
        v = 9999;
    }
    tuple_direct = v < 314;
#ifdef TUPLES_VIA_NEW /* the sanitizer test's build of the other way */
    tuple_direct = 0;
#endif
    tuple_new_fn = PyObject_GetAttrString((PyObject *)&PyTuple_Type, "__new__");
    return tuple_new_fn == NULL ? -1 : 0;
}

/* A new instance of tuple subclass ``cls`` holding ``items[0..n)`` (new
   references, consumed; a NULL among them is a failure and releases the
   others). It is left untracked by the cyclic garbage collector: the callers
   put only strings, ints, bytes and such untracked tuples (or dicts of them)
   into it, so it cannot be part of a reference cycle, and a decoded input
   holds tens of thousands. */
static inline PyObject *tuple_make(PyObject *cls, Py_ssize_t n, PyObject **items) {
    PyObject *out = NULL, *plain = NULL;
    Py_ssize_t i;
    int ok = 1;
    for (i = 0; i < n; i++) {
        ok = ok && items[i] != NULL;
    }
    if (ok) {
        out = tuple_direct ? PyType_GenericAlloc((PyTypeObject *)cls, n) : PyTuple_New(n);
    }
    if (out == NULL) {
        for (i = 0; i < n; i++) {
            Py_XDECREF(items[i]);
        }
        return NULL;
    }
    for (i = 0; i < n; i++) {
        if (PyTuple_SetItem(out, i, items[i]) < 0) { /* cannot happen: a new tuple */
            Py_DECREF(out);
            for (i = i + 1; i < n; i++) {
                Py_DECREF(items[i]);
            }
            return NULL;
        }
    }
    if (!tuple_direct) {
        plain = out;
        out = PyObject_CallFunctionObjArgs(tuple_new_fn, cls, plain, NULL);
        Py_DECREF(plain);
        if (out == NULL) {
            return NULL;
        }
    }
    PyObject_GC_UnTrack(out);
    return out;
}

/* tuple_make(cls, items...) with the count of the items taken from the list. */
#define TUPLE_MAKE(cls, ...)                                                                       \
    tuple_make((cls), (Py_ssize_t)(sizeof((PyObject *[]){__VA_ARGS__}) / sizeof(PyObject *)),      \
               (PyObject *[]){__VA_ARGS__})

static inline PyObject *int_of(int64_t v) { return PyLong_FromLongLong((long long)v); }

/* Status of building ``*out`` (NULL: a failure with an exception set). */
#define BUILT(out) ((out) != NULL ? OK : FAIL)

/* Varint fields read as protobuf reads int64 and int32 fields. */
static inline int read_i64(Ptr *pp, Ptr end, uint32_t wire, int64_t *out) {
    uint64_t v;
    TRY(read_u64(pp, end, wire, &v));
    *out = wire_i64(v);
    return OK;
}

static inline int read_i32(Ptr *pp, Ptr end, uint32_t wire, int64_t *out) {
    uint64_t v;
    TRY(read_u64(pp, end, wire, &v));
    *out = wire_i32(v);
    return OK;
}

/* A singular message field read here: its span; a second occurrence declines
   (protobuf would merge the two). */
static inline int read_once(Ptr *pp, Ptr end, uint32_t wire, Span *out) {
    if (out->p != NULL) {
        return DECLINE;
    }
    return read_span(pp, end, wire, out);
}

/* The ``n`` classes of the tuple ``classes`` into ``cls`` (borrowed); -1 with a
   TypeError naming ``what`` when it holds another number of them. */
static inline int tuple_classes(PyObject *classes, PyObject **cls, Py_ssize_t n,
                                const char *what) {
    Py_ssize_t i;
    if (PyTuple_Size(classes) != n) {
        PyErr_Format(PyExc_TypeError, "decode() takes the %s", what);
        return -1;
    }
    for (i = 0; i < n; i++) {
        cls[i] = PyTuple_GetItem(classes, i);
    }
    return 0;
}

/* What a decode function returns for a decoder's status: ``result`` (OK),
   None (declined; ``result`` released) or NULL (an exception is set). */
static inline PyObject *decoded(int rc, PyObject *result) {
    if (rc == FAIL) {
        Py_XDECREF(result);
        return NULL;
    }
    if (rc != OK) {
        Py_XDECREF(result);
        Py_RETURN_NONE;
    }
    return result;
}

#endif /* TFPROF_LITE_TUPLES_H */
