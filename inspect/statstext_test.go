package inspect

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStatsText(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	live := &StatsReport{Source: "etcd https://10.0.0.1:2379", Snapshot: "live", Revision: 120, CompactRevision: 100,
		Objects: 3, Bytes: 2048, Leased: 1,
		Resources: []*ResourceStats{
			{Resource: "secrets", Counts: Counts{Objects: 2, Bytes: 1500, Leased: 0}, Storage: []*StorageCount{{Provider: "aescbc/key1", Objects: 1}, {Provider: "identity", Objects: 1}}},
			{Resource: "pods", Counts: Counts{Objects: 1, Bytes: 548, Leased: 1}, Storage: []*StorageCount{{Provider: "identity", Objects: 1}}},
		},
		Largest: []LargeObject{{Key: "/registry/secrets/demo/s", Bytes: 1000, ModRevision: 7}}}
	file := &StatsReport{Source: "db snapshot.db", Snapshot: "sha256 ok", Revision: 120, OldestRevision: 90, Revisions: n(40),
		CompactRevision: 80, ScheduledCompactRevision: n(90), Deleted: n(2), Tombstones: n(5),
		DB:         &DBStats{FileSize: 1 << 20, DataSize: 1 << 19, PageSize: 4096, ConsistentIndex: 33, Term: 2, StorageVersion: "3.6.0"},
		Notes:      []string{"a note"},
		Incomplete: "page 12 is damaged",
		Resources: []*ResourceStats{
			{Resource: "secrets", Counts: Counts{Objects: 2, Bytes: 10, Revisions: n(9), Tombstones: n(1), Deleted: n(0), HistoryBytes: n(90)},
				WriteProvider: "aescbc/key2", Stale: n(1),
				Storage: []*StorageCount{{Provider: "aescbc/key1", Objects: 1, Stale: true}, {Provider: "aescbc/key2", Objects: 1}}},
		}}
	current := &StatsReport{Resources: []*ResourceStats{{Resource: "secrets", WriteProvider: "identity", Stale: n(0)}}}

	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"live summary", live.Summary(), []string{
			"source:       etcd https://10.0.0.1:2379",
			"snapshot:     live",
			"revision:     120",
			"compaction:   100",
			"objects:      3 (" + HumanBytes(2048) + " bytes), 1 with a lease",
			"deleted:      unknown keys whose newest revision is a deletion, unknown tombstones held",
		}},
		{"file summary", file.Summary(), []string{
			"source:       db snapshot.db",
			"snapshot:     sha256 ok",
			"revisions:    90 to 120 (40 held)",
			"compaction:   finished 80, scheduled 90",
			"objects:      0 (" + HumanBytes(0) + " bytes), 0 with a lease",
			"deleted:      2 keys whose newest revision is a deletion, 5 tombstones held",
			"db:           " + HumanBytes(1<<20) + " bytes in file, " + HumanBytes(1<<19) + " in use, page size 4096, consistent index 33, term 2, storage version 3.6.0",
			"note:         a note",
			"INCOMPLETE:   page 12 is damaged; the counts below cover only what was read",
		}},
		{"live resources", live.ResourceRows(), [][]string{
			{"secrets", "2", HumanBytes(1500), "0", "unknown", "unknown", "unknown", "unknown"},
			{"pods", "1", HumanBytes(548), "1", "unknown", "unknown", "unknown", "unknown"},
		}},
		{"file resources", file.ResourceRows(), [][]string{{"secrets", "2", HumanBytes(10), "0", "9", "1", "0", HumanBytes(90)}}},
		{"no config", live.EncryptionVerdict(), "no --encryption-config: providers are read from each value's k8s:enc: header; which are stale (not under a resource's write provider) is unknown"},
		{"stale", file.EncryptionVerdict(), "1 object is not under the resource's write provider (STALE): rewrite them through the API (see docs/runbooks/encryption-rotation.md)"},
		{"current", current.EncryptionVerdict(), "every object is stored under its resource's write provider (the config's first)"},
		{"storage unknown", live.StorageRows(), [][]string{{"secrets", "aescbc/key1", "1", "-"}, {"secrets", "identity", "1", "-"}, {"pods", "identity", "1", "-"}}},
		{"storage stale", file.StorageRows(), [][]string{{"secrets", "aescbc/key1", "1", "STALE: writes use aescbc/key2"}, {"secrets", "aescbc/key2", "1", "current"}}},
		{"largest", live.LargestRows(), [][]string{{HumanBytes(1000), "7", "/registry/secrets/demo/s"}}},
	} {
		if diff := cmp.Diff(tc.want, tc.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestStatsWrite(t *testing.T) {
	rep := &StatsReport{Source: "db snapshot.db", Snapshot: "sha256 ok", Revision: 12, Objects: 1, Bytes: 10,
		Resources: []*ResourceStats{{Resource: "pods", Counts: Counts{Objects: 1, Bytes: 10}, Storage: []*StorageCount{{Provider: "identity", Objects: 1}}}},
		Largest:   []LargeObject{{Key: "/registry/pods/demo/web-0", Bytes: 10, ModRevision: 12}}}
	var text, js strings.Builder
	if err := rep.Write(&text, false); err != nil {
		t.Fatal(err)
	}
	want := strings.Join(rep.Summary(), "\n") + "\n\n"
	for _, part := range []string{want, "\nENCRYPTION AT REST\n" + rep.EncryptionVerdict() + "\n", "\nLARGEST OBJECTS\nBYTES", "/registry/pods/demo/web-0\n"} {
		if !strings.Contains(text.String(), part) {
			t.Errorf("the text lacks %q:\n%s", part, text.String())
		}
	}
	if !strings.HasPrefix(text.String(), want+"RESOURCE ") {
		t.Errorf("the tables do not follow the summary:\n%s", text.String())
	}
	if err := rep.Write(&js, true); err != nil {
		t.Fatal(err)
	}
	var back StatsReport
	if err := json.Unmarshal([]byte(js.String()), &back); err != nil || back.Source != rep.Source || len(back.Largest) != 1 || !strings.HasSuffix(js.String(), "}\n") {
		t.Errorf("the JSON does not read back (%v):\n%s", err, js.String())
	}
}
