package ha

import (
	"net"
	"sync"
	"testing"
)

// proxy forwards TCP connections from a loopback port to a target, and can
// stall them (bytes stop flowing both ways, connections stay open: what a
// hung network looks like) or cut them (every connection closed, new ones
// refused), then go back to forwarding.
type proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	stalled bool
	cut     bool
	resumed *sync.Cond // broadcast when stalled turns false
	conns   map[net.Conn]struct{}
}

// startProxy listens on a free loopback port and forwards to target until
// the test ends.
func startProxy(t testing.TB, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.resumed = sync.NewCond(&p.mu)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.setCut(true)
	})
	return p
}

// addr is the proxy's host:port.
func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refused := p.cut
		p.mu.Unlock()
		if refused {
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.track(c, up)
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

func (p *proxy) track(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
}

// forget closes conns and stops tracking them.
func (p *proxy) forget(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		c.Close()
		delete(p.conns, c)
	}
}

// pipe copies from src to dst, waiting while the proxy is stalled; when
// either side ends, both do.
func (p *proxy) pipe(dst, src net.Conn) {
	defer p.forget(dst, src)
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.stalled && !p.cut {
				p.resumed.Wait()
			}
			dead := p.cut
			p.mu.Unlock()
			if dead {
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

// setStalled stops (true) or resumes (false) the flow of bytes.
func (p *proxy) setStalled(stalled bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled = stalled
	p.resumed.Broadcast()
}

// setCut closes every connection and refuses new ones (true), or accepts
// them again (false).
func (p *proxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	p.stalled = false
	p.resumed.Broadcast()
	if cut {
		for c := range p.conns {
			c.Close()
		}
		clear(p.conns)
	}
}
