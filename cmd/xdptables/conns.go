package main

import (
	"sync"

	"github.com/xdptables/xdptables/kernel"
)

// lookups is the netlink socket of the kernel reads that parsing asks
// for (ipset headers, xtables extensions, whether the kernel is
// readable): opened on first use and shared by them, it stays open until
// the process ends and is released with the command's own socket
// (releaseConns). Closed right after a lookup, it would wait in close(2)
// for whatever another command just deleted (see kernel.Release); closed
// alone after the command's commit, for what the command deleted. It is
// not the command's socket: a restore's parser runs while the command
// reads and commits.
var lookups struct {
	mu   sync.Mutex
	conn *kernel.Conn
}

// lookupConn returns the parsers' socket, opening it the first time.
func lookupConn() (*kernel.Conn, error) {
	lookups.mu.Lock()
	defer lookups.mu.Unlock()
	if lookups.conn == nil {
		c, err := kernel.Open()
		if err != nil {
			return nil, err
		}
		lookups.conn = c
	}
	return lookups.conn, nil
}

// releaseConns releases cs and the parsers' socket together, for a
// process that ends right after (kernel.Release): the command does not
// wait for the kernel to free what it deleted.
func releaseConns(cs ...*kernel.Conn) {
	lookups.mu.Lock()
	defer lookups.mu.Unlock()
	_ = kernel.Release(append(cs, lookups.conn)...)
	lookups.conn = nil
}
