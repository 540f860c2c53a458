// Command ceiling is the transport ceiling of the benchmarks: a grpc-go server with the bench-only
// RPCs the Python bench servers have (bench/grpc_server.py, bench/chat_server.py), doing the same
// protobuf work per message and nothing else, so the Python figures can be set against what gRPC
// itself does on this machine.
//
//	/e2a.bench.v1.Echo/Echo            ToACPRequest in, the same message out (parsed and re-serialized)
//	/e2a.bench.v1.Echo/EchoStream      a stream of ConvertStreamRequest, each echoed likewise
//	/e2a.bench.v1.BareStream/Chat      ChatRequest in, the frames of -frames out (ChatResponse messages)
//
// plus grpc.health.v1, so the bench waits for it as for the Python servers.
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"

	e2av1 "e2agrpc/gen/go/e2a/v1"
)

type echoServer interface{}

func echo(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
	request := new(e2av1.ToACPRequest)
	if err := dec(request); err != nil {
		return nil, err
	}
	return request, nil
}

func echoStream(_ any, stream grpc.ServerStream) error {
	for {
		request := new(e2av1.ConvertStreamRequest)
		if err := stream.RecvMsg(request); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if err := stream.SendMsg(request); err != nil {
			return err
		}
	}
}

var echoDesc = grpc.ServiceDesc{
	ServiceName: "e2a.bench.v1.Echo",
	HandlerType: (*echoServer)(nil),
	Methods:     []grpc.MethodDesc{{MethodName: "Echo", Handler: echo}},
	Streams: []grpc.StreamDesc{
		{StreamName: "EchoStream", Handler: echoStream, ServerStreams: true, ClientStreams: true},
	},
}

type bareStream struct{ frames []*e2av1.ChatResponse }

func (b *bareStream) chat(_ any, stream grpc.ServerStream) error {
	request := new(e2av1.ChatRequest)
	if err := stream.RecvMsg(request); err != nil {
		return err
	}
	for _, frame := range b.frames {
		if err := stream.SendMsg(frame); err != nil {
			return err
		}
	}
	return nil
}

// readFrames reads ChatResponse messages, each after its length as a 4-byte big-endian integer.
func readFrames(path string) ([]*e2av1.ChatResponse, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	var frames []*e2av1.ChatResponse
	for {
		var size uint32
		if err := binary.Read(file, binary.BigEndian, &size); err != nil {
			if errors.Is(err, io.EOF) {
				return frames, nil
			}
			return nil, err
		}
		data := make([]byte, size)
		if _, err := io.ReadFull(file, data); err != nil {
			return nil, err
		}
		frame := new(e2av1.ChatResponse)
		if err := proto.Unmarshal(data, frame); err != nil {
			return nil, err
		}
		frames = append(frames, frame)
	}
}

func main() {
	port := flag.Int("port", 0, "loopback port to listen on")
	framesPath := flag.String("frames", "", "file of the ChatResponse frames the bare stream writes")
	flag.Parse()
	var frames []*e2av1.ChatResponse
	if *framesPath != "" {
		var err error
		if frames, err = readFrames(*framesPath); err != nil {
			log.Fatalf("ceiling: reading %s: %v", *framesPath, err)
		}
	}
	listener, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		log.Fatalf("ceiling: %v", err)
	}
	server := grpc.NewServer()
	server.RegisterService(&echoDesc, nil)
	bare := &bareStream{frames: frames}
	server.RegisterService(&grpc.ServiceDesc{
		ServiceName: "e2a.bench.v1.BareStream",
		HandlerType: (*echoServer)(nil),
		Streams:     []grpc.StreamDesc{{StreamName: "Chat", Handler: bare.chat, ServerStreams: true}},
	}, nil)
	healthpb.RegisterHealthServer(server, health.NewServer())
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-signals
		server.Stop()
	}()
	if err := server.Serve(listener); err != nil {
		log.Fatalf("ceiling: %v", err)
	}
}
