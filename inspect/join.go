package inspect

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/resource"
	"github.com/etcdpvc/etcdpvc/store"
)

// The claim <-> volume <-> pod join of `ls pvc` and `ls pv`: the columns
// kubectl shows for PersistentVolumeClaims and PersistentVolumes, and the
// pods that mount each claim.

// decodeValue decrypts (with enc, nil: none) and decodes a stored value.
func decodeValue(ctx context.Context, enc Decrypter, prefix string, kv *store.KeyValue) (*codec.Object, error) {
	plain := kv.Value
	if codec.Detect(plain) == codec.FormatEncrypted {
		env, _ := codec.ParseEncryptionHeader(plain)
		if enc == nil {
			return nil, &codec.EncryptedError{Header: env}
		}
		r, _, _, _ := resource.ParseKey(prefix, kv.Key)
		p, err := enc.Decrypt(ctx, r.GroupResource(), kv.Key, plain)
		if err != nil {
			return nil, err
		}
		plain = p
	}
	return codec.Decode(plain)
}

// DecodeClaim decodes a stored PersistentVolumeClaim (plaintext).
func DecodeClaim(plain []byte) (*corev1.PersistentVolumeClaim, error) {
	obj, err := codec.Decode(plain)
	if err != nil {
		return nil, err
	}
	pvc, ok := obj.Typed.(*corev1.PersistentVolumeClaim)
	if !ok {
		return nil, fmt.Errorf("decode: %s is not a PersistentVolumeClaim: %w", obj.GVK.Kind, codec.ErrNotObject)
	}
	return pvc, nil
}

// DecodeVolume decodes a stored PersistentVolume (plaintext).
func DecodeVolume(plain []byte) (*corev1.PersistentVolume, error) {
	obj, err := codec.Decode(plain)
	if err != nil {
		return nil, err
	}
	pv, ok := obj.Typed.(*corev1.PersistentVolume)
	if !ok {
		return nil, fmt.Errorf("decode: %s is not a PersistentVolume: %w", obj.GVK.Kind, codec.ErrNotObject)
	}
	return pv, nil
}

// Volume is what a claim listing needs of one PersistentVolume.
type Volume struct {
	Name          string
	Capacity      string // spec.capacity.storage ("" unset)
	ReclaimPolicy string
	Phase         string
	// ClaimNamespace, ClaimName and ClaimUID are the volume's claimRef.
	ClaimNamespace, ClaimName, ClaimUID string
}

// VolumeOf summarizes pv.
func VolumeOf(pv *corev1.PersistentVolume) Volume {
	v := Volume{Name: pv.Name, ReclaimPolicy: string(pv.Spec.PersistentVolumeReclaimPolicy), Phase: string(pv.Status.Phase)}
	if c, ok := pv.Spec.Capacity[corev1.ResourceStorage]; ok {
		v.Capacity = c.String()
	}
	if ref := pv.Spec.ClaimRef; ref != nil {
		v.ClaimNamespace, v.ClaimName, v.ClaimUID = ref.Namespace, ref.Name, string(ref.UID)
	}
	return v
}

// Volumes indexes PersistentVolumes by name and by the claim their
// claimRef names.
type Volumes struct {
	byName map[string]Volume
	// byClaim maps "namespace/name" to the volumes whose claimRef names it.
	byClaim map[string][]string
	// Unread counts the volumes that could not be read: a claim without
	// a volume may then have one that is not known.
	Unread int
}

// NewVolumes returns an empty index.
func NewVolumes() *Volumes {
	return &Volumes{byName: map[string]Volume{}, byClaim: map[string][]string{}}
}

// Add indexes v.
func (x *Volumes) Add(v Volume) {
	x.byName[v.Name] = v
	if v.ClaimName != "" {
		k := v.ClaimNamespace + "/" + v.ClaimName
		x.byClaim[k] = append(x.byClaim[k], v.Name)
	}
}

// LoadVolumes reads every PersistentVolume under prefix (the etcd prefix,
// e.g. "/registry") at revision rev (0: the latest).
func LoadVolumes(ctx context.Context, r store.Reader, enc Decrypter, prefix string, rev int64) (*Volumes, error) {
	x := NewVolumes()
	_, err := r.List(ctx, prefix+"/persistentvolumes/", store.ListOptions{Revision: rev, OnCompacted: latestAnyRevision(rev)}, func(kv *store.KeyValue) error {
		obj, err := decodeValue(ctx, enc, prefix, kv)
		if err != nil {
			x.Unread++
			return nil
		}
		pv, ok := obj.Typed.(*corev1.PersistentVolume)
		if !ok {
			x.Unread++
			return nil
		}
		x.Add(VolumeOf(pv))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the persistentvolumes: %w", err)
	}
	return x, nil
}

// Claim holds the columns of one claim, as kubectl shows them, and the
// reclaim policy of its volume.
type Claim struct {
	// Phase is status.phase (Bound, Pending, Lost; empty is Pending).
	Phase string
	// Volume is spec.volumeName; for a claim without one, the volume
	// whose claimRef names it (pre-bound); "-" none, "?" unknown (some
	// volumes could not be read). A volume that does not exist is
	// marked "(missing)".
	Volume string
	// Capacity is status.capacity.storage, followed by the volume's
	// when they differ (an expansion under way): "5Gi(pv:10Gi)".
	Capacity      string
	AccessModes   string
	StorageClass  string
	ReclaimPolicy string
	VolumeMode    string
}

// ClaimOf returns pvc's columns, joined with vols.
func ClaimOf(pvc *corev1.PersistentVolumeClaim, vols *Volumes) Claim {
	c := Claim{Phase: phase(string(pvc.Status.Phase)), Volume: "-", Capacity: "-", AccessModes: AccessModes(pvc.Status.AccessModes),
		StorageClass: "-", ReclaimPolicy: "-", VolumeMode: "-"}
	if pvc.Spec.VolumeMode != nil {
		c.VolumeMode = string(*pvc.Spec.VolumeMode)
	}
	if sc, ok := pvc.Annotations[corev1.BetaStorageClassAnnotation]; ok {
		c.StorageClass = dash(sc)
	} else if pvc.Spec.StorageClassName != nil {
		c.StorageClass = dash(*pvc.Spec.StorageClassName)
	}
	claimCap, hasCap := pvc.Status.Capacity[corev1.ResourceStorage]
	if hasCap {
		c.Capacity = claimCap.String()
	}
	name := pvc.Spec.VolumeName
	if name == "" && vols != nil {
		// A volume pre-bound to the claim: its claimRef names the claim
		// (and this incarnation of it, when it names a uid).
		for _, v := range vols.byClaim[pvc.Namespace+"/"+pvc.Name] {
			if pv := vols.byName[v]; pv.ClaimUID == "" || pv.ClaimUID == string(pvc.UID) {
				name = v
				break
			}
		}
		if name == "" && vols.Unread > 0 {
			c.Volume = "?"
		}
	}
	if name == "" {
		return c
	}
	c.Volume = name
	if vols == nil {
		return c
	}
	pv, ok := vols.byName[name]
	if !ok {
		if vols.Unread > 0 {
			c.Volume = name + "(unread)"
		} else {
			c.Volume = name + "(missing)"
		}
		return c
	}
	c.ReclaimPolicy = dash(pv.ReclaimPolicy)
	switch {
	case pv.Capacity == "":
	case !hasCap && pvc.Spec.VolumeName != "":
		c.Capacity = pv.Capacity
	case hasCap && claimCap.String() != pv.Capacity:
		c.Capacity = claimCap.String() + "(pv:" + pv.Capacity + ")"
	}
	return c
}

// VolumeColumns are the columns of one PersistentVolume, as kubectl
// shows them.
type VolumeColumns struct {
	Capacity, AccessModes, ReclaimPolicy, Status, Claim, StorageClass, VolumeMode string
}

// VolumeColumnsOf returns pv's columns. Status is the phase (Available,
// Bound, Released, Failed); the caller shows Terminating.
func VolumeColumnsOf(pv *corev1.PersistentVolume) VolumeColumns {
	v := VolumeOf(pv)
	c := VolumeColumns{Capacity: dash(v.Capacity), AccessModes: AccessModes(pv.Spec.AccessModes), ReclaimPolicy: dash(v.ReclaimPolicy),
		Status: phase(v.Phase), Claim: "-", StorageClass: dash(pv.Spec.StorageClassName), VolumeMode: "-"}
	if pv.Spec.VolumeMode != nil {
		c.VolumeMode = string(*pv.Spec.VolumeMode)
	}
	if v.ClaimName != "" {
		c.Claim = v.ClaimNamespace + "/" + v.ClaimName
	}
	return c
}

// AccessModes abbreviates access modes as kubectl does: RWO, ROX, RWX,
// RWOP; "-" for none.
func AccessModes(modes []corev1.PersistentVolumeAccessMode) string {
	var out []string
	for _, m := range modes {
		switch m {
		case corev1.ReadWriteOnce:
			out = append(out, "RWO")
		case corev1.ReadOnlyMany:
			out = append(out, "ROX")
		case corev1.ReadWriteMany:
			out = append(out, "RWX")
		case corev1.ReadWriteOncePod:
			out = append(out, "RWOP")
		default:
			out = append(out, string(m))
		}
	}
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, ",")
}

// Mounts records, for the claims of one namespace, the pods that use them.
type Mounts struct {
	Namespace string
	byClaim   map[string][]string
	// Unread counts the pods that could not be read.
	Unread int
}

// LoadMounts reads the pods of namespace at revision rev and records, for
// each claim they use, their names. Finished pods (Succeeded, Failed) use
// nothing. A generic ephemeral volume's claim is named <pod>-<volume>.
func LoadMounts(ctx context.Context, r store.Reader, enc Decrypter, prefix, namespace string, rev int64) (*Mounts, error) {
	m := &Mounts{Namespace: namespace, byClaim: map[string][]string{}}
	_, err := r.List(ctx, prefix+"/pods/"+namespace+"/", store.ListOptions{Revision: rev, OnCompacted: latestAnyRevision(rev)}, func(kv *store.KeyValue) error {
		obj, err := decodeValue(ctx, enc, prefix, kv)
		if err != nil {
			m.Unread++
			return nil
		}
		pod, ok := obj.Typed.(*corev1.Pod)
		if !ok {
			m.Unread++
			return nil
		}
		m.AddPod(pod)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the pods of namespace %s: %w", namespace, err)
	}
	return m, nil
}

// AddPod records the claims pod uses.
func (m *Mounts) AddPod(pod *corev1.Pod) {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			m.byClaim[v.PersistentVolumeClaim.ClaimName] = append(m.byClaim[v.PersistentVolumeClaim.ClaimName], pod.Name)
		case v.Ephemeral != nil:
			name := pod.Name + "-" + v.Name
			m.byClaim[name] = append(m.byClaim[name], pod.Name)
		}
	}
}

// By names the pods that use claim: "-" none, "?" unknown (some pods
// could not be read and none of the others uses it), at most three names
// then "+N".
func (m *Mounts) By(claim string) string {
	pods := m.byClaim[claim]
	switch {
	case len(pods) == 0 && m.Unread > 0:
		return "?"
	case len(pods) == 0:
		return "-"
	case len(pods) > 3:
		return fmt.Sprintf("%s,+%d", strings.Join(pods[:3], ","), len(pods)-3)
	default:
		return strings.Join(pods, ",")
	}
}

// phase is a claim's or a volume's phase; the apiserver defaults an
// empty one to Pending when it reads the object.
func phase(p string) string {
	if p == "" {
		return string(corev1.ClaimPending)
	}
	return p
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// latestAnyRevision is the OnCompacted of a join's read at revision rev:
// at the latest (0), which a listing's own read does not share anyway,
// the volumes and pods may be read across a compaction; at a revision
// named, not.
func latestAnyRevision(rev int64) func(from, to int64) {
	if rev != 0 {
		return nil
	}
	return anyRevision
}
