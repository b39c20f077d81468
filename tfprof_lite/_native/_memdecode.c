/*
 * Native decoder of the memory side of one serialized NodeExecStats (module
 * tfprof_lite._native._memdecode): what
 * tfprof_lite.model.decode.memory_detail reads from protobuf's parse of a
 * step's kept record, without importing protobuf.
 *
 * decode(data: bytes, classes: tuple, shapes: dict) -> MemoryDetail | None
 *
 * ``classes``: (MemoryDetail, AllocatorUse, OutputTensor), the tuple classes of
 * tfprof_lite/model/records.py, filled in their field order: start and end
 * micros (``all_start_micros`` and that plus ``op_end_rel_micros``), one
 * AllocatorUse per ``memory`` entry (name, total, peak, live, bytes in use,
 * its allocation records as (micros, bytes) pairs), one OutputTensor per
 * ``output`` whose tensor description has an allocation description (slot,
 * allocator, allocation id, requested and allocated bytes, ptr, dtype, and the
 * shape's dims: None when the shape is absent or of unknown rank). ``shapes``
 * maps a shape's bytes to its dims so that equal shapes share one tuple.
 *
 * The input is untrusted; the schema is tfprof_lite/proto/run_metadata.proto
 * and framework.proto. Every field of the messages a NodeExecStats holds is
 * checked as protobuf checks it (wire type, UTF-8 of strings), fields outside
 * the schema are skipped as unknown fields, and anything else returns None
 * ("declined") so that the caller parses the bytes with protobuf instead
 * (which succeeds the same way or raises its error): the wire-level rules of
 * _wire.h, groups, a known field with another wire type, invalid UTF-8, and a
 * singular message field read here that appears twice (protobuf would merge
 * the two). For a singular scalar field the last occurrence wins; int32 and
 * enum fields keep the low 32 bits of their varint as a signed value.
 */

#include "_tuples.h"

enum { K_DETAIL, K_USE, K_TENSOR, K_COUNT };

typedef struct {
    PyObject *cls[K_COUNT];
    PyObject *shapes;
} Ctx;

/* A message whose fields 1..n are varints (int64, int32, uint32, bool, enum)
   and whose fields ``strings`` (a bit per field number) are strings; ``v``
   receives the varints as read (NULL: only checked). Other fields are skipped. */
static int scalars(Span m, uint32_t n, uint32_t strings, uint64_t *v, Span *text) {
    Ptr p = m.p;
    while (p < m.end) {
        uint32_t number, wire;
        Span s;
        TRY(wire_tag(&p, m.end, &number, &wire));
        if (number < 32 && (strings >> number & 1u)) {
            TRY(read_str(&p, m.end, wire, text ? text : &s));
        } else if (number >= 1 && number <= n) {
            uint64_t x;
            TRY(read_u64(&p, m.end, wire, &x));
            if (v) {
                v[number - 1] = x;
            }
        } else {
            TRY(skip_field(&p, m.end, wire));
        }
    }
    return OK;
}

/* MemoryStats: int64 fields 1..4, repeated int64 fields 5 and 6. */
static int check_memory_stats(Span m) {
    Ptr p = m.p;
    while (p < m.end) {
        uint32_t number, wire;
        uint64_t v;
        TRY(wire_tag(&p, m.end, &number, &wire));
        if (number >= 1 && number <= 4) {
            TRY(read_u64(&p, m.end, wire, &v));
        } else if (number == 5 || number == 6) {
            TRY(wire_repeated_i64(&p, m.end, wire, NULL));
        } else {
            TRY(skip_field(&p, m.end, wire));
        }
    }
    return OK;
}

/* ------------------------------------------------------------------ allocators */

static int decode_use(Ctx *c, Span m, PyObject **out) {
    Span name = {NULL, NULL};
    int64_t v[5] = {0, 0, 0, 0, 0}; /* total, peak, live, in use (fields 2..5) */
    Ptr p = m.p;
    PyObject *events = PyList_New(0);
    int rc = events == NULL ? FAIL : OK;
    while (rc == OK && p < m.end) {
        uint32_t number, wire;
        Span s;
        uint64_t rec[2] = {0, 0};
        rc = wire_tag(&p, m.end, &number, &wire);
        if (rc != OK) {
            break;
        }
        if (number == 1) {
            rc = read_str(&p, m.end, wire, &name);
        } else if (number >= 2 && number <= 5) {
            rc = read_i64(&p, m.end, wire, &v[number - 2]);
        } else if (number == 6) { /* AllocationRecord: alloc_micros, alloc_bytes */
            rc = read_span(&p, m.end, wire, &s);
            rc = rc == OK ? scalars(s, 2, 0, rec, NULL) : rc;
            rc = rc == OK ? list_add(events, Py_BuildValue("(LL)", (long long)wire_i64(rec[0]),
                                                           (long long)wire_i64(rec[1])))
                          : rc;
        } else {
            rc = skip_field(&p, m.end, wire);
        }
    }
    if (rc != OK) {
        Py_XDECREF(events);
        return rc;
    }
    *out = TUPLE_MAKE(c->cls[K_USE], wire_text(name), int_of(v[0]), int_of(v[1]), int_of(v[2]),
                      int_of(v[3]), PyList_AsTuple(events));
    Py_DECREF(events);
    return BUILT(*out);
}

/* ------------------------------------------------------------------ outputs */

/* A TensorShapeProto's dims (None: unknown rank), shared through c->shapes. */
static int decode_shape(Ctx *c, Span m, PyObject **out) {
    Ptr p = m.p;
    uint64_t unknown = 0;
    PyObject *key, *dims;
    int rc = OK;
    key = PyBytes_FromStringAndSize((const char *)m.p, (Py_ssize_t)(m.end - m.p));
    dims = key != NULL ? PyDict_GetItem(c->shapes, key) : NULL; /* borrowed */
    if (key == NULL || dims != NULL) {
        Py_XDECREF(key);
        Py_XINCREF(dims);
        *out = dims;
        return BUILT(dims);
    }
    dims = PyList_New(0);
    rc = dims == NULL ? FAIL : OK;
    while (rc == OK && p < m.end) {
        uint32_t number, wire;
        Span s, dim_name;
        uint64_t size[1] = {0};
        rc = wire_tag(&p, m.end, &number, &wire);
        if (rc == OK && number == 2) { /* Dim: size 1, name 2 */
            rc = read_span(&p, m.end, wire, &s);
            rc = rc == OK ? scalars(s, 1, 1u << 2, size, &dim_name) : rc;
            rc = rc == OK ? list_add(dims, int_of(wire_i64(size[0]))) : rc;
        } else if (rc == OK && number == 3) {
            rc = read_u64(&p, m.end, wire, &unknown);
        } else if (rc == OK) {
            rc = skip_field(&p, m.end, wire);
        }
    }
    if (rc == OK) {
        PyObject *found = unknown ? Py_None : PyList_AsTuple(dims);
        if (unknown) {
            Py_INCREF(found);
        }
        wire_untrack(found != Py_None ? found : NULL);
        rc = found != NULL && PyDict_SetItem(c->shapes, key, found) == 0 ? OK : FAIL;
        *out = found;
    }
    Py_XDECREF(dims);
    Py_DECREF(key);
    return rc;
}

typedef struct {
    Span name;
    uint64_t v[6]; /* requested, allocated, (name), id, single reference, ptr */
} Allocation;

/* NodeOutput -> OutputTensor, or *out = NULL (OK) without an allocation. */
static int decode_output(Ctx *c, Span m, PyObject **out) {
    Span desc = {NULL, NULL}, shape = {NULL, NULL}, alloc = {NULL, NULL};
    uint64_t slot = 0, dtype = 0;
    Allocation a;
    PyObject *dims = Py_None;
    Ptr p = m.p;
    *out = NULL;
    while (p < m.end) {
        uint32_t number, wire;
        TRY(wire_tag(&p, m.end, &number, &wire));
        if (number == 1) {
            TRY(read_u64(&p, m.end, wire, &slot));
        } else if (number == 3) {
            TRY(read_once(&p, m.end, wire, &desc));
        } else {
            TRY(skip_field(&p, m.end, wire));
        }
    }
    p = desc.p;
    while (p < desc.end) { /* TensorDescription: dtype 1, shape 2, allocation 4 */
        uint32_t number, wire;
        TRY(wire_tag(&p, desc.end, &number, &wire));
        if (number == 1) {
            TRY(read_u64(&p, desc.end, wire, &dtype));
        } else if (number == 2) {
            TRY(read_once(&p, desc.end, wire, &shape));
        } else if (number == 4) {
            TRY(read_once(&p, desc.end, wire, &alloc));
        } else {
            TRY(skip_field(&p, desc.end, wire));
        }
    }
    memset(&a, 0, sizeof a);
    TRY(scalars(alloc, 6, 1u << 3, a.v, &a.name));
    if (shape.p != NULL) { /* checked even when the output is left out */
        TRY(decode_shape(c, shape, &dims));
    } else {
        Py_INCREF(dims);
    }
    if (alloc.p == NULL) {
        Py_DECREF(dims);
        return OK;
    }
    *out = TUPLE_MAKE(c->cls[K_TENSOR], int_of(wire_i32(slot)), wire_text(a.name),
                      int_of(wire_i64(a.v[3])), int_of(wire_i64(a.v[0])),
                      int_of(wire_i64(a.v[1])), PyLong_FromUnsignedLongLong(a.v[5]),
                      int_of(wire_i32(dtype)), dims);
    return BUILT(*out);
}

/* ------------------------------------------------------------------ NodeExecStats */

static int node_field(Ctx *c, Ptr *pp, Ptr end, uint32_t number, uint32_t wire, int64_t *times,
                      PyObject *uses, PyObject *tensors) {
    Span s;
    uint64_t v;
    PyObject *item = NULL;
    switch (number) {
    case 1: /* node_name */
    case 8: /* timeline_label */
        return read_str(pp, end, wire, &s);
    case 2: /* all_start_micros */
    case 4: /* op_end_rel_micros */
        return read_i64(pp, end, wire, &times[number == 4]);
    case 3:
    case 5:
    case 9:
    case 10:
    case 13:
    case 14:
    case 15:
    case 16:
    case 17:
        return read_u64(pp, end, wire, &v);
    case 6:
        TRY(read_span(pp, end, wire, &s));
        TRY(decode_use(c, s, &item));
        return list_add(uses, item);
    case 7:
        TRY(read_span(pp, end, wire, &s));
        TRY(decode_output(c, s, &item));
        return item != NULL ? list_add(tensors, item) : OK;
    case 11: /* referenced_tensor: AllocationDescription, checked */
        TRY(read_span(pp, end, wire, &s));
        return scalars(s, 6, 1u << 3, NULL, NULL);
    case 12: /* memory_stats: checked (each occurrence: protobuf merges them) */
        TRY(read_span(pp, end, wire, &s));
        return check_memory_stats(s);
    default:
        return skip_field(pp, end, wire);
    }
}

static int decode_node(Ctx *c, Span m, PyObject **out) {
    int64_t times[2] = {0, 0}; /* all_start_micros, op_end_rel_micros */
    Ptr p = m.p;
    PyObject *uses = PyList_New(0), *tensors = PyList_New(0), *start, *rel, *end;
    int rc = uses == NULL || tensors == NULL ? FAIL : OK;
    while (rc == OK && p < m.end) {
        uint32_t number, wire;
        rc = wire_tag(&p, m.end, &number, &wire);
        rc = rc == OK ? node_field(c, &p, m.end, number, wire, times, uses, tensors) : rc;
    }
    if (rc != OK) {
        Py_XDECREF(uses);
        Py_XDECREF(tensors);
        return rc;
    }
    start = int_of(times[0]);
    rel = int_of(times[1]);
    end = start != NULL && rel != NULL ? PyNumber_Add(start, rel) : NULL;
    Py_XDECREF(rel);
    *out = TUPLE_MAKE(c->cls[K_DETAIL], start, end, PyList_AsTuple(uses), PyList_AsTuple(tensors));
    Py_DECREF(uses);
    Py_DECREF(tensors);
    return BUILT(*out);
}

static PyObject *memdecode_decode(PyObject *self, PyObject *args) {
    PyObject *data, *classes, *result = NULL;
    char *buf;
    Py_ssize_t len;
    Ctx c;
    Span all;
    int rc;
    (void)self;
    memset(&c, 0, sizeof c);
    if (!PyArg_ParseTuple(args, "O!O!O!:decode", &PyBytes_Type, &data, &PyTuple_Type, &classes,
                          &PyDict_Type, &c.shapes)) {
        return NULL;
    }
    if (PyBytes_AsStringAndSize(data, &buf, &len) < 0) {
        return NULL;
    }
    if (tuple_classes(classes, c.cls, K_COUNT, "three memory record classes") < 0) {
        return NULL;
    }
    all.p = (Ptr)buf;
    all.end = all.p + len;
    rc = decode_node(&c, all, &result);
    return decoded(rc, result);
}

static PyMethodDef memdecode_methods[] = {
    {"decode", memdecode_decode, METH_VARARGS,
     "decode(data: bytes, classes: tuple, shapes: dict) -> tuple | None\n\n"
     "The memory side of a serialized NodeExecStats as the given record classes,\n"
     "or None when the bytes are not in the plain subset this decoder reads\n"
     "(parse them with protobuf instead)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef memdecode_module = {
    PyModuleDef_HEAD_INIT,
    "_memdecode",
    "Native decoder of NodeExecStats memory records (see tfprof_lite.model.decode).",
    -1,
    memdecode_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__memdecode(void) {
    if (tuple_make_init() < 0) {
        return NULL;
    }
    return PyModule_Create(&memdecode_module);
}
