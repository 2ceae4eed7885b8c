// Package openai converts a session's messages to the request body of
// OpenAI's Chat Completions API (POST /v1/chat/completions), as plain Go
// structs that marshal to the wire JSON, and the API's responses back to
// the message a session saves (see Responses below). It has no SDK
// dependency and makes no network calls. The many servers that speak
// this API (vLLM, Ollama, OpenRouter, DeepSeek, ...) take and give the
// same shapes.
//
// Give it what Session.Messages returns, which is pairing-safe: every tool
// result follows its call and every call has a result. The conversion then
// follows the API's rules:
//
//   - Roles: Options.System, when set, comes first as a "system" (or
//     Options.SystemRole) message. A system message of the session
//     (Message.Role "system") is sent with that role too, at its place in
//     the conversation, its text blocks joined by newlines (images left
//     out: the role takes text only; a blank one is left out). User and
//     assistant messages keep their
//     role; an assistant's tool calls become tool_calls of type "function"
//     with the arguments as a JSON string; each tool result becomes a
//     "tool" message with its tool_call_id. Compaction and branch
//     summaries, bash executions and custom messages become user messages
//     (see session.UserContent).
//   - Replies that ended in an error or were aborted (StopReason "error"
//     or "aborted", as the pi agent writes them) are not sent, as pi's own
//     converter does not send them: they may stop anywhere, and the retry
//     that usually follows is the reply that counts. The results of their
//     calls are left out with them. More generally, a tool result that
//     answers no call awaiting one (of a reply not sent, answered already,
//     or of no call) is left out, with its images.
//   - Images: user content with an image is sent as parts, the image as a
//     data: URL. Tool messages take text only, so the images of tool
//     results are sent in one user message right after the results of
//     their turn (never between two tool messages, which the API rejects),
//     and each result with images says so in its text.
//   - Content beyond pi's: a document block goes as a file part (its data
//     as file_data, a data: URL, with its file name; or its file id), a
//     text document's text and a URL document's URL as text, which is all
//     Chat Completions takes of them; an audio block as an input_audio
//     part ("wav", or "mp3" for audio/mpeg). In a tool result they go,
//     with its images, to the user message after the results ("Files
//     returned by ..."). A refusal block of an assistant message goes as
//     its refusal member. Citations and redacted thinking are left out.
//   - Thinking: the API has no way to send reasoning back, so thinking is
//     dropped by default. Options.Thinking can send it as text, or in the
//     reasoning_content member that some compatible servers read. Either
//     way, thinking that nothing of its reply follows (no text that is not
//     blank, no tool call: a reply cut short) is not sent, so a reply never
//     ends on thinking, and one that had nothing else is left out.
//   - Tool call ids longer than the API's 40 bytes, with bytes other than
//     [A-Za-z0-9_-], or used by an earlier call of the request, are
//     rewritten, the same way in the call and its result.
//   - A tool message has no error flag, so a failed tool's output starts
//     with "Error: ".
//   - Calls that Session.Messages leaves pending at the end (the agent is
//     about to run them) but that the host followed with another message
//     get an error result, as Messages gives to calls of aborted turns.
//   - Empty text is left out, and so is an assistant message left with
//     neither text nor tool calls. Tool arguments that are not a JSON
//     object are sent as "{}".
//
// # Responses
//
// MessageFromResponse converts a response (Response decodes its JSON) to
// the assistant message a session saves; a Stream accumulates the chunks
// of a streamed response (Add the data of each server-sent event, then
// Message). Both convert the choice of index 0, and map it as pi's own
// Chat Completions provider does, so that a session reads the same
// whichever of them wrote it:
//
//   - Content, in this order: the reasoning, as a thinking block, from
//     the first of reasoning_content, reasoning and reasoning_text that is
//     not empty (members of compatible servers, not of OpenAI), the
//     member's name kept as the block's signature, as pi keeps it, so that
//     pi sends it back in the same member; the content, as a text block;
//     each tool call of type function as a toolCall with its id, name and
//     arguments, a JSON object (in a stream, the pieces of each call
//     joined by their index). Custom tool calls, the deprecated
//     function_call, annotations and OpenRouter's reasoning_details are
//     left out.
//   - Usage: CacheRead is prompt_tokens_details.cached_tokens, else
//     DeepSeek's prompt_cache_hit_tokens, else Kimi's cached_tokens (the
//     first that is there, even 0); CacheWrite OpenRouter's
//     prompt_tokens_details.cache_write_tokens; Input the rest of
//     prompt_tokens (prompt_tokens - CacheRead - CacheWrite, never below
//     zero); Output completion_tokens, which includes the reasoning
//     tokens; TotalTokens the sum of the four. In a stream the usage comes
//     in a chunk of its own after the finish_reason, when the request asks
//     for it (stream_options.include_usage); without it, the usage is
//     zero. Cost is zero unless ResponseOptions.Prices is set; it is then
//     computed as pi computes it. Besides pi's counters, the details go
//     in fields of their own, written only when not zero:
//     ReasoningTokens is completion_tokens_details.reasoning_tokens,
//     InputAudioTokens and OutputAudioTokens the audio_tokens of the
//     prompt and of the completion, AcceptedPredictionTokens and
//     RejectedPredictionTokens those of completion_tokens_details, and
//     ServiceTier the response's service_tier.
//   - Stop reason: stop (and "end") becomes "stop"; length "length";
//     tool_calls and function_call "toolUse"; content_filter and any
//     other "error", with "Provider finish_reason: <reason>" as
//     ErrorMessage, as pi writes it (so z.ai's
//     model_context_window_exceeded is an error that pi's check for a
//     context overflow recognizes).
//   - API is "openai-completions" (API), Provider ResponseOptions.Provider
//     or "openai", Model the model the host asked for
//     (ResponseOptions.Model) or else the one the response names. The
//     response's id is kept in the message's member responseId, and a
//     served model that differs from the one asked for in responseModel,
//     where pi keeps them (Message.Extra). Timestamp stays zero: the
//     session sets it when the message is saved (pi records the request's
//     start: set it for that).
//
// Three choices go beyond what pi does, for servers it has flags for:
// a reply with tool calls whose finish_reason is "stop" or missing
// stops for its calls ("toolUse"), as pi decides for the Responses API;
// a stream that ends with [DONE] but no finish_reason is complete, its
// stop reason taken from its content the same way (pi fails it unless
// the model is flagged as sending none); and a refusal (the message's
// refusal member, which pi ignores) makes the reply a failed one,
// StopReason "error" with the refusal's text as ErrorMessage, as pi does
// for Anthropic's refusals, and is kept as a refusal block
// (session.Refusal), which pi leaves out of its requests.
//
// A response the conversion cannot take whole gives an error and, still,
// a message: a failed reply, StopReason "error" and the error's text as
// ErrorMessage, holding what came, which the host may save as pi saves
// its failed replies (Messages never sends them back) or drop before it
// retries. The errors are an *APIError for an error a server sends in a
// stream, ErrTruncated for a stream that ended with neither a
// finish_reason nor [DONE] (with pi's text, "Stream ended without
// finish_reason"), and ErrMalformed for data the API does not send (JSON
// that does not decode, no choices, tool arguments that are not a JSON
// object: Response holds them as they came, for a host that wants to
// repair them and convert again).
//
// # Responses API requests
//
// Input converts the same messages to the input items of OpenAI's
// Responses API (POST /v1/responses; ResponsesRequest is its body), with
// the same rules (roles, replies left out, pairing, ids, empty text,
// pending calls, error results), and these of its own:
//
//   - Items: a user message becomes a "message" item of role user, its
//     text as input_text parts and its images as input_image parts (a
//     data: URL, detail "auto"); a system message (and Options.System)
//     a message of ResponsesOptions.SystemRole ("system" or
//     "developer"). An assistant reply becomes its items in the order of
//     its blocks: each run of text an assistant message of output_text
//     parts, each tool call a "function_call" item (call_id, name,
//     arguments as a JSON string), each thinking block that carries a
//     reasoning item a "reasoning" item. A tool result becomes a
//     "function_call_output" item: its text as the output string, or,
//     when it has images or documents, its text and those as parts of
//     the output, which the API takes there (no user message is needed
//     for them). A document becomes an input_file part (file_id,
//     file_data with its file name, or file_url; a text document an
//     input_text part), a refusal block of an assistant reply a refusal
//     part of its message; audio, which the input does not take, is left
//     out.
//     A failed tool's output starts with "Error: ": the item has no
//     error flag.
//   - Reasoning: MessageFromResponses keeps each reasoning output item,
//     as pi does, as a thinking block whose text is the item's summary
//     and whose signature (ThinkingSignature) is the item's JSON, with
//     its id, summary and encrypted_content. Input sends it back as a
//     reasoning item (summary and encrypted_content) when the reply is
//     the Responses API's (Message.API is ResponsesAPI) and of the
//     request's model (ResponsesOptions.Model, when set; an alias matches
//     its dated ids) and the item has encrypted content; ask for it with
//     include ["reasoning.encrypted_content"] (IncludeReasoning) and
//     store false, and the model keeps its reasoning from turn to turn
//     with nothing stored at OpenAI. Reasoning that nothing of its reply
//     follows is not sent, nor, in any mode, reasoning of another API or
//     model: it is dropped, or sent as output_text in <thinking> tags
//     with ResponsesOptions.ThinkingAsText.
//   - Item ids (rs_..., msg_..., fc_...) are not sent, as OpenAI's own
//     Codex client does not send them: with store false an id names an
//     item OpenAI does not have, and a function call's id ties it to the
//     reasoning item before it, which the API then requires. InputItem.ID
//     is there for hosts that build items by hand.
//   - Tool call ids: a call keeps the call_id part of pi's
//     "call_id|item_id" ids (what MessageFromResponses writes), rewritten
//     like the Chat Completions ids when it is longer than the API's 64
//     bytes, has other bytes than [A-Za-z0-9_-], or was used before, the
//     same way in the call and its output.
//
// # Responses API responses
//
// MessageFromResponses converts a Responses API response
// (ResponsesResponse decodes its JSON) to the assistant message a session
// saves, mapped as pi's openai-responses provider maps it:
//
//   - Content, in the order of the output items: a reasoning item
//     becomes a thinking block (see above; its summary parts joined by
//     blank lines, or its reasoning_text parts when it has no summary);
//     a message its output_text as one text block, whose textSignature
//     member keeps the item's id and phase as pi writes it
//     ({"v":1,"id":...}); a function_call a toolCall whose id is
//     "call_id|id" and whose arguments are the JSON object of its
//     arguments. Other items (built-in tools' calls) are left out.
//   - Usage: CacheRead is input_tokens_details.cached_tokens; Input the
//     rest of input_tokens; Output output_tokens, which includes
//     output_tokens_details.reasoning_tokens (ReasoningTokens too);
//     TotalTokens their sum; ServiceTier the response's service_tier.
//     Cost as for Chat Completions (ResponseOptions.Prices).
//   - Stop reason: status completed becomes "stop", or "toolUse" when
//     the reply calls tools; incomplete "length" (max_output_tokens),
//     or "error" with "incomplete: <reason>" for another reason
//     (content_filter); failed "error", with "<code>: <message>" of the
//     error as ErrorMessage; a refusal "error", with its text, as for
//     Chat Completions (and a refusal block); any other status "error", "Provider status:
//     <status>". A response still in_progress or queued (background
//     mode) is an ErrTruncated error.
//   - API is "openai-responses" (ResponsesAPI); Provider, Model,
//     responseId and responseModel as for Chat Completions.
//
// Streaming of the Responses API (its typed server-sent events) is not
// converted: a host that streams collects the response of the
// response.completed event and converts that.
//
// # Marshalling
//
// The three request types (Request, ResponsesRequest and, in
// provider/anthropic, that package's Request) have an append-style
// marshaller, AppendJSON, which writes the bytes encoding/json writes
// (with HTML escaping off) about ten times as fast, into a buffer the
// host reuses; MarshalJSON returns the same bytes, so json.Marshal of a
// request gives exactly what encoding/json gives (it then escapes <, >
// and &, as it always does), only faster.
//
// It imports the session package and provider/internal/wire, never
// another provider package.
package openai
