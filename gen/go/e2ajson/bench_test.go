package e2ajson

import (
	"crypto/sha256"
	"crypto/sha3"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"
)

// multimodalPrompt is workload (b) of bench/codec_roundtrip.py as JSON text: an ACP session/prompt
// envelope with a text block, a base64 PNG stand-in (1,200 bytes of SHAKE-256 output) and three
// file references, about 3 KB.
func multimodalPrompt() []byte {
	image := []byte("\x89PNG\r\n\x1a\n")
	shake := sha3.NewSHAKE256()
	shake.Write([]byte("e2a-grpc bench image"))
	rest := make([]byte, 1200-len(image))
	shake.Read(rest)
	image = append(image, rest...)
	mainSum := sha256.Sum256([]byte("main.py"))
	return fmt.Appendf(nil, `{"protocol_version": "1.0", "request_id": "req_mm_0001", "jsonrpc_id": 42, `+
		`"session_id": "sess_mm_7f3a9c", "timestamp": "2026-03-30T09:15:00+00:00", "identity_origin": "user", `+
		`"channel": "ide", "user_id": "u_001", "method": "session/prompt", "is_stream": true, `+
		`"params": {"sessionId": "sess_mm_7f3a9c", "prompt": [`+
		`{"type": "text", "text": "What is wrong in this screenshot? The files below drew it."}, `+
		`{"type": "image", "mimeType": "image/png", "data": %q}], "files": [`+
		`{"uri": "file:///workspace/src/app/main.py", "name": "main.py", "mime_type": "text/x-python", "size": 4821, `+
		`"_meta": {"sha256": %q, "lines": 142}}, `+
		`{"uri": "file:///workspace/docs/design.md", "name": "design.md", "mime_type": "text/markdown", "size": 12034, `+
		`"_meta": {"encoding": "utf-8"}}, `+
		`{"uri": "https://example.com/assets/screenshot.png", "name": "screenshot.png", "mime_type": "image/png", `+
		`"size": null, "_meta": {}}]}, `+
		`"provenance": {"source_protocol": "acp", "converter": "bench", "details": {"kind": "acp_jsonrpc"}}}`,
		base64.StdEncoding.EncodeToString(image), hex.EncodeToString(mainSum[:]))
}

// The benchmark reads the document the Python benchmark does: its wire JSON is Python's to the byte.
func TestBenchmarkDocument(t *testing.T) {
	m, err := UnmarshalEnvelope(multimodalPrompt())
	if err != nil {
		t.Fatal(err)
	}
	wire, err := MarshalEnvelope(m)
	if err != nil {
		t.Fatal(err)
	}
	// sha256 of E2AEnvelope.from_dict(bench.codec_roundtrip.multimodal_prompt()).to_json().
	const pythonSum = "9660718467d7039844a60d61aeeae815b9eb6476af39e27247cfc4e873ecda42"
	if sum := sha256.Sum256(wire); hex.EncodeToString(sum[:]) != pythonSum || len(wire) != 2922 {
		t.Errorf("wire JSON differs from Python's (%d bytes):\n%s", len(wire), wire)
	}
}

// BenchmarkWireJSONRoundTrip is UnmarshalEnvelope then MarshalEnvelope of the ~3 KB envelope.
func BenchmarkWireJSONRoundTrip(b *testing.B) {
	doc := multimodalPrompt()
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		m, err := UnmarshalEnvelope(doc)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := MarshalEnvelope(m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodingJSONMapRoundTrip is the baseline: encoding/json Unmarshal of the same text into
// map[string]any, then Marshal (which neither keeps key order nor checks any field).
func BenchmarkEncodingJSONMapRoundTrip(b *testing.B) {
	doc := multimodalPrompt()
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		var value map[string]any
		if err := json.Unmarshal(doc, &value); err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(value); err != nil {
			b.Fatal(err)
		}
	}
}
