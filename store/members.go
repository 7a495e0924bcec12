package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// memberTimeout bounds one request to one member: a member that does not
// answer (stopped, frozen, cut off) costs no more than this.
const memberTimeout = 2 * time.Second

// MemberKey is what one member of the cluster holds at a key, read on that
// member alone.
type MemberKey struct {
	Member Member
	// KV is the key on the member; nil when it is absent there.
	KV *KeyValue
	// Err is why the member did not answer.
	Err error
}

// MemberHash is one member's hash of its keyspace (etcd's HashKV).
type MemberHash struct {
	Member Member
	// Revision is the member's current revision.
	Revision int64
	// Hash is its HashKV at the revision compared.
	Hash HashKV
	Err  error
}

// memberConn is a client of one member alone.
type memberConn struct {
	m Member
	// urls are where it is reached: an endpoint given that answers as
	// it, else the client URLs it advertises.
	urls []string
	cli  *clientv3.Client
	// dead is why the member did not answer once: it is not asked again
	// during this run.
	dead error
}

// memberConns returns a client of each voting member the cluster lists
// (MemberList), opened on first use and kept until Close; none for a
// cluster of one. A member without a client URL (added, not started) has
// its dead error set.
func (e *Etcd) memberConns(ctx context.Context) ([]*memberConn, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.members != nil {
		return e.members, nil
	}
	ms, err := e.MemberList(ctx)
	if err != nil {
		return nil, err
	}
	tlsConfig, err := e.cfg.tlsConfig()
	if err != nil {
		return nil, err
	}
	voting := 0
	for _, m := range ms {
		if !m.IsLearner {
			voting++
		}
	}
	// A member reached through an endpoint given is reached there (a
	// tunnel, an address its certificate names), not at the URLs it
	// advertises.
	given := map[uint64]string{}
	if voting >= 2 {
		for _, ep := range e.cfg.Endpoints {
			sctx, cancel := context.WithTimeout(ctx, min(memberTimeout, e.cfg.CommandTimeout))
			st, err := e.cli.Status(sctx, ep)
			cancel()
			if err == nil && st.Header != nil {
				given[st.Header.MemberId] = ep
			}
		}
	}
	conns := []*memberConn{}
	for _, m := range ms {
		if m.IsLearner || voting < 2 {
			// One member: nothing to compare it with.
			continue
		}
		c := &memberConn{m: m, urls: m.ClientURLs}
		if ep, ok := given[m.ID]; ok {
			c.urls = []string{ep}
		}
		if len(c.urls) == 0 {
			c.dead = fmt.Errorf("member %s has no client URL (not started)", m.Name)
		} else if c.cli, err = clientv3.New(clientv3.Config{
			Endpoints: c.urls,
			TLS:       tlsConfig,
			Username:  e.cfg.User,
			Password:  e.cfg.Password,
			Logger:    zap.NewNop(),
		}); err != nil {
			c.dead = fmt.Errorf("member %s at %s: %w", m.Name, strings.Join(c.urls, ","), err)
		}
		conns = append(conns, c)
	}
	e.members = conns
	return conns, nil
}

// closeMembers closes the members' clients.
func (e *Etcd) closeMembers() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range e.members {
		if c.cli != nil {
			c.cli.Close()
		}
	}
	e.members = nil
}

// eachMember calls fn for every member that has answered so far, all at
// once, each under memberTimeout, and returns their errors; a member that
// fails with a timeout is not asked again during this run.
func (e *Etcd) eachMember(ctx context.Context, conns []*memberConn, fn func(ctx context.Context, c *memberConn) error) []error {
	errs := make([]error, len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		e.mu.Lock()
		dead := c.dead
		e.mu.Unlock()
		if dead != nil {
			errs[i] = dead
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			mctx, cancel := context.WithTimeout(ctx, min(memberTimeout, e.cfg.CommandTimeout))
			defer cancel()
			err := fn(mctx, c)
			if err != nil && ctx.Err() == nil && errors.Is(mctx.Err(), context.DeadlineExceeded) {
				err = fmt.Errorf("member %s at %s did not answer within %s: %w", c.m.Name, strings.Join(c.urls, ","), min(memberTimeout, e.cfg.CommandTimeout), ErrUnavailable)
				e.mu.Lock()
				c.dead = err
				e.mu.Unlock()
			} else if err != nil {
				err = rpcError("member "+c.m.Name, err)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	return errs
}

// MemberKeys reads key at revision rev (0: the latest) on every voting
// member the cluster lists, each alone and serializably (what that member
// holds, not what the leader says), all at once. A member that has not
// reached rev answers with an error.
func (e *Etcd) MemberKeys(ctx context.Context, key string, rev int64) ([]MemberKey, error) {
	conns, err := e.memberConns(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]MemberKey, len(conns))
	errs := e.eachMember(ctx, conns, func(ctx context.Context, c *memberConn) error {
		i := indexOf(conns, c)
		resp, err := c.cli.Get(ctx, key, clientv3.WithSerializable(), clientv3.WithRev(rev))
		if err == nil && len(resp.Kvs) > 0 {
			out[i].KV = keyValue(resp.Kvs[0], true)
		}
		return err
	})
	for i, c := range conns {
		out[i].Member, out[i].Err = c.m, errs[i]
	}
	return out, nil
}

// GetAny reads key linearizably through every member at once and returns
// the first answer: one member that does not answer (frozen, cut off)
// does not hold the read up while another can answer. Without the member
// list it reads as Get does.
func (e *Etcd) GetAny(ctx context.Context, key string) (*KeyValue, error) {
	conns, err := e.memberConns(ctx)
	if err != nil || len(conns) < 2 {
		return e.Get(ctx, key, 0)
	}
	type answer struct {
		kv  *KeyValue
		err error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	answers := make(chan answer, len(conns))
	go func() {
		e.eachMember(ctx, conns, func(ctx context.Context, c *memberConn) error {
			resp, err := c.cli.Get(ctx, key)
			switch {
			case err != nil:
				answers <- answer{err: rpcError("get "+key+" through member "+c.m.Name, err)}
			case len(resp.Kvs) == 0:
				answers <- answer{err: fmt.Errorf("get %s: %w", key, ErrNotFound)}
			default:
				answers <- answer{kv: keyValue(resp.Kvs[0], true)}
			}
			return err
		})
		close(answers)
	}()
	var last error = fmt.Errorf("get %s: no member answered: %w", key, ErrUnavailable)
	for a := range answers {
		if a.err == nil || errors.Is(a.err, ErrNotFound) {
			return a.kv, a.err
		}
		last = a.err
	}
	return nil, last
}

// MemberHashes hashes every voting member's keyspace (etcd's HashKV) at
// one revision: the lowest current revision among the members that
// answer, which each of them holds. It returns that revision.
func (e *Etcd) MemberHashes(ctx context.Context) ([]MemberHash, int64, error) {
	conns, err := e.memberConns(ctx)
	if err != nil {
		return nil, 0, err
	}
	out := make([]MemberHash, len(conns))
	errs := e.eachMember(ctx, conns, func(ctx context.Context, c *memberConn) error {
		resp, err := c.cli.Get(ctx, "/", clientv3.WithSerializable(), clientv3.WithCountOnly())
		if err == nil {
			out[indexOf(conns, c)].Revision = resp.Header.Revision
		}
		return err
	})
	var rev int64
	for i, c := range conns {
		out[i].Member, out[i].Err = c.m, errs[i]
		if errs[i] == nil && (rev == 0 || out[i].Revision < rev) {
			rev = out[i].Revision
		}
	}
	if rev == 0 {
		return out, 0, nil
	}
	var wg sync.WaitGroup
	for i, c := range conns {
		if out[i].Err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			hctx, cancel := context.WithTimeout(ctx, max(e.cfg.CommandTimeout, hashKVTimeout))
			defer cancel()
			resp, err := c.cli.HashKV(hctx, c.urls[0], rev)
			if err != nil {
				out[i].Err = rpcError(fmt.Sprintf("hashkv of member %s at revision %d", c.m.Name, rev), err)
				return
			}
			out[i].Hash = HashKV{Hash: resp.Hash, CompactRevision: resp.CompactRevision, Revision: rev}
		}()
	}
	wg.Wait()
	return out, rev, nil
}

func indexOf(conns []*memberConn, c *memberConn) int {
	for i, x := range conns {
		if x == c {
			return i
		}
	}
	return -1
}

// MemberReader is a store that can read a key on each member of its
// cluster: a live etcd, or a Routed store for the key's etcd.
type MemberReader interface {
	MemberKeys(ctx context.Context, key string, rev int64) ([]MemberKey, error)
	GetAny(ctx context.Context, key string) (*KeyValue, error)
}

var (
	_ MemberReader = (*Etcd)(nil)
	_ MemberReader = (*Routed)(nil)
)

// MemberKeys reads key on each member of its store's cluster; a store
// that is not a live etcd answers nil.
func (r *Routed) MemberKeys(ctx context.Context, key string, rev int64) ([]MemberKey, error) {
	if m, ok := r.storeFor(key).(MemberReader); ok {
		return m.MemberKeys(ctx, key, rev)
	}
	return nil, nil
}

// GetAny reads key through any member of its store's cluster.
func (r *Routed) GetAny(ctx context.Context, key string) (*KeyValue, error) {
	if m, ok := r.storeFor(key).(MemberReader); ok {
		return m.GetAny(ctx, key)
	}
	return r.Get(ctx, key, 0)
}

// ListMembers lists the cluster's members and opens a client of each, as
// the first read of a member does; a write session calls it when it
// opens, so that a member that stops answering later (the one the
// endpoints name, say) does not keep the others from being compared.
func (e *Etcd) ListMembers(ctx context.Context) error {
	_, err := e.memberConns(ctx)
	return err
}
