// Package inspect holds the read side's logic for listings and reports,
// so that the CLI only prints: listing keys down to their metadata (and
// saying which values could not be read, and why), the claim <-> volume
// <-> pod join behind kubectl's columns, and the stats report.
package inspect
