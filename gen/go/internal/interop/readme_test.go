package interop

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README's "calling the service" example, run against the Python server.
func TestReadmeCallServiceExample(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	var out bytes.Buffer
	if err := callService(ctx, serverAddress(t), &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != callServiceOutput {
		t.Errorf("callService printed\n%s\nwant\n%s", out.String(), callServiceOutput)
	}
}

// What callService prints (README.md shows it too): the echo backend streams the text back.
const callServiceOutput = `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"text":"hi","prompt":[{"type":"text","text":"hi"}],"session_id":"s-1"}}
0 e2a.chunk false {"delta_kind":"text","delta":"hello "}
1 e2a.chunk false {"delta_kind":"text","delta":"from "}
2 e2a.chunk false {"delta_kind":"text","delta":"Go"}
3 e2a.complete true {"result":{"content":"hello from Go"}}
`

// Each Go example of README.md's "Using the schema from Go" section is, verbatim, one of the files
// that the tests compile and run (from its import block on), the section has no other Go code, and
// it shows callService's output as it is.
func TestReadmeGoExamplesAreTheTestedOnes(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	readme := string(readFile(t, filepath.Join(root, "README.md")))
	_, section, found := strings.Cut(readme, "\n## Using the schema from Go\n")
	if !found {
		t.Fatal(`README.md has no "## Using the schema from Go" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var blocks []string
	for _, match := range regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(section, -1) {
		blocks = append(blocks, match[1])
	}
	examples := []string{
		filepath.Join(root, "gen", "go", "e2ajson", "example_test.go"),
		filepath.Join(root, "gen", "go", "internal", "interop", "readme_example_test.go"),
		filepath.Join(root, "gen", "go", "e2ajson", "codec_example_test.go"),
	}
	used := map[int]bool{}
	for _, path := range examples {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		_, code, _ := strings.Cut(string(data), "\nimport (")
		code = "import (" + code
		index := -1
		for i, block := range blocks {
			if block == code {
				index = i
			}
		}
		if index < 0 {
			t.Errorf("README.md shows no ```go block identical to %s from `import (` on:\n%s", path, code)
			continue
		}
		used[index] = true
	}
	if !strings.Contains(section, "```text\n"+callServiceOutput+"```") {
		t.Errorf("README.md does not show callService's output:\n%s", callServiceOutput)
	}
	for i, block := range blocks {
		if !used[i] {
			t.Errorf("README.md's Go block %d is not one of the tested examples %v:\n%s", i, examples, block)
		}
	}
}
