// Package inspect answers the read-only questions etcdpvc asks of stored
// objects, and decides what is said about them; the CLI only prints. It
// reads through store's readers and opens values with a kubevalue.Codec; it
// writes nothing.
//
//   - Listings (List, ListWriter): keys down to their metadata, which
//     values could not be read and why, the claim <-> volume <-> pod join
//     behind kubectl's columns, deleted and Terminating objects.
//   - Reports: BoltStats and LiveStats (objects, bytes and revisions per
//     resource, the largest keys), History
//     and WALHistory (what a key's revisions hold and what changed at
//     each), SecretsInClear (the encryption audit).
//   - Dump: one record per object or revision, streamed, decoded on every
//     core, Secret values redacted (sorted JSON from codec).
//   - Diff: two sources (live, a db file, a revision) compared key by key,
//     with a verdict only when something was compared (ErrDiffer,
//     ErrNothingCompared).
//   - Doctor: the checks of a control-plane node (certificates, the
//     apiserver manifest, the prefix, the encryption config).
package inspect
