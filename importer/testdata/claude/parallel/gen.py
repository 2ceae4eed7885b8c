#!/usr/bin/env python3
"""Writes the Claude Code 2.1 parallel-tool-call transcript of
importer/claude_parallel_test.go.

Run from this directory: python3 gen.py. The file is committed; this
script documents how it was made.

Its shape is that of a genuine transcript Claude Code 2.1.39 wrote, the
first 33 lines of test/fixtures/transcripts/4d5611e5-241a-462a-8d15-5122611a9569.jsonl
of https://github.com/marot/spotter (commit 53a088d2): the same line
types, uuids, parentUuids, message ids, tool ids, timestamps and line
members, in the same order. Only the texts are ours (shortened): the
prompt, the tool outputs, the hook commands. The last line's uuid is
made up (the shape kept: a tool result hanging from its call's line).

What it holds: two parallel Bash calls of one API message
(msg_01PdWvcjJ6E9BgscDveYt9YV) written as four assistant lines (text,
thinking, tool_use, tool_use), PreToolUse / PostToolUse hook progress
lines in the parentUuid chain between them, the first call's
tool_result hanging from the first tool_use line
(sourceToolAssistantUUID), hook lines of the second call hanging from
that result, and the second call's result hanging from the second
tool_use line; then a third call, its hook lines, and its result.
"""
import json

S = "4d5611e5-241a-462a-8d15-5122611a9569"
base = {"isSidechain": False, "userType": "external", "cwd": "/home/USER/projects/spotter-worktrees/spotter-dov",
        "sessionId": S, "version": "2.1.39", "gitBranch": "spotter-dov"}
L = []


def snapshot(mid, ts):
    L.append({"type": "file-history-snapshot", "messageId": mid,
              "snapshot": {"messageId": mid, "trackedFileBackups": {}, "timestamp": ts}, "isSnapshotUpdate": False})


def prog(uuid, parent, hook, name, tool, ts, command):
    L.append({"parentUuid": parent, **base, "type": "progress",
              "data": {"type": "hook_progress", "hookEvent": hook, "hookName": name, "command": command},
              "parentToolUseID": tool, "toolUseID": tool, "timestamp": ts, "uuid": uuid})


def usage(inp, create, read, out):
    return {"input_tokens": inp, "cache_creation_input_tokens": create, "cache_read_input_tokens": read,
            "cache_creation": {"ephemeral_5m_input_tokens": create, "ephemeral_1h_input_tokens": 0},
            "output_tokens": out, "service_tier": "standard", "inference_geo": "global"}


def asst(uuid, parent, mid, block, ts, req, u):
    L.append({"parentUuid": parent, **base,
              "message": {"model": "claude-opus-4-6", "id": mid, "type": "message", "role": "assistant",
                          "content": [block], "stop_reason": None, "stop_sequence": None, "usage": u},
              "requestId": req, "type": "assistant", "uuid": uuid, "timestamp": ts})


def bash(tid, command, description):
    return {"type": "tool_use", "id": tid, "name": "Bash",
            "input": {"command": command, "description": description}, "caller": {"type": "direct"}}


def result(uuid, parent, tid, text, ts):
    L.append({"parentUuid": parent, **base, "type": "user",
              "message": {"role": "user", "content": [{"tool_use_id": tid, "type": "tool_result", "content": text, "is_error": False}]},
              "uuid": uuid, "timestamp": ts,
              "toolUseResult": {"stdout": text, "stderr": "", "interrupted": False, "isImage": False, "noOutputExpected": False},
              "sourceToolAssistantUUID": parent})


def hooks(tool, ts, pre, post, start):
    """PreToolUse hooks (uuids pre), then PostToolUse ones (post) at ts[1]."""
    parent = start
    for i, u in enumerate(pre):
        prog(u, parent, "PreToolUse", "PreToolUse:Bash", tool, ts[0], f"pre-hook-{i + 1}.sh")
        parent = u
    for i, u in enumerate(post):
        prog(u, parent, "PostToolUse", "PostToolUse:Bash", tool, ts[1], f"post-hook-{i + 1}.sh")
        parent = u
    return parent


snapshot("f509a2e7-6a58-4e2f-a2f7-ee26c449b557", "2026-02-12T16:02:25.227Z")
snapshot("daa5a4bb-530c-4055-b20c-bde38255c99e", "2026-02-12T16:02:25.412Z")
parent = None
for i, (u, ts) in enumerate([("f2662c95-9973-4599-8e81-cbe3eb734169", "2026-02-12T16:02:23.545Z"),
                             ("6c180706-a97d-4042-9733-d48a531741b5", "2026-02-12T16:02:23.547Z"),
                             ("3d830ff1-fa94-486e-a2fd-1d36dd6a6e0d", "2026-02-12T16:02:23.547Z"),
                             ("953d9ada-2a29-4129-9270-da2633343246", "2026-02-12T16:02:23.547Z")]):
    prog(u, parent, "SessionStart", "SessionStart:startup", "9842053d-4881-4195-a03e-897cac2d4b75", ts, f"session-start-{i + 1}.sh")
    parent = u
L.append({"parentUuid": parent, **base, "type": "user",
          "message": {"role": "user", "content": "Work on the first issue: show it, and list what is ready."},
          "uuid": "daa5a4bb-530c-4055-b20c-bde38255c99e", "timestamp": "2026-02-12T16:02:25.284Z",
          "thinkingMetadata": {"maxThinkingTokens": 31999}, "todos": [], "permissionMode": "bypassPermissions"})
M, R = "msg_01PdWvcjJ6E9BgscDveYt9YV", "req_011CY4TRHLYkp2wmETF8ujUf"
U1 = usage(3, 15005, 11442, 9)
asst("cb6290e9-ebd3-4615-97c1-9fb77b4c5e99", "daa5a4bb-530c-4055-b20c-bde38255c99e", M, {"type": "text", "text": "\n\n"}, "2026-02-12T16:02:27.718Z", R, U1)
asst("0bf0da57-20f0-47e6-bf33-71919451e591", "cb6290e9-ebd3-4615-97c1-9fb77b4c5e99", M,
     {"type": "thinking", "thinking": "Show the issue and list the ready work.", "signature": "[REDACTED_SIGNATURE]"}, "2026-02-12T16:02:28.357Z", R, U1)
C1, C2, C3 = "toolu_01UwLnYYWGBvukzh1QE6JpfM", "toolu_01EqSqHoE2fyTCuK5BJ3azkA", "toolu_019EkNmfE4exE11xktmWLjkX"
A3 = "163aa85e-ffa2-4d73-8531-8b46d91dcdd3"
asst(A3, "0bf0da57-20f0-47e6-bf33-71919451e591", M, bash(C1, "bd show issue-1", "Show the issue"), "2026-02-12T16:02:29.111Z", R, U1)
tip = hooks(C1, ("2026-02-12T16:02:29.115Z", None),
            ["26560b6e-1d50-41e0-bd4f-5cbd0d889a7f", "f9510990-0a61-4abe-ac01-438afd00eff2",
             "4f0096c0-4c8f-4943-91ae-e5ec75228f42", "88735847-0da1-492f-88d8-977c36456fd4"], [], A3)
A4 = "b04b8ee3-6aa7-4ac5-81f4-7881f44b886e"
asst(A4, tip, M, bash(C2, "bd ready", "Find ready work"), "2026-02-12T16:02:29.673Z", R, U1)
hooks(C1, (None, "2026-02-12T16:02:30.660Z"), [],
      ["af7cd5dd-8def-41cd-aae0-6b8de99c1c81", "cf64f3b8-6b0c-4b5e-b384-4bb91036c8ff"], A4)
R1 = "e49c8775-5beb-4fd7-aeb3-2016ccb1e57b"
result(R1, A3, C1, "RESULT-OF-CALL-1: issue-1, an epic", "2026-02-12T16:02:30.658Z")
hooks(C2, ("2026-02-12T16:02:30.742Z", "2026-02-12T16:02:31.742Z"),
      ["e6210697-14dc-4a69-a854-0df0aca15c17", "b25e81a4-2226-4b70-a1ae-260aa6aa42dd",
       "0b283837-0c58-4a08-803a-76b618a0d944", "0de94e06-9c33-48e6-ac3d-eabcd07f722f"],
      ["dde73891-baba-44f3-ba62-233142f0a98b", "b9d28699-46eb-4b69-a4ae-bbc86a552b2d"], R1)
R2 = "51b2e9ce-05f7-4100-99c6-6f75c412111b"
result(R2, A4, C2, "RESULT-OF-CALL-2: 8 issues ready", "2026-02-12T16:02:31.740Z")
A5 = "93cd9884-145f-42c7-bcdb-df479a982660"
asst(A5, R2, "msg_01F98LhabVGJf4j2BdysxjKk", bash(C3, "bd show issue-1.1", "Show the first subtask"),
     "2026-02-12T16:02:34.480Z", "req_011CY4TRkatjpLrxzHVkeupQ", usage(1, 1598, 26447, 81))
hooks(C3, ("2026-02-12T16:02:34.483Z", "2026-02-12T16:02:35.410Z"),
      ["e83cf280-b630-400d-b912-8f794a5da769", "5a4760d1-b06a-48dc-bfda-1d4515c4f317",
       "9b123cd3-cfcb-40fd-b008-f76d65107467", "99f1029b-8f05-470e-9666-fd304e35f618"],
      ["524bccc1-9c7f-45c7-9218-143919cde444", "7b773b1e-2eeb-4913-9dfd-0dca9164732d"], A5)
result("2f0c0c0c-0000-4000-8000-000000000003", A5, C3, "RESULT-OF-CALL-3: issue-1.1, a task", "2026-02-12T16:02:35.409Z")

with open(f"{S}.jsonl", "w") as f:
    for d in L:
        f.write(json.dumps(d, separators=(",", ":"), ensure_ascii=False) + "\n")
