//go:build !linux

package main

const populateFlag = 0
