/*
 * Native decoder of a GraphDef and of an OpLogProto (module
 * tfprof_lite._native._graphdecode). See docs/native_graph.md and
 * tfprof_lite/proto/graphs.py, which turns its results into GraphColumns and
 * OpLogColumns (the pure-Python path there builds equal columns from a parsed
 * message).
 *
 * graph(data: bytes) -> tuple | None
 *   (names, ops, inputs, src_output, attrs, shapes, output_shapes, str_attrs,
 *    wrapped): one list per column, a node per position, plus a GraphDef
 *   holding every distinct AttrValue once, as the one attribute of a node, and
 *   the fields the model does not read (``debug_info``, a node's
 *   ``experimental_debug_info``, and the function ``library`` and each
 *   distinct ``experimental_type`` unless this decoder finds them plain, see
 *   message_plain) at their own places (the caller parses it with upb: this
 *   decoder does not look further into them, nor into attribute values other
 *   than the three it reads). Equal
 *   AttrValue bytes share one object. The nodes of the library's functions
 *   are not graph nodes (tfprof reads ``node`` only), as in the pure path.
 * graph_names(data: bytes) -> tuple | None
 *   (names, ops, wrapped): the first two columns of graph() and its ``wrapped``;
 *   every other field is read and checked as graph() does (it declines on the
 *   same bytes) but builds nothing, so that the other columns can be decoded
 *   later, when a view needs them.
 * graph_check(data: bytes) -> tuple | None
 *   (node count, wrapped): graph_names() without the names and ops; it
 *   declines on the same bytes, so that all of the decoding can wait for the
 *   first read of the model.
 * graph_details(data: bytes, mask: int) -> tuple | None
 *   (names, ops, inputs, src_output, attrs, shapes, output_shapes, str_attrs):
 *   the columns of graph() asked for in ``mask`` (bit i: the detail column i,
 *   inputs .. str_attrs; bit 6: names and ops), None for the others, of bytes
 *   graph_check() took. It builds only those
 *   columns and leaves out the checks of everything else (attribute values,
 *   the fields not read, the columns not built): it reads the nodes' wire
 *   structure safely and declines on anything it does not take, but on bytes
 *   graph_check() declines it may also return columns. Repeated producer
 *   names of the inputs share one str (also in graph()).
 * op_log(data: bytes) -> tuple | None
 *   (names, float_ops, types, trace_ids, traces, id_to_string): per entry its
 *   name, FLOPs, extra types (tuple) and the index of its call stack in
 *   ``traces`` (-1: no code_def); ``traces`` holds each distinct CodeDef's
 *   frames as bytes of five native-order int64 per frame (file_id, lineno,
 *   function_id, line_id, func_start_line).
 *
 * op_type_sets(ops: list) -> list
 *   {op} for each of ``ops`` (the model's op types of new graph nodes), not
 *   tracked by the cyclic garbage collector (see wire_untrack in _wire.h).
 *
 * The input is untrusted. Like the other decoders, this one reads a plain
 * subset of the wire format and returns None ("declined") for anything else,
 * so that the caller parses the bytes with upb instead. Beyond the wire-level
 * rules of _wire.h it declines on: unknown fields or known ones with another
 * wire type (at every level it reads), an attr map entry with
 * two values, an input whose ``:`` suffix is not plain digits, a ``shape``,
 * ``_output_shapes`` or ``data_format`` value with more than one field, the old
 * string fields of CodeDef.Trace, and an op log entry with two ``code_def``s.
 */

#include "_decoder.h"

/* ------------------------------------------------------------------ helpers */

static size_t span_len(Span s) { return s.p ? (size_t)(s.end - s.p) : 0; }

static PyObject *bytes_of(Span s) {
    static const char empty[1] = {0};
    return PyBytes_FromStringAndSize(s.p ? (const char *)s.p : empty, (Py_ssize_t)span_len(s));
}

/* ------------------------------------------------------------ span tables */

/* An open-addressing table from byte spans to a value: a str (interned
 * strings: op types, attribute names) or an index (distinct CodeDefs). */
typedef struct {
    Span key;
    uint64_t hash;
    PyObject *obj; /* owned; NULL for index tables */
    Py_ssize_t index;
    int used;
} Slot;

typedef struct {
    Slot *slots;
    size_t cap; /* a power of two, or 0 */
    size_t count;
} Table;

static uint64_t hash_mix(uint64_t h, uint64_t w) {
    h = (h ^ w) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 29);
}

static uint64_t hash_range(uint64_t h, Ptr p, Ptr end) {
    uint64_t w = 0;
    if (end - p >= 32) { /* four independent lanes: long spans (call stacks) hash faster */
        uint64_t lane[4] = {h, h ^ 0x452821E638D01377ull, h ^ 0xBE5466CF34E90C6Cull,
                            h ^ 0xC0AC29B7C97C50DDull};
        uint64_t words[4];
        while (end - p >= 32) {
            memcpy(words, p, sizeof words);
            lane[0] = hash_mix(lane[0], words[0]);
            lane[1] = hash_mix(lane[1], words[1]);
            lane[2] = hash_mix(lane[2], words[2]);
            lane[3] = hash_mix(lane[3], words[3]);
            p += 32;
        }
        h = hash_mix(hash_mix(hash_mix(lane[0], lane[1]), lane[2]), lane[3]);
    }
    while (end - p >= 8) {
        memcpy(&w, p, 8);
        h = hash_mix(h, w);
        p += 8;
    }
    w = 0;
    if (p < end) {
        memcpy(&w, p, (size_t)(end - p));
    }
    return hash_mix(h, w);
}

/* A hash of the length and of the bytes (the first and last 128 of long spans:
 * equal spans are told apart by a full comparison anyway). */
static uint64_t span_hash(Span s) {
    size_t n = span_len(s);
    uint64_t h = hash_mix(0x243F6A8885A308D3ull, (uint64_t)n);
    if (n == 0) {
        return h;
    }
    if (n <= 256) {
        return hash_range(h, s.p, s.end);
    }
    return hash_range(hash_range(h, s.p, s.p + 128), s.end - 128, s.end);
}

static void table_free(Table *t) {
    size_t i;
    for (i = 0; i < t->cap; i++) {
        Py_XDECREF(t->slots[i].obj);
    }
    free(t->slots);
    t->slots = NULL;
    t->cap = t->count = 0;
}

static int table_grow(Table *t) {
    size_t cap = t->cap ? t->cap * 2 : 64, i;
    Slot *slots = (Slot *)calloc(cap, sizeof(Slot));
    if (slots == NULL) {
        PyErr_NoMemory();
        return FAIL;
    }
    for (i = 0; i < t->cap; i++) {
        if (t->slots[i].used) {
            size_t j = (size_t)t->slots[i].hash & (cap - 1);
            while (slots[j].used) {
                j = (j + 1) & (cap - 1);
            }
            slots[j] = t->slots[i];
        }
    }
    free(t->slots);
    t->slots = slots;
    t->cap = cap;
    return OK;
}

/* The slot of ``key``: an existing one, or a new one (``used`` 0) to fill. */
static Slot *table_find(Table *t, Span key) {
    uint64_t h = span_hash(key);
    size_t j, n = span_len(key);
    if ((t->count + 1) * 2 > t->cap && table_grow(t) != OK) {
        return NULL;
    }
    j = (size_t)h & (t->cap - 1);
    while (t->slots[j].used) {
        Slot *s = &t->slots[j];
        if (s->hash == h && span_len(s->key) == n && (n == 0 || !memcmp(s->key.p, key.p, n))) {
            return s;
        }
        j = (j + 1) & (t->cap - 1);
    }
    t->slots[j].key = key;
    t->slots[j].hash = h;
    return &t->slots[j];
}

/* A new reference to the str of ``key`` (validated UTF-8), shared through ``t``. */
static PyObject *table_text(Table *t, Span key) {
    Slot *s = table_find(t, key);
    if (s == NULL) {
        return NULL;
    }
    if (!s->used) {
        s->obj = wire_text(key);
        if (s->obj == NULL) {
            return NULL;
        }
        s->used = 1;
        t->count++;
    }
    Py_INCREF(s->obj);
    return s->obj;
}

/* ------------------------------------------------------------------ shapes */

/* TensorShapeProto -> tfprof's dims list: [1] for a known-rank scalar; with
 * ``out`` NULL the value is only checked (the same declines, no list). */
static int shape_dims(Span body, PyObject **out) {
    Ptr p = body.p;
    WireBuf dims = {NULL, 0, 0};
    int unknown_rank = 0, rc = OK;
    size_t n, i;
    if (out != NULL) {
        *out = NULL;
    }
    while (p < body.end && rc == OK) {
        uint32_t number, wire;
        uint64_t v = 0;
        Span dim;
        rc = wire_tag(&p, body.end, &number, &wire);
        if (rc != OK) {
            break;
        }
        if (number == 2) {
            int64_t size = 0;
            Ptr q;
            rc = read_span(&p, body.end, wire, &dim);
            for (q = dim.p; rc == OK && q < dim.end;) {
                Span name;
                rc = wire_tag(&q, dim.end, &number, &wire);
                if (rc == OK && number == 1) {
                    rc = read_u64(&q, dim.end, wire, &v);
                    size = wire_i64(v);
                } else if (rc == OK && number == 2) {
                    rc = read_str(&q, dim.end, wire, &name);
                } else if (rc == OK) {
                    rc = DECLINE;
                }
            }
            if (rc == OK && out != NULL) {
                rc = wire_put_i64(&dims, size);
            }
        } else if (number == 3) {
            rc = read_u64(&p, body.end, wire, &v);
            unknown_rank = v != 0;
        } else {
            rc = DECLINE;
        }
    }
    n = dims.len / sizeof(int64_t);
    if (out == NULL) {
        wire_buf_free(&dims);
        return rc;
    }
    if (rc == OK) {
        *out = PyList_New(n == 0 && !unknown_rank ? 1 : (Py_ssize_t)n);
        rc = *out == NULL ? FAIL : OK;
    }
    if (rc == OK && n == 0 && !unknown_rank) {
        PyObject *one = PyLong_FromLong(1);
        if (one == NULL || PyList_SetItem(*out, 0, one) != 0) {
            rc = FAIL;
        }
    }
    for (i = 0; rc == OK && i < n; i++) {
        int64_t d;
        PyObject *item;
        memcpy(&d, dims.data + i * sizeof d, sizeof d);
        item = PyLong_FromLongLong(d);
        if (item == NULL || PyList_SetItem(*out, (Py_ssize_t)i, item) != 0) {
            rc = FAIL;
        }
    }
    wire_buf_free(&dims);
    if (rc != OK) {
        Py_CLEAR(*out);
    }
    wire_untrack(*out);
    return rc;
}

/* The one field of an AttrValue: its number (0: none) and span (LEN only). */
static int attr_single(Span value, uint32_t *number, Span *body) {
    Ptr p = value.p;
    uint32_t wire;
    uint64_t v;
    *number = 0;
    if (value.p == NULL || p >= value.end) {
        return OK;
    }
    TRY(wire_tag(&p, value.end, number, &wire));
    if (wire == WIRE_LEN) {
        TRY(wire_len(&p, value.end, body));
    } else if (wire == WIRE_VARINT) {
        TRY(wire_varint(&p, value.end, &v));
        body->p = NULL;
    } else {
        return DECLINE;
    }
    return p == value.end ? OK : DECLINE;
}

/* ``_output_shapes``: {index: dims} of a list value's shapes ({} otherwise);
 * with ``out`` NULL the value is only checked. */
static int output_shapes(Span value, PyObject **out) {
    uint32_t number, wire;
    Span list = {NULL, NULL}, item;
    Ptr p;
    Py_ssize_t index = 0;
    if (out != NULL) {
        *out = NULL;
    }
    TRY(attr_single(value, &number, &list));
    if (out != NULL && (*out = PyDict_New()) == NULL) {
        return FAIL;
    }
    if (number != 1) {
        return OK;
    }
    if (list.p == NULL) {
        return DECLINE;
    }
    for (p = list.p; p < list.end;) {
        PyObject *dims;
        uint64_t v;
        TRY(wire_tag(&p, list.end, &number, &wire));
        if (number < 2 || number > 9) {
            return DECLINE;
        }
        if (wire == WIRE_VARINT && (number == 3 || number == 5 || number == 6)) {
            TRY(wire_varint(&p, list.end, &v));
            continue;
        }
        TRY(read_span(&p, list.end, wire, &item));
        if (number != 7) {
            continue;
        }
        if (out == NULL) {
            TRY(shape_dims(item, NULL));
            continue;
        }
        TRY(shape_dims(item, &dims));
        TRY(dict_put(*out, PyLong_FromSsize_t(index++), dims));
    }
    if (out != NULL) {
        wire_untrack(*out);
    }
    return OK;
}

/* ------------------------------------------------------------------ graph */

typedef struct {
    PyObject *names, *ops, *inputs, *src_output, *attrs, *shapes, *output_shapes, *str_attrs;
    Table values;           /* distinct AttrValue bytes, shared by equal values */
    Table types;            /* distinct experimental_type bytes checked by protobuf */
    WireBuf wrapped;        /* each distinct value as a GraphDef node's attribute,
                               and the fields not read (see unread_field) */
    Table outs;             /* distinct _output_shapes bytes -> decoded dict */
    PyObject *zero;
    Table strings;          /* op types and attribute names */
    Table producers;        /* input producer names, one str per distinct name */
    WireBuf spans;          /* scratch: Span per input */
    int names_ops;          /* build the names and ops columns */
    unsigned mask;          /* the detail columns built (COL_*) */
    int details;            /* graph_details(): bytes graph_check() took, so the
                               checks of the columns not built are left out */
    Py_ssize_t count;       /* nodes read */
} Graph;

/* The detail columns, in the order of the tuple graph_details() returns. */
enum {
    COL_INPUTS = 1,
    COL_SRC_OUTPUT = 2,
    COL_ATTRS = 4,
    COL_SHAPES = 8,
    COL_OUTPUT_SHAPES = 16,
    COL_STR_ATTRS = 32,
    COL_ALL = 63,
    COL_NAMES = 64, /* graph_details(): names and ops */
    /* the columns read from the attr map */
    COL_FROM_ATTRS = COL_ATTRS | COL_SHAPES | COL_OUTPUT_SHAPES | COL_STR_ATTRS
};

typedef struct {
    Span name, op, shape, out_shapes, data_format;
    int has_shape, has_out_shapes, has_data_format;
} NodeSpans;

static int put_varint(WireBuf *b, uint64_t v) {
    uint8_t out[10];
    size_t n = 0;
    while (v > 0x7Fu) {
        out[n++] = (uint8_t)((v & 0x7Fu) | 0x80u);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return wire_buf_put(b, out, n);
}

static size_t varint_size(uint64_t v) {
    size_t n = 1;
    while (v > 0x7Fu) {
        v >>= 7;
        n++;
    }
    return n;
}

/* A length-delimited field's key and length. */
static int put_head(WireBuf *b, uint8_t key, size_t len) {
    return wire_buf_put(b, &key, 1) == OK ? put_varint(b, len) : FAIL;
}

/* The slot of an AttrValue's bytes in ``values``. A value met first is added to
 * ``wrapped`` as the one attribute of a GraphDef node (node 1 > attr 5 > value
 * 2), for the caller's protobuf check. */
/* ------------------------------------------------------- plain attr values */

/* Value kinds of the fields a plain value may hold (see attr_plain). */
enum { K_BYTES = 1, K_VARINT, K_FIXED32, K_FIXED64, K_SHAPE, K_TENSOR };

/* One field of kind ``kind`` at ``*pp`` (wire type ``wire``, its key read) that
 * any protobuf parse takes; repeated numbers may be packed. 0 for anything else. */
static int field_plain(Ptr *pp, Ptr end, uint32_t wire, int kind) {
    Span body;
    uint64_t v;
    size_t n;
    if (kind == K_VARINT && wire == WIRE_VARINT) {
        return wire_varint(pp, end, &v) == OK;
    }
    n = kind == K_FIXED32 ? 4 : 8;
    if ((kind == K_FIXED32 && wire == 5u) || (kind == K_FIXED64 && wire == 1u)) {
        if ((size_t)(end - *pp) < n) {
            return 0;
        }
        *pp += n;
        return 1;
    }
    if (wire != WIRE_LEN || wire_len(pp, end, &body) != OK) {
        return 0;
    }
    switch (kind) {
    case K_BYTES:
        return 1;
    case K_VARINT: /* packed */
        while (body.p < body.end) {
            if (wire_varint(&body.p, body.end, &v) != OK) {
                return 0;
            }
        }
        return 1;
    case K_FIXED32:
    case K_FIXED64:
        return span_len(body) % n == 0;
    case K_SHAPE:
        return shape_dims(body, NULL) == OK;
    default:
        return 0;
    }
}

/* Whether every field of ``body`` is plain, the kind of field N being
 * ``kinds[N]`` (0 or N >= count: not plain). */
static int fields_plain(Span body, const unsigned char *kinds, uint32_t count) {
    Ptr p = body.p;
    while (p != NULL && p < body.end) {
        uint32_t number, wire;
        if (wire_tag(&p, body.end, &number, &wire) != OK || number >= count ||
            !kinds[number] || !field_plain(&p, body.end, wire, kinds[number])) {
            return 0;
        }
    }
    return 1;
}

/* TensorProto: dtype, shape, version, content, the numeric and string values. */
static const unsigned char TENSOR_KINDS[18] = {
    0,         K_VARINT, K_SHAPE,  K_VARINT, K_BYTES,  K_FIXED32,
    K_FIXED64, K_VARINT, K_BYTES,  0,        K_VARINT, K_VARINT,
    0,         K_VARINT, 0,        0,        K_VARINT, K_VARINT};
/* AttrValue.ListValue: s, i, f, b, type, shape (not tensor, func). */
static const unsigned char LIST_KINDS[8] = {0,        0,        K_BYTES, K_VARINT,
                                            K_FIXED32, K_VARINT, K_VARINT, K_SHAPE};

/* Whether an AttrValue's bytes are ones any protobuf parse takes, read here:
 * nothing, or one field among ``s``, ``i``, ``f``, ``b``, ``type``, ``shape``,
 * a ``list`` of those and a ``tensor`` of the fields in TENSOR_KINDS. Such
 * values need no protobuf check; the others go to ``wrapped``. */
static int attr_plain(Span value) {
    static const unsigned char kinds[9] = {0,        0,        K_BYTES,  K_VARINT, K_FIXED32,
                                           K_VARINT, K_VARINT, K_SHAPE,  0};
    Ptr p = value.p;
    uint32_t number, wire;
    Span body;
    if (p == NULL || p == value.end) {
        return 1;
    }
    if (wire_tag(&p, value.end, &number, &wire) != OK) {
        return 0;
    }
    if ((number == 1 || number == 8) && wire == WIRE_LEN) {
        return wire_len(&p, value.end, &body) == OK && p == value.end &&
               (number == 1 ? fields_plain(body, LIST_KINDS, 8) : fields_plain(body, TENSOR_KINDS, 18));
    }
    return number < 9 && kinds[number] && field_plain(&p, value.end, wire, kinds[number]) &&
           p == value.end;
}

static Slot *attr_value(Graph *g, Span value) {
    Slot *s = table_find(&g->values, value);
    size_t n = span_len(value), entry, node;
    if (s == NULL || s->used) {
        return s;
    }
    s->used = 1;
    g->values.count++;
    if (g->details || attr_plain(value)) {
        return s;
    }
    entry = 1 + varint_size(n) + n;
    node = 1 + varint_size(entry) + entry;
    if (put_head(&g->wrapped, 0x0A, node) != OK || put_head(&g->wrapped, 0x2A, entry) != OK ||
        put_head(&g->wrapped, 0x12, n) != OK || wire_buf_put(&g->wrapped, value.p, n) != OK) {
        return NULL;
    }
    return s;
}

/* A new reference to the bytes of an AttrValue; equal values share one object. */
static PyObject *attr_bytes(Graph *g, Span value) {
    Slot *s = attr_value(g, value);
    if (s == NULL) {
        return NULL;
    }
    if (s->obj == NULL && (s->obj = bytes_of(value)) == NULL) {
        return NULL;
    }
    Py_INCREF(s->obj);
    return s->obj;
}

/* ------------------------------------------------------- fields not read */

/* Nesting of FullTypeDef args checked here; deeper values go to protobuf. */
#define FULL_TYPE_DEPTH 16

/* Whether a FullTypeDef's bytes are ones any protobuf parse takes, read here:
 * ``type_id`` and ``i`` varints, ``s`` valid UTF-8 (proto3), ``args`` such
 * values nested at most FULL_TYPE_DEPTH deep. The others go to ``wrapped``. */
static int full_type_plain(Span body, int depth) {
    Ptr p = body.p;
    if (depth > FULL_TYPE_DEPTH) {
        return 0;
    }
    while (p != NULL && p < body.end) {
        uint32_t number, wire;
        uint64_t v;
        Span s;
        if (wire_tag(&p, body.end, &number, &wire) != OK) {
            return 0;
        }
        if ((number == 1 || number == 4) && wire == WIRE_VARINT) {
            if (wire_varint(&p, body.end, &v) != OK) {
                return 0;
            }
        } else if ((number == 2 || number == 3) && wire == WIRE_LEN) {
            if (wire_len(&p, body.end, &s) != OK ||
                !(number == 2 ? full_type_plain(s, depth + 1) : wire_utf8_valid(s.p, s.end))) {
                return 0;
            }
        } else {
            return 0;
        }
    }
    return 1;
}

/* The function library's messages, for message_plain: per field number its
 * kind, a message's fields described by a Msg of their own. */
enum { L_STR = 1, L_VARINT, L_ATTR, L_PLAIN, L_TYPE, L_SHAPE, L_MSG };

typedef struct Msg {
    uint32_t count; /* field numbers 0 .. count - 1 */
    const unsigned char *kinds;
    const struct Msg *const *subs; /* the Msg of each L_MSG field */
} Msg;

static int message_plain(Span body, const Msg *m);

#define MSG(name, kinds, subs) static const Msg name = {sizeof kinds, kinds, subs}
/* Two strings: GradientDef, RegisteredGradient, map<string, string> entries,
   NodeDef.ExperimentalDebugInfo. */
static const unsigned char STR2_K[3] = {0, L_STR, L_STR};
MSG(STR2, STR2_K, NULL);
static const unsigned char ATTRS_K[3] = {0, L_STR, L_ATTR}; /* map<string, AttrValue> */
MSG(ATTRS, ATTRS_K, NULL);
/* NameAttrList (an AttrValue's ``func``): its name, attributes of plain values. */
static const unsigned char PLAIN_ATTRS_K[3] = {0, L_STR, L_PLAIN};
MSG(PLAIN_ATTRS, PLAIN_ATTRS_K, NULL);
static const unsigned char FUNC_ATTR_K[3] = {0, L_STR, L_MSG};
static const Msg *const FUNC_ATTR_S[3] = {NULL, NULL, &PLAIN_ATTRS};
MSG(FUNC_ATTR, FUNC_ATTR_K, FUNC_ATTR_S);
static const unsigned char ARGATTRS_K[2] = {0, L_MSG}; /* FunctionDef.ArgAttrs */
static const Msg *const ARGATTRS_S[2] = {NULL, &ATTRS};
MSG(ARGATTRS, ARGATTRS_K, ARGATTRS_S);
static const unsigned char ARGATTR_K[3] = {0, L_VARINT, L_MSG}; /* map<uint32, ArgAttrs> */
static const Msg *const ARGATTR_S[3] = {NULL, NULL, &ARGATTRS};
MSG(ARGATTR, ARGATTR_K, ARGATTR_S);
static const unsigned char U32MAP_K[3] = {0, L_VARINT, L_VARINT}; /* map<uint32, uint32> */
MSG(U32MAP, U32MAP_K, NULL);
static const unsigned char DTSHAPE_K[3] = {0, L_VARINT, L_SHAPE}; /* DtypeAndShape */
MSG(DTSHAPE, DTSHAPE_K, NULL);
static const unsigned char ARGDEF_K[18] = {0,     L_STR, L_STR, L_VARINT, L_STR, L_STR,
                                           L_STR, L_MSG, 0,     0,        0,     0,
                                           0,     0,     0,     0,        L_VARINT, L_TYPE};
static const Msg *const ARGDEF_S[8] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL, &DTSHAPE};
MSG(ARGDEF, ARGDEF_K, ARGDEF_S);
static const unsigned char ATTRDEF_K[8] = {0,      L_STR,    L_STR,    L_ATTR,
                                           L_STR,  L_VARINT, L_VARINT, L_ATTR};
MSG(ATTRDEF, ATTRDEF_K, NULL);
static const unsigned char DEPREC_K[3] = {0, L_VARINT, L_STR}; /* OpDeprecation */
MSG(DEPREC, DEPREC_K, NULL);
static const unsigned char OPDEF_K[22] = {0,     L_STR, L_MSG,    L_MSG,    L_MSG,    L_STR,
                                          L_STR, 0,     L_MSG,    0,        0,        0,
                                          0,     0,     0,        0,        L_VARINT, L_VARINT,
                                          L_VARINT, L_VARINT, L_STR, L_VARINT};
static const Msg *const OPDEF_S[9] = {NULL, NULL, &ARGDEF, &ARGDEF, &ATTRDEF,
                                      NULL, NULL, NULL,    &DEPREC};
MSG(OPDEF, OPDEF_K, OPDEF_S);
static const unsigned char NODE_K[8] = {0, L_STR, L_STR, L_STR, L_STR, L_MSG, L_MSG, L_TYPE};
static const Msg *const NODE_S[7] = {NULL, NULL, NULL, NULL, NULL, &ATTRS, &STR2};
MSG(NODE, NODE_K, NODE_S);
static const unsigned char FUNC_K[9] = {0, L_MSG, 0, L_MSG, L_MSG, L_MSG, L_MSG, L_MSG, L_MSG};
static const Msg *const FUNC_S[9] = {NULL, &OPDEF, NULL, &NODE, &STR2,
                                     &ATTRS, &STR2, &ARGATTR, &U32MAP};
MSG(FUNC, FUNC_K, FUNC_S);
static const unsigned char LIBRARY_K[4] = {0, L_MSG, L_MSG, L_MSG};
static const Msg *const LIBRARY_S[4] = {NULL, &FUNC, &STR2, &STR2};
MSG(LIBRARY, LIBRARY_K, LIBRARY_S);

/* attr_plain, or a value of one ``func`` field whose attributes are plain
 * (a call of a function: a cond branch, a while body). */
static int attr_or_func_plain(Span value) {
    Ptr p = value.p;
    uint32_t number, wire;
    Span body;
    if (attr_plain(value)) {
        return 1;
    }
    return wire_tag(&p, value.end, &number, &wire) == OK && number == 10 && wire == WIRE_LEN &&
           wire_len(&p, value.end, &body) == OK && p == value.end &&
           message_plain(body, &FUNC_ATTR);
}

/* Whether ``body`` (a message described by ``m``) is one any protobuf parse
 * takes, read here: known fields of their own wire type only, strings valid
 * UTF-8 (proto3), attribute values plain (attr_plain), types plain
 * (full_type_plain), shapes as shape_dims reads them. The function library of
 * TensorFlow's graphs is such a message; others go to ``wrapped``. */
static int message_plain(Span body, const Msg *m) {
    Ptr p = body.p;
    while (p != NULL && p < body.end) {
        uint32_t number, wire;
        uint64_t v;
        Span s;
        int kind;
        if (wire_tag(&p, body.end, &number, &wire) != OK || number >= m->count) {
            return 0;
        }
        kind = m->kinds[number];
        if (kind == L_VARINT) {
            if (wire != WIRE_VARINT || wire_varint(&p, body.end, &v) != OK) {
                return 0;
            }
            continue;
        }
        if (kind == 0 || wire != WIRE_LEN || wire_len(&p, body.end, &s) != OK) {
            return 0;
        }
        if (!(kind == L_STR   ? wire_utf8_valid(s.p, s.end)
              : kind == L_ATTR  ? attr_or_func_plain(s)
              : kind == L_PLAIN ? attr_plain(s)
              : kind == L_TYPE  ? full_type_plain(s, 0)
              : kind == L_SHAPE ? shape_dims(s, NULL) == OK
                                : message_plain(s, m->subs[number]))) {
            return 0;
        }
    }
    return 1;
}

/* A field the model does not read (a node's experimental_debug_info, a
 * GraphDef's library or debug_info), added to ``wrapped`` at its own place:
 * ``node_key`` 0 as a GraphDef field of key ``key``, else as field ``key`` of
 * a node, so that protobuf checks it at the nesting depth it has here. */
static int unread_field(Graph *g, uint8_t node_key, uint8_t key, Span value) {
    size_t n = span_len(value), field = 1 + varint_size(n) + n;
    if (n == 0) {
        return OK;
    }
    if (node_key && put_head(&g->wrapped, node_key, field) != OK) {
        return FAIL;
    }
    if (put_head(&g->wrapped, key, n) != OK || wire_buf_put(&g->wrapped, value.p, n) != OK) {
        return FAIL;
    }
    return OK;
}

/* A node's experimental_type: plain values are taken, each distinct other one
 * goes to ``wrapped`` once. */
static int node_type(Graph *g, Span value) {
    Slot *s;
    if (full_type_plain(value, 0)) {
        return OK;
    }
    s = table_find(&g->types, value);
    if (s == NULL) {
        return FAIL;
    }
    if (s->used) {
        return OK;
    }
    s->used = 1;
    g->types.count++;
    return unread_field(g, 0x0A, 0x3A, value);
}

/* Input text -> producer name (before the first ':', one leading '^' dropped). */
static int input_name(Span s, Span *name) {
    Ptr colon = s.p, q;
    while (colon < s.end && *colon != ':') {
        colon++;
    }
    if (colon < s.end) {
        if (colon + 1 == s.end) {
            return DECLINE;
        }
        for (q = colon + 1; q < s.end; q++) {
            if (*q < '0' || *q > '9') {
                return DECLINE;
            }
        }
    }
    name->p = s.p;
    name->end = colon;
    if (name->p < name->end && *name->p == '^') {
        name->p++;
    }
    return OK;
}

/* The inputs and src_output columns of a node (those in the mask; the input
 * texts are checked either way). */
static int node_inputs(Graph *g, const Span *spans, size_t n) {
    PyObject *inputs = NULL, *src_output = NULL;
    size_t i;
    int rc = OK;
    if ((g->mask & COL_INPUTS) && (inputs = PyDict_New()) == NULL) {
        rc = FAIL;
    }
    if (rc == OK && (g->mask & COL_SRC_OUTPUT) && (src_output = PyDict_New()) == NULL) {
        rc = FAIL;
    }
    for (i = 0; rc == OK && i < n; i++) {
        Span name;
        PyObject *text, *pos;
        rc = input_name(spans[i], &name);
        if (rc != OK || (inputs == NULL && src_output == NULL)) {
            continue;
        }
        text = table_text(&g->producers, name);
        if (text == NULL) {
            rc = FAIL;
            break;
        }
        if (inputs != NULL) {
            pos = PyLong_FromSsize_t((Py_ssize_t)i);
            if (pos == NULL || PyDict_SetItem(inputs, pos, text) != 0) {
                rc = FAIL;
            }
            Py_XDECREF(pos);
        }
        if (rc == OK && src_output != NULL && PyDict_SetItem(src_output, text, g->zero) != 0) {
            rc = FAIL;
        }
        Py_DECREF(text);
    }
    if (rc == OK && inputs != NULL) {
        rc = list_add(g->inputs, inputs);
        inputs = NULL;
    }
    if (rc == OK && src_output != NULL) {
        rc = list_add(g->src_output, src_output);
        src_output = NULL;
    }
    Py_XDECREF(inputs);
    Py_XDECREF(src_output);
    return rc;
}

/* One attr map entry into ``attrs``; remembers the three values read. */
static int attr_entry(Graph *g, Span entry, PyObject *attrs, NodeSpans *ns) {
    Ptr p = entry.p;
    Span key = {NULL, NULL}, value = {NULL, NULL};
    int has_value = 0;
    PyObject *k, *v;
    while (p < entry.end) {
        uint32_t number, wire;
        TRY(wire_tag(&p, entry.end, &number, &wire));
        if (number == 1) {
            TRY(read_str(&p, entry.end, wire, &key));
        } else if (number == 2 && !has_value) {
            TRY(read_span(&p, entry.end, wire, &value));
            has_value = 1;
        } else {
            return DECLINE;
        }
    }
    if (span_len(key) == 5 && !memcmp(key.p, "shape", 5)) {
        ns->shape = value;
        ns->has_shape = 1;
    } else if (span_len(key) == 14 && !memcmp(key.p, "_output_shapes", 14)) {
        ns->out_shapes = value;
        ns->has_out_shapes = 1;
    } else if (span_len(key) == 11 && !memcmp(key.p, "data_format", 11)) {
        ns->data_format = value;
        ns->has_data_format = 1;
    }
    if (!(g->mask & COL_ATTRS)) {
        if (g->details) {
            return OK;
        }
        return attr_plain(value) || attr_value(g, value) != NULL ? OK : FAIL;
    }
    k = table_text(&g->strings, key);
    v = attr_bytes(g, value);
    return dict_put(attrs, k, v);
}

/* A new reference to the decoded ``_output_shapes`` value ``value`` in *out,
 * NULL when it has no shapes; equal values share one dict. */
static int shared_shapes(Graph *g, Span value, PyObject **out) {
    Slot *s = table_find(&g->outs, value);
    *out = NULL;
    if (s == NULL) {
        return FAIL;
    }
    if (!s->used) {
        int rc = output_shapes(value, &s->obj);
        if (rc != OK) {
            Py_CLEAR(s->obj);
            return rc;
        }
        s->used = 1;
        g->outs.count++;
    }
    if (PyDict_Size(s->obj) > 0) {
        Py_INCREF(s->obj);
        *out = s->obj;
    }
    return OK;
}

/* The ``shape`` column (if in the mask; checked unless ``details``). */
static int node_shape(Graph *g, NodeSpans *ns) {
    PyObject *shape = NULL;
    int build = (g->mask & COL_SHAPES) != 0;
    uint32_t number;
    Span body;
    if (ns->has_shape && (build || !g->details)) {
        TRY(attr_single(ns->shape, &number, &body));
        if (number == 7) {
            if (body.p == NULL) {
                return DECLINE;
            }
            TRY(shape_dims(body, build ? &shape : NULL));
        }
    }
    if (!build) {
        return OK;
    }
    if (shape == NULL) {
        shape = Py_None;
        Py_INCREF(shape);
    }
    return list_add(g->shapes, shape);
}

/* The ``output_shapes`` column (if in the mask; checked unless ``details``). */
static int node_output_shapes(Graph *g, NodeSpans *ns) {
    PyObject *shapes = NULL;
    if (!(g->mask & COL_OUTPUT_SHAPES)) {
        return ns->has_out_shapes && !g->details ? output_shapes(ns->out_shapes, NULL) : OK;
    }
    if (ns->has_out_shapes) {
        TRY(shared_shapes(g, ns->out_shapes, &shapes));
    }
    return list_add(g->output_shapes, shapes ? shapes : PyDict_New());
}

/* The ``str_attrs`` column (if in the mask; checked unless ``details``). */
static int node_str_attrs(Graph *g, NodeSpans *ns) {
    PyObject *str_attrs = NULL;
    uint32_t number;
    Span body;
    int rc = OK;
    if ((g->mask & COL_STR_ATTRS) && (str_attrs = PyDict_New()) == NULL) {
        return FAIL;
    }
    if (ns->has_data_format && (str_attrs != NULL || !g->details)) {
        rc = attr_single(ns->data_format, &number, &body);
        if (rc == OK && number == 2 && body.p == NULL) {
            rc = DECLINE;
        } else if (rc == OK && number == 2 && str_attrs != NULL) {
            PyObject *text = PyUnicode_DecodeUTF8((const char *)body.p,
                                                  (Py_ssize_t)(body.end - body.p), "replace");
            rc = dict_put(str_attrs, PyUnicode_FromString("data_format"), text);
        }
    }
    if (rc != OK) {
        Py_XDECREF(str_attrs);
        return rc;
    }
    return str_attrs != NULL ? list_add(g->str_attrs, str_attrs) : OK;
}

/* The derived columns: shape, output shapes (shared by equal values), str attrs. */
static int node_derived(Graph *g, NodeSpans *ns) {
    TRY(node_shape(g, ns));
    TRY(node_output_shapes(g, ns));
    return node_str_attrs(g, ns);
}

static int node_fields(Graph *g, Span body, NodeSpans *ns, PyObject *attrs) {
    Ptr p = body.p;
    while (p < body.end) {
        uint32_t number, wire;
        Span s;
        TRY(wire_tag(&p, body.end, &number, &wire));
        switch (number) {
        case 1:
            TRY(read_str(&p, body.end, wire, &ns->name));
            break;
        case 2:
            TRY(read_str(&p, body.end, wire, &ns->op));
            break;
        case 3:
            TRY(read_str(&p, body.end, wire, &s));
            if (!g->details || (g->mask & (COL_INPUTS | COL_SRC_OUTPUT))) {
                TRY(wire_buf_put(&g->spans, &s, sizeof s));
            }
            break;
        case 4:
            TRY(read_str(&p, body.end, wire, &s));
            break;
        case 5:
            TRY(read_span(&p, body.end, wire, &s));
            if (!g->details || (g->mask & COL_FROM_ATTRS)) {
                TRY(attr_entry(g, s, attrs, ns));
            }
            break;
        case 6:
            TRY(read_span(&p, body.end, wire, &s));
            if (!g->details) {
                TRY(unread_field(g, 0x0A, 0x32, s));
            }
            break;
        case 7:
            TRY(read_span(&p, body.end, wire, &s));
            if (!g->details) {
                TRY(node_type(g, s));
            }
            break;
        default:
            return DECLINE;
        }
    }
    return OK;
}

static int graph_node(Graph *g, Span body) {
    NodeSpans ns;
    PyObject *attrs = NULL;
    int rc;
    if ((g->mask & COL_ATTRS) && (attrs = PyDict_New()) == NULL) {
        return FAIL;
    }
    memset(&ns, 0, sizeof ns);
    g->spans.len = 0;
    rc = node_fields(g, body, &ns, attrs);
    g->count++;
    if (rc == OK && g->names_ops) {
        rc = list_add(g->names, wire_text(ns.name));
        if (rc == OK) {
            rc = list_add(g->ops, table_text(&g->strings, ns.op));
        }
    }
    if (rc == OK) {
        rc = node_inputs(g, (const Span *)g->spans.data, g->spans.len / sizeof(Span));
    }
    if (rc == OK) {
        rc = node_derived(g, &ns);
    }
    if (rc == OK && attrs != NULL) {
        return list_add(g->attrs, attrs);
    }
    Py_XDECREF(attrs);
    return rc;
}

/* VersionDef: producer, min_consumer, bad_consumers (plain or packed). */
static int versions(Span body) {
    Ptr p = body.p;
    uint64_t v;
    while (p < body.end) {
        uint32_t number, wire;
        TRY(wire_tag(&p, body.end, &number, &wire));
        if (number == 1 || number == 2) {
            TRY(read_u64(&p, body.end, wire, &v));
        } else if (number == 3) {
            TRY(wire_repeated_i64(&p, body.end, wire, NULL));
        } else {
            return DECLINE;
        }
    }
    return OK;
}

static int graph_walk(Graph *g, Span data) {
    Ptr p = data.p;
    uint64_t v;
    while (p < data.end) {
        uint32_t number, wire;
        Span s;
        TRY(wire_tag(&p, data.end, &number, &wire));
        if (number == 1) {
            TRY(read_span(&p, data.end, wire, &s));
            TRY(graph_node(g, s));
        } else if (number == 3) {
            TRY(read_u64(&p, data.end, wire, &v));
        } else if (number == 4) {
            TRY(read_span(&p, data.end, wire, &s));
            TRY(versions(s));
        } else if (number == 2) {
            TRY(read_span(&p, data.end, wire, &s));
            if (!g->details && !message_plain(s, &LIBRARY)) {
                TRY(unread_field(g, 0, 0x12, s));
            }
        } else if (number == 5) {
            TRY(read_span(&p, data.end, wire, &s));
            if (!g->details) {
                TRY(unread_field(g, 0, 0x2A, s));
            }
        } else {
            return DECLINE;
        }
    }
    return OK;
}

/* ------------------------------------------------------------------ results */

/* The input bytes as a span; FAIL (TypeError) for anything but bytes. */
static int input_span(PyObject *arg, Span *data) {
    char *buf;
    Py_ssize_t size;
    if (PyBytes_AsStringAndSize(arg, &buf, &size) != 0) {
        return FAIL;
    }
    data->p = (Ptr)buf;
    data->end = data->p + size;
    return OK;
}

/* ``n`` new empty lists into *cols[0..n). */
static int new_lists(PyObject **cols[], size_t n) {
    size_t i;
    int rc = OK;
    for (i = 0; i < n; i++) {
        *cols[i] = PyList_New(0);
        rc = *cols[i] == NULL ? FAIL : rc;
    }
    return rc;
}

/* A tuple of ``size`` items whose first ``n`` are *cols[0..n), moved in (the
   caller sets the rest); NULL on failure. */
static PyObject *columns_tuple(PyObject **cols[], size_t n, size_t size) {
    PyObject *result = PyTuple_New((Py_ssize_t)size);
    size_t i;
    for (i = 0; result != NULL && i < n; i++) {
        PyTuple_SetItem(result, (Py_ssize_t)i, *cols[i]);
        *cols[i] = NULL;
    }
    return result;
}

static void drop_lists(PyObject **cols[], size_t n) {
    size_t i;
    for (i = 0; i < n; i++) {
        Py_XDECREF(*cols[i]);
    }
}

/* What decode_graph() returns: graph(), graph_names(), graph_check() or
   graph_details(). */
enum { WANT_ALL, WANT_NAMES, WANT_CHECK, WANT_DETAILS };

/* The result of a walk that succeeded (see the module comment); the columns
   built are moved out of ``cols``. */
static PyObject *graph_result(Graph *g, PyObject **cols[], int want) {
    size_t ncols = want == WANT_ALL ? 8 : want == WANT_NAMES ? 2 : 0, at, i;
    PyObject *result, *wrapped;
    if (want == WANT_DETAILS) {
        result = PyTuple_New(8);
        for (i = 0; result != NULL && i < 8; i++) {
            PyObject *column = *cols[i] ? *cols[i] : Py_None;
            Py_INCREF(column);
            PyTuple_SetItem(result, (Py_ssize_t)i, column);
        }
        return result;
    }
    at = ncols ? ncols : 1; /* the place of ``wrapped`` */
    result = columns_tuple(cols, ncols, at + 1);
    if (result != NULL && !ncols) {
        PyObject *count = PyLong_FromSsize_t(g->count);
        if (count == NULL || PyTuple_SetItem(result, 0, count) != 0) {
            Py_CLEAR(result);
        }
    }
    if (result != NULL) {
        wrapped = PyBytes_FromStringAndSize(g->wrapped.data ? g->wrapped.data : "",
                                            (Py_ssize_t)g->wrapped.len);
        if (wrapped == NULL || PyTuple_SetItem(result, (Py_ssize_t)at, wrapped) != 0) {
            Py_CLEAR(result);
        }
    }
    return result;
}

/* Decode ``arg`` as ``want`` says (the detail columns of ``mask`` for
   graph_details()). */
static PyObject *decode_graph(PyObject *arg, int want, unsigned mask) {
    Graph g;
    Span data;
    PyObject **cols[] = {&g.names, &g.ops,    &g.inputs,        &g.src_output,
                         &g.attrs, &g.shapes, &g.output_shapes, &g.str_attrs};
    PyObject *result = NULL;
    size_t i;
    int rc = OK;
    if (input_span(arg, &data) != OK) {
        return NULL;
    }
    memset(&g, 0, sizeof g);
    g.names_ops = want == WANT_ALL || want == WANT_NAMES || (want == WANT_DETAILS && (mask & COL_NAMES));
    g.mask = want == WANT_ALL ? COL_ALL : want == WANT_DETAILS ? mask & COL_ALL : 0;
    g.details = want == WANT_DETAILS;
    for (i = 0; i < 8; i++) {
        if (i < 2 ? g.names_ops : (int)((g.mask >> (i - 2)) & 1u)) {
            rc = new_lists(&cols[i], 1) != OK ? FAIL : rc;
        }
    }
    g.zero = PyLong_FromLong(0);
    if (rc == OK && g.zero) {
        rc = graph_walk(&g, data);
    } else {
        rc = FAIL;
    }
    if (rc == OK) {
        result = graph_result(&g, cols, want);
    } else if (rc == DECLINE) {
        result = Py_None;
        Py_INCREF(result);
    }
    drop_lists(cols, 8);
    table_free(&g.values);
    table_free(&g.types);
    table_free(&g.outs);
    table_free(&g.producers);
    wire_buf_free(&g.wrapped);
    Py_XDECREF(g.zero);
    table_free(&g.strings);
    wire_buf_free(&g.spans);
    return result;
}

static PyObject *graph(PyObject *self, PyObject *arg) {
    (void)self;
    return decode_graph(arg, WANT_ALL, 0);
}

static PyObject *graph_names(PyObject *self, PyObject *arg) {
    (void)self;
    return decode_graph(arg, WANT_NAMES, 0);
}

static PyObject *graph_check(PyObject *self, PyObject *arg) {
    (void)self;
    return decode_graph(arg, WANT_CHECK, 0);
}

static PyObject *graph_details(PyObject *self, PyObject *args) {
    PyObject *data;
    unsigned int mask;
    (void)self;
    if (!PyArg_ParseTuple(args, "OI", &data, &mask)) {
        return NULL;
    }
    return decode_graph(data, WANT_DETAILS, mask);
}

/* ------------------------------------------------------------------ op log */

typedef struct {
    PyObject *names, *float_ops, *types, *trace_ids, *traces, *id_to_string;
    Table code_defs; /* CodeDef bytes -> index in traces */
    Table strings;   /* op types */
    WireBuf frames;
} OpLog;

/* One CodeDef.Trace as five int64 (file_id, lineno, function_id, line_id,
 * func_start_line). */
static int trace_frame(OpLog *o, Span body) {
    Ptr p = body.p;
    int64_t f[5] = {0, 0, 0, 0, 0};
    while (p < body.end) {
        uint32_t number, wire;
        uint64_t v;
        TRY(wire_tag(&p, body.end, &number, &wire));
        TRY(read_u64(&p, body.end, wire, &v));
        switch (number) {
        case 2:
            f[1] = wire_i32(v);
            break;
        case 5:
            f[4] = wire_i32(v);
            break;
        case 6:
            f[0] = wire_i64(v);
            break;
        case 7:
            f[2] = wire_i64(v);
            break;
        case 8:
            f[3] = wire_i64(v);
            break;
        default:
            return DECLINE;
        }
    }
    return wire_buf_put(&o->frames, f, sizeof f);
}

/* The index of a CodeDef's frames in ``traces`` (equal bytes share one). */
static int code_def(OpLog *o, Span body, Py_ssize_t *index) {
    Slot *slot = table_find(&o->code_defs, body);
    Ptr p;
    if (slot == NULL) {
        return FAIL;
    }
    if (slot->used) {
        *index = slot->index;
        return OK;
    }
    o->frames.len = 0;
    for (p = body.p; p < body.end;) {
        uint32_t number, wire;
        Span t;
        TRY(wire_tag(&p, body.end, &number, &wire));
        if (number != 1) {
            return DECLINE;
        }
        TRY(read_span(&p, body.end, wire, &t));
        TRY(trace_frame(o, t));
    }
    *index = PyList_Size(o->traces);
    TRY(list_add(o->traces, PyBytes_FromStringAndSize(o->frames.data ? o->frames.data : "",
                                                      (Py_ssize_t)o->frames.len)));
    slot->used = 1;
    slot->index = *index;
    o->code_defs.count++;
    return OK;
}

/* One entry into the columns; ``*types`` is made when the entry has a type. */
static int log_entry(OpLog *o, Span body, PyObject **types) {
    Ptr p = body.p;
    Span name = {NULL, NULL}, s;
    int64_t flops = 0;
    Py_ssize_t trace = -1;
    int has_code = 0;
    while (p < body.end) {
        uint32_t number, wire;
        uint64_t v;
        TRY(wire_tag(&p, body.end, &number, &wire));
        if (number == 1) {
            TRY(read_str(&p, body.end, wire, &name));
        } else if (number == 2) {
            TRY(read_u64(&p, body.end, wire, &v));
            flops = wire_i64(v);
        } else if (number == 3) {
            TRY(read_str(&p, body.end, wire, &s));
            if (*types == NULL && (*types = PyList_New(0)) == NULL) {
                return FAIL;
            }
            TRY(list_add(*types, table_text(&o->strings, s)));
        } else if (number == 4 && !has_code) {
            TRY(read_span(&p, body.end, wire, &s));
            TRY(code_def(o, s, &trace));
            has_code = 1;
        } else {
            return DECLINE;
        }
    }
    TRY(list_add(o->names, wire_text(name)));
    TRY(list_add(o->float_ops, PyLong_FromLongLong(flops)));
    TRY(list_add(o->types, *types ? PyList_AsTuple(*types) : PyTuple_New(0)));
    return list_add(o->trace_ids, PyLong_FromSsize_t(trace));
}

static int id_string(OpLog *o, Span body) {
    Ptr p = body.p;
    Span value = {NULL, NULL};
    int64_t key = 0;
    while (p < body.end) {
        uint32_t number, wire;
        uint64_t v;
        TRY(wire_tag(&p, body.end, &number, &wire));
        if (number == 1) {
            TRY(read_u64(&p, body.end, wire, &v));
            key = wire_i64(v);
        } else if (number == 2) {
            TRY(read_str(&p, body.end, wire, &value));
        } else {
            return DECLINE;
        }
    }
    return dict_put(o->id_to_string, PyLong_FromLongLong(key), wire_text(value));
}

static int op_log_walk(OpLog *o, Span data) {
    Ptr p = data.p;
    while (p < data.end) {
        uint32_t number, wire;
        Span s;
        TRY(wire_tag(&p, data.end, &number, &wire));
        TRY(read_span(&p, data.end, wire, &s));
        if (number == 1) {
            PyObject *types = NULL;
            int rc = log_entry(o, s, &types);
            Py_XDECREF(types);
            TRY(rc);
        } else if (number == 2) {
            TRY(id_string(o, s));
        } else {
            return DECLINE;
        }
    }
    return OK;
}

static PyObject *op_log(PyObject *self, PyObject *arg) {
    OpLog o;
    Span data;
    PyObject **cols[] = {&o.names,     &o.float_ops, &o.types,
                         &o.trace_ids, &o.traces,    &o.id_to_string};
    PyObject *result = NULL;
    int rc;
    (void)self;
    if (input_span(arg, &data) != OK) {
        return NULL;
    }
    memset(&o, 0, sizeof o);
    rc = new_lists(cols, 5);
    o.id_to_string = PyDict_New();
    rc = o.id_to_string == NULL ? FAIL : rc;
    if (rc == OK) {
        rc = op_log_walk(&o, data);
    }
    if (rc == OK) {
        result = columns_tuple(cols, 6, 6);
    } else if (rc == DECLINE) {
        result = Py_None;
        Py_INCREF(result);
    }
    drop_lists(cols, 6);
    table_free(&o.code_defs);
    table_free(&o.strings);
    wire_buf_free(&o.frames);
    return result;
}

/* ------------------------------------------------------------------ module */

/* op_type_sets(ops: list of str) -> list of sets: {op} for each, untracked by
   the garbage collector (the model's op_types of new graph nodes). */
static PyObject *op_type_sets(PyObject *self, PyObject *ops) {
    PyObject *out;
    Py_ssize_t n, i;
    (void)self;
    if (!PyList_Check(ops)) {
        PyErr_SetString(PyExc_TypeError, "op_type_sets() takes a list of str");
        return NULL;
    }
    n = PyList_Size(ops);
    out = PyList_New(n);
    for (i = 0; out != NULL && i < n; i++) {
        PyObject *one = PySet_New(NULL);
        if (one == NULL || PySet_Add(one, PyList_GetItem(ops, i)) != 0) {
            Py_XDECREF(one);
            Py_CLEAR(out);
            break;
        }
        wire_untrack(one);
        PyList_SetItem(out, i, one);
    }
    return out;
}

/* merge_op_log(index, names, float_ops, types, trace_ids, stacks, op_types,
   static, traces) -> bool: ProfileModel.add_op_log_columns' loop over the
   entries (see tfprof_lite/model/profile.py); True when an entry of a known
   node has a code trace. ``op_types`` is the model's list of sets, or a dict
   (node id -> set, sets made as needed) collecting the types of nodes whose
   sets are not made yet. */
/* The op types set of node ``nid`` (borrowed): op_types[nid] of a list, or the
   dict's value under ``key`` (the node id), a new untracked set if it has none. */
static PyObject *types_of(PyObject *op_types, PyObject *key, Py_ssize_t nid) {
    PyObject *set;
    if (PyList_Check(op_types)) {
        return PyList_GetItem(op_types, nid);
    }
    set = PyDict_GetItemWithError(op_types, key);
    if (set != NULL || PyErr_Occurred()) {
        return set;
    }
    set = PySet_New(NULL);
    if (set == NULL) {
        return NULL;
    }
    wire_untrack(set);
    if (PyDict_SetItem(op_types, key, set) != 0) {
        Py_DECREF(set);
        return NULL;
    }
    Py_DECREF(set); /* the dict holds it */
    return set;
}

static int merge_entry(PyObject *const *a, Py_ssize_t i, PyObject *key, Py_ssize_t nid,
                       int *traced) {
    PyObject *flops = PyList_GetItem(a[2], i), *types = PyList_GetItem(a[3], i), *set;
    Py_ssize_t trace = PyLong_AsSsize_t(PyList_GetItem(a[4], i)), k;
    int truth;
    if (trace == -1 && PyErr_Occurred()) {
        return FAIL;
    }
    if (!PyTuple_Check(types)) {
        PyErr_SetString(PyExc_TypeError, "merge_op_log(): types must be tuples, op_types sets");
        return FAIL;
    }
    if (PyTuple_Size(types) > 0) {
        set = types_of(a[6], key, nid);
        if (set == NULL && PyErr_Occurred()) {
            return FAIL;
        }
        if (set == NULL || !PySet_Check(set)) {
            PyErr_SetString(PyExc_TypeError,
                            "merge_op_log(): types must be tuples, op_types sets");
            return FAIL;
        }
        for (k = 0; k < PyTuple_Size(types); k++) {
            if (PySet_Add(set, PyTuple_GetItem(types, k)) != 0) {
                return FAIL;
            }
        }
    }
    truth = PyObject_IsTrue(flops);
    if (truth < 0) {
        return FAIL;
    }
    if (truth) {
        Py_INCREF(flops);
        PyList_SetItem(a[7], nid, flops);
    }
    if (trace >= 0) {
        PyObject *stack;
        *traced = 1;
        if (PyList_GetItem(a[8], nid) == Py_None) {
            if (trace >= PyList_Size(a[5])) {
                PyErr_SetString(PyExc_IndexError, "merge_op_log(): trace id out of range");
                return FAIL;
            }
            stack = PyList_GetItem(a[5], trace);
            Py_INCREF(stack);
            PyList_SetItem(a[8], nid, stack);
        }
    }
    return OK;
}

static PyObject *merge_op_log(PyObject *self, PyObject *args) {
    PyObject *a[9];
    Py_ssize_t n, i, k, size;
    int traced = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOOOOOOO:merge_op_log", &a[0], &a[1], &a[2], &a[3], &a[4],
                          &a[5], &a[6], &a[7], &a[8])) {
        return NULL;
    }
    if (!PyDict_Check(a[0]) || !(PyList_Check(a[6]) || PyDict_Check(a[6]))) {
        PyErr_SetString(PyExc_TypeError, "merge_op_log() takes a dict, lists and op_types");
        return NULL;
    }
    for (k = 1; k < 9; k++) {
        if (k != 6 && !PyList_Check(a[k])) {
            PyErr_SetString(PyExc_TypeError, "merge_op_log() takes a dict, lists and op_types");
            return NULL;
        }
    }
    n = PyList_Size(a[1]);
    size = PyList_Size(a[7]);
    if (PyList_Size(a[2]) != n || PyList_Size(a[3]) != n || PyList_Size(a[4]) != n ||
        (PyList_Check(a[6]) && PyList_Size(a[6]) != size) || PyList_Size(a[8]) != size) {
        PyErr_SetString(PyExc_ValueError, "merge_op_log(): column lengths differ");
        return NULL;
    }
    for (i = 0; i < n; i++) {
        PyObject *found = PyDict_GetItemWithError(a[0], PyList_GetItem(a[1], i)); /* borrowed */
        Py_ssize_t nid;
        if (found == NULL) {
            if (PyErr_Occurred()) {
                return NULL;
            }
            continue;
        }
        nid = PyLong_AsSsize_t(found);
        if (nid == -1 && PyErr_Occurred()) {
            return NULL;
        }
        if (nid < 0 || nid >= size) {
            PyErr_SetString(PyExc_IndexError, "merge_op_log(): node id out of range");
            return NULL;
        }
        if (merge_entry(a, i, found, nid, &traced) != OK) {
            return NULL;
        }
    }
    return PyBool_FromLong(traced);
}

static PyMethodDef methods[] = {
    {"graph", graph, METH_O,
     "graph(data: bytes) -> tuple | None: a GraphDef's node columns; None when declined."},
    {"graph_names", graph_names, METH_O,
     "graph_names(data: bytes) -> tuple | None: a GraphDef's node names and ops, the rest "
     "checked as graph() does; None when declined."},
    {"graph_check", graph_check, METH_O,
     "graph_check(data: bytes) -> tuple | None: a GraphDef's node count, every field "
     "checked as graph() does; None when declined."},
    {"graph_details", graph_details, METH_VARARGS,
     "graph_details(data: bytes, mask: int) -> tuple | None: the columns of ``mask`` (bit i: "
     "column i of inputs, src_output, attrs, shapes, output_shapes, str_attrs; bit 6: names "
     "and ops; the others None) of a GraphDef graph_check() took; None when declined."},
    {"op_log", op_log, METH_O,
     "op_log(data: bytes) -> tuple | None: an OpLogProto's entry columns; None when declined."},
    {"op_type_sets", op_type_sets, METH_O,
     "op_type_sets(ops: list) -> list: {op} for each op, untracked by the garbage collector."},
    {"merge_op_log", merge_op_log, METH_VARARGS,
     "merge_op_log(index, names, float_ops, types, trace_ids, stacks, op_types, static, "
     "traces) -> bool: an op log's entries merged into the model's columns."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_graphdecode",
    "Native GraphDef and OpLogProto decoders (see tfprof_lite.proto.graphs).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__graphdecode(void) { return PyModule_Create(&module); }
