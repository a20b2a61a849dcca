// Command bigquery is the Go peer of the BigQuery sink benchmark: the managedwriter
// (cloud.google.com/go/bigquery/storage/managedwriter) appending to a table's default stream on the fake
// BigQueryWrite server that bench/peers.ts started (bench/fakeBigQueryProcess.ts), on loopback, without
// credentials. The rows are the benchmark's distinct rows (bench/rows.ts), written by bench/peers.ts as
// JSON to --rows-file, repeated to --rows rows per pass.
//
//   - --mode encode: each row a generated struct (rowpb.Row), proto.Marshal per row, as a Go user writes
//     objects;
//   - --mode bytes: the rows marshalled once before the passes, the same byte slices appended every pass.
//
// Appends are cut at --batch-bytes of row framing (the sink's 512 KiB) with --depth appends in flight.
// --warmup untimed passes run first, and more until --warmup-seconds have passed: a fresh process's
// appends reach their steady rate only after about a second of streaming (2 million rows: 4.8M rows/s in
// its second pass, 7.4M in its third, 10-11.8M from the fourth, at the same CPU per row), so a fixed count
// of short warm-up passes timed the ramp, not the client. Each of --passes timed passes then prints a
// JSON line (measure.Pass); with --stepped, a timed pass per line on stdin instead (measure.Steps).
//
//	bigquery --target 127.0.0.1:PORT --project P --rows-file rows.json --mode encode|bytes [--rows 2000000]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"cloud.google.com/go/bigquery/storage/managedwriter"
	"cloud.google.com/go/bigquery/storage/managedwriter/adapt"
	"effect-gcp-sinks/bench/peers/measure"
	"effect-gcp-sinks/bench/peers/rowpb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

type jsonRow struct {
	User    string  `json:"user"`
	Country string  `json:"country"`
	URL     string  `json:"url"`
	Seq     int64   `json:"seq"`
	Amount  int64   `json:"amount"`
	TsMicro int64   `json:"tsMicros"`
	Lat     float64 `json:"lat"`
	Lon     float64 `json:"lon"`
	Active  bool    `json:"active"`
	Premium bool    `json:"premium"`
}

func main() {
	target := flag.String("target", "", "host:port of the fake's gRPC server (loopback)")
	tlsCA := flag.String("tls-ca", "", "PEM root to trust: the fake serves TLS (self-signed, for localhost)")
	project := flag.String("project", "fake-project", "project id")
	rowsFile := flag.String("rows-file", "", "the distinct rows, as JSON")
	mode := flag.String("mode", "encode", "encode | bytes")
	rowCount := flag.Int("rows", 2_000_000, "rows per pass")
	passes := flag.Int("passes", 1, "timed passes")
	warmup := flag.Int("warmup", 1, "untimed passes first")
	warmupSeconds := flag.Float64("warmup-seconds", 0, "untimed passes until this much time has passed, too")
	depth := flag.Int("depth", 100, "appends in flight")
	batchBytes := flag.Int("batch-bytes", 512*1024, "row framing per append")
	stepped := flag.Bool("stepped", false, "after the warm-up, a timed pass per line on stdin (measure.Steps)")
	flag.Parse()
	measure.Guard()

	var source []jsonRow
	text, err := os.ReadFile(*rowsFile)
	check(err)
	check(json.Unmarshal(text, &source))
	rows := make([]*rowpb.Row, len(source))
	encoded := make([][]byte, len(source))
	for i, r := range source {
		rows[i] = &rowpb.Row{
			User: proto.String(r.User), Country: proto.String(r.Country), Url: proto.String(r.URL),
			Seq: proto.Int64(r.Seq), Amount: proto.Int64(r.Amount), Ts: proto.Int64(r.TsMicro),
			Lat: proto.Float64(r.Lat), Lon: proto.Float64(r.Lon),
			Active: proto.Bool(r.Active), Premium: proto.Bool(r.Premium),
		}
		encoded[i], err = proto.Marshal(rows[i])
		check(err)
	}

	ctx := context.Background()
	client, err := managedwriter.NewClient(ctx, *project,
		option.WithEndpoint(*target),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(transport(*tlsCA))),
	)
	check(err)
	defer client.Close()
	descriptor, err := adapt.NormalizeDescriptor((&rowpb.Row{}).ProtoReflect().Descriptor())
	check(err)
	stream, err := client.NewManagedStream(ctx,
		managedwriter.WithType(managedwriter.DefaultStream),
		managedwriter.WithDestinationTable(managedwriter.TableParentFromParts(*project, "d", "t")),
		managedwriter.WithSchemaDescriptor(descriptor),
		managedwriter.WithMaxInflightRequests(*depth),
	)
	check(err)
	defer stream.Close()

	pass := func() int {
		pending := make([]*managedwriter.AppendResult, 0, *depth)
		requests := 0
		send := func(batch [][]byte) {
			if len(pending) == *depth {
				_, err := pending[0].GetResult(ctx)
				check(err)
				pending = pending[1:]
			}
			result, err := stream.AppendRows(ctx, batch)
			check(err)
			pending = append(pending, result)
			requests++
		}
		batch := make([][]byte, 0, 8192)
		frame := 0
		for i := 0; i < *rowCount; i++ {
			var b []byte
			if *mode == "bytes" {
				b = encoded[i%len(encoded)]
			} else {
				b, err = proto.Marshal(rows[i%len(rows)])
				check(err)
			}
			f := 1 + protowire.SizeBytes(len(b))
			if frame+f > *batchBytes && len(batch) > 0 {
				send(batch)
				// a new slice: the managedwriter keeps the last one until its append is acknowledged
				batch = make([][]byte, 0, 8192)
				frame = 0
			}
			batch = append(batch, b)
			frame += f
		}
		if len(batch) > 0 {
			send(batch)
		}
		for _, p := range pending {
			_, err := p.GetResult(ctx)
			check(err)
		}
		return requests
	}
	method := "go.managedwriter." + *mode
	warmStart := time.Now()
	for i := 0; i < *warmup || time.Since(warmStart).Seconds() < *warmupSeconds; i++ {
		pass()
	}
	if *stepped {
		measure.Steps(func(string) measure.Pass { return measure.Time(method, *rowCount, pass) })
		return
	}
	for i := 0; i < *passes; i++ {
		measure.Print(measure.Time(method, *rowCount, pass))
	}
}

// transport is plaintext, or TLS trusting the root in caFile.
func transport(caFile string) credentials.TransportCredentials {
	if caFile == "" {
		return insecure.NewCredentials()
	}
	creds, err := credentials.NewClientTLSFromFile(caFile, "localhost")
	check(err)
	return creds
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
