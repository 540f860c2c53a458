package e2ajson

import (
	"fmt"
	"strconv"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	e2av1 "e2agrpc/gen/go/e2a/v1"
)

// The records are read and written by looping over their field tables (fields.gen.go, generated
// from the schema's (e2a.v1.json) options by codegen/e2a_tables.py): per field, its kind's reader
// or writer below, or the legacy reader the schema names. A new field of a known kind needs no
// code here.

// slot numbers the top-level keys the records read (fields.gen.go lists them).
type slot uint8

// kind is a field's JSON kind, e2a.v1.JsonKind.
type kind uint8

// enumValue is the wire JSON string of an enum value.
type enumValue struct {
	name   string
	number protoreflect.EnumNumber
}

// legacyReader reads a field from the whole document (its own key, then its legacy keys): an
// invalid Value leaves the field unset.
type legacyReader func(*document, *fieldSpec) (protoreflect.Value, error)

// fieldSpec is one field of a record's table.
type fieldSpec struct {
	slot   slot
	number protoreflect.FieldNumber
	kind   kind
	// def is the value of an absent key (a json_value for an enum); "" is the kind's own default.
	def    string
	enum   []enumValue
	legacy legacyReader
	// internal lists the members of a fallback object never merged into the field.
	internal []string
}

func (f *fieldSpec) name() string { return slotNames[f.slot] }

// checkTable panics at package initialization if a generated table does not match the message
// compiled into this program: the two come from the same schema, so a mismatch is a build error.
func checkTable(m proto.Message, fields []fieldSpec) []fieldSpec {
	desc := m.ProtoReflect().Descriptor().Fields()
	if desc.Len() != len(fields) {
		panic(fmt.Sprintf("e2ajson: %s has %d fields, its table %d", m.ProtoReflect().Descriptor().FullName(), desc.Len(), len(fields)))
	}
	for i := range fields {
		if fd := desc.Get(i); fd.Number() != fields[i].number || string(fd.Name()) != fields[i].name() {
			panic(fmt.Sprintf("e2ajson: field %s differs from its table entry %q", fd.FullName(), fields[i].name()))
		}
	}
	return fields
}

var (
	envelopeTable = checkTable(&e2av1.E2AEnvelope{}, envelopeFields)
	responseTable = checkTable(&e2av1.E2AResponse{}, responseFields)
)

// readRecord reads a record's wire JSON into m, field by field in field order, so that the first
// error is the one Python reports; what names the record in the error for a non-object.
func readRecord(data []byte, what string, fields []fieldSpec, m protoreflect.Message) error {
	d, err := readDocument(data, what)
	if err != nil {
		return err
	}
	desc := m.Descriptor().Fields()
	for i := range fields {
		f, fd := &fields[i], desc.Get(i)
		var value protoreflect.Value
		if f.legacy != nil {
			value, err = f.legacy(d, f)
		} else {
			value, err = d.field(f, fd, m)
		}
		if err != nil {
			return err
		}
		if value.IsValid() {
			m.Set(fd, value)
		}
	}
	return d.finish()
}

// field reads the key of f by its kind.
func (d *document) field(f *fieldSpec, fd protoreflect.FieldDescriptor, m protoreflect.Message) (protoreflect.Value, error) {
	name := f.name()
	switch f.kind {
	case kindText:
		if d.values[f.slot] == nil && f.def != "" {
			return protoreflect.ValueOfString(f.def), nil
		}
		return optionalString(d.text(f.slot))
	case kindPlainText:
		text, lone, err := d.plainText(f.slot, f.def)
		if lone {
			d.deferBuild(loneSurrogateError(name))
		}
		return protoreflect.ValueOfString(text), err
	case kindFlag:
		flag, err := d.flag(f.slot)
		return protoreflect.ValueOfBool(flag), err
	case kindInteger:
		integer, err := d.integer(f.slot)
		return protoreflect.ValueOfInt64(integer), err
	case kindTextList:
		items, err := d.textList(f.slot)
		if err != nil || len(items) == 0 {
			return protoreflect.Value{}, err
		}
		list := m.NewField(fd).List()
		for _, item := range items {
			list.Append(protoreflect.ValueOfString(item))
		}
		return protoreflect.ValueOfList(list), nil
	case kindObject:
		text, err := d.objectField(f.slot)
		return protoreflect.ValueOfString(text), err
	case kindOptionalObject:
		text, err := d.optionalObject(f.slot)
		return protoreflect.ValueOfString(text), err
	case kindJsonrpcId:
		id, err := d.jsonrpcID(f.slot)
		return messageValue(id, err)
	case kindEnum:
		number, err := d.enum(f)
		return protoreflect.ValueOfEnum(number), err
	case kindProvenance:
		provenance, details, err := d.provenance(d.values[f.slot])
		if err != nil {
			return protoreflect.Value{}, err
		}
		provenance.Details = objectText(details)
		return messageValue(provenance, nil)
	case kindAuth:
		auth, err := d.auth(f.slot)
		return messageValue(auth, err)
	}
	return protoreflect.Value{}, fmt.Errorf("e2ajson: field %s has JSON kind %d, which this codec does not know", name, f.kind)
}

func optionalString(text *string, err error) (protoreflect.Value, error) {
	if text == nil || err != nil {
		return protoreflect.Value{}, err
	}
	return protoreflect.ValueOfString(*text), nil
}

// messageValue is a submessage as a field value; nil leaves the field unset.
func messageValue[M interface {
	*e2av1.JsonRpcId | *e2av1.E2AProvenance | *e2av1.E2AAuth
	proto.Message
}](m M, err error) (protoreflect.Value, error) {
	if m == nil || err != nil {
		return protoreflect.Value{}, err
	}
	return protoreflect.ValueOfMessage(m.ProtoReflect()), nil
}

// enum reads an enum field by the json_value of its values: absent or null, it is the field's
// default, as protobuf's JSON mapping reads null.
func (d *document) enum(f *fieldSpec) (protoreflect.EnumNumber, error) {
	value, none := d.value(f.slot)
	name := f.name()
	text := f.def
	if !none {
		if !isString(value) {
			return 0, typeError(name, "a string", value)
		}
		text, _ = decodeString(value)
	}
	for _, each := range f.enum {
		if each.name == text {
			return each.number, nil
		}
	}
	allowed := ""
	for i, each := range f.enum {
		if i > 0 {
			allowed += ", "
		}
		allowed += each.name
	}
	return 0, fieldErrorf(name, "%s is not one of %s", pyStrRepr(text), allowed)
}

// writeRecord writes the wire JSON of m: every field of its table, in field order.
func writeRecord(m protoreflect.Message, fields []fieldSpec) ([]byte, error) {
	desc := m.Descriptor().Fields()
	freeForm := 0
	for i := range fields {
		switch fields[i].kind {
		case kindObject, kindOptionalObject:
			freeForm += len(m.Get(desc.Get(i)).String())
		case kindProvenance:
			freeForm += len(submessage[*e2av1.E2AProvenance](m, desc.Get(i)).GetDetails())
		}
	}
	w := newWriter(freeForm)
	w.buf = append(w.buf, '{')
	for i := range fields {
		f, fd := &fields[i], desc.Get(i)
		name := f.name()
		w.key(name)
		switch f.kind {
		case kindText:
			if m.Has(fd) {
				w.str(name, m.Get(fd).String())
			} else {
				w.buf = append(w.buf, "null"...)
			}
		case kindPlainText:
			w.str(name, m.Get(fd).String())
		case kindFlag:
			w.bool(m.Get(fd).Bool())
		case kindInteger:
			w.buf = strconv.AppendInt(w.buf, m.Get(fd).Int(), 10)
		case kindTextList:
			w.stringList(name, m.Get(fd).List())
		case kindObject:
			w.object(name, m.Get(fd).String(), false, 2)
		case kindOptionalObject:
			w.object(name, m.Get(fd).String(), true, 2)
		case kindJsonrpcId:
			w.jsonrpcID(name, submessage[*e2av1.JsonRpcId](m, fd))
		case kindEnum:
			w.enum(f, fd, m.Get(fd).Enum())
		case kindProvenance:
			w.provenance(submessage[*e2av1.E2AProvenance](m, fd))
		case kindAuth:
			w.auth(submessage[*e2av1.E2AAuth](m, fd))
		default:
			w.fail(fmt.Errorf("e2ajson: field %s has JSON kind %d, which this codec does not know", name, f.kind))
		}
	}
	w.buf = append(w.buf, '}')
	if w.err != nil {
		return nil, w.err
	}
	return w.buf, nil
}

// submessage is the message in field fd of m, nil when unset.
func submessage[M proto.Message](m protoreflect.Message, fd protoreflect.FieldDescriptor) M {
	var none M
	if !m.Has(fd) {
		return none
	}
	return m.Get(fd).Message().Interface().(M)
}

// enum writes an enum field as its value's json_value; unspecified is the field's default.
func (w *writer) enum(f *fieldSpec, fd protoreflect.FieldDescriptor, number protoreflect.EnumNumber) {
	if number == 0 {
		w.str(f.name(), f.def)
		return
	}
	for _, each := range f.enum {
		if each.number == number {
			w.str(f.name(), each.name)
			return
		}
	}
	w.fail(fieldErrorf(f.name(), "unknown %s value %d", fd.Enum().Name(), int32(number)))
}
