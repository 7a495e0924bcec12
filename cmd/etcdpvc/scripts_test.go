package main

import (
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// scriptState keeps, per running script (by its $WORK), the test it runs
// in and the etcd cluster it started.
type scriptState struct {
	mu sync.Mutex
	m  map[string]*scriptCluster
}

var scripts = &scriptState{m: map[string]*scriptCluster{}}

func (s *scriptState) register(work string, t testing.TB) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[work] = &scriptCluster{t: t}
}

func (s *scriptState) get(ts *testscript.TestScript) *scriptCluster {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[ts.Getenv("WORK")]
}
