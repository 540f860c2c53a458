package e2ajson

import (
	"google.golang.org/protobuf/reflect/protoreflect"

	e2av1 "e2agrpc/gen/go/e2a/v1"
)

// UnmarshalEnvelope reads the E2A wire JSON of a request (legacy keys of spec sections 9-11
// included) into its protobuf message, as the Python reference's
// E2AEnvelope.from_json(data).to_proto() does. Free-form values (params, channel_context, ...) are
// carried over as canonical JSON text: numbers as written, key order kept. A bad input gives a
// *FieldError naming the field Python names.
func UnmarshalEnvelope(data []byte) (*e2av1.E2AEnvelope, error) {
	m := &e2av1.E2AEnvelope{}
	if err := readRecord(data, "envelope", envelopeTable, m.ProtoReflect()); err != nil {
		return nil, err
	}
	return m, nil
}

// UnmarshalResponse reads the E2A wire JSON of a response record (legacy keys included) into its
// protobuf message, as E2AResponse.from_json(data).to_proto() does in the Python reference.
func UnmarshalResponse(data []byte) (*e2av1.E2AResponse, error) {
	m := &e2av1.E2AResponse{}
	if err := readRecord(data, "response", responseTable, m.ProtoReflect()); err != nil {
		return nil, err
	}
	return m, nil
}

// MarshalEnvelope writes the E2A wire JSON of a request message, as the Python reference's
// E2AEnvelope.from_proto(m).to_json() does: every field in field order, null for unset optional
// fields, free-form JSON text embedded as JSON values in canonical form. Free-form text that is
// not a JSON object, or a string that is not UTF-8, gives a *FieldError naming the field.
func MarshalEnvelope(m *e2av1.E2AEnvelope) ([]byte, error) {
	return writeRecord(m.ProtoReflect(), envelopeTable)
}

// MarshalResponse writes the E2A wire JSON of a response message, as the Python reference's
// E2AResponse.from_proto(m).to_json() does (see MarshalEnvelope).
func MarshalResponse(m *e2av1.E2AResponse) ([]byte, error) {
	return writeRecord(m.ProtoReflect(), responseTable)
}

// The legacy readers the schema names ((e2a.v1.json).legacy_reader), bound by name in
// fields.gen.go: each reads its field from the whole document (docs/wire-json.md section 3).

func (d *document) legacyProvenance(*fieldSpec) (protoreflect.Value, error) {
	return messageValue(d.envelopeProvenance())
}

func (d *document) legacyTimestamp(*fieldSpec) (protoreflect.Value, error) {
	return optionalString(d.timestamp())
}

func (d *document) legacyChannel(*fieldSpec) (protoreflect.Value, error) {
	return optionalString(d.channel())
}

func (d *document) legacyAgentId(f *fieldSpec) (protoreflect.Value, error) {
	return optionalString(d.stripped(f.name(), sAgentId, sSourceAgentId), nil)
}

func (d *document) legacyServiceId(f *fieldSpec) (protoreflect.Value, error) {
	return optionalString(d.stripped(f.name(), sServiceId), nil)
}

func (d *document) legacyWorkspaceKey(f *fieldSpec) (protoreflect.Value, error) {
	return optionalString(d.stripped(f.name(), sWorkspaceKey, sWorkspaceDir), nil)
}

func (d *document) legacyMethod(*fieldSpec) (protoreflect.Value, error) {
	return optionalString(d.method())
}

func (d *document) legacyParams(*fieldSpec) (protoreflect.Value, error) {
	params, err := d.params()
	return protoreflect.ValueOfString(params), err
}

func (d *document) legacyChannelContext(f *fieldSpec) (protoreflect.Value, error) {
	context, err := d.channelContext(f.internal)
	return protoreflect.ValueOfString(context), err
}

// legacyResponseKind reads response_kind; null reads as "" (no kind), as older writers sent it.
func (d *document) legacyResponseKind(*fieldSpec) (protoreflect.Value, error) {
	kind, err := d.text(sResponseKind)
	if kind == nil || err != nil {
		return protoreflect.ValueOfString(""), err
	}
	return protoreflect.ValueOfString(*kind), nil
}
