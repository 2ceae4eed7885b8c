package main

// The codec tables: one per type, one line per JSON member, in the order
// the seed agents write the members (the encoding order, which is not the
// order of the struct's fields). Presence bits are given in this order.
//
// To add a member: add its field to the struct in message.go, add its line
// here where the seed agents write it, and run go generate in the module's
// root. This package's tests fail until the two agree and message_codec.go
// is what the tables generate.
//
// A Field's Type is its Go type, and says how the member is read, written,
// compared with zero, cloned and made canonical:
//
//	string, bool, int64    written when not zero, or when wanted: present when
//	                       decoded, or Required for a value built in Go
//	float64                the same; the canonical form refuses NaN and ±Inf
//	*int                   a JSON integer within int's range; written when not nil
//	json.RawMessage        any JSON value, kept verbatim; Default is written
//	                       for an empty one, Err is the error for an invalid one
//	*T, T                  a nested object whose type has a table here; a nil
//	                       *T that is wanted is written as a new T
//	[]Block                a list of blocks, or a JSON string (one text block)
//
// Size marks the members counted in the size estimated before encoding.
// What no table says is written by hand: which members a role or block
// type always has (requiredFor, blockRequired in message.go), and the
// readers and writers of the kinds above (message_json.go).

// Type is the codec table of one struct type.
type Type struct {
	Name     string  // the Go type
	Recv     string  // receiver name of its methods
	Prefix   string  // presence bits are named Prefix+Field.Go
	Bits     string  // type of the presence bits: the struct's has field
	Required string  // members written for a value built in Go (not decoded): a Go expression
	Size     int     // base of the encoded size estimate; 0 for none
	Canon    string  // a statement canonicalize also runs: unexported state decoding leaves zero
	Err      string  // what errors about its unknown members are prefixed with
	Fields   []Field // in encoding order
}

// Field is one member of a Type.
type Field struct {
	Go      string // Go field name
	Key     string // JSON key
	Type    string // Go type, which says how the member is coded (see above)
	Default string // json.RawMessage: the value written for an empty one
	Err     string // json.RawMessage: the error for an invalid value, a Go expression of err
	Size    bool   // counted in the size estimate
}

var tables = []*Type{
	{
		Name: "Message", Recv: "m", Prefix: "m", Bits: "uint32",
		Required: "requiredFor(m.Role)", Size: 256, Canon: "m.synthetic = false", Err: "message",
		Fields: []Field{
			{Go: "Role", Key: "role", Type: "string"},
			{Go: "ToolCallID", Key: "toolCallId", Type: "string"},
			{Go: "ToolName", Key: "toolName", Type: "string"},
			{Go: "Command", Key: "command", Type: "string", Size: true},
			{Go: "Output", Key: "output", Type: "string", Size: true},
			{Go: "ExitCode", Key: "exitCode", Type: "*int"},
			{Go: "Cancelled", Key: "cancelled", Type: "bool"},
			{Go: "Truncated", Key: "truncated", Type: "bool"},
			{Go: "FullOutputPath", Key: "fullOutputPath", Type: "string"},
			{Go: "CustomType", Key: "customType", Type: "string"},
			{Go: "Summary", Key: "summary", Type: "string", Size: true},
			{Go: "FromID", Key: "fromId", Type: "string"},
			{Go: "TokensBefore", Key: "tokensBefore", Type: "int64"},
			{Go: "Content", Key: "content", Type: "[]Block", Size: true},
			{Go: "Display", Key: "display", Type: "bool"},
			{Go: "Details", Key: "details", Type: "json.RawMessage", Default: "null", Size: true, Err: `fmt.Errorf("message details: %w", err)`},
			{Go: "IsError", Key: "isError", Type: "bool"},
			{Go: "API", Key: "api", Type: "string"},
			{Go: "Provider", Key: "provider", Type: "string"},
			{Go: "Model", Key: "model", Type: "string"},
			{Go: "Usage", Key: "usage", Type: "*Usage"},
			{Go: "StopReason", Key: "stopReason", Type: "string"},
			{Go: "Timestamp", Key: "timestamp", Type: "int64"},
			{Go: "ErrorMessage", Key: "errorMessage", Type: "string", Size: true},
			{Go: "ExcludeFromContext", Key: "excludeFromContext", Type: "bool"},
		},
	},
	{
		Name: "Block", Recv: "b", Prefix: "b", Bits: "uint16",
		Required: "blockRequired(b.Type)", Size: 48, Err: "block",
		Fields: []Field{
			{Go: "Type", Key: "type", Type: "string"},
			{Go: "Text", Key: "text", Type: "string", Size: true},
			{Go: "Thinking", Key: "thinking", Type: "string", Size: true},
			{Go: "ThinkingSignature", Key: "thinkingSignature", Type: "string", Size: true},
			{Go: "Redacted", Key: "redacted", Type: "bool"},
			{Go: "ID", Key: "id", Type: "string"},
			{Go: "Name", Key: "name", Type: "string"},
			{Go: "Arguments", Key: "arguments", Type: "json.RawMessage", Default: "{}", Size: true, Err: `fmt.Errorf("tool call %q arguments: %w", b.ID, err)`},
			{Go: "Data", Key: "data", Type: "string", Size: true},
			{Go: "MimeType", Key: "mimeType", Type: "string"},
			{Go: "URL", Key: "url", Type: "string"},
			{Go: "FileID", Key: "fileId", Type: "string"},
			{Go: "Filename", Key: "filename", Type: "string"},
			{Go: "Title", Key: "title", Type: "string", Size: true},
			{Go: "Context", Key: "context", Type: "string", Size: true},
			{Go: "Citations", Key: "citations", Type: "json.RawMessage", Default: "[]", Size: true, Err: `fmt.Errorf("block citations: %w", err)`},
		},
	},
	{
		// A Usage built in Go writes pi's members (see requiredFor); the
		// others only when not zero. oh-my-pi writes its members
		// (reasoningTokens, cttl, server) after cost.
		Name: "Usage", Recv: "u", Prefix: "u", Bits: "uint16",
		Required: "uInput | uOutput | uCacheRead | uCacheWrite | uTotalTokens | uCost", Err: "usage",
		Fields: []Field{
			{Go: "Input", Key: "input", Type: "int64"},
			{Go: "Output", Key: "output", Type: "int64"},
			{Go: "CacheRead", Key: "cacheRead", Type: "int64"},
			{Go: "CacheWrite", Key: "cacheWrite", Type: "int64"},
			{Go: "TotalTokens", Key: "totalTokens", Type: "int64"},
			{Go: "Cost", Key: "cost", Type: "Cost"},
			{Go: "ReasoningTokens", Key: "reasoningTokens", Type: "int64"},
			{Go: "CacheTTL", Key: "cttl", Type: "CacheTTL"},
			{Go: "Server", Key: "server", Type: "ServerToolUse"},
			{Go: "InputAudioTokens", Key: "inputAudioTokens", Type: "int64"},
			{Go: "OutputAudioTokens", Key: "outputAudioTokens", Type: "int64"},
			{Go: "AcceptedPredictionTokens", Key: "acceptedPredictionTokens", Type: "int64"},
			{Go: "RejectedPredictionTokens", Key: "rejectedPredictionTokens", Type: "int64"},
			{Go: "ServiceTier", Key: "serviceTier", Type: "string"},
		},
	},
	{
		// Members written only when not zero, as oh-my-pi writes them.
		Name: "CacheTTL", Recv: "t", Prefix: "t", Bits: "uint8",
		Required: "0", Err: "usage cttl",
		Fields: []Field{
			{Go: "Ephemeral5m", Key: "ephemeral5m", Type: "int64"},
			{Go: "Ephemeral1h", Key: "ephemeral1h", Type: "int64"},
		},
	},
	{
		// Members written only when not zero, as oh-my-pi writes them.
		Name: "ServerToolUse", Recv: "w", Prefix: "s", Bits: "uint8",
		Required: "0", Err: "usage server",
		Fields: []Field{
			{Go: "WebSearch", Key: "webSearch", Type: "int64"},
			{Go: "WebFetch", Key: "webFetch", Type: "int64"},
		},
	},
	{
		// A Cost built in Go writes every member.
		Name: "Cost", Recv: "k", Prefix: "c", Bits: "uint8",
		Required: "0xFF", Err: "cost",
		Fields: []Field{
			{Go: "Input", Key: "input", Type: "float64"},
			{Go: "Output", Key: "output", Type: "float64"},
			{Go: "CacheRead", Key: "cacheRead", Type: "float64"},
			{Go: "CacheWrite", Key: "cacheWrite", Type: "float64"},
			{Go: "Total", Key: "total", Type: "float64"},
		},
	},
}
