package e2abus

// The CloudEvents binary mode on NATS headers, as the project writes it (cloudevent_formats
// to_http_binary, frame_messages): the HTTP binding's "ce-<attribute>" headers and "content-type",
// lower-case, values percent-encoded, the data as the payload.
//
// Why not an sdk-go protocol module: sdk-go's NATS bindings (protocol/nats, nats_jetstream) are
// not served by this project's module proxy, and its HTTP binding (v2.16.2) writes canonical
// header names ("Ce-Id") without the spec's percent-encoding. So this file is a binding.Message
// and binding.BinaryWriter over nats.Header that sdk-go drives (binding.ToEvent, binding.Write),
// with sdk-go's own attribute specs and value formatting.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/binding/spec"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/nats-io/nats.go"
)

const (
	attributePrefix   = "ce-"
	contentTypeHeader = "content-type"
)

var specs = spec.WithPrefix(attributePrefix)

// headerValue percent-encodes what the HTTP binding says a header value may not hold as it is:
// space, '"', '%' and every byte outside printable ASCII (upper-case hex, as Python's quote).
func headerValue(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if c <= 0x20 || c >= 0x7f || c == '"' || c == '%' {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// EventHeaders writes e in binary mode: its NATS headers and payload.
func EventHeaders(ctx context.Context, e *event.Event) (nats.Header, []byte, error) {
	w := &headerWriter{header: nats.Header{}}
	if _, err := binding.Write(ctx, binding.ToMessage(e), nil, w); err != nil {
		return nil, nil, err
	}
	return w.header, w.data, nil
}

// headerWriter is the binding.BinaryWriter of EventHeaders.
type headerWriter struct {
	header nats.Header
	data   []byte
}

func (w *headerWriter) Start(context.Context) error { return nil }
func (w *headerWriter) End(context.Context) error   { return nil }

func (w *headerWriter) SetData(data io.Reader) error {
	var err error
	w.data, err = io.ReadAll(data)
	return err
}

func (w *headerWriter) SetAttribute(attribute spec.Attribute, value any) error {
	name := attributePrefix + attribute.Name()
	if attribute.Kind() == spec.DataContentType {
		name = contentTypeHeader
	}
	return w.set(name, value)
}

func (w *headerWriter) SetExtension(name string, value any) error {
	return w.set(attributePrefix+name, value)
}

func (w *headerWriter) set(name string, value any) error {
	if value == nil {
		delete(w.header, name)
		return nil
	}
	text, err := types.Format(value)
	if err != nil {
		return fmt.Errorf("CloudEvent attribute %s: %w", name, err)
	}
	w.header[name] = []string{headerValue(text)}
	return nil
}

// EventOfMessage reads the CloudEvent a NATS message carries in binary mode (header names in any
// case, values percent-decoded); an error names the header at fault.
func EventOfMessage(ctx context.Context, header nats.Header, data []byte) (*event.Event, error) {
	m, err := newHeaderMessage(header, data)
	if err != nil {
		return nil, err
	}
	e, err := binding.ToEvent(ctx, m)
	if err != nil {
		return nil, fmt.Errorf("the message is not a CloudEvent in binary mode: %w", err)
	}
	if err := e.Validate(); err != nil {
		return nil, fmt.Errorf("the message's CloudEvent: %w", err)
	}
	return e, nil
}

// headerMessage is a binding.Message over a NATS message's headers and payload.
type headerMessage struct {
	version     spec.Version
	attributes  map[string]string // lower-case header name -> decoded value
	contentType string
	data        []byte
}

func newHeaderMessage(header nats.Header, data []byte) (*headerMessage, error) {
	m := &headerMessage{attributes: map[string]string{}, data: data}
	for name, values := range header {
		lowered := strings.ToLower(name)
		if len(values) == 0 {
			continue
		}
		switch {
		case lowered == contentTypeHeader:
			m.contentType = values[0]
		case strings.HasPrefix(lowered, attributePrefix):
			decoded, err := url.PathUnescape(values[0])
			if err != nil {
				return nil, fmt.Errorf("header %s: not percent-encoded text: %w", name, err)
			}
			m.attributes[lowered] = decoded
		}
	}
	m.version = specs.Version(m.attributes[specs.PrefixedSpecVersionName()])
	if m.version == nil {
		return nil, fmt.Errorf("header %sspecversion: missing or not a CloudEvents version", attributePrefix)
	}
	return m, nil
}

func (m *headerMessage) ReadEncoding() binding.Encoding { return binding.EncodingBinary }

func (m *headerMessage) ReadStructured(context.Context, binding.StructuredWriter) error {
	return binding.ErrNotStructured
}

func (m *headerMessage) ReadBinary(_ context.Context, w binding.BinaryWriter) error {
	for name, value := range m.attributes {
		var err error
		if attribute := m.version.Attribute(name); attribute != nil {
			err = w.SetAttribute(attribute, value)
		} else {
			err = w.SetExtension(strings.TrimPrefix(name, attributePrefix), value)
		}
		if err != nil {
			return fmt.Errorf("header %s: %w", name, err)
		}
	}
	if m.contentType != "" {
		if err := w.SetAttribute(m.version.AttributeFromKind(spec.DataContentType), m.contentType); err != nil {
			return fmt.Errorf("header %s: %w", contentTypeHeader, err)
		}
	}
	if len(m.data) > 0 {
		return w.SetData(bytes.NewReader(m.data))
	}
	return nil
}

// GetAttribute and GetExtension read single attributes (binding.MessageMetadataReader, which
// sdk-go's transformers use).
func (m *headerMessage) GetAttribute(kind spec.Kind) (spec.Attribute, any) {
	attribute := m.version.AttributeFromKind(kind)
	if attribute == nil {
		return nil, nil
	}
	if kind == spec.DataContentType {
		if m.contentType == "" {
			return attribute, nil
		}
		return attribute, m.contentType
	}
	if value, ok := m.attributes[attributePrefix+attribute.Name()]; ok {
		return attribute, value
	}
	return attribute, nil
}

func (m *headerMessage) GetExtension(name string) any {
	if value, ok := m.attributes[attributePrefix+name]; ok {
		return value
	}
	return nil
}

func (m *headerMessage) Finish(error) error { return nil }

var (
	_ binding.Message               = (*headerMessage)(nil)
	_ binding.MessageMetadataReader = (*headerMessage)(nil)
	_ binding.BinaryWriter          = (*headerWriter)(nil)
)
