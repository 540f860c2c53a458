package interop

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	e2av1 "e2agrpc/gen/go/e2a/v1"
)

// callService converts an E2A envelope to ACP JSON-RPC, then streams a Chat answer.
func callService(ctx context.Context, address string, out io.Writer) error {
	conn, err := grpc.NewClient(address, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()

	// ConversionService: E2A wire JSON in, ACP JSON-RPC text out.
	converted, err := e2av1.NewConversionServiceClient(conn).ToACP(ctx, &e2av1.ToACPRequest{
		Source: &e2av1.ToACPRequest_EnvelopeJson{
			EnvelopeJson: `{"method":"session/prompt","session_id":"s-1","jsonrpc_id":1,"params":{"text":"hi"}}`,
		},
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(out, converted.GetJsonrpc())

	// AgentService.Chat: one envelope in, a stream of E2AResponse frames out; the last is final.
	stream, err := e2av1.NewAgentServiceClient(conn).Chat(ctx, &e2av1.ChatRequest{
		Envelope: &e2av1.E2AEnvelope{
			Method:    proto.String("chat.send"),
			RequestId: proto.String("req-1"),
			Params:    `{"text":"hello from Go"}`,
		},
	})
	if err != nil {
		return err
	}
	for {
		reply, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		frame := reply.GetResponse()
		fmt.Fprintln(out, frame.GetSequence(), frame.GetResponseKind(), frame.GetIsFinal(), frame.GetBody())
	}
}
