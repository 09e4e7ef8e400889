package controller

import "sync"

// broadcaster wakes every waiting claim at once: waiters take the current
// channel, signal closes it and installs a fresh one. Closing a channel is
// the cheapest one-to-many wake-up Go has, and a waiter that took the
// channel just before a signal can never miss it.
type broadcaster struct {
	mu     sync.Mutex
	ch     chan struct{}
	closed bool
}

func newBroadcaster() *broadcaster { return &broadcaster{ch: make(chan struct{})} }

// wait returns a channel closed at the next signal.
func (b *broadcaster) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ch
}

func (b *broadcaster) signal() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	close(b.ch)
	b.ch = make(chan struct{})
}

// close wakes everyone for good (shutdown).
func (b *broadcaster) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.closed = true
		close(b.ch)
	}
}

func (b *broadcaster) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}
