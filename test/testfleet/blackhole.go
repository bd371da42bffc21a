package testfleet

import (
	"net"
	"net/url"
	"sync"

	"k8s.io/client-go/tools/clientcmd"
)

// Blackhole is a TCP relay in front of a member's API server (TLS passes through untouched). While dropping,
// it behaves like a network partition: connections stay open, bytes in flight stop moving in both directions,
// and new connections are accepted and never answered. A stopped API server on loopback is not that: its port
// refuses connections at once, so every request fails fast; behind a partition requests hang until a timeout.
type Blackhole struct {
	l      net.Listener
	target string

	mu       sync.Mutex
	cond     *sync.Cond
	dropping bool
	conns    []net.Conn
	accepted int
	closed   bool
}

func NewBlackhole(target string) (*Blackhole, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &Blackhole{l: l, target: target}
	b.cond = sync.NewCond(&b.mu)
	go b.serve()
	return b, nil
}

func (b *Blackhole) Addr() string { return b.l.Addr().String() }

func (b *Blackhole) serve() {
	for {
		c, err := b.l.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		b.conns = append(b.conns, c)
		b.accepted++
		dropping := b.dropping
		b.mu.Unlock()
		if dropping {
			continue // held open, never answered
		}
		go b.relay(c)
	}
}

func (b *Blackhole) relay(c net.Conn) {
	up, err := net.Dial("tcp", b.target)
	if err != nil {
		_ = c.Close()
		return
	}
	b.mu.Lock()
	b.conns = append(b.conns, up)
	b.mu.Unlock()
	go b.pipe(up, c)
	b.pipe(c, up)
}

// pipe copies src to dst, holding every chunk while dropping.
func (b *Blackhole) pipe(dst, src net.Conn) {
	defer func() { _ = dst.Close(); _ = src.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			b.mu.Lock()
			for b.dropping && !b.closed {
				b.cond.Wait()
			}
			closed := b.closed
			b.mu.Unlock()
			if closed {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Drop starts or ends the partition.
func (b *Blackhole) Drop(on bool) {
	b.mu.Lock()
	b.dropping = on
	b.mu.Unlock()
	b.cond.Broadcast()
}

// Connections counts the connections the relay has accepted.
func (b *Blackhole) Connections() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.accepted
}

// Close stops the relay and closes every connection through it.
func (b *Blackhole) Close() {
	_ = b.l.Close()
	b.mu.Lock()
	b.closed = true
	for _, c := range b.conns {
		_ = c.Close()
	}
	b.mu.Unlock()
	b.cond.Broadcast()
}

// KubeconfigVia returns the kubeconfig with its server's host and port replaced by the relay's.
func KubeconfigVia(kubeconfig []byte, relay string) ([]byte, error) {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, err
	}
	for _, c := range cfg.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil {
			return nil, err
		}
		u.Host = relay
		c.Server = u.String()
	}
	return clientcmd.Write(*cfg)
}
