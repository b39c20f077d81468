/*
 * Native decoder of a RunMetadata's step statistics (module
 * tfprof_lite._native._stepdecode). See docs/native.md and
 * tfprof_lite/proto/steps.py, which turns its result into StepColumns.
 *
 * decode(data: bytes) -> tuple | None
 *
 * The input is untrusted. The decoder accepts only a plain subset of the
 * protobuf wire format that the upb parser reads in exactly one way, and
 * returns None ("declined") for anything else, so that the caller parses the
 * bytes with upb instead (which then either succeeds the same way or raises
 * its usual error). It declines on:
 *   - varints that are truncated, longer than 10 bytes, or whose 10th byte is
 *     above 1 (bits beyond 64); tags longer than 2 bytes; lengths longer than
 *     5 bytes or running past the enclosing message;
 *   - field number 0, and any field number or wire type the schema does not
 *     give (unknown fields, groups, wire types 6 and 7, a known field with an
 *     unexpected wire type);
 *   - invalid UTF-8 in any string field of the messages walked;
 *   - a packed repeated field whose varints do not fill its length exactly;
 *   - inputs of STEPDECODE_LIMIT bytes or more (default INT32_MAX, 2 GiB less
 *     one byte: every offset, length and row count then fits in 32 bits; the
 *     sanitizer test builds it with a small limit to reach that branch).
 *
 * RunMetadata fields other than step_stats (cost_graph, partition_graphs,
 * function_graphs, session_metadata) are not walked: their bytes (key, length
 * and value) are returned, concatenated, as the last item so that the caller
 * validates them with upb.
 *
 * Merge semantics follow protobuf: for a singular scalar field the last
 * occurrence wins; occurrences of a singular message field merge (and mark it
 * present); each occurrence of a repeated field adds an element.
 *
 * The result tuple (native byte order for the numeric buffers):
 *   0 has_step_stats (bool)
 *   1 devices (list of str), 2 node names (list of str), 3 timeline labels
 *     (list of str), 4 raw NodeExecStats bytes of rows with memory entries
 *   5 dev (int32), 6 start, 7 rel, 8 total, 9 peak, 10 live (int64),
 *   11 gpu_allocs (int32), 12 gpu_in_use, 13 temp, 14 persist (int64),
 *   15 o_row, 16 o_slot (int32), 17 o_bytes (int64), 18 o_ptr (uint64),
 *   19 a_row (int32), 20 a_micros, 21 a_bytes (int64), 22 r_row (int32)
 *     -- items 5 to 22 are bytearrays of packed values;
 *   23 the bytes of the other top-level fields (bytes, often empty).
 */

#define PY_SSIZE_T_CLEAN
#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x03090000
#endif
#include <Python.h>

#include "_wire.h"

#ifndef STEPDECODE_LIMIT
#define STEPDECODE_LIMIT INT32_MAX
#endif

#define OK WIRE_OK
#define DECLINE WIRE_DECLINE
#define FAIL WIRE_FAIL

#define WT_VARINT WIRE_VARINT
#define WT_LEN WIRE_LEN

/* The shared readers and buffers of _wire.h under this file's names. */
typedef WireBuf Buf;
typedef WirePtr Ptr;

#define buf_put wire_buf_put
#define put_i32 wire_put_i32
#define put_i64 wire_put_i64
#define put_u64 wire_put_u64
#define as_i64 wire_i64
#define as_i32 wire_i32
#define read_varint wire_varint
#define read_tag wire_tag
#define utf8_valid wire_utf8_valid

/* A length prefix: the reader left at the value's start, ``*value_end`` its end. */
static int read_len(Ptr *pp, Ptr end, Ptr *value_end) {
    WireSpan value;
    Ptr p = *pp;
    if (wire_len(&p, end, &value) != OK) {
        return DECLINE;
    }
    *pp = value.p;
    *value_end = value.end;
    return OK;
}

/* A string field's value: [*start, *stop) after a valid length and UTF-8 check. */
static int read_string(Ptr *pp, Ptr end, Ptr *start, Ptr *stop) {
    WireSpan value;
    if (wire_string(pp, end, &value) != OK) {
        return DECLINE;
    }
    *start = value.p;
    *stop = value.end;
    return OK;
}

/* A repeated varint field, unpacked (one value) or packed (a run of values). */
static int skip_repeated_varint(Ptr *pp, Ptr end, uint32_t wire) {
    return wire_repeated_i64(pp, end, wire, NULL);
}

static int contains_gpu(Ptr p, Ptr end) {
    while (end - p >= 3) {
        if (p[0] == 'G' && p[1] == 'P' && p[2] == 'U') {
            return 1;
        }
        p++;
    }
    return 0;
}

/* ------------------------------------------------------------------ state */

enum {
    C_DEV,
    C_START,
    C_REL,
    C_TOTAL,
    C_PEAK,
    C_LIVE,
    C_GPU_ALLOCS,
    C_GPU_IN_USE,
    C_TEMP,
    C_PERSIST,
    C_O_ROW,
    C_O_SLOT,
    C_O_BYTES,
    C_O_PTR,
    C_A_ROW,
    C_A_MICROS,
    C_A_BYTES,
    C_R_ROW,
    N_COLUMNS
};

typedef struct {
    Buf col[N_COLUMNS];
    Buf pending; /* allocation records (micros, bytes) of the current memory entry */
    Buf extra;   /* other top-level fields, verbatim */
    PyObject *devices;
    PyObject *names;
    PyObject *labels;
    PyObject *raw;
    int32_t rows;
    int has_step_stats;
} State;

/* A validated UTF-8 span as a str appended to ``list``. */
static int append_text(PyObject *list, Ptr start, Ptr stop) {
    static const char empty[1] = {0};
    const char *chars = start != NULL ? (const char *)start : empty;
    Py_ssize_t size = start != NULL ? (Py_ssize_t)(stop - start) : 0;
    PyObject *text = PyUnicode_DecodeUTF8(chars, size, "strict");
    if (text == NULL) {
        if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
            PyErr_Clear();
            return DECLINE;
        }
        return FAIL;
    }
    return wire_list_add(list, text);
}

/* ------------------------------------------------------------------ messages */

/* Walkers: each reads one message in [p, end) and returns OK, DECLINE or FAIL. */

static int walk_alloc_desc(Ptr p, Ptr end, uint64_t *requested, uint64_t *allocated,
                           uint64_t *ptr) {
    while (p < end) {
        uint32_t number, wire;
        uint64_t v;
        Ptr s, e;
        if (read_tag(&p, end, &number, &wire) != OK) {
            return DECLINE;
        }
        switch (number) {
        case 1: /* requested_bytes */
        case 2: /* allocated_bytes */
        case 4: /* allocation_id */
        case 5: /* has_single_reference */
        case 6: /* ptr */
            if (wire != WT_VARINT || read_varint(&p, end, &v) != OK) {
                return DECLINE;
            }
            if (number == 1) {
                *requested = v;
            } else if (number == 2) {
                *allocated = v;
            } else if (number == 6) {
                *ptr = v;
            }
            break;
        case 3: /* allocator_name */
            if (wire != WT_LEN || read_string(&p, end, &s, &e) != OK) {
                return DECLINE;
            }
            break;
        default:
            return DECLINE;
        }
    }
    return OK;
}

/* A message of field 1 a varint and field 2 a string: TensorShapeProto.Dim
   (size, name) and a DeviceStepStats.thread_names entry (key, value). */
static int walk_int_and_text(Ptr p, Ptr end) {
    while (p < end) {
        uint32_t number, wire;
        uint64_t v;
        Ptr s, e;
        if (read_tag(&p, end, &number, &wire) != OK) {
            return DECLINE;
        }
        if (number == 1 && wire == WT_VARINT) {
            if (read_varint(&p, end, &v) != OK) {
                return DECLINE;
            }
        } else if (number == 2 && wire == WT_LEN) {
            if (read_string(&p, end, &s, &e) != OK) {
                return DECLINE;
            }
        } else {
            return DECLINE;
        }
    }
    return OK;
}

static int walk_shape(Ptr p, Ptr end) {
    while (p < end) {
        uint32_t number, wire;
        uint64_t v;
        Ptr sub_end;
        if (read_tag(&p, end, &number, &wire) != OK) {
            return DECLINE;
        }
        if (number == 2 && wire == WT_LEN) { /* dim */
            if (read_len(&p, end, &sub_end) != OK || walk_int_and_text(p, sub_end) != OK) {
                return DECLINE;
            }
            p = sub_end;
        } else if (number == 3 && wire == WT_VARINT) { /* unknown_rank */
            if (read_varint(&p, end, &v) != OK) {
                return DECLINE;
            }
        } else {
            return DECLINE;
        }
    }
    return OK;
}

static int walk_tensor_desc(Ptr p, Ptr end, int *has_alloc, uint64_t *requested,
                            uint64_t *allocated, uint64_t *ptr) {
    while (p < end) {
        uint32_t number, wire;
        uint64_t v;
        Ptr sub_end;
        if (read_tag(&p, end, &number, &wire) != OK) {
            return DECLINE;
        }
        if (number == 1 && wire == WT_VARINT) { /* dtype */
            if (read_varint(&p, end, &v) != OK) {
                return DECLINE;
            }
        } else if (number == 2 && wire == WT_LEN) { /* shape */
            if (read_len(&p, end, &sub_end) != OK || walk_shape(p, sub_end) != OK) {
                return DECLINE;
            }
            p = sub_end;
        } else if (number == 4 && wire == WT_LEN) { /* allocation_description */
            if (read_len(&p, end, &sub_end) != OK ||
                walk_alloc_desc(p, sub_end, requested, allocated, ptr) != OK) {
                return DECLINE;
            }
            *has_alloc = 1;
            p = sub_end;
        } else {
            return DECLINE;
        }
    }
    return OK;
}

static int walk_output(State *st, int32_t row, Ptr p, Ptr end) {
    uint64_t slot = 0, requested = 0, allocated = 0, ptr = 0;
    int has_alloc = 0;
    while (p < end) {
        uint32_t number, wire;
        Ptr sub_end;
        if (read_tag(&p, end, &number, &wire) != OK) {
            return DECLINE;
        }
        if (number == 1 && wire == WT_VARINT) { /* slot */
            if (read_varint(&p, end, &slot) != OK) {
                return DECLINE;
            }
        } else if (number == 3 && wire == WT_LEN) { /* tensor_description */
            if (read_len(&p, end, &sub_end) != OK ||
                walk_tensor_desc(p, sub_end, &has_alloc, &requested, &allocated, &ptr) != OK) {
                return DECLINE;
            }
            p = sub_end;
        } else {
            return DECLINE;
        }
    }
    if (has_alloc) {
        int64_t a = as_i64(allocated), r = as_i64(requested);
        if (put_i32(&st->col[C_O_ROW], row) || put_i32(&st->col[C_O_SLOT], as_i32(slot)) ||
            put_i64(&st->col[C_O_BYTES], a > r ? a : r) || put_u64(&st->col[C_O_PTR], ptr)) {
            return FAIL;
        }
    }
    return OK;
}

static int walk_alloc_record(Ptr p, Ptr end, uint64_t pair[2]) {
    while (p < end) {
        uint32_t number, wire;
        uint64_t v;
        if (read_tag(&p, end, &number, &wire) != OK) {
            return DECLINE;
        }
        if ((number != 1 && number != 2) || wire != WT_VARINT ||
            read_varint(&p, end, &v) != OK) {
            return DECLINE;
        }
        pair[number - 1] = v; /* 1: alloc_micros, 2: alloc_bytes */
    }
    return OK;
}

typedef struct {
    uint64_t total, peak, live; /* running sums over the row's entries */
    int32_t gpu_allocs;
    int64_t gpu_in_use;
} MemorySums;

static int walk_memory(State *st, int32_t row, Ptr p, Ptr end, MemorySums *sums) {
    uint64_t total = 0, peak = 0, live = 0, in_use = 0;
    Ptr name = NULL, name_end = NULL;
    st->pending.len = 0;
    while (p < end) {
        uint32_t number, wire;
        uint64_t v;
        Ptr sub_end;
        if (read_tag(&p, end, &number, &wire) != OK) {
            return DECLINE;
        }
        switch (number) {
        case 1: /* allocator_name */
            if (wire != WT_LEN || read_string(&p, end, &name, &name_end) != OK) {
                return DECLINE;
            }
            break;
        case 2: /* total_bytes */
        case 3: /* peak_bytes */
        case 4: /* live_bytes */
        case 5: /* allocator_bytes_in_use */
            if (wire != WT_VARINT || read_varint(&p, end, &v) != OK) {
                return DECLINE;
            }
            if (number == 2) {
                total = v;
            } else if (number == 3) {
                peak = v;
            } else if (number == 4) {
                live = v;
            } else {
                in_use = v;
            }
            break;
        case 6: { /* allocation_records */
            uint64_t pair[2] = {0, 0};
            if (wire != WT_LEN || read_len(&p, end, &sub_end) != OK ||
                walk_alloc_record(p, sub_end, pair) != OK) {
                return DECLINE;
            }
            if (buf_put(&st->pending, pair, sizeof pair)) {
                return FAIL;
            }
            p = sub_end;
            break;
        }
        default:
            return DECLINE;
        }
    }
    sums->total += total;
    sums->peak += peak;
    sums->live += live;
    if (name != NULL && contains_gpu(name, name_end)) {
        size_t i, count = st->pending.len / (2 * sizeof(uint64_t));
        const uint64_t *pairs = (const uint64_t *)(const void *)st->pending.data;
        sums->gpu_allocs += 1;
        if (as_i64(in_use) > sums->gpu_in_use) {
            sums->gpu_in_use = as_i64(in_use);
        }
        for (i = 0; i < count; i++) {
            if (put_i32(&st->col[C_A_ROW], row) ||
                put_i64(&st->col[C_A_MICROS], as_i64(pairs[2 * i])) ||
                put_i64(&st->col[C_A_BYTES], as_i64(pairs[2 * i + 1]))) {
                return FAIL;
            }
        }
    }
    return OK;
}

static int walk_memory_stats(Ptr p, Ptr end, uint64_t *temp, uint64_t *persist) {
    while (p < end) {
        uint32_t number, wire;
        uint64_t v;
        if (read_tag(&p, end, &number, &wire) != OK) {
            return DECLINE;
        }
        switch (number) {
        case 1: /* temp_memory_size */
        case 2: /* device_temp_memory_size */
        case 3: /* persistent_memory_size */
        case 4: /* device_persistent_memory_size */
            if (wire != WT_VARINT || read_varint(&p, end, &v) != OK) {
                return DECLINE;
            }
            if (number == 1) {
                *temp = v;
            } else if (number == 3) {
                *persist = v;
            }
            break;
        case 5: /* persistent_tensor_alloc_ids */
        case 6: /* device_persistent_tensor_alloc_ids */
            if (skip_repeated_varint(&p, end, wire) != OK) {
                return DECLINE;
            }
            break;
        default:
            return DECLINE;
        }
    }
    return OK;
}

static int walk_node(State *st, int32_t dev, Ptr p, Ptr end) {
    Ptr const start_of_node = p;
    Ptr name = NULL, name_end = NULL, label = NULL, label_end = NULL;
    uint64_t start = 0, rel = 0, temp = 0, persist = 0;
    MemorySums sums = {0, 0, 0, 0, 0};
    int32_t row = st->rows, memory_entries = 0;
    int rc;
    while (p < end) {
        uint32_t number, wire;
        uint64_t v;
        Ptr sub_end, s, e;
        if (read_tag(&p, end, &number, &wire) != OK) {
            return DECLINE;
        }
        switch (number) {
        case 1: /* node_name */
        case 8: /* timeline_label */
            if (wire != WT_LEN || read_string(&p, end, &s, &e) != OK) {
                return DECLINE;
            }
            if (number == 1) {
                name = s;
                name_end = e;
            } else {
                label = s;
                label_end = e;
            }
            break;
        case 2:  /* all_start_micros */
        case 3:  /* op_start_rel_micros */
        case 4:  /* op_end_rel_micros */
        case 5:  /* all_end_rel_micros */
        case 9:  /* scheduled_micros */
        case 10: /* thread_id */
        case 13: /* all_start_nanos */
        case 14: /* op_start_rel_nanos */
        case 15: /* op_end_rel_nanos */
        case 16: /* all_end_rel_nanos */
        case 17: /* scheduled_nanos */
            if (wire != WT_VARINT || read_varint(&p, end, &v) != OK) {
                return DECLINE;
            }
            if (number == 2) {
                start = v;
            } else if (number == 4) {
                rel = v;
            }
            break;
        case 6:  /* memory */
        case 7:  /* output */
        case 11: /* referenced_tensor */
        case 12: /* memory_stats */
            if (wire != WT_LEN || read_len(&p, end, &sub_end) != OK) {
                return DECLINE;
            }
            if (number == 6) {
                rc = walk_memory(st, row, p, sub_end, &sums);
                memory_entries++;
            } else if (number == 7) {
                rc = walk_output(st, row, p, sub_end);
            } else if (number == 11) {
                uint64_t ignored[3];
                rc = walk_alloc_desc(p, sub_end, &ignored[0], &ignored[1], &ignored[2]);
            } else {
                rc = walk_memory_stats(p, sub_end, &temp, &persist);
            }
            if (rc != OK) {
                return rc;
            }
            p = sub_end;
            break;
        default:
            return DECLINE;
        }
    }
    if ((rc = append_text(st->names, name, name_end)) != OK ||
        (rc = append_text(st->labels, label, label_end)) != OK) {
        return rc;
    }
    if (put_i32(&st->col[C_DEV], dev) || put_i64(&st->col[C_START], as_i64(start)) ||
        put_i64(&st->col[C_REL], as_i64(rel)) || put_i64(&st->col[C_TOTAL], as_i64(sums.total)) ||
        put_i64(&st->col[C_PEAK], as_i64(sums.peak)) ||
        put_i64(&st->col[C_LIVE], as_i64(sums.live)) ||
        put_i32(&st->col[C_GPU_ALLOCS], sums.gpu_allocs) ||
        put_i64(&st->col[C_GPU_IN_USE], sums.gpu_in_use) ||
        put_i64(&st->col[C_TEMP], as_i64(temp)) || put_i64(&st->col[C_PERSIST], as_i64(persist))) {
        return FAIL;
    }
    if (memory_entries > 0) {
        PyObject *raw = PyBytes_FromStringAndSize((const char *)start_of_node,
                                                  (Py_ssize_t)(end - start_of_node));
        if (wire_list_add(st->raw, raw) != OK || put_i32(&st->col[C_R_ROW], row)) {
            return FAIL;
        }
    }
    st->rows = row + 1;
    return OK;
}

static int walk_device(State *st, Ptr p, Ptr end) {
    Ptr device = NULL, device_end = NULL;
    Py_ssize_t index = PyList_Size(st->devices);
    int rc;
    if (index < 0) {
        return FAIL;
    }
    if (index > INT32_MAX) {
        return DECLINE;
    }
    while (p < end) {
        uint32_t number, wire;
        Ptr sub_end;
        if (read_tag(&p, end, &number, &wire) != OK || wire != WT_LEN) {
            return DECLINE;
        }
        if (number == 1) { /* device */
            if (read_string(&p, end, &device, &device_end) != OK) {
                return DECLINE;
            }
            continue;
        }
        if (read_len(&p, end, &sub_end) != OK) {
            return DECLINE;
        }
        if (number == 2) { /* node_stats */
            rc = walk_node(st, (int32_t)index, p, sub_end);
        } else if (number == 3) { /* thread_names */
            rc = walk_int_and_text(p, sub_end);
        } else {
            rc = DECLINE;
        }
        if (rc != OK) {
            return rc;
        }
        p = sub_end;
    }
    return append_text(st->devices, device, device_end);
}

static int walk_step_stats(State *st, Ptr p, Ptr end) {
    while (p < end) {
        uint32_t number, wire;
        Ptr sub_end;
        int rc;
        if (read_tag(&p, end, &number, &wire) != OK || number != 1 || wire != WT_LEN ||
            read_len(&p, end, &sub_end) != OK) {
            return DECLINE;
        }
        if ((rc = walk_device(st, p, sub_end)) != OK) { /* dev_stats */
            return rc;
        }
        p = sub_end;
    }
    return OK;
}

static int walk_run_metadata(State *st, Ptr p, Ptr end) {
    while (p < end) {
        Ptr field_start = p;
        uint32_t number, wire;
        Ptr sub_end;
        int rc;
        if (read_tag(&p, end, &number, &wire) != OK || number > 5 || wire != WT_LEN ||
            read_len(&p, end, &sub_end) != OK) {
            return DECLINE;
        }
        if (number == 1) { /* step_stats */
            st->has_step_stats = 1;
            if ((rc = walk_step_stats(st, p, sub_end)) != OK) {
                return rc;
            }
        } else if (buf_put(&st->extra, field_start, (size_t)(sub_end - field_start))) {
            return FAIL;
        }
        p = sub_end;
    }
    return OK;
}

/* ------------------------------------------------------------------ module */

static void state_free(State *st) {
    int i;
    for (i = 0; i < N_COLUMNS; i++) {
        free(st->col[i].data);
    }
    free(st->pending.data);
    free(st->extra.data);
    Py_XDECREF(st->devices);
    Py_XDECREF(st->names);
    Py_XDECREF(st->labels);
    Py_XDECREF(st->raw);
}

static PyObject *state_result(State *st) {
    PyObject *out = PyTuple_New(5 + N_COLUMNS + 1);
    PyObject *item;
    int i;
    if (out == NULL) {
        return NULL;
    }
    PyTuple_SetItem(out, 0, PyBool_FromLong(st->has_step_stats));
    PyTuple_SetItem(out, 1, st->devices);
    PyTuple_SetItem(out, 2, st->names);
    PyTuple_SetItem(out, 3, st->labels);
    PyTuple_SetItem(out, 4, st->raw);
    st->devices = st->names = st->labels = st->raw = NULL; /* now owned by the tuple */
    for (i = 0; i < N_COLUMNS; i++) {
        item = PyByteArray_FromStringAndSize(st->col[i].data != NULL ? st->col[i].data : "",
                                             (Py_ssize_t)st->col[i].len);
        if (item == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SetItem(out, 5 + i, item);
    }
    item = PyBytes_FromStringAndSize(st->extra.data != NULL ? st->extra.data : "",
                                     (Py_ssize_t)st->extra.len);
    if (item == NULL) {
        Py_DECREF(out);
        return NULL;
    }
    PyTuple_SetItem(out, 5 + N_COLUMNS, item);
    return out;
}

static PyObject *stepdecode_decode(PyObject *module, PyObject *arg) {
    State st;
    char *data;
    Py_ssize_t size;
    PyObject *result = NULL;
    int rc;
    (void)module;
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "decode() takes bytes");
        return NULL;
    }
    if (PyBytes_AsStringAndSize(arg, &data, &size) != 0) {
        return NULL;
    }
    if ((uint64_t)size >= (uint64_t)STEPDECODE_LIMIT) {
        Py_RETURN_NONE;
    }
    memset(&st, 0, sizeof st);
    st.devices = PyList_New(0);
    st.names = PyList_New(0);
    st.labels = PyList_New(0);
    st.raw = PyList_New(0);
    if (st.devices == NULL || st.names == NULL || st.labels == NULL || st.raw == NULL) {
        state_free(&st);
        return NULL;
    }
    rc = walk_run_metadata(&st, (Ptr)data, (Ptr)data + size);
    if (rc == OK) {
        result = state_result(&st);
    } else if (rc == DECLINE) {
        result = Py_None;
        Py_INCREF(result);
    }
    state_free(&st);
    return result;
}

static PyMethodDef stepdecode_methods[] = {
    {"decode", stepdecode_decode, METH_O,
     "decode(data: bytes) -> tuple | None\n\n"
     "A RunMetadata's step statistics as raw columns, or None when the bytes are\n"
     "not in the plain subset this decoder reads (parse them with upb instead)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef stepdecode_module = {
    PyModuleDef_HEAD_INIT,
    "_stepdecode",
    "Native decoder of RunMetadata step statistics (see tfprof_lite.proto.steps).",
    -1,
    stepdecode_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__stepdecode(void) { return PyModule_Create(&stepdecode_module); }
