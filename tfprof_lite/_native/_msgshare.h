/*
 * What the table-driven decoder of _msgtable.h keeps from one call to the
 * next (MtKept): the default tuple of each class and item of each field,
 * made for one tuple of classes; the scratch rows of repeated integers; and
 * two tables of values shared by equal bytes (MtTable):
 *
 * - ``call``: this call's strs and bytes of repeated values (opcodes, op
 *   names, file names, backend configs), keyed by spans of the input. Its
 *   entries carry a mark, bumped when the call ends, so that the next call
 *   starts with it empty without clearing it; its values are released then.
 * - ``lasting``: the tuples of messages marked shared (shapes), keyed by
 *   copies of their bytes and kept across calls (programs share most of their
 *   shapes), until MT_LASTING values are kept or the classes change.
 *
 * Scratch larger than MT_KEEP_BYTES and a call table grown past
 * MT_KEEP_ENTRIES are released when a call ends.
 */
#ifndef TFPROF_LITE_MSGSHARE_H
#define TFPROF_LITE_MSGSHARE_H

#include "_tuples.h"

#define MT_MAX_FIELDS 24 /* fields of one message */
#define MT_MAX_INTS 8    /* repeated integer fields of one message */
#define MT_MAX_DEPTH 24  /* nesting levels (the outermost message is 0) */
#define MT_MAX_CLASSES 32
#define MT_KEEP_BYTES (1u << 20)
#define MT_KEEP_ENTRIES 4096u
#define MT_LASTING 8192u

typedef struct {
    uint64_t hash;
    const void *kind; /* what the bytes are (a message table, or texts) */
    Span key;
    PyObject *value; /* held by MtTable.values */
    uint32_t mark;   /* the table's mark when stored: empty for other marks */
    int depth;       /* the nesting level it was decoded at */
} MtEntry;

typedef struct {
    MtEntry *entries; /* open addressing, ``cap`` a power of two */
    size_t cap;
    uint32_t mark;
    int owned;         /* keys are copies (malloc), freed with the entries */
    PyObject **values; /* the values stored since the last clear (new references) */
    size_t used, room;
} MtTable;

typedef struct {
    PyObject *classes; /* the tuple of classes the defaults were made with */
    PyObject *msg[MT_MAX_CLASSES];
    PyObject *item[MT_MAX_CLASSES][MT_MAX_FIELDS];
    WireBuf ints[MT_MAX_DEPTH][MT_MAX_INTS];
    MtTable call, lasting;
} MtKept;

/* Empty ``t``: its values released (``all``: its memory too). */
static inline void mt_table_clear(MtTable *t, int all) {
    size_t i;
    for (i = 0; t->owned && i < t->cap; i++) {
        if (t->entries[i].mark == t->mark) {
            free((void *)(uintptr_t)t->entries[i].key.p);
        }
    }
    for (i = 0; i < t->used; i++) {
        Py_DECREF(t->values[i]);
    }
    t->used = 0;
    if (++t->mark == 0) { /* wrapped: clear the marks */
        if (t->entries != NULL) {
            memset(t->entries, 0, t->cap * sizeof(MtEntry));
        }
        t->mark = 1;
    }
    if (all || t->cap > MT_KEEP_ENTRIES) {
        free(t->entries);
        free(t->values);
        t->entries = NULL;
        t->values = NULL;
        t->cap = t->room = 0;
    }
}

/* Forget the defaults and the lasting values (when the classes change). */
static inline void mt_defaults_clear(MtKept *k) {
    size_t i, j;
    for (i = 0; i < MT_MAX_CLASSES; i++) {
        Py_CLEAR(k->msg[i]);
        for (j = 0; j < MT_MAX_FIELDS; j++) {
            Py_CLEAR(k->item[i][j]);
        }
    }
    mt_table_clear(&k->lasting, 0);
    Py_CLEAR(k->classes);
}

/* A new call. */
static inline void mt_begin(MtKept *k) {
    k->lasting.owned = 1;
    if (k->call.mark == 0) {
        k->call.mark = 1;
    }
    if (k->lasting.mark == 0) {
        k->lasting.mark = 1;
    }
}

/* The end of a call (``all``: release everything, the defaults included). */
static inline void mt_end(MtKept *k, int all) {
    size_t i, j;
    mt_table_clear(&k->call, all);
    for (i = 0; i < MT_MAX_DEPTH; i++) {
        for (j = 0; j < MT_MAX_INTS; j++) {
            if (k->ints[i][j].cap > (all ? 0 : MT_KEEP_BYTES)) {
                wire_buf_free(&k->ints[i][j]);
            }
        }
    }
    if (all) {
        mt_defaults_clear(k);
        mt_table_clear(&k->lasting, 1);
    } else if (k->lasting.used >= MT_LASTING) {
        mt_table_clear(&k->lasting, 1);
    }
}

static inline uint64_t mt_hash(Span s) {
    uint64_t h = (uint64_t)(s.end - s.p) * 0x9E3779B97F4A7C15u, w;
    Ptr p = s.p;
    for (; s.end - p >= 8; p += 8) {
        memcpy(&w, p, sizeof w);
        h = (h ^ w) * 0xFF51AFD7ED558CCDu;
        h ^= h >> 32;
    }
    if (p < s.end) {
        w = 0;
        memcpy(&w, p, (size_t)(s.end - p));
        h = (h ^ w) * 0xC4CEB9FE1A85EC53u;
    }
    return h ^ (h >> 29);
}

/* The entry of ``key`` in ``entries``, or the empty one where it would go. */
static inline MtEntry *mt_slot(MtEntry *entries, size_t cap, uint32_t mark, const void *kind,
                               Span key, uint64_t h) {
    size_t i = (size_t)h & (cap - 1), n = (size_t)(key.end - key.p);
    while (entries[i].mark == mark) {
        MtEntry *e = &entries[i];
        if (e->hash == h && e->kind == kind && (size_t)(e->key.end - e->key.p) == n &&
            memcmp(e->key.p, key.p, n) == 0) {
            break;
        }
        i = (i + 1) & (cap - 1);
    }
    return &entries[i];
}

/* The value stored in ``t`` for ``key`` (borrowed), or NULL; only one
   decoded at ``depth`` or deeper, whose messages were all within the nesting
   limit there too. */
static inline PyObject *mt_find(MtTable *t, const void *kind, Span key, uint64_t h, int depth) {
    MtEntry *e;
    if (t->cap == 0) {
        return NULL;
    }
    e = mt_slot(t->entries, t->cap, t->mark, kind, key, h);
    return e->mark == t->mark && e->depth >= depth ? e->value : NULL;
}

/* Make room in ``t`` for one more value. */
static inline int mt_grow(MtTable *t) {
    size_t i;
    if (t->used == t->room) {
        size_t room = t->room ? t->room * 2 : 256;
        PyObject **values = (PyObject **)realloc(t->values, room * sizeof(PyObject *));
        if (values == NULL) {
            PyErr_NoMemory();
            return FAIL;
        }
        t->values = values;
        t->room = room;
    }
    if ((t->used + 1) * 2 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 512;
        MtEntry *entries = (MtEntry *)calloc(cap, sizeof(MtEntry));
        if (entries == NULL) {
            PyErr_NoMemory();
            return FAIL;
        }
        for (i = 0; i < t->cap; i++) {
            MtEntry *old = &t->entries[i];
            if (old->mark == t->mark) {
                *mt_slot(entries, cap, t->mark, old->kind, old->key, old->hash) = *old;
            }
        }
        free(t->entries);
        t->entries = entries;
        t->cap = cap;
    }
    return OK;
}

/* Store ``value`` (a new reference taken) in ``t`` for ``key``, decoded at
   ``depth`` (a key stored already keeps its value). */
static inline int mt_remember(MtTable *t, const void *kind, Span key, uint64_t h, int depth,
                              PyObject *value) {
    MtEntry *e;
    size_t n = (size_t)(key.end - key.p);
    TRY(mt_grow(t));
    if (mt_slot(t->entries, t->cap, t->mark, kind, key, h)->mark == t->mark) {
        return OK;
    }
    if (t->owned) {
        uint8_t *copy = (uint8_t *)malloc(n ? n : 1);
        if (copy == NULL) {
            PyErr_NoMemory();
            return FAIL;
        }
        memcpy(copy, key.p, n);
        key.p = copy;
        key.end = copy + n;
    }
    e = mt_slot(t->entries, t->cap, t->mark, kind, key, h);
    e->hash = h;
    e->kind = kind;
    e->key = key;
    e->value = value;
    e->mark = t->mark;
    e->depth = depth;
    Py_INCREF(value);
    t->values[t->used++] = value;
    return OK;
}

/* The str (``bytes`` 0) or bytes object of a span (validated UTF-8 for a str),
   one object per distinct value in a call (for the fields whose values repeat:
   opcodes, op names, file names, backend configs); NULL on failure. */
static const char mt_text_kind = 0, mt_bytes_kind = 0;

static inline PyObject *mt_shared(MtKept *k, Span s, int bytes) {
    static const char empty[1] = {0};
    const void *kind = bytes ? &mt_bytes_kind : &mt_text_kind;
    uint64_t h;
    PyObject *found;
    if (s.p == NULL || s.p == s.end) {
        return bytes ? PyBytes_FromStringAndSize(empty, 0) : wire_text(s);
    }
    h = mt_hash(s);
    found = mt_find(&k->call, kind, s, h, 0);
    if (found != NULL) {
        Py_INCREF(found);
        return found;
    }
    found = bytes ? PyBytes_FromStringAndSize((const char *)s.p, (Py_ssize_t)(s.end - s.p))
                  : wire_text(s);
    if (found != NULL && mt_remember(&k->call, kind, s, h, 0, found) != OK) {
        Py_CLEAR(found);
    }
    return found;
}

#endif /* TFPROF_LITE_MSGSHARE_H */
