package e2ajson

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of arrays and objects in a JSON text ("[]" is 1 level, "[[]]" 2),
// as in the Python reference (jsontext.MAX_DEPTH). It holds for the wire JSON document, whose own
// object counts, and for the free-form JSON text of each protobuf field.
const MaxDepth = 512

// maxIntDigits is the longest integer Python reads from JSON text (its int/str conversion limit);
// longer integers are an error there, so they are here too.
const maxIntDigits = 4300

// A normalizer checks one JSON value of src and appends its canonical text to dst: no insignificant
// whitespace, number text as written, strings with only the escapes the E2A wire JSON uses (see
// appendQuoted) and duplicate object keys resolved as Python's json module does (the key keeps its
// first position and takes its last value). A string has one canonical text, so keys are compared
// by it.
type normalizer struct {
	src string
	pos int
	dst []byte
	// field is the field named by errors: "$" for a whole document, as Python does.
	field string
	// members is a stack of the members of the objects being read, for finding duplicate keys.
	members []memberSpan
}

// memberSpan locates one object member in dst: the key's quoted text is dst[key:colon], the value
// dst[colon+1:end].
type memberSpan struct{ key, colon, end int }

func (n *normalizer) syntaxError(format string, args ...any) *FieldError {
	return newFieldError(n.field, "invalid JSON text: "+fmt.Sprintf(format, args...))
}

func (n *normalizer) skipSpace() {
	for n.pos < len(n.src) {
		switch n.src[n.pos] {
		case ' ', '\t', '\n', '\r':
			n.pos++
		default:
			return
		}
	}
}

// document normalizes src as one whole JSON text: a value with nothing but whitespace after it.
// depth is the nesting level the value has if it is an array or object.
func (n *normalizer) document(depth int) error {
	if err := n.value(depth); err != nil {
		return err
	}
	n.skipSpace()
	if n.pos < len(n.src) {
		return n.syntaxError("extra data at offset %d", n.pos)
	}
	return nil
}

// value normalizes the value at n.pos; depth is its nesting level if it is an array or object.
func (n *normalizer) value(depth int) error {
	n.skipSpace()
	if n.pos >= len(n.src) {
		return n.syntaxError("unexpected end of text, expecting a value")
	}
	switch c := n.src[n.pos]; {
	case c == '{':
		return n.object(depth)
	case c == '[':
		return n.array(depth)
	case c == '"':
		return n.string()
	case c == '-' || ('0' <= c && c <= '9'):
		return n.number()
	default:
		for _, literal := range [...]string{"true", "false", "null"} {
			if len(n.src)-n.pos >= len(literal) && n.src[n.pos:n.pos+len(literal)] == literal {
				n.dst = append(n.dst, literal...)
				n.pos += len(literal)
				return nil
			}
		}
		for _, constant := range [...]string{"NaN", "Infinity"} {
			if len(n.src)-n.pos >= len(constant) && n.src[n.pos:n.pos+len(constant)] == constant {
				return n.syntaxError("%s is not a JSON value", constant)
			}
		}
		return n.syntaxError("unexpected character %q at offset %d, expecting a value", c, n.pos)
	}
}

func (n *normalizer) checkDepth(depth int) error {
	if depth > MaxDepth {
		return fieldErrorf(n.field, "JSON nesting deeper than %d levels", MaxDepth)
	}
	return nil
}

func (n *normalizer) array(depth int) error {
	if err := n.checkDepth(depth); err != nil {
		return err
	}
	n.pos++
	n.dst = append(n.dst, '[')
	n.skipSpace()
	if n.pos < len(n.src) && n.src[n.pos] == ']' {
		n.pos++
		n.dst = append(n.dst, ']')
		return nil
	}
	for {
		if err := n.value(depth + 1); err != nil {
			return err
		}
		n.skipSpace()
		if n.pos >= len(n.src) {
			return n.syntaxError("unexpected end of text in an array")
		}
		c := n.src[n.pos]
		n.pos++
		n.dst = append(n.dst, c)
		switch c {
		case ',':
		case ']':
			return nil
		default:
			return n.syntaxError("unexpected character %q at offset %d, expecting ',' or ']'", c, n.pos-1)
		}
	}
}

// smallObject is the member count up to which duplicate keys are found by comparing with each
// earlier key; bigger objects index their keys in a map.
const smallObject = 16

func (n *normalizer) object(depth int) error {
	if err := n.checkDepth(depth); err != nil {
		return err
	}
	start := len(n.dst)
	n.pos++
	n.dst = append(n.dst, '{')
	n.skipSpace()
	if n.pos < len(n.src) && n.src[n.pos] == '}' {
		n.pos++
		n.dst = append(n.dst, '}')
		return nil
	}
	base := len(n.members)
	var index map[string]struct{} // the keys so far, once the object outgrows smallObject
	duplicates := false
	for {
		n.skipSpace()
		if n.pos >= len(n.src) || n.src[n.pos] != '"' {
			return n.syntaxError("expecting a property name in double quotes at offset %d", n.pos)
		}
		key := len(n.dst)
		if err := n.string(); err != nil {
			return err
		}
		colon := len(n.dst)
		n.skipSpace()
		if n.pos >= len(n.src) || n.src[n.pos] != ':' {
			return n.syntaxError("expecting ':' at offset %d", n.pos)
		}
		n.pos++
		n.dst = append(n.dst, ':')
		if err := n.value(depth + 1); err != nil {
			return err
		}
		// Look for an earlier member with the same key.
		keyText := n.dst[key:colon]
		count := len(n.members) - base
		if index == nil && count >= smallObject {
			index = make(map[string]struct{}, 2*count)
			for _, member := range n.members[base:] {
				index[string(n.dst[member.key:member.colon])] = struct{}{}
			}
		}
		if index != nil {
			if _, seen := index[string(keyText)]; seen {
				duplicates = true
			} else {
				index[string(keyText)] = struct{}{}
			}
		} else {
			for _, member := range n.members[base:] {
				if bytes.Equal(n.dst[member.key:member.colon], keyText) {
					duplicates = true
					break
				}
			}
		}
		n.members = append(n.members, memberSpan{key: key, colon: colon, end: len(n.dst)})
		n.skipSpace()
		if n.pos >= len(n.src) {
			return n.syntaxError("unexpected end of text in an object")
		}
		c := n.src[n.pos]
		n.pos++
		switch c {
		case ',':
			n.dst = append(n.dst, ',')
		case '}':
			n.dst = append(n.dst, '}')
			if duplicates {
				n.dedupe(start, n.members[base:])
			}
			n.members = n.members[:base]
			return nil
		default:
			return n.syntaxError("unexpected character %q at offset %d, expecting ',' or '}'", c, n.pos-1)
		}
	}
}

// dedupe rewrites the object at dst[start:] so that each key appears once, where it first
// appeared, with the value it was last given: what a Python dict built from the pairs holds.
func (n *normalizer) dedupe(start int, members []memberSpan) {
	last := make(map[string]int, len(members))
	for i, member := range members {
		last[string(n.dst[member.key:member.colon])] = i
	}
	out := make([]byte, 0, len(n.dst)-start)
	out = append(out, '{')
	for _, member := range members {
		key := string(n.dst[member.key:member.colon])
		winner, pending := last[key]
		if !pending {
			continue // written already, at the key's first position
		}
		delete(last, key)
		if len(out) > 1 {
			out = append(out, ',')
		}
		value := members[winner]
		out = append(out, n.dst[member.key:member.colon+1]...)
		out = append(out, n.dst[value.colon+1:value.end]...)
	}
	out = append(out, '}')
	n.dst = append(n.dst[:start], out...)
}

func (n *normalizer) number() error {
	src, start := n.src, n.pos
	i := start
	if src[i] == '-' {
		i++
		if len(src)-i >= len("Infinity") && src[i:i+len("Infinity")] == "Infinity" {
			return n.syntaxError("-Infinity is not a JSON value")
		}
	}
	digits := i
	switch {
	case i < len(src) && src[i] == '0':
		i++
	case i < len(src) && '1' <= src[i] && src[i] <= '9':
		for i < len(src) && '0' <= src[i] && src[i] <= '9' {
			i++
		}
	default:
		return n.syntaxError("invalid number at offset %d", start)
	}
	intDigits := i - digits
	float := false
	if i < len(src) && src[i] == '.' {
		i++
		if i >= len(src) || src[i] < '0' || src[i] > '9' {
			return n.syntaxError("invalid number at offset %d", start)
		}
		for i < len(src) && '0' <= src[i] && src[i] <= '9' {
			i++
		}
		float = true
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		if i >= len(src) || src[i] < '0' || src[i] > '9' {
			return n.syntaxError("invalid number at offset %d", start)
		}
		for i < len(src) && '0' <= src[i] && src[i] <= '9' {
			i++
		}
		float = true
	}
	text := src[start:i]
	if float {
		// A double must hold it, as in Python; the text is kept as written all the same.
		if f, err := strconv.ParseFloat(text, 64); err != nil && math.IsInf(f, 0) {
			return n.syntaxError("number %s is out of range", text)
		}
	} else if intDigits > maxIntDigits {
		return n.syntaxError("integer with %d digits exceeds the limit of %d digits", intDigits, maxIntDigits)
	}
	n.dst = append(n.dst, text...)
	n.pos = i
	return nil
}

// string normalizes the JSON string at n.pos, which starts with '"'.
func (n *normalizer) string() error {
	src := n.src
	i := n.pos + 1
	n.dst = append(n.dst, '"')
	for {
		// Copy the run of bytes that need no rewriting in one go.
		run := i
		for i < len(src) {
			i = skipPlainOctets(src, i)
			if i < len(src) && plainASCII[src[i]] {
				i++
				continue
			}
			if i >= len(src) {
				break
			}
			if src[i] < utf8.RuneSelf {
				break // '"', '\\' or a control character
			}
			r, size := utf8.DecodeRuneInString(src[i:])
			if r == utf8.RuneError && size == 1 {
				n.dst = append(n.dst, src[run:i]...)
				return fieldErrorf(n.field, "JSON text is not UTF-8: invalid byte 0x%02x at offset %d", src[i], i)
			}
			i += size
		}
		n.dst = append(n.dst, src[run:i]...)
		if i >= len(src) {
			return n.syntaxError("unterminated string starting at offset %d", n.pos)
		}
		switch c := src[i]; {
		case c == '"':
			n.dst = append(n.dst, '"')
			n.pos = i + 1
			return nil
		case c < 0x20:
			return n.syntaxError("invalid control character at offset %d", i)
		}
		// A backslash escape.
		if i+1 >= len(src) {
			return n.syntaxError("unterminated string starting at offset %d", n.pos)
		}
		switch e := src[i+1]; e {
		case '"', '\\', 'b', 'f', 'n', 'r', 't':
			n.dst = append(n.dst, '\\', e)
			i += 2
		case '/':
			n.dst = append(n.dst, '/')
			i += 2
		case 'u':
			r, ok := hex4(src, i+2)
			if !ok {
				return n.syntaxError("invalid \\uXXXX escape at offset %d", i)
			}
			i += 6
			if utf16IsHigh(r) && i+1 < len(src) && src[i] == '\\' && src[i+1] == 'u' {
				if low, ok := hex4(src, i+2); ok && utf16IsLow(low) {
					r = 0x10000 + (r-0xd800)<<10 + (low - 0xdc00)
					i += 6
				}
			}
			n.dst = appendRune(n.dst, r)
		default:
			return n.syntaxError("invalid escape at offset %d", i)
		}
	}
}

// plainASCII marks the bytes a canonical string holds as they are: ASCII but for control
// characters, '"' and '\\'.
var plainASCII = func() (table [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		table[c] = c != '"' && c != '\\'
	}
	return table
}()

// skipPlainOctets skips eight bytes at a time from s[i:] while all eight are plainASCII, for long
// plain runs (base64 data, text), with the usual bit tricks: a byte is below 0x20, or equal to '"'
// or '\\' (XOR then zero), if subtracting 0x20 (or 1) from it borrows into its top bit; a top bit
// set in the input itself is a non-ASCII byte.
func skipPlainOctets(s string, i int) int {
	const ones, tops = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		quote, backslash := x^(ones*'"'), x^(ones*'\\')
		special := (x - ones*0x20) | (quote-ones)&^quote | (backslash-ones)&^backslash
		if (special|x)&tops != 0 {
			break
		}
	}
	return i
}

func utf16IsHigh(r rune) bool { return 0xd800 <= r && r < 0xdc00 }
func utf16IsLow(r rune) bool  { return 0xdc00 <= r && r < 0xe000 }

// hex4 reads the four hex digits of a \uXXXX escape at src[i:].
func hex4(src string, i int) (rune, bool) {
	if len(src)-i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range []byte(src[i : i+4]) {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

const hexDigits = "0123456789abcdef"

// appendRune appends one code point as canonical string content: control characters, '"' and
// '\' escaped, a lone surrogate (which UTF-8 cannot hold) as its \uXXXX escape, the rest as UTF-8.
func appendRune(dst []byte, r rune) []byte {
	switch {
	case r == '"' || r == '\\':
		return append(dst, '\\', byte(r))
	case r < 0x20:
		return appendControl(dst, byte(r))
	case 0xd800 <= r && r < 0xe000:
		return append(dst, '\\', 'u', hexDigits[r>>12], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
	default:
		return utf8.AppendRune(dst, r)
	}
}

func appendControl(dst []byte, c byte) []byte {
	switch c {
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	}
	return append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
}

// appendQuoted appends s as a canonical JSON string. It reports false if s is not valid UTF-8.
func appendQuoted(dst []byte, s string) ([]byte, bool) {
	dst = append(dst, '"')
	run := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == '"' || c == '\\' {
				dst = append(dst, s[run:i]...)
				if c < 0x20 {
					dst = appendControl(dst, c)
				} else {
					dst = append(dst, '\\', c)
				}
				i++
				run = i
				continue
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return dst, false
		}
		i += size
	}
	dst = append(dst, s[run:]...)
	return append(dst, '"'), true
}
