module e2agrpc/bench/go

go 1.26.0

require (
	e2agrpc/gen/go v0.0.0
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.12
)

require (
	github.com/cloudevents/sdk-go/binding/format/protobuf/v2 v2.16.2 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
)

// The generated stubs of this repository, not a published module.
replace e2agrpc/gen/go => ../../gen/go
