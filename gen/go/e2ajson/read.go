package e2ajson

import (
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	e2av1 "e2agrpc/gen/go/e2a/v1"
)

// slotOf is the slot of each key the records read.
var slotOf = func() map[string]slot {
	index := make(map[string]slot, numSlots)
	for s, name := range slotNames {
		index[name] = slot(s)
	}
	return index
}()

// defaultSourceProtocol is the source_protocol of a provenance object that has none.
const defaultSourceProtocol = "e2a"

// document is a record's JSON object read into the canonical text of each known key (the last
// value of a repeated key, as Python's json module keeps). It then reads the fields in field
// order, so that the first error is the one Python reports.
type document struct {
	values [numSlots][]byte // nil: the key is absent
	// The errors Python reports only when it builds the protobuf message, after every field has
	// been read: the first from auth (whose submessage is built first), else the first from the
	// other fields (a lone surrogate in a string, a sequence beyond int64).
	encodeErr, buildErr *FieldError
}

// readDocument reads a whole record document; what names it in the error for a non-object.
func readDocument(data []byte, what string) (*document, error) {
	n := &normalizer{src: string(data), field: "$", dst: make([]byte, 0, len(data))}
	n.skipSpace()
	if n.pos >= len(n.src) || n.src[n.pos] != '{' {
		if err := n.document(1); err != nil {
			return nil, err
		}
		return nil, typeError(what, "an object", n.dst)
	}
	d := &document{}
	n.pos++
	n.skipSpace()
	if n.pos < len(n.src) && n.src[n.pos] == '}' {
		n.pos++
	} else {
		for {
			n.skipSpace()
			if n.pos >= len(n.src) || n.src[n.pos] != '"' {
				return nil, n.syntaxError("expecting a property name in double quotes at offset %d", n.pos)
			}
			keyStart := len(n.dst)
			if err := n.string(); err != nil {
				return nil, err
			}
			s, known := slotOf[string(n.dst[keyStart+1:len(n.dst)-1])]
			n.dst = n.dst[:keyStart]
			n.skipSpace()
			if n.pos >= len(n.src) || n.src[n.pos] != ':' {
				return nil, n.syntaxError("expecting ':' at offset %d", n.pos)
			}
			n.pos++
			valueStart := len(n.dst)
			if err := n.value(2); err != nil { // the record's object is level 1
				return nil, err
			}
			if known {
				d.values[s] = n.dst[valueStart:len(n.dst):len(n.dst)]
			}
			n.skipSpace()
			if n.pos >= len(n.src) {
				return nil, n.syntaxError("unexpected end of text in an object")
			}
			c := n.src[n.pos]
			n.pos++
			if c == '}' {
				break
			}
			if c != ',' {
				return nil, n.syntaxError("unexpected character %q at offset %d, expecting ',' or '}'", c, n.pos-1)
			}
		}
	}
	n.skipSpace()
	if n.pos < len(n.src) {
		return nil, n.syntaxError("extra data at offset %d", n.pos)
	}
	return d, nil
}

// value is the canonical text of a key, nil if absent, and whether it is absent or null.
func (d *document) value(s slot) (value []byte, none bool) {
	value = d.values[s]
	return value, value == nil || isNull(value)
}

func (d *document) deferEncode(err *FieldError) {
	if d.encodeErr == nil {
		d.encodeErr = err
	}
}

func (d *document) deferBuild(err *FieldError) {
	if d.buildErr == nil {
		d.buildErr = err
	}
}

// finish is the error Python reports once all fields are read, if any.
func (d *document) finish() error {
	if d.encodeErr != nil {
		return d.encodeErr
	}
	if d.buildErr != nil {
		return d.buildErr
	}
	return nil
}

// optText reads a string-or-null value for the field at path.
func (d *document) optText(value []byte, path string) (*string, error) {
	if value == nil || isNull(value) {
		return nil, nil
	}
	if !isString(value) {
		return nil, typeError(path, "a string or null", value)
	}
	s, lone := decodeString(value)
	if lone {
		d.deferBuild(loneSurrogateError(path))
	}
	return &s, nil
}

// text reads the optional string field s (absent or null: nil).
func (d *document) text(s slot) (*string, error) {
	return d.optText(d.values[s], slotNames[s])
}

// requiredText reads a string that may not be null; absent, it is def.
func (d *document) requiredText(value []byte, path, def string) (string, bool, error) {
	if value == nil {
		return def, false, nil
	}
	if !isString(value) {
		return "", false, typeError(path, "a string", value)
	}
	s, lone := decodeString(value)
	return s, lone, nil
}

// plainText reads a string field that is never null (a proto3 string): absent or null, it is def,
// as protobuf's JSON mapping reads null.
func (d *document) plainText(s slot, def string) (string, bool, error) {
	value, none := d.value(s)
	if none {
		return def, false, nil
	}
	return d.requiredText(value, slotNames[s], def)
}

// flag reads a boolean: null is false, and a legacy integer flag its truth value.
func (d *document) flag(s slot) (bool, error) {
	value, none := d.value(s)
	switch {
	case none:
		return false, nil
	case isBool(value):
		return value[0] == 't', nil
	case isInteger(value):
		return !isZero(value), nil
	}
	return false, typeError(slotNames[s], "a boolean", value)
}

// integer reads an int64 field; null is 0.
func (d *document) integer(s slot) (int64, error) {
	value, none := d.value(s)
	if none {
		return 0, nil
	}
	if !isInteger(value) {
		return 0, typeError(slotNames[s], "an integer", value)
	}
	i, err := strconv.ParseInt(string(value), 10, 64)
	if err != nil {
		d.deferBuild(fieldErrorf(slotNames[s], "integer %s is outside the signed 64-bit range", intString(value)))
	}
	return i, nil
}

// object reads a free-form object slot as its JSON text: null and {} are "" (the wire default).
func (d *document) object(value []byte, path string) ([]byte, error) {
	if value == nil || isNull(value) {
		return nil, nil
	}
	if !isObject(value) {
		return nil, typeError(path, "an object", value)
	}
	if len(value) == 2 {
		return nil, nil
	}
	return value, nil
}

// objectField reads the free-form object field s as the message's JSON text.
func (d *document) objectField(s slot) (string, error) {
	value, err := d.object(d.values[s], slotNames[s])
	return objectText(value), err
}

func objectText(value []byte) string {
	if len(value) == 0 {
		return ""
	}
	return string(value)
}

// optionalObject reads an object-or-null field (agent_ref) as its JSON text: null is "", {} stays "{}".
func (d *document) optionalObject(s slot) (string, error) {
	value, none := d.value(s)
	if none {
		return "", nil
	}
	if !isObject(value) {
		return "", typeError(slotNames[s], "an object or null", value)
	}
	return string(value), nil
}

func (d *document) textList(s slot) ([]string, error) {
	value, none := d.value(s)
	if none {
		return nil, nil
	}
	path := slotNames[s]
	if value[0] != '[' {
		return nil, typeError(path, "an array of strings", value)
	}
	var list []string
	for i := 1; i < len(value)-1; {
		end := skipValue(value, i)
		item := value[i:end]
		if !isString(item) {
			return nil, typeError(path+"["+strconv.Itoa(len(list))+"]", "a string", item)
		}
		s, lone := decodeString(item)
		if lone {
			d.deferBuild(loneSurrogateError(path))
		}
		list = append(list, s)
		i = end + 1
	}
	return list, nil
}

func (d *document) jsonrpcID(s slot) (*e2av1.JsonRpcId, error) {
	value, none := d.value(s)
	path := slotNames[s]
	switch {
	case none:
		return nil, nil
	case isString(value):
		if r, lone := firstLoneSurrogate(value); lone {
			return nil, fieldErrorf(path, "a lone surrogate (U+%04X) is not Unicode text", r)
		}
		text, _ := decodeString(value)
		return &e2av1.JsonRpcId{Kind: &e2av1.JsonRpcId_StringValue{StringValue: text}}, nil
	case isInteger(value):
		if i, err := strconv.ParseInt(string(value), 10, 64); err == nil {
			return &e2av1.JsonRpcId{Kind: &e2av1.JsonRpcId_IntegerValue{IntegerValue: i}}, nil
		}
		return &e2av1.JsonRpcId{Kind: &e2av1.JsonRpcId_BigIntegerValue{BigIntegerValue: string(value)}}, nil
	case isNumber(value):
		f, _ := strconv.ParseFloat(string(value), 64) // finite: the normalizer checked it
		return &e2av1.JsonRpcId{Kind: &e2av1.JsonRpcId_NumberValue{NumberValue: f}}, nil
	}
	return nil, typeError(path, "a string, number or null", value)
}

// provenance reads a provenance object (absent or null: the default).
func (d *document) provenance(value []byte) (*e2av1.E2AProvenance, []byte, error) {
	p := &e2av1.E2AProvenance{SourceProtocol: defaultSourceProtocol}
	if value == nil || isNull(value) {
		return p, nil, nil
	}
	if !isObject(value) {
		return nil, nil, typeError("provenance", "an object", value)
	}
	var source, converter, convertedAt, details []byte
	for key, item := range members(value) {
		switch string(key) {
		case `"source_protocol"`:
			source = item
		case `"converter"`:
			converter = item
		case `"converted_at"`:
			convertedAt = item
		case `"details"`:
			details = item
		}
	}
	var lone, anyLone bool
	var err error
	if p.SourceProtocol, lone, err = d.requiredText(source, "provenance.source_protocol", defaultSourceProtocol); err != nil {
		return nil, nil, err
	}
	anyLone = anyLone || lone
	for _, field := range []struct {
		value []byte
		path  string
		dst   **string
	}{{converter, "provenance.converter", &p.Converter}, {convertedAt, "provenance.converted_at", &p.ConvertedAt}} {
		if field.value == nil || isNull(field.value) {
			continue
		}
		if !isString(field.value) {
			return nil, nil, typeError(field.path, "a string or null", field.value)
		}
		s, lone := decodeString(field.value)
		anyLone = anyLone || lone
		*field.dst = &s
	}
	if details, err = d.object(details, "provenance.details"); err != nil {
		return nil, nil, err
	}
	if anyLone {
		// Python builds the whole submessage at once and names it.
		d.deferBuild(loneSurrogateError("provenance"))
	}
	return p, details, nil
}

// envelopeProvenance is provenance with the legacy binding moved into
// details.migrated_from_binding (spec 4.2).
func (d *document) envelopeProvenance() (*e2av1.E2AProvenance, error) {
	p, details, err := d.provenance(d.values[sProvenance])
	if err != nil {
		return nil, err
	}
	binding, none := d.value(sBinding)
	if !none {
		if migrated, ok := member(details, `"migrated_from_binding"`); ok && !isNull(migrated) {
			none = true // already migrated
		}
	}
	if !none {
		if isObject(binding) {
			if inner, ok := member(binding, `"value"`); ok {
				binding = inner
			}
		}
		var text []byte // the JSON string of Python's str(binding)
		switch {
		case isNull(binding):
			text = []byte(`""`)
		case isString(binding):
			text = binding
		case isBool(binding):
			text = []byte(map[bool]string{true: `"True"`, false: `"False"`}[binding[0] == 't'])
		case isInteger(binding):
			text = []byte(`"` + intString(binding) + `"`)
		case isNumber(binding):
			f, _ := strconv.ParseFloat(string(binding), 64)
			text = []byte(`"` + pyFloatRepr(f) + `"`)
		default:
			return nil, typeError("binding", "a string", binding)
		}
		if name, _ := decodeString(text); p.SourceProtocol == defaultSourceProtocol && (name == "acp" || name == "a2a") {
			p.SourceProtocol = name
		}
		var merged objectBuilder
		replaced := false
		if details != nil {
			for key, item := range members(details) {
				if string(key) == `"migrated_from_binding"` {
					item, replaced = text, true
				}
				merged.add(key, item)
			}
		}
		if !replaced {
			merged.add([]byte(`"migrated_from_binding"`), text)
		}
		details = merged.text()
	}
	p.Details = objectText(details)
	return p, nil
}

// timestamp reads an RFC 3339 string as given, or legacy epoch seconds as Python's
// datetime.fromtimestamp(value, UTC).isoformat() writes them.
func (d *document) timestamp() (*string, error) {
	value, none := d.value(sTimestamp)
	switch {
	case none:
		return nil, nil
	case isString(value):
		return d.optText(value, "timestamp")
	case isNumber(value):
		s, err := epochToISO(value)
		if err != nil {
			return nil, err
		}
		return &s, nil
	}
	return nil, typeError("timestamp", "an RFC 3339 string or epoch seconds", value)
}

func epochToISO(number []byte) (string, error) {
	shown := intString(number)
	seconds, err := strconv.ParseFloat(string(number), 64)
	if isFloat(number) {
		shown = pyFloatRepr(seconds)
	} else if err != nil {
		return "", fieldErrorf("timestamp", "epoch seconds %s out of range (int too large to convert to float)", shown)
	}
	// Python rounds to microseconds half to even, carrying into the seconds.
	whole, fraction := math.Modf(seconds)
	micros := math.RoundToEven(fraction * 1e6)
	if micros >= 1e6 {
		whole, micros = whole+1, micros-1e6
	} else if micros < 0 {
		whole, micros = whole-1, micros+1e6
	}
	if math.Abs(whole) >= 1<<63 {
		return "", fieldErrorf("timestamp", "epoch seconds %s out of range (timestamp out of range for platform time_t)", shown)
	}
	t := time.Unix(int64(whole), 0).UTC()
	if year := t.Year(); year < 1 || year > 9999 {
		return "", fieldErrorf("timestamp", "epoch seconds %s out of range (year %d is out of range)", shown, year)
	}
	text := t.Format("2006-01-02T15:04:05")
	if micros != 0 {
		text += "." + leftPad(strconv.Itoa(int(micros)), 6)
	}
	return text + "+00:00", nil
}

// channel reads channel, or the legacy channel_id when channel is absent or null.
func (d *document) channel() (*string, error) {
	channel, err := d.text(sChannel)
	if err != nil || channel != nil {
		return channel, err
	}
	value, none := d.value(sChannelId)
	if none {
		return nil, nil
	}
	if !isString(value) {
		return nil, typeError("channel_id", "a string or null", value)
	}
	return d.optText(value, "channel")
}

// method reads method, or the legacy req_method (when a string) when method is null.
func (d *document) method() (*string, error) {
	method, err := d.text(sMethod)
	if err != nil || method != nil {
		return method, err
	}
	if value := d.values[sReqMethod]; value != nil && isString(value) {
		return d.optText(value, "method")
	}
	return nil, nil
}

// stripped reads a tenant routing key: a non-blank string, stripped as Python's str.strip does;
// any other value counts as absent. The fallback key is read when the first gives nothing.
func (d *document) stripped(path string, keys ...slot) *string {
	for _, s := range keys {
		value := d.values[s]
		if value == nil || !isString(value) {
			continue
		}
		text, lone := decodeString(value)
		if text = strings.TrimFunc(text, isPySpace); text != "" {
			if lone {
				d.deferBuild(loneSurrogateError(path))
			}
			return &text
		}
	}
	return nil
}

// params reads params plus the keys of a legacy top-level payload object it does not have,
// leaving out null, [] and {} values.
func (d *document) params() (string, error) {
	params, err := d.object(d.values[sParams], "params")
	if err != nil {
		return "", err
	}
	payload, none := d.value(sPayload)
	if none || !isObject(payload) || len(payload) == 2 {
		return objectText(params), nil
	}
	var merged objectBuilder
	have := map[string]bool{}
	for key, item := range members(params) {
		merged.add(key, item)
		have[string(key)] = true
	}
	for key, item := range members(payload) {
		if have[string(key)] || isNull(item) || string(item) == "[]" || string(item) == "{}" {
			continue
		}
		merged.add(key, item)
	}
	return objectText(emptyAsNil(merged.text())), nil
}

// channelContext reads channel_context plus the keys of a legacy metadata object (except the
// transport-internal ones, internal) and a truthy legacy app_id that it does not have yet.
func (d *document) channelContext(internal []string) (string, error) {
	context, err := d.object(d.values[sChannelContext], "channel_context")
	if err != nil {
		return "", err
	}
	metadata, none := d.value(sMetadata)
	hasMetadata := !none && isObject(metadata) && len(metadata) > 2
	appID := d.values[sAppId]
	hasAppID := appID != nil && truthy(appID)
	if !hasMetadata && !hasAppID {
		return objectText(context), nil
	}
	var merged objectBuilder
	have := map[string]bool{}
	for key, item := range members(context) {
		merged.add(key, item)
		have[string(key)] = true
	}
	if hasMetadata {
		for key, item := range members(metadata) {
			if !isInternal(key, internal) && !have[string(key)] {
				merged.add(key, item)
				have[string(key)] = true
			}
		}
	}
	if hasAppID && !have[`"app_id"`] {
		merged.add([]byte(`"app_id"`), appID)
	}
	return objectText(emptyAsNil(merged.text())), nil
}

// isInternal tells whether the canonical key text (quoted) is one of the internal names.
func isInternal(key []byte, internal []string) bool {
	for _, name := range internal {
		if len(key) == len(name)+2 && string(key[1:len(key)-1]) == name {
			return true
		}
	}
	return false
}

func emptyAsNil(object []byte) []byte {
	if len(object) == 2 {
		return nil
	}
	return object
}

// auth reads the auth object in slot s, or null.
func (d *document) auth(s slot) (*e2av1.E2AAuth, error) {
	value, none := d.value(s)
	if none {
		return nil, nil
	}
	if !isObject(value) {
		return nil, typeError(slotNames[s], "an object", value)
	}
	fields := map[string][]byte{}
	for key, item := range members(value) {
		fields[string(key)] = item
	}
	auth := &e2av1.E2AAuth{}
	headers, err := d.object(fields[`"extra_headers"`], "auth.extra_headers")
	if err != nil {
		return nil, err
	}
	for key, item := range members(headers) {
		name := keyName(key)
		if !isString(item) {
			return nil, typeError("auth.extra_headers."+name, "a string", item)
		}
		headerName, loneName := decodeString(key)
		headerValue, loneValue := decodeString(item)
		if loneName {
			d.deferEncode(loneSurrogateError("auth.extra_headers." + name + ".name"))
		}
		if loneValue {
			d.deferEncode(loneSurrogateError("auth.extra_headers." + name + ".value"))
		}
		auth.ExtraHeaders = append(auth.ExtraHeaders, &e2av1.HttpHeader{Name: headerName, Value: headerValue})
	}
	for _, field := range []struct {
		key, path string
		dst       **string
	}{
		{`"method_id"`, "auth.method_id", &auth.MethodId},
		{`"bearer_token"`, "auth.bearer_token", &auth.BearerToken},
		{`"api_key_ref"`, "auth.api_key_ref", &auth.ApiKeyRef},
		{`"credential_ref"`, "auth.credential_ref", &auth.CredentialRef},
	} {
		item := fields[field.key]
		if item == nil || isNull(item) {
			continue
		}
		if !isString(item) {
			return nil, typeError(field.path, "a string or null", item)
		}
		s, lone := decodeString(item)
		if lone {
			d.deferEncode(loneSurrogateError(field.path))
		}
		*field.dst = &s
	}
	meta, err := d.object(fields[`"_meta"`], "auth._meta")
	if err != nil {
		return nil, err
	}
	auth.Meta = objectText(meta)
	return auth, nil
}

// bigIntText is the canonical decimal text of a protobuf big_integer_value.
func bigIntText(path, digits string) (string, error) {
	unsigned := strings.TrimPrefix(digits, "-")
	if unsigned == "" || strings.TrimLeft(unsigned, "0123456789") != "" {
		return "", fieldErrorf(path, "big_integer_value %s is not a decimal integer", pyStrRepr(digits))
	}
	if len(unsigned) > maxIntDigits {
		return "", fieldErrorf(path, "big_integer_value has %d digits, more than %d", len(unsigned), maxIntDigits)
	}
	var value big.Int
	value.SetString(digits, 10)
	return value.String(), nil
}
