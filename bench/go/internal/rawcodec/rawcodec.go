// Package rawcodec is a gRPC codec that passes messages through as bytes: a load generator sends
// pre-serialized requests and counts replies without parsing them, so its own work per message is
// the same whatever the RPC does.
package rawcodec

import "fmt"

// Codec marshals *[]byte / []byte as they are and unmarshals into *[]byte.
type Codec struct{}

// Marshal returns the bytes to send.
func (Codec) Marshal(v any) ([]byte, error) {
	switch message := v.(type) {
	case []byte:
		return message, nil
	case *[]byte:
		return *message, nil
	}
	return nil, fmt.Errorf("rawcodec: cannot marshal %T", v)
}

// Unmarshal keeps the received bytes.
func (Codec) Unmarshal(data []byte, v any) error {
	target, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("rawcodec: cannot unmarshal into %T", v)
	}
	*target = data
	return nil
}

// Name is the content-subtype; "proto" keeps the wire format what servers expect.
func (Codec) Name() string { return "proto" }
