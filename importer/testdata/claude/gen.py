#!/usr/bin/env python3
"""Writes the Claude Code test transcripts of importer/claude_test.go.

Run from this directory: python3 gen.py. The files are committed; this
script documents how they were made (by hand, from the format notes in
importer/claude.go), so they can be changed and made again.
"""
import json, os

S = "5e55a1de-0000-4000-8000-000000000001"
DIR = "projects/-home-u-proj"
T0 = 1768035600  # 2026-01-10T09:00:00Z
clock = [0]

def ts():
    clock[0] += 1
    s = T0 + clock[0]
    import datetime
    return datetime.datetime.fromtimestamp(s, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (clock[0] * 7 % 1000)

def u(n):
    return "0000%04d-aaaa-4bbb-8ccc-%012d" % (n, n)

def base(uuid, parent, side=False, **kw):
    d = {"parentUuid": parent, "isSidechain": side, "userType": "external", "cwd": "/home/u/proj",
         "sessionId": S, "version": "2.0.14", "gitBranch": "main"}
    d.update(kw)
    d["uuid"] = uuid
    d["timestamp"] = ts()
    return d

def user(uuid, parent, content, side=False, **kw):
    d = base(uuid, parent, side, type="user", message={"role": "user", "content": content}, **kw)
    return d

def asst(uuid, parent, mid, blocks, stop=None, usage=None, side=False, model="claude-sonnet-4-5-20250929", **kw):
    msg = {"id": mid, "type": "message", "role": "assistant", "model": model, "content": blocks,
           "stop_reason": stop, "stop_sequence": None,
           "usage": usage or {"input_tokens": 10, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 1000, "output_tokens": 5, "service_tier": "standard"}}
    return base(uuid, parent, side, type="assistant", message=msg, requestId="req_" + mid[4:], **kw)

def result(tid, content, err=None):
    b = {"tool_use_id": tid, "type": "tool_result", "content": content}
    if err is not None:
        b["is_error"] = err
    return b

def dump(path, lines):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        for l in lines:
            f.write(l if isinstance(l, str) else json.dumps(l, separators=(",", ":"), ensure_ascii=False))
            f.write("\n")

usageA = lambda out: {"input_tokens": 3, "cache_creation_input_tokens": 200, "cache_read_input_tokens": 5000, "output_tokens": out}
main = [
    {"type": "file-history-snapshot", "messageId": u(1), "snapshot": {"messageId": u(1), "trackedFileBackups": {}, "timestamp": "2026-01-10T09:00:00.000Z"}, "isSnapshotUpdate": False},
    {"type": "summary", "summary": "Fix the login bug", "leafUuid": u(20)},
    {"type": "summary", "summary": "A branch of another file", "leafUuid": "ffffffff-ffff-4fff-8fff-ffffffffffff"},
    user(u(1), None, "Fix the login bug in auth.go"),
    # One API message over three lines (thinking, text, tool_use).
    asst(u(2), u(1), "msg_A", [{"type": "thinking", "thinking": "Read auth.go first.", "signature": "sig-A"}], usage=usageA(1)),
    asst(u(3), u(2), "msg_A", [{"type": "text", "text": "I'll read the file."}], usage=usageA(1)),
    asst(u(4), u(3), "msg_A", [{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "/home/u/proj/auth.go"}}], stop="tool_use", usage=usageA(40)),
    user(u(5), u(4), [result("toolu_1", "package auth\n\nfunc Login() {}\n")],
         toolUseResult={"type": "text", "file": {"filePath": "/home/u/proj/auth.go", "numLines": 3}}),
    # Two parallel calls in one line; tokens as a string.
    asst(u(6), u(5), "msg_B", [{"type": "text", "text": "Two checks."},
                                {"type": "tool_use", "id": "toolu_2", "name": "Bash", "input": {"command": "go test ./..."}},
                                {"type": "tool_use", "id": "toolu_3", "name": "Grep", "input": {"pattern": "Login"}},
                                {"type": "tool_use", "id": "toolu_5", "name": "Task", "input": {"description": "Explore", "prompt": "Explore the repository"}}],
         stop="tool_use", usage={"input_tokens": "12", "output_tokens": 30.0, "cache_read_input_tokens": 7000, "cache_creation_input_tokens": None}),
    # A 1.x sidechain (a Task subagent) written into the session's file.
    user(u(101), None, "Find the callers of Login", side=True),
    asst(u(102), u(101), "msg_S1", [{"type": "tool_use", "id": "toolu_s1", "name": "Grep", "input": {"pattern": "Login("}}], stop="tool_use", side=True),
    user(u(103), u(102), [result("toolu_s1", "main.go:9")], side=True),
    asst(u(104), u(103), "msg_S2", [{"type": "text", "text": "Two callers."}], stop="end_turn", side=True),
    user(u(7), u(6), [result("toolu_2", [{"type": "text", "text": "FAIL auth_test.go:12"}], True)], toolUseResult="Error: exit status 1"),
    user(u(8), u(7), [result("toolu_3", [{"type": "text", "text": "auth.go:3"}], False)]),
    # The Task call's result names the subagent (agent-a1b2c3d4.jsonl).
    user(u(24), u(8), [result("toolu_5", [{"type": "text", "text": "It is a Go module."}])],
         toolUseResult={"status": "completed", "agentId": "a1b2c3d4", "totalTokens": 120}),
    asst(u(9), u(24), "msg_C", [{"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"}, {"type": "text", "text": "The test fails at line 12."}], stop="end_turn"),
    # A branch: the reply first (out of order), then the prompt it answers.
    asst(u(11), u(10), "msg_D", [{"type": "text", "text": "I see the error dialog."}], stop="end_turn"),
    user(u(10), u(9), [{"type": "text", "text": "Here is a screenshot"},
                       {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]),
    # The prompt edited: a second child of u9.
    user(u(12), u(9), "Please fix it"),
    '{"type":"user","uuid":"broken","message":{"role":"user","content":"cut off',
    asst(u(13), u(12), "msg_E", [{"type": "tool_use", "id": "toolu_4", "name": "Edit", "input": {"file_path": "auth.go", "old_string": "a", "new_string": "b"}}]),
    user(u(14), u(13), [result("toolu_4", "ok")], toolUseResult={"filePath": "auth.go", "structuredPatch": []}),
    base(u(15), u(14), type="system", subtype="stop_hook_summary", hookCount=1, content="", level="info"),
    base(u(16), u(15), type="progress", data={"type": "hook_progress", "hookEvent": "Stop"}, toolUseID="t1", parentToolUseID="t1"),
    base(u(17), None, type="system", subtype="compact_boundary", content="Conversation compacted", level="info",
         logicalParentUuid=u(16), compactMetadata={"trigger": "auto", "preTokens": 15000}),
    user(u(18), u(17), "This session is being continued from a previous conversation that ran out of context. Summary: the login bug is fixed in auth.go.",
         isCompactSummary=True, isVisibleInTranscriptOnly=True),
    user(u(19), u(18), "Now add a test"),
    None,  # the line above, written twice
    asst(u(21), u(19), "msg_err", [{"type": "text", "text": "API Error: 529 overloaded"}], stop="stop_sequence", model="<synthetic>", isApiErrorMessage=True),
    user(u(22), "deadbeef-0000-4000-8000-00000000dead", "a line whose parent is not in the file"),
    asst(u(20), u(19), "msg_F", [{"type": "text", "text": "Added auth_test.go."}], stop="end_turn"),
    {"type": "queue-operation", "operation": "enqueue", "content": "later", "sessionId": S, "timestamp": "2026-01-10T09:01:00.000Z"},
    {"type": "mystery-record", "sessionId": S, "foo": [1, 2]},
    {"type": "custom-title", "customTitle": "Login bug", "sessionId": S},
]
i = main.index(None)
main[i] = main[i - 1]
dump(f"{DIR}/{S}.jsonl", main)

# A 2.0 subagent file beside the session.
clock[0] = 200
agent = [
    user(u(201), None, "Explore the repository", side=True, agentId="a1b2c3d4"),
    asst(u(202), u(201), "msg_X", [{"type": "text", "text": "It is a Go module."}], stop="end_turn", side=True, agentId="a1b2c3d4"),
]
dump(f"{DIR}/agent-a1b2c3d4.jsonl", agent)

# A 2.1 subagent in <session>/subagents/, with its meta.json.
clock[0] = 300
sub = [
    user(u(301), None, "Write tests for Login", side=True, agentId="e5f6a7b8"),
    asst(u(302), u(301), "msg_Y", [{"type": "thinking", "thinking": "Table test.", "signature": "s"}, {"type": "text", "text": "Wrote them."}], stop="end_turn", side=True, agentId="e5f6a7b8"),
]
dump(f"{DIR}/{S}/subagents/agent-e5f6a7b8.jsonl", sub)
with open(f"{DIR}/{S}/subagents/agent-e5f6a7b8.meta.json", "w") as f:
    json.dump({"agentType": "general-purpose", "description": "Write auth tests", "toolUseId": "toolu_9"}, f)
    f.write("\n")
