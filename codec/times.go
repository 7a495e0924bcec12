package codec

import (
	"bytes"
	encjson "encoding/json"
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// Times are the wall-clock times a stored object carries that say when it
// was written, read without decoding the rest: the object's metadata, and
// for a Lease its spec, for an Event its times and reporter. A Secret's
// data is never decoded: of a protobuf object only field 1 is parsed (the
// rest is skipped by its length), of a JSON one only the metadata is
// decoded (the rest is scanned, as JSON must be, and dropped).
type Times struct {
	Kind string
	// Created is metadata.creationTimestamp; Managed the newest time among
	// metadata.managedFields (zero: none). Both have one second's
	// resolution.
	Created, Managed time.Time
	// Renew is a Lease's spec.renewTime and Holder its holderIdentity.
	Renew  time.Time
	Holder string
	// Reported is an Event's newest time (lastTimestamp, eventTime,
	// series.lastObservedTime) and Reporter who reported it
	// (reportingInstance, or source.host, or source.component).
	Reported time.Time
	Reporter string
}

// ReadTimes reads a plaintext stored value's Times (protobuf or JSON). Its
// errors never quote the value's bytes.
func ReadTimes(value []byte) (Times, error) {
	switch Detect(value) {
	case FormatProtobuf:
		_, kind, raw, err := scanEnvelope(value)
		if err != nil {
			return Times{}, fmt.Errorf("read times: %w", err)
		}
		t := Times{Kind: kind}
		return t, t.readWire(raw)
	case FormatJSON:
		return readTimesJSON(value)
	}
	return Times{}, fmt.Errorf("read times: %w", ErrNotObject)
}

// readWire reads the object message's metadata (field 1) and, for a Lease
// or an Event, the fields that carry times.
func (t *Times) readWire(raw []byte) error {
	return eachField(raw, func(num protowire.Number, v []byte) error {
		switch {
		case num == 1:
			return t.readWireMeta(v)
		case t.Kind == "Lease" && num == 2:
			return eachField(v, func(num protowire.Number, v []byte) error {
				switch num {
				case 1:
					t.Holder = string(v)
				case 4:
					return wireTimeInto(v, &t.Renew)
				}
				return nil
			})
		case t.Kind == "Event":
			return t.readWireEvent(num, v)
		}
		return nil
	})
}

func (t *Times) readWireMeta(b []byte) error {
	return eachField(b, func(num protowire.Number, v []byte) error {
		switch num {
		case 8:
			return wireTimeInto(v, &t.Created)
		case 17:
			return eachField(v, func(num protowire.Number, v []byte) error {
				if num != 4 {
					return nil
				}
				var m time.Time
				if err := wireTimeInto(v, &m); err != nil {
					return err
				}
				if m.After(t.Managed) {
					t.Managed = m
				}
				return nil
			})
		}
		return nil
	})
}

func (t *Times) readWireEvent(num protowire.Number, v []byte) error {
	newer := func(v []byte) error {
		var at time.Time
		if err := wireTimeInto(v, &at); err != nil {
			return err
		}
		if at.After(t.Reported) {
			t.Reported = at
		}
		return nil
	}
	switch num {
	case 5:
		return eachField(v, func(num protowire.Number, v []byte) error {
			if t.Reporter == "" || num == 2 && len(v) > 0 {
				t.Reporter = string(v)
			}
			return nil
		})
	case 7, 10:
		return newer(v)
	case 11:
		return eachField(v, func(num protowire.Number, v []byte) error {
			if num == 2 {
				return newer(v)
			}
			return nil
		})
	case 15:
		if len(v) > 0 {
			t.Reporter = string(v)
		}
	}
	return nil
}

// eachField calls fn with every length-delimited field of a message; other
// fields are skipped.
func eachField(b []byte, fn func(num protowire.Number, v []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if typ != protowire.BytesType {
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return protowire.ParseError(m)
			}
			b = b[m:]
			continue
		}
		v, m := protowire.ConsumeBytes(b)
		if m < 0 {
			return protowire.ParseError(m)
		}
		b = b[m:]
		if err := fn(num, v); err != nil {
			return err
		}
	}
	return nil
}

func wireTimeInto(v []byte, at *time.Time) error {
	t, err := wireTime(v)
	if err != nil {
		return err
	}
	*at = t
	return nil
}

type jsonTimes struct {
	Kind     string `json:"kind"`
	Metadata struct {
		CreationTimestamp *time.Time `json:"creationTimestamp"`
		ManagedFields     []struct {
			Time *time.Time `json:"time"`
		} `json:"managedFields"`
	} `json:"metadata"`
}

type jsonLeaseEvent struct {
	Spec struct {
		HolderIdentity string     `json:"holderIdentity"`
		RenewTime      *time.Time `json:"renewTime"`
	} `json:"spec"`
	LastTimestamp *time.Time `json:"lastTimestamp"`
	EventTime     *time.Time `json:"eventTime"`
	Series        struct {
		LastObservedTime *time.Time `json:"lastObservedTime"`
	} `json:"series"`
	Source struct {
		Component string `json:"component"`
		Host      string `json:"host"`
	} `json:"source"`
	ReportingInstance string `json:"reportingInstance"`
}

// readTimesJSON reads Times from a JSON object; for a kind other than Lease
// and Event only the metadata is kept.
func readTimesJSON(value []byte) (Times, error) {
	doc := bytes.TrimRight(value, "\r\n")
	var j jsonTimes
	if err := encjson.Unmarshal(doc, &j); err != nil {
		return Times{}, fmt.Errorf("read times: %w", ErrNotObject)
	}
	t := Times{Kind: j.Kind}
	if c := j.Metadata.CreationTimestamp; c != nil {
		t.Created = c.UTC()
	}
	for _, f := range j.Metadata.ManagedFields {
		if f.Time != nil && f.Time.After(t.Managed) {
			t.Managed = f.Time.UTC()
		}
	}
	if j.Kind != "Lease" && j.Kind != "Event" {
		return t, nil
	}
	var le jsonLeaseEvent
	if err := encjson.Unmarshal(doc, &le); err != nil {
		return Times{}, fmt.Errorf("read times: %w", ErrNotObject)
	}
	if j.Kind == "Lease" {
		t.Holder = le.Spec.HolderIdentity
		if r := le.Spec.RenewTime; r != nil {
			t.Renew = r.UTC()
		}
		return t, nil
	}
	for _, r := range []*time.Time{le.LastTimestamp, le.EventTime, le.Series.LastObservedTime} {
		if r != nil && r.After(t.Reported) {
			t.Reported = r.UTC()
		}
	}
	t.Reporter = le.ReportingInstance
	if t.Reporter == "" {
		t.Reporter = le.Source.Host
	}
	if t.Reporter == "" {
		t.Reporter = le.Source.Component
	}
	return t, nil
}
