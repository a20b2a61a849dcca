// Command bigtablefake is the Bigtable server of `bench:peers -- --bigtable-fake`: a loopback gRPC
// server that answers MutateRows itself, at once, every entry OK (what the fake BigQueryWrite process
// does for appends), and passes every other call (the clients' first-contact pings, anything else) on
// to the cbtemulator behind it. The clients measured then spend what they spend with no emulator setting
// their pace: the cbtemulator applies each entry to its in-memory tables, and on this machine's two
// cores it, not the clients, bounds every client's rate.
//
// The server reads requests as bytes (a codec that does not decode them), walks each request's entries
// to count them and to digest them, and writes the response's bytes by hand. A line "digest" on stdin
// prints the entries and the order-free sum of their bytes' FNV-1a hashes since the last such line, as
// JSON, and starts again: bench/peers.ts checks that every client sent the same entries.
//
//	bigtablefake --emulator 127.0.0.1:PORT   (prints "listening 127.0.0.1:PORT" once it serves)
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"os"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

const mutateRows = "/google.bigtable.v2.Bigtable/MutateRows"

// raw passes messages through as bytes: the fake decodes only what it needs, and forwards the rest
// without knowing its types.
type raw struct{}

func (raw) Marshal(v any) ([]byte, error) { return *(v.(*[]byte)), nil }
func (raw) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}
func (raw) Name() string { return "proto" }

// tally is what the MutateRows calls since the last digest carried.
type tally struct {
	mu      sync.Mutex
	entries uint64
	sum     uint64
}

func (t *tally) add(entries, sum uint64) {
	t.mu.Lock()
	t.entries += entries
	t.sum += sum
	t.mu.Unlock()
}

func (t *tally) take() (uint64, uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, s := t.entries, t.sum
	t.entries, t.sum = 0, 0
	return e, s
}

// field reads the key and, for a length-delimited field, the value of the field at b[0:].
func field(b []byte) (num uint64, wire uint64, value []byte, rest []byte, err error) {
	key, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, 0, nil, nil, errors.New("bad key")
	}
	b = b[n:]
	switch key & 7 {
	case 0:
		_, m := binary.Uvarint(b)
		if m <= 0 {
			return 0, 0, nil, nil, errors.New("bad varint")
		}
		return key >> 3, 0, nil, b[m:], nil
	case 1:
		if len(b) < 8 {
			return 0, 0, nil, nil, errors.New("truncated fixed64")
		}
		return key >> 3, 1, nil, b[8:], nil
	case 5:
		if len(b) < 4 {
			return 0, 0, nil, nil, errors.New("truncated fixed32")
		}
		return key >> 3, 5, nil, b[4:], nil
	case 2:
		l, m := binary.Uvarint(b)
		if m <= 0 || uint64(len(b)-m) < l {
			return 0, 0, nil, nil, errors.New("bad length")
		}
		return key >> 3, 2, b[m : m+int(l)], b[m+int(l):], nil
	}
	return 0, 0, nil, nil, fmt.Errorf("wire type %d", key&7)
}

// entries counts a MutateRowsRequest's entries (field 2) and sums the FNV-1a hashes of their bytes (a
// row key and its mutations, as the client encoded them: protobuf encoders write fields in number order,
// so the same entry gives the same bytes from each client). Each entry's fields are walked, so a
// malformed one is refused.
func entries(req []byte) (count uint64, sum uint64, err error) {
	for len(req) > 0 {
		num, wire, value, rest, e := field(req)
		if e != nil {
			return 0, 0, e
		}
		req = rest
		if num != 2 || wire != 2 {
			continue
		}
		count++
		for entry := value; len(entry) > 0; {
			_, _, _, r, e := field(entry)
			if e != nil {
				return 0, 0, e
			}
			entry = r
		}
		h := fnv.New64a()
		h.Write(value)
		sum += h.Sum64()
	}
	return count, sum, nil
}

// response is a MutateRowsResponse of n entries, each {index: i, status: {}} (OK).
func response(n uint64) []byte {
	out := make([]byte, 0, n*14)
	var v [binary.MaxVarintLen64]byte
	for i := uint64(0); i < n; i++ {
		k := binary.PutUvarint(v[:], i)
		out = append(out, 0x0a, byte(1+k+2), 0x08)
		out = append(out, v[:k]...)
		out = append(out, 0x12, 0x00)
	}
	return out
}

func answer(stream grpc.ServerStream, t *tally) error {
	var req []byte
	if err := stream.RecvMsg(&req); err != nil {
		return err
	}
	n, sum, err := entries(req)
	if err != nil {
		return status.Errorf(codes.InvalidArgument, "MutateRowsRequest: %v", err)
	}
	t.add(n, sum)
	resp := response(n)
	return stream.SendMsg(&resp)
}

// forward relays one call of any method to the emulator, messages and metadata both ways.
func forward(upstream *grpc.ClientConn, method string, stream grpc.ServerStream) error {
	md, _ := metadata.FromIncomingContext(stream.Context())
	ctx, cancel := context.WithCancel(metadata.NewOutgoingContext(stream.Context(), md))
	defer cancel()
	desc := &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}
	client, err := upstream.NewStream(ctx, desc, method, grpc.ForceCodec(raw{}))
	if err != nil {
		return err
	}
	go func() {
		for {
			var m []byte
			if err := stream.RecvMsg(&m); err != nil {
				_ = client.CloseSend()
				return
			}
			if err := client.SendMsg(&m); err != nil {
				return
			}
		}
	}()
	if header, err := client.Header(); err == nil {
		_ = stream.SendHeader(header)
	}
	for {
		var m []byte
		err := client.RecvMsg(&m)
		if errors.Is(err, io.EOF) {
			stream.SetTrailer(client.Trailer())
			return nil
		}
		if err != nil {
			stream.SetTrailer(client.Trailer())
			return err
		}
		if err := stream.SendMsg(&m); err != nil {
			return err
		}
	}
}

func main() {
	emulator := flag.String("emulator", "", "host:port of the cbtemulator the other calls go to")
	flag.Parse()
	// the service takes requests up to 256 MiB; grpc-go's default limit is 4 MiB
	const maxMessage = 256 << 20
	upstream, err := grpc.NewClient(*emulator, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessage), grpc.MaxCallSendMsgSize(maxMessage)))
	check(err)
	t := &tally{}
	server := grpc.NewServer(
		grpc.ForceServerCodec(raw{}),
		grpc.MaxRecvMsgSize(maxMessage),
		grpc.MaxSendMsgSize(maxMessage),
		grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
			method, _ := grpc.MethodFromServerStream(stream)
			if method == mutateRows {
				return answer(stream, t)
			}
			return forward(upstream, method, stream)
		}),
	)
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	fmt.Printf("listening %s\n", listener.Addr())
	go func() {
		lines := bufio.NewScanner(os.Stdin)
		for lines.Scan() {
			if lines.Text() == "digest" {
				e, s := t.take()
				fmt.Printf("{\"entries\":%d,\"sum\":\"%016x\"}\n", e, s)
			}
		}
		server.Stop()
	}()
	check(server.Serve(listener))
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
