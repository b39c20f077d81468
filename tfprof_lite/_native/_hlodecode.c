/*
 * Native decoder of XLA's serialized HloProto (module
 * tfprof_lite._native._hlodecode). See docs/native.md and
 * tfprof_lite/proto/hlo_module.py, whose named tuples it builds: the fields of
 * tfprof_lite/proto/hlo.proto (the subset of XLA's HLO protos tfprof_lite
 * reads) that the XLA mapping and the call stacks read, with the values
 * protobuf's parse of the same bytes gives them. The schema's other fields
 * (deduplicated_name, scheduling_name, is_fusion_computation,
 * execution_thread, a FileLocation's column and end) are checked as protobuf
 * checks them but not kept.
 *
 * decode(data: bytes, classes: tuple) -> HloModule | None
 *
 * ``classes``: the tuple subclasses (HloModule, HloComputation,
 * HloInstruction, OpMetadata, HloSchedule, InstructionSequence,
 * StackFrameIndex, FileLocation, StackFrame), each instance allocated here and
 * filled in its class's field order (repeated fields are tuples, the
 * schedule's sequences a dict, a message that is absent its default: empty
 * strings, zeros, empty tuples).
 *
 * The input is untrusted. Fields outside the subset are skipped as protobuf
 * keeps them as unknown fields (varint, fixed64, length-delimited, fixed32).
 * Anything else makes it return None ("declined") so that the caller parses the
 * bytes with protobuf instead (which succeeds the same way or raises its
 * error): the wire-level rules of _wire.h, groups, a known field with another
 * wire type, invalid UTF-8 in a string field, a singular message field that
 * appears twice (protobuf would merge the two), a map entry with a field of
 * its own that is not its key or value or whose value appears twice.
 *
 * Protobuf's rules: for a singular scalar field the last occurrence wins; each
 * occurrence of a repeated field adds an element; repeated int64 may be packed;
 * of two map entries with one key the last wins; int32 fields keep the low 32
 * bits of their varint as a signed value.
 */

#include "_tuples.h"

enum { K_MODULE, K_COMP, K_INSTR, K_META, K_SCHED, K_SEQ, K_INDEX, K_LOC, K_FRAME, K_COUNT };

typedef struct {
    PyObject *cls[K_COUNT];
    WireBuf ints;        /* scratch for a schedule sequence's ids */
    WireBuf operands;    /* scratch for an instruction's operand_ids */
    WireBuf called;      /* scratch for an instruction's called_computation_ids */
} Ctx;

#define MAKE(c, kind, ...) TUPLE_MAKE((c)->cls[kind], __VA_ARGS__)

/* The int64 values of ``b`` as a tuple of ints. */
static PyObject *ints_tuple(const WireBuf *b) {
    const int64_t *v = (const int64_t *)(void *)b->data;
    size_t n = b->len / sizeof(int64_t), i;
    PyObject *out = PyTuple_New((Py_ssize_t)n);
    for (i = 0; out != NULL && i < n; i++) {
        PyObject *item = PyLong_FromLongLong((long long)v[i]);
        if (item == NULL || PyTuple_SetItem(out, (Py_ssize_t)i, item) < 0) {
            Py_CLEAR(out);
        }
    }
    wire_untrack(out);
    return out;
}

/* A tuple of the strings read into ``list`` (consumed). */
static PyObject *frozen(PyObject *list) {
    PyObject *out;
    if (list == NULL) {
        return NULL;
    }
    out = PyList_AsTuple(list);
    Py_DECREF(list);
    wire_untrack(out); /* of strings or untracked tuples */
    return out;
}

static PyObject *bytes_of(Span s) {
    static const char empty[1] = {0};
    if (s.p == NULL) {
        return PyBytes_FromStringAndSize(empty, 0);
    }
    return PyBytes_FromStringAndSize((const char *)s.p, (Py_ssize_t)(s.end - s.p));
}

/* ------------------------------------------------------------------ OpMetadata */

static int decode_meta(Ctx *c, Span m, PyObject **out) {
    Span text[3] = {{NULL, NULL}, {NULL, NULL}, {NULL, NULL}}, unread;
    int64_t line = 0, frame = 0;
    Ptr p = m.p;
    while (p < m.end) {
        uint32_t number, wire;
        TRY(wire_tag(&p, m.end, &number, &wire));
        switch (number) {
        case 1: /* op_type */
        case 2: /* op_name */
        case 3: /* source_file */
            TRY(read_str(&p, m.end, wire, &text[number - 1]));
            break;
        case 12: /* deduplicated_name, scheduling_name: checked, not kept */
        case 16:
            TRY(read_str(&p, m.end, wire, &unread));
            break;
        case 4:
            TRY(read_i32(&p, m.end, wire, &line));
            break;
        case 15:
            TRY(read_i32(&p, m.end, wire, &frame));
            break;
        default:
            TRY(skip_field(&p, m.end, wire));
        }
    }
    *out = MAKE(c, K_META, wire_text(text[0]), wire_text(text[1]), wire_text(text[2]),
                int_of(line), int_of(frame));
    return BUILT(*out);
}

/* ------------------------------------------------------------------ instructions */

typedef struct {
    Span name, opcode, meta, fusion_kind, target, backend;
    int64_t id;
} Instr;

static int scan_instr(Ctx *c, Span m, Instr *in) {
    Ptr p = m.p;
    memset(in, 0, sizeof *in);
    c->operands.len = c->called.len = 0;
    while (p < m.end) {
        uint32_t number, wire;
        TRY(wire_tag(&p, m.end, &number, &wire));
        switch (number) {
        case 1:
            TRY(read_str(&p, m.end, wire, &in->name));
            break;
        case 2:
            TRY(read_str(&p, m.end, wire, &in->opcode));
            break;
        case 7:
            TRY(read_once(&p, m.end, wire, &in->meta));
            break;
        case 11:
            TRY(read_str(&p, m.end, wire, &in->fusion_kind));
            break;
        case 28:
            TRY(read_str(&p, m.end, wire, &in->target));
            break;
        case 35:
            TRY(read_i64(&p, m.end, wire, &in->id));
            break;
        case 36:
            TRY(wire_repeated_i64(&p, m.end, wire, &c->operands));
            break;
        case 38:
            TRY(wire_repeated_i64(&p, m.end, wire, &c->called));
            break;
        case 43:
            TRY(read_span(&p, m.end, wire, &in->backend));
            break;
        default:
            TRY(skip_field(&p, m.end, wire));
        }
    }
    return OK;
}

static int decode_instr(Ctx *c, Span m, PyObject **out) {
    Instr in;
    PyObject *meta = NULL;
    TRY(scan_instr(c, m, &in));
    TRY(decode_meta(c, in.meta, &meta));
    *out = MAKE(c, K_INSTR, wire_text(in.name), wire_text(in.opcode), meta,
                wire_text(in.fusion_kind), wire_text(in.target), int_of(in.id),
                ints_tuple(&c->operands), ints_tuple(&c->called), bytes_of(in.backend));
    return BUILT(*out);
}

/* ------------------------------------------------------------------ computations */

static int decode_comp(Ctx *c, Span m, PyObject **out) {
    Span name = {NULL, NULL}, unread;
    int64_t id = 0, root = 0;
    uint64_t flag;
    Ptr p = m.p;
    PyObject *instrs = PyList_New(0);
    if (instrs == NULL) {
        return FAIL;
    }
    while (p < m.end) {
        uint32_t number, wire;
        Span s;
        PyObject *item = NULL;
        int rc = wire_tag(&p, m.end, &number, &wire);
        if (rc == OK) {
            switch (number) {
            case 1:
                rc = read_str(&p, m.end, wire, &name);
                break;
            case 2:
                rc = read_span(&p, m.end, wire, &s);
                rc = rc == OK ? decode_instr(c, s, &item) : rc;
                rc = rc == OK ? list_add(instrs, item) : rc;
                break;
            case 5:
                rc = read_i64(&p, m.end, wire, &id);
                break;
            case 6:
                rc = read_i64(&p, m.end, wire, &root);
                break;
            case 7: /* is_fusion_computation, execution_thread: checked, not kept */
                rc = read_u64(&p, m.end, wire, &flag);
                break;
            case 8:
                rc = read_str(&p, m.end, wire, &unread);
                break;
            default:
                rc = skip_field(&p, m.end, wire);
            }
        }
        if (rc != OK) {
            Py_DECREF(instrs);
            return rc;
        }
    }
    *out = MAKE(c, K_COMP, wire_text(name), frozen(instrs), int_of(id), int_of(root));
    return BUILT(*out);
}

/* ------------------------------------------------------------------ schedule */

/* One map entry of HloScheduleProto.sequences: its key and value span. */
static int scan_entry(Span m, int64_t *key, Span *value) {
    Ptr p = m.p;
    *key = 0;
    value->p = value->end = NULL;
    while (p < m.end) {
        uint32_t number, wire;
        TRY(wire_tag(&p, m.end, &number, &wire));
        if (number == 1) {
            TRY(read_i64(&p, m.end, wire, key));
        } else if (number == 2) {
            TRY(read_once(&p, m.end, wire, value));
        } else {
            return DECLINE;
        }
    }
    return OK;
}

static int decode_sequence(Ctx *c, Span m, PyObject **out) {
    Ptr p = m.p;
    c->ints.len = 0;
    while (m.p != NULL && p < m.end) {
        uint32_t number, wire;
        int rc = wire_tag(&p, m.end, &number, &wire);
        if (rc == OK) {
            rc = number == 1 ? wire_repeated_i64(&p, m.end, wire, &c->ints)
                             : skip_field(&p, m.end, wire);
        }
        if (rc != OK) {
            return rc;
        }
    }
    *out = MAKE(c, K_SEQ, ints_tuple(&c->ints));
    return BUILT(*out);
}

static int decode_schedule(Ctx *c, Span m, PyObject **out) {
    Ptr p = m.p;
    PyObject *seqs = PyDict_New();
    if (seqs == NULL) {
        return FAIL;
    }
    while (m.p != NULL && p < m.end) {
        uint32_t number, wire;
        Span entry, value;
        int64_t key;
        PyObject *seq = NULL;
        int rc = wire_tag(&p, m.end, &number, &wire);
        if (rc == OK && number == 1) {
            rc = read_span(&p, m.end, wire, &entry);
            rc = rc == OK ? scan_entry(entry, &key, &value) : rc;
            rc = rc == OK ? decode_sequence(c, value, &seq) : rc;
            rc = rc == OK ? dict_put(seqs, PyLong_FromLongLong((long long)key), seq) : rc;
        } else if (rc == OK) {
            rc = skip_field(&p, m.end, wire);
        }
        if (rc != OK) {
            Py_DECREF(seqs);
            return rc;
        }
    }
    wire_untrack(seqs); /* int keys, untracked values */
    *out = MAKE(c, K_SCHED, seqs);
    return BUILT(*out);
}

/* ------------------------------------------------------------------ stack frames */

/* FileLocation (fields 1..6 int32, the first three kept) or StackFrame (two
   int32): fields 1..n. */
static int decode_ints(Ctx *c, int kind, int n, Span m, PyObject **out) {
    int64_t v[6] = {0, 0, 0, 0, 0, 0};
    Ptr p = m.p;
    while (p < m.end) {
        uint32_t number, wire;
        TRY(wire_tag(&p, m.end, &number, &wire));
        if (number >= 1 && number <= (uint32_t)n) {
            TRY(read_i32(&p, m.end, wire, &v[number - 1]));
        } else {
            TRY(skip_field(&p, m.end, wire));
        }
    }
    *out = n == 6 ? MAKE(c, kind, int_of(v[0]), int_of(v[1]), int_of(v[2]))
                  : MAKE(c, kind, int_of(v[0]), int_of(v[1]));
    return BUILT(*out);
}

static int index_field(Ctx *c, Ptr *pp, Ptr end, uint32_t number, uint32_t wire,
                       PyObject **lists) {
    Span s;
    PyObject *item = NULL;
    if (number == 1 || number == 2) {
        TRY(read_str(pp, end, wire, &s));
        return list_add(lists[number - 1], wire_text(s));
    }
    if (number == 3 || number == 4) {
        TRY(read_span(pp, end, wire, &s));
        TRY(number == 3 ? decode_ints(c, K_LOC, 6, s, &item) : decode_ints(c, K_FRAME, 2, s, &item));
        return list_add(lists[number - 1], item);
    }
    return skip_field(pp, end, wire);
}

static int decode_index(Ctx *c, Span m, PyObject **out) {
    PyObject *lists[4] = {PyList_New(0), PyList_New(0), PyList_New(0), PyList_New(0)};
    Ptr p = m.p;
    int rc = OK, i;
    for (i = 0; i < 4; i++) {
        rc = lists[i] == NULL ? FAIL : rc;
    }
    while (rc == OK && m.p != NULL && p < m.end) {
        uint32_t number, wire;
        rc = wire_tag(&p, m.end, &number, &wire);
        rc = rc == OK ? index_field(c, &p, m.end, number, wire, lists) : rc;
    }
    if (rc != OK) {
        for (i = 0; i < 4; i++) {
            Py_XDECREF(lists[i]);
        }
        return rc;
    }
    *out = MAKE(c, K_INDEX, frozen(lists[0]), frozen(lists[1]), frozen(lists[2]),
                frozen(lists[3]));
    return BUILT(*out);
}

/* ------------------------------------------------------------------ module */

typedef struct {
    Span name, entry_name, schedule, index;
    int64_t id, entry_id;
} Module;

static int decode_module(Ctx *c, Span m, PyObject **out) {
    Module mod;
    Ptr p = m.p;
    PyObject *comps = PyList_New(0), *sched = NULL, *index = NULL;
    int rc = comps == NULL ? FAIL : OK;
    memset(&mod, 0, sizeof mod);
    while (rc == OK && m.p != NULL && p < m.end) {
        uint32_t number, wire;
        Span s;
        PyObject *item = NULL;
        rc = wire_tag(&p, m.end, &number, &wire);
        if (rc != OK) {
            break;
        }
        switch (number) {
        case 1:
            rc = read_str(&p, m.end, wire, &mod.name);
            break;
        case 2:
            rc = read_str(&p, m.end, wire, &mod.entry_name);
            break;
        case 3:
            rc = read_span(&p, m.end, wire, &s);
            rc = rc == OK ? decode_comp(c, s, &item) : rc;
            rc = rc == OK ? list_add(comps, item) : rc;
            break;
        case 5:
            rc = read_i64(&p, m.end, wire, &mod.id);
            break;
        case 6:
            rc = read_i64(&p, m.end, wire, &mod.entry_id);
            break;
        case 7:
            rc = read_once(&p, m.end, wire, &mod.schedule);
            break;
        case 17:
            rc = read_once(&p, m.end, wire, &mod.index);
            break;
        default:
            rc = skip_field(&p, m.end, wire);
        }
    }
    rc = rc == OK ? decode_schedule(c, mod.schedule, &sched) : rc;
    rc = rc == OK ? decode_index(c, mod.index, &index) : rc;
    if (rc != OK) {
        Py_XDECREF(comps);
        Py_XDECREF(sched);
        return rc;
    }
    *out = MAKE(c, K_MODULE, wire_text(mod.name), wire_text(mod.entry_name), frozen(comps),
                int_of(mod.id), int_of(mod.entry_id), sched, index);
    return BUILT(*out);
}

/* HloProto: its hlo_module (field 1); everything else is skipped. */
static int decode_proto(Ctx *c, Span m, PyObject **out) {
    Span module = {NULL, NULL};
    Ptr p = m.p;
    while (p < m.end) {
        uint32_t number, wire;
        TRY(wire_tag(&p, m.end, &number, &wire));
        if (number == 1) {
            TRY(read_once(&p, m.end, wire, &module));
        } else {
            TRY(skip_field(&p, m.end, wire));
        }
    }
    return decode_module(c, module, out);
}

static PyObject *hlodecode_decode(PyObject *self, PyObject *args) {
    PyObject *data, *classes, *result = NULL;
    char *buf;
    Py_ssize_t len;
    Ctx c;
    Span all;
    int rc;
    (void)self;
    if (!PyArg_ParseTuple(args, "O!O!:decode", &PyBytes_Type, &data, &PyTuple_Type, &classes)) {
        return NULL;
    }
    if (PyBytes_AsStringAndSize(data, &buf, &len) < 0) {
        return NULL;
    }
    memset(&c, 0, sizeof c);
    if (tuple_classes(classes, c.cls, K_COUNT, "nine HLO tuple classes") < 0) {
        return NULL;
    }
    all.p = (Ptr)buf;
    all.end = all.p + len;
    rc = decode_proto(&c, all, &result);
    wire_buf_free(&c.ints);
    wire_buf_free(&c.operands);
    wire_buf_free(&c.called);
    return decoded(rc, result);
}

static PyMethodDef hlodecode_methods[] = {
    {"decode", hlodecode_decode, METH_VARARGS,
     "decode(data: bytes, classes: tuple) -> tuple | None\n\n"
     "A serialized HloProto's module as the named tuples of\n"
     "tfprof_lite.proto.hlo_module, or None when the bytes are not in the plain\n"
     "subset this decoder reads (parse them with protobuf instead)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef hlodecode_module = {
    PyModuleDef_HEAD_INIT,
    "_hlodecode",
    "Native decoder of XLA HloProto bytes (see tfprof_lite.proto.hlo_module).",
    -1,
    hlodecode_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__hlodecode(void) {
    if (tuple_make_init() < 0) {
        return NULL;
    }
    return PyModule_Create(&hlodecode_module);
}
