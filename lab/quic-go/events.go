package main

// The line protocol with the orchestrator (crates/quark-lab/src/child/mod.rs):
// one JSON event per line on stdout, one command word per line on stdin,
// logs on stderr. The process exits when stdin closes.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
)

var stdout sync.Mutex

// emit prints one event line: "event": name, then the fields of body (a
// struct or map, or nil for none).
func emit(name string, body any) {
	line := fmt.Appendf(nil, `{"event":%q`, name)
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil || len(raw) < 2 || raw[0] != '{' {
			fmt.Fprintf(os.Stderr, "cannot encode event %s: %v\n", name, err)
			return
		}
		if len(raw) > 2 {
			line = append(append(line, ','), raw[1:len(raw)-1]...)
		}
	}
	line = append(line, '}', '\n')
	stdout.Lock()
	defer stdout.Unlock()
	os.Stdout.Write(line)
}

// emitError prints the error event every failure ends in.
func emitError(err error) {
	emit("error", map[string]string{"message": err.Error()})
}

// exitCode ends a child: 0, or 1 after an `error` event for err.
func exitCode(err error) int {
	if err != nil {
		emitError(err)
		return 1
	}
	return 0
}

// commands delivers stdin's lines, trimmed; it exits the process when stdin
// closes, as the orchestrator's way to stop a child.
func commands() <-chan string {
	ch := make(chan string)
	go func() {
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			ch <- strings.TrimSpace(in.Text())
		}
		os.Exit(0)
	}()
	return ch
}
