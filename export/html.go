package export

import (
	"bufio"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"strings"
	"sync"

	session "github.com/agentsession/session"
)

// The viewer: one page template with the CSS and the scripts written
// into it, so the page is a single file that needs no network.
//
//go:embed viewer/page.html viewer/viewer.css viewer/index.js viewer/render.js viewer/tools.js viewer/list.js viewer/app.js
var viewerFS embed.FS

// The scripts, in the order they are written into the page.
var viewerScripts = []string{"index.js", "render.js", "tools.js", "list.js", "app.js"}

// page is the viewer template cut at its placeholders.
type page struct {
	beforeTitle, beforeCSS, beforeH1, beforeData, beforeJS, end string
	css, js                                                     string
}

var (
	pageOnce sync.Once
	thePage  page
	pageErr  error
)

func loadPage() (page, error) {
	pageOnce.Do(func() { thePage, pageErr = parsePage() })
	return thePage, pageErr
}

func parsePage() (page, error) {
	read := func(name string) (string, error) {
		b, err := viewerFS.ReadFile("viewer/" + name)
		return string(b), err
	}
	tpl, err := read("page.html")
	if err != nil {
		return page{}, err
	}
	var p page
	parts := []*string{&p.beforeTitle, &p.beforeCSS, &p.beforeH1, &p.beforeData, &p.beforeJS}
	for i, mark := range []string{"{{TITLE}}", "{{CSS}}", "{{H1}}", "{{DATA}}", "{{JS}}"} {
		before, after, ok := strings.Cut(tpl, mark)
		if !ok {
			return page{}, fmt.Errorf("export: viewer template lacks %s", mark)
		}
		*parts[i], tpl = before, after
	}
	p.end = tpl
	if p.css, err = read("viewer.css"); err != nil {
		return page{}, err
	}
	var js strings.Builder
	for _, name := range viewerScripts {
		s, err := read(name)
		if err != nil {
			return page{}, err
		}
		js.WriteString(s)
		js.WriteByte('\n')
	}
	p.js = js.String()
	// The static parts are ours; still, none of them may end its element
	// early.
	if strings.Contains(strings.ToLower(p.css), "</style") || strings.Contains(strings.ToLower(p.js), "</script") {
		return page{}, errors.New("export: viewer source closes its own element")
	}
	return p, nil
}

// HTML writes a single self-contained HTML page showing the whole tree of
// s (or Options.Branch): it needs no network to view, and its content
// security policy forbids every fetch.
//
// The page embeds the envelope Build gives as JSON in script elements of
// type "application/json": the one of id "session-data" holds the
// envelope with an empty "entries"; the entries follow, in log order, as
// JSON arrays in elements of class "session-entries" of about a megabyte
// each (a browser reads those much faster than one element of tens of
// megabytes). Every '<', '>' and '&' of the JSON is written as a \u
// escape, so no text of the session can end its element.
//
// The viewer, plain JavaScript written into the page, shows the path from
// a root to the chosen leaf, with a side panel of the branches, labels
// (checkpoints) and events (compactions, branch summaries, model
// changes) to switch and jump to. It renders lazily, a window of entries
// at a time, so a session of tens of thousands of entries opens at once.
// Images are shown from the data of their blocks, or from Envelope.Blobs
// for a blob reference (Options.Blobs resolves them).
func HTML(ctx context.Context, w io.Writer, s *session.Session, opts *Options) error {
	env, err := Build(ctx, s, opts)
	if err != nil {
		return err
	}
	title := s.Title()
	if opts != nil && opts.Redactor != nil {
		// Counted already: the title is in the header or an entry.
		title, _ = opts.Redactor.String(title)
	}
	return WriteHTML(ctx, w, env, title)
}

// WriteHTML writes the page of an envelope (one Build gave, or Read read)
// with the given title; an empty title is taken from the envelope: the
// latest session_info name, else the header's title, else its id.
func WriteHTML(ctx context.Context, w io.Writer, env *Envelope, title string) error {
	if env == nil {
		return errors.New("export: WriteHTML needs an envelope")
	}
	p, err := loadPage()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if title == "" {
		title = envelopeTitle(env)
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	esc := html.EscapeString(title)
	for _, s := range []string{p.beforeTitle, esc, p.beforeCSS, p.css, p.beforeH1, esc, p.beforeData} {
		bw.WriteString(s)
	}
	if err := writeData(ctx, bw, env); err != nil {
		return err
	}
	for _, s := range []string{p.beforeJS, p.js, p.end} {
		bw.WriteString(s)
	}
	return bw.Flush()
}

// chunkBytes is about the size of the JSON of each script element that
// holds entries: a browser reads many elements of a megabyte much faster
// than one of tens of megabytes.
const chunkBytes = 1 << 20

// writeData writes the envelope: first the script element of id
// "session-data", the envelope with an empty "entries", then the entries
// in log order, in script elements of class "session-entries" holding a
// JSON array each; the viewer joins them back.
func writeData(ctx context.Context, bw *bufio.Writer, env *Envelope) error {
	safe := &scriptSafe{w: bw}
	head := *env
	head.Entries = []session.Entry{}
	b, err := json.Marshal(&head)
	if err != nil {
		return fmt.Errorf("export: encoding the session: %w", err)
	}
	safe.Write(b)
	for rest := env.Entries; len(rest) > 0; {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, size := 0, 0
		for n < len(rest) && (n == 0 || size < chunkBytes) {
			size += rest[n].Len()
			n++
		}
		b, err := json.Marshal(rest[:n])
		if err != nil {
			return fmt.Errorf("export: encoding the session: %w", err)
		}
		bw.WriteString(entriesOpen)
		safe.Write(b)
		rest = rest[n:]
	}
	_, err = bw.WriteString("</script>")
	return err
}

// entriesOpen ends the element before and opens one of entries.
const entriesOpen = "</script>\n<script type=\"application/json\" class=\"session-entries\">"

// envelopeTitle is the session's display name as Session.Title gives it.
func envelopeTitle(env *Envelope) string {
	title := env.Header.Title
	for _, e := range env.Entries {
		if e.Type() != session.TypeSessionInfo {
			continue
		}
		var info session.SessionInfoEntry
		if e.Decode(&info) == nil && strings.TrimSpace(info.Name) != "" {
			title = strings.TrimSpace(info.Name)
		}
	}
	if title == "" {
		title = "Session " + env.Header.ID
	}
	return title
}

// scriptSafe writes JSON text with '<', '>' and '&' as \u escapes. In
// JSON text they can only stand inside strings, where the escape means
// the same character; with none of them left, nothing in the data can
// close the script element or open a comment in it.
type scriptSafe struct{ w *bufio.Writer }

func (s *scriptSafe) Write(b []byte) (int, error) {
	start := 0
	for i, c := range b {
		var rep string
		switch c {
		case '<':
			rep = `\u003c`
		case '>':
			rep = `\u003e`
		case '&':
			rep = `\u0026`
		default:
			continue
		}
		s.w.Write(b[start:i])
		s.w.WriteString(rep)
		start = i + 1
	}
	if _, err := s.w.Write(b[start:]); err != nil {
		return 0, err
	}
	return len(b), nil
}
