package e2ajson

import (
	"google.golang.org/protobuf/reflect/protoreflect"

	"math"
	"strconv"

	e2av1 "e2agrpc/gen/go/e2a/v1"
)

// writer writes the wire JSON of a record: every field, in field order, compact.
type writer struct {
	buf []byte
	n   normalizer // reused for the free-form fields
	err error      // the first error; later writes are skipped
}

// newWriter is a writer whose buffer fits a record with freeForm bytes of free-form JSON text
// (its canonical form is never longer) besides the keys and the other fields.
func newWriter(freeForm int) *writer {
	return &writer{buf: make([]byte, 0, 1024+freeForm)}
}

func (w *writer) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

// key writes the key of the next member of the object being written.
func (w *writer) key(name string) {
	if last := w.buf[len(w.buf)-1]; last != '{' {
		w.buf = append(w.buf, ',')
	}
	w.buf = append(w.buf, '"')
	w.buf = append(w.buf, name...)
	w.buf = append(w.buf, '"', ':')
}

func (w *writer) str(path, s string) {
	var ok bool
	if w.buf, ok = appendQuoted(w.buf, s); !ok {
		w.fail(fieldErrorf(path, "string is not valid UTF-8"))
	}
}

func (w *writer) optStr(path string, s *string) {
	if s == nil {
		w.buf = append(w.buf, "null"...)
		return
	}
	w.str(path, *s)
}

func (w *writer) bool(b bool) {
	w.buf = strconv.AppendBool(w.buf, b)
}

// object writes the JSON text of a free-form object field, checked and in canonical form. Empty
// text is the field's default: {} or, for agent_ref, null. depth is the level of the field's
// object in the wire JSON document (2 for a record field), which may nest MaxDepth levels.
func (w *writer) object(path, text string, emptyIsNull bool, depth int) {
	if text == "" {
		if emptyIsNull {
			w.buf = append(w.buf, "null"...)
		} else {
			w.buf = append(w.buf, '{', '}')
		}
		return
	}
	if w.err != nil {
		return
	}
	start := len(w.buf)
	w.n = normalizer{src: text, dst: w.buf, field: path, members: w.n.members[:0]}
	err := w.n.document(depth)
	w.buf = w.n.dst
	if err != nil {
		w.fail(err)
	} else if value := w.buf[start:]; !isObject(value) {
		w.fail(typeError(path, "JSON text of an object", value))
	}
}

func (w *writer) jsonrpcID(path string, id *e2av1.JsonRpcId) {
	switch kind := id.GetKind().(type) {
	case nil:
		w.buf = append(w.buf, "null"...)
	case *e2av1.JsonRpcId_StringValue:
		w.str(path, kind.StringValue)
	case *e2av1.JsonRpcId_IntegerValue:
		w.buf = strconv.AppendInt(w.buf, kind.IntegerValue, 10)
	case *e2av1.JsonRpcId_NumberValue:
		if math.IsInf(kind.NumberValue, 0) || math.IsNaN(kind.NumberValue) {
			w.fail(fieldErrorf(path, "number_value %s is not a JSON number", pyFloatRepr(kind.NumberValue)))
			return
		}
		w.buf = appendFloat(w.buf, kind.NumberValue)
	case *e2av1.JsonRpcId_BigIntegerValue:
		digits, err := bigIntText(path, kind.BigIntegerValue)
		if err != nil {
			w.fail(err)
			return
		}
		w.buf = append(w.buf, digits...)
	}
}

// provenance writes the provenance object; an unset one is the default (source_protocol "e2a").
func (w *writer) provenance(p *e2av1.E2AProvenance) {
	if p == nil {
		w.buf = append(w.buf, `{"source_protocol":"e2a","converter":null,"converted_at":null,"details":{}}`...)
		return
	}
	w.buf = append(w.buf, '{')
	w.key("source_protocol")
	w.str("provenance.source_protocol", p.GetSourceProtocol())
	w.key("converter")
	w.optStr("provenance.converter", p.Converter)
	w.key("converted_at")
	w.optStr("provenance.converted_at", p.ConvertedAt)
	w.key("details")
	w.object("provenance.details", p.GetDetails(), false, 3)
	w.buf = append(w.buf, '}')
}

// auth writes the auth object or null. extra_headers becomes an object: a repeated header name
// keeps its first position and takes its last value, as a Python dict built from the list does.
func (w *writer) auth(a *e2av1.E2AAuth) {
	if a == nil {
		w.buf = append(w.buf, "null"...)
		return
	}
	w.buf = append(w.buf, '{')
	w.key("method_id")
	w.optStr("auth.method_id", a.MethodId)
	w.key("bearer_token")
	w.optStr("auth.bearer_token", a.BearerToken)
	w.key("api_key_ref")
	w.optStr("auth.api_key_ref", a.ApiKeyRef)
	w.key("credential_ref")
	w.optStr("auth.credential_ref", a.CredentialRef)
	w.key("extra_headers")
	w.buf = append(w.buf, '{')
	headers := a.GetExtraHeaders()
	var last map[string]int // header name -> index of its last occurrence, when names repeat
	if len(headers) > 1 {
		last = make(map[string]int, len(headers))
		for i, header := range headers {
			last[header.GetName()] = i
		}
		if len(last) == len(headers) {
			last = nil
		}
	}
	for _, header := range headers {
		name, value := header.GetName(), header.GetValue()
		if last != nil {
			winner, pending := last[name]
			if !pending {
				continue // written at the name's first position
			}
			delete(last, name)
			value = headers[winner].GetValue()
		}
		if w.buf[len(w.buf)-1] != '{' {
			w.buf = append(w.buf, ',')
		}
		w.str("auth.extra_headers", name)
		w.buf = append(w.buf, ':')
		w.str("auth.extra_headers."+name, value)
	}
	w.buf = append(w.buf, '}')
	w.key("_meta")
	w.object("auth._meta", a.GetMeta(), false, 3)
	w.buf = append(w.buf, '}')
}

func (w *writer) stringList(path string, list protoreflect.List) {
	w.buf = append(w.buf, '[')
	for i := range list.Len() {
		if i > 0 {
			w.buf = append(w.buf, ',')
		}
		w.str(path, list.Get(i).String())
	}
	w.buf = append(w.buf, ']')
}
