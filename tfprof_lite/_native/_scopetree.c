/*
 * Native builder of the scope view's tree (module tfprof_lite._native._scopetree).
 * See docs/native.md; tfprof_lite.views.scope keeps the pure-Python path that
 * gives the same tree.
 *
 * scope_tree(names) -> tuple | None
 *
 *   names: list of str, the graph's node names (node id = position).
 *
 * The tree holds every name and every ``/``-prefix of a name that is not a
 * name itself (a placeholder parent; the empty prefix only when a name starts
 * with ``/``), in pre-order with children in name order: the order of the
 * names' UTF-8 bytes with ``/`` read as the lowest byte. Returned as
 * (names in tree order: list of str, node ids: int64 bytes, -1 for a
 * placeholder, parents: int64 bytes, -1 at the top level, subtree ends: int64
 * bytes, one past each entry's last descendant).
 *
 * None (declined: the caller runs its own path) when ``names`` is not a list of
 * str, a name cannot be encoded as UTF-8 or holds a NUL character, or a name
 * is repeated.
 */

#define PY_SSIZE_T_CLEAN
#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x03090000
#endif
#include <Python.h>

#include "_wire.h"

typedef struct {
    const char *key; /* the name's bytes with '/' as NUL, in the arena */
    uint32_t len;
    uint32_t depth;  /* number of '/' */
    Py_ssize_t nid;  /* position in names, -1 for a placeholder */
} Entry;

typedef struct {
    size_t entry;  /* the name it is a prefix of */
    uint32_t len;
    uint32_t depth;
    uint64_t hash;
} Prefix;

typedef struct {
    Entry *entries;
    size_t n;
    WireBuf prefixes; /* Prefix records */
    uint64_t *hashes; /* of the names */
    size_t *slots;    /* hash table of entry index + 1, 0 when free */
    size_t mask;
    WireBuf arena;     /* every name's bytes, '/' as NUL */
    uint32_t deepest; /* the largest depth */
} Tree;

static void tree_free(Tree *t) {
    free(t->entries);
    wire_buf_free(&t->prefixes);
    free(t->hashes);
    free(t->slots);
    wire_buf_free(&t->arena);
}

static size_t prefix_count(const Tree *t) { return t->prefixes.len / sizeof(Prefix); }

/* One step of the running hash of a key (a rotate and xor: one pass over the
 * bytes gives every prefix's hash); mix() spreads it before use. */
static inline uint64_t step(uint64_t h, uint8_t byte) { return ((h << 7) | (h >> 57)) ^ byte; }

static inline uint64_t mix(uint64_t h, size_t len) {
    h ^= (uint64_t)len * 0x9E3779B97F4A7C15ULL;
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDULL;
    h ^= h >> 33;
    h *= 0xC4CEB9FE1A85EC53ULL;
    h ^= h >> 33;
    return h;
}

/* The entry with key (key, len) and mixed hash, or -1 when absent; *slot_out
 * is where it is or would go. */
static Py_ssize_t find(const Tree *t, const char *key, size_t len, uint64_t hash,
                       size_t *slot_out) {
    size_t slot = (size_t)hash & t->mask;
    while (t->slots[slot] != 0) {
        const Entry *e = &t->entries[t->slots[slot] - 1];
        if (e->len == len && (len == 0 || memcmp(e->key, key, len) == 0)) {
            *slot_out = slot;
            return (Py_ssize_t)(t->slots[slot] - 1);
        }
        slot = (slot + 1) & t->mask;
    }
    *slot_out = slot;
    return -1;
}

/* Copies name i's UTF-8 bytes to the arena with '/' as NUL, hashing as it goes
 * and noting each '/'-prefix; WIRE_DECLINE or WIRE_FAIL (an exception set). */
static int load_name(Tree *t, size_t i, const char *data, size_t n) {
    uint64_t h = 0;
    uint32_t depth = 0;
    size_t k;
    char *out;
    if (n > UINT32_MAX || memchr(data, 0, n) != NULL) {
        return WIRE_DECLINE;
    }
    if (wire_buf_reserve(&t->arena, n) != WIRE_OK) {
        return WIRE_FAIL;
    }
    out = t->arena.data + t->arena.len;
    for (k = 0; k < n; k++) {
        char c = data[k];
        if (c == '/') {
            Prefix p;
            p.entry = i;
            p.len = (uint32_t)k;
            p.depth = depth++;
            p.hash = mix(h, k);
            if (wire_buf_put(&t->prefixes, &p, sizeof p) != WIRE_OK) {
                return WIRE_FAIL;
            }
            c = 0;
        }
        out[k] = c;
        h = step(h, (uint8_t)c);
    }
    t->entries[i].key = NULL; /* the arena may still move: offset in nid for now */
    t->entries[i].nid = (Py_ssize_t)t->arena.len;
    t->entries[i].len = (uint32_t)n;
    t->entries[i].depth = depth;
    t->hashes[i] = mix(h, n);
    t->arena.len += n;
    if (depth > t->deepest) {
        t->deepest = depth;
    }
    return WIRE_OK;
}

static int load_names(Tree *t, PyObject *names, size_t count) {
    size_t i;
    t->entries = malloc(sizeof(Entry) * (count > 0 ? count : 1));
    t->hashes = malloc(sizeof(uint64_t) * (count > 0 ? count : 1));
    if (t->entries == NULL || t->hashes == NULL) {
        PyErr_NoMemory();
        return WIRE_FAIL;
    }
    for (i = 0; i < count; i++) {
        PyObject *name = PyList_GetItem(names, (Py_ssize_t)i), *utf8;
        char *data;
        Py_ssize_t n;
        int rc;
        if (name == NULL || !PyUnicode_Check(name)) {
            PyErr_Clear();
            return WIRE_DECLINE;
        }
        utf8 = PyUnicode_AsUTF8String(name);
        if (utf8 == NULL || PyBytes_AsStringAndSize(utf8, &data, &n) < 0) {
            Py_XDECREF(utf8);
            PyErr_Clear();
            return WIRE_DECLINE;
        }
        rc = load_name(t, i, data, (size_t)n);
        Py_DECREF(utf8);
        if (rc != WIRE_OK) {
            return rc;
        }
    }
    return WIRE_OK;
}

/* Fills the hash table with the names, then adds the prefixes that are not
 * names as placeholders; WIRE_DECLINE for a repeated name, WIRE_FAIL. */
static int index_entries(Tree *t, size_t count) {
    size_t want = 16, i, slot, prefixes = prefix_count(t);
    Entry *grown;
    while (want < 2 * (count + prefixes + 1)) {
        want *= 2;
    }
    t->slots = calloc(want, sizeof(size_t));
    grown = realloc(t->entries, sizeof(Entry) * (count + prefixes + 1));
    if (grown != NULL) {
        t->entries = grown;
    }
    if (t->slots == NULL || grown == NULL) {
        PyErr_NoMemory();
        return WIRE_FAIL;
    }
    t->mask = want - 1;
    for (i = 0; i < count; i++) {
        Entry *e = &t->entries[i];
        e->key = (t->arena.data ? t->arena.data : "") + (size_t)e->nid;
        e->nid = (Py_ssize_t)i;
        if (find(t, e->key, e->len, t->hashes[i], &slot) >= 0) {
            return WIRE_DECLINE;
        }
        t->slots[slot] = i + 1;
    }
    t->n = count;
    for (i = 0; i < prefixes; i++) {
        const Prefix *p = (const Prefix *)(const void *)t->prefixes.data + i;
        const char *key = t->entries[p->entry].key;
        if (find(t, key, p->len, p->hash, &slot) < 0) {
            Entry *e = &t->entries[t->n];
            e->key = key;
            e->len = p->len;
            e->depth = p->depth;
            e->nid = -1;
            t->slots[slot] = ++t->n;
        }
    }
    return WIRE_OK;
}

static int by_key(const void *a, const void *b) {
    const Entry *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = n ? memcmp(x->key, y->key, n) : 0;
    if (c != 0) {
        return c;
    }
    return x->len < y->len ? -1 : (x->len > y->len ? 1 : 0);
}

/* The names in tree order (original objects for names, new ones for
 * placeholders); NULL with an exception set on failure. */
static PyObject *ordered_names(const Tree *t, PyObject *names) {
    PyObject *out = PyList_New((Py_ssize_t)t->n);
    size_t i;
    WireBuf text;
    memset(&text, 0, sizeof text);
    for (i = 0; out != NULL && i < t->n; i++) {
        const Entry *e = &t->entries[i];
        PyObject *item = NULL;
        if (e->nid >= 0) {
            item = PyList_GetItem(names, e->nid);
            Py_XINCREF(item);
        } else if (wire_buf_reserve(&text, e->len) == WIRE_OK) {
            size_t k;
            for (k = 0; k < e->len; k++) {
                text.data[k] = e->key[k] == 0 ? '/' : e->key[k];
            }
            item = PyUnicode_DecodeUTF8(e->len ? text.data : "", (Py_ssize_t)e->len, "strict");
        }
        if (item == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyList_SetItem(out, (Py_ssize_t)i, item);
    }
    wire_buf_free(&text);
    return out;
}

/* Node ids, parents and subtree ends of the sorted entries, as int64 columns. */
static int columns(const Tree *t, int64_t *nid, int64_t *parent, int64_t *end) {
    size_t i;
    int64_t *last = malloc(sizeof(int64_t) * ((size_t)t->deepest + 1)); /* per depth */
    if (last == NULL) {
        return WIRE_FAIL;
    }
    for (i = 0; i <= t->deepest; i++) {
        last[i] = -1; /* every depth is set before it is read: a prefix sorts first */
    }
    for (i = 0; i < t->n; i++) {
        const Entry *e = &t->entries[i];
        nid[i] = (int64_t)e->nid;
        parent[i] = e->depth == 0 ? -1 : last[e->depth - 1];
        last[e->depth] = (int64_t)i;
        end[i] = (int64_t)i + 1;
    }
    for (i = t->n; i-- > 0;) {
        if (parent[i] >= 0 && end[i] > end[parent[i]]) {
            end[parent[i]] = end[i];
        }
    }
    free(last);
    return WIRE_OK;
}

static PyObject *column_bytes(size_t n, int64_t **data) {
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * sizeof(int64_t)));
    *data = out == NULL ? NULL : (int64_t *)(void *)PyBytes_AsString(out);
    return out;
}

static PyObject *finish(Tree *t, PyObject *names) {
    int64_t *nid, *parent, *end;
    PyObject *order, *a, *b, *c, *out = NULL;
    qsort(t->entries, t->n, sizeof(Entry), by_key);
    order = ordered_names(t, names);
    a = column_bytes(t->n, &nid);
    b = column_bytes(t->n, &parent);
    c = column_bytes(t->n, &end);
    if (order != NULL && a != NULL && b != NULL && c != NULL) {
        if (columns(t, nid, parent, end) == WIRE_OK) {
            out = PyTuple_Pack(4, order, a, b, c);
        } else {
            PyErr_NoMemory();
        }
    }
    Py_XDECREF(order);
    Py_XDECREF(a);
    Py_XDECREF(b);
    Py_XDECREF(c);
    return out;
}

static PyObject *scopetree_scope_tree(PyObject *self, PyObject *args) {
    PyObject *names, *out = NULL;
    size_t count;
    int rc;
    Tree t;
    (void)self;
    memset(&t, 0, sizeof t);
    if (!PyArg_ParseTuple(args, "O", &names)) {
        return NULL;
    }
    if (!PyList_Check(names)) {
        Py_RETURN_NONE;
    }
    count = (size_t)PyList_Size(names);
    rc = load_names(&t, names, count);
    if (rc == WIRE_OK) {
        rc = index_entries(&t, count);
    }
    if (rc == WIRE_OK) {
        out = finish(&t, names);
    } else if (rc == WIRE_DECLINE) {
        out = Py_None;
        Py_INCREF(out);
    }
    tree_free(&t);
    return out;
}

static PyMethodDef scopetree_methods[] = {
    {"scope_tree", scopetree_scope_tree, METH_VARARGS,
     "scope_tree(names) -> tuple | None\n\n"
     "The scope view's tree of the node names: (names in pre-order, node ids,\n"
     "parents, subtree ends), the last three as int64 bytes; None when declined\n"
     "(see tfprof_lite.views.scope)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef scopetree_module = {
    PyModuleDef_HEAD_INIT,
    "_scopetree",
    "Native builder of the scope view's tree (see tfprof_lite.views.scope).",
    -1,
    scopetree_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__scopetree(void) { return PyModule_Create(&scopetree_module); }
