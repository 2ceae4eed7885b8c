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
// moved the head, which it does right after the write.

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
	etag     string // of its head
	inc      string
	gen      string
	entries  int
	archived bool
	compact  time.Time
}

type poller struct {
	s      *Store
	mu     sync.Mutex
	told   map[string]told
	primed bool
}

// seen records a session's state after a change this store made and
// told itself (called with s.mu held).
func (p *poller) seen(st *state) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if st == nil {
		return
	}
	p.told[format.EncID(st.id)] = told{id: st.id, etag: st.headETag, inc: st.inc, gen: st.gen, entries: len(st.entries), archived: st.archived, compact: st.compact}
}

func (p *poller) forget(id string) {
	p.mu.Lock()
	delete(p.told, format.EncID(id))
	p.mu.Unlock()
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
	first := !p.primed
	p.primed = true
	p.mu.Lock()
	var changed, gone []string
	for id, etag := range heads {
		if t, ok := p.told[id]; !ok || t.etag != etag {
			changed = append(changed, id)
		}
	}
	for id := range p.told {
		if _, ok := heads[id]; !ok {
			gone = append(gone, id)
		}
	}
	p.mu.Unlock()
	now := time.Now()
	for _, k := range gone {
		p.mu.Lock()
		id := p.told[k].id
		p.mu.Unlock()
		p.forget(id)
		if !first {
			p.s.hub.Publish(session.Change{Kind: session.ChangeDeleted, Session: id, Time: now, Remote: true})
		}
	}
	for _, k := range changed {
		id, ok := format.DecID(k)
		if !ok { // a hashed id: its head says which
			o, err := p.s.b.get(ctx, "sessions/"+k)
			if err != nil {
				continue
			}
			ho, err := format.ParseHead(o.data)
			if err != nil || format.EncID(ho.Info.ID) != k {
				continue
			}
			id = ho.Info.ID
		}
		p.follow(ctx, id, heads[k], first)
	}
	return nil
}

// follow reads session id past what subscribers were told, and tells
// them the rest (nothing on the first poll: what is there when one
// subscribes is not news).
func (p *poller) follow(ctx context.Context, id, etag string, quiet bool) {
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
	t, known := p.told[format.EncID(id)]
	p.told[format.EncID(id)] = told{id: id, etag: etag, inc: st.inc, gen: st.gen, entries: len(st.entries), archived: st.archived, compact: st.compact}
	p.mu.Unlock()
	if quiet {
		return
	}
	now := time.Now()
	var cs []session.Change
	switch {
	case !known || t.inc != st.inc:
		cs = append(cs, session.Change{Kind: session.ChangeCreated, Session: id, Time: now})
		cs = append(cs, session.ChangesOf(id, st.entries, now)...)
	case t.entries > len(st.entries) || (t.gen != st.gen && !st.desc.Fold):
		cs = append(cs, session.Change{Kind: session.ChangeRewritten, Session: id, Time: now})
	default:
		cs = append(cs, session.ChangesOf(id, st.entries[t.entries:], now)...)
	}
	if known && t.archived != st.archived {
		kind := session.ChangeUnarchived
		if st.archived {
			kind = session.ChangeArchived
		}
		cs = append(cs, session.Change{Kind: kind, Session: id, Time: now})
	}
	if known && !t.compact.Equal(st.compact) {
		cs = append(cs, session.Change{Kind: session.ChangeCompacting, Session: id, Time: now, Compacting: st.compact})
	}
	for i := range cs {
		cs[i].Remote = true
	}
	if len(cs) > 0 {
		p.s.hub.Publish(cs...)
	}
}
