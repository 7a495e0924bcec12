package main

import (
	"context"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// interrupts cancels the command's context on SIGINT or SIGTERM, as
// signal.NotifyContext does, except that SIGINT is dropped while an editor
// runs (holdInterrupts): Ctrl-C in the editor belongs to the editor, as with
// kubectl edit, and must neither stop the edit nor lose it.
type interrupts struct {
	held atomic.Int32
	// dropped counts the SIGINTs dropped while held.
	dropped atomic.Int32
}

type interruptsKey struct{}

// interruptContext returns a context canceled by SIGINT or SIGTERM (SIGINT
// not while holdInterrupts holds it) and the function that stops the
// signal handling and cancels the context. The signals stay caught, not
// ignored, so that a child process starts with their default handling.
func interruptContext(parent context.Context) (context.Context, context.CancelFunc) {
	in := &interrupts{}
	ctx, cancel := context.WithCancel(context.WithValue(parent, interruptsKey{}, in))
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		for {
			select {
			case s := <-ch:
				if s == os.Interrupt && in.held.Load() > 0 {
					in.dropped.Add(1)
					continue
				}
				cancel()
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		cancel()
	}
}

// holdInterrupts makes SIGINT leave ctx alone until the returned function
// is called. With a context not made by interruptContext it does nothing.
func holdInterrupts(ctx context.Context) (release func()) {
	in, _ := ctx.Value(interruptsKey{}).(*interrupts)
	if in == nil {
		return func() {}
	}
	in.held.Add(1)
	return func() { in.held.Add(-1) }
}
