/*
 * The per-frame bytes of a Chat stream that most frames need, made in C:
 *
 * text_chunk(layout, sequence, timestamp, text) assembles a text delta frame (an e2a.chunk whose body
 * is {"delta_kind": "text", "delta": <string>}), the frame of most frames of most streams.
 * utc_timestamp() is the RFC 3339 UTC time a frame carries.
 *
 * In C because these run once per frame on the server's event loop thread, where Python's per-frame
 * work costs several times what it costs in a loop of its own (caches shared with gRPC's threads and
 * the client; BENCHMARKS.md, section "chat"). What a frame holds is decided in Python
 * (e2a_grpc.chat.frames.FrameBuilder): it passes every constant piece in a layout tuple cut once per
 * stream; this file only knows how protobuf writes a varint and how the pieces follow each other.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>
#include <time.h>

/* "YYYY-MM-DDTHH:MM:SS." */
#define SECOND_PREFIX_BYTES 20
/* The prefix, the microseconds and the offset: "YYYY-MM-DDTHH:MM:SS.ffffff+00:00". */
#define TIMESTAMP_BYTES (SECOND_PREFIX_BYTES + 6 + 6)

/* The items of the layout tuple (FrameBuilder._cut_shared_fields writes it in this order). */
enum {
    FRAME_TAG,         /* the ChatResponse.response field's tag */
    BEFORE_ID_DIGITS,  /* the response's fields before its id's hex digits, the id's tag, size and prefix */
    BEFORE_SEQUENCE,   /* the shared fields between the response id and the sequence */
    SEQUENCE_TAG,      /* the sequence field's tag (the field is left out for 0, as proto3 does) */
    BEFORE_TIMESTAMP,  /* the chunk's kind fields, the shared fields between, the timestamp's tag and size */
    BEFORE_BODY_SIZE,  /* the shared fields between the timestamp and the body, the body's tag */
    BODY_PREFIX,       /* the body's JSON before the delta's string */
    BODY_SUFFIX,       /* the body's JSON after it */
    AFTER_BODY,        /* the shared fields after the body */
    ID_HEX_DIGITS,     /* an int: the sequence is written as this many lowercase hex digits in the id */
    LAYOUT_ITEMS,
};

/* The module's state: each (sub)interpreter that imports the module has its own. */
typedef struct {
    PyObject *orjson_dumps; /* strings with escapes are written as jsontext.dumps writes them: by orjson */
    time_t second;          /* the second second_prefix spells, once one was asked for */
    char second_prefix[SECOND_PREFIX_BYTES + 1];
} ModuleState;

static ModuleState *module_state(PyObject *module)
{
    return (ModuleState *)PyModule_GetState(module);
}

static Py_ssize_t varint_size(uint64_t value)
{
    Py_ssize_t size = 1;
    while (value >= 0x80) {
        value >>= 7;
        size++;
    }
    return size;
}

static char *write_varint(char *out, uint64_t value)
{
    while (value >= 0x80) {
        *out++ = (char)((value & 0x7F) | 0x80);
        value >>= 7;
    }
    *out++ = (char)value;
    return out;
}

static char *write_bytes(char *out, PyObject *piece)
{
    Py_ssize_t size = PyBytes_GET_SIZE(piece);
    memcpy(out, PyBytes_AS_STRING(piece), (size_t)size);
    return out + size;
}

/* Whether a JSON string of this UTF-8 needs an escape: a quote, a backslash or a control character. */
static int needs_escapes(const unsigned char *utf8, Py_ssize_t size)
{
    for (Py_ssize_t i = 0; i < size; i++) {
        if (utf8[i] < 0x20 || utf8[i] == '"' || utf8[i] == '\\') {
            return 1;
        }
    }
    return 0;
}

/* text_chunk(layout, sequence, timestamp, text) -> bytes | None */
static PyObject *text_chunk(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_Format(PyExc_TypeError, "text_chunk() takes 4 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *layout = args[0], *timestamp = args[2], *text = args[3];
    if (!PyTuple_CheckExact(layout) || PyTuple_GET_SIZE(layout) != LAYOUT_ITEMS) {
        PyErr_Format(PyExc_TypeError, "text_chunk() layout must be a tuple of %d items", LAYOUT_ITEMS);
        return NULL;
    }
    for (int item = 0; item < ID_HEX_DIGITS; item++) {
        if (!PyBytes_CheckExact(PyTuple_GET_ITEM(layout, item))) {
            PyErr_Format(PyExc_TypeError, "text_chunk() layout item %d must be bytes", item);
            return NULL;
        }
    }
    long hex_digits = PyLong_AsLong(PyTuple_GET_ITEM(layout, ID_HEX_DIGITS));
    if (hex_digits == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (hex_digits < 1 || hex_digits > 16) {
        PyErr_SetString(PyExc_ValueError, "text_chunk() layout: the id's hex digits must be 1 to 16");
        return NULL;
    }
    if (!PyBytes_CheckExact(timestamp)) {
        PyErr_SetString(PyExc_TypeError, "text_chunk() timestamp must be bytes");
        return NULL;
    }
    /* Outside the common case, None: the caller's general path writes (or refuses) the frame. */
    if (!PyUnicode_CheckExact(text)) {
        Py_RETURN_NONE;
    }
    int overflow = 0;
    long long signed_sequence = PyLong_AsLongLongAndOverflow(args[1], &overflow);
    if (signed_sequence == -1 && PyErr_Occurred()) {
        return NULL;
    }
    uint64_t sequence = (uint64_t)signed_sequence;
    if (overflow || signed_sequence < 0 || (hex_digits < 16 && sequence >> (4 * hex_digits) != 0)) {
        Py_RETURN_NONE; /* more frames than the id has digits for */
    }

    Py_ssize_t text_size;
    const char *utf8 = PyUnicode_AsUTF8AndSize(text, &text_size);
    if (utf8 == NULL) {
        if (PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
            PyErr_Clear(); /* a lone surrogate: jsontext.dumps escapes it */
            Py_RETURN_NONE;
        }
        return NULL;
    }
    /* A string with nothing to escape is written as it is between quotes, by any JSON writer; others
     * are written by orjson, as jsontext.dumps writes them (orjson allocates 1 KB per call). */
    PyObject *json = NULL;
    if (!needs_escapes((const unsigned char *)utf8, text_size)) {
        text_size += 2; /* the quotes */
    } else {
        json = PyObject_CallOneArg(module_state(module)->orjson_dumps, text);
        if (json == NULL) {
            return NULL;
        }
        text_size = PyBytes_GET_SIZE(json);
    }

    PyObject *piece[LAYOUT_ITEMS];
    for (int item = 0; item < ID_HEX_DIGITS; item++) {
        piece[item] = PyTuple_GET_ITEM(layout, item);
    }
    Py_ssize_t body_size = PyBytes_GET_SIZE(piece[BODY_PREFIX]) + text_size + PyBytes_GET_SIZE(piece[BODY_SUFFIX]);
    Py_ssize_t sequence_field_size = sequence ? PyBytes_GET_SIZE(piece[SEQUENCE_TAG]) + varint_size(sequence) : 0;
    Py_ssize_t response_size = PyBytes_GET_SIZE(piece[BEFORE_ID_DIGITS]) + hex_digits + PyBytes_GET_SIZE(piece[BEFORE_SEQUENCE])
                               + sequence_field_size + PyBytes_GET_SIZE(piece[BEFORE_TIMESTAMP]) + PyBytes_GET_SIZE(timestamp)
                               + PyBytes_GET_SIZE(piece[BEFORE_BODY_SIZE]) + varint_size((uint64_t)body_size) + body_size
                               + PyBytes_GET_SIZE(piece[AFTER_BODY]);
    Py_ssize_t frame_size = PyBytes_GET_SIZE(piece[FRAME_TAG]) + varint_size((uint64_t)response_size) + response_size;

    PyObject *frame = PyBytes_FromStringAndSize(NULL, frame_size);
    if (frame == NULL) {
        Py_XDECREF(json);
        return NULL;
    }
    char *out = PyBytes_AS_STRING(frame);
    out = write_bytes(out, piece[FRAME_TAG]);
    out = write_varint(out, (uint64_t)response_size);
    out = write_bytes(out, piece[BEFORE_ID_DIGITS]);
    for (long digit = hex_digits - 1; digit >= 0; digit--) {
        *out++ = "0123456789abcdef"[(sequence >> (4 * digit)) & 0xF];
    }
    out = write_bytes(out, piece[BEFORE_SEQUENCE]);
    if (sequence) {
        out = write_bytes(out, piece[SEQUENCE_TAG]);
        out = write_varint(out, sequence);
    }
    out = write_bytes(out, piece[BEFORE_TIMESTAMP]);
    out = write_bytes(out, timestamp);
    out = write_bytes(out, piece[BEFORE_BODY_SIZE]);
    out = write_varint(out, (uint64_t)body_size);
    out = write_bytes(out, piece[BODY_PREFIX]);
    if (json == NULL) {
        *out++ = '"';
        memcpy(out, utf8, (size_t)text_size - 2);
        out += text_size - 2;
        *out++ = '"';
    } else {
        out = write_bytes(out, json);
        Py_DECREF(json);
    }
    out = write_bytes(out, piece[BODY_SUFFIX]);
    out = write_bytes(out, piece[AFTER_BODY]);
    assert(out == PyBytes_AS_STRING(frame) + frame_size);
    return frame;
}

/* utc_timestamp() -> bytes: the date and time are formatted once a second. */
static PyObject *utc_timestamp(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    struct timespec now;
    if (clock_gettime(CLOCK_REALTIME, &now) != 0) {
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    ModuleState *state = module_state(module);
    if (now.tv_sec != state->second || state->second_prefix[0] == '\0') {
        struct tm utc;
        if (gmtime_r(&now.tv_sec, &utc) == NULL || utc.tm_year + 1900 < 1 || utc.tm_year + 1900 > 9999) {
            PyErr_SetString(PyExc_OverflowError, "the clock's year is outside 1 to 9999: no RFC 3339 timestamp");
            return NULL;
        }
        snprintf(state->second_prefix, sizeof state->second_prefix, "%04d-%02d-%02dT%02d:%02d:%02d.", utc.tm_year + 1900,
                 utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec);
        state->second = now.tv_sec;
    }
    char timestamp[TIMESTAMP_BYTES];
    memcpy(timestamp, state->second_prefix, SECOND_PREFIX_BYTES);
    long microseconds = now.tv_nsec / 1000;
    for (int digit = 5; digit >= 0; digit--) {
        timestamp[SECOND_PREFIX_BYTES + digit] = (char)('0' + microseconds % 10);
        microseconds /= 10;
    }
    memcpy(timestamp + SECOND_PREFIX_BYTES + 6, "+00:00", 6);
    return PyBytes_FromStringAndSize(timestamp, TIMESTAMP_BYTES);
}

static PyMethodDef methods[] = {
    {"text_chunk", (PyCFunction)(void (*)(void))text_chunk, METH_FASTCALL,
     "The serialized ChatResponse of a text delta frame, or None when the general path must write it."},
    {"utc_timestamp", utc_timestamp, METH_NOARGS, "The time now, as RFC 3339 UTC with microseconds, in ASCII bytes."},
    {NULL, NULL, 0, NULL},
};

static int exec_module(PyObject *module)
{
    PyObject *orjson = PyImport_ImportModule("orjson");
    if (orjson == NULL) {
        return -1;
    }
    ModuleState *state = module_state(module);
    state->orjson_dumps = PyObject_GetAttrString(orjson, "dumps");
    Py_DECREF(orjson);
    if (state->orjson_dumps == NULL) {
        return -1;
    }
    return 0;
}

static int traverse_module(PyObject *module, visitproc visit, void *arg)
{
    Py_VISIT(module_state(module)->orjson_dumps);
    return 0;
}

static int clear_module(PyObject *module)
{
    Py_CLEAR(module_state(module)->orjson_dumps);
    return 0;
}

static void free_module(void *module)
{
    clear_module((PyObject *)module);
}

static PyModuleDef_Slot slots[] = {
    {Py_mod_exec, exec_module},
#ifdef Py_mod_multiple_interpreters /* Python 3.12 and later */
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
    {0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "e2a_grpc.chat._frame_bytes",
    .m_doc = "The bytes most Chat frames need, made in C (see the source).",
    .m_size = sizeof(ModuleState),
    .m_methods = methods,
    .m_slots = slots,
    .m_traverse = traverse_module,
    .m_clear = clear_module,
    .m_free = free_module,
};

PyMODINIT_FUNC PyInit__frame_bytes(void)
{
    return PyModuleDef_Init(&module_def);
}
