/*
 * A table-driven decoder of protobuf messages into named tuples (used by
 * _hlodecode.c). Each message is a MsgDesc: its tuple class (an index into the
 * caller's classes) and its fields in the order of the tuple's items, each with
 * its field number, kind and, for a message field, the MsgDesc of its
 * messages. mt_decode() walks a message's bytes once and builds the tuple:
 *
 * - scalars: for a singular field the last occurrence wins; int32 (and enum)
 *   fields keep the low 32 bits of their varint as a signed value, bool fields
 *   are True for any non-zero varint;
 * - repeated fields become tuples (each occurrence adds an element; repeated
 *   integers and bools may be packed or not), a map<int64, message> a dict (of
 *   two entries with one key the last wins);
 * - an absent message is its default tuple (built once per call and shared:
 *   tuples are immutable); a MsgDesc marked ``shared`` (shapes) is decoded once
 *   per distinct byte string in a call and the tuple shared by equal bytes.
 *
 * A field marked not kept is checked as protobuf checks it (wire type, UTF-8,
 * nested messages) but not built; with ``build`` 0 a whole message is only
 * checked. Fields outside the table are skipped as protobuf keeps unknown
 * fields (varint, fixed64, length-delimited, fixed32). Anything else declines
 * (the caller hands the bytes to protobuf): the rules of _wire.h, groups, a
 * known field with another wire type, invalid UTF-8 in a string, a singular
 * message field given twice (protobuf would merge the two), a map entry with a
 * field that is not its key or value or whose value appears twice, a message
 * MT_MAX_DEPTH levels or more below the outermost one (protobuf's upb backend
 * refuses 32, its other backends more).
 */
#ifndef TFPROF_LITE_MSGTABLE_H
#define TFPROF_LITE_MSGTABLE_H

#include "_msgshare.h"

enum {
    F_I64,      /* int64 */
    F_I32,      /* int32 or an enum */
    F_BOOL,     /* bool */
    F_STR,      /* string: valid UTF-8 */
    F_BYTES,    /* bytes */
    F_MSG,      /* a singular message */
    F_REP_I64,  /* repeated int64 */
    F_REP_BOOL, /* repeated bool */
    F_REP_STR,  /* repeated string */
    F_REP_MSG,  /* repeated message */
    F_MAP       /* map<int64, message> */
};

#define MT_MAX_NUMBER 64 /* field numbers in the tables are below this */

typedef struct MsgDesc MsgDesc;

typedef struct {
    uint8_t number;
    uint8_t kind;
    uint8_t keep; /* 0: checked, not kept */
    MsgDesc *sub; /* message fields: their messages; a map: its values */
} FieldDesc;

typedef struct MtCtx MtCtx;

/* A message decoded by hand instead of from its table (same contract as
   mt_decode()). */
typedef int (*MtCustom)(MtCtx *c, const MsgDesc *d, Span m, int depth, int build, PyObject **out);

struct MsgDesc {
    int cls;    /* index of its tuple class */
    int shared; /* equal bytes share one tuple */
    int nfields;
    const FieldDesc *fields;
    MtCustom custom; /* NULL: from the table */
    /* filled by mt_init() */
    int fresh;                      /* its default holds a dict: made anew each time */
    int8_t field_of[MT_MAX_NUMBER]; /* field number -> index in fields, -1 */
    int8_t row_of[MT_MAX_FIELDS];   /* repeated integer field -> its scratch row */
};

struct MtCtx {
    PyObject *cls[MT_MAX_CLASSES]; /* borrowed */
    MtKept *k;
};

/* The decoding state of one field of the message being read. */
typedef struct {
    int64_t num;   /* a scalar */
    Span span;     /* a string, bytes or singular message (absent: p == NULL) */
    PyObject *obj; /* the built message, or the list or dict of a repeated field */
} MtSlot;

/* Fill a table's lookups; -1 (a ValueError set) when it does not fit. Call
   it on the tables of a table's message fields first (for ``fresh``). */
static inline int mt_init(MsgDesc *d) {
    int f, rows = 0;
    memset(d->field_of, -1, sizeof d->field_of);
    if (d->nfields > MT_MAX_FIELDS) {
        PyErr_SetString(PyExc_ValueError, "message table too wide");
        return -1;
    }
    d->fresh = 0;
    for (f = 0; f < d->nfields; f++) {
        const FieldDesc *fd = &d->fields[f];
        int nested = fd->kind == F_MSG || fd->kind == F_REP_MSG || fd->kind == F_MAP;
        if (fd->number >= MT_MAX_NUMBER || (fd->sub != NULL) != nested) {
            PyErr_SetString(PyExc_ValueError, "malformed message table");
            return -1;
        }
        d->field_of[fd->number] = (int8_t)f;
        d->row_of[f] = -1;
        if ((fd->kind == F_REP_I64 || fd->kind == F_REP_BOOL) && fd->keep) {
            d->row_of[f] = (int8_t)rows++;
        }
        d->fresh |= fd->keep && (fd->kind == F_MAP || (fd->kind == F_MSG && fd->sub->fresh));
    }
    if (rows > MT_MAX_INTS) {
        PyErr_SetString(PyExc_ValueError, "message table has too many repeated integers");
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ values */

/* 0 and (), the commonest values, shared; ``mt_items``: whether a tuple's
   items may be stored straight into it (see mt_tuple). Set by mt_consts_init(). */
static PyObject *mt_zero = NULL, *mt_empty = NULL;
static int mt_items = 0;

static inline Py_ssize_t mt_type_size(const char *name) {
    PyObject *v = PyObject_GetAttrString((PyObject *)&PyTuple_Type, name);
    Py_ssize_t n = v != NULL ? PyLong_AsSsize_t(v) : -1;
    Py_XDECREF(v);
    PyErr_Clear();
    return n;
}

static inline int mt_consts_init(void) {
    mt_zero = PyLong_FromLong(0);
    mt_empty = PyTuple_New(0);
    /* a tuple is its header and then its items: as in every CPython that
       tuple_make() allocates tuples for (before 3.14) */
    mt_items = tuple_direct && mt_type_size("__basicsize__") == (Py_ssize_t)sizeof(PyVarObject) &&
               mt_type_size("__itemsize__") == (Py_ssize_t)sizeof(PyObject *);
    return mt_zero != NULL && mt_empty != NULL ? 0 : -1;
}

/* tuple_make() (the same contract), storing the items of a tuple it
   allocated itself straight into it rather than through PyTuple_SetItem. */
static inline PyObject *mt_tuple(PyObject *cls, Py_ssize_t n, PyObject **items) {
    PyObject *out;
    Py_ssize_t i;
    if (!mt_items) {
        return tuple_make(cls, n, items);
    }
    for (i = 0; i < n; i++) {
        if (items[i] == NULL) {
            break;
        }
    }
    out = i == n ? PyType_GenericAlloc((PyTypeObject *)cls, n) : NULL;
    if (out == NULL) {
        for (i = 0; i < n; i++) {
            Py_XDECREF(items[i]);
        }
        return NULL;
    }
    memcpy((char *)out + sizeof(PyVarObject), items, (size_t)n * sizeof(PyObject *));
    PyObject_GC_UnTrack(out);
    return out;
}

#define MT_TUPLE(cls, ...)                                                                         \
    mt_tuple((cls), (Py_ssize_t)(sizeof((PyObject *[]){__VA_ARGS__}) / sizeof(PyObject *)),        \
             (PyObject *[]){__VA_ARGS__})

static inline PyObject *mt_int(int64_t v) {
    if (v == 0) {
        Py_INCREF(mt_zero);
        return mt_zero;
    }
    return PyLong_FromLongLong((long long)v);
}

/* The int64 values of ``b`` as a tuple of ints (of bools with ``as_bool``). */
static inline PyObject *mt_ints(const WireBuf *b, int as_bool) {
    const int64_t *v = (const int64_t *)(void *)b->data;
    size_t n = b->len / sizeof(int64_t), i;
    PyObject *out, **at;
    if (n == 0) {
        Py_INCREF(mt_empty);
        return mt_empty;
    }
    out = PyTuple_New((Py_ssize_t)n);
    at = out != NULL && mt_items ? (PyObject **)(void *)((char *)out + sizeof(PyVarObject)) : NULL;
    for (i = 0; out != NULL && i < n; i++) {
        PyObject *item = as_bool ? PyBool_FromLong(v[i] != 0) : mt_int(v[i]);
        if (item != NULL && at != NULL) {
            at[i] = item;
        } else if (item == NULL || PyTuple_SetItem(out, (Py_ssize_t)i, item) < 0) {
            Py_CLEAR(out);
        }
    }
    wire_untrack(out);
    return out;
}

static inline PyObject *mt_bytes(Span s) {
    static const char empty[1] = {0};
    if (s.p == NULL) {
        return PyBytes_FromStringAndSize(empty, 0);
    }
    return PyBytes_FromStringAndSize((const char *)s.p, (Py_ssize_t)(s.end - s.p));
}

static int mt_decode(MtCtx *c, const MsgDesc *d, Span m, int depth, int build, PyObject **out);
static PyObject *mt_default(MtCtx *c, const MsgDesc *d);

/* Item ``f`` of a message whose field ``fd`` was read into ``s`` (a new
   reference; the slot's object is consumed). ``ints``: the field's row. */
static PyObject *mt_value(MtCtx *c, const FieldDesc *fd, MtSlot *s, const WireBuf *ints) {
    PyObject *obj = s->obj, *items;
    s->obj = NULL;
    switch (fd->kind) {
    case F_I64:
    case F_I32:
        return mt_int(s->num);
    case F_BOOL:
        return PyBool_FromLong(s->num != 0);
    case F_STR:
        return wire_text(s->span);
    case F_BYTES:
        return mt_bytes(s->span);
    case F_MSG:
        return obj != NULL ? obj : mt_default(c, fd->sub);
    case F_REP_I64:
    case F_REP_BOOL:
        return mt_ints(ints, fd->kind == F_REP_BOOL);
    case F_MAP:
        wire_untrack(obj); /* int keys, untracked tuples */
        return obj;
    default: /* repeated strings and messages: a list, made a tuple */
        items = PyList_AsTuple(obj);
        Py_DECREF(obj);
        wire_untrack(items); /* of strings or untracked tuples */
        return items;
    }
}

/* The item of field ``f`` of ``d`` when the message does not have it (a new
   reference), kept in c->k unless it holds a dict. */
static PyObject *mt_default_item(MtCtx *c, const MsgDesc *d, int f) {
    PyObject **at = &c->k->item[d->cls][f], *v = *at;
    const FieldDesc *fd = &d->fields[f];
    Span none = {NULL, NULL};
    if (v != NULL) {
        Py_INCREF(v);
        return v;
    }
    switch (fd->kind) {
    case F_I64:
    case F_I32:
        v = PyLong_FromLong(0);
        break;
    case F_BOOL:
        v = PyBool_FromLong(0);
        break;
    case F_STR:
        v = wire_text(none);
        break;
    case F_BYTES:
        v = mt_bytes(none);
        break;
    case F_MSG:
        v = mt_default(c, fd->sub);
        break;
    case F_MAP:
        v = PyDict_New();
        wire_untrack(v);
        return v;
    default:
        v = PyTuple_New(0);
    }
    if (v != NULL && !(fd->kind == F_MSG && fd->sub->fresh)) {
        Py_INCREF(v);
        *at = v;
    }
    return v;
}

/* The tuple of class d->cls from the slots of the fields in ``seen`` (their
   objects consumed) and the defaults of the others; ``depth``: the rows of
   the repeated integers. */
static int mt_build(MtCtx *c, const MsgDesc *d, MtSlot *slots, uint32_t seen, int depth,
                    PyObject **out) {
    PyObject *items[MT_MAX_FIELDS];
    int f, n = 0, ok = 1;
    for (f = 0; f < d->nfields; f++) {
        const FieldDesc *fd = &d->fields[f];
        int row = d->row_of[f];
        const WireBuf *ints = row >= 0 && depth >= 0 ? &c->k->ints[depth][row] : NULL;
        if (!fd->keep) {
            continue;
        }
        if (!(seen >> f & 1u)) {
            items[n] = ok ? mt_default_item(c, d, f) : NULL;
        } else {
            items[n] = ok ? mt_value(c, fd, &slots[f], ints) : NULL;
            Py_CLEAR(slots[f].obj);
        }
        ok = ok && items[n] != NULL;
        n++;
    }
    *out = mt_tuple(c->cls[d->cls], n, items); /* releases the items on failure */
    return BUILT(*out);
}

/* The default tuple of ``d`` (a new reference), kept in c->k unless it
   holds a dict. */
static PyObject *mt_default(MtCtx *c, const MsgDesc *d) {
    PyObject *found = c->k->msg[d->cls];
    if (found == NULL) {
        if (mt_build(c, d, NULL, 0, -1, &found) != OK) {
            return NULL;
        }
        if (d->fresh) {
            return found;
        }
        c->k->msg[d->cls] = found;
    }
    Py_INCREF(found);
    return found;
}

/* One entry of a map<int64, message> field into ``*dict`` (made when first
   needed); ``depth``: the map's message. */
static int mt_entry(MtCtx *c, const MsgDesc *d, Span m, int depth, int build, PyObject **dict) {
    int64_t key = 0;
    Span value = {NULL, NULL};
    Ptr p = m.p;
    PyObject *item = NULL;
    while (p < m.end) {
        uint32_t number, wire;
        TRY(wire_tag(&p, m.end, &number, &wire));
        if (number == 1) {
            TRY(read_i64(&p, m.end, wire, &key));
        } else if (number == 2) {
            TRY(read_once(&p, m.end, wire, &value));
        } else {
            return DECLINE;
        }
    }
    TRY(mt_decode(c, d, value, depth + 2, build, &item));
    if (!build) {
        return OK;
    }
    if (*dict == NULL && (*dict = PyDict_New()) == NULL) {
        Py_DECREF(item);
        return FAIL;
    }
    return dict_put(*dict, PyLong_FromLongLong((long long)key), item);
}

/* One occurrence of field ``fd`` into its slot ``s``; ``ints``: its row. */
static inline int mt_field(MtCtx *c, const FieldDesc *fd, MtSlot *s, WireBuf *ints, Ptr *pp,
                           Ptr end, uint32_t wire, int depth, int keep) {
    uint64_t flag;
    Span v;
    PyObject *item = NULL;
    switch (fd->kind) {
    case F_I64:
        return read_i64(pp, end, wire, &s->num);
    case F_I32:
        return read_i32(pp, end, wire, &s->num);
    case F_BOOL:
        TRY(read_u64(pp, end, wire, &flag));
        s->num = flag != 0;
        return OK;
    case F_STR:
        return read_str(pp, end, wire, &s->span);
    case F_BYTES:
        return read_span(pp, end, wire, &s->span);
    case F_MSG:
        TRY(read_once(pp, end, wire, &s->span));
        return mt_decode(c, fd->sub, s->span, depth + 1, keep, &s->obj);
    case F_REP_I64:
    case F_REP_BOOL:
        return wire_repeated_i64(pp, end, wire, keep ? ints : NULL);
    case F_REP_STR:
        TRY(read_str(pp, end, wire, &v));
        if (keep) {
            item = wire_text(v);
        }
        break;
    case F_REP_MSG:
        TRY(read_span(pp, end, wire, &v));
        TRY(mt_decode(c, fd->sub, v, depth + 1, keep, &item));
        break;
    default: /* F_MAP */
        TRY(read_span(pp, end, wire, &v));
        return mt_entry(c, fd->sub, v, depth, keep, &s->obj);
    }
    if (!keep) {
        return OK;
    }
    if (s->obj == NULL && (s->obj = PyList_New(0)) == NULL) {
        Py_XDECREF(item);
        return FAIL;
    }
    return list_add(s->obj, item);
}

/* Message ``m`` (absent: p == NULL) of type ``d`` at nesting level ``depth``:
   with ``build``, its tuple into ``*out``; else only checked (``*out`` NULL). */
static int mt_decode(MtCtx *c, const MsgDesc *d, Span m, int depth, int build, PyObject **out) {
    MtSlot slots[MT_MAX_FIELDS]; /* those of the fields in ``seen`` are set */
    uint32_t seen = 0;
    Ptr p = m.p;
    uint64_t h = 0;
    int rc = OK, f;
    *out = NULL;
    if (depth >= MT_MAX_DEPTH) {
        return DECLINE;
    }
    if (d->custom != NULL && !(build && m.p == NULL)) {
        return d->custom(c, d, m, depth, build, out);
    }
    if (build && m.p == NULL) {
        *out = mt_default(c, d);
        return BUILT(*out);
    }
    if (build && d->shared) {
        h = mt_hash(m);
        *out = mt_find(&c->k->lasting, d, m, h, depth);
        if (*out != NULL) {
            Py_INCREF(*out);
            return OK;
        }
    }
    while (rc == OK && p < m.end) {
        uint32_t number, wire;
        rc = wire_tag(&p, m.end, &number, &wire);
        f = rc == OK && number < MT_MAX_NUMBER ? d->field_of[number] : -1;
        if (rc == OK && f < 0) {
            rc = skip_field(&p, m.end, wire);
        } else if (rc == OK) {
            const FieldDesc *fd = &d->fields[f];
            int row = d->row_of[f];
            WireBuf *ints = build && row >= 0 ? &c->k->ints[depth][row] : NULL;
            if (!(seen >> f & 1u)) {
                seen |= 1u << f;
                memset(&slots[f], 0, sizeof slots[f]);
                if (ints != NULL) {
                    ints->len = 0;
                }
            }
            rc = mt_field(c, fd, &slots[f], ints, &p, m.end, wire, depth, build && fd->keep);
        }
    }
    if (rc != OK || !build) {
        for (f = 0; f < d->nfields; f++) {
            if (seen >> f & 1u) {
                Py_XDECREF(slots[f].obj);
            }
        }
        return rc;
    }
    TRY(mt_build(c, d, slots, seen, depth, out));
    if (d->shared && mt_remember(&c->k->lasting, d, m, h, depth, *out) != OK) {
        Py_CLEAR(*out);
        return FAIL;
    }
    return OK;
}

#endif /* TFPROF_LITE_MSGTABLE_H */
