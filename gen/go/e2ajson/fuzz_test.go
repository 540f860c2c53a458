package e2ajson

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"
)

// FuzzWireJSON checks, for any input, that reading never panics and that what is read is stable:
// its wire JSON reads back as the same message and writes the same text again.
func FuzzWireJSON(f *testing.F) {
	for _, c := range okCases {
		f.Add(c.input)
	}
	for _, c := range errorCases {
		f.Add(c.input)
	}
	f.Fuzz(func(t *testing.T, input string) {
		for _, c := range []codec{envelopeCodec, responseCodec} {
			m, err := c.unmarshal([]byte(input))
			if err != nil {
				continue
			}
			wire, err := c.marshal(m)
			if err != nil {
				t.Fatalf("Marshal after Unmarshal(%q): %v", input, err)
			}
			again, err := c.unmarshal(wire)
			if err != nil {
				t.Fatalf("Unmarshal of Marshal's output %s: %v", wire, err)
			}
			if !proto.Equal(m, again) {
				t.Fatalf("Unmarshal(Marshal(m)) != m for input %q", input)
			}
			if wire2, err := c.marshal(again); err != nil || !bytes.Equal(wire, wire2) {
				t.Fatalf("second Marshal differs: %s vs %s (%v)", wire, wire2, err)
			}
		}
	})
}
