package e2ajson

import (
	"bytes"
	"iter"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Helpers over canonical JSON text, as the normalizer writes it: valid, no whitespace, object keys
// unique. A value's JSON type is known from its first byte.

// typeName is the JSON type of a value as Python's error messages name it.
func typeName(value []byte) string {
	switch value[0] {
	case 'n':
		return "null"
	case 't', 'f':
		return "boolean"
	case '"':
		return "string"
	case '[':
		return "array"
	case '{':
		return "object"
	}
	if isFloat(value) {
		return "number"
	}
	return "integer"
}

func isNull(value []byte) bool   { return value[0] == 'n' }
func isString(value []byte) bool { return value[0] == '"' }
func isObject(value []byte) bool { return value[0] == '{' }
func isBool(value []byte) bool   { return value[0] == 't' || value[0] == 'f' }
func isNumber(value []byte) bool { return value[0] == '-' || ('0' <= value[0] && value[0] <= '9') }

// isFloat reports whether a number has a fraction or an exponent: Python reads it as a float.
func isFloat(number []byte) bool {
	for _, c := range number {
		if c == '.' || c == 'e' || c == 'E' {
			return true
		}
	}
	return false
}

func isInteger(value []byte) bool { return isNumber(value) && !isFloat(value) }

// isZero reports whether an integer's text is zero ("0" or "-0").
func isZero(integer []byte) bool { return strings.TrimPrefix(string(integer), "-") == "0" }

// intString is an integer's text as Python's str() writes the int it reads ("-0" is 0).
func intString(integer []byte) string {
	if isZero(integer) {
		return "0"
	}
	return string(integer)
}

// truthy is Python's truth value of the value read from JSON.
func truthy(value []byte) bool {
	switch value[0] {
	case 'n', 'f':
		return false
	case 't':
		return true
	case '"', '[', '{':
		return len(value) > 2 // not "", [] or {}
	}
	if isFloat(value) {
		f, _ := strconv.ParseFloat(string(value), 64)
		return f != 0
	}
	return !isZero(value)
}

// decodeString is the text of a canonical JSON string. A lone surrogate, which a Go string cannot
// hold, comes back as U+FFFD and lone is true.
func decodeString(quoted []byte) (s string, lone bool) {
	content := quoted[1 : len(quoted)-1]
	backslash := bytes.IndexByte(content, '\\')
	if backslash < 0 {
		return string(content), false
	}
	out := make([]byte, 0, len(content))
	out = append(out, content[:backslash]...)
	for i := backslash; i < len(content); i++ {
		c := content[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		switch content[i] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u': // a control character or a lone surrogate
			r, _ := hex4(string(content[i+1:i+5]), 0)
			i += 4
			if 0xd800 <= r && r < 0xe000 {
				lone = true
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
		default: // '"' or '\\'
			out = append(out, content[i])
		}
	}
	return string(out), lone
}

// keyName is an object key (canonical quoted text) for an error path: its text or, if it holds a
// lone surrogate (not Go string text), its JSON escapes as they are.
func keyName(quoted []byte) string {
	if s, lone := decodeString(quoted); !lone {
		return s
	}
	return string(quoted[1 : len(quoted)-1])
}

// skipValue returns the index just past the canonical value starting at text[i].
func skipValue(text []byte, i int) int {
	switch text[i] {
	case '"':
		return skipString(text, i)
	case '[', '{':
		depth := 0
		for {
			switch text[i] {
			case '"':
				i = skipString(text, i)
				continue
			case '[', '{':
				depth++
			case ']', '}':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
	}
	for i < len(text) && text[i] != ',' && text[i] != ']' && text[i] != '}' {
		i++
	}
	return i
}

func skipString(text []byte, i int) int {
	for i++; text[i] != '"'; i++ {
		if text[i] == '\\' {
			i++
		}
	}
	return i + 1
}

// members yields the quoted key and the value of each member of a canonical object, in order.
func members(object []byte) iter.Seq2[[]byte, []byte] {
	return func(yield func(key, value []byte) bool) {
		for i := 1; i < len(object)-1; {
			colon := skipString(object, i)
			end := skipValue(object, colon+1)
			if !yield(object[i:colon], object[colon+1:end]) {
				return
			}
			i = end + 1 // past the ','
		}
	}
}

// member is the value of a key in a canonical object; the key is given as its quoted text.
func member(object []byte, quotedKey string) ([]byte, bool) {
	for key, value := range members(object) {
		if string(key) == quotedKey {
			return value, true
		}
	}
	return nil, false
}

// objectBuilder writes a canonical object member by member.
type objectBuilder struct{ buf []byte }

func (b *objectBuilder) add(quotedKey, value []byte) {
	if len(b.buf) == 0 {
		b.buf = append(b.buf, '{')
	} else {
		b.buf = append(b.buf, ',')
	}
	b.buf = append(b.buf, quotedKey...)
	b.buf = append(b.buf, ':')
	b.buf = append(b.buf, value...)
}

func (b *objectBuilder) text() []byte {
	if len(b.buf) == 0 {
		return []byte("{}")
	}
	return append(b.buf, '}')
}

// pyFloatRepr writes f as Python's repr does (for messages and Python's str of a number): as
// appendFloat, but positional from exponent -4 on and with at least two exponent digits (1e-05).
func pyFloatRepr(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return string(formatFloat(nil, f, -4, 2))
}

// appendFloat writes a finite double as the wire JSON writes floats: the shortest digits that read
// back as f, positional with at least one fraction digit for decimal exponents -5 to 15, else
// d.ddde±X with the exponent's sign always written and no leading zeros (1e-6, 1e+16).
func appendFloat(dst []byte, f float64) []byte {
	return formatFloat(dst, f, -5, 1)
}

// formatFloat writes the shortest digits that read back as f: positional, with at least one
// fraction digit, for decimal exponents from lowest to 15, else as d.ddde±X with at least
// exponentDigits exponent digits.
func formatFloat(dst []byte, f float64, lowest, exponentDigits int) []byte {
	scientific := strconv.FormatFloat(f, 'e', -1, 64) // e.g. -1.5e-07
	mantissa, power, _ := strings.Cut(scientific, "e")
	exponent, _ := strconv.Atoi(power)
	if lowest <= exponent && exponent < 16 {
		start := len(dst)
		dst = strconv.AppendFloat(dst, f, 'f', -1, 64)
		if !bytes.ContainsRune(dst[start:], '.') {
			dst = append(dst, '.', '0')
		}
		return dst
	}
	dst = append(dst, mantissa...)
	sign := byte('+')
	if exponent < 0 {
		sign, exponent = '-', -exponent
	}
	return append(append(dst, 'e', sign), leftPad(strconv.Itoa(exponent), exponentDigits)...)
}

// firstLoneSurrogate is the first lone surrogate of a canonical JSON string, which holds one only
// as a \uXXXX escape.
func firstLoneSurrogate(quoted []byte) (rune, bool) {
	for i := 1; i < len(quoted)-1; i++ {
		if quoted[i] != '\\' {
			continue
		}
		if quoted[i+1] == 'u' {
			if r, _ := hex4(string(quoted[i+2:i+6]), 0); 0xd800 <= r && r < 0xe000 {
				return r, true
			}
		}
		i++ // past the escaped character
	}
	return 0, false
}

// pyStrRepr quotes s as Python's repr does, for messages that show a value.
func pyStrRepr(s string) string {
	quote := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		quote = '"'
	}
	out := []byte{quote}
	for _, r := range s {
		switch {
		case r == rune(quote) || r == '\\':
			out = append(out, '\\', byte(r))
		case r == '\n':
			out = append(out, '\\', 'n')
		case r == '\r':
			out = append(out, '\\', 'r')
		case r == '\t':
			out = append(out, '\\', 't')
		case unicode.IsPrint(r):
			out = utf8.AppendRune(out, r)
		case r <= 0xff:
			out = append(out, '\\', 'x', hexDigits[r>>4], hexDigits[r&0xf])
		case r <= 0xffff:
			out = append(out, `\u`+leftPad(strconv.FormatInt(int64(r), 16), 4)...)
		default:
			out = append(out, `\U`+leftPad(strconv.FormatInt(int64(r), 16), 8)...)
		}
	}
	return string(append(out, quote))
}

// leftPad pads digits with zeros to width.
func leftPad(digits string, width int) string {
	if len(digits) >= width {
		return digits
	}
	return strings.Repeat("0", width-len(digits)) + digits
}

// isPySpace is Python's str.isspace for one character: Go's unicode.IsSpace plus the four
// information separators U+001C to U+001F, which Python's str.strip also removes.
func isPySpace(r rune) bool { return unicode.IsSpace(r) || (0x1c <= r && r <= 0x1f) }
