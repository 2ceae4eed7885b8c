// Times pi's own session manager (@mariozechner/pi-coding-agent, the
// version package.json pins) on session files, for the side-by-side rows
// of docs/performance.md. Not part of any Go package; run it by hand:
//
//	npm ci && node --expose-gc bench.mjs open FILE [RUNS]
//	node --expose-gc bench.mjs list DIR [RUNS]
//
// open: SessionManager.open(FILE), then buildSessionContext(), as pi
// does when it resumes a session. list: SessionManager.list over DIR
// when it holds session files, else SessionManager.listAll over DIR as
// pi's sessions directory (its --cwd-- folders), as `pi --resume` lists.
// Each run is timed alone; the output is one JSON object: the median and
// every run in milliseconds, wall and processor time (user and system,
// every thread: on a shared machine it moves less with the load), the
// process's peak RSS, and its RSS and
// heap before the first run and after the last (the last run's result
// still held, after a collection when --expose-gc is given).
import { mkdtempSync, readdirSync, rmSync, statSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { SessionManager } from "@mariozechner/pi-coding-agent";

const [mode, target, runsArg] = process.argv.slice(2);
const runs = Number(runsArg ?? 6);
if (!["open", "list"].includes(mode) || !target || !(runs >= 1)) {
	console.error("usage: node --expose-gc bench.mjs open FILE [RUNS] | list DIR [RUNS]");
	process.exit(2);
}
const path = resolve(target);

const collect = () => globalThis.gc?.();
const mib = (n) => Math.round((n / (1 << 20)) * 10) / 10;

let op;
let agentDir; // a temporary pi agent directory whose sessions are DIR
if (mode === "open") {
	op = () => {
		const sm = SessionManager.open(path);
		const ctx = sm.buildSessionContext();
		return { sm, ctx, messages: ctx.messages.length };
	};
} else if (readdirSync(path).some((n) => n.endsWith(".jsonl"))) {
	op = async () => {
		const infos = await SessionManager.list(path, path);
		return { infos, sessions: infos.length };
	};
} else {
	agentDir = mkdtempSync(join(tmpdir(), "pi-agent-"));
	symlinkSync(path, join(agentDir, "sessions"));
	process.env.PI_CODING_AGENT_DIR = agentDir;
	op = async () => {
		const infos = await SessionManager.listAll();
		return { infos, sessions: infos.length };
	};
}

collect();
const before = process.memoryUsage();
const times = [];
const cpus = []; // processor time of the run, every thread of the process
let last;
for (let i = 0; i < runs; i++) {
	last = undefined;
	collect();
	const c = process.cpuUsage();
	const t = performance.now();
	last = await op();
	times.push(performance.now() - t);
	const u = process.cpuUsage(c);
	cpus.push((u.user + u.system) / 1000);
}
collect();
const after = process.memoryUsage();
const medianOf = (xs) => {
	const s = [...xs].sort((a, b) => a - b);
	return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const median = medianOf(times);
const out = {
	tool: "pi",
	version: JSON.parse(await import("node:fs").then((fs) => fs.readFileSync(new URL("./node_modules/@mariozechner/pi-coding-agent/package.json", import.meta.url), "utf8"))).version,
	node: process.version,
	mode,
	path,
	bytes: mode === "open" ? statSync(path).size : undefined,
	runs,
	medianMs: Math.round(median * 100) / 100,
	runsMs: times.map((t) => Math.round(t * 100) / 100),
	medianCpuMs: Math.round(medianOf(cpus) * 100) / 100,
	runsCpuMs: cpus.map((t) => Math.round(t * 100) / 100),
	messages: last.messages,
	sessions: last.sessions,
	peakRssMiB: mib(process.resourceUsage().maxRSS * 1024),
	rssBeforeMiB: mib(before.rss),
	rssAfterMiB: mib(after.rss),
	heapBeforeMiB: mib(before.heapUsed),
	heapAfterMiB: mib(after.heapUsed),
	collected: typeof globalThis.gc === "function",
};
console.log(JSON.stringify(out));
if (agentDir) rmSync(agentDir, { recursive: true, force: true });
