// Package langchaingo keeps langchaingo's chat history in an agentsession
// session: ChatMessageHistory implements schema.ChatMessageHistory of
// github.com/tmc/langchaingo over any session.Store (MemoryStore,
// FileStore in pi's JSONL format, pgstore's PostgreSQL), beside
// langchaingo's own backends (memory/sqlite3, mongo, zep ...). Hand it to
// a langchaingo memory:
//
//	store, _ := session.OpenFileStore(dir, nil)
//	h, _ := langchaingo.New(ctx, store, "support-42")
//	defer h.Close()
//	mem := memory.NewConversationBuffer(memory.WithChatHistory(h))
//
// It is a module of its own (github.com/agentsession/session/integrations/langchaingo),
// so that the root module does not depend on langchaingo. It imports
// langchaingo's llms and schema packages only.
//
// # The history is the path to the leaf
//
// Messages returns the messages of the session's context at its leaf
// (session.Context.Messages, as appended: tool pairing is not repaired,
// unlike Session.Messages), and AddMessage appends under the leaf. A
// session written by an agent (pi, oh-my-pi, or a host of this library)
// reads as a history too, and a history written here opens in those
// agents.
//
// # Clear and SetMessages delete nothing
//
// Clear moves the session's leaf before its first entry
// (Session.Branch(ctx, "")): the history is empty, and the next message
// starts a new branch from the root. SetMessages does the same and
// appends the given messages there in one write (all or nothing; when it
// fails the leaf goes back where it was). In both cases the earlier
// history stays in the session's tree, off the path: Session().Leaves()
// lists the ends of its branches, Session().Branch(ctx, id) moves the
// leaf back to one (restoring that history, which then goes on from
// there), and ContextAt, Fork and the export package read any of them.
// Only session.DeleteSession (or Prune, for what a compaction made
// unnecessary) removes anything. This is unlike langchaingo's own stores,
// whose Clear and SetMessages delete rows.
//
// # Messages
//
// Each langchaingo message is one message entry. The mapping, both ways:
//
//	llms type             session message
//	HumanChatMessage      role user, one text block
//	AIChatMessage         role assistant: a thinking block (ReasoningContent),
//	                      a text block (Content), a toolCall block per ToolCall
//	ToolChatMessage       role toolResult (ToolCallID; ToolName from its call),
//	                      when it answers a call awaiting one; else custom (below)
//	SystemChatMessage     role custom, customType "langchaingo", details {"type":"system"}
//	GenericChatMessage    role custom, details {"type":"generic","role":...,"name":...}
//	FunctionChatMessage   role custom, details {"type":"function","name":...}
//
// Content goes in the message's content as text; empty texts and
// thinking are left out, and come back empty. The seed format has no
// system, generic or function role, so those are custom messages
// (customType CustomType, display true): the agents show them and send
// them to their model as user content. Their details name the
// langchaingo type and hold the fields with no other home:
// {"type", "role", "name", "tool_call_id"} (empty ones omitted).
//
// A tool call block holds the call's id, function name and arguments.
// What it cannot hold as it is stays in its Extra under ExtraKey, the
// llms.ToolCall whole, as {"id","type","function":{"name","arguments"}}
// (no function member for a nil FunctionCall): a Type other than
// "function", a nil FunctionCall, or arguments that are not a compact
// JSON object (the block then holds them compacted, or {} when they are
// not an object). The deprecated AIChatMessage.FunctionCall goes in the
// assistant message's Extra, as {"function_call":{...}} under ExtraKey.
//
// # Tool results without their call
//
// A session refuses a tool result that answers no call of the last
// assistant message awaiting one (session.ErrUnpairedToolResult): one
// whose call is unknown, answered already, or left behind by a message
// that came after it (a custom message does not leave calls behind: a
// system message between a call and its result keeps them paired).
// Such a ToolChatMessage is not lost: it is stored as a custom message
// with details {"type":"tool","tool_call_id":...}, and Messages gives it
// back as the ToolChatMessage that was added. A model never sees it as a
// tool result, so it can never break the pairing an API requires.
//
// # What comes back
//
// Every message added comes back from Messages as the llms value that
// was added, through a FileStore and a reopen too, with these
// normalizations: a pointer to an llms message comes back as the value;
// an empty ToolCalls slice comes back nil; another implementation of
// llms.ChatMessage comes back as the llms type of its GetType, with its
// GetContent (and GetName, GetID where it has them), and one of a type
// langchaingo does not define as a GenericChatMessage whose Role is that
// type. Strings are stored as JSON text, so invalid UTF-8 comes back
// with U+FFFD in its place. Stores apply their limits
// (FileStoreOptions.MaxStringChars cuts strings longer than 500,000
// characters by default, in the file: the handle that appended them
// keeps them whole until the session is opened again).
//
// Messages that other agents wrote come back as text: a user message
// as a HumanChatMessage of its text blocks (images are left out), an
// assistant message as an AIChatMessage (text, thinking and tool
// calls), a tool result as a ToolChatMessage, a custom message of
// another customType as a GenericChatMessage with Role "custom" and Name
// its customType, and bash executions, branch summaries and compaction
// summaries as GenericChatMessages whose Role is the session role
// ("bashExecution", "branchSummary", "compactionSummary") and Content
// the text Message.Text gives.
//
// # Cost
//
// The history keeps the converted messages at the leaf and adds to them
// as it appends, so Messages costs a copy of the list, not a rebuild of
// the context; it rebuilds it once when the leaf moved some other way
// (a write through the session itself, a compaction, SetMessages).
// AddMessage costs one append to the store.
//
// # Durability
//
// AddMessage returns once the store has the message. A FileStore with
// its default SyncPolicy (SyncOnFlush) has written it to the file, so a
// crash of the process loses nothing; Flush (and Close) make it survive
// a crash of the machine too. Close the history to close the session
// New opened.
package langchaingo
