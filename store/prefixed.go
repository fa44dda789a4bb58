package store

import (
	"context"
	"encoding/json"
	"slices"
)

// Prefixed returns a view of s in which every namespace starts with
// labels, which the view adds on the way in and removes on the way out:
// code given the view reads and writes only under that prefix, and sees
// namespaces as if the prefix were not there. The agent service gives each
// tenant's runs the view Prefixed(s, "tenant:"+name).
func Prefixed(s Store, labels ...string) Store {
	return &prefixed{s: s, p: slices.Clone(labels)}
}

type prefixed struct {
	s Store
	p []string
}

func (v *prefixed) ns(ns []string) []string { return append(slices.Clone(v.p), ns...) }

func (v *prefixed) strip(it *Item) *Item {
	if it == nil {
		return nil
	}
	c := *it
	c.Namespace = slices.Clone(it.Namespace[min(len(v.p), len(it.Namespace)):])
	return &c
}

// Get reads namespace/key under the prefix.
func (v *prefixed) Get(ctx context.Context, namespace []string, key string) (*Item, error) {
	it, err := v.s.Get(ctx, v.ns(namespace), key)
	if err != nil {
		return nil, err
	}
	return v.strip(it), nil
}

// Put writes namespace/key under the prefix.
func (v *prefixed) Put(ctx context.Context, namespace []string, key string, value json.RawMessage, opts PutOptions) error {
	return v.s.Put(ctx, v.ns(namespace), key, value, opts)
}

// Delete removes namespace/key under the prefix.
func (v *prefixed) Delete(ctx context.Context, namespace []string, key string) error {
	return v.s.Delete(ctx, v.ns(namespace), key)
}

// Search searches under the prefix.
func (v *prefixed) Search(ctx context.Context, prefix []string, q Query) ([]*Item, error) {
	items, err := v.s.Search(ctx, v.ns(prefix), q)
	if err != nil {
		return nil, err
	}
	for i, it := range items {
		items[i] = v.strip(it)
	}
	return items, nil
}

// ListNamespaces lists the namespaces under the prefix, without it.
func (v *prefixed) ListNamespaces(ctx context.Context, q NamespaceQuery) ([][]string, error) {
	q.Prefix = v.ns(q.Prefix)
	if q.MaxDepth > 0 {
		q.MaxDepth += len(v.p)
	}
	nss, err := v.s.ListNamespaces(ctx, q)
	if err != nil {
		return nil, err
	}
	for i, ns := range nss {
		nss[i] = ns[min(len(v.p), len(ns)):]
	}
	return nss, nil
}
