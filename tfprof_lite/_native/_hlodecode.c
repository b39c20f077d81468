/*
 * Native decoder of XLA's serialized HloProto (module
 * tfprof_lite._native._hlodecode). See docs/native.md and
 * tfprof_lite/proto/hlo_module.py, whose named tuples it builds: the messages
 * and fields of tfprof_lite/proto/hlo.proto (the subset of XLA's HLO protos
 * tfprof_lite reads: the module with its instructions' shapes, windows and
 * dimension numbers, the schedule, the stack frame index, the input/output
 * aliases, and the buffer assignment), with the values protobuf's parse of the
 * same bytes gives them. The schema's fields that nothing reads
 * (deduplicated_name, scheduling_name, execution_thread, a FileLocation's
 * column and end) are checked as protobuf checks them but not kept.
 *
 * decode(data: bytes, classes: tuple) -> HloModule | None
 *     the module, as protobuf reads the bytes as an HloProtoModule (the
 *     buffer assignment skipped: what a profile needs when it is opened);
 * decode_program(data: bytes, classes: tuple) -> HloProgram | None
 *     the whole HloProto: module and buffer assignment (the program tools).
 *
 * ``classes``: the tuple subclasses of hlo_module.CLASSES, in the order of
 * the K_* constants below, each instance allocated here and filled in its
 * class's field order (repeated fields are tuples, the schedule's sequences a
 * dict, enums ints, bools bools, a message that is absent its default: empty
 * strings, zeros, empty tuples, default messages). Equal shapes share one
 * tuple, and equal opcodes, fusion kinds, custom-call targets, metadata texts
 * and backend configs one object (a program has a few hundred distinct shapes
 * and op names for thousands of instructions).
 *
 * The input is untrusted. The decoding rules are those of _msgtable.h, which
 * walks the tables below; the messages of which a program has thousands
 * (instructions, their metadata, stack frames) are read by hand with the same
 * rules: protobuf's for the last occurrence of a scalar, repeated and packed
 * fields, int32 and bool values, map entries; unknown fields skipped as
 * protobuf keeps them; anything else (the wire-level rules of _wire.h, groups,
 * a known field with another wire type, invalid UTF-8 in a string field, a
 * singular message field that appears twice, which protobuf would merge, odd
 * map entries, a message 24 levels below the HloProto) makes it return None
 * ("declined") so that the caller parses the bytes with protobuf instead
 * (which succeeds the same way or raises its error).
 */

#include "_hlotables.h"

/* ------------------------------------------------------------------ by hand */

/* The two messages of every instruction are read by hand: the same rules as
   the tables, without their generality. */

static int decode_meta(MtCtx *c, const MsgDesc *d, Span m, int depth, int build, PyObject **out) {
    Span text[3] = {{NULL, NULL}, {NULL, NULL}, {NULL, NULL}}, unread;
    int64_t line = 0, frame = 0;
    Ptr p = m.p;
    (void)depth;
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
    if (!build) {
        return OK;
    }
    *out = MT_TUPLE(c->cls[d->cls], mt_shared(c->k, text[0], 0), mt_shared(c->k, text[1], 0),
                    mt_shared(c->k, text[2], 0), mt_int(line), mt_int(frame));
    return BUILT(*out);
}

/* A message of int32 fields numbered 1..n (FileLocation, StackFrame), the
   kept ones first. */
static int decode_int32s(MtCtx *c, const MsgDesc *d, Span m, int depth, int build, PyObject **out) {
    int64_t v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    PyObject *items[8];
    Ptr p = m.p;
    int f, kept = 0;
    (void)depth;
    while (p < m.end) {
        uint32_t number, wire;
        TRY(wire_tag(&p, m.end, &number, &wire));
        if (number >= 1 && number <= (uint32_t)d->nfields) {
            TRY(read_i32(&p, m.end, wire, &v[number - 1]));
        } else {
            TRY(skip_field(&p, m.end, wire));
        }
    }
    if (!build) {
        return OK;
    }
    for (f = 0; f < d->nfields; f++) {
        if (d->fields[f].keep) {
            items[kept++] = mt_int(v[f]);
        }
    }
    *out = mt_tuple(c->cls[d->cls], kept, items);
    return BUILT(*out);
}

/* An instruction's singular messages and repeated integers (rows of
   c->k->ints[depth]). */
enum { M_META, M_SHAPE, M_WINDOW, M_CONV, M_PADDING, M_DOT, M_COUNT };
enum { R_OPERANDS, R_CALLED, R_DIMS, R_SIZES, R_FFT, R_GATHER, R_COUNT };
static MsgDesc *const INSTR_MSG[M_COUNT] = {&D_META,    &D_SHAPE,   &D_WINDOW,
                                            &D_CONV,    &D_PADDING, &D_DOT};

typedef struct {
    Span name, opcode, fusion_kind, target, backend, msg[M_COUNT];
    int64_t id, parameter_number, tuple_index, feature_groups, batch_groups;
    PyObject *slices; /* a list, or NULL */
} Instr;

static int instr_field(MtCtx *c, Instr *in, WireBuf *ints, Ptr *pp, Ptr end, uint32_t number,
                       uint32_t wire, int depth, int build) {
    PyObject *item = NULL;
    Span s;
    int row = -1, msg = -1;
    switch (number) {
    case 1: return read_str(pp, end, wire, &in->name);
    case 2: return read_str(pp, end, wire, &in->opcode);
    case 11: return read_str(pp, end, wire, &in->fusion_kind);
    case 28: return read_str(pp, end, wire, &in->target);
    case 43: return read_span(pp, end, wire, &in->backend);
    case 35: return read_i64(pp, end, wire, &in->id);
    case 9: return read_i64(pp, end, wire, &in->parameter_number);
    case 13: return read_i64(pp, end, wire, &in->tuple_index);
    case 50: return read_i64(pp, end, wire, &in->feature_groups);
    case 58: return read_i64(pp, end, wire, &in->batch_groups);
    case 7: msg = M_META; break;
    case 3: msg = M_SHAPE; break;
    case 15: msg = M_WINDOW; break;
    case 16: msg = M_CONV; break;
    case 21: msg = M_PADDING; break;
    case 30: msg = M_DOT; break;
    case 36: row = R_OPERANDS; break;
    case 38: row = R_CALLED; break;
    case 14: row = R_DIMS; break;
    case 20: row = R_SIZES; break;
    case 32: row = R_FFT; break;
    case 34: row = R_GATHER; break;
    case 17: /* slice_dimensions */
        TRY(read_span(pp, end, wire, &s));
        TRY(mt_decode(c, &D_SLICE, s, depth + 1, build, &item));
        if (!build) {
            return OK;
        }
        if (in->slices == NULL && (in->slices = PyList_New(0)) == NULL) {
            Py_DECREF(item);
            return FAIL;
        }
        return list_add(in->slices, item);
    default:
        return skip_field(pp, end, wire);
    }
    if (msg >= 0) {
        return read_once(pp, end, wire, &in->msg[msg]);
    }
    return wire_repeated_i64(pp, end, wire, build ? &ints[row] : NULL);
}

static int decode_instr(MtCtx *c, const MsgDesc *d, Span m, int depth, int build, PyObject **out) {
    Instr in;
    WireBuf *ints = c->k->ints[depth];
    PyObject *objs[M_COUNT] = {NULL, NULL, NULL, NULL, NULL, NULL}, *slices;
    Ptr p = m.p;
    int rc = OK, k;
    memset(&in, 0, sizeof in);
    for (k = 0; k < R_COUNT; k++) {
        ints[k].len = 0;
    }
    while (rc == OK && p < m.end) {
        uint32_t number, wire;
        rc = wire_tag(&p, m.end, &number, &wire);
        rc = rc == OK ? instr_field(c, &in, ints, &p, m.end, number, wire, depth, build) : rc;
    }
    for (k = 0; rc == OK && k < M_COUNT; k++) {
        if (build && in.msg[k].p == NULL) { /* absent: the default */
            objs[k] = mt_default(c, INSTR_MSG[k]);
            rc = BUILT(objs[k]);
        } else {
            rc = mt_decode(c, INSTR_MSG[k], in.msg[k], depth + 1, build, &objs[k]);
        }
    }
    if (rc != OK || !build) {
        for (k = 0; k < M_COUNT; k++) {
            Py_XDECREF(objs[k]);
        }
        Py_XDECREF(in.slices);
        return rc;
    }
    slices = mt_empty;
    Py_INCREF(slices);
    if (in.slices != NULL) {
        Py_DECREF(slices);
        slices = PyList_AsTuple(in.slices);
        Py_DECREF(in.slices);
        wire_untrack(slices);
    }
    *out = MT_TUPLE(c->cls[d->cls], wire_text(in.name), mt_shared(c->k, in.opcode, 0),
                    objs[M_META], mt_shared(c->k, in.fusion_kind, 0),
                    mt_shared(c->k, in.target, 0), mt_int(in.id), mt_ints(&ints[R_OPERANDS], 0),
                    mt_ints(&ints[R_CALLED], 0), mt_shared(c->k, in.backend, 1), objs[M_SHAPE],
                    mt_int(in.parameter_number), mt_int(in.tuple_index),
                    mt_ints(&ints[R_DIMS], 0), objs[M_WINDOW], objs[M_CONV], slices,
                    mt_ints(&ints[R_SIZES], 0), objs[M_PADDING], objs[M_DOT],
                    mt_ints(&ints[R_FFT], 0), mt_ints(&ints[R_GATHER], 0),
                    mt_int(in.feature_groups), mt_int(in.batch_groups));
    return BUILT(*out);
}

/* ------------------------------------------------------------------ entry points */

/* HloProto's module (field 1); every other field skipped, the buffer
   assignment (3) included: as protobuf reads the bytes as an HloProtoModule,
   which has no field 3. */
static int decode_module(MtCtx *c, Span m, PyObject **out) {
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
    return mt_decode(c, &D_MODULE, module, 1, 1, out);
}

/* What calls keep (see _msgshare.h); ``busy``: calls under way. A call made
   while another is under way (from a finalizer, say) uses its own. */
static MtKept kept;
static int busy = 0;

/* The classes into c->cls, checked when they are not those of k->classes
   (then the defaults are made anew). */
static int take_classes(MtCtx *c, MtKept *k, PyObject *classes) {
    Py_ssize_t i;
    if (tuple_classes(classes, c->cls, K_COUNT, "29 HLO tuple classes of hlo_module.CLASSES") < 0) {
        return -1;
    }
    if (k->classes == classes) {
        return 0;
    }
    for (i = 0; i < K_COUNT; i++) {
        PyObject *cls = c->cls[i];
        if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &PyTuple_Type)) {
            PyErr_SetString(PyExc_TypeError, "decode() takes tuple subclasses");
            return -1;
        }
    }
    mt_defaults_clear(k);
    Py_INCREF(classes);
    k->classes = classes;
    return 0;
}

static PyObject *run(PyObject *args, const char *format, int program) {
    PyObject *data, *classes, *result = NULL;
    char *buf;
    Py_ssize_t len;
    MtCtx c;
    Span all;
    int rc;
    if (!PyArg_ParseTuple(args, format, &PyBytes_Type, &data, &PyTuple_Type, &classes)) {
        return NULL;
    }
    if (PyBytes_AsStringAndSize(data, &buf, &len) < 0) {
        return NULL;
    }
    c.k = busy ? (MtKept *)calloc(1, sizeof(MtKept)) : &kept;
    if (c.k == NULL) {
        return PyErr_NoMemory();
    }
    if (take_classes(&c, c.k, classes) < 0) {
        if (c.k != &kept) {
            mt_end(c.k, 1);
            free(c.k);
        }
        return NULL;
    }
    all.p = (Ptr)buf;
    all.end = all.p + len;
    busy++;
    mt_begin(c.k);
    rc = program ? mt_decode(&c, &D_PROGRAM, all, 0, 1, &result) : decode_module(&c, all, &result);
    mt_end(c.k, c.k != &kept);
    busy--;
    if (c.k != &kept) {
        free(c.k);
    }
    return decoded(rc, result);
}

static PyObject *hlodecode_decode(PyObject *self, PyObject *args) {
    (void)self;
    return run(args, "O!O!:decode", 0);
}

static PyObject *hlodecode_decode_program(PyObject *self, PyObject *args) {
    (void)self;
    return run(args, "O!O!:decode_program", 1);
}

static PyMethodDef hlodecode_methods[] = {
    {"decode", hlodecode_decode, METH_VARARGS,
     "decode(data: bytes, classes: tuple) -> tuple | None\n\n"
     "A serialized HloProto's module as the named tuples of\n"
     "tfprof_lite.proto.hlo_module (the buffer assignment skipped, as protobuf\n"
     "reads the bytes as an HloProtoModule), or None when the bytes are not in the\n"
     "plain subset this decoder reads (parse them with protobuf instead)."},
    {"decode_program", hlodecode_decode_program, METH_VARARGS,
     "decode_program(data: bytes, classes: tuple) -> tuple | None\n\n"
     "A whole serialized HloProto (module and buffer assignment) as an HloProgram\n"
     "of tfprof_lite.proto.hlo_module, or None (declined, as decode())."},
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
    size_t i;
    if (tuple_make_init() < 0 || mt_consts_init() < 0) {
        return NULL;
    }
    for (i = 0; i < sizeof ALL / sizeof ALL[0]; i++) {
        if (mt_init(ALL[i]) < 0) {
            return NULL;
        }
    }
    return PyModule_Create(&hlodecode_module);
}
