/*
 * Native encoder of a saved profile (ProfileProto; module
 * tfprof_lite._native._profileencode). See docs/native.md and
 * tfprof_lite/model/profile_write.py, which prepares its arguments and keeps
 * the message-building path that gives the same message.
 *
 * encode(header, nodes, steps) -> bytes
 *
 *   header: bytes, the ProfileProto's other fields, already serialized;
 *   nodes: tuple of per-node lists (names, ops, index, inputs, src_output,
 *     output_shapes, shapes, op_types, canonical_device, host_device,
 *     float_ops, traces, attrs) as kept by tfprof_lite.model.profile; traces
 *     holds each node's serialized CodeDef (bytes) or None;
 *   steps: list of tuples (step, device names, then bytes of the columns in the
 *     S_* order below), every record group sorted by node (memory outputs by
 *     their memory row), stable.
 *
 * The output is the ProfileProto's wire bytes: the header, then one ``nodes``
 * map entry per node (ProfileNode fields, then one ``execs`` entry per step the
 * node ran in). Map entries are written in node and step order; defaults are
 * not written, as proto3 does.
 *
 * input_edges(inputs, index) -> tuple | None
 *
 * The model's per-node input dicts ({position: producer name}) as edge columns
 * (tfprof_lite.views.inputs keeps the pure-Python path): int64 bytes of each
 * node's input count, then per input, nodes in order and each node's inputs by
 * position, its position and producer id (``index``; -1 when the name is not a
 * node), and the list of producer names.
 *
 * heads(names, devices, offsets, pos, producer, srcs, src_output,
 *       output_shapes) -> list | None
 *
 * The returned view messages' per-node head (tfprof_lite.outputs.message_nodes
 * keeps the pure-Python path that gives the same bytes): for each node its
 * GraphNodeProto ``name`` field, its ``device`` field (when bound) and one
 * ``input_shapes`` entry per input of the edge columns above (node i's inputs
 * are ``offsets[i]:offsets[i + 1]``), holding the shape of the output the input
 * reads (``src_output``, default 0) of its producer, unknown rank when the
 * producer is not a node or that output has no shape.
 *
 * Both return None when an argument is not what the model keeps (the caller
 * then runs its own path, which raises where it should).
 *
 * frame_tree(streams, parents, tag) -> bytes | None
 *
 * A view message tree in pre-order as one message's bytes
 * (tfprof_lite.outputs.message keeps the pure-Python path): row r's fields are
 * streams[0][r] + streams[1][r] + ...; every row but row 0 (the root) is
 * written as a ``tag`` field (the message's ``children``) of its parent
 * ``parents[r]`` (int64 bytes, each parent before its children). None when the
 * arguments do not have that shape.
 *
 * encode_rows(values, tags, prefixes=None) -> list | None
 *
 * Each row of an int64 matrix (``values``: row-major bytes, ``len(tags)``
 * columns) as varint fields, column j after ``tags[j]`` (its encoded key);
 * zeros are left out, as proto3 does (tfprof_lite.outputs.message_nodes keeps
 * the NumPy path). With ``prefixes`` (a list of bytes, one per row), row r's
 * bytes start with ``prefixes[r]``.
 */

#define PY_SSIZE_T_CLEAN
#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x03090000
#endif
#include <Python.h>

#include "_wire.h"

#define OK WIRE_OK
#define FAIL WIRE_FAIL
#define TRY(expr)                                                                                  \
    do {                                                                                           \
        if ((expr) != OK) {                                                                        \
            return FAIL;                                                                           \
        }                                                                                          \
    } while (0)

#define N_MEM_VALUES 10

enum {
    S_P_NODE, /* int32: (node, device) pairs */
    S_P_DEV,  /* int32 */
    S_S_NODE, /* int64: nodes with a span, ascending */
    S_S_START,
    S_S_END,
    S_T_NODE, /* int32: times */
    S_T_KIND, /* int8 */
    S_T_DEV,  /* int32 */
    S_T_START,
    S_T_DUR,
    S_M_NODE, /* int32: memory rows, then N_MEM_VALUES int64 columns */
    S_M_VALUES,
    S_M_ROW = S_M_VALUES + N_MEM_VALUES, /* int64: each memory row's number */
    S_O_MEM,                             /* int64: outputs by memory row */
    S_O_SLOT,                            /* int32 */
    S_O_BYTES,
    S_O_PTR, /* uint64 */
    S_A_NODE, /* int32: allocations */
    S_A_MICROS,
    S_A_BYTES,
    N_STEP_COLUMNS
};

static const size_t STEP_WIDTH[N_STEP_COLUMNS] = {
    4, 4, 8, 8, 8, 4, 1, 4, 8, 8, 4, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 4, 8, 8, 4, 8, 8,
};

enum { N_NAMES, N_OPS, N_INDEX, N_INPUTS, N_SRC, N_OUT_SHAPES, N_SHAPES, N_OP_TYPES, N_CANON,
       N_HOST, N_FLOPS, N_TRACES, N_ATTRS, N_NODE_LISTS };

typedef struct {
    int64_t step;
    PyObject *devices; /* list of str (borrowed) */
    const char *col[N_STEP_COLUMNS];
    size_t rows[N_STEP_COLUMNS];
    size_t at[N_STEP_COLUMNS]; /* cursor per record group */
} Step;

/* ------------------------------------------------------------------ writing */

static int put_varint(WireBuf *b, uint64_t v) {
    uint8_t tmp[10];
    size_t n = 0;
    do {
        uint8_t byte = (uint8_t)(v & 0x7Fu);
        v >>= 7;
        tmp[n++] = (uint8_t)(byte | (v ? 0x80u : 0u));
    } while (v);
    return wire_buf_put(b, tmp, n);
}

static int put_key(WireBuf *b, uint32_t number, uint32_t wire) {
    return put_varint(b, ((uint64_t)number << 3) | wire);
}

/* A varint field, skipped when 0 (proto3 default). */
static int put_int(WireBuf *b, uint32_t number, int64_t v) {
    if (v == 0) {
        return OK;
    }
    TRY(put_key(b, number, WIRE_VARINT));
    return put_varint(b, (uint64_t)v);
}

static int put_bytes(WireBuf *b, uint32_t number, const char *data, size_t n) {
    TRY(put_key(b, number, WIRE_LEN));
    TRY(put_varint(b, n));
    return wire_buf_put(b, data, n);
}

/* A str field (skipped when empty). */
static int put_text(WireBuf *b, uint32_t number, PyObject *text) {
    PyObject *utf8;
    char *data;
    Py_ssize_t n;
    int rc;
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "expected str");
        return FAIL;
    }
    utf8 = PyUnicode_AsUTF8String(text);
    if (utf8 == NULL) {
        return FAIL;
    }
    rc = PyBytes_AsStringAndSize(utf8, &data, &n) < 0 ? FAIL : OK;
    if (rc == OK && n > 0) {
        rc = put_bytes(b, number, data, (size_t)n);
    }
    Py_DECREF(utf8);
    return rc;
}

/* ``inner`` as a length-delimited field. */
static int put_nested(WireBuf *b, uint32_t number, const WireBuf *inner) {
    return put_bytes(b, number, inner->data ? inner->data : "", inner->len);
}

static int64_t as_int64(PyObject *o, int *failed) {
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred()) {
        *failed = 1;
    }
    return (int64_t)v;
}

/* A packed int64 run of a Python list of ints, as field ``number`` (skipped when empty). */
static int put_packed_list(WireBuf *b, WireBuf *tmp, uint32_t number, PyObject *list) {
    Py_ssize_t n, i;
    int failed = 0;
    if (list == Py_None) {
        return OK;
    }
    n = PyList_Size(list);
    if (n < 0) {
        return FAIL;
    }
    if (n == 0) {
        return OK;
    }
    tmp->len = 0;
    for (i = 0; i < n; i++) {
        int64_t v = as_int64(PyList_GetItem(list, i), &failed);
        if (failed || put_varint(tmp, (uint64_t)v) != OK) {
            return FAIL;
        }
    }
    return put_nested(b, number, tmp);
}

/* ------------------------------------------------------------------ nodes */

typedef struct {
    PyObject *lists[N_NODE_LISTS];
    WireBuf node;  /* the ProfileNode being written */
    WireBuf entry; /* a map entry */
    WireBuf inner; /* a nested message */
    WireBuf tmp;   /* packed runs */
    WireBuf exec;  /* an ExecProfile */
    WireBuf out;
} Enc;

static PyObject *item(Enc *e, int which, Py_ssize_t nid) {
    return PyList_GetItem(e->lists[which], nid);
}

/* inputs (2) and src_output_index (14): producers named in the model only. */
static int put_inputs(Enc *e, Py_ssize_t nid) {
    PyObject *inputs = item(e, N_INPUTS, nid), *src_output = item(e, N_SRC, nid);
    PyObject *index = e->lists[N_INDEX];
    PyObject *pos, *src;
    Py_ssize_t it = 0;
    int failed = 0;
    while (PyDict_Next(inputs, &it, &pos, &src)) {
        PyObject *producer = PyDict_GetItem(index, src);
        PyObject *idx;
        int64_t p;
        if (producer == NULL) {
            continue;
        }
        p = as_int64(producer, &failed);
        e->entry.len = 0;
        if (put_int(&e->entry, 1, as_int64(pos, &failed)) != OK ||
            put_int(&e->entry, 2, p) != OK || put_nested(&e->node, 2, &e->entry) != OK) {
            return FAIL;
        }
        idx = PyDict_GetItem(src_output, src);
        e->entry.len = 0;
        if (put_int(&e->entry, 1, p) != OK ||
            put_int(&e->entry, 2, idx ? as_int64(idx, &failed) : 0) != OK ||
            put_nested(&e->node, 14, &e->entry) != OK) {
            return FAIL;
        }
    }
    return failed ? FAIL : OK;
}

/* output_shapes (15): index -> Tuple of dims. */
static int put_output_shapes(Enc *e, Py_ssize_t nid) {
    PyObject *shapes = item(e, N_OUT_SHAPES, nid);
    PyObject *idx, *dims;
    Py_ssize_t it = 0;
    int failed = 0;
    while (PyDict_Next(shapes, &it, &idx, &dims)) {
        e->entry.len = 0;
        e->inner.len = 0;
        if (put_int(&e->entry, 1, as_int64(idx, &failed)) != OK ||
            put_packed_list(&e->inner, &e->tmp, 1, dims) != OK ||
            put_nested(&e->entry, 2, &e->inner) != OK ||
            put_nested(&e->node, 15, &e->entry) != OK) {
            return FAIL;
        }
    }
    return failed ? FAIL : OK;
}

/* op_types (5), sorted. */
static int put_op_types(Enc *e, Py_ssize_t nid) {
    PyObject *sorted = PySequence_List(item(e, N_OP_TYPES, nid));
    Py_ssize_t n, i;
    int rc = OK;
    if (sorted == NULL || PyList_Sort(sorted) < 0) {
        Py_XDECREF(sorted);
        return FAIL;
    }
    n = PyList_Size(sorted);
    for (i = 0; rc == OK && i < n; i++) {
        PyObject *text = PyList_GetItem(sorted, i);
        /* An empty string is still an element of a repeated field. */
        if (PyUnicode_GetLength(text) == 0) {
            rc = put_bytes(&e->node, 5, "", 0);
        } else {
            rc = put_text(&e->node, 5, text);
        }
    }
    Py_DECREF(sorted);
    return rc;
}

/* attrs (11): name -> AttrValue bytes, as kept. */
static int put_attrs(Enc *e, Py_ssize_t nid) {
    PyObject *attrs = item(e, N_ATTRS, nid);
    PyObject *key, *raw;
    Py_ssize_t it = 0;
    while (PyDict_Next(attrs, &it, &key, &raw)) {
        char *data;
        Py_ssize_t n;
        e->entry.len = 0;
        if (PyBytes_AsStringAndSize(raw, &data, &n) < 0 || put_text(&e->entry, 1, key) != OK ||
            put_bytes(&e->entry, 2, data, (size_t)n) != OK ||
            put_nested(&e->node, 11, &e->entry) != OK) {
            return FAIL;
        }
    }
    return OK;
}

static int put_static(Enc *e, Py_ssize_t nid) {
    PyObject *trace = item(e, N_TRACES, nid);
    int failed = 0;
    TRY(put_text(&e->node, 1, item(e, N_NAMES, nid)));
    TRY(put_inputs(e, nid));
    TRY(put_packed_list(&e->node, &e->tmp, 4, item(e, N_SHAPES, nid)));
    TRY(put_op_types(e, nid));
    TRY(put_text(&e->node, 6, item(e, N_CANON, nid)));
    TRY(put_text(&e->node, 7, item(e, N_HOST, nid)));
    TRY(put_int(&e->node, 8, as_int64(item(e, N_FLOPS, nid), &failed)));
    TRY(put_text(&e->node, 9, item(e, N_OPS, nid)));
    if (trace != Py_None) {
        char *data;
        Py_ssize_t n;
        if (PyBytes_AsStringAndSize(trace, &data, &n) < 0) {
            return FAIL;
        }
        TRY(put_bytes(&e->node, 10, data, (size_t)n));
    }
    TRY(put_attrs(e, nid));
    TRY(put_int(&e->node, 13, (int64_t)nid));
    TRY(put_output_shapes(e, nid));
    return failed ? FAIL : OK;
}

/* ------------------------------------------------------------------ executions */

typedef struct {
    WireBuf xentry; /* a map entry inside an ExecProfile */
    WireBuf xinner; /* ExecTime, ExecMemory */
    WireBuf leaf;   /* Tuple, Memory */
    WireBuf codes;  /* int32 device codes */
} ExecBufs;

static int32_t get_i32(const Step *s, int col, size_t row) {
    int32_t v;
    memcpy(&v, s->col[col] + row * 4, 4);
    return v;
}

static int64_t get_i64(const Step *s, int col, size_t row) {
    int64_t v;
    memcpy(&v, s->col[col] + row * 8, 8);
    return v;
}

static int8_t get_i8(const Step *s, int col, size_t row) {
    return (int8_t)s->col[col][row];
}

/* [*first, *last) of the rows of group column ``col`` (int32 node ids) for ``nid``. */
static void node_range(Step *s, int col, int32_t nid, size_t *first, size_t *last) {
    size_t at = s->at[col];
    while (at < s->rows[col] && get_i32(s, col, at) < nid) {
        at++;
    }
    *first = at;
    while (at < s->rows[col] && get_i32(s, col, at) == nid) {
        at++;
    }
    *last = at;
    s->at[col] = at;
}

static int put_device_name(WireBuf *b, uint32_t number, const Step *s, int32_t code) {
    PyObject *name = PyList_GetItem(s->devices, code);
    if (name == NULL) {
        return FAIL;
    }
    if (PyUnicode_GetLength(name) == 0) {
        return put_bytes(b, number, "", 0);
    }
    return put_text(b, number, name);
}

/* accelerator_execs (4) or cpu_execs (5): per device in first-seen order, the
   (start, duration) Tuples of its records in record order. */
static int put_times(WireBuf *exec, ExecBufs *x, const Step *s, size_t a, size_t b, int8_t kind) {
    size_t i, j, k;
    for (i = a; i < b; i++) {
        int32_t dev = get_i32(s, S_T_DEV, i);
        int seen = 0;
        if (get_i8(s, S_T_KIND, i) != kind) {
            continue;
        }
        for (k = a; k < i && !seen; k++) {
            seen = get_i8(s, S_T_KIND, k) == kind && get_i32(s, S_T_DEV, k) == dev;
        }
        if (seen) {
            continue;
        }
        x->xinner.len = 0;
        for (j = i; j < b; j++) {
            if (get_i8(s, S_T_KIND, j) != kind || get_i32(s, S_T_DEV, j) != dev) {
                continue;
            }
            x->leaf.len = 0;
            x->codes.len = 0;
            TRY(put_varint(&x->codes, (uint64_t)get_i64(s, S_T_START, j)));
            TRY(put_varint(&x->codes, (uint64_t)get_i64(s, S_T_DUR, j)));
            TRY(put_nested(&x->leaf, 1, &x->codes));
            TRY(put_nested(&x->xinner, 1, &x->leaf));
        }
        x->xentry.len = 0;
        TRY(put_device_name(&x->xentry, 1, s, dev));
        TRY(put_nested(&x->xentry, 2, &x->xinner));
        TRY(put_nested(exec, kind == 1 ? 4u : 5u, &x->xentry));
    }
    return OK;
}

static const Step *cmp_step; /* qsort has no context argument; the GIL serialises calls */

static int by_device_name(const void *pa, const void *pb) {
    PyObject *a = PyList_GetItem(cmp_step->devices, *(const int32_t *)pa);
    PyObject *b = PyList_GetItem(cmp_step->devices, *(const int32_t *)pb);
    int lt = PyObject_RichCompareBool(a, b, Py_LT);
    if (lt > 0) {
        return -1;
    }
    return PyObject_RichCompareBool(b, a, Py_LT) > 0 ? 1 : 0;
}

/* devices (6): the node's device strings, unique and sorted. */
static int put_devices(WireBuf *exec, ExecBufs *x, const Step *s, size_t a, size_t b) {
    size_t i, j, n = 0;
    int32_t *codes;
    x->codes.len = 0;
    for (i = a; i < b; i++) {
        int32_t code = get_i32(s, S_P_DEV, i);
        int dup = 0;
        if (code < 0) {
            continue;
        }
        for (j = 0; j < n && !dup; j++) {
            dup = ((int32_t *)x->codes.data)[j] == code;
        }
        if (!dup) {
            TRY(wire_put_i32(&x->codes, code));
            n++;
        }
    }
    codes = (int32_t *)x->codes.data;
    if (n > 1) {
        cmp_step = s;
        qsort(codes, n, sizeof(int32_t), by_device_name);
    }
    for (i = 0; i < n; i++) {
        TRY(put_device_name(exec, 6, s, codes[i]));
    }
    return OK;
}

/* The outputs of memory row ``row``: [first, last) in the outputs sorted by row. */
static void output_range(const Step *s, int64_t row, size_t *first, size_t *last) {
    size_t lo = 0, hi = s->rows[S_O_MEM];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (get_i64(s, S_O_MEM, mid) < row) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    *first = lo;
    while (lo < s->rows[S_O_MEM] && get_i64(s, S_O_MEM, lo) == row) {
        lo++;
    }
    *last = lo;
}

/* memory_execs (7). */
static int put_memory(WireBuf *exec, ExecBufs *x, const Step *s, size_t a, size_t b) {
    size_t i, k, first, last;
    int v;
    for (i = a; i < b; i++) {
        x->xinner.len = 0;
        for (v = 0; v < N_MEM_VALUES; v++) {
            TRY(put_int(&x->xinner, (uint32_t)(v + 1), get_i64(s, S_M_VALUES + v, i)));
        }
        output_range(s, get_i64(s, S_M_ROW, i), &first, &last);
        for (k = first; k < last; k++) {
            uint64_t ptr;
            memcpy(&ptr, s->col[S_O_PTR] + k * 8, 8);
            x->leaf.len = 0;
            TRY(put_int(&x->leaf, 1, get_i64(s, S_O_BYTES, k)));
            if (ptr) {
                TRY(put_key(&x->leaf, 2, WIRE_VARINT));
                TRY(put_varint(&x->leaf, ptr));
            }
            x->xentry.len = 0;
            TRY(put_int(&x->xentry, 1, get_i32(s, S_O_SLOT, k)));
            TRY(put_nested(&x->xentry, 2, &x->leaf));
            TRY(put_nested(&x->xinner, 11, &x->xentry));
        }
        TRY(put_nested(exec, 7, &x->xinner));
    }
    return OK;
}

/* allocations (11). */
static int put_allocations(WireBuf *exec, ExecBufs *x, const Step *s, size_t a, size_t b) {
    size_t i;
    for (i = a; i < b; i++) {
        x->leaf.len = 0;
        TRY(put_int(&x->leaf, 1, get_i64(s, S_A_MICROS, i)));
        TRY(put_int(&x->leaf, 2, get_i64(s, S_A_BYTES, i)));
        TRY(put_nested(exec, 11, &x->leaf));
    }
    return OK;
}

/* The node's ExecProfile of step ``s`` into e->exec; *present says whether it ran. */
static int put_exec(Enc *e, ExecBufs *x, Step *s, int32_t nid, int *present) {
    size_t pa, pb, ta, tb, ma, mb, aa, ab, i;
    int64_t runs = 0, start = 0, end = 0;
    node_range(s, S_P_NODE, nid, &pa, &pb);
    node_range(s, S_T_NODE, nid, &ta, &tb);
    node_range(s, S_M_NODE, nid, &ma, &mb);
    node_range(s, S_A_NODE, nid, &aa, &ab);
    *present = pb > pa;
    if (!*present) {
        return OK;
    }
    while (s->at[S_S_NODE] < s->rows[S_S_NODE] && get_i64(s, S_S_NODE, s->at[S_S_NODE]) < nid) {
        s->at[S_S_NODE]++;
    }
    if (s->at[S_S_NODE] < s->rows[S_S_NODE] && get_i64(s, S_S_NODE, s->at[S_S_NODE]) == nid) {
        start = get_i64(s, S_S_START, s->at[S_S_NODE]);
        end = get_i64(s, S_S_END, s->at[S_S_NODE]);
    }
    for (i = ta; i < tb; i++) {
        runs += get_i8(s, S_T_KIND, i) == 2;
    }
    e->exec.len = 0;
    TRY(put_int(&e->exec, 1, runs));
    TRY(put_int(&e->exec, 2, start));
    TRY(put_int(&e->exec, 3, end));
    TRY(put_times(&e->exec, x, s, ta, tb, 1));
    TRY(put_times(&e->exec, x, s, ta, tb, 2));
    TRY(put_devices(&e->exec, x, s, pa, pb));
    TRY(put_memory(&e->exec, x, s, ma, mb));
    TRY(put_allocations(&e->exec, x, s, aa, ab));
    return OK;
}

/* ------------------------------------------------------------------ module */

static int read_step(PyObject *t, Step *s) {
    Py_ssize_t i;
    int failed = 0;
    if (!PyTuple_Check(t) || PyTuple_Size(t) != 2 + N_STEP_COLUMNS) {
        PyErr_SetString(PyExc_TypeError, "a step is (step, devices, columns...)");
        return FAIL;
    }
    memset(s, 0, sizeof *s);
    s->step = as_int64(PyTuple_GetItem(t, 0), &failed);
    s->devices = PyTuple_GetItem(t, 1);
    if (failed || !PyList_Check(s->devices)) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "a step's devices are a list");
        }
        return FAIL;
    }
    for (i = 0; i < N_STEP_COLUMNS; i++) {
        char *data;
        Py_ssize_t n;
        if (PyBytes_AsStringAndSize(PyTuple_GetItem(t, 2 + i), &data, &n) < 0) {
            return FAIL;
        }
        if ((size_t)n % STEP_WIDTH[i]) {
            PyErr_SetString(PyExc_ValueError, "a column's size is not a whole number of rows");
            return FAIL;
        }
        s->col[i] = data;
        s->rows[i] = (size_t)n / STEP_WIDTH[i];
    }
    return OK;
}

static int encode_nodes(Enc *e, Step *steps, Py_ssize_t n_steps) {
    Py_ssize_t n = PyList_Size(e->lists[N_NAMES]), nid, k;
    ExecBufs x;
    int rc = OK;
    memset(&x, 0, sizeof x);
    for (nid = 0; rc == OK && nid < n; nid++) {
        e->node.len = 0;
        rc = put_static(e, nid);
        for (k = 0; rc == OK && k < n_steps; k++) {
            int present = 0;
            rc = put_exec(e, &x, &steps[k], (int32_t)nid, &present);
            if (rc == OK && present) {
                e->entry.len = 0;
                if (put_int(&e->entry, 1, steps[k].step) != OK ||
                    put_nested(&e->entry, 2, &e->exec) != OK ||
                    put_nested(&e->node, 12, &e->entry) != OK) {
                    rc = FAIL;
                }
            }
        }
        if (rc == OK) {
            e->entry.len = 0;
            if (put_int(&e->entry, 1, (int64_t)nid) != OK ||
                put_nested(&e->entry, 2, &e->node) != OK ||
                put_nested(&e->out, 1, &e->entry) != OK) {
                rc = FAIL;
            }
        }
    }
    wire_buf_free(&x.xentry);
    wire_buf_free(&x.xinner);
    wire_buf_free(&x.leaf);
    wire_buf_free(&x.codes);
    return rc;
}

static int check_lists(Enc *e, PyObject *nodes) {
    Py_ssize_t i, n;
    if (!PyTuple_Check(nodes) || PyTuple_Size(nodes) != N_NODE_LISTS) {
        PyErr_SetString(PyExc_TypeError, "nodes is a tuple of the model's per-node lists");
        return FAIL;
    }
    for (i = 0; i < N_NODE_LISTS; i++) {
        e->lists[i] = PyTuple_GetItem(nodes, i);
    }
    n = PyList_Size(e->lists[N_NAMES]);
    for (i = 0; i < N_NODE_LISTS; i++) {
        if (i == N_INDEX ? !PyDict_Check(e->lists[i])
                         : (!PyList_Check(e->lists[i]) || PyList_Size(e->lists[i]) != n)) {
            PyErr_SetString(PyExc_TypeError, "the per-node lists differ in length");
            return FAIL;
        }
    }
    return OK;
}

static PyObject *profileencode_encode(PyObject *self, PyObject *args) {
    PyObject *header, *nodes, *steps_list, *result = NULL;
    Enc e;
    Step *steps = NULL;
    Py_ssize_t n_steps = 0, i;
    char *data;
    Py_ssize_t size;
    int rc;
    (void)self;
    if (!PyArg_ParseTuple(args, "SOO!", &header, &nodes, &PyList_Type, &steps_list)) {
        return NULL;
    }
    memset(&e, 0, sizeof e);
    rc = check_lists(&e, nodes);
    if (rc == OK) {
        n_steps = PyList_Size(steps_list);
        steps = (Step *)calloc((size_t)n_steps + 1, sizeof(Step));
        if (steps == NULL) {
            PyErr_NoMemory();
            rc = FAIL;
        }
    }
    for (i = 0; rc == OK && i < n_steps; i++) {
        rc = read_step(PyList_GetItem(steps_list, i), &steps[i]);
    }
    if (rc == OK && PyBytes_AsStringAndSize(header, &data, &size) == 0) {
        rc = wire_buf_put(&e.out, data, (size_t)size);
    } else if (rc == OK) {
        rc = FAIL;
    }
    if (rc == OK) {
        rc = encode_nodes(&e, steps, n_steps);
    }
    if (rc == OK && !PyErr_Occurred()) {
        result = PyBytes_FromStringAndSize(e.out.data ? e.out.data : "", (Py_ssize_t)e.out.len);
    }
    free(steps);
    wire_buf_free(&e.node);
    wire_buf_free(&e.entry);
    wire_buf_free(&e.inner);
    wire_buf_free(&e.tmp);
    wire_buf_free(&e.exec);
    wire_buf_free(&e.out);
    return result;
}

/* ------------------------------------------------------------------ view heads */

static PyObject *new_ref(PyObject *o) {
    Py_INCREF(o);
    return o;
}

typedef struct {
    int64_t pos;
    PyObject *src; /* borrowed */
} Input;

/* The node's inputs into *items (grown as needed), by position (positions in a
   dict are distinct; most come ascending). */
static int sorted_inputs(PyObject *inputs, WireBuf *items, size_t *count) {
    PyObject *pos, *src;
    Py_ssize_t it = 0;
    size_t n = 0, i;
    int failed = 0;
    items->len = 0;
    if (!PyDict_Check(inputs)) {
        return FAIL;
    }
    while (PyDict_Next(inputs, &it, &pos, &src)) {
        Input in;
        in.pos = as_int64(pos, &failed);
        in.src = src;
        if (failed || !PyUnicode_Check(src)) {
            return FAIL;
        }
        TRY(wire_buf_put(items, &in, sizeof in));
        n++;
    }
    for (i = 1; i < n; i++) { /* insertion sort: short runs, usually in order */
        Input *all = (Input *)items->data, key = all[i];
        size_t j = i;
        while (j > 0 && all[j - 1].pos > key.pos) {
            all[j] = all[j - 1];
            j--;
        }
        all[j] = key;
    }
    *count = n;
    return OK;
}

/* Every node's inputs as edge columns: per node its input count, per input its
   position, producer id (-1: not a node) and producer name. */
static int read_edges(PyObject *inputs, PyObject *index, WireBuf *cols, PyObject *srcs) {
    Py_ssize_t n = PyList_Size(inputs), nid;
    WireBuf items;
    int rc = OK;
    memset(&items, 0, sizeof items);
    for (nid = 0; rc == OK && nid < n; nid++) {
        size_t count = 0, i;
        rc = sorted_inputs(PyList_GetItem(inputs, nid), &items, &count);
        if (rc == OK) {
            rc = wire_put_i64(&cols[0], (int64_t)count);
        }
        for (i = 0; rc == OK && i < count; i++) {
            const Input *in = (const Input *)items.data + i;
            PyObject *producer = PyDict_GetItem(index, in->src);
            int failed = 0;
            int64_t p = producer != NULL ? as_int64(producer, &failed) : -1;
            if (failed || wire_put_i64(&cols[1], in->pos) != OK ||
                wire_put_i64(&cols[2], p) != OK || wire_list_add(srcs, new_ref(in->src)) != OK) {
                rc = FAIL;
            }
        }
    }
    wire_buf_free(&items);
    return rc;
}

static PyObject *profileencode_input_edges(PyObject *self, PyObject *args) {
    PyObject *inputs, *index, *srcs, *result = NULL;
    WireBuf cols[3];
    int i;
    (void)self;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &inputs, &PyDict_Type, &index)) {
        return NULL;
    }
    memset(cols, 0, sizeof cols);
    srcs = PyList_New(0);
    if (srcs != NULL && read_edges(inputs, index, cols, srcs) == OK) {
        result = Py_BuildValue("(y#y#y#O)", cols[0].data ? cols[0].data : "",
                               (Py_ssize_t)cols[0].len, cols[1].data ? cols[1].data : "",
                               (Py_ssize_t)cols[1].len, cols[2].data ? cols[2].data : "",
                               (Py_ssize_t)cols[2].len, srcs);
    } else if (!PyErr_Occurred() || !PyErr_ExceptionMatches(PyExc_MemoryError)) {
        PyErr_Clear(); /* declined: the caller's own path says what is wrong */
        result = Py_None;
        Py_INCREF(result);
    }
    Py_XDECREF(srcs);
    for (i = 0; i < 3; i++) {
        wire_buf_free(&cols[i]);
    }
    return result;
}

/* A TensorShapeProto of the list ``dims`` (NULL or empty: unknown rank). */
static int put_shape(WireBuf *b, WireBuf *dim, PyObject *dims) {
    Py_ssize_t n, i;
    int failed = 0;
    if (dims == NULL) {
        return put_int(b, 3, 1);
    }
    if (!PyList_Check(dims)) {
        return FAIL;
    }
    n = PyList_Size(dims);
    if (n == 0) {
        return put_int(b, 3, 1);
    }
    for (i = 0; i < n; i++) {
        dim->len = 0;
        TRY(put_int(dim, 1, as_int64(PyList_GetItem(dims, i), &failed)));
        if (failed) {
            return FAIL;
        }
        TRY(put_nested(b, 2, dim));
    }
    return OK;
}

typedef struct {
    PyObject *names, *devices, *srcs, *src_output, *output_shapes;
    const int64_t *offsets, *pos, *producer;
    PyObject *zero;
    Py_ssize_t n, edges;
    WireBuf head, entry, shape, dim;
    PyObject *last_device; /* borrowed: the device whose field is in device_field */
    WireBuf device_field;
} Heads;

/* The output shape edge ``e`` of node ``nid`` reads (borrowed; NULL for none). */
static int read_shape(Heads *h, Py_ssize_t nid, Py_ssize_t e, PyObject **dims) {
    PyObject *slots, *slot, *shapes;
    int64_t p = h->producer[e];
    *dims = NULL;
    if (p < 0) {
        return OK;
    }
    if (p >= h->n) {
        return FAIL;
    }
    slots = PyList_GetItem(h->src_output, nid);
    shapes = PyList_GetItem(h->output_shapes, (Py_ssize_t)p);
    if (!PyDict_Check(slots) || !PyDict_Check(shapes)) {
        return FAIL;
    }
    slot = PyDict_GetItem(slots, PyList_GetItem(h->srcs, e));
    *dims = PyDict_GetItem(shapes, slot != NULL ? slot : h->zero);
    return OK;
}

static int put_head(Heads *h, Py_ssize_t nid) {
    PyObject *name = PyList_GetItem(h->names, nid), *device = PyList_GetItem(h->devices, nid);
    int64_t e;
    h->head.len = 0;
    if (!PyUnicode_Check(name) || !PyUnicode_Check(device)) {
        return FAIL;
    }
    if (PyUnicode_GetLength(name) == 0) {
        TRY(put_bytes(&h->head, 1, "", 0)); /* the name is written even when empty */
    } else {
        TRY(put_text(&h->head, 1, name));
    }
    if (device != h->last_device) { /* most nodes share one device object */
        h->device_field.len = 0;
        TRY(put_text(&h->device_field, 10, device));
        h->last_device = device;
    }
    TRY(wire_buf_put(&h->head, h->device_field.data ? h->device_field.data : "",
                     h->device_field.len));
    for (e = h->offsets[nid]; e < h->offsets[nid + 1]; e++) {
        PyObject *dims;
        TRY(read_shape(h, nid, (Py_ssize_t)e, &dims));
        h->shape.len = 0;
        h->entry.len = 0;
        TRY(put_shape(&h->shape, &h->dim, dims));
        TRY(put_int(&h->entry, 1, h->pos[e]));
        TRY(put_nested(&h->entry, 2, &h->shape));
        TRY(put_nested(&h->head, 16, &h->entry));
    }
    return OK;
}

/* The int64 column ``data`` of ``count`` values, or FAIL. */
static int column(PyObject *data, Py_ssize_t count, const int64_t **out) {
    char *p;
    Py_ssize_t size;
    if (!PyBytes_Check(data) || PyBytes_AsStringAndSize(data, &p, &size) < 0 ||
        size != 8 * count) {
        return FAIL;
    }
    *out = (const int64_t *)p;
    return OK;
}

static int heads_args(Heads *h, PyObject *offsets, PyObject *pos, PyObject *producer) {
    PyObject *lists[4] = {h->devices, h->src_output, h->output_shapes, h->names};
    Py_ssize_t i;
    if (!PyList_Check(h->names) || !PyList_Check(h->srcs)) {
        return FAIL;
    }
    h->n = PyList_Size(h->names);
    h->edges = PyList_Size(h->srcs);
    for (i = 0; i < 4; i++) {
        if (!PyList_Check(lists[i]) || PyList_Size(lists[i]) != h->n) {
            return FAIL;
        }
    }
    TRY(column(offsets, h->n + 1, &h->offsets));
    TRY(column(pos, h->edges, &h->pos));
    TRY(column(producer, h->edges, &h->producer));
    if (h->offsets[0] != 0 || h->offsets[h->n] != h->edges) {
        return FAIL;
    }
    for (i = 0; i < h->n; i++) {
        if (h->offsets[i + 1] < h->offsets[i]) {
            return FAIL;
        }
    }
    return OK;
}

static PyObject *profileencode_heads(PyObject *self, PyObject *args) {
    Heads h;
    PyObject *offsets, *pos, *producer, *out = NULL, *result = NULL;
    Py_ssize_t nid;
    int rc;
    (void)self;
    memset(&h, 0, sizeof h);
    if (!PyArg_ParseTuple(args, "OOOOOOOO", &h.names, &h.devices, &offsets, &pos, &producer,
                          &h.srcs, &h.src_output, &h.output_shapes)) {
        return NULL;
    }
    h.zero = PyLong_FromLong(0);
    rc = h.zero != NULL ? heads_args(&h, offsets, pos, producer) : FAIL;
    if (rc == OK) {
        out = PyList_New(h.n);
        rc = out != NULL ? OK : FAIL;
    }
    for (nid = 0; rc == OK && nid < h.n; nid++) {
        PyObject *head;
        rc = put_head(&h, nid);
        if (rc == OK) {
            head = PyBytes_FromStringAndSize(h.head.data ? h.head.data : "",
                                             (Py_ssize_t)h.head.len);
            rc = head != NULL ? OK : FAIL;
            if (rc == OK) {
                PyList_SetItem(out, nid, head);
            }
        }
    }
    if (rc == OK) {
        result = out;
        out = NULL;
    } else if (!PyErr_Occurred() || !PyErr_ExceptionMatches(PyExc_MemoryError)) {
        PyErr_Clear(); /* declined: the caller's own path says what is wrong */
        result = Py_None;
        Py_INCREF(result);
    }
    Py_XDECREF(out);
    Py_XDECREF(h.zero);
    wire_buf_free(&h.head);
    wire_buf_free(&h.entry);
    wire_buf_free(&h.shape);
    wire_buf_free(&h.dim);
    wire_buf_free(&h.device_field);
    return result;
}

/* ------------------------------------------------------------------ view trees */

static size_t varint_size(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80u) {
        v >>= 7;
        n++;
    }
    return n;
}

static uint8_t *write_varint(uint8_t *out, uint64_t v) {
    while (v >= 0x80u) {
        *out++ = (uint8_t)(v | 0x80u);
        v >>= 7;
    }
    *out++ = (uint8_t)v;
    return out;
}

typedef struct {
    PyObject **lists; /* the streams */
    Py_ssize_t n_streams, n;
    const int64_t *parents;
    const char *tag;
    Py_ssize_t tag_len;
    uint64_t *content; /* per row: its fields plus its framed children */
} Tree;

/* Row sizes, then each row's content from the last row up (a row's children
   come after it in pre-order, so they are final when it is reached). */
static int tree_sizes(Tree *t) {
    Py_ssize_t r, k;
    for (r = 0; r < t->n; r++) {
        uint64_t own = 0;
        for (k = 0; k < t->n_streams; k++) {
            PyObject *piece = PyList_GetItem(t->lists[k], r);
            if (piece == NULL || !PyBytes_Check(piece)) {
                PyErr_Clear();
                return FAIL;
            }
            own += (uint64_t)PyBytes_Size(piece);
        }
        t->content[r] = own;
    }
    if (t->n > 0 && t->parents[0] != -1) {
        return FAIL;
    }
    for (r = t->n - 1; r > 0; r--) {
        int64_t p = t->parents[r];
        if (p < 0 || p >= r) {
            return FAIL;
        }
        t->content[p] += (uint64_t)t->tag_len + varint_size(t->content[r]) + t->content[r];
    }
    return OK;
}

static void tree_write(const Tree *t, uint8_t *out) {
    Py_ssize_t r, k;
    for (r = 0; r < t->n; r++) {
        if (r > 0) {
            memcpy(out, t->tag, (size_t)t->tag_len);
            out = write_varint(out + t->tag_len, t->content[r]);
        }
        for (k = 0; k < t->n_streams; k++) {
            PyObject *piece = PyList_GetItem(t->lists[k], r);
            Py_ssize_t size = PyBytes_Size(piece);
            memcpy(out, PyBytes_AsString(piece), (size_t)size);
            out += size;
        }
    }
}

static int tree_args(Tree *t, PyObject *streams, PyObject *parents, PyObject *tag) {
    Py_ssize_t k;
    char *data;
    Py_ssize_t size;
    if (!PyList_Check(streams) || !PyBytes_Check(parents) || !PyBytes_Check(tag)) {
        return FAIL;
    }
    t->n_streams = PyList_Size(streams);
    if (PyBytes_AsStringAndSize(parents, &data, &size) < 0 || size % 8 != 0) {
        return FAIL;
    }
    t->parents = (const int64_t *)data;
    t->n = size / 8;
    if (PyBytes_AsStringAndSize(tag, &data, &t->tag_len) < 0 || t->tag_len < 1 ||
        t->tag_len > 5) {
        return FAIL;
    }
    t->tag = data;
    t->lists = (PyObject **)calloc((size_t)t->n_streams + 1, sizeof(PyObject *));
    t->content = (uint64_t *)calloc((size_t)t->n + 1, sizeof(uint64_t));
    if (t->lists == NULL || t->content == NULL) {
        PyErr_NoMemory();
        return FAIL;
    }
    for (k = 0; k < t->n_streams; k++) {
        t->lists[k] = PyList_GetItem(streams, k);
        if (!PyList_Check(t->lists[k]) || PyList_Size(t->lists[k]) != t->n) {
            return FAIL;
        }
    }
    return OK;
}

static PyObject *profileencode_frame_tree(PyObject *self, PyObject *args) {
    PyObject *streams, *parents, *tag, *out = NULL;
    Tree t;
    (void)self;
    memset(&t, 0, sizeof t);
    if (!PyArg_ParseTuple(args, "OOO", &streams, &parents, &tag)) {
        return NULL;
    }
    if (tree_args(&t, streams, parents, tag) == OK && t.n > 0 && tree_sizes(&t) == OK &&
        t.content[0] < (uint64_t)PY_SSIZE_T_MAX) {
        out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)t.content[0]);
        if (out != NULL) {
            tree_write(&t, (uint8_t *)PyBytes_AsString(out));
        }
    } else if (!PyErr_Occurred()) {
        out = Py_None;
        Py_INCREF(out);
    }
    free(t.lists);
    free(t.content);
    return out;
}

/* ------------------------------------------------------------------ stat rows */

static PyObject *profileencode_encode_rows(PyObject *self, PyObject *args) {
    PyObject *values, *tags, *prefixes = Py_None, *out = NULL;
    const char *tag_data[64];
    Py_ssize_t tag_len[64], cols, rows, r, j;
    char *data;
    Py_ssize_t size;
    WireBuf row;
    (void)self;
    if (!PyArg_ParseTuple(args, "SO!|O", &values, &PyList_Type, &tags, &prefixes)) {
        return NULL;
    }
    cols = PyList_Size(tags);
    if (cols < 1 || cols > 64 || PyBytes_AsStringAndSize(values, &data, &size) < 0 ||
        size % (8 * cols) != 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    rows = size / (8 * cols);
    if (prefixes != Py_None && (!PyList_Check(prefixes) || PyList_Size(prefixes) != rows)) {
        Py_RETURN_NONE;
    }
    for (j = 0; j < cols; j++) {
        char *t;
        PyObject *tag = PyList_GetItem(tags, j);
        if (!PyBytes_Check(tag) || PyBytes_AsStringAndSize(tag, &t, &tag_len[j]) < 0 ||
            tag_len[j] < 1 || tag_len[j] > 5) {
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        tag_data[j] = t;
    }
    for (r = 0; prefixes != Py_None && r < rows; r++) {
        if (!PyBytes_Check(PyList_GetItem(prefixes, r))) {
            Py_RETURN_NONE;
        }
    }
    out = PyList_New(rows);
    memset(&row, 0, sizeof row);
    for (r = 0; out != NULL && r < rows; r++) {
        PyObject *encoded;
        row.len = 0;
        if (prefixes != Py_None) {
            PyObject *prefix = PyList_GetItem(prefixes, r);
            if (wire_buf_put(&row, PyBytes_AsString(prefix), (size_t)PyBytes_Size(prefix)) != OK) {
                Py_CLEAR(out);
                break;
            }
        }
        for (j = 0; j < cols; j++) {
            uint64_t v;
            memcpy(&v, data + 8 * (r * cols + j), 8);
            if (v != 0 && (wire_buf_put(&row, tag_data[j], (size_t)tag_len[j]) != OK ||
                           put_varint(&row, v) != OK)) {
                Py_CLEAR(out);
                break;
            }
        }
        if (out == NULL) {
            break;
        }
        encoded = PyBytes_FromStringAndSize(row.data ? row.data : "", (Py_ssize_t)row.len);
        if (encoded == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyList_SetItem(out, r, encoded);
    }
    wire_buf_free(&row);
    return out;
}

static PyMethodDef profileencode_methods[] = {
    {"encode", profileencode_encode, METH_VARARGS,
     "encode(header: bytes, nodes: tuple, steps: list) -> bytes\n\n"
     "A profile model's ProfileProto bytes (see tfprof_lite.model.profile_write)."},
    {"input_edges", profileencode_input_edges, METH_VARARGS,
     "input_edges(inputs, index) -> tuple | None\n\n"
     "The model's per-node input dicts as edge columns (see tfprof_lite.views.inputs)."},
    {"heads", profileencode_heads, METH_VARARGS,
     "heads(names, devices, offsets, pos, producer, srcs, src_output, output_shapes)"
     " -> list | None\n\n"
     "Each node's name, device and input_shapes fields of the view messages\n"
     "(see tfprof_lite.outputs.message_nodes); None when declined."},
    {"frame_tree", profileencode_frame_tree, METH_VARARGS,
     "frame_tree(streams, parents, tag) -> bytes | None\n\n"
     "A pre-order view message tree as one message (see tfprof_lite.outputs.message)."},
    {"encode_rows", profileencode_encode_rows, METH_VARARGS,
     "encode_rows(values, tags, prefixes=None) -> list | None\n\n"
     "Each row of an int64 matrix as varint fields, after prefixes[row] when given\n"
     "(see tfprof_lite.outputs.message_nodes)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef profileencode_module = {
    PyModuleDef_HEAD_INIT,
    "_profileencode",
    "Native encoder of saved profiles (see tfprof_lite.model.profile_write).",
    -1,
    profileencode_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__profileencode(void) { return PyModule_Create(&profileencode_module); }
