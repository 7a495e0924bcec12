package inspect

import (
	"sort"
	"strconv"
	"strings"
)

// HelmHistoryMax is Helm's default --history-max: the revisions of a
// release it keeps when it upgrades.
const HelmHistoryMax = 10

// helmSecretPrefix starts the name of the Secret Helm stores each revision
// of a release in: sh.helm.release.v1.NAME.vN.
const helmSecretPrefix = "sh.helm.release.v1."

// HelmRelease counts the revisions of one Helm release stored as Secrets.
type HelmRelease struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Revisions int64  `json:"revisions"`
	Bytes     int64  `json:"bytes"`
	// Newest is the newest revision's number.
	Newest int64 `json:"newest"`
}

// Beyond is about the bytes of the revisions beyond Helm's default
// history (HelmHistoryMax), at the release's average revision size.
func (h *HelmRelease) Beyond() int64 {
	if h.Revisions <= HelmHistoryMax {
		return 0
	}
	return h.Bytes / h.Revisions * (h.Revisions - HelmHistoryMax)
}

// helmRevision parses the key of a Secret Helm stores a release revision
// in (prefix ends in "/").
func helmRevision(prefix, key string) (ns, name string, version int64, ok bool) {
	rest, ok := strings.CutPrefix(key, prefix)
	if ok {
		rest, ok = strings.CutPrefix(rest, "secrets/")
	}
	if !ok {
		return "", "", 0, false
	}
	ns, secret, ok := strings.Cut(rest, "/")
	if !ok {
		return "", "", 0, false
	}
	release, ok := strings.CutPrefix(secret, helmSecretPrefix)
	if !ok {
		return "", "", 0, false
	}
	i := strings.LastIndex(release, ".v")
	if i <= 0 {
		return "", "", 0, false
	}
	v, err := strconv.ParseInt(release[i+2:], 10, 64)
	if err != nil || v <= 0 {
		return "", "", 0, false
	}
	return ns, release[:i], v, true
}

// helm counts key, of size bytes, when it is a Helm release revision.
func (s *stats) helm(key string, size int64) {
	ns, name, v, ok := helmRevision(s.Prefix, key)
	if !ok {
		return
	}
	if s.releases == nil {
		s.releases = map[[2]string]*HelmRelease{}
	}
	h := s.releases[[2]string{ns, name}]
	if h == nil {
		h = &HelmRelease{Namespace: ns, Name: name}
		s.releases[[2]string{ns, name}] = h
	}
	h.Revisions++
	h.Bytes += size
	h.Newest = max(h.Newest, v)
}

// finishHelm lists the releases, the most bytes first.
func (s *stats) finishHelm() []*HelmRelease {
	out := []*HelmRelease{}
	for _, h := range s.releases {
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Bytes != b.Bytes {
			return a.Bytes > b.Bytes
		}
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	return out
}
