// Package surgery edits Kubernetes objects stored in etcd, and is the one
// write path every etcdpvc command that writes goes through.
//
// # Edits
//
// An Edit is a pure function from the current object (a *kubevalue.Current:
// the key's revision, its plaintext and its decoded form) to the new
// plaintext value:
//
//   - Undelete clears deletionTimestamp and deletionGracePeriodSeconds and
//     drops the garbage collector's foregroundDeletion and orphan
//     finalizers; Meta removes or adds finalizers and sets or removes labels
//     and annotations. Both edit the metadata submessage at the wire level
//     (codec.EditMeta), so they work on every kind, including kinds this
//     build does not know, and keep every byte outside metadata as stored.
//   - Patch (JSON merge patch or JSON patch) and Replace (the content of an
//     edited YAML document) work on the object's JSON view. A change that
//     only touches labels, annotations, finalizers, ownerReferences or the
//     deletion fields is routed to the wire-level editor. Any other change
//     to a JSON-stored object is merged into the stored text with the
//     smallest rewrite (codec.MergeJSONText); to a protobuf-stored object it is
//     made by a typed re-encode, which is allowed only when re-encoding the
//     unchanged object reproduces its stored bytes exactly (so that no field
//     unknown to this build can be dropped), and refused otherwise with an
//     error wrapping codec.ErrLossy. apiVersion, kind, metadata.name,
//     metadata.namespace and metadata.uid never change; metadata.
//     resourceVersion, which is the key's mod revision and never stored, is
//     ignored.
//
// # The write path
//
// Every write goes plan → diff → backup → compare-and-swap → report, one
// write or many, through the same step:
//
//  1. Planner.MakePlan reads the key with a linearizable read, keeping its mod
//     revision R and lease; decrypts it when it is encrypted at rest; applies
//     the edit; decodes the result again to prove it is a valid object with
//     the same identity; encrypts it with the resource's first provider, as
//     the apiserver would; renders a unified diff of the YAML views (Secret
//     values redacted unless Planner.ShowSecrets); and collects warnings about
//     what could undo the edit (an owner that is gone, a terminating
//     namespace, a StatefulSet or PersistentVolume whose policy deletes the
//     claim). An edit that changes nothing yields a NoOp plan.
//  2. Execute checks every plan (checkPlan, the Verifier's Before) and
//     groups them into transactions: Apply is a transaction of one plan
//     (singleTxn: store.Writer.CompareAndSwap on R with the key's lease, or
//     store.Deleter.CompareAndDelete); with MaxTxnOps, batchEnd makes runs
//     of creates or of deletes one transaction of several keys, all or
//     nothing (batchTxn: store.BatchCreator.CreateBatch,
//     store.BatchDeleter.DeleteBatch).
//  3. writeTxn, the write step, makes each transaction: checkMembers
//     compares each key on every member and refuses a write where they
//     differ; writeBackups writes each plan's backup (writeBackupFile: the
//     original stored bytes, ciphertext when encrypted, their sha256 and
//     the sha256 of the new bytes, fsynced, linked into place, mode 0600)
//     and fsyncs the directory; appendAudits writes the intent lines to
//     audit.log. If any cannot be written, nothing is sent.
//  4. writeTxn then sends the transaction (txn.send). An answer that
//     refuses it (txn.refused: a key moved, a *ConflictError) settles it
//     not written; a lost answer goes to resolve, the one resolver of a
//     lost answer, which reads the keys through any member that answers,
//     fences the transaction off and says applied, not applied or
//     unknown (an *UncertainError, ErrUncertain).
//  5. majorityHolds checks that a majority of the members hold what was
//     written at its revision, else the outcome is unknown; then the
//     outcome lines go to audit.log (txn.settle for a write not made or
//     of unknown outcome). A write made whose outcome line audit.log does
//     not take is reported (Result.AuditErr; Execute's *NotRecordedError):
//     the intent line and the backup, which carries the operation id,
//     still undo it, since OperationBackups reads the backups themselves.
//
// A backup left behind by a write that did not happen is harmless: it
// holds the value the key still has.
//
// # Restore and recover
//
// Planner.PlanRestore puts a backup's original bytes back, byte for byte,
// only while the key still holds the bytes etcdpvc's write produced (or the
// key was deleted since); otherwise it refuses with ErrChangedSinceBackup,
// unless forced. Planner.PlanRecover recreates a deleted object from a past
// revision found in etcd's history, with its deletion cleared and its uid
// kept, as a create that fails if the key exists. Both plans are written by
// Apply, so they are backed up and compare-and-swapped like any edit.
package surgery
