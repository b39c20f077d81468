/*
 * Native decoder of a saved profile (ProfileProto; module
 * tfprof_lite._native._profiledecode). See docs/native.md and
 * tfprof_lite/proto/profiles.py, which turns its result into ProfileColumns.
 *
 * decode(data: bytes) -> tuple | None
 *
 * The input is untrusted. Like _stepdecode, the decoder reads only a plain
 * subset of the wire format and returns None ("declined") for anything else,
 * so that the caller parses the bytes with upb instead. Beyond the wire-level
 * rules of _wire.h it declines on: unknown fields (including the old string
 * fields of CodeDef.Trace), a map entry with a repeated or missing key/value
 * field where the value matters, a node whose map key differs from its id,
 * two nodes with one id, a node with two ``trace`` fields, and two entries with
 * one key in a node's ``execs``, an exec's device maps or ``output_memory``.
 *
 * Nodes come out sorted by id (their position is the model's node id); the
 * per-step columns follow tfprof_lite.model.profile_read's rules, which the
 * pure-Python path (tfprof_lite.proto.profiles) implements too.
 *
 * The result tuple:
 *   0 has_trace (bool), 1 steps (list of int), 2 id_to_string (dict),
 *   3 nodes: list of tuples (name, op, inputs {pos: producer name},
 *     src_output {producer name: index}, output_shapes {index: [dims]},
 *     shape ([dims] or None), op_types (set), canonical_device, host_device,
 *     float_ops, trace (bytes of 5 int64 per frame: file_id, lineno,
 *     function_id, line_id, func_start_line; or None), attrs {name: AttrValue
 *     bytes}, has_execs (bool)),
 *   4 blocks: list of (step, device names, then bytearrays of the columns in
 *     the order of the B_* enum below),
 *   5 the AttrValue bytes objects the decoder made (equal values of different
 *     nodes mostly share one object, so this is about the distinct values).
 * AttrValue bytes are not looked into: the caller checks the objects of item 5
 * with upb. Equal traces (same CodeDef bytes) share one bytes object too.
 */

#include "_decoder.h"

#define KIND_ACCELERATOR 1
#define KIND_CPU 2
#define N_MEM_VALUES 10

/* Per-step columns, in the order the tuple gives them. */
enum {
    B_PAIR_NODE, /* int32 */
    B_PAIR_DEV,  /* int32 */
    B_SPAN_NODE, /* int32 */
    B_SPAN_START,
    B_SPAN_END,
    B_T_NODE, /* int32 */
    B_T_KIND, /* int8 */
    B_T_DEV,  /* int32 */
    B_T_START,
    B_T_DUR,
    B_M_NODE, /* int32, then N_MEM_VALUES int64 columns */
    B_M_VALUES,
    B_O_ROW = B_M_VALUES + N_MEM_VALUES, /* int64 */
    B_O_SLOT,                            /* int32 */
    B_O_BYTES,
    B_O_PTR, /* uint64 */
    B_A_NODE, /* int32 */
    B_A_MICROS,
    B_A_BYTES,
    N_BLOCK_COLUMNS
};

typedef struct {
    int64_t step;
    WireBuf devices; /* Span per device code */
    WireBuf col[N_BLOCK_COLUMNS];
    int64_t mem_rows;
} Block;

typedef struct {
    int64_t key;
    int64_t id;
    Span body;
    Span name;
    int has_key;
    int has_value;
} Node;

/* A direct-mapped cache of short repeated strings (op types, devices,
   attribute names): equal spans share one str object. */
#define TEXT_CACHE 1024
typedef struct {
    Span key;
    PyObject *obj;
} TextSlot;

/* A direct-mapped cache of byte strings by content (AttrValue bytes, packed
   traces): the slot keeps the input span it was made from and its hash. */
#define BLOB_CACHE 4096
typedef struct {
    Span key;
    uint64_t hash;
    PyObject *obj;
} BlobSlot;

typedef struct {
    WireBuf nodes;  /* Node */
    WireBuf order;  /* size_t: node indices sorted by id */
    WireBuf blocks; /* Block */
    WireBuf scratch[8];
    WireBuf steps;
    PyObject *id_to_string;
    PyObject *names; /* list of str, sorted order */
    int has_trace;
    size_t last_block;
    TextSlot texts[TEXT_CACHE];
    BlobSlot *attr_values; /* BLOB_CACHE slots each, allocated by decode_all */
    BlobSlot *traces;
    PyObject *fresh_attrs; /* list: every AttrValue bytes object made */
} State;

static Node *node_at(State *st, size_t i) { return (Node *)st->nodes.data + i; }
static size_t node_count(State *st) { return st->nodes.len / sizeof(Node); }

/* ------------------------------------------------------------------ helpers */

static PyObject *new_ref(PyObject *o) {
    Py_INCREF(o);
    return o;
}

/* Skip one field's value of wire type ``wire`` (varint or length-delimited only). */
static int skip_value(Ptr *pp, Ptr end, uint32_t wire) {
    uint64_t v;
    Span s;
    if (wire == WIRE_VARINT) {
        return wire_varint(pp, end, &v);
    }
    if (wire == WIRE_LEN) {
        return wire_len(pp, end, &s);
    }
    return DECLINE;
}

/* A str of a span that failed UTF-8 decoding only through an exception: FAIL. */
static PyObject *text_of(Span s) { return wire_text(s); }

/* A 64-bit hash of a span's bytes, eight at a time. */
static uint64_t span_hash(Span s) {
    size_t n = s.p ? (size_t)(s.end - s.p) : 0;
    uint64_t hash = 0x9e3779b97f4a7c15u ^ (uint64_t)n, word;
    Ptr p = s.p;
    while (n >= 8) {
        memcpy(&word, p, 8);
        hash = (hash ^ word) * 0xff51afd7ed558ccdu;
        hash ^= hash >> 32;
        p += 8;
        n -= 8;
    }
    if (n > 0) {
        word = 0;
        memcpy(&word, p, n);
        hash = (hash ^ word) * 0xc4ceb9fe1a85ec53u;
    }
    return hash ^ (hash >> 29);
}

/* The slot of ``cache`` for span ``s``; *hit says whether it holds ``s``'s object. */
static BlobSlot *blob_slot(BlobSlot *cache, Span s, int *hit) {
    uint64_t hash = span_hash(s);
    BlobSlot *slot = &cache[hash % BLOB_CACHE];
    *hit = slot->obj != NULL && slot->hash == hash && wire_span_cmp(slot->key, s) == 0;
    if (!*hit) {
        slot->hash = hash;
    }
    return slot;
}

/* Put ``obj`` (a new reference, kept by the caller too) into ``slot`` for span ``s``. */
static PyObject *blob_keep(BlobSlot *slot, Span s, PyObject *obj) {
    if (obj != NULL) {
        Py_XDECREF(slot->obj);
        Py_INCREF(obj);
        slot->obj = obj;
        slot->key = s;
    }
    return obj;
}

static void free_blobs(BlobSlot *cache) {
    size_t i;
    if (cache == NULL) {
        return;
    }
    for (i = 0; i < BLOB_CACHE; i++) {
        Py_XDECREF(cache[i].obj);
    }
    free(cache);
}

/* A str of a validated span, shared with earlier equal spans (a new reference). */
static PyObject *cached_text(State *st, Span s) {
    TextSlot *slot = &st->texts[span_hash(s) % TEXT_CACHE];
    if (slot->obj != NULL && wire_span_cmp(slot->key, s) == 0) {
        Py_INCREF(slot->obj);
        return slot->obj;
    }
    {
        PyObject *text = wire_text(s);
        if (text == NULL) {
            return NULL;
        }
        Py_XDECREF(slot->obj);
        Py_INCREF(text);
        slot->obj = text;
        slot->key = s;
        return text;
    }
}

/* ------------------------------------------------------------------ pass 1 */

static int read_node_entry(State *st, Span entry) {
    Node node;
    Ptr p = entry.p;
    memset(&node, 0, sizeof node);
    while (p < entry.end) {
        uint32_t number, wire;
        uint64_t v;
        TRY(wire_tag(&p, entry.end, &number, &wire));
        if (number == 1 && !node.has_key) {
            TRY(read_u64(&p, entry.end, wire, &v));
            node.key = wire_i64(v);
            node.has_key = 1;
        } else if (number == 2 && !node.has_value) {
            TRY(read_span(&p, entry.end, wire, &node.body));
            node.has_value = 1;
        } else {
            return DECLINE;
        }
    }
    if (!node.has_value) {
        return DECLINE;
    }
    /* The node's id (field 13) and name (1), the last of each winning; the id
       must equal the key. */
    p = node.body.p;
    while (p < node.body.end) {
        uint32_t number, wire;
        TRY(wire_tag(&p, node.body.end, &number, &wire));
        if (number == 13) {
            uint64_t v;
            TRY(read_u64(&p, node.body.end, wire, &v));
            node.id = wire_i64(v);
        } else if (number == 1) {
            TRY(read_str(&p, node.body.end, wire, &node.name));
        } else {
            TRY(skip_value(&p, node.body.end, wire));
        }
    }
    if (node.key != node.id) {
        return DECLINE;
    }
    return wire_buf_put(&st->nodes, &node, sizeof node);
}

static int read_string_entry(State *st, Span entry) {
    Ptr p = entry.p;
    int64_t key = 0;
    Span value = {NULL, NULL};
    int seen_key = 0, seen_value = 0;
    while (p < entry.end) {
        uint32_t number, wire;
        uint64_t v;
        TRY(wire_tag(&p, entry.end, &number, &wire));
        if (number == 1 && !seen_key) {
            TRY(read_u64(&p, entry.end, wire, &v));
            key = wire_i64(v);
            seen_key = 1;
        } else if (number == 2 && !seen_value) {
            TRY(read_str(&p, entry.end, wire, &value));
            seen_value = 1;
        } else {
            return DECLINE;
        }
    }
    return dict_put(st->id_to_string, PyLong_FromLongLong(key), text_of(value));
}

static int read_top(State *st, Ptr p, Ptr end) {
    while (p < end) {
        uint32_t number, wire;
        uint64_t v;
        Span s;
        TRY(wire_tag(&p, end, &number, &wire));
        switch (number) {
        case 1:
            TRY(read_span(&p, end, wire, &s));
            TRY(read_node_entry(st, s));
            break;
        case 2:
            TRY(read_u64(&p, end, wire, &v));
            st->has_trace = v != 0;
            break;
        case 3:
            TRY(wire_repeated_i64(&p, end, wire, &st->steps));
            break;
        case 4:
            TRY(read_span(&p, end, wire, &s));
            TRY(read_string_entry(st, s));
            break;
        case 5:
            TRY(read_u64(&p, end, wire, &v));
            break;
        default:
            return DECLINE;
        }
    }
    return OK;
}

/* ------------------------------------------------------------------ sorting */

static State *sort_state; /* qsort has no context argument; the GIL serialises calls */

static int by_id(const void *a, const void *b) {
    int64_t x = node_at(sort_state, *(const size_t *)a)->id;
    int64_t y = node_at(sort_state, *(const size_t *)b)->id;
    return x < y ? -1 : (x > y ? 1 : 0);
}

static int sort_nodes(State *st) {
    size_t n = node_count(st), i;
    size_t *order;
    if (wire_buf_reserve(&st->order, n * sizeof(size_t) + 1) != OK) {
        return FAIL;
    }
    order = (size_t *)st->order.data;
    for (i = 0; i < n; i++) {
        order[i] = i;
    }
    st->order.len = n * sizeof(size_t);
    sort_state = st;
    if (n > 1) {
        qsort(order, n, sizeof(size_t), by_id);
    }
    for (i = 1; i < n; i++) {
        if (node_at(st, order[i])->id == node_at(st, order[i - 1])->id) {
            return DECLINE;
        }
    }
    return OK;
}

/* The rank (sorted position) of the node with ``id``, or -1. */
static Py_ssize_t rank_of(State *st, int64_t id) {
    const size_t *order = (const size_t *)st->order.data;
    size_t lo = 0, hi = node_count(st);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int64_t got = node_at(st, order[mid])->id;
        if (got == id) {
            return (Py_ssize_t)mid;
        }
        if (got < id) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return -1;
}

/* ------------------------------------------------------------------ small maps */

typedef struct {
    int64_t key;
    int64_t value;
    Span span;
    size_t seq;
} Pair;

static int pair_by_key(const void *a, const void *b) {
    const Pair *x = (const Pair *)a, *y = (const Pair *)b;
    if (x->key != y->key) {
        return x->key < y->key ? -1 : 1;
    }
    return x->seq < y->seq ? -1 : (x->seq > y->seq ? 1 : 0);
}

/* Sort pairs by key, then drop all but the last (in wire order) of equal keys. */
static size_t sort_last_wins(Pair *pairs, size_t n) {
    size_t i, out = 0;
    if (n > 1) {
        qsort(pairs, n, sizeof(Pair), pair_by_key);
    }
    for (i = 0; i < n; i++) {
        if (i + 1 < n && pairs[i + 1].key == pairs[i].key) {
            continue;
        }
        pairs[out++] = pairs[i];
    }
    return out;
}

/* Sort pairs by key; two equal keys decline. */
static int sort_unique(Pair *pairs, size_t n) {
    size_t i;
    if (n > 1) {
        qsort(pairs, n, sizeof(Pair), pair_by_key);
    }
    for (i = 1; i < n; i++) {
        if (pairs[i].key == pairs[i - 1].key) {
            return DECLINE;
        }
    }
    return OK;
}

/*
 * A map entry {1: varint key, 2: varint or message value}. ``value_is_message``
 * picks the value's kind; an absent field reads as 0 or an empty span.
 */
static int read_map_entry(Span entry, int value_is_message, Pair *out) {
    Ptr p = entry.p;
    int seen_key = 0, seen_value = 0;
    out->key = 0;
    out->value = 0;
    out->span.p = out->span.end = NULL;
    while (p < entry.end) {
        uint32_t number, wire;
        uint64_t v;
        TRY(wire_tag(&p, entry.end, &number, &wire));
        if (number == 1 && !seen_key) {
            TRY(read_u64(&p, entry.end, wire, &v));
            out->key = wire_i64(v);
            seen_key = 1;
        } else if (number == 2 && !seen_value && value_is_message) {
            TRY(read_span(&p, entry.end, wire, &out->span));
            seen_value = 1;
        } else if (number == 2 && !seen_value) {
            TRY(read_u64(&p, entry.end, wire, &v));
            out->value = wire_i64(v);
            seen_value = 1;
        } else {
            return DECLINE;
        }
    }
    return OK;
}

static int push_entry(WireBuf *buf, Span entry, int value_is_message, int key_i32) {
    Pair pair;
    TRY(read_map_entry(entry, value_is_message, &pair));
    if (key_i32) {
        pair.key = wire_i32((uint64_t)pair.key);
    }
    pair.seq = buf->len / sizeof(Pair);
    return wire_buf_put(buf, &pair, sizeof pair);
}

/* A Tuple's int64_values appended to ``out`` (NULL: only validated). */
static int read_tuple(Span t, WireBuf *out) {
    Ptr p = t.p;
    if (p == NULL) {
        return OK;
    }
    while (p < t.end) {
        uint32_t number, wire;
        TRY(wire_tag(&p, t.end, &number, &wire));
        if (number != 1) {
            return DECLINE;
        }
        TRY(wire_repeated_i64(&p, t.end, wire, out));
    }
    return OK;
}

static PyObject *list_of_i64(const WireBuf *b) {
    size_t n = b->len / sizeof(int64_t), i;
    PyObject *list = PyList_New((Py_ssize_t)n);
    if (list == NULL) {
        return NULL;
    }
    for (i = 0; i < n; i++) {
        int64_t v;
        PyObject *item;
        memcpy(&v, b->data + i * sizeof v, sizeof v);
        item = PyLong_FromLongLong(v);
        if (item == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SetItem(list, (Py_ssize_t)i, item);
    }
    wire_untrack(list);
    return list;
}

/* ------------------------------------------------------------------ node fields */

enum { S_INPUTS, S_SRC_INDEX, S_OUT_SHAPES, S_EXECS, S_SHAPE, S_DIMS, S_PTRS, N_SCRATCH };

typedef struct {
    Span name, op, canon, host, trace;
    int has_trace;
    int64_t float_ops;
    PyObject *op_types; /* set */
    PyObject *attrs;    /* dict */
} Fields;

static int add_attr(State *st, Fields *f, Span entry) {
    Ptr p = entry.p;
    Span key = {NULL, NULL}, value = {NULL, NULL};
    int seen_key = 0, seen_value = 0, hit;
    PyObject *raw;
    BlobSlot *slot;
    while (p < entry.end) {
        uint32_t number, wire;
        TRY(wire_tag(&p, entry.end, &number, &wire));
        if (number == 1 && !seen_key) {
            TRY(read_str(&p, entry.end, wire, &key));
            seen_key = 1;
        } else if (number == 2 && !seen_value) {
            TRY(read_span(&p, entry.end, wire, &value));
            seen_value = 1;
        } else {
            return DECLINE;
        }
    }
    slot = blob_slot(st->attr_values, value, &hit);
    if (hit) {
        raw = new_ref(slot->obj);
    } else {
        /* The caller checks every new AttrValue bytes object with upb. */
        raw = blob_keep(slot, value,
                        PyBytes_FromStringAndSize(value.p ? (const char *)value.p : "",
                                                  value.p ? (Py_ssize_t)(value.end - value.p) : 0));
        if (raw != NULL && list_add(st->fresh_attrs, new_ref(raw)) != OK) {
            Py_DECREF(raw);
            return FAIL;
        }
    }
    return dict_put(f->attrs, cached_text(st, key), raw);
}

static int add_op_type(State *st, Fields *f, Ptr *pp, Ptr end, uint32_t wire) {
    Span s;
    PyObject *text;
    int rc;
    TRY(read_str(pp, end, wire, &s));
    text = cached_text(st, s);
    if (text == NULL) {
        return FAIL;
    }
    rc = PySet_Add(f->op_types, text);
    Py_DECREF(text);
    return rc == 0 ? OK : FAIL;
}

/* One ProfileNode field into ``f`` and the scratch buffers. */
static int node_field(State *st, Fields *f, uint32_t number, uint32_t wire, Ptr *pp, Ptr end) {
    uint64_t v;
    Span s;
    switch (number) {
    case 1: return read_str(pp, end, wire, &f->name);
    case 9: return read_str(pp, end, wire, &f->op);
    case 6: return read_str(pp, end, wire, &f->canon);
    case 7: return read_str(pp, end, wire, &f->host);
    case 13: return read_u64(pp, end, wire, &v);
    case 8:
        TRY(read_u64(pp, end, wire, &v));
        f->float_ops = wire_i64(v);
        return OK;
    case 10:
        if (f->has_trace) {
            return DECLINE;
        }
        f->has_trace = 1;
        return read_span(pp, end, wire, &f->trace);
    case 2: /* inputs: map<int32, int64> */
        TRY(read_span(pp, end, wire, &s));
        return push_entry(&st->scratch[S_INPUTS], s, 0, 1);
    case 14: /* src_output_index: map<int64, int32> */
        TRY(read_span(pp, end, wire, &s));
        return push_entry(&st->scratch[S_SRC_INDEX], s, 0, 0);
    case 15: /* output_shapes: map<int32, Tuple> */
        TRY(read_span(pp, end, wire, &s));
        TRY(push_entry(&st->scratch[S_OUT_SHAPES], s, 1, 1));
        return read_tuple(((Pair *)(st->scratch[S_OUT_SHAPES].data +
                                    st->scratch[S_OUT_SHAPES].len))[-1].span,
                          NULL);
    case 12: /* execs: map<int64, ExecProfile> */
        TRY(read_span(pp, end, wire, &s));
        return push_entry(&st->scratch[S_EXECS], s, 1, 0);
    case 3: { /* outputs: map<int32, int64>, not used */
        Pair unused;
        TRY(read_span(pp, end, wire, &s));
        return read_map_entry(s, 0, &unused);
    }
    case 16: { /* input_shapes: map<int32, Tuple>, not used */
        Pair unused;
        TRY(read_span(pp, end, wire, &s));
        TRY(read_map_entry(s, 1, &unused));
        return read_tuple(unused.span, NULL);
    }
    case 4: return wire_repeated_i64(pp, end, wire, &st->scratch[S_SHAPE]);
    case 5: return add_op_type(st, f, pp, end, wire);
    case 11:
        TRY(read_span(pp, end, wire, &s));
        return add_attr(st, f, s);
    default: return DECLINE;
    }
}

/* The CodeDef as 5 int64 per frame (file_id, lineno, function_id, line_id,
   func_start_line). */
static int trace_bytes(State *st, Span code, PyObject **out) {
    WireBuf *frames = &st->scratch[S_DIMS];
    Ptr p = code.p;
    frames->len = 0;
    while (p && p < code.end) {
        uint32_t number, wire;
        Span t;
        int64_t vals[5] = {0, 0, 0, 0, 0};
        Ptr q;
        TRY(wire_tag(&p, code.end, &number, &wire));
        if (number != 1) {
            return DECLINE;
        }
        TRY(read_span(&p, code.end, wire, &t));
        q = t.p;
        while (q < t.end) {
            uint64_t v;
            int slot;
            TRY(wire_tag(&q, t.end, &number, &wire));
            TRY(read_u64(&q, t.end, wire, &v));
            switch (number) {
            case 6: slot = 0; vals[slot] = wire_i64(v); break;
            case 2: slot = 1; vals[slot] = wire_i32(v); break;
            case 7: slot = 2; vals[slot] = wire_i64(v); break;
            case 8: slot = 3; vals[slot] = wire_i64(v); break;
            case 5: slot = 4; vals[slot] = wire_i32(v); break;
            default: return DECLINE;
            }
        }
        TRY(wire_buf_put(frames, vals, sizeof vals));
    }
    *out = PyBytes_FromStringAndSize(frames->data ? frames->data : "", (Py_ssize_t)frames->len);
    return *out ? OK : FAIL;
}

/* inputs {pos: producer name} and src_output {producer name: index}, as
   profile_read applies them (positions ascending, the last entry of a key wins). */
static int inputs_dicts(State *st, PyObject *inputs, PyObject *src_output) {
    Pair *pairs = (Pair *)st->scratch[S_INPUTS].data;
    size_t n = sort_last_wins(pairs, st->scratch[S_INPUTS].len / sizeof(Pair)), i;
    Pair *index = (Pair *)st->scratch[S_SRC_INDEX].data;
    size_t n_index = st->scratch[S_SRC_INDEX].len / sizeof(Pair);
    for (i = 0; i < n; i++) {
        Py_ssize_t rank = rank_of(st, pairs[i].value);
        PyObject *src;
        int64_t idx = 0;
        size_t j;
        src = rank >= 0 ? PyList_GetItem(st->names, rank) : NULL;
        if (src != NULL) {
            Py_INCREF(src);
        } else {
            src = PyUnicode_FromStringAndSize("", 0);
        }
        if (src == NULL) {
            return FAIL;
        }
        for (j = n_index; j-- > 0;) {
            if (index[j].key == pairs[i].value) {
                idx = wire_i32((uint64_t)index[j].value);
                break;
            }
        }
        Py_INCREF(src);
        if (dict_put(inputs, PyLong_FromLongLong(pairs[i].key), src) != OK ||
            dict_put(src_output, src, PyLong_FromLongLong(idx)) != OK) {
            return FAIL;
        }
    }
    return OK;
}

static int output_shapes_dict(State *st, PyObject *shapes) {
    Pair *pairs = (Pair *)st->scratch[S_OUT_SHAPES].data;
    size_t n = sort_last_wins(pairs, st->scratch[S_OUT_SHAPES].len / sizeof(Pair)), i;
    for (i = 0; i < n; i++) {
        WireBuf *dims = &st->scratch[S_DIMS];
        dims->len = 0;
        TRY(read_tuple(pairs[i].span, dims));
        if (dict_put(shapes, PyLong_FromLongLong(pairs[i].key), list_of_i64(dims)) != OK) {
            return FAIL;
        }
    }
    wire_untrack(shapes);
    return OK;
}

/* ------------------------------------------------------------------ executions */

static Block *block_for(State *st, int64_t step) {
    Block *blocks = (Block *)st->blocks.data;
    size_t n = st->blocks.len / sizeof(Block), i;
    Block fresh;
    if (st->last_block < n && blocks[st->last_block].step == step) {
        return &blocks[st->last_block];
    }
    for (i = 0; i < n; i++) {
        if (blocks[i].step == step) {
            st->last_block = i;
            return &blocks[i];
        }
    }
    memset(&fresh, 0, sizeof fresh);
    fresh.step = step;
    if (wire_buf_put(&st->blocks, &fresh, sizeof fresh) != OK) {
        return NULL;
    }
    st->last_block = n;
    return (Block *)st->blocks.data + n;
}

/* The step-local code of device string ``dev`` (added when new); -1 on failure. */
static int32_t device_code(Block *b, Span dev) {
    Span *known = (Span *)b->devices.data;
    size_t n = b->devices.len / sizeof(Span), i;
    for (i = 0; i < n; i++) {
        if (wire_span_cmp(known[i], dev) == 0) {
            return (int32_t)i;
        }
    }
    if (n >= INT32_MAX || wire_buf_put(&b->devices, &dev, sizeof dev) != OK) {
        return -1;
    }
    return (int32_t)n;
}

typedef struct {
    Span key;
    Span value;
} Keyed;

static int keyed_cmp(const void *a, const void *b) {
    return wire_span_cmp(((const Keyed *)a)->key, ((const Keyed *)b)->key);
}

/* A map<string, ExecTime> entry. */
static int read_keyed(Span entry, Keyed *out) {
    Ptr p = entry.p;
    int seen_key = 0, seen_value = 0;
    out->key.p = out->key.end = NULL;
    out->value.p = out->value.end = NULL;
    while (p < entry.end) {
        uint32_t number, wire;
        TRY(wire_tag(&p, entry.end, &number, &wire));
        if (number == 1 && !seen_key) {
            TRY(read_str(&p, entry.end, wire, &out->key));
            seen_key = 1;
        } else if (number == 2 && !seen_value) {
            TRY(read_span(&p, entry.end, wire, &out->value));
            seen_value = 1;
        } else {
            return DECLINE;
        }
    }
    return OK;
}

/* The (start, duration) rows of one device's ExecTime. */
static int add_times(State *st, Block *b, int32_t nid, int8_t kind, int32_t dev, Span value) {
    Ptr p = value.p;
    WireBuf *vals = &st->scratch[S_DIMS];
    while (p && p < value.end) {
        uint32_t number, wire;
        Span t;
        int64_t start = 0, dur = 0;
        TRY(wire_tag(&p, value.end, &number, &wire));
        if (number != 1) {
            return DECLINE;
        }
        TRY(read_span(&p, value.end, wire, &t));
        vals->len = 0;
        TRY(read_tuple(t, vals));
        if (vals->len >= sizeof(int64_t)) {
            memcpy(&start, vals->data, sizeof start);
        }
        if (vals->len >= 2 * sizeof(int64_t)) {
            memcpy(&dur, vals->data + sizeof start, sizeof dur);
        }
        if (wire_put_i32(&b->col[B_T_NODE], nid) != OK ||
            wire_put_i8(&b->col[B_T_KIND], kind) != OK ||
            wire_put_i32(&b->col[B_T_DEV], dev) != OK ||
            wire_put_i64(&b->col[B_T_START], start) != OK ||
            wire_put_i64(&b->col[B_T_DUR], dur) != OK) {
            return FAIL;
        }
    }
    return OK;
}

/* One device map (accelerator_execs or cpu_execs), devices in string order. */
static int add_kind(State *st, Block *b, int32_t nid, int8_t kind, WireBuf *entries) {
    Keyed *items = (Keyed *)entries->data;
    size_t n = entries->len / sizeof(Keyed), i;
    if (n > 1) {
        qsort(items, n, sizeof(Keyed), keyed_cmp);
    }
    for (i = 0; i < n; i++) {
        int32_t code;
        if (i > 0 && wire_span_cmp(items[i].key, items[i - 1].key) == 0) {
            return DECLINE;
        }
        code = device_code(b, items[i].key);
        if (code < 0) {
            return FAIL;
        }
        TRY(add_times(st, b, nid, kind, code, items[i].value));
    }
    return OK;
}

/* One output_memory entry {1: slot int32, 2: Memory {1: bytes, 2: ptr}}: the
   slot and bytes into scratch S_DIMS (a Pair whose seq indexes S_PTRS), the ptr
   into S_PTRS. */
static int read_output_memory(State *st, Ptr *pp, Ptr end, uint32_t wire) {
    Span entry;
    Pair out;
    Ptr q;
    uint64_t ptr = 0;
    TRY(read_span(pp, end, wire, &entry));
    TRY(read_map_entry(entry, 1, &out));
    out.key = wire_i32((uint64_t)out.key);
    out.value = 0;
    q = out.span.p;
    while (q && q < out.span.end) {
        uint32_t number;
        uint64_t v;
        TRY(wire_tag(&q, out.span.end, &number, &wire));
        TRY(read_u64(&q, out.span.end, wire, &v));
        if (number == 1) {
            out.value = wire_i64(v);
        } else if (number == 2) {
            ptr = v;
        } else {
            return DECLINE;
        }
    }
    out.span.p = out.span.end = NULL;
    out.seq = st->scratch[S_PTRS].len / sizeof ptr;
    TRY(wire_buf_put(&st->scratch[S_DIMS], &out, sizeof out));
    return wire_put_u64(&st->scratch[S_PTRS], ptr);
}

/* One ExecMemory: its row and its outputs, slots ascending. */
static int add_memory(State *st, Block *b, int32_t nid, Span mem) {
    int64_t vals[N_MEM_VALUES];
    WireBuf *outs = &st->scratch[S_DIMS];
    Pair *items;
    size_t n, i;
    Ptr p = mem.p;
    memset(vals, 0, sizeof vals);
    outs->len = 0;
    st->scratch[S_PTRS].len = 0;
    while (p < mem.end) {
        uint32_t number, wire;
        uint64_t v;
        TRY(wire_tag(&p, mem.end, &number, &wire));
        if (number >= 1 && number <= N_MEM_VALUES) {
            TRY(read_u64(&p, mem.end, wire, &v));
            vals[number - 1] = wire_i64(v);
        } else if (number == 11) {
            TRY(read_output_memory(st, &p, mem.end, wire));
        } else {
            return DECLINE;
        }
    }
    items = (Pair *)outs->data;
    n = outs->len / sizeof(Pair);
    /* Pair.seq indexes the ptr column written alongside. */
    if (sort_unique(items, n) != OK) {
        return DECLINE;
    }
    TRY(wire_put_i32(&b->col[B_M_NODE], nid));
    for (i = 0; i < N_MEM_VALUES; i++) {
        TRY(wire_put_i64(&b->col[B_M_VALUES + i], vals[i]));
    }
    for (i = 0; i < n; i++) {
        uint64_t ptr;
        memcpy(&ptr, st->scratch[S_PTRS].data + items[i].seq * sizeof ptr, sizeof ptr);
        if (wire_put_i64(&b->col[B_O_ROW], b->mem_rows) != OK ||
            wire_put_i32(&b->col[B_O_SLOT], (int32_t)items[i].key) != OK ||
            wire_put_i64(&b->col[B_O_BYTES], items[i].value) != OK ||
            wire_put_u64(&b->col[B_O_PTR], ptr) != OK) {
            return FAIL;
        }
    }
    b->mem_rows++;
    return OK;
}

typedef struct {
    WireBuf devs;   /* Span */
    WireBuf acc;    /* Keyed */
    WireBuf cpu;    /* Keyed */
    WireBuf mems;   /* Span */
    WireBuf allocs; /* Span */
    WireBuf codes;  /* int32 */
} ExecScratch;

static int push_keyed(WireBuf *buf, Ptr *pp, Ptr end, uint32_t wire) {
    Span entry;
    Keyed item;
    TRY(read_span(pp, end, wire, &entry));
    TRY(read_keyed(entry, &item));
    return wire_buf_put(buf, &item, sizeof item);
}

static int push_span(WireBuf *buf, Ptr *pp, Ptr end, uint32_t wire, int text) {
    Span s;
    TRY(text ? read_str(pp, end, wire, &s) : read_span(pp, end, wire, &s));
    return wire_buf_put(buf, &s, sizeof s);
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return x < y ? -1 : (x > y ? 1 : 0);
}

/* (node, device) pairs: the node's devices' codes, ascending and unique, or -1. */
static int add_pairs(ExecScratch *x, Block *b, int32_t nid) {
    Span *devs = (Span *)x->devs.data;
    size_t n = x->devs.len / sizeof(Span), i;
    int32_t *codes;
    x->codes.len = 0;
    for (i = 0; i < n; i++) {
        int32_t code = device_code(b, devs[i]);
        if (code < 0) {
            return FAIL;
        }
        TRY(wire_put_i32(&x->codes, code));
    }
    codes = (int32_t *)x->codes.data;
    if (n > 1) {
        qsort(codes, n, sizeof(int32_t), cmp_i32);
    }
    if (n == 0) {
        return wire_put_i32(&b->col[B_PAIR_NODE], nid) != OK
                   ? FAIL
                   : wire_put_i32(&b->col[B_PAIR_DEV], -1);
    }
    for (i = 0; i < n; i++) {
        if (i > 0 && codes[i] == codes[i - 1]) {
            continue;
        }
        if (wire_put_i32(&b->col[B_PAIR_NODE], nid) != OK ||
            wire_put_i32(&b->col[B_PAIR_DEV], codes[i]) != OK) {
            return FAIL;
        }
    }
    return OK;
}

static int add_allocation(Block *b, int32_t nid, Span rec) {
    int64_t micros = 0, bytes = 0;
    Ptr p = rec.p;
    while (p < rec.end) {
        uint32_t number, wire;
        uint64_t v;
        TRY(wire_tag(&p, rec.end, &number, &wire));
        TRY(read_u64(&p, rec.end, wire, &v));
        if (number == 1) {
            micros = wire_i64(v);
        } else if (number == 2) {
            bytes = wire_i64(v);
        } else {
            return DECLINE;
        }
    }
    if (wire_put_i32(&b->col[B_A_NODE], nid) != OK ||
        wire_put_i64(&b->col[B_A_MICROS], micros) != OK ||
        wire_put_i64(&b->col[B_A_BYTES], bytes) != OK) {
        return FAIL;
    }
    return OK;
}

/* One ExecProfile of node ``nid`` into its step's block, in profile_read's order:
   devices, start/end, accelerator then CPU times, memory, allocations. */
static int add_exec(State *st, ExecScratch *x, int32_t nid, int64_t step, Span value) {
    int64_t start = 0, end_micros = 0;
    Ptr p = value.p;
    Block *b;
    size_t i, n;
    x->devs.len = x->acc.len = x->cpu.len = x->mems.len = x->allocs.len = 0;
    while (p && p < value.end) {
        uint32_t number, wire;
        uint64_t v;
        TRY(wire_tag(&p, value.end, &number, &wire));
        switch (number) {
        case 1: TRY(read_u64(&p, value.end, wire, &v)); break;
        case 2: TRY(read_u64(&p, value.end, wire, &v)); start = wire_i64(v); break;
        case 3: TRY(read_u64(&p, value.end, wire, &v)); end_micros = wire_i64(v); break;
        case 4: TRY(push_keyed(&x->acc, &p, value.end, wire)); break;
        case 5: TRY(push_keyed(&x->cpu, &p, value.end, wire)); break;
        case 6: TRY(push_span(&x->devs, &p, value.end, wire, 1)); break;
        case 7: TRY(push_span(&x->mems, &p, value.end, wire, 0)); break;
        case 11: TRY(push_span(&x->allocs, &p, value.end, wire, 0)); break;
        default: return DECLINE;
        }
    }
    b = block_for(st, step);
    if (b == NULL) {
        return FAIL;
    }
    TRY(add_pairs(x, b, nid));
    if (start != 0 || end_micros != 0) {
        if (wire_put_i32(&b->col[B_SPAN_NODE], nid) != OK ||
            wire_put_i64(&b->col[B_SPAN_START], start) != OK ||
            wire_put_i64(&b->col[B_SPAN_END], end_micros) != OK) {
            return FAIL;
        }
    }
    TRY(add_kind(st, b, nid, KIND_ACCELERATOR, &x->acc));
    TRY(add_kind(st, b, nid, KIND_CPU, &x->cpu));
    n = x->mems.len / sizeof(Span);
    for (i = 0; i < n; i++) {
        TRY(add_memory(st, b, nid, ((Span *)x->mems.data)[i]));
    }
    n = x->allocs.len / sizeof(Span);
    for (i = 0; i < n; i++) {
        TRY(add_allocation(b, nid, ((Span *)x->allocs.data)[i]));
    }
    return OK;
}

/* ------------------------------------------------------------------ pass 2 */

static void clear_fields(Fields *f) {
    Py_XDECREF(f->op_types);
    Py_XDECREF(f->attrs);
}

#define NODE_ITEMS 13

/* A tuple of ``n`` new references (each consumed; any NULL fails the whole). */
static PyObject *tuple_of(PyObject **items, Py_ssize_t n) {
    PyObject *t = NULL;
    Py_ssize_t i;
    for (i = 0; i < n; i++) {
        if (items[i] == NULL) {
            goto fail;
        }
    }
    t = PyTuple_New(n);
    if (t == NULL) {
        goto fail;
    }
    for (i = 0; i < n; i++) {
        PyTuple_SetItem(t, i, items[i]); /* steals */
    }
    return t;
fail:
    for (i = 0; i < n; i++) {
        Py_XDECREF(items[i]);
    }
    return NULL;
}

/* The node's tuple (see the module comment); *rc says OK, DECLINE or FAIL. */
static PyObject *node_tuple(State *st, Fields *f, PyObject *name, int has_execs, int *rc) {
    PyObject *items[NODE_ITEMS];
    PyObject *inputs = PyDict_New(), *src_output = PyDict_New(), *shapes = PyDict_New();
    PyObject *trace = NULL;
    Py_ssize_t i;
    *rc = inputs && src_output && shapes ? OK : FAIL;
    if (*rc == OK) {
        *rc = inputs_dicts(st, inputs, src_output);
    }
    if (*rc == OK) {
        *rc = output_shapes_dict(st, shapes);
    }
    if (*rc == OK && f->has_trace) {
        int hit;
        BlobSlot *slot = blob_slot(st->traces, f->trace, &hit);
        if (hit) {
            trace = new_ref(slot->obj);
        } else {
            *rc = trace_bytes(st, f->trace, &trace);
            if (*rc == OK) {
                blob_keep(slot, f->trace, trace);
            }
        }
    }
    if (*rc != OK) {
        Py_XDECREF(inputs);
        Py_XDECREF(src_output);
        Py_XDECREF(shapes);
        return NULL;
    }
    i = 0;
    items[i++] = new_ref(name);
    items[i++] = cached_text(st, f->op);
    items[i++] = inputs;
    items[i++] = src_output;
    items[i++] = shapes;
    items[i++] = st->scratch[S_SHAPE].len ? list_of_i64(&st->scratch[S_SHAPE]) : new_ref(Py_None);
    wire_untrack(f->op_types); /* strings only */
    items[i++] = new_ref(f->op_types);
    items[i++] = cached_text(st, f->canon);
    items[i++] = cached_text(st, f->host);
    items[i++] = PyLong_FromLongLong(f->float_ops);
    items[i++] = trace ? trace : new_ref(Py_None);
    items[i++] = new_ref(f->attrs);
    items[i++] = new_ref(has_execs ? Py_True : Py_False);
    return tuple_of(items, NODE_ITEMS);
}

static void free_exec_scratch(ExecScratch *x) {
    wire_buf_free(&x->devs);
    wire_buf_free(&x->acc);
    wire_buf_free(&x->cpu);
    wire_buf_free(&x->mems);
    wire_buf_free(&x->allocs);
    wire_buf_free(&x->codes);
}

/* The node of sorted position ``rank``: its tuple into ``nodes``, its
   executions into the step blocks. */
static int read_node(State *st, ExecScratch *x, size_t rank, PyObject *nodes) {
    const Node *node = node_at(st, ((const size_t *)st->order.data)[rank]);
    Fields f;
    Ptr p = node->body.p;
    Pair *execs;
    size_t n, i;
    int rc = OK;
    PyObject *tuple;
    memset(&f, 0, sizeof f);
    f.op_types = PySet_New(NULL);
    f.attrs = PyDict_New();
    if (f.op_types == NULL || f.attrs == NULL) {
        clear_fields(&f);
        return FAIL;
    }
    for (i = 0; i < N_SCRATCH; i++) {
        st->scratch[i].len = 0;
    }
    while (rc == OK && p < node->body.end) {
        uint32_t number, wire;
        rc = wire_tag(&p, node->body.end, &number, &wire);
        if (rc == OK) {
            rc = node_field(st, &f, number, wire, &p, node->body.end);
        }
    }
    execs = (Pair *)st->scratch[S_EXECS].data;
    n = st->scratch[S_EXECS].len / sizeof(Pair);
    if (rc == OK) {
        rc = sort_unique(execs, n);
    }
    if (rc == OK) {
        tuple = node_tuple(st, &f, PyList_GetItem(st->names, (Py_ssize_t)rank), n > 0, &rc);
        if (rc == OK) {
            rc = list_add(nodes, tuple);
        }
    }
    for (i = 0; rc == OK && i < n; i++) {
        rc = add_exec(st, x, (int32_t)rank, execs[i].key, execs[i].span);
    }
    clear_fields(&f);
    return rc;
}

static PyObject *block_tuple(Block *b) {
    PyObject *items[2 + N_BLOCK_COLUMNS];
    PyObject *devices;
    Span *devs = (Span *)b->devices.data;
    size_t n = b->devices.len / sizeof(Span), i;
    devices = PyList_New(0);
    for (i = 0; devices != NULL && i < n; i++) {
        if (list_add(devices, text_of(devs[i])) != OK) {
            Py_CLEAR(devices);
        }
    }
    items[0] = PyLong_FromLongLong(b->step);
    items[1] = devices;
    for (i = 0; i < N_BLOCK_COLUMNS; i++) {
        items[2 + i] = wire_buf_bytearray(&b->col[i]);
    }
    return tuple_of(items, 2 + N_BLOCK_COLUMNS);
}

static void free_state(State *st) {
    Block *blocks = (Block *)st->blocks.data;
    size_t n = st->blocks.len / sizeof(Block), i, j;
    for (i = 0; i < n; i++) {
        wire_buf_free(&blocks[i].devices);
        for (j = 0; j < N_BLOCK_COLUMNS; j++) {
            wire_buf_free(&blocks[i].col[j]);
        }
    }
    wire_buf_free(&st->blocks);
    wire_buf_free(&st->nodes);
    wire_buf_free(&st->order);
    for (i = 0; i < N_SCRATCH; i++) {
        wire_buf_free(&st->scratch[i]);
    }
    wire_buf_free(&st->steps);
    Py_XDECREF(st->id_to_string);
    Py_XDECREF(st->names);
    Py_XDECREF(st->fresh_attrs);
    free_blobs(st->attr_values);
    free_blobs(st->traces);
    for (i = 0; i < TEXT_CACHE; i++) {
        Py_XDECREF(st->texts[i].obj);
    }
}

static int make_names(State *st) {
    size_t n = node_count(st), i;
    const size_t *order = (const size_t *)st->order.data;
    st->names = PyList_New(0);
    if (st->names == NULL) {
        return FAIL;
    }
    for (i = 0; i < n; i++) {
        TRY(list_add(st->names, text_of(node_at(st, order[i])->name)));
    }
    return OK;
}

static int decode_all(State *st, Ptr data, Ptr end, PyObject *nodes) {
    ExecScratch x;
    size_t n, i;
    int rc;
    st->id_to_string = PyDict_New();
    st->fresh_attrs = PyList_New(0);
    st->attr_values = (BlobSlot *)calloc(BLOB_CACHE, sizeof(BlobSlot));
    st->traces = (BlobSlot *)calloc(BLOB_CACHE, sizeof(BlobSlot));
    if (st->id_to_string == NULL || st->fresh_attrs == NULL) {
        return FAIL;
    }
    if (st->attr_values == NULL || st->traces == NULL) {
        PyErr_NoMemory();
        return FAIL;
    }
    TRY(read_top(st, data, end));
    n = node_count(st);
    if (n > (size_t)INT32_MAX) {
        return DECLINE;
    }
    TRY(sort_nodes(st));
    TRY(make_names(st));
    memset(&x, 0, sizeof x);
    rc = OK;
    for (i = 0; rc == OK && i < n; i++) {
        rc = read_node(st, &x, i, nodes);
    }
    free_exec_scratch(&x);
    return rc;
}

static PyObject *result_tuple(State *st, PyObject *nodes) {
    PyObject *items[6];
    PyObject *blocks = PyList_New(0);
    Block *all = (Block *)st->blocks.data;
    size_t n = st->blocks.len / sizeof(Block), i;
    for (i = 0; blocks != NULL && i < n; i++) {
        if (list_add(blocks, block_tuple(&all[i])) != OK) {
            Py_CLEAR(blocks);
        }
    }
    items[0] = new_ref(st->has_trace ? Py_True : Py_False);
    items[1] = list_of_i64(&st->steps);
    items[2] = new_ref(st->id_to_string);
    items[3] = new_ref(nodes);
    items[4] = blocks;
    items[5] = new_ref(st->fresh_attrs);
    return tuple_of(items, 6);
}

static PyObject *profiledecode_decode(PyObject *self, PyObject *arg) {
    char *data;
    Py_ssize_t size;
    State st;
    PyObject *nodes, *result = NULL;
    int rc;
    (void)self;
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "decode() takes bytes");
        return NULL;
    }
    if (PyBytes_AsStringAndSize(arg, &data, &size) < 0) {
        return NULL;
    }
    if ((uint64_t)size >= ((uint64_t)1 << 31)) {
        Py_RETURN_NONE;
    }
    memset(&st, 0, sizeof st);
    nodes = PyList_New(0);
    rc = nodes ? decode_all(&st, (Ptr)data, (Ptr)data + size, nodes) : FAIL;
    if (rc == OK) {
        result = result_tuple(&st, nodes);
    } else if (rc == DECLINE) {
        result = new_ref(Py_None);
    } else if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
        PyErr_Clear(); /* strings are checked before decoding; kept as a safety net */
        result = new_ref(Py_None);
    }
    Py_XDECREF(nodes);
    free_state(&st);
    return result;
}

static PyMethodDef profiledecode_methods[] = {
    {"decode", profiledecode_decode, METH_O,
     "decode(data: bytes) -> tuple | None\n\n"
     "A saved profile (ProfileProto) as node tuples and per-step columns, or None\n"
     "when the bytes are not in the plain subset this decoder reads."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef profiledecode_module = {
    PyModuleDef_HEAD_INIT,
    "_profiledecode",
    "Native decoder of saved profiles (see tfprof_lite.proto.profiles).",
    -1,
    profiledecode_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__profiledecode(void) { return PyModule_Create(&profiledecode_module); }
