package s3store

import "sync/atomic"

// Requests counts the requests a Store (or Blobs) sent, by kind: what a
// bucket bills by. Store.Requests returns them.
type Requests struct {
	Get, Head, Put, Delete, List int64
}

// Total is the sum of every kind.
func (r Requests) Total() int64 { return r.Get + r.Head + r.Put + r.Delete + r.List }

// Sub returns r minus earlier: the requests made between two readings.
func (r Requests) Sub(earlier Requests) Requests {
	return Requests{r.Get - earlier.Get, r.Head - earlier.Head, r.Put - earlier.Put, r.Delete - earlier.Delete, r.List - earlier.List}
}

type op int

const (
	opGet op = iota
	opHead
	opPut
	opDelete
	opList
	opCount
)

type requestCounter struct{ n [opCount]atomic.Int64 }

func (c *requestCounter) add(o op) { c.n[o].Add(1) }

func (c *requestCounter) read() Requests {
	return Requests{c.n[opGet].Load(), c.n[opHead].Load(), c.n[opPut].Load(), c.n[opDelete].Load(), c.n[opList].Load()}
}
