package main

// The JSON edit jq made in the bash version:
//
//	(PATH) |= (if type == "object" then with_entries(.value |= (if type == "array" then
//	            map(select(. as $c | $drop | index([$c]) | not)) else . end)) else . end)
//
// done on the document's own bytes: members keep their order and every value this edit does not touch keeps its
// text (numbers included); the result is indented with two spaces, as jq prints it.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

type member struct {
	key string
	val json.RawMessage
}

// dropCaps is DATA with the MISSING capabilities taken out of every array member of the object at PATH. A PATH
// that ends early (a member that is missing or null) changes nothing; one that meets another type is an error
// (jq's "Cannot index").
func dropCaps(data []byte, path []string, missing []string) ([]byte, error) {
	if !json.Valid(data) {
		return nil, errors.New("not valid JSON")
	}
	drop := map[string]bool{}
	for _, c := range missing {
		drop[c] = true
	}
	doc, err := update(bytes.TrimSpace(data), path, func(v json.RawMessage) (json.RawMessage, error) {
		return filterSets(v, drop)
	})
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, doc, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// update applies F to the value at PATH below RAW.
func update(raw json.RawMessage, path []string, f func(json.RawMessage) (json.RawMessage, error)) (json.RawMessage, error) {
	if len(path) == 0 {
		return f(raw)
	}
	if string(raw) == "null" {
		return raw, nil
	}
	ms, ok, err := object(raw)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("cannot index %.20s with %q", raw, path[0])
	}
	for i := range ms {
		if ms[i].key == path[0] {
			v, err := update(ms[i].val, path[1:], f)
			if err != nil {
				return nil, err
			}
			ms[i].val = v
			return encode(ms), nil
		}
	}
	return raw, nil
}

// filterSets takes the DROP strings out of every array member of RAW when it is an object; anything else stays.
func filterSets(raw json.RawMessage, drop map[string]bool) (json.RawMessage, error) {
	ms, ok, err := object(raw)
	if err != nil || !ok {
		return raw, err
	}
	for i := range ms {
		var items []json.RawMessage
		if bytes.HasPrefix(ms[i].val, []byte("[")) && json.Unmarshal(ms[i].val, &items) == nil {
			kept := [][]byte{}
			for _, it := range items {
				var s string
				if json.Unmarshal(it, &s) == nil && drop[s] {
					continue
				}
				kept = append(kept, it)
			}
			ms[i].val = append(append([]byte("["), bytes.Join(kept, []byte(","))...), ']')
		}
	}
	return encode(ms), nil
}

// object is RAW's members in their order, and whether RAW is an object at all.
func object(raw json.RawMessage) ([]member, bool, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	t, err := dec.Token()
	if err != nil {
		return nil, false, err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return nil, false, nil
	}
	var ms []member
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, false, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false, err
		}
		ms = append(ms, member{k.(string), v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, false, err
	}
	return ms, true, nil
}

func encode(ms []member) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.Encode(m.key) // a JSON string and a newline
		b.Truncate(b.Len() - 1)
		b.WriteByte(':')
		b.Write(m.val)
	}
	b.WriteByte('}')
	return b.Bytes()
}
