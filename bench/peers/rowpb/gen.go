// Package rowpb holds the benchmark row's generated Go struct.
package rowpb

//go:generate sh -c "go run ./../cmd/genrow > row.pb.go"
