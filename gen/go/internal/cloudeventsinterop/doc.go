// Package cloudeventsinterop holds the Go side of the CloudEvents protobuf-format peer test (its
// _test.go file): the official Go SDK (github.com/cloudevents/sdk-go/v2 with its protobuf format
// module) reads the io.cloudevents.v1.CloudEvent bytes that `e2a-grpc convert to-cloudevents`
// writes, and `e2a-grpc convert from-cloudevents` reads the bytes the SDK writes. It imports no
// generated e2a package: the SDK registers io.cloudevents.v1.CloudEvent in the protobuf registry
// itself, and a second registration of that name in one binary is a conflict.
package cloudeventsinterop
