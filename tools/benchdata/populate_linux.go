//go:build linux

package main

import "syscall"

// populateFlag pre-faults a whole mapping, as store.OpenBolt does.
const populateFlag = syscall.MAP_POPULATE
