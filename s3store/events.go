package s3store

import (
	"context"
	"strings"
	"sync"
	"time"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/s3store/internal/format"
)

// Events: the store's own writes reach its subscribers as they happen;
// the writes of other processes are found by polling (Options.
// PollInterval) while anyone subscribes: a listing of the heads (one
// request per thousand sessions), and for each head that changed, the
// parts after what the store had told (a request each, and one more).
// A change another process made reaches subscribers once its writer has
// moved the head, which it does right after the write. The first poll
// after a subscription reads the heads only (what is there when one
// subscribes is not news).

// Subscribe implements session.Subscriber.
func (s *Store) Subscribe(ctx context.Context, opts session.SubscribeOptions) (*session.Subscription, error) {
	sub, err := s.hub.Subscribe(ctx, opts)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.poll == nil && !s.closed {
		s.poll = &poller{s: s, told: map[string]told{}}
		go s.poll.run()
	}
	s.mu.Unlock()
	return sub, nil
}

// told is what subscribers were told of a session.
type told struct {
	id       string
	etag     string // of its head, as the poller last listed it
	inc      string
	epoch    int // its rewrites (format.Descriptor.Epoch)
	entries  int
	archived bool
	compact  time.Time
	at       uint64 // poller.clock when it was recorded
}

type poller struct {
	s      *Store
	mu     sync.Mutex
	told   map[string]told // by the session's key element (format.EncID)
	clock  uint64          // counts the records of told
	primed bool            // the poller goroutine's alone
}

func toldOf(st *state, etag string) told {
	return told{id: st.id, etag: etag, inc: st.inc, epoch: st.desc.Epoch, entries: len(st.entries), archived: st.archived, compact: st.compact}
}

// seen records that subscribers know st (etag "" keeps the head's
// ETag the poller listed: the next poll reads the session, and finds
// nothing new).
func (p *poller) seen(st *state, etag string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := format.EncID(st.id)
	if etag == "" {
		etag = p.told[k].etag
	}
	p.clock++
	t := toldOf(st, etag)
	t.at = p.clock
	p.told[k] = t
}

func (p *poller) forget(id string) {
	p.mu.Lock()
	delete(p.told, format.EncID(id))
	p.mu.Unlock()
}

// caughtUp returns the changes of another process that st held when
// this store wrote (st.pre: its catching up found them) and subscribers
// were not told of; the write's own changes the caller tells.
func (p *poller) caughtUp(st *state) []session.Change {
	p.mu.Lock()
	t, ok := p.told[format.EncID(st.id)]
	p.mu.Unlock()
	if !ok || st.pre == nil {
		return nil // nothing told yet, or this write created the session
	}
	return changesSince(t, *st.pre, st)
}

// changesSince returns the changes from what t told to cur (st as it
// was, or is: its first cur.entries entries), as another process's.
func changesSince(t, cur told, st *state) []session.Change {
	now := time.Now()
	var cs []session.Change
	switch {
	case t.inc != cur.inc:
		if t.inc != "" { // deleted and created again since
			cs = append(cs, session.Change{Kind: session.ChangeDeleted, Session: st.id, Time: now})
		}
		cs = append(cs, session.Change{Kind: session.ChangeCreated, Session: st.id, Time: now})
		cs = append(cs, session.ChangesOf(st.id, st.entries[:cur.entries], now)...)
	case t.epoch != cur.epoch || t.entries > cur.entries:
		cs = append(cs, session.Change{Kind: session.ChangeRewritten, Session: st.id, Time: now})
	default:
		cs = append(cs, session.ChangesOf(st.id, st.entries[t.entries:cur.entries], now)...)
	}
	if t.inc == cur.inc && t.archived != cur.archived {
		kind := session.ChangeUnarchived
		if cur.archived {
			kind = session.ChangeArchived
		}
		cs = append(cs, session.Change{Kind: kind, Session: st.id, Time: now})
	}
	if t.inc == cur.inc && !t.compact.Equal(cur.compact) {
		cs = append(cs, session.Change{Kind: session.ChangeCompacting, Session: st.id, Time: now, Compacting: cur.compact})
	}
	for i := range cs {
		cs[i].Remote = true
	}
	return cs
}

func (p *poller) run() {
	t := time.NewTicker(p.s.opts.PollInterval)
	defer t.Stop()
	for range t.C {
		p.s.mu.Lock()
		closed := p.s.closed
		p.s.mu.Unlock()
		if closed {
			return
		}
		if !p.s.hub.Active() {
			p.primed = false // start again from what is there when one subscribes
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*p.s.opts.PollInterval+30*time.Second)
		if err := p.once(ctx); err != nil {
			p.s.hub.Publish(session.Change{Kind: session.ChangeError, Time: time.Now(), Err: err})
		}
		cancel()
	}
}

// once looks for changes: heads that appeared, changed or went.
func (p *poller) once(ctx context.Context) error {
	p.mu.Lock()
	before := p.clock // what was told after this need not be in the listing
	p.mu.Unlock()
	heads := map[string]string{} // key element → ETag
	err := p.s.b.list(ctx, "sessions/", func(o listed) error {
		if k := strings.TrimPrefix(o.rel, "sessions/"); format.IsKeyID(k) {
			heads[k] = o.etag
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !p.primed {
		p.prime(ctx, heads)
		p.primed = true
		return nil
	}
	p.mu.Lock()
	var changed []string
	var gone []told
	for k, etag := range heads {
		if t, ok := p.told[k]; !ok || t.etag != etag {
			changed = append(changed, k)
		}
	}
	for k, t := range p.told {
		if _, ok := heads[k]; !ok && t.at <= before {
			gone = append(gone, t)
			delete(p.told, k)
		}
	}
	p.mu.Unlock()
	for _, t := range gone {
		p.s.hub.Publish(session.Change{Kind: session.ChangeDeleted, Session: t.id, Time: time.Now(), Remote: true})
	}
	for _, k := range changed {
		p.follow(ctx, k, heads[k])
	}
	return nil
}

// prime takes what the heads say as told, reading the heads only.
func (p *poller) prime(ctx context.Context, heads map[string]string) {
	keys := make([]string, 0, len(heads))
	for k := range heads {
		keys = append(keys, "sessions/"+k)
	}
	objs, _ := p.s.getEach(ctx, keys, func(int) int64 { return maxHeadBytes })
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, o := range objs {
		if o == nil {
			continue
		}
		h, err := format.ParseHead(o.data)
		k := strings.TrimPrefix(keys[i], "sessions/")
		if err != nil || format.EncID(h.Info.ID) != k {
			continue
		}
		if _, ok := p.told[k]; ok {
			continue // this store's own write told it since: that is newer than a head
		}
		p.told[k] = told{id: h.Info.ID, etag: o.etag, inc: h.Inc, epoch: h.Epoch, entries: h.Info.Entries,
			archived: h.Info.Archived, compact: h.Info.Compacting}
	}
}

// follow reads the session of key element k past what subscribers were
// told, and tells them the rest.
func (p *poller) follow(ctx context.Context, k, etag string) {
	id, ok := format.DecID(k)
	p.mu.Lock()
	t, known := p.told[k]
	p.mu.Unlock()
	if !ok && known {
		id, ok = t.id, true
	}
	if !ok { // a hashed id never told: its head says which
		o, err := p.s.b.getMax(ctx, "sessions/"+k, maxHeadBytes)
		if err != nil {
			return
		}
		h, err := format.ParseHead(o.data)
		if err != nil || format.EncID(h.Info.ID) != k {
			return
		}
		id = h.Info.ID
	}
	e, err := p.s.lock(ctx, id)
	if err != nil {
		return
	}
	defer p.s.unlock(e)
	st, err := p.s.current(ctx, e, true)
	if err != nil {
		return // deleted meanwhile: the next poll sees its head gone
	}
	p.mu.Lock()
	t, known = p.told[k] // again, under the session's lock: an own write may have told more
	p.clock++
	nt := toldOf(st, etag)
	nt.at = p.clock
	p.told[k] = nt
	p.mu.Unlock()
	if !known {
		t = told{id: id}
	}
	if cs := changesSince(t, toldOf(st, etag), st); len(cs) > 0 {
		p.s.hub.Publish(cs...)
	}
}
