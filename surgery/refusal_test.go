package surgery

import (
	"errors"
	"strings"
	"testing"
)

func TestChangedErrorRefusal(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       *ChangedError
		msg, hint string
	}{
		{"changed", &ChangedError{Key: "/registry/pods/demo/a", Revision: 42},
			"restore /registry/pods/demo/a: the object changed after etcdpvc's write (it is now at revision 42); nothing written",
			"the diff above goes from the current object to the backup; re-run with --force to restore anyway"},
		{"undecodable", &ChangedError{Key: "/registry/pods/demo/a", Revision: 7, Undecodable: errors.New("bad bytes")},
			"restore /registry/pods/demo/a: the key's current value (revision 7) cannot be decoded: bad bytes; nothing written",
			"the raw diff above goes from the current bytes to the backup's; re-run with --force to replace them"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, hint := tc.err.Refusal()
			if msg != tc.msg || hint != tc.hint {
				t.Errorf("Refusal() = %q, %q; want %q, %q", msg, hint, tc.msg, tc.hint)
			}
		})
	}
}

func TestRebindVolumeWritten(t *testing.T) {
	vol, claim := &Plan{Key: "/registry/persistentvolumes/pv-a", Expect: 5}, &Plan{Key: "/registry/persistentvolumeclaims/demo/c"}
	rb := &Rebind{Volume: vol, Claim: claim}
	for _, tc := range []struct {
		name   string
		steps  []Step
		ok     bool
		backup string
	}{
		{"none", nil, false, ""},
		{"volume not written", []Step{{Plan: vol, Err: errors.New("conflict")}}, false, ""},
		{"claim only", []Step{{Plan: vol}, {Plan: claim, Result: &Result{BackupPath: "/b/claim.json", Revision: 9}}}, false, ""},
		{"volume written", []Step{{Plan: vol, Result: &Result{BackupPath: "/b/pv.json", Revision: 8}}, {Plan: claim, Err: ErrUncertain}}, true, "/b/pv.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, ok := rb.VolumeWritten(tc.steps)
			if ok != tc.ok || o.Backup != tc.backup {
				t.Fatalf("VolumeWritten = %+v, %v; want backup %q, %v", o, ok, tc.backup, tc.ok)
			}
			if ok && (o.Key != vol.Key || !strings.HasSuffix(o.Undo, " "+tc.backup)) {
				t.Errorf("VolumeWritten = %+v: want the volume's key and undo", o)
			}
		})
	}
}
