// Package interop holds the Go side of the cross-language tests (its _test.go files): the code
// generated into e2a/v1 reads and writes the same bytes as the Python layer, and the generated
// clients get the same answers from the Python server as the Python client does. The tests run
// the repository's .venv/bin/python (make venv) for the Python side.
package interop
