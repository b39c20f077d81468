/*
 * The message tables of _hlodecode.c (see _msgtable.h): one MsgDesc per
 * message of tfprof_lite/proto/hlo.proto, its fields in the order of the
 * items of its named tuple in tfprof_lite/proto/hlo_module.py (whose CLASSES
 * are in the order of the K_* constants). Field numbers and types are those
 * of hlo.proto.
 */
#ifndef TFPROF_LITE_HLOTABLES_H
#define TFPROF_LITE_HLOTABLES_H

#include "_msgtable.h"

enum {
    K_MODULE, K_COMP, K_INSTR, K_META, K_SCHED, K_SEQ, K_INDEX, K_LOC, K_FRAME, K_SHAPE,
    K_LAYOUT, K_WINDOW, K_WINDOW_DIM, K_DOT, K_CONV, K_PADDING, K_PADDING_DIM, K_SLICE,
    K_ALIAS, K_ALIAS_ENTRY, K_PROGRAM, K_ASSIGNMENT, K_LOGICAL, K_LOCATION, K_ALLOCATION,
    K_ASSIGNED, K_TRACE, K_EVENT, K_BUFFER_ALIAS, K_COUNT
};

/* Kept fields, and fields checked but not kept. */
#define KEEP(number, kind, sub) {number, kind, 1, sub}
#define SKIP(number, kind) {number, kind, 0, NULL}
#define COUNT(fields) ((int)(sizeof(fields) / sizeof(fields[0])))
#define TABLE(cls, shared, fields) {cls, shared, COUNT(fields), fields, NULL, 0, {0}, {0}}
#define BY_HAND(cls, fields, fn) {cls, 0, COUNT(fields), fields, fn, 0, {0}, {0}}

static MsgDesc D_META, D_LAYOUT, D_SHAPE, D_WINDOW_DIM, D_WINDOW, D_DOT, D_CONV, D_PADDING_DIM,
    D_PADDING, D_SLICE, D_INSTR, D_COMP, D_SEQ, D_SCHED, D_LOC, D_FRAME, D_INDEX, D_ALIAS_ENTRY,
    D_ALIAS, D_MODULE, D_LOCATION, D_LOGICAL, D_ASSIGNED, D_ALLOCATION, D_EVENT, D_TRACE,
    D_BUFFER_ALIAS, D_ASSIGNMENT, D_PROGRAM;
static int decode_meta(MtCtx *c, const MsgDesc *d, Span m, int depth, int build, PyObject **out);
static int decode_instr(MtCtx *c, const MsgDesc *d, Span m, int depth, int build, PyObject **out);
static int decode_int32s(MtCtx *c, const MsgDesc *d, Span m, int depth, int build, PyObject **out);

/* ------------------------------------------------------------------ xla_data.proto */

static const FieldDesc META_F[] = {
    KEEP(1, F_STR, NULL), KEEP(2, F_STR, NULL), KEEP(3, F_STR, NULL), KEEP(4, F_I32, NULL),
    KEEP(15, F_I32, NULL), SKIP(12, F_STR), SKIP(16, F_STR),
};
static const FieldDesc LAYOUT_F[] = {
    KEEP(1, F_REP_I64, NULL), KEEP(7, F_I64, NULL), KEEP(8, F_I64, NULL),
};
static const FieldDesc SHAPE_F[] = {
    KEEP(2, F_I32, NULL), KEEP(3, F_REP_I64, NULL), KEEP(4, F_REP_MSG, &D_SHAPE),
    KEEP(5, F_MSG, &D_LAYOUT), KEEP(6, F_REP_BOOL, NULL),
};
static const FieldDesc WINDOW_DIM_F[] = {
    KEEP(1, F_I64, NULL), KEEP(2, F_I64, NULL), KEEP(3, F_I64, NULL), KEEP(4, F_I64, NULL),
    KEEP(5, F_I64, NULL), KEEP(6, F_I64, NULL), KEEP(7, F_BOOL, NULL),
};
static const FieldDesc WINDOW_F[] = {KEEP(1, F_REP_MSG, &D_WINDOW_DIM)};
static const FieldDesc DOT_F[] = {
    KEEP(1, F_REP_I64, NULL), KEEP(2, F_REP_I64, NULL), KEEP(3, F_REP_I64, NULL),
    KEEP(4, F_REP_I64, NULL),
};
static const FieldDesc CONV_F[] = {
    KEEP(3, F_I64, NULL), KEEP(4, F_I64, NULL), KEEP(6, F_REP_I64, NULL), KEEP(7, F_I64, NULL),
    KEEP(8, F_I64, NULL), KEEP(9, F_I64, NULL), KEEP(10, F_I64, NULL), KEEP(11, F_REP_I64, NULL),
    KEEP(12, F_REP_I64, NULL),
};
static const FieldDesc PADDING_DIM_F[] = {
    KEEP(1, F_I64, NULL), KEEP(2, F_I64, NULL), KEEP(3, F_I64, NULL),
};
static const FieldDesc PADDING_F[] = {KEEP(1, F_REP_MSG, &D_PADDING_DIM)};

/* ------------------------------------------------------------------ the module */

static const FieldDesc SLICE_F[] = {
    KEEP(1, F_I64, NULL), KEEP(2, F_I64, NULL), KEEP(3, F_I64, NULL),
};
static const FieldDesc INSTR_F[] = {
    KEEP(1, F_STR, NULL),       KEEP(2, F_STR, NULL),          KEEP(7, F_MSG, &D_META),
    KEEP(11, F_STR, NULL),      KEEP(28, F_STR, NULL),         KEEP(35, F_I64, NULL),
    KEEP(36, F_REP_I64, NULL),  KEEP(38, F_REP_I64, NULL),     KEEP(43, F_BYTES, NULL),
    KEEP(3, F_MSG, &D_SHAPE),   KEEP(9, F_I64, NULL),          KEEP(13, F_I64, NULL),
    KEEP(14, F_REP_I64, NULL),  KEEP(15, F_MSG, &D_WINDOW),    KEEP(16, F_MSG, &D_CONV),
    KEEP(17, F_REP_MSG, &D_SLICE), KEEP(20, F_REP_I64, NULL),  KEEP(21, F_MSG, &D_PADDING),
    KEEP(30, F_MSG, &D_DOT),    KEEP(32, F_REP_I64, NULL),     KEEP(34, F_REP_I64, NULL),
    KEEP(50, F_I64, NULL),      KEEP(58, F_I64, NULL),
};
static const FieldDesc COMP_F[] = {
    KEEP(1, F_STR, NULL), KEEP(2, F_REP_MSG, &D_INSTR), KEEP(5, F_I64, NULL),
    KEEP(6, F_I64, NULL), KEEP(7, F_BOOL, NULL),        SKIP(8, F_STR),
};
static const FieldDesc SEQ_F[] = {KEEP(1, F_REP_I64, NULL)};
static const FieldDesc SCHED_F[] = {KEEP(1, F_MAP, &D_SEQ)};
/* FileLocation and StackFrame: int32 fields 1..n in order (decode_int32s). */
static const FieldDesc LOC_F[] = {
    KEEP(1, F_I32, NULL), KEEP(2, F_I32, NULL), KEEP(3, F_I32, NULL),
    SKIP(4, F_I32),       SKIP(5, F_I32),       SKIP(6, F_I32),
};
static const FieldDesc FRAME_F[] = {KEEP(1, F_I32, NULL), KEEP(2, F_I32, NULL)};
static const FieldDesc INDEX_F[] = {
    KEEP(1, F_REP_STR, NULL), KEEP(2, F_REP_STR, NULL), KEEP(3, F_REP_MSG, &D_LOC),
    KEEP(4, F_REP_MSG, &D_FRAME),
};
static const FieldDesc ALIAS_ENTRY_F[] = {
    KEEP(1, F_REP_I64, NULL), KEEP(2, F_I64, NULL), KEEP(3, F_REP_I64, NULL), KEEP(4, F_I32, NULL),
};
static const FieldDesc ALIAS_F[] = {KEEP(1, F_REP_MSG, &D_ALIAS_ENTRY)};
static const FieldDesc MODULE_F[] = {
    KEEP(1, F_STR, NULL),   KEEP(2, F_STR, NULL),     KEEP(3, F_REP_MSG, &D_COMP),
    KEEP(5, F_I64, NULL),   KEEP(6, F_I64, NULL),     KEEP(7, F_MSG, &D_SCHED),
    KEEP(17, F_MSG, &D_INDEX), KEEP(8, F_MSG, &D_ALIAS),
};

/* ------------------------------------------------------------------ buffer assignment */

static const FieldDesc LOCATION_F[] = {
    KEEP(2, F_STR, NULL), KEEP(3, F_REP_I64, NULL), KEEP(4, F_I64, NULL),
};
static const FieldDesc LOGICAL_F[] = {
    KEEP(1, F_I64, NULL), KEEP(2, F_I64, NULL), KEEP(3, F_MSG, &D_LOCATION), KEEP(4, F_I64, NULL),
};
static const FieldDesc ASSIGNED_F[] = {
    KEEP(1, F_I64, NULL), KEEP(2, F_I64, NULL), KEEP(3, F_I64, NULL),
};
static const FieldDesc ALLOCATION_F[] = {
    KEEP(1, F_I64, NULL),  KEEP(2, F_I64, NULL),  KEEP(3, F_BOOL, NULL),
    KEEP(5, F_BOOL, NULL), KEEP(6, F_I64, NULL),  KEEP(7, F_BOOL, NULL),
    KEEP(8, F_I64, NULL),  KEEP(9, F_REP_MSG, &D_ASSIGNED), KEEP(10, F_REP_I64, NULL),
    KEEP(11, F_BOOL, NULL), KEEP(12, F_BOOL, NULL),
};
static const FieldDesc EVENT_F[] = {
    KEEP(1, F_I32, NULL), KEEP(2, F_I64, NULL), KEEP(3, F_STR, NULL), KEEP(4, F_STR, NULL),
    KEEP(5, F_I64, NULL),
};
static const FieldDesc TRACE_F[] = {
    KEEP(1, F_REP_MSG, &D_EVENT), KEEP(2, F_BOOL, NULL), KEEP(3, F_I64, NULL),
};
static const FieldDesc BUFFER_ALIAS_F[] = {KEEP(1, F_I64, NULL), KEEP(2, F_MSG, &D_LOCATION)};
static const FieldDesc ASSIGNMENT_F[] = {
    KEEP(1, F_REP_MSG, &D_LOGICAL), KEEP(2, F_REP_MSG, &D_BUFFER_ALIAS),
    KEEP(3, F_REP_MSG, &D_ALLOCATION), KEEP(4, F_REP_MSG, &D_TRACE),
};
static const FieldDesc PROGRAM_F[] = {KEEP(1, F_MSG, &D_MODULE), KEEP(3, F_MSG, &D_ASSIGNMENT)};

static MsgDesc D_META = BY_HAND(K_META, META_F, decode_meta);
static MsgDesc D_LAYOUT = TABLE(K_LAYOUT, 0, LAYOUT_F);
static MsgDesc D_SHAPE = TABLE(K_SHAPE, 1, SHAPE_F);
static MsgDesc D_WINDOW_DIM = TABLE(K_WINDOW_DIM, 0, WINDOW_DIM_F);
static MsgDesc D_WINDOW = TABLE(K_WINDOW, 0, WINDOW_F);
static MsgDesc D_DOT = TABLE(K_DOT, 0, DOT_F);
static MsgDesc D_CONV = TABLE(K_CONV, 0, CONV_F);
static MsgDesc D_PADDING_DIM = TABLE(K_PADDING_DIM, 0, PADDING_DIM_F);
static MsgDesc D_PADDING = TABLE(K_PADDING, 0, PADDING_F);
static MsgDesc D_SLICE = TABLE(K_SLICE, 0, SLICE_F);
static MsgDesc D_INSTR = BY_HAND(K_INSTR, INSTR_F, decode_instr);
static MsgDesc D_COMP = TABLE(K_COMP, 0, COMP_F);
static MsgDesc D_SEQ = TABLE(K_SEQ, 0, SEQ_F);
static MsgDesc D_SCHED = TABLE(K_SCHED, 0, SCHED_F);
static MsgDesc D_LOC = BY_HAND(K_LOC, LOC_F, decode_int32s);
static MsgDesc D_FRAME = BY_HAND(K_FRAME, FRAME_F, decode_int32s);
static MsgDesc D_INDEX = TABLE(K_INDEX, 0, INDEX_F);
static MsgDesc D_ALIAS_ENTRY = TABLE(K_ALIAS_ENTRY, 0, ALIAS_ENTRY_F);
static MsgDesc D_ALIAS = TABLE(K_ALIAS, 0, ALIAS_F);
static MsgDesc D_MODULE = TABLE(K_MODULE, 0, MODULE_F);
static MsgDesc D_LOCATION = TABLE(K_LOCATION, 0, LOCATION_F);
static MsgDesc D_LOGICAL = TABLE(K_LOGICAL, 0, LOGICAL_F);
static MsgDesc D_ASSIGNED = TABLE(K_ASSIGNED, 0, ASSIGNED_F);
static MsgDesc D_ALLOCATION = TABLE(K_ALLOCATION, 0, ALLOCATION_F);
static MsgDesc D_EVENT = TABLE(K_EVENT, 0, EVENT_F);
static MsgDesc D_TRACE = TABLE(K_TRACE, 0, TRACE_F);
static MsgDesc D_BUFFER_ALIAS = TABLE(K_BUFFER_ALIAS, 0, BUFFER_ALIAS_F);
static MsgDesc D_ASSIGNMENT = TABLE(K_ASSIGNMENT, 0, ASSIGNMENT_F);
static MsgDesc D_PROGRAM = TABLE(K_PROGRAM, 0, PROGRAM_F);

static MsgDesc *const ALL[] = {
    &D_META, &D_LAYOUT, &D_SHAPE, &D_WINDOW_DIM, &D_WINDOW, &D_DOT, &D_CONV, &D_PADDING_DIM,
    &D_PADDING, &D_SLICE, &D_INSTR, &D_COMP, &D_SEQ, &D_SCHED, &D_LOC, &D_FRAME, &D_INDEX,
    &D_ALIAS_ENTRY, &D_ALIAS, &D_MODULE, &D_LOCATION, &D_LOGICAL, &D_ASSIGNED, &D_ALLOCATION,
    &D_EVENT, &D_TRACE, &D_BUFFER_ALIAS, &D_ASSIGNMENT, &D_PROGRAM,
};

#endif /* TFPROF_LITE_HLOTABLES_H */
