package motoserver

import (
	"fmt"
	"net"
	"testing"
)

// FreePort never hands out a port twice in a process, never one in the
// kernel's ephemeral range, and never one somebody is listening on.
func TestFreePort(t *testing.T) {
	portsMu.Lock()
	held, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", portsNext))
	portsMu.Unlock()
	if err != nil {
		t.Skipf("the next port is taken already: %v", err)
	}
	defer held.Close()
	busy := held.Addr().(*net.TCPAddr).Port

	seen := map[int]bool{}
	for range 300 {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if p < portsFrom || p >= portsTo {
			t.Fatalf("port %d is outside %d-%d", p, portsFrom, portsTo-1)
		}
		if p == busy {
			t.Fatalf("port %d is listened on, yet was handed out", p)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			t.Fatalf("port %d is not free: %v", p, err)
		}
		l.Close()
	}
}
