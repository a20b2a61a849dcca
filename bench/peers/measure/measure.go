// Package measure times a pass and the CPU the whole process spent on it (all threads: the
// goroutines, the garbage collector, the gRPC transport), as getrusage reports it.
package measure

import (
	"bufio"
	"encoding/json"
	"os"
	"syscall"
	"time"
)

// Pass is one timed pass, printed as a JSON line for bench/peers.ts.
type Pass struct {
	Method     string  `json:"method"`
	Items      int     `json:"items"`
	Seconds    float64 `json:"seconds"`
	CPUSeconds float64 `json:"cpuSeconds"`
	Requests   int     `json:"requests"`
	MaxRSSMB   float64 `json:"maxRssMB"`
}

func cpu() float64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		panic(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano()).Seconds()
}

func maxRSSMB() float64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		panic(err)
	}
	// ru_maxrss is in KiB on Linux
	return float64(u.Maxrss) * 1024 / 1e6
}

// Time runs one pass of `items` items and returns its figures; run returns the number of requests.
func Time(method string, items int, run func() int) Pass {
	startCPU := cpu()
	start := time.Now()
	requests := run()
	seconds := time.Since(start).Seconds()
	return Pass{
		Method:     method,
		Items:      items,
		Seconds:    seconds,
		CPUSeconds: cpu() - startCPU,
		Requests:   requests,
		MaxRSSMB:   maxRSSMB(),
	}
}

// Print writes the pass as one JSON line on stdout.
func Print(p Pass) {
	line, err := json.Marshal(p)
	if err != nil {
		panic(err)
	}
	if _, err := os.Stdout.Write(append(line, '\n')); err != nil {
		panic(err)
	}
}

// Steps serves a stepped run (bench/peers.ts `--steps`): it prints {"ready":true} once the caller's
// warm-up is done, then runs one timed pass per line read from stdin (the line its argument: a table
// id, or empty) and prints it, until stdin closes. The parent alternates these passes with its own
// process's, so a spell of the machine's slowness lands on both sides of a comparison.
func Steps(run func(arg string) Pass) {
	if _, err := os.Stdout.Write([]byte("{\"ready\":true}\n")); err != nil {
		panic(err)
	}
	lines := bufio.NewScanner(os.Stdin)
	for lines.Scan() {
		Print(run(lines.Text()))
	}
	if err := lines.Err(); err != nil {
		panic(err)
	}
}

// Guard points every Google library's implicit lookups at a closed loopback port: the metadata
// server and any HTTP proxy. The benchmarks talk to loopback endpoints only, with no credentials;
// should anything try to reach further, it fails here instead of leaving the machine.
func Guard() {
	for _, name := range []string{"GCE_METADATA_HOST", "GCE_METADATA_IP"} {
		if err := os.Setenv(name, "127.0.0.1:9"); err != nil {
			panic(err)
		}
	}
	for _, name := range []string{"HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"} {
		if err := os.Setenv(name, "http://127.0.0.1:9"); err != nil {
			panic(err)
		}
	}
	for _, name := range []string{"NO_PROXY", "no_proxy", "GOOGLE_APPLICATION_CREDENTIALS"} {
		if err := os.Unsetenv(name); err != nil {
			panic(err)
		}
	}
}
