/*
 * The common prologue of the saved-format decoders (_profiledecode.c,
 * _graphdecode.c): CPython's limited API, the readers of _wire.h, and the
 * short names both use for them.
 */
#ifndef TFPROF_LITE_DECODER_H
#define TFPROF_LITE_DECODER_H

#define PY_SSIZE_T_CLEAN
#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x03090000
#endif
#include <Python.h>

#include "_wire.h"

#define OK WIRE_OK
#define DECLINE WIRE_DECLINE
#define FAIL WIRE_FAIL
#define TRY WIRE_TRY
#define read_u64 wire_read_u64
#define read_span wire_read_span
#define read_str wire_read_str
#define list_add wire_list_add
#define dict_put wire_dict_put

typedef WirePtr Ptr;
typedef WireSpan Span;

#endif /* TFPROF_LITE_DECODER_H */
