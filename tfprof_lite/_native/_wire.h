/*
 * Protobuf wire-format readers and growable buffers for the native decoders
 * of tfprof_lite (see docs/native.md).
 *
 * Every reader takes untrusted bytes: it either succeeds within [p, end) or
 * returns WIRE_DECLINE, in which case the caller gives the input back to the
 * pure-Python path (which then parses it with upb and reports its own error).
 * Functions that allocate return WIRE_FAIL with a Python exception set.
 */
#ifndef TFPROF_LITE_WIRE_H
#define TFPROF_LITE_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define WIRE_OK 0
#define WIRE_DECLINE 1
#define WIRE_FAIL (-1) /* a Python exception is set */

#define WIRE_VARINT 0u
#define WIRE_LEN 2u

typedef const uint8_t *WirePtr;

/* A byte range [p, end); p == NULL means absent. */
typedef struct {
    WirePtr p;
    WirePtr end;
} WireSpan;

/* ------------------------------------------------------------------ buffers */

typedef struct {
    char *data;
    size_t len;
    size_t cap;
} WireBuf;

static inline int wire_buf_reserve(WireBuf *b, size_t n) {
    size_t need, cap;
    char *grown;
    if (n <= b->cap - b->len) {
        return WIRE_OK;
    }
    if (n > SIZE_MAX - b->len) {
        PyErr_NoMemory();
        return WIRE_FAIL;
    }
    need = b->len + n;
    cap = b->cap ? b->cap : 256;
    while (cap < need) {
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    }
    grown = (char *)realloc(b->data, cap);
    if (grown == NULL) {
        PyErr_NoMemory();
        return WIRE_FAIL;
    }
    b->data = grown;
    b->cap = cap;
    return WIRE_OK;
}

static inline int wire_buf_put(WireBuf *b, const void *src, size_t n) {
    if (wire_buf_reserve(b, n) != WIRE_OK) {
        return WIRE_FAIL;
    }
    if (n) {
        memcpy(b->data + b->len, src, n);
    }
    b->len += n;
    return WIRE_OK;
}

static inline void wire_buf_free(WireBuf *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

static inline int wire_put_i8(WireBuf *b, int8_t v) { return wire_buf_put(b, &v, sizeof v); }
static inline int wire_put_i32(WireBuf *b, int32_t v) { return wire_buf_put(b, &v, sizeof v); }
static inline int wire_put_i64(WireBuf *b, int64_t v) { return wire_buf_put(b, &v, sizeof v); }
static inline int wire_put_u64(WireBuf *b, uint64_t v) { return wire_buf_put(b, &v, sizeof v); }

/* The buffer's bytes as a new bytearray (NULL with an exception set). */
static inline PyObject *wire_buf_bytearray(const WireBuf *b) {
    static const char empty[1] = {0};
    return PyByteArray_FromStringAndSize(b->data ? b->data : empty, (Py_ssize_t)b->len);
}

/* Two's complement reinterpretations without implementation-defined casts. */
static inline int64_t wire_i64(uint64_t v) {
    int64_t out;
    memcpy(&out, &v, sizeof out);
    return out;
}

static inline int32_t wire_i32(uint64_t v) {
    uint32_t low = (uint32_t)(v & 0xFFFFFFFFu);
    int32_t out;
    memcpy(&out, &low, sizeof out);
    return out;
}

/* ------------------------------------------------------------------ readers */

/* A varint of at most 10 bytes whose 10th byte is 0 or 1. */
static inline int wire_varint(WirePtr *pp, WirePtr end, uint64_t *out) {
    WirePtr p = *pp;
    uint64_t value = 0;
    unsigned i;
    for (i = 0; i < 10; i++) {
        uint8_t byte;
        if (p >= end) {
            return WIRE_DECLINE;
        }
        byte = *p++;
        if (i == 9 && byte > 1) {
            return WIRE_DECLINE;
        }
        value |= (uint64_t)(byte & 0x7Fu) << (7u * i);
        if (!(byte & 0x80u)) {
            *pp = p;
            *out = value;
            return WIRE_OK;
        }
    }
    return WIRE_DECLINE;
}

/* A field key of at most 2 bytes; field number 0 declines. */
static inline int wire_tag(WirePtr *pp, WirePtr end, uint32_t *number, uint32_t *wire) {
    WirePtr p = *pp;
    uint32_t tag;
    if (p >= end) {
        return WIRE_DECLINE;
    }
    tag = *p++;
    if (tag & 0x80u) {
        uint32_t high;
        if (p >= end) {
            return WIRE_DECLINE;
        }
        high = *p++;
        if (high & 0x80u) {
            return WIRE_DECLINE;
        }
        tag = (tag & 0x7Fu) | (high << 7);
    }
    *number = tag >> 3;
    *wire = tag & 7u;
    if (*number == 0) {
        return WIRE_DECLINE;
    }
    *pp = p;
    return WIRE_OK;
}

/* A length-delimited value: its span, the reader moved past it. */
static inline int wire_len(WirePtr *pp, WirePtr end, WireSpan *value) {
    WirePtr p = *pp;
    uint64_t size;
    if (wire_varint(&p, end, &size) != WIRE_OK || p - *pp > 5) {
        return WIRE_DECLINE;
    }
    if (size > (uint64_t)(end - p)) {
        return WIRE_DECLINE;
    }
    value->p = p;
    value->end = p + size;
    *pp = p + size;
    return WIRE_OK;
}

/* Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF. */
static inline int wire_utf8_valid(WirePtr p, WirePtr end) {
    while (p < end) {
        uint64_t chunk;
        if (end - p >= 8) { /* eight ASCII bytes at a time */
            memcpy(&chunk, p, sizeof chunk);
            if (!(chunk & 0x8080808080808080u)) {
                p += 8;
                continue;
            }
        }
        uint8_t c = *p;
        uint8_t lo = 0x80u, hi = 0xBFu;
        if (c < 0x80u) {
            p++;
            continue;
        }
        if (c >= 0xC2u && c <= 0xDFu) {
            if (end - p < 2 || (p[1] & 0xC0u) != 0x80u) {
                return 0;
            }
            p += 2;
        } else if (c >= 0xE0u && c <= 0xEFu) {
            lo = c == 0xE0u ? 0xA0u : 0x80u;
            hi = c == 0xEDu ? 0x9Fu : 0xBFu;
            if (end - p < 3 || p[1] < lo || p[1] > hi || (p[2] & 0xC0u) != 0x80u) {
                return 0;
            }
            p += 3;
        } else if (c >= 0xF0u && c <= 0xF4u) {
            lo = c == 0xF0u ? 0x90u : 0x80u;
            hi = c == 0xF4u ? 0x8Fu : 0xBFu;
            if (end - p < 4 || p[1] < lo || p[1] > hi || (p[2] & 0xC0u) != 0x80u ||
                (p[3] & 0xC0u) != 0x80u) {
                return 0;
            }
            p += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

/* A string field: a length-delimited value holding valid UTF-8. */
static inline int wire_string(WirePtr *pp, WirePtr end, WireSpan *value) {
    if (wire_len(pp, end, value) != WIRE_OK || !wire_utf8_valid(value->p, value->end)) {
        return WIRE_DECLINE;
    }
    return WIRE_OK;
}

/* A str of a validated span (an absent span is ""); NULL with an exception set. */
static inline PyObject *wire_text(WireSpan s) {
    static const char empty[1] = {0};
    if (s.p == NULL) {
        return PyUnicode_FromStringAndSize(empty, 0);
    }
    return PyUnicode_DecodeUTF8((const char *)s.p, (Py_ssize_t)(s.end - s.p), "strict");
}

/* Compare two spans as byte strings (an absent span is empty). */
static inline int wire_span_cmp(WireSpan a, WireSpan b) {
    size_t la = a.p ? (size_t)(a.end - a.p) : 0;
    size_t lb = b.p ? (size_t)(b.end - b.p) : 0;
    size_t n = la < lb ? la : lb;
    int c = n ? memcmp(a.p, b.p, n) : 0;
    if (c != 0) {
        return c;
    }
    return la < lb ? -1 : (la > lb ? 1 : 0);
}

/*
 * One element or a packed run of a repeated int64 field, each value added to
 * ``out`` as int64 (``out`` may be NULL to only validate).
 */
static inline int wire_repeated_i64(WirePtr *pp, WirePtr end, uint32_t wire, WireBuf *out) {
    uint64_t v;
    if (wire == WIRE_VARINT) {
        if (wire_varint(pp, end, &v) != WIRE_OK) {
            return WIRE_DECLINE;
        }
        return out ? wire_put_i64(out, wire_i64(v)) : WIRE_OK;
    }
    if (wire == WIRE_LEN) {
        WireSpan run;
        WirePtr p;
        if (wire_len(pp, end, &run) != WIRE_OK) {
            return WIRE_DECLINE;
        }
        p = run.p;
        while (p < run.end) {
            if (wire_varint(&p, run.end, &v) != WIRE_OK) {
                return WIRE_DECLINE;
            }
            if (out && wire_put_i64(out, wire_i64(v)) != WIRE_OK) {
                return WIRE_FAIL;
            }
        }
        return WIRE_OK;
    }
    return WIRE_DECLINE;
}

/* ------------------------------------------------------------------ field readers */

/* Return the status of ``expr`` from the enclosing function unless it is OK. */
#define WIRE_TRY(expr)                                                                             \
    do {                                                                                           \
        int wire_rc_ = (expr);                                                                     \
        if (wire_rc_ != WIRE_OK) {                                                                 \
            return wire_rc_;                                                                       \
        }                                                                                          \
    } while (0)

/* A varint field (another wire type declines). */
static inline int wire_read_u64(WirePtr *pp, WirePtr end, uint32_t wire, uint64_t *out) {
    if (wire != WIRE_VARINT) {
        return WIRE_DECLINE;
    }
    return wire_varint(pp, end, out);
}

/* A length-delimited field (another wire type declines). */
static inline int wire_read_span(WirePtr *pp, WirePtr end, uint32_t wire, WireSpan *out) {
    if (wire != WIRE_LEN) {
        return WIRE_DECLINE;
    }
    return wire_len(pp, end, out);
}

/* A string field: length-delimited, valid UTF-8. */
static inline int wire_read_str(WirePtr *pp, WirePtr end, uint32_t wire, WireSpan *out) {
    if (wire != WIRE_LEN) {
        return WIRE_DECLINE;
    }
    return wire_string(pp, end, out);
}

/* Append a new reference to ``list`` (consumes ``item``; NULL is a failure). */
static inline int wire_list_add(PyObject *list, PyObject *item) {
    int rc;
    if (item == NULL) {
        return WIRE_FAIL;
    }
    rc = PyList_Append(list, item);
    Py_DECREF(item);
    return rc == 0 ? WIRE_OK : WIRE_FAIL;
}

/* d[key] = value, consuming both new references (NULL is a failure). */
static inline int wire_dict_put(PyObject *d, PyObject *key, PyObject *value) {
    int rc = -1;
    if (key != NULL && value != NULL) {
        rc = PyDict_SetItem(d, key, value);
    }
    Py_XDECREF(key);
    Py_XDECREF(value);
    return rc == 0 ? WIRE_OK : WIRE_FAIL;
}

/* Stop the cyclic garbage collector from tracking ``o``, a list, set or dict
   the decoder filled with ints, strings and untracked lists only (dims, op
   types, output shapes). Such a container cannot be part of a reference
   cycle; the model keeps tens of thousands of them, and every collection in
   the user's process would walk them. CPython tracks a dict again when a
   container is put into it later. */
static inline void wire_untrack(PyObject *o) {
    if (o != NULL) {
        PyObject_GC_UnTrack(o);
    }
}

#endif /* TFPROF_LITE_WIRE_H */
