// Command bigtable is the Go peer of the Bigtable sink benchmark: cloud.google.com/go/bigtable's
// Table.ApplyBulk into the cbtemulator that bench/peers.ts started (or, with --bigtable-fake, the fake in
// front of it: cmd/bigtablefake), on loopback (BIGTABLE_EMULATOR_HOST:
// an insecure connection, no credentials, no client-side metrics), 1 SetCell per record (family cf,
// qualifier v, timestamp 1,000,000 µs, a 100-byte value, keys row000000000...), --batch entries per
// call, --concurrency calls in flight. The tables are created (and dropped) by bench/peers.ts: the
// warm-up passes write to --warmup-table (at least --warmup-passes, and more until --warmup-seconds have
// passed, what bench/peers.ts gives our sink's warm-up too), the timed pass to --table. The timed pass prints a JSON line;
// with --stepped, a timed pass per line on stdin, into the table the line names (measure.Steps).
//
//	bigtable --emulator 127.0.0.1:PORT --project P --instance I --table T --warmup-table W [--records 100000]
//	         [--warmup-seconds 3] [--warmup-passes 20]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/bigtable"
	"effect-gcp-sinks/bench/peers/measure"
)

func main() {
	emulator := flag.String("emulator", "", "host:port of cbtemulator (loopback)")
	project := flag.String("project", "bench", "project id")
	instance := flag.String("instance", "bench", "instance id")
	table := flag.String("table", "", "the timed pass's table")
	warmupTable := flag.String("warmup-table", "", "the warm-up pass's table (none: no warm-up)")
	records := flag.Int("records", 100_000, "records per pass")
	batch := flag.Int("batch", 100, "entries per MutateRows call")
	concurrency := flag.Int("concurrency", 10, "calls in flight")
	warmupSeconds := flag.Float64("warmup-seconds", 0, "warm-up passes until this much time has passed")
	warmupPasses := flag.Int("warmup-passes", 1, "at least this many warm-up passes")
	stepped := flag.Bool("stepped", false, "after the warm-up, a timed pass per line on stdin into the table it names (measure.Steps)")
	flag.Parse()
	measure.Guard()
	check(os.Setenv("BIGTABLE_EMULATOR_HOST", *emulator))

	ctx := context.Background()
	client, err := bigtable.NewClientWithConfig(ctx, *project, *instance, bigtable.ClientConfig{
		MetricsProvider: bigtable.NoopMetricsProvider{},
		DisableSession:  true,
	})
	check(err)
	defer client.Close()
	value := []byte(strings.Repeat("x", 100))

	pass := func(tableID string) func() int {
		return func() int {
			t := client.Open(tableID)
			var mu sync.Mutex
			next := 0
			calls := 0
			var wg sync.WaitGroup
			for w := 0; w < *concurrency; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						mu.Lock()
						from := next
						next = min(*records, next+*batch)
						to := next
						if from < to {
							calls++
						}
						mu.Unlock()
						if from >= to {
							return
						}
						keys := make([]string, 0, to-from)
						muts := make([]*bigtable.Mutation, 0, to-from)
						for i := from; i < to; i++ {
							m := bigtable.NewMutation()
							m.Set("cf", "v", bigtable.Timestamp(1_000_000), value)
							keys = append(keys, fmt.Sprintf("row%09d", i))
							muts = append(muts, m)
						}
						errs, err := t.ApplyBulk(ctx, keys, muts)
						check(err)
						for _, e := range errs {
							check(e)
						}
					}
				}()
			}
			wg.Wait()
			return calls
		}
	}
	if *warmupTable != "" {
		warmStart := time.Now()
		for n := 0; n == 0 || n < *warmupPasses || time.Since(warmStart).Seconds() < *warmupSeconds; n++ {
			pass(*warmupTable)()
		}
	}
	if *stepped {
		measure.Steps(func(tableID string) measure.Pass {
			return measure.Time("go.bigtable.applyBulk", *records, pass(tableID))
		})
		return
	}
	measure.Print(measure.Time("go.bigtable.applyBulk", *records, pass(*table)))
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
