/*
 * Native decoder of an XSpace (``*.xplane.pb``; module
 * tfprof_lite._native._xplanedecode). See docs/native.md and
 * tfprof_lite/proto/xplane_native.py, which turns its result into the
 * XSpaceColumns of tfprof_lite/proto/xplane.py (whose module docstring is the
 * contract: the same rows, in the same order, the same interned strings).
 *
 * decode(data: bytes, gunzip: callable, keep: tuple[str, ...] | None = None)
 *     -> tuple | None
 *
 * ``keep``: when given, the event stat table holds only the stats whose name
 * (their stat metadata's, "" without one) is one of these; the others are
 * still read and checked (the same inputs are declined) but add no row, no
 * interned string and no gunzip call (the pure path's ``event_stats`` filter).
 *
 * decode_fd(fd: int, size: int, gunzip: callable, keep=None) -> tuple | None
 *
 * The same for the first ``size`` bytes of open file ``fd`` (fewer if the file
 * ends sooner), read here into private anonymous memory (OSError when a read
 * fails). Each line's events are given back to the system once decoded, so the
 * file's bytes and the columns are not held in full at the same time: the
 * decoder's peak memory is about the larger of the two, not their sum.
 *
 * The input is untrusted. Like the other decoders it reads only a plain subset
 * of the wire format and returns None ("declined") for anything else, so that
 * the caller parses the bytes with upb and walks the message instead (which
 * then succeeds the same way or raises its usual error). Beyond the wire-level
 * rules of _wire.h it declines on: unknown fields and known fields with another
 * wire type (groups, fixed32, a varint where a message is due...), invalid
 * UTF-8 in a string field, a map entry whose value field appears twice (protobuf
 * would merge the two), a ``gunzip`` call that raises (a compressed string that
 * does not decompress: the pure path reports it), a ``profile_start_time`` that
 * is a uint64 of 2^63 or more, an event start that does not fit in int64 ps,
 * and inputs of XPLANEDECODE_LIMIT bytes or more (every row count then fits in
 * 32 bits; the sanitizer test builds it with a small limit).
 *
 * Protobuf's rules: for a singular field the last occurrence wins; each
 * occurrence of a repeated field adds an element; the members of a oneof
 * (XEvent's offset_ps / num_occurrences, XStat's value) replace each other;
 * of two map entries with one key the last wins; repeated int64 may be packed.
 *
 * The result tuple:
 *   0 strings, 1 blobs, 2 hostnames, 3 errors, 4 warnings, 5 plane names,
 *   6 line names, 7 line display names, 8 event metadata names, 9 their
 *   display names, 10 stat metadata names (lists of str; blobs of bytes),
 *   11 origin_ns (int), 12 relative (bool),
 *   13.. bytearrays of the columns in the order of the C_* enum below
 *   (native byte order; int32 / int8 where marked, else int64).
 */

#include "_decoder.h"

#include <errno.h>
#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#include <unistd.h>
#define XPLANE_FD 1 /* decode_fd is built */
#if defined(MAP_ANONYMOUS) && defined(MADV_DONTNEED)
#define XPLANE_MMAP 1 /* decode_fd's input memory is given back as it goes */
#endif
#endif

#ifndef XPLANEDECODE_LIMIT
#define XPLANEDECODE_LIMIT INT32_MAX
#endif

#define WIRE_FIXED64 1u

#define KIND_NONE 0
#define KIND_DOUBLE 1
#define KIND_UINT64 2
#define KIND_INT64 3
#define KIND_STR 4
#define KIND_BYTES 5
#define KIND_REF 6
#define KIND_COMPRESSED 7

enum {
    C_PLANE_ID,
    C_PLANE_STAT_AT,
    C_LINE_PLANE, /* int32 */
    C_LINE_ID,
    C_LINE_DISPLAY_ID,
    C_LINE_TS,
    C_LINE_DUR,
    C_LINE_EVENT_AT,
    C_EVENT_LINE, /* int32 */
    C_EVENT_META, /* int32 */
    C_OCC_EVENT, /* int32: the events whose num_occurrences is not 0 */
    C_OCC_COUNT, /* their num_occurrences */
    C_EVENT_DUR,
    C_EVENT_START,
    C_EVENT_STAT_AT,
    C_META_PLANE, /* int32 */
    C_META_ID,
    C_META_STAT_AT,
    C_SMETA_PLANE, /* int32 */
    C_SMETA_ID,
    C_PS_KEY, /* int32 */
    C_PS_KIND, /* int8 */
    C_PS_VALUE,
    C_MS_KEY, /* int32 */
    C_MS_KIND, /* int8 */
    C_MS_VALUE,
    C_ES_KEY, /* int32 */
    C_ES_KIND, /* int8 */
    C_ES_VALUE,
    N_COLUMNS
};

enum { L_STRINGS, L_BLOBS, L_HOSTS, L_ERRORS, L_WARNINGS, L_PLANE_NAME, L_LINE_NAME,
       L_LINE_DNAME, L_META_NAME, L_META_DNAME, L_SMETA_NAME, N_LISTS };

/* The stat tables: plane, event metadata, event (first column of each). */
#define T_PLANE C_PS_KEY
#define T_META C_MS_KEY
#define T_EVENT C_ES_KEY

typedef struct {
    Span name;
    int64_t id;
    size_t lines[2], emeta[2], smeta[2], stats[2]; /* ranges in State's span lists */
} Plane;

typedef struct {
    Span body, name, dname;
    int64_t id, display_id, ts, dur;
    int64_t start;   /* from the origin, ns */
    int start_ok;    /* start fits in int64 */
} Line;

/* A map entry. For stat metadata, ``value`` becomes the name once checked and
   ``text`` is the name's interned index (-1 until first used); for event
   metadata, ``text`` is the entry's row in the event metadata table.
   ``keep``: whether event stats of this stat metadata are kept. */
typedef struct {
    int64_t key;
    Span value;
    size_t order;
    int32_t text;
    int keep;
} Entry;

/* Entry rows by key (index + 1; 0 = none) when the keys are small: ids are
   usually 0..n, and the binary search is then the decoder's largest cost. */
typedef struct {
    int32_t *rows;
    size_t n;
} Dense;

typedef struct {
    int64_t mid;
    int kind;
    uint64_t raw;
    Span span;
} Stat;

/* A result column, grown in place inside the bytearray that is returned (no
   copy at the end: a large file's columns are not held twice). */
typedef struct {
    char *data;
    size_t len, cap;
    PyObject *arr;
} Col;

typedef struct {
    Col col[N_COLUMNS];
    PyObject *list[N_LISTS];
    PyObject *gunzip;
    PyObject *keep; /* UTF-8 bytes of gunzipped strings, alive while interned */
    /* The event stat filter: names (UTF-8 spans of ``filter_bytes``), or
       n_filter = -1 for none; ``keep_unnamed``: whether "" is one of them. */
    PyObject *filter_bytes;
    Span *filter;
    Py_ssize_t n_filter;
    int keep_unnamed;
    /* Whether decoded line bodies are given back (decode_fd's own buffer); then
       interned strings are copies (in ``keep``), not spans of the input. */
    int release;
    size_t page;
    WireBuf planes, plane_rows, lines, line_spans, em_spans, sm_spans, stat_spans;
    WireBuf sm, em; /* the current plane's map entries, sorted */
    Dense sm_dense, em_dense;
    /* interned strings: spans and an open-addressing table of index + 1 */
    WireBuf text;
    int32_t *slots;
    size_t n_slots;
} State;

static int put_span(WireBuf *b, Span s) { return wire_buf_put(b, &s, sizeof s); }

/* Room for ``n`` more bytes in ``c`` (its bytearray doubled as needed). */
static int col_reserve(Col *c, size_t n) {
    size_t need, cap;
    if (n <= c->cap - c->len) {
        return OK;
    }
    if (n > (size_t)PY_SSIZE_T_MAX / 2 - c->len) {
        PyErr_NoMemory();
        return FAIL;
    }
    need = c->len + n;
    cap = c->cap ? c->cap : 256;
    while (cap < need) {
        cap *= 2;
    }
    if (c->arr == NULL) {
        c->arr = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)cap);
        if (c->arr == NULL) {
            return FAIL;
        }
    } else if (PyByteArray_Resize(c->arr, (Py_ssize_t)cap) != 0) {
        return FAIL;
    }
    c->data = PyByteArray_AsString(c->arr);
    c->cap = cap;
    return OK;
}

static int col_put(Col *c, const void *src, size_t n) {
    TRY(col_reserve(c, n));
    memcpy(c->data + c->len, src, n);
    c->len += n;
    return OK;
}

static int col_i8(Col *c, int8_t v) { return col_put(c, &v, sizeof v); }
static int col_i32(Col *c, int32_t v) { return col_put(c, &v, sizeof v); }
static int col_i64(Col *c, int64_t v) { return col_put(c, &v, sizeof v); }

/* The column's bytearray cut to its length (a new reference; ``c`` is emptied). */
static PyObject *col_take(Col *c) {
    PyObject *arr = c->arr;
    if (arr == NULL) {
        return PyByteArray_FromStringAndSize("", 0);
    }
    c->arr = NULL;
    if (PyByteArray_Resize(arr, (Py_ssize_t)c->len) != 0) {
        Py_DECREF(arr);
        return NULL;
    }
    return arr;
}

#define AT(buf, type, i) (((type *)(buf).data)[i])
#define COUNT(buf, type) ((buf).len / sizeof(type))

/* ------------------------------------------------------------------ interning */

static uint64_t span_hash(Span s) {
    uint64_t h = 1469598103934665603u;
    Ptr p;
    for (p = s.p; p != NULL && p < s.end; p++) {
        h = (h ^ *p) * 1099511628211u;
    }
    return h;
}

static int span_eq(Span a, Span b) { return wire_span_cmp(a, b) == 0; }

static int intern_grow(State *st) {
    size_t n = st->n_slots ? st->n_slots * 2 : 1024, i, count = COUNT(st->text, Span);
    int32_t *slots = (int32_t *)calloc(n, sizeof *slots);
    if (slots == NULL) {
        PyErr_NoMemory();
        return FAIL;
    }
    for (i = 0; i < count; i++) {
        size_t at = (size_t)span_hash(AT(st->text, Span, i)) & (n - 1);
        while (slots[at]) {
            at = (at + 1) & (n - 1);
        }
        slots[at] = (int32_t)(i + 1);
    }
    free(st->slots);
    st->slots = slots;
    st->n_slots = n;
    return OK;
}

/* The index of ``s`` (validated UTF-8) in the strings table, added when new;
   ``text`` is its str when the caller has one (borrowed), else made here. */
static int intern(State *st, Span s, PyObject *text, int32_t *out) {
    size_t count = COUNT(st->text, Span), at;
    if (s.p == NULL) {
        s.p = s.end = (Ptr) "";
    }
    if (2 * (count + 1) > st->n_slots) {
        TRY(intern_grow(st));
    }
    at = (size_t)span_hash(s) & (st->n_slots - 1);
    while (st->slots[at]) {
        int32_t i = st->slots[at] - 1;
        if (span_eq(AT(st->text, Span, i), s)) {
            *out = i;
            return OK;
        }
        at = (at + 1) & (st->n_slots - 1);
    }
    if (count >= INT32_MAX - 1) {
        return DECLINE;
    }
    if (text != NULL) {
        Py_INCREF(text);
    } else {
        text = wire_text(s);
    }
    TRY(list_add(st->list[L_STRINGS], text));
    if (st->release && s.end > s.p) { /* the input under ``s`` may be given back */
        PyObject *copy = PyBytes_FromStringAndSize((const char *)s.p, s.end - s.p);
        if (copy == NULL || list_add(st->keep, copy) != OK) {
            return FAIL;
        }
        s.p = (Ptr)PyBytes_AsString(copy);
        s.end = s.p + PyBytes_Size(copy);
    }
    TRY(put_span(&st->text, s));
    st->slots[at] = (int32_t)(count + 1);
    *out = (int32_t)count;
    return OK;
}

/* ------------------------------------------------------------------ readers */

static int read_fixed64(Ptr *pp, Ptr end, uint32_t wire, uint64_t *out) {
    uint64_t v = 0;
    int i;
    if (wire != WIRE_FIXED64 || end - *pp < 8) {
        return DECLINE;
    }
    for (i = 7; i >= 0; i--) {
        v = (v << 8) | (*pp)[i];
    }
    *pp += 8;
    *out = v;
    return OK;
}

static int read_i64(Ptr *pp, Ptr end, uint32_t wire, int64_t *out) {
    uint64_t v;
    TRY(read_u64(pp, end, wire, &v));
    *out = wire_i64(v);
    return OK;
}

static int add_text(State *st, int list, Span s) { return list_add(st->list[list], wire_text(s)); }

/* XStat: the metadata id and the oneof member set last. */
static int parse_stat(Span m, Stat *s) {
    Ptr p = m.p;
    memset(s, 0, sizeof *s);
    while (p < m.end) {
        uint32_t number, wire;
        TRY(wire_tag(&p, m.end, &number, &wire));
        switch (number) {
        case 1:
            TRY(read_i64(&p, m.end, wire, &s->mid));
            break;
        case 2:
            TRY(read_fixed64(&p, m.end, wire, &s->raw));
            s->kind = KIND_DOUBLE;
            break;
        case 3:
        case 4:
        case 7:
            TRY(read_u64(&p, m.end, wire, &s->raw));
            s->kind = number == 3 ? KIND_UINT64 : (number == 4 ? KIND_INT64 : KIND_REF);
            break;
        case 5:
            TRY(read_str(&p, m.end, wire, &s->span));
            s->kind = KIND_STR;
            break;
        case 6:
        case 8:
            TRY(read_span(&p, m.end, wire, &s->span));
            s->kind = number == 6 ? KIND_BYTES : KIND_COMPRESSED;
            break;
        default:
            return DECLINE;
        }
    }
    return OK;
}

/* A map entry: key (int64, last wins) and value (a message, at most once). */
static int parse_entry(Span m, size_t order, Entry *e) {
    Ptr p = m.p;
    int seen = 0;
    memset(e, 0, sizeof *e);
    e->order = order;
    e->text = -1;
    while (p < m.end) {
        uint32_t number, wire;
        TRY(wire_tag(&p, m.end, &number, &wire));
        if (number == 1) {
            TRY(read_i64(&p, m.end, wire, &e->key));
        } else if (number == 2 && !seen) {
            TRY(read_span(&p, m.end, wire, &e->value));
            seen = 1;
        } else {
            return DECLINE;
        }
    }
    return OK;
}

static int entry_cmp(const void *a, const void *b) {
    const Entry *x = (const Entry *)a, *y = (const Entry *)b;
    if (x->key != y->key) {
        return x->key < y->key ? -1 : 1;
    }
    return x->order < y->order ? -1 : (x->order > y->order ? 1 : 0);
}

typedef int (*Check)(Span);

/* The entries of spans [range[0], range[1]) into ``out``, sorted by key, the
   last entry of each key kept; the values of the others only go through
   ``check`` (protobuf parses them before replacing them). */
static int sorted_entries(const WireBuf *spans, const size_t *range, Check check, WireBuf *out) {
    size_t i, n = 0, count;
    Entry e;
    out->len = 0;
    for (i = range[0]; i < range[1]; i++) {
        TRY(parse_entry(AT(*spans, Span, i), i, &e));
        TRY(wire_buf_put(out, &e, sizeof e));
    }
    count = COUNT(*out, Entry);
    if (count > 1) {
        Entry *all = (Entry *)out->data;
        qsort(all, count, sizeof *all, entry_cmp);
        for (i = 0; i < count; i++) {
            if (i + 1 < count && all[i + 1].key == all[i].key) {
                TRY(check(all[i].value));
                continue;
            }
            all[n++] = all[i];
        }
        out->len = n * sizeof(Entry);
    }
    return OK;
}

#define DENSE_MAX ((int64_t)1 << 20)

/* Fill ``dense`` for sorted ``entries`` when their keys are in [0, DENSE_MAX)
   and not too sparse; else leave it empty (n = 0). */
static int index_entries(const WireBuf *entries, Dense *dense) {
    size_t i, count = COUNT(*entries, Entry), n;
    const Entry *all = (const Entry *)entries->data;
    int32_t *rows;
    dense->n = 0;
    if (count == 0 || all[0].key < 0 || all[count - 1].key >= DENSE_MAX ||
        (size_t)all[count - 1].key > 8 * count + 1024) {
        return OK;
    }
    n = (size_t)all[count - 1].key + 1;
    rows = (int32_t *)realloc(dense->rows, n * sizeof *rows);
    if (rows == NULL) {
        PyErr_NoMemory();
        return FAIL;
    }
    memset(rows, 0, n * sizeof *rows);
    for (i = 0; i < count; i++) {
        rows[all[i].key] = (int32_t)(i + 1);
    }
    dense->rows = rows;
    dense->n = n;
    return OK;
}

static Entry *find_entry(const WireBuf *entries, const Dense *dense, int64_t key) {
    size_t lo = 0, hi = COUNT(*entries, Entry);
    Entry *all = (Entry *)entries->data;
    if (dense->n) {
        if (key < 0 || (uint64_t)key >= dense->n || dense->rows[key] == 0) {
            return NULL;
        }
        return &all[dense->rows[key] - 1];
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (all[mid].key == key) {
            return &all[mid];
        }
        if (all[mid].key < key) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return NULL;
}

/* XStatMetadata: its name (last wins); the other fields checked. */
static int parse_stat_meta(Span m, Span *name) {
    Ptr p = m.p;
    Span skip;
    name->p = name->end = NULL;
    while (p < m.end) {
        uint32_t number, wire;
        uint64_t v;
        TRY(wire_tag(&p, m.end, &number, &wire));
        if (number == 1) {
            TRY(read_u64(&p, m.end, wire, &v));
        } else if (number == 2) {
            TRY(read_str(&p, m.end, wire, name));
        } else if (number == 3) {
            TRY(read_str(&p, m.end, wire, &skip));
        } else {
            return DECLINE;
        }
    }
    return OK;
}

static int check_stat_meta(Span m) {
    Span name;
    return parse_stat_meta(m, &name);
}

/* Whether event stats named ``name`` are kept (see State.filter). */
static int kept_name(const State *st, Span name) {
    Py_ssize_t i;
    if (st->n_filter < 0) {
        return 1;
    }
    if (name.p == NULL || name.p == name.end) {
        return st->keep_unnamed;
    }
    for (i = 0; i < st->n_filter; i++) {
        if (span_eq(st->filter[i], name)) {
            return 1;
        }
    }
    return 0;
}

/* The current plane's stat metadata (State.sm), each value replaced by its
   name after checking it. */
static int load_stat_meta(State *st, const Plane *pl) {
    size_t i;
    TRY(sorted_entries(&st->sm_spans, pl->smeta, check_stat_meta, &st->sm));
    TRY(index_entries(&st->sm, &st->sm_dense));
    for (i = 0; i < COUNT(st->sm, Entry); i++) {
        Entry *e = &AT(st->sm, Entry, i);
        TRY(parse_stat_meta(e->value, &e->value));
        e->keep = kept_name(st, e->value);
    }
    return OK;
}

/* The interned name of stat metadata ``key`` ("" when the plane has none). */
static int stat_name(State *st, int64_t key, int32_t *out) {
    Entry *e = find_entry(&st->sm, &st->sm_dense, key);
    if (e == NULL) {
        *out = 0;
        return OK;
    }
    if (e->text < 0) {
        TRY(intern(st, e->value, NULL, &e->text));
    }
    *out = e->text;
    return OK;
}

static int gunzipped(State *st, Span raw, int32_t *out) {
    PyObject *packed, *text, *utf8;
    Span s;
    int rc;
    packed = PyBytes_FromStringAndSize((const char *)raw.p, raw.p ? raw.end - raw.p : 0);
    if (packed == NULL) {
        return FAIL;
    }
    text = PyObject_CallFunctionObjArgs(st->gunzip, packed, NULL);
    Py_DECREF(packed);
    if (text == NULL || !PyUnicode_Check(text)) {
        Py_XDECREF(text);
        if (text != NULL || PyErr_ExceptionMatches(PyExc_Exception)) {
            PyErr_Clear(); /* the pure path reports it */
            return DECLINE;
        }
        return FAIL;
    }
    utf8 = PyUnicode_AsUTF8String(text);
    if (utf8 == NULL || list_add(st->keep, utf8) != OK) {
        Py_DECREF(text);
        return FAIL;
    }
    s.p = (Ptr)PyBytes_AsString(utf8);
    s.end = s.p + PyBytes_Size(utf8);
    rc = intern(st, s, text, out);
    Py_DECREF(text);
    return rc;
}

/* One XStat row of table ``t`` (its first column). */
static int add_stat(State *st, int t, Span m) {
    Stat s;
    int32_t key, index;
    int64_t value = 0;
    TRY(parse_stat(m, &s));
    if (t == T_EVENT && st->n_filter >= 0) {
        Entry *e = find_entry(&st->sm, &st->sm_dense, s.mid);
        if (!(e != NULL ? e->keep : st->keep_unnamed)) {
            return OK;
        }
    }
    TRY(stat_name(st, s.mid, &key));
    switch (s.kind) {
    case KIND_DOUBLE:
    case KIND_UINT64:
    case KIND_INT64:
        value = wire_i64(s.raw);
        break;
    case KIND_STR:
        TRY(intern(st, s.span, NULL, &index));
        value = index;
        break;
    case KIND_REF:
        index = 0;
        if (s.raw <= (uint64_t)INT64_MAX) {
            TRY(stat_name(st, (int64_t)s.raw, &index));
        }
        value = index;
        break;
    case KIND_BYTES:
        value = PyList_Size(st->list[L_BLOBS]);
        TRY(list_add(st->list[L_BLOBS],
                     PyBytes_FromStringAndSize((const char *)s.span.p,
                                               s.span.p ? s.span.end - s.span.p : 0)));
        break;
    case KIND_COMPRESSED:
        TRY(gunzipped(st, s.span, &index));
        value = index;
        break;
    default:
        break;
    }
    TRY(col_i32(&st->col[t], key));
    TRY(col_i8(&st->col[t + 1], (int8_t)s.kind));
    return col_i64(&st->col[t + 2], value);
}

/* ------------------------------------------------------------------ first pass */

/* XLine's own fields (last wins); its events are only delimited here. */
static int scan_line(Line *ln) {
    Ptr p = ln->body.p;
    Span skip;
    while (p < ln->body.end) {
        uint32_t number, wire;
        TRY(wire_tag(&p, ln->body.end, &number, &wire));
        switch (number) {
        case 1:
            TRY(read_i64(&p, ln->body.end, wire, &ln->id));
            break;
        case 10:
            TRY(read_i64(&p, ln->body.end, wire, &ln->display_id));
            break;
        case 3:
            TRY(read_i64(&p, ln->body.end, wire, &ln->ts));
            break;
        case 9:
            TRY(read_i64(&p, ln->body.end, wire, &ln->dur));
            break;
        case 2:
            TRY(read_str(&p, ln->body.end, wire, &ln->name));
            break;
        case 11:
            TRY(read_str(&p, ln->body.end, wire, &ln->dname));
            break;
        case 4:
            TRY(read_span(&p, ln->body.end, wire, &skip));
            break;
        default:
            return DECLINE;
        }
    }
    return OK;
}

/* XPlane's fields: scalars (last wins) and the spans of its repeated fields. */
static int scan_plane(State *st, Span m, Plane *pl) {
    Ptr p = m.p;
    memset(pl, 0, sizeof *pl);
    pl->lines[0] = pl->lines[1] = COUNT(st->line_spans, Span);
    pl->emeta[0] = pl->emeta[1] = COUNT(st->em_spans, Span);
    pl->smeta[0] = pl->smeta[1] = COUNT(st->sm_spans, Span);
    pl->stats[0] = pl->stats[1] = COUNT(st->stat_spans, Span);
    while (p < m.end) {
        uint32_t number, wire;
        Span s;
        WireBuf *into;
        size_t *count;
        TRY(wire_tag(&p, m.end, &number, &wire));
        if (number == 1) {
            TRY(read_i64(&p, m.end, wire, &pl->id));
            continue;
        }
        if (number == 2) {
            TRY(read_str(&p, m.end, wire, &pl->name));
            continue;
        }
        switch (number) {
        case 3:
            into = &st->line_spans, count = &pl->lines[1];
            break;
        case 4:
            into = &st->em_spans, count = &pl->emeta[1];
            break;
        case 5:
            into = &st->sm_spans, count = &pl->smeta[1];
            break;
        case 6:
            into = &st->stat_spans, count = &pl->stats[1];
            break;
        default:
            return DECLINE;
        }
        TRY(read_span(&p, m.end, wire, &s));
        TRY(put_span(into, s));
        (*count)++;
    }
    return OK;
}

static int scan_space(State *st, Ptr p, Ptr end) {
    while (p < end) {
        uint32_t number, wire;
        Span s;
        TRY(wire_tag(&p, end, &number, &wire));
        if (number == 1) {
            TRY(read_span(&p, end, wire, &s));
            TRY(put_span(&st->planes, s));
        } else if (number >= 2 && number <= 4) {
            TRY(read_str(&p, end, wire, &s));
            TRY(add_text(st, number == 2 ? L_ERRORS : (number == 3 ? L_WARNINGS : L_HOSTS), s));
        } else {
            return DECLINE;
        }
    }
    return OK;
}

/* ------------------------------------------------------------------ time origin */

static int span_is(Span s, const char *text) {
    size_t n = strlen(text);
    return s.p != NULL && (size_t)(s.end - s.p) == n && memcmp(s.p, text, n) == 0;
}

/* profile_start_time of the first Task Environment plane that has one as an
   integer (0 when none). */
static int start_time(State *st, const Plane *planes, size_t n, int64_t *start) {
    size_t i, j;
    *start = 0;
    for (i = 0; i < n; i++) {
        if (!span_is(planes[i].name, "Task Environment")) {
            continue;
        }
        TRY(load_stat_meta(st, &planes[i]));
        for (j = planes[i].stats[0]; j < planes[i].stats[1]; j++) {
            Stat s;
            Entry *e;
            TRY(parse_stat(AT(st->stat_spans, Span, j), &s));
            e = find_entry(&st->sm, &st->sm_dense, s.mid);
            if (e == NULL || !span_is(e->value, "profile_start_time") ||
                (s.kind != KIND_UINT64 && s.kind != KIND_INT64)) {
                continue;
            }
            if (s.kind == KIND_UINT64 && s.raw > (uint64_t)INT64_MAX) {
                return DECLINE;
            }
            *start = wire_i64(s.raw);
            return OK;
        }
    }
    return OK;
}

/* Each line's start from the origin (ns), and the origin. */
static void line_starts(State *st, int64_t start, int64_t *origin) {
    size_t i, n = COUNT(st->lines, Line);
    Line *lines = (Line *)st->lines.data;
    int64_t low = 0;
    for (i = 0; i < n; i++) {
        if (i == 0 || lines[i].ts < low) {
            low = lines[i].ts;
        }
    }
    *origin = start ? start : low;
    for (i = 0; i < n; i++) {
        int64_t ts = lines[i].ts, base = start;
        if (start && ts < start) {
            lines[i].start = ts, lines[i].start_ok = 1;
            continue;
        }
        if (!start) {
            base = low;
        }
        /* ts >= base here: ts - base overflows only above INT64_MAX */
        lines[i].start_ok = base >= 0 || ts <= INT64_MAX + base;
        lines[i].start = lines[i].start_ok ? ts - base : 0;
    }
}

/* ------------------------------------------------------------------ second pass */

/* Give back the whole pages under ``s`` (decode_fd's buffer only): a line's
   bytes are read for the last time once its events are added. */
static void release_span(const State *st, Span s) {
#ifdef XPLANE_MMAP
    uintptr_t low, high;
    if (!st->release || s.p == NULL) {
        return;
    }
    low = ((uintptr_t)s.p + st->page - 1) & ~(uintptr_t)(st->page - 1);
    high = (uintptr_t)s.end & ~(uintptr_t)(st->page - 1);
    if (high > low) {
        (void)madvise((void *)low, high - low, MADV_DONTNEED);
    }
#else
    (void)st;
    (void)s;
#endif
}

static int add_event(State *st, Span m, int32_t row, const Line *ln) {
    Ptr p = m.p;
    int64_t mid = 0, offset = 0, occ = 0, dur = 0, at, start;
    int32_t meta = -1;
    Entry *e;
    at = (int64_t)COUNT(st->col[C_ES_VALUE], int64_t);
    while (p < m.end) {
        uint32_t number, wire;
        Span s;
        TRY(wire_tag(&p, m.end, &number, &wire));
        switch (number) {
        case 1:
            TRY(read_i64(&p, m.end, wire, &mid));
            break;
        case 2:
            TRY(read_i64(&p, m.end, wire, &offset));
            occ = 0;
            break;
        case 5:
            TRY(read_i64(&p, m.end, wire, &occ));
            offset = 0;
            break;
        case 3:
            TRY(read_i64(&p, m.end, wire, &dur));
            break;
        case 4:
            TRY(read_span(&p, m.end, wire, &s));
            TRY(add_stat(st, T_EVENT, s));
            break;
        default:
            return DECLINE;
        }
    }
    if (!ln->start_ok || ln->start > INT64_MAX / 1000 || ln->start < INT64_MIN / 1000) {
        return DECLINE;
    }
    start = ln->start * 1000;
    if ((offset > 0 && start > INT64_MAX - offset) || (offset < 0 && start < INT64_MIN - offset)) {
        return DECLINE;
    }
    e = find_entry(&st->em, &st->em_dense, mid);
    if (e != NULL) {
        meta = e->text;
    }
    if (occ != 0) {
        TRY(col_i32(&st->col[C_OCC_EVENT], (int32_t)COUNT(st->col[C_EVENT_LINE], int32_t)));
        TRY(col_i64(&st->col[C_OCC_COUNT], occ));
    }
    TRY(col_i32(&st->col[C_EVENT_LINE], row));
    TRY(col_i32(&st->col[C_EVENT_META], meta));
    TRY(col_i64(&st->col[C_EVENT_DUR], dur));
    TRY(col_i64(&st->col[C_EVENT_START], start + offset));
    return col_i64(&st->col[C_EVENT_STAT_AT], at);
}

static int add_line(State *st, const Line *ln, int32_t plane, int32_t row) {
    Ptr p = ln->body.p;
    TRY(col_i32(&st->col[C_LINE_PLANE], plane));
    TRY(col_i64(&st->col[C_LINE_ID], ln->id));
    TRY(col_i64(&st->col[C_LINE_DISPLAY_ID], ln->display_id));
    TRY(col_i64(&st->col[C_LINE_TS], ln->ts));
    TRY(col_i64(&st->col[C_LINE_DUR], ln->dur));
    TRY(col_i64(&st->col[C_LINE_EVENT_AT],
                     (int64_t)COUNT(st->col[C_EVENT_LINE], int32_t)));
    TRY(add_text(st, L_LINE_NAME, ln->name));
    TRY(add_text(st, L_LINE_DNAME, ln->dname));
    while (p < ln->body.end) {
        uint32_t number, wire;
        Span s;
        uint64_t v;
        TRY(wire_tag(&p, ln->body.end, &number, &wire));
        if (number == 4) {
            TRY(read_span(&p, ln->body.end, wire, &s));
            TRY(add_event(st, s, row, ln));
        } else if (wire == WIRE_VARINT) { /* checked by scan_line */
            TRY(wire_varint(&p, ln->body.end, &v));
        } else {
            TRY(read_span(&p, ln->body.end, wire, &s));
        }
    }
    release_span(st, ln->body);
    return OK;
}

/* XEventMetadata: name and display name (last wins), stats as rows. */
static int add_meta(State *st, Entry *e, int32_t plane) {
    Ptr p = e->value.p;
    Span name = {NULL, NULL}, dname = {NULL, NULL}, s;
    TRY(col_i32(&st->col[C_META_PLANE], plane));
    TRY(col_i64(&st->col[C_META_ID], e->key));
    TRY(col_i64(&st->col[C_META_STAT_AT], (int64_t)COUNT(st->col[C_MS_VALUE], int64_t)));
    while (p < e->value.end) {
        uint32_t number, wire;
        uint64_t v;
        TRY(wire_tag(&p, e->value.end, &number, &wire));
        switch (number) {
        case 1:
            TRY(read_u64(&p, e->value.end, wire, &v));
            break;
        case 2:
            TRY(read_str(&p, e->value.end, wire, &name));
            break;
        case 4:
            TRY(read_str(&p, e->value.end, wire, &dname));
            break;
        case 3:
            TRY(read_span(&p, e->value.end, wire, &s));
            break;
        case 5:
            TRY(read_span(&p, e->value.end, wire, &s));
            TRY(add_stat(st, T_META, s));
            break;
        case 6:
            TRY(wire_repeated_i64(&p, e->value.end, wire, NULL));
            break;
        default:
            return DECLINE;
        }
    }
    TRY(add_text(st, L_META_NAME, name));
    return add_text(st, L_META_DNAME, dname);
}

/* An XEventMetadata that a later map entry replaces: checked only. */
static int check_event_meta(Span m) {
    Ptr p = m.p;
    while (p < m.end) {
        uint32_t number, wire;
        uint64_t v;
        Span s;
        Stat stat;
        TRY(wire_tag(&p, m.end, &number, &wire));
        switch (number) {
        case 1:
            TRY(read_u64(&p, m.end, wire, &v));
            break;
        case 2:
        case 4:
            TRY(read_str(&p, m.end, wire, &s));
            break;
        case 3:
            TRY(read_span(&p, m.end, wire, &s));
            break;
        case 5:
            TRY(read_span(&p, m.end, wire, &s));
            TRY(parse_stat(s, &stat));
            break;
        case 6:
            TRY(wire_repeated_i64(&p, m.end, wire, NULL));
            break;
        default:
            return DECLINE;
        }
    }
    return OK;
}

static int add_plane(State *st, const Plane *pl, int32_t plane, int32_t *line_row) {
    size_t i;
    TRY(load_stat_meta(st, pl));
    for (i = 0; i < COUNT(st->sm, Entry); i++) {
        Entry *e = &AT(st->sm, Entry, i);
        TRY(col_i32(&st->col[C_SMETA_PLANE], plane));
        TRY(col_i64(&st->col[C_SMETA_ID], e->key));
        TRY(add_text(st, L_SMETA_NAME, e->value));
    }
    TRY(col_i64(&st->col[C_PLANE_ID], pl->id));
    TRY(add_text(st, L_PLANE_NAME, pl->name));
    TRY(col_i64(&st->col[C_PLANE_STAT_AT], (int64_t)COUNT(st->col[C_PS_VALUE], int64_t)));
    for (i = pl->stats[0]; i < pl->stats[1]; i++) {
        TRY(add_stat(st, T_PLANE, AT(st->stat_spans, Span, i)));
    }
    TRY(sorted_entries(&st->em_spans, pl->emeta, check_event_meta, &st->em));
    TRY(index_entries(&st->em, &st->em_dense));
    for (i = 0; i < COUNT(st->em, Entry); i++) {
        Entry *e = &AT(st->em, Entry, i);
        e->text = (int32_t)COUNT(st->col[C_META_ID], int64_t); /* its row */
        TRY(add_meta(st, e, plane));
    }
    for (i = pl->lines[0]; i < pl->lines[1]; i++) {
        TRY(add_line(st, &AT(st->lines, Line, i), plane, *line_row));
        (*line_row)++;
    }
    return OK;
}

/* ------------------------------------------------------------------ module */

static int decode_all(State *st, Ptr data, Ptr end, int64_t *origin, int64_t *start) {
    size_t i, n_planes, n_lines;
    int32_t line_row = 0, empty;
    Plane *planes;
    TRY(intern(st, (Span){NULL, NULL}, NULL, &empty));
    TRY(scan_space(st, data, end));
    n_planes = COUNT(st->planes, Span);
    if (n_planes >= INT32_MAX) {
        return DECLINE;
    }
    for (i = 0; i < n_planes; i++) {
        Plane pl;
        TRY(scan_plane(st, AT(st->planes, Span, i), &pl));
        TRY(wire_buf_put(&st->plane_rows, &pl, sizeof pl));
    }
    n_lines = COUNT(st->line_spans, Span);
    for (i = 0; i < n_lines; i++) {
        Line ln;
        memset(&ln, 0, sizeof ln);
        ln.body = AT(st->line_spans, Span, i);
        TRY(scan_line(&ln));
        TRY(wire_buf_put(&st->lines, &ln, sizeof ln));
    }
    planes = (Plane *)st->plane_rows.data;
    TRY(start_time(st, planes, n_planes, start));
    line_starts(st, *start, origin);
    for (i = 0; i < n_planes; i++) {
        TRY(add_plane(st, &planes[i], (int32_t)i, &line_row));
    }
    TRY(col_i64(&st->col[C_PLANE_STAT_AT], (int64_t)COUNT(st->col[C_PS_VALUE], int64_t)));
    TRY(col_i64(&st->col[C_LINE_EVENT_AT], (int64_t)COUNT(st->col[C_EVENT_LINE], int32_t)));
    TRY(col_i64(&st->col[C_EVENT_STAT_AT], (int64_t)COUNT(st->col[C_ES_VALUE], int64_t)));
    return col_i64(&st->col[C_META_STAT_AT], (int64_t)COUNT(st->col[C_MS_VALUE], int64_t));
}

static void state_free(State *st) {
    int i;
    for (i = 0; i < N_COLUMNS; i++) {
        Py_XDECREF(st->col[i].arr);
    }
    for (i = 0; i < N_LISTS; i++) {
        Py_XDECREF(st->list[i]);
    }
    Py_XDECREF(st->keep);
    Py_XDECREF(st->filter_bytes);
    free(st->filter);
    wire_buf_free(&st->planes);
    wire_buf_free(&st->plane_rows);
    wire_buf_free(&st->lines);
    wire_buf_free(&st->line_spans);
    wire_buf_free(&st->em_spans);
    wire_buf_free(&st->sm_spans);
    wire_buf_free(&st->stat_spans);
    wire_buf_free(&st->sm);
    wire_buf_free(&st->em);
    free(st->sm_dense.rows);
    free(st->em_dense.rows);
    wire_buf_free(&st->text);
    free(st->slots);
}

static PyObject *state_result(State *st, int64_t origin, int64_t start) {
    PyObject *out = PyTuple_New(N_LISTS + 2 + N_COLUMNS), *item;
    int i;
    if (out == NULL) {
        return NULL;
    }
    for (i = 0; i < N_LISTS; i++) {
        PyTuple_SetItem(out, i, st->list[i]);
        st->list[i] = NULL; /* now owned by the tuple */
    }
    item = PyLong_FromLongLong(origin);
    if (item == NULL) {
        Py_DECREF(out);
        return NULL;
    }
    PyTuple_SetItem(out, N_LISTS, item);
    PyTuple_SetItem(out, N_LISTS + 1, PyBool_FromLong(start != 0));
    for (i = 0; i < N_COLUMNS; i++) {
        item = col_take(&st->col[i]);
        if (item == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SetItem(out, N_LISTS + 2 + i, item);
    }
    return out;
}

/* The event stat filter of State from ``keep`` (None or a tuple of str). */
static int load_filter(State *st, PyObject *keep) {
    Py_ssize_t i, n;
    st->n_filter = -1;
    if (keep == Py_None) {
        return OK;
    }
    if (!PyTuple_Check(keep)) {
        PyErr_SetString(PyExc_TypeError, "decode() keep must be None or a tuple of str");
        return FAIL;
    }
    n = PyTuple_Size(keep);
    st->filter_bytes = PyList_New(0);
    st->filter = (Span *)calloc((size_t)n + 1, sizeof *st->filter);
    if (st->filter_bytes == NULL || st->filter == NULL) {
        if (st->filter == NULL) {
            PyErr_NoMemory();
        }
        return FAIL;
    }
    for (i = 0; i < n; i++) {
        PyObject *name = PyTuple_GetItem(keep, i), *utf8;
        char *text;
        Py_ssize_t size;
        if (name == NULL || !PyUnicode_Check(name)) {
            PyErr_SetString(PyExc_TypeError, "decode() keep must be None or a tuple of str");
            return FAIL;
        }
        utf8 = PyUnicode_AsUTF8String(name);
        if (utf8 == NULL || list_add(st->filter_bytes, utf8) != OK ||
            PyBytes_AsStringAndSize(utf8, &text, &size) != 0) {
            return FAIL;
        }
        if (size == 0) {
            st->keep_unnamed = 1;
        }
        st->filter[i].p = (Ptr)text;
        st->filter[i].end = (Ptr)text + size;
    }
    st->n_filter = n;
    return OK;
}

/* The columns of ``data[0:size]`` (None when declined; NULL on an error). */
static PyObject *decode_buffer(Ptr data, size_t size, PyObject *gunzip, PyObject *keep,
                               int release) {
    State st;
    PyObject *result = NULL;
    int64_t origin = 0, start = 0;
    int i, rc;
    if ((uint64_t)size >= (uint64_t)XPLANEDECODE_LIMIT) {
        Py_RETURN_NONE;
    }
    memset(&st, 0, sizeof st);
    st.gunzip = gunzip;
    st.release = release;
#ifdef XPLANE_MMAP
    st.page = (size_t)sysconf(_SC_PAGESIZE);
    if (st.page == 0 || (st.page & (st.page - 1)) != 0) {
        st.release = 0;
    }
#endif
    st.keep = PyList_New(0);
    rc = st.keep != NULL ? load_filter(&st, keep) : FAIL;
    for (i = 0; i < N_LISTS && rc == OK; i++) {
        st.list[i] = PyList_New(0);
        rc = st.list[i] != NULL ? OK : FAIL;
    }
    if (rc == OK) {
        rc = decode_all(&st, data, data + size, &origin, &start);
    }
    if (rc == OK) {
        result = state_result(&st, origin, start);
    } else if (rc == DECLINE) {
        result = Py_None;
        Py_INCREF(result);
    }
    state_free(&st);
    return result;
}

static PyObject *xplanedecode_decode(PyObject *module, PyObject *args) {
    PyObject *data, *gunzip, *keep = Py_None;
    char *bytes;
    Py_ssize_t size;
    (void)module;
    if (!PyArg_ParseTuple(args, "OO|O:decode", &data, &gunzip, &keep)) {
        return NULL;
    }
    if (!PyBytes_Check(data) || !PyCallable_Check(gunzip)) {
        PyErr_SetString(PyExc_TypeError, "decode() takes bytes and a callable");
        return NULL;
    }
    if (PyBytes_AsStringAndSize(data, &bytes, &size) != 0) {
        return NULL;
    }
    return decode_buffer((Ptr)bytes, (size_t)size, gunzip, keep, 0);
}

#ifdef XPLANE_FD
/* Memory for ``size`` bytes of input that can be given back page by page. */
static char *input_alloc(size_t size, int *mapped) {
#ifdef XPLANE_MMAP
    void *at = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (at != MAP_FAILED) {
        *mapped = 1;
        return (char *)at;
    }
#endif
    *mapped = 0;
    return (char *)malloc(size);
}

static void input_free(char *data, size_t size, int mapped) {
#ifdef XPLANE_MMAP
    if (mapped) {
        (void)munmap(data, size);
        return;
    }
#endif
    (void)size;
    (void)mapped;
    free(data);
}

/* Up to ``size`` bytes of ``fd`` into ``data``; the count read, -1 on an error
   (errno set, or a Python exception from a signal handler). */
static Py_ssize_t read_all(int fd, char *data, size_t size) {
    size_t got = 0;
    while (got < size) {
        Py_ssize_t n;
        size_t ask = size - got > ((size_t)1 << 30) ? ((size_t)1 << 30) : size - got;
        Py_BEGIN_ALLOW_THREADS
        n = (Py_ssize_t)read(fd, data + got, ask);
        Py_END_ALLOW_THREADS
        if (n < 0) {
            if (errno == EINTR && PyErr_CheckSignals() == 0) {
                continue;
            }
            return -1;
        }
        if (n == 0) {
            break;
        }
        got += (size_t)n;
    }
    return (Py_ssize_t)got;
}

static PyObject *xplanedecode_decode_fd(PyObject *module, PyObject *args) {
    PyObject *gunzip, *keep = Py_None, *result;
    int fd, mapped = 0;
    Py_ssize_t size, got;
    char *data;
    (void)module;
    if (!PyArg_ParseTuple(args, "inO|O:decode_fd", &fd, &size, &gunzip, &keep)) {
        return NULL;
    }
    if (size < 0 || !PyCallable_Check(gunzip)) {
        PyErr_SetString(PyExc_TypeError, "decode_fd() takes a descriptor, a size and a callable");
        return NULL;
    }
    if ((uint64_t)size >= (uint64_t)XPLANEDECODE_LIMIT) {
        Py_RETURN_NONE;
    }
    data = input_alloc(size ? (size_t)size : 1, &mapped);
    if (data == NULL) {
        return PyErr_NoMemory();
    }
    got = read_all(fd, data, (size_t)size);
    if (got < 0) {
        if (!PyErr_Occurred()) {
            PyErr_SetFromErrno(PyExc_OSError);
        }
        input_free(data, size ? (size_t)size : 1, mapped);
        return NULL;
    }
    result = decode_buffer((Ptr)data, (size_t)got, gunzip, keep, mapped);
    input_free(data, size ? (size_t)size : 1, mapped);
    return result;
}
#endif /* XPLANE_FD */

static PyMethodDef xplanedecode_methods[] = {
    {"decode", xplanedecode_decode, METH_VARARGS,
     "decode(data: bytes, gunzip: callable, keep: tuple | None = None) -> tuple | None\n\n"
     "An XSpace as raw columns, or None when the bytes are not in the plain\n"
     "subset this decoder reads (parse them with upb instead). keep: the names\n"
     "of the event stats to keep (None: all)."},
#ifdef XPLANE_FD
    {"decode_fd", xplanedecode_decode_fd, METH_VARARGS,
     "decode_fd(fd: int, size: int, gunzip: callable, keep: tuple | None = None)\n"
     "-> tuple | None\n\n"
     "decode() of the first size bytes of open file fd, read into memory that is\n"
     "given back line by line as the columns grow."},
#endif
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef xplanedecode_module = {
    PyModuleDef_HEAD_INIT,
    "_xplanedecode",
    "Native decoder of XSpace files (see tfprof_lite.proto.xplane_native).",
    -1,
    xplanedecode_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__xplanedecode(void) { return PyModule_Create(&xplanedecode_module); }
