package session

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
)

// Constructors and accessors of the content blocks beyond pi's four (see
// Block).

// RedactedThinkingText is the thinking text of a redacted thinking block,
// as pi writes it; the block's opaque data is its signature.
const RedactedThinkingText = "[Reasoning redacted]"

// RedactedThinking returns a block of redacted thinking holding the
// provider's opaque data (Anthropic's redacted_thinking), in pi's form:
// a thinking block marked Redacted, RedactedThinkingText as its text and
// data as its signature. The provider packages send it back only to the
// model that wrote it.
func RedactedThinking(data string) Block {
	return Block{Type: BlockThinking, Thinking: RedactedThinkingText, ThinkingSignature: data, Redacted: true}
}

// RedactedData returns the opaque data of redacted thinking, in pi's form
// (a thinking block marked Redacted) or oh-my-pi's (BlockRedactedThinking);
// false for any other block.
func (b Block) RedactedData() (string, bool) {
	switch {
	case b.Type == BlockThinking && b.Redacted:
		return b.ThinkingSignature, true
	case b.Type == BlockRedactedThinking:
		return b.Data, true
	}
	return "", false
}

// Document returns a document block holding data (a PDF, ...),
// base64-encoded.
func Document(mimeType string, data []byte) Block {
	return Block{Type: BlockDocument, MimeType: mimeType, Data: base64.StdEncoding.EncodeToString(data)}
}

// DocumentBase64 returns a document block from data that is already
// base64.
func DocumentBase64(mimeType, data string) Block {
	return Block{Type: BlockDocument, MimeType: mimeType, Data: data}
}

// TextDocument returns a plain-text document block.
func TextDocument(text string) Block {
	return Block{Type: BlockDocument, MimeType: "text/plain", Text: text}
}

// DocumentURL returns a document block the provider fetches from url.
func DocumentURL(url string) Block { return Block{Type: BlockDocument, URL: url} }

// DocumentFile returns a document block naming a file uploaded to the
// provider (its Files API id).
func DocumentFile(fileID string) Block { return Block{Type: BlockDocument, FileID: fileID} }

// WithTitle returns b with its title set (documents).
func (b Block) WithTitle(title string) Block {
	b.Title = title
	return b
}

// WithContext returns b with its context set: what a document is, for the
// model (Anthropic's document context).
func (b Block) WithContext(context string) Block {
	b.Context = context
	return b
}

// WithFilename returns b with its file name set (documents; OpenAI's file
// input takes one with the data).
func (b Block) WithFilename(name string) Block {
	b.Filename = name
	return b
}

// citationsOn is the Citations of a document the model may cite.
var citationsOn = json.RawMessage(`{"enabled":true}`)

// WithCitations returns a document block the model may cite (Anthropic's
// citations setting).
func (b Block) WithCitations() Block {
	b.Citations = append(json.RawMessage(nil), citationsOn...)
	return b
}

// CitationsEnabled reports whether b is a document the model may cite.
func (b Block) CitationsEnabled() bool {
	if b.Type != BlockDocument || len(b.Citations) == 0 {
		return false
	}
	var v struct{ Enabled bool }
	return json.Unmarshal(b.Citations, &v) == nil && v.Enabled
}

// Audio returns an audio block holding data, base64-encoded (mimeType
// "audio/wav" or "audio/mpeg").
func Audio(mimeType string, data []byte) Block {
	return Block{Type: BlockAudio, MimeType: mimeType, Data: base64.StdEncoding.EncodeToString(data)}
}

// Refusal returns a refusal block: the text of a model's refusal, which
// OpenAI's APIs give apart from the reply's text.
func Refusal(text string) Block { return Block{Type: BlockRefusal, Text: text} }

// CitedText returns a text block citing sources (the citations of
// Anthropic's text blocks).
func CitedText(text string, citations ...Citation) Block {
	b := Text(text)
	if len(citations) > 0 {
		b.Citations, _ = json.Marshal(citations) // a Citation always marshals
	}
	return b
}

// CitationList decodes the citations of a text block; nil when it has
// none. Members a Citation does not model are not kept: the block's
// Citations holds them.
func (b Block) CitationList() ([]Citation, error) {
	if b.Type != BlockText || len(b.Citations) == 0 {
		return nil, nil
	}
	var cs []Citation
	if err := json.Unmarshal(b.Citations, &cs); err != nil {
		return nil, err
	}
	return cs, nil
}

// Citation is one citation of a text block, in the shape of Anthropic's
// citation objects (snake_case members, as the API gives and takes
// them). Type says which location fields apply:
//
//   - char_location: DocumentIndex, DocumentTitle, StartCharIndex,
//     EndCharIndex (FileID for a document given by file);
//   - page_location: the same with StartPageNumber, EndPageNumber;
//   - content_block_location: the same with StartBlockIndex,
//     EndBlockIndex;
//   - web_search_result_location: URL, Title, EncryptedIndex;
//   - search_result_location: Source, Title, SearchResultIndex,
//     StartBlockIndex, EndBlockIndex.
//
// Its MarshalJSON writes the members of its type, zero indexes included.
type Citation struct {
	Type              string `json:"type"`
	CitedText         string `json:"cited_text,omitempty"`
	DocumentIndex     int    `json:"document_index,omitempty"`
	DocumentTitle     string `json:"document_title,omitempty"`
	FileID            string `json:"file_id,omitempty"`
	StartCharIndex    int    `json:"start_char_index,omitempty"`
	EndCharIndex      int    `json:"end_char_index,omitempty"`
	StartPageNumber   int    `json:"start_page_number,omitempty"`
	EndPageNumber     int    `json:"end_page_number,omitempty"`
	StartBlockIndex   int    `json:"start_block_index,omitempty"`
	EndBlockIndex     int    `json:"end_block_index,omitempty"`
	URL               string `json:"url,omitempty"`
	Title             string `json:"title,omitempty"`
	EncryptedIndex    string `json:"encrypted_index,omitempty"`
	Source            string `json:"source,omitempty"`
	SearchResultIndex int    `json:"search_result_index,omitempty"`
}

// MarshalJSON writes the members of c's type, as the API takes them:
// its indexes even when zero, its optional strings when set. A type this
// package does not know gets every member that is set.
func (c Citation) MarshalJSON() ([]byte, error) {
	w := citationWriter{b: []byte(`{`)}
	w.str("type", c.Type, true)
	w.str("cited_text", c.CitedText, true)
	switch c.Type {
	case "char_location", "page_location", "content_block_location":
		w.int("document_index", c.DocumentIndex, true)
		w.str("document_title", c.DocumentTitle, false)
		w.str("file_id", c.FileID, false)
		switch c.Type {
		case "char_location":
			w.int("start_char_index", c.StartCharIndex, true)
			w.int("end_char_index", c.EndCharIndex, true)
		case "page_location":
			w.int("start_page_number", c.StartPageNumber, true)
			w.int("end_page_number", c.EndPageNumber, true)
		default:
			w.int("start_block_index", c.StartBlockIndex, true)
			w.int("end_block_index", c.EndBlockIndex, true)
		}
	case "web_search_result_location":
		w.str("url", c.URL, true)
		w.str("title", c.Title, false)
		w.str("encrypted_index", c.EncryptedIndex, true)
	case "search_result_location":
		w.str("source", c.Source, true)
		w.str("title", c.Title, false)
		w.int("search_result_index", c.SearchResultIndex, true)
		w.int("start_block_index", c.StartBlockIndex, true)
		w.int("end_block_index", c.EndBlockIndex, true)
	default:
		w.int("document_index", c.DocumentIndex, false)
		w.str("document_title", c.DocumentTitle, false)
		w.str("file_id", c.FileID, false)
		w.int("start_char_index", c.StartCharIndex, false)
		w.int("end_char_index", c.EndCharIndex, false)
		w.int("start_page_number", c.StartPageNumber, false)
		w.int("end_page_number", c.EndPageNumber, false)
		w.int("start_block_index", c.StartBlockIndex, false)
		w.int("end_block_index", c.EndBlockIndex, false)
		w.str("url", c.URL, false)
		w.str("title", c.Title, false)
		w.str("encrypted_index", c.EncryptedIndex, false)
		w.str("source", c.Source, false)
		w.int("search_result_index", c.SearchResultIndex, false)
	}
	return append(w.b, '}'), nil
}

// citationWriter writes the members of a citation object.
type citationWriter struct {
	b    []byte
	more bool // a member was written
}

func (w *citationWriter) key(k string) {
	if w.more {
		w.b = append(w.b, ',')
	}
	w.more = true
	w.b = append(append(append(w.b, '"'), k...), '"', ':')
}

func (w *citationWriter) str(k, v string, always bool) {
	if v == "" && !always {
		return
	}
	w.key(k)
	s, _ := json.Marshal(v) // a string always marshals
	w.b = append(w.b, s...)
}

func (w *citationWriter) int(k string, v int, always bool) {
	if v == 0 && !always {
		return
	}
	w.key(k)
	w.b = strconv.AppendInt(w.b, int64(v), 10)
}
