/*
 * Whether JSON texts are canonical: exactly what e2a_grpc's own codec (orjson) writes for the value
 * they hold. Such a text decodes losslessly with orjson and re-encodes to itself, so jsontext reads
 * it with orjson alone, without writing it back to compare.
 *
 * Written in C because the check runs over every byte of every free-form text read: in Python it
 * costs more than orjson's own parse.
 *
 * is_canonical_object(text) is exact: it answers as jsontext.canonical_object(text) is not None
 * does (orjson.dumps(orjson.loads(text)) == text, for a JSON object), which the tests check against
 * each other. floats_finite(value) spares jsontext.dumps reading its output back to find a NaN or an
 * infinity that orjson wrote as null.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

/* orjson refuses to write more than this many levels of nesting (it raises at 255). */
#define MAX_LEVELS 254
/* Keys kept in place before a growing array is allocated; objects up to this size are checked for
 * repeated keys pair by pair, larger ones through a hash table. */
#define INLINE_KEYS 8
/* orjson's longest float text is 24 characters ("-1.2345678901234567e-308"). */
#define MAX_FLOAT_TEXT 32

/* The module's state: each (sub)interpreter that imports the module has its own. */
typedef struct {
    PyObject *orjson_dumps; /* floats are compared with the text orjson writes for them */
} ModuleState;

static ModuleState *module_state(PyObject *module)
{
    return (ModuleState *)PyModule_GetState(module);
}

/* --- JSON ---------------------------------------------------------------------------------- */

typedef struct {
    const unsigned char *p;
    const unsigned char *end;
    PyObject *orjson_dumps;
} Cursor;

typedef struct {
    const unsigned char *text;
    Py_ssize_t size;
} Span;

typedef struct {
    Span inline_spans[INLINE_KEYS];
    Span *spans;
    Py_ssize_t count;
    Py_ssize_t capacity;
} Spans;

static void spans_init(Spans *spans)
{
    spans->spans = spans->inline_spans;
    spans->count = 0;
    spans->capacity = INLINE_KEYS;
}

static void spans_free(Spans *spans)
{
    if (spans->spans != spans->inline_spans) {
        PyMem_Free(spans->spans);
    }
}

/* 0, or -1 with MemoryError set. */
static int spans_add(Spans *spans, const unsigned char *text, Py_ssize_t size)
{
    if (spans->count == spans->capacity) {
        Py_ssize_t capacity = spans->capacity * 2;
        Span *grown = PyMem_Malloc((size_t)capacity * sizeof(Span));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        memcpy(grown, spans->spans, (size_t)spans->count * sizeof(Span));
        spans_free(spans);
        spans->spans = grown;
        spans->capacity = capacity;
    }
    spans->spans[spans->count].text = text;
    spans->spans[spans->count].size = size;
    spans->count++;
    return 0;
}

static int same_span(const Span *a, const Span *b)
{
    return a->size == b->size && memcmp(a->text, b->text, (size_t)a->size) == 0;
}

static uint64_t span_hash(const Span *span)
{
    uint64_t hash = 14695981039346656037ULL; /* FNV-1a */
    for (Py_ssize_t i = 0; i < span->size; i++) {
        hash = (hash ^ span->text[i]) * 1099511628211ULL;
    }
    return hash;
}

/* 1 if no two spans are equal, 0 if two are, -1 with MemoryError set. Canonical texts spell each
 * string one way, so equal strings are equal spans. */
static int spans_distinct(const Spans *spans)
{
    Py_ssize_t count = spans->count;
    if (count <= INLINE_KEYS) {
        for (Py_ssize_t i = 1; i < count; i++) {
            for (Py_ssize_t j = 0; j < i; j++) {
                if (same_span(&spans->spans[i], &spans->spans[j])) {
                    return 0;
                }
            }
        }
        return 1;
    }
    size_t slots = 1;
    while (slots < (size_t)count * 2) {
        slots <<= 1;
    }
    const Span **table = PyMem_Calloc(slots, sizeof(Span *));
    if (table == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int distinct = 1;
    for (Py_ssize_t i = 0; i < count && distinct; i++) {
        const Span *span = &spans->spans[i];
        size_t slot = (size_t)span_hash(span) & (slots - 1);
        while (table[slot] != NULL) {
            if (same_span(table[slot], span)) {
                distinct = 0;
                break;
            }
            slot = (slot + 1) & (slots - 1);
        }
        table[slot] = span;
    }
    PyMem_Free(table);
    return distinct;
}

static int is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* The first byte at or after p that is '"', '\\' or a control character, or a byte before it: what
 * is skipped is string content as it is. Long strings (base64, prose) are most of a message's bytes. */
#ifdef __SSE2__
#include <emmintrin.h>

static const unsigned char *skip_plain_run(const unsigned char *p, const unsigned char *end)
{
    const __m128i last_control = _mm_set1_epi8(0x1f);
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    while (end - p >= 16) {
        __m128i bytes = _mm_loadu_si128((const __m128i *)p);
        __m128i control = _mm_cmpeq_epi8(_mm_max_epu8(bytes, last_control), last_control);
        __m128i special = _mm_or_si128(control, _mm_or_si128(_mm_cmpeq_epi8(bytes, quote), _mm_cmpeq_epi8(bytes, backslash)));
        int found = _mm_movemask_epi8(special);
        if (found) {
            return p + __builtin_ctz((unsigned)found);
        }
        p += 16;
    }
    return p;
}
#else
static const unsigned char *skip_plain_run(const unsigned char *p, const unsigned char *end)
{
    const uint64_t ones = 0x0101010101010101ULL;
    const uint64_t highs = 0x8080808080808080ULL;
    while (end - p >= 8) {
        uint64_t word;
        memcpy(&word, p, sizeof word);
        uint64_t quotes = word ^ (ones * '"');
        uint64_t backslashes = word ^ (ones * '\\');
        /* Whether any byte is one of them (as one test: borrows blur which one). */
        uint64_t found = ((quotes - ones) & ~quotes) | ((backslashes - ones) & ~backslashes) | ((word - ones * 0x20) & ~word);
        if (found & highs) {
            return p;
        }
        p += 8;
    }
    return p;
}
#endif

/* A string at cursor->p (a '"'), spelled as orjson writes it: UTF-8 left as it is (the caller's
 * text is valid UTF-8), '"' and '\' escaped, control characters as \b \t \n \f \r or \u00xx. */
static int json_string(Cursor *cursor, Span *content)
{
    const unsigned char *p = cursor->p + 1;
    const unsigned char *end = cursor->end;
    content->text = p;
    for (;;) {
        p = skip_plain_run(p, end);
        if (p >= end) {
            return 0;
        }
        unsigned char c = *p;
        if (c == '"') {
            content->size = p - content->text;
            cursor->p = p + 1;
            return 1;
        }
        if (c < 0x20) {
            return 0;
        }
        if (c != '\\') {
            p++;
            continue;
        }
        if (end - p < 2) {
            return 0;
        }
        switch (p[1]) {
        case '"':
        case '\\':
        case 'b':
        case 't':
        case 'n':
        case 'f':
        case 'r':
            p += 2;
            continue;
        case 'u': {
            if (end - p < 6 || p[2] != '0' || p[3] != '0' || (p[4] != '0' && p[4] != '1')) {
                return 0;
            }
            int low = p[5];
            int code;
            if (is_digit((unsigned char)low)) {
                code = low - '0';
            }
            else if (low >= 'a' && low <= 'f') {
                code = low - 'a' + 10;
            }
            else {
                return 0;
            }
            code += (p[4] - '0') * 16;
            if (code == '\b' || code == '\t' || code == '\n' || code == '\f' || code == '\r') {
                return 0; /* orjson writes these with their short escapes */
            }
            p += 6;
            continue;
        }
        default:
            return 0;
        }
    }
}

/* A float's text is canonical if it is what orjson writes for the double it reads as. */
static int canonical_float(const unsigned char *text, Py_ssize_t size, PyObject *orjson_dumps)
{
    char buffer[MAX_FLOAT_TEXT + 1];
    if (size > MAX_FLOAT_TEXT) {
        return 0; /* more digits than the shortest spelling has */
    }
    memcpy(buffer, text, (size_t)size);
    buffer[size] = '\0';
    /* No overflow exception: a text out of range reads as an infinity, which orjson writes as null. */
    double value = PyOS_string_to_double(buffer, NULL, NULL);
    if (value == -1.0 && PyErr_Occurred()) {
        return -1;
    }
    PyObject *number = PyFloat_FromDouble(value);
    if (number == NULL) {
        return -1;
    }
    PyObject *written = PyObject_CallOneArg(orjson_dumps, number);
    Py_DECREF(number);
    if (written == NULL) {
        return -1;
    }
    int same = PyBytes_GET_SIZE(written) == size && memcmp(PyBytes_AS_STRING(written), text, (size_t)size) == 0;
    Py_DECREF(written);
    return same;
}

/* A number at cursor->p. orjson reads integers from -2**63 to 2**64-1 as ints (and writes them
 * back digit for digit); beyond, it reads floats. */
static int json_number(Cursor *cursor)
{
    const unsigned char *start = cursor->p;
    const unsigned char *p = start;
    const unsigned char *end = cursor->end;
    int negative = p < end && *p == '-';
    if (negative) {
        p++;
    }
    const unsigned char *digits = p;
    if (p >= end || !is_digit(*p)) {
        return 0;
    }
    if (*p == '0') {
        p++;
    }
    else {
        while (p < end && is_digit(*p)) {
            p++;
        }
    }
    Py_ssize_t digit_count = p - digits;
    int is_float = 0;
    if (p < end && *p == '.') {
        is_float = 1;
        p++;
        if (p >= end || !is_digit(*p)) {
            return 0;
        }
        while (p < end && is_digit(*p)) {
            p++;
        }
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        is_float = 1;
        p++;
        if (p < end && (*p == '+' || *p == '-')) {
            p++;
        }
        if (p >= end || !is_digit(*p)) {
            return 0;
        }
        while (p < end && is_digit(*p)) {
            p++;
        }
    }
    cursor->p = p;
    if (is_float) {
        return canonical_float(start, p - start, cursor->orjson_dumps);
    }
    if (negative) {
        if (digit_count == 1 && digits[0] == '0') {
            return 0; /* -0 reads as 0 */
        }
        return digit_count < 19 || (digit_count == 19 && memcmp(digits, "9223372036854775808", 19) <= 0);
    }
    return digit_count < 20 || (digit_count == 20 && memcmp(digits, "18446744073709551615", 20) <= 0);
}

static int json_value(Cursor *cursor, int level);

static int json_literal(Cursor *cursor, const char *literal, Py_ssize_t size)
{
    if (cursor->end - cursor->p < size || memcmp(cursor->p, literal, (size_t)size) != 0) {
        return 0;
    }
    cursor->p += size;
    return 1;
}

/* An array at cursor->p (a '['), at nesting level ``level``. */
static int json_array(Cursor *cursor, int level)
{
    if (level > MAX_LEVELS) {
        return 0;
    }
    cursor->p++;
    if (cursor->p < cursor->end && *cursor->p == ']') {
        cursor->p++;
        return 1;
    }
    for (;;) {
        int found = json_value(cursor, level + 1);
        if (found != 1) {
            return found;
        }
        if (cursor->p >= cursor->end) {
            return 0;
        }
        unsigned char next = *cursor->p++;
        if (next == ']') {
            return 1;
        }
        if (next != ',') {
            return 0;
        }
    }
}

/* An object at cursor->p (a '{'), at nesting level ``level``: orjson keeps one of repeated keys. */
static int json_object(Cursor *cursor, int level)
{
    if (level > MAX_LEVELS) {
        return 0;
    }
    cursor->p++;
    if (cursor->p < cursor->end && *cursor->p == '}') {
        cursor->p++;
        return 1;
    }
    Spans keys;
    spans_init(&keys);
    int found;
    for (;;) {
        Span key;
        if (cursor->p >= cursor->end || *cursor->p != '"' || !json_string(cursor, &key)) {
            found = 0;
            break;
        }
        if (spans_add(&keys, key.text, key.size) < 0) {
            found = -1;
            break;
        }
        if (cursor->p >= cursor->end || *cursor->p != ':') {
            found = 0;
            break;
        }
        cursor->p++;
        found = json_value(cursor, level + 1);
        if (found != 1) {
            break;
        }
        if (cursor->p >= cursor->end) {
            found = 0;
            break;
        }
        unsigned char next = *cursor->p++;
        if (next == '}') {
            found = spans_distinct(&keys);
            break;
        }
        if (next != ',') {
            found = 0;
            break;
        }
    }
    spans_free(&keys);
    return found;
}

/* 1 if the value at cursor->p is canonical, 0 if not, -1 with an exception set. */
static int json_value(Cursor *cursor, int level)
{
    if (cursor->p >= cursor->end) {
        return 0;
    }
    switch (*cursor->p) {
    case '{':
        return json_object(cursor, level);
    case '[':
        return json_array(cursor, level);
    case '"': {
        Span content;
        return json_string(cursor, &content);
    }
    case 't':
        return json_literal(cursor, "true", 4);
    case 'f':
        return json_literal(cursor, "false", 5);
    case 'n':
        return json_literal(cursor, "null", 4);
    default:
        return json_number(cursor);
    }
}

/* Whether UTF-8 ``text`` is a canonical JSON object; -1 with an exception set. */
static int canonical_object(const unsigned char *text, Py_ssize_t size, PyObject *orjson_dumps)
{
    Cursor cursor = {text, text + size, orjson_dumps};
    if (cursor.p == cursor.end || *cursor.p != '{') {
        return 0;
    }
    int found = json_object(&cursor, 1);
    return found == 1 ? cursor.p == cursor.end : found;
}

static PyObject *is_canonical_object(PyObject *module, PyObject *text)
{
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "expected a str, got %.100s", Py_TYPE(text)->tp_name);
        return NULL;
    }
    Py_ssize_t size;
    const char *utf8 = PyUnicode_AsUTF8AndSize(text, &size);
    if (utf8 == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
            return NULL;
        }
        PyErr_Clear(); /* a lone surrogate: no JSON parser reads that text */
        Py_RETURN_FALSE;
    }
    int found = canonical_object((const unsigned char *)utf8, size, module_state(module)->orjson_dumps);
    if (found < 0) {
        return NULL;
    }
    return PyBool_FromLong(found);
}

/* --- finite floats ------------------------------------------------------------------------- */

/* 1: every float in value is finite; 0: one is NaN or infinite (orjson writes it as null); -1: the
 * walk cannot tell, as value holds a type other than dict (with str keys), list, tuple, str, int,
 * bool, None and float (a subclass or an Enum member may hold a float the walk does not see), or
 * nests deeper than MAX_LEVELS. No Python code runs during the walk, so nothing changes under it. */
static int floats_finite_at(PyObject *value, int level)
{
    PyTypeObject *type = Py_TYPE(value);
    if (type == &PyFloat_Type) {
        return isfinite(PyFloat_AS_DOUBLE(value)) ? 1 : 0;
    }
    if (type == &PyUnicode_Type || type == &PyLong_Type || type == &PyBool_Type || value == Py_None) {
        return 1;
    }
    if (level >= MAX_LEVELS) {
        return -1;
    }
    if (type == &PyDict_Type) {
        Py_ssize_t position = 0;
        PyObject *key, *item;
        while (PyDict_Next(value, &position, &key, &item)) {
            if (!PyUnicode_CheckExact(key)) {
                return -1;
            }
            int finite = floats_finite_at(item, level + 1);
            if (finite != 1) {
                return finite;
            }
        }
        return 1;
    }
    if (type == &PyList_Type || type == &PyTuple_Type) {
        Py_ssize_t size = PySequence_Fast_GET_SIZE(value);
        PyObject **items = PySequence_Fast_ITEMS(value);
        for (Py_ssize_t i = 0; i < size; i++) {
            int finite = floats_finite_at(items[i], level + 1);
            if (finite != 1) {
                return finite;
            }
        }
        return 1;
    }
    return -1;
}

static PyObject *floats_finite(PyObject *Py_UNUSED(module), PyObject *value)
{
    int finite = floats_finite_at(value, 0);
    if (finite < 0) {
        Py_RETURN_NONE;
    }
    return PyBool_FromLong(finite);
}

/* --- module -------------------------------------------------------------------------------- */

static PyMethodDef methods[] = {
    {"is_canonical_object", is_canonical_object, METH_O,
     "Whether a str is a JSON object exactly as orjson writes the value it reads as."},
    {"floats_finite", floats_finite, METH_O,
     "True if every float in a JSON value is finite, False if one is not, None if the walk cannot tell."},
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

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT,
    .m_name = "e2a_grpc._canonical",
    .m_doc = "Whether JSON texts are exactly as e2a_grpc writes them, and whether a JSON value's floats are finite.",
    .m_size = sizeof(ModuleState),
    .m_methods = methods,
    .m_slots = slots,
    .m_traverse = traverse_module,
    .m_clear = clear_module,
    .m_free = free_module,
};

PyMODINIT_FUNC PyInit__canonical(void)
{
    return PyModuleDef_Init(&module_definition);
}
