package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"
)

// floodCounts are flood's counters, shared by its connections.
type floodCounts struct{ open, dialed, closed atomic.Int64 }

// flood holds -conns connections to the extender: half stay silent after
// the TCP handshake, half finish the TLS handshake (no certificate), ask
// for /healthz once and then stay idle on the kept-alive connection. When
// the extender closes one, a new one replaces it a second later. Ends on
// SIGTERM.
func flood(args []string) int {
	fs := flag.NewFlagSet("flood", flag.ContinueOnError)
	addr := fs.String("extender", "", "the extender's host:port")
	conns := fs.Int("conns", 200, "connections to hold")
	if err := fs.Parse(args); err != nil || *addr == "" {
		fmt.Fprintln(os.Stderr, "tenant-attack flood: -extender is required")
		return 2
	}
	var n floodCounts
	for i := 0; i < *conns; i++ {
		go holdConnections(*addr, i%2 == 1, &n)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return 0
		case <-tick.C:
			emit(FloodStatus{Flood: "status", Open: n.open.Load(), Dialed: n.dialed.Load(), Closed: n.closed.Load()})
		}
	}
}

// holdConnections keeps one connection open at a time, forever.
func holdConnections(addr string, useTLS bool, n *floodCounts) {
	for {
		holdOne(addr, useTLS, n)
		time.Sleep(time.Second) // the attacker's pace, not a wait for anything
	}
}

func holdOne(addr string, useTLS bool, n *floodCounts) {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return
	}
	n.dialed.Add(1)
	n.open.Add(1)
	defer func() {
		conn.Close()
		n.open.Add(-1)
		n.closed.Add(1)
	}()
	if useTLS {
		tc := tls.Client(conn, &tls.Config{InsecureSkipVerify: true})
		if _, err := tc.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			return
		}
		conn = tc
	}
	// Read until the extender closes the connection: the answer to
	// /healthz, then nothing.
	buf := make([]byte, 4096)
	for {
		if _, err := conn.Read(buf); err != nil {
			return
		}
	}
}
