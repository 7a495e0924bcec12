package flows

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/etcdpvc/etcdpvc/inspect"
	"github.com/etcdpvc/etcdpvc/session"
	"github.com/etcdpvc/etcdpvc/store"
)

// SpaceRequest is what `etcdpvc space` asks.
type SpaceRequest struct {
	JSON bool
	// Quota is etcd's --quota-backend-bytes, QuotaSource where it was read
	// (inspect.QuotaFlag, QuotaManifest, QuotaDefault).
	Quota       int64
	QuotaSource string
	// QuotaNote, when set, says why the quota was not read.
	QuotaNote string
	// Margin is the part of the quota, in percent, to stay under.
	Margin   int
	Top      int
	PageSize int64
	// Since is the first revision the hottest keys count (live: etcd's
	// watch replays them; 0: none live, every one held in a db file).
	Since int64
}

// errSpaceSource refuses a source space cannot size.
var errSpaceSource = errors.New("space sizes live etcd or a db file: a write-ahead log holds no db")

// Space diagnoses what fills the store and writes the report and its plan
// to w (inspect.Space). A member that does not answer makes it incomplete
// (ErrIncomplete), after the report.
func (s *Session) Space(ctx context.Context, w io.Writer, r SpaceRequest, progress Progress, warn func(string)) error {
	rep, err := s.spaceReport(ctx, r, progress)
	if rep == nil {
		return err
	}
	if werr := rep.Write(w, r.JSON); werr != nil {
		return werr
	}
	if err != nil {
		return err
	}
	if rep.Verdict == inspect.SpaceUnknown {
		return &hintedError{&incompleteError{msg: "space: a member did not answer: its size is unknown"}, "check the member (etcdpvc doctor), then run space again"}
	}
	return s.statsOutcome(rep.Stats, nil, "space", warn)
}

// spaceReport reads every member's status and every key, and diagnoses
// them.
func (s *Session) spaceReport(ctx context.Context, r SpaceRequest, progress Progress) (*inspect.SpaceReport, error) {
	if s.WAL != nil {
		return nil, &session.OptionError{Err: errSpaceSource}
	}
	if _, kine := s.Reader.(*store.KineDB); kine {
		return nil, &session.OptionError{Err: fmt.Errorf("space: %w: it sizes an etcd's db and quota; kine's database has neither", store.ErrKineDB)}
	}
	in := inspect.SpaceInput{Source: s.Description, Quota: r.Quota, QuotaSource: r.QuotaSource, Margin: r.Margin, Top: r.Top}
	var err error
	switch b, isFile := s.Reader.(*store.Bolt); {
	case isFile:
		m := b.Meta()
		in.Members = []*inspect.SpaceMember{{Name: s.Options.DB, Endpoint: "-", Role: inspect.RoleFile, DBSize: b.Snapshot().Size, DBSizeInUse: m.DataSize, Alarms: []string{}, Revision: m.Revision}}
		in.Revision, in.CompactRevision = m.Revision, m.CompactRevision
	default:
		e, ok := etcdOf(s.Reader)
		if !ok {
			return nil, &session.OptionError{Err: errSpaceSource}
		}
		in.Members, err = spaceMembers(ctx, e)
		if err != nil {
			return nil, err
		}
		for _, m := range in.Members {
			in.Revision = max(in.Revision, m.Revision)
		}
	}
	st, err := s.statsReport(ctx, StatsRequest{Top: r.Top, PageSize: r.PageSize, By: inspect.GroupBy{Resource: true, Namespace: true}, Since: r.Since}, 0, progress)
	if st == nil {
		return nil, err
	}
	if _, isFile := s.Reader.(*store.Bolt); !isFile {
		in.CompactRevision = st.CompactRevision
		in.Revision = max(in.Revision, st.Revision)
	}
	in.Stats = st
	rep := inspect.Space(in)
	if r.QuotaNote != "" {
		rep.Notes = append(rep.Notes, r.QuotaNote)
	}
	if _, isFile := s.Reader.(*store.Bolt); isFile {
		rep.Notes = append(rep.Notes, "a db file: its alarms are not read (a live member reports them)")
	}
	if _, routed := s.Reader.(*store.Routed); routed {
		rep.Notes = append(rep.Notes, "several etcds (--etcd-servers-overrides): the members are the main etcd's, the live data every etcd's keys; run space with --endpoints of each etcd alone for its plan")
	}
	if st.HotKeys == nil {
		rep.Notes = append(rep.Notes, "the hottest keys: live etcd keeps no count; --since REV counts the changes from REV, a snapshot read with --db every revision held")
	}
	return rep, err
}

// etcdOf returns the live etcd r reads (the main one of a routed store).
func etcdOf(r store.Reader) (*store.Etcd, bool) {
	c, ok := store.AsCluster(r)
	if !ok {
		return nil, false
	}
	e, ok := c.(*store.Etcd)
	return e, ok
}

// spaceMembers asks every member of the cluster, at its first client URL,
// for its status, and the cluster for its alarms.
func spaceMembers(ctx context.Context, e *store.Etcd) ([]*inspect.SpaceMember, error) {
	members, err := e.MemberList(ctx)
	if err != nil {
		return nil, err
	}
	alarms, err := e.Alarms(ctx)
	if err != nil {
		return nil, err
	}
	var out []*inspect.SpaceMember
	for _, m := range members {
		sm := &inspect.SpaceMember{Name: m.Name, ID: fmt.Sprintf("%x", m.ID), Role: inspect.RoleUnknown, Alarms: []string{}}
		for _, a := range alarms {
			if a.MemberID == m.ID {
				sm.Alarms = append(sm.Alarms, a.Type)
			}
		}
		out = append(out, sm)
		if sm.Name == "" {
			sm.Name = sm.ID
		}
		if len(m.ClientURLs) == 0 {
			sm.Endpoint, sm.Error = "-", "no client URL (a member not started yet)"
			continue
		}
		sm.Endpoint = m.ClientURLs[0]
		memberStatus(ctx, e, sm)
	}
	return out, nil
}

// memberStatus reads m's status from its endpoint into m.
func memberStatus(ctx context.Context, e *store.Etcd, m *inspect.SpaceMember) {
	st := e.EndpointStatus(ctx, m.Endpoint)
	if st.Err != nil {
		m.Error, m.Role = st.Err.Error(), inspect.RoleUnknown
		return
	}
	m.Error = ""
	m.DBSize, m.DBSizeInUse, m.Revision = st.DBSize, st.DBSizeInUse, st.Revision
	m.RaftIndex, m.RaftAppliedIndex = st.RaftIndex, st.RaftAppliedIndex
	switch {
	case st.IsLearner:
		m.Role = inspect.RoleLearner
	case st.IsLeader():
		m.Role = inspect.RoleLeader
	default:
		m.Role = inspect.RoleFollower
	}
}
