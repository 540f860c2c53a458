// Command streamload drives RPCs for the benchmarks (ghz drives the unary ones, but does not count
// the messages of a stream, and its own work per call is about twice a lean client's) and prints
// one JSON object: the replies received within the round, its length, and this process's CPU time.
//
// Modes:
//
//	unary    -streams N unary calls in flight, each followed by the next as soon as it returns
//	server   -streams N streams in flight, each sending the request once and counting the frames it
//	         reads; a stream that ends is replaced by a new one (Chat and the bare streams)
//	bidi     -streams N long-lived streams, each keeping up to -window requests unanswered
//	         (ConvertStream and the echo streams); replies are counted
//
// Requests are pre-serialized bytes (-request FILE) and replies are counted unparsed (rawcodec), so
// the client's work per message is the same whatever the server does. Streams still open when the
// round ends are cancelled; what arrives after the deadline is not counted.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"e2agrpc/bench/go/internal/rawcodec"
)

type result struct {
	Items      int64   `json:"items"`
	Seconds    float64 `json:"seconds"`
	CPUSeconds float64 `json:"cpu_seconds"`
	Streams    int64   `json:"streams"`
}

func cpuSeconds() float64 {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return 0
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano()).Seconds()
}

// failed is err, unless the round is over: then whatever failed was cut off by the deadline.
func failed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func serverStreams(ctx context.Context, conn *grpc.ClientConn, method string, request []byte, counted *atomic.Int64, streams *atomic.Int64) error {
	desc := &grpc.StreamDesc{StreamName: method, ServerStreams: true}
	for ctx.Err() == nil {
		stream, err := conn.NewStream(ctx, desc, method)
		if err != nil {
			return failed(ctx, err)
		}
		if err := stream.SendMsg(request); err != nil {
			return failed(ctx, err)
		}
		if err := stream.CloseSend(); err != nil {
			return failed(ctx, err)
		}
		for {
			var reply []byte
			if err := stream.RecvMsg(&reply); err != nil {
				if errors.Is(err, io.EOF) {
					streams.Add(1)
					break
				}
				return failed(ctx, err)
			}
			if ctx.Err() == nil {
				counted.Add(1)
			}
		}
	}
	return nil
}

func unaryCalls(ctx context.Context, conn *grpc.ClientConn, method string, request []byte, counted *atomic.Int64) error {
	for ctx.Err() == nil {
		var reply []byte
		if err := conn.Invoke(ctx, method, request, &reply); err != nil {
			return failed(ctx, err)
		}
		if ctx.Err() == nil {
			counted.Add(1)
		}
	}
	return nil
}

func bidiStream(ctx context.Context, conn *grpc.ClientConn, method string, request []byte, window int, counted *atomic.Int64) error {
	desc := &grpc.StreamDesc{StreamName: method, ServerStreams: true, ClientStreams: true}
	stream, err := conn.NewStream(ctx, desc, method)
	if err != nil {
		return failed(ctx, err)
	}
	credits := make(chan struct{}, window)
	for range window {
		credits <- struct{}{}
	}
	sendErr := make(chan error, 1)
	go func() {
		for {
			select {
			case <-ctx.Done():
				sendErr <- nil
				return
			case <-credits:
			}
			if err := stream.SendMsg(request); err != nil {
				sendErr <- failed(ctx, err)
				return
			}
		}
	}()
	for {
		var reply []byte
		if err := stream.RecvMsg(&reply); err != nil {
			if errors.Is(err, io.EOF) && ctx.Err() == nil {
				return errors.New("the server ended the stream")
			}
			return failed(ctx, err)
		}
		if ctx.Err() != nil {
			return nil
		}
		counted.Add(1)
		credits <- struct{}{}
		select {
		case err := <-sendErr:
			if err != nil {
				return err
			}
		default:
		}
	}
}

func main() {
	address := flag.String("address", "", "HOST:PORT of the server")
	method := flag.String("method", "", "full method path, e.g. /e2a.v1.AgentService/Chat")
	mode := flag.String("mode", "server", "unary, server (server streaming) or bidi")
	requestPath := flag.String("request", "", "file with the serialized request message")
	streams := flag.Int("streams", 1, "streams (unary: calls) in flight")
	window := flag.Int("window", 64, "bidi: unanswered requests per stream")
	connections := flag.Int("connections", 1, "TCP connections the streams are spread over")
	duration := flag.Duration("duration", time.Second, "how long the round counts")
	flag.Parse()
	request, err := os.ReadFile(*requestPath)
	if err != nil {
		log.Fatalf("streamload: %v", err)
	}
	conns := make([]*grpc.ClientConn, *connections)
	for index := range conns {
		conns[index], err = grpc.NewClient(*address,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.ForceCodec(rawcodec.Codec{})))
		if err != nil {
			log.Fatalf("streamload: %v", err)
		}
		defer conns[index].Close()
	}
	// Cancelled by a timer rather than given a deadline: gRPC's own deadline timer may fire before
	// the context reports its error, and an error then would look like a failure.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(*duration, cancel)
	var counted, finished atomic.Int64
	cpuBefore := cpuSeconds()
	start := time.Now()
	var group sync.WaitGroup
	errs := make(chan error, *streams)
	for index := range *streams {
		conn := conns[index%len(conns)]
		group.Go(func() {
			var err error
			switch *mode {
			case "unary":
				err = unaryCalls(ctx, conn, *method, request, &counted)
			case "server":
				err = serverStreams(ctx, conn, *method, request, &counted, &finished)
			case "bidi":
				err = bidiStream(ctx, conn, *method, request, *window, &counted)
			default:
				err = fmt.Errorf("unknown mode %q", *mode)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	group.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		log.Fatalf("streamload: %v", err)
	}
	if counted.Load() == 0 {
		log.Fatalf("streamload: no reply within %s", *duration)
	}
	out := result{Items: counted.Load(), Seconds: min(elapsed.Seconds(), duration.Seconds()), CPUSeconds: cpuSeconds() - cpuBefore, Streams: finished.Load()}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		log.Fatalf("streamload: %v", err)
	}
}
