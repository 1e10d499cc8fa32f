import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { execFileSync } from "node:child_process";
import {
	activity,
	anyChildRunning,
	cheapestFirst,
	configPath,
	configTempPath,
	DEFAULT_SUMMARY_CONFIG,
	idleDelayMs,
	isRecapEntryData,
	readSummaryConfig,
	modelLabel,
	onActivity,
	RecapAborted,
	RecapController,
	reportActivity,
	RunBoundary,
	MAX_RUN_STARTS,
	saveSummaryConfig,
	STATUS_TEXT,
	SummaryError,
	summarizeRun,
	toggleRecaps,
	realTimers,
	type Prepared,
	type RecapEntryData,
	type RecapHost,
	type SummaryConfig,
	type Timers,
	type Verdict,
	sentence,
} from "./recap-logic.ts";
import { echo } from "./sink.ts";

test("idleDelayMs: default 180 s, floor 30 s, invalid gives the default", () => {
	assert.equal(idleDelayMs({}), 180_000);
	assert.equal(idleDelayMs({ PI_SUMMARY_IDLE_MS: "45000" }), 45_000);
	assert.equal(idleDelayMs({ PI_SUMMARY_IDLE_MS: "1000" }), 30_000);
	for (const bad of ["", "abc", "-5", "0", "1.5", "1e5", "99999999999999999999"]) {
		assert.equal(idleDelayMs({ PI_SUMMARY_IDLE_MS: bad }), 180_000, bad);
	}
});

// saved reads back what saveSummaryConfig wrote (the engine reads the
// config for real: recap/config.go).
function saved(file: string): SummaryConfig {
	return fs.existsSync(file) && fs.statSync(file).isFile() ? JSON.parse(fs.readFileSync(file, "utf8")) : { ...DEFAULT_SUMMARY_CONFIG };
}

test("readSummaryConfig: the engine's answer; without one, or with a broken one, recaps are off for now", async () => {
	const asked: unknown[] = [];
	const answer = { config: { enabled: false, provider: "p", model: "m", reasoning: "low" }, notice: "c.json:1:2: field \"enabeld\": ..." };
	const ask = (async (method: string, params: unknown) => {
		asked.push([method, params]);
		return { result: answer };
	}) as any;
	assert.deepEqual(await readSummaryConfig(ask, "/a/summaries/config.private.json"), answer);
	assert.deepEqual(asked, [["recap.config", { path: "/a/summaries/config.private.json" }]]);
	for (const none of [undefined, { result: null }, { result: { config: { enabled: "yes" } } }]) {
		const got = await readSummaryConfig((async () => none) as any, "/f");
		assert.deepEqual(got, { config: { ...DEFAULT_SUMMARY_CONFIG, enabled: false }, unavailable: true }, JSON.stringify(none));
	}
});

test("config file: 0600 in a 0700 directory, atomic, abortable", async () => {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), "recap-config-"));
	try {
		const file = configPath(path.join(dir, "agent"));
		assert.equal(file, path.join(dir, "agent", "summaries", "config.private.json"));
		const cfg: SummaryConfig = { enabled: false, provider: "p", model: "m", reasoning: "low" };
		await saveSummaryConfig(file, cfg);
		assert.deepEqual(saved(file), cfg);
		assert.equal(fs.statSync(file).mode & 0o777, 0o600);
		assert.equal(fs.statSync(path.dirname(file)).mode & 0o777, 0o700);
		assert.deepEqual(fs.readdirSync(path.dirname(file)), ["config.private.json"]);
		fs.writeFileSync(file, "{not json");
		const ac = new AbortController();
		ac.abort();
		await assert.rejects(saveSummaryConfig(file, cfg, { signal: ac.signal }));
		assert.equal(fs.readFileSync(file, "utf8"), "{not json", "an aborted save leaves the file");
		assert.deepEqual(fs.readdirSync(path.dirname(file)), ["config.private.json"]);
	} finally {
		fs.rmSync(dir, { recursive: true, force: true });
	}
});

// blockedSave is a config directory whose next save cannot finish: a FIFO
// without a reader holds the name of this process's temporary file, so the
// save's open waits, as on a file system that stopped answering. release
// opens the FIFO's other end, which lets the abandoned write run on (and
// lets the test process exit).
function blockedSave() {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), "recap-config-"));
	const file = configPath(path.join(dir, "agent"));
	fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
	const before = '{"enabled": true, "provider": "p", "model": "m", "reasoning": "low"}\n';
	fs.writeFileSync(file, before, { mode: 0o600 });
	const fifo = configTempPath(file);
	execFileSync("mkfifo", ["-m", "600", fifo]);
	const release = async () => {
		let fd: number | undefined;
		try {
			fd = fs.openSync(fifo, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
		} catch {
			return; // the FIFO is gone
		}
		try {
			// The abandoned write ends by removing its temporary file (or,
			// were it wrong, by renaming it over the config).
			for (let i = 0; i < 200 && fs.existsSync(fifo); i++) await new Promise((r) => setTimeout(r, 10));
		} finally {
			fs.closeSync(fd);
		}
	};
	// config reads the config file, without blocking on a FIFO renamed
	// over it.
	const config = () => (fs.lstatSync(file).isFile() ? fs.readFileSync(file, "utf8") : `not a file: ${fs.lstatSync(file).mode.toString(8)}`);
	return { dir, file, before, release, config };
}

// within fails when p has not settled after ms: a save that hangs makes
// the test fail, not the whole run.
function within<T>(p: Promise<T>, ms: number): Promise<T> {
	let timer: NodeJS.Timeout;
	const guard = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`still pending after ${ms} ms`)), ms)));
	return Promise.race([p, guard]).finally(() => clearTimeout(timer));
}

test("config save: a write that cannot finish in time fails with the timeout and leaves the previous file", async () => {
	const b = blockedSave();
	try {
		const cfg: SummaryConfig = { enabled: false, provider: "q", model: "n", reasoning: "off" };
		await assert.rejects(within(saveSummaryConfig(b.file, cfg, { timeoutMs: 100 }), 10_000), (e: Error) => {
			assert.equal(e.message, `recap: saving ${b.file} did not finish within 0.1 s`);
			return true;
		});
		assert.equal(b.config(), b.before);
		await b.release();
		assert.equal(b.config(), b.before, "the abandoned write never renames over the config");
		assert.deepEqual(fs.readdirSync(path.dirname(b.file)), ["config.private.json"]);
		await saveSummaryConfig(b.file, cfg); // the next save works
		assert.deepEqual(saved(b.file), cfg);
	} finally {
		await b.release();
		fs.rmSync(b.dir, { recursive: true, force: true });
	}
});

test("config save: an abort stops a write that hangs, and the previous file stays", async () => {
	const b = blockedSave();
	try {
		const ac = new AbortController();
		const saving = within(saveSummaryConfig(b.file, { ...DEFAULT_SUMMARY_CONFIG, enabled: false }, { signal: ac.signal }), 10_000);
		setTimeout(() => ac.abort(), 50);
		await assert.rejects(saving, (e: Error) => e.name === "AbortError");
		await b.release();
		assert.equal(b.config(), b.before);
		assert.deepEqual(fs.readdirSync(path.dirname(b.file)), ["config.private.json"]);
	} finally {
		await b.release();
		fs.rmSync(b.dir, { recursive: true, force: true });
	}
});

test("RunBoundary: the first begin is the baseline, later ones the starts of later runs; a null leaf is a baseline too", () => {
	const b = new RunBoundary();
	assert.equal(b.pending(), false);
	b.begin("a");
	b.begin("b");
	b.begin("b"); // the same leaf again starts no new run
	b.begin("c");
	assert.equal(b.baseline(), "a");
	assert.deepEqual(b.starts(), ["b", "c"]);
	b.clear();
	assert.deepEqual(b.starts(), []);
	b.begin(null);
	assert.equal(b.pending(), true);
	assert.equal(b.baseline(), null);
	b.begin("x");
	assert.deepEqual(b.starts(), ["x"]);
	b.clear();
	for (let i = 0; i <= MAX_RUN_STARTS + 1; i++) b.begin(`r${i}`);
	assert.equal(b.baseline(), "r0");
	assert.equal(b.starts().length, MAX_RUN_STARTS);
	assert.equal(b.starts()[MAX_RUN_STARTS - 1], `r${MAX_RUN_STARTS + 1}`, "the latest starts are kept");
});

test("activity: children report running and settled; listeners hear changes", () => {
	const a = { running: new Map(), listeners: new Set<() => void>() };
	let calls = 0;
	const off = onActivity(() => calls++, a);
	const t1 = {}, t2 = {};
	reportActivity(t1, true, a);
	reportActivity(t1, true, a);
	reportActivity(t2, true, a);
	assert.equal(anyChildRunning(a), true);
	reportActivity(t1, false, a);
	assert.equal(anyChildRunning(a), true);
	reportActivity(t2, false, a);
	assert.equal(anyChildRunning(a), false);
	assert.equal(calls, 4);
	off();
	reportActivity(t1, true, a);
	assert.equal(calls, 4);
	assert.equal(activity({} as any).running.size, 0);
});

// manual timers: nothing runs until the test says so.
function manualTimers() {
	let next = 1;
	const pending = new Map<number, { fn: () => void; ms: number }>();
	const timers: Timers = {
		set: (fn, ms) => {
			const id = next++;
			pending.set(id, { fn, ms });
			return id;
		},
		clear: (h) => pending.delete(h as number),
	};
	const fireAll = () => {
		const all = [...pending.entries()];
		pending.clear();
		for (const [, t] of all) t.fn();
	};
	return { timers, pending, fireAll };
}

const prepared = (over: Partial<Prepared> = {}): Prepared => ({
	systemPrompt: "sys",
	userMessage: "<recent_work>\nUSER: hi\n</recent_work>",
	empty: false,
	gone: false,
	leafId: "leaf",
	entries: 2,
	transcriptBytes: 20,
	cut: false,
	redactions: 0,
	fallback: { recap: "1 tool call (`bash`).", next: "Read it." },
	...over,
});

function fakeHost(over: Partial<RecapHost> = {}) {
	const log = {
		prepares: [] as { leafId: string; after: string | null; starts?: string[] }[],
		appended: [] as RecapEntryData[],
		status: [] as (string | undefined)[],
		warnings: [] as string[],
		begun: 0,
		ended: 0,
	};
	const state = { idle: true, pendingMessages: false, child: false, busy: false, leaf: "L1" as string | null, config: { ...DEFAULT_SUMMARY_CONFIG, provider: "p", model: "m" } as SummaryConfig };
	const host: RecapHost = {
		isIdle: () => state.idle,
		hasPendingMessages: () => state.pendingMessages,
		leafId: () => state.leaf,
		config: async () => state.config,
		prepare: async (run) => {
			log.prepares.push(run.starts.length > 0 ? { leafId: run.leafId, after: run.after, starts: run.starts } : { leafId: run.leafId, after: run.after });
			return prepared();
		},
		summarize: async () => ({ recap: "Did it.", next: "Ship it." }),
		append: (d) => log.appended.push(d),
		status: (t) => log.status.push(t),
		warn: (t) => log.warnings.push(t),
		begin: () => {
			if (state.busy) return false;
			log.begun++;
			return true;
		},
		end: () => log.ended++,
		childRunning: () => state.child,
		...over,
	};
	return { host, log, state };
}

const flush = () => new Promise((r) => setImmediate(r));
// until waits for cond, a turn of the event loop at a time (real file
// reads take a few).
const until = async (cond: () => boolean) => {
	for (let i = 0; i < 1000 && !cond(); i++) await new Promise((r) => setTimeout(r, 1));
	assert.ok(cond(), String(cond));
};
const settle = async () => {
	await flush();
	await flush();
};

// pendingRecap is a controller whose run settled and whose timer is armed.
async function pendingRecap(over: Partial<RecapHost> = {}) {
	const f = fakeHost(over);
	const t = manualTimers();
	const c = new RecapController(f.host, t.timers, () => 30_000);
	c.sessionStart(true);
	c.beforeAgentStart("B0");
	await c.settled();
	return { ...f, t, c };
}

test("controller: a settled run arms the timer; firing writes one recap covering the runs since the baseline", async () => {
	const { host, log, state } = fakeHost();
	const t = manualTimers();
	const c = new RecapController(host, t.timers, () => 30_000);
	c.sessionStart(true);
	await c.settled();
	assert.equal(c.armed(), false, "no pending run, no timer");
	c.beforeAgentStart("B0");
	state.leaf = "L1";
	c.beforeAgentStart("L1"); // a second run piles up behind the first baseline
	await c.settled();
	assert.equal(c.armed(), true);
	assert.equal([...t.pending.values()][0].ms, 30_000);
	t.fireAll();
	await settle();
	assert.deepEqual(log.prepares, [{ leafId: "L1", after: "B0", starts: ["L1"] }], "the engine learns where the second run began");
	assert.deepEqual(log.appended, [{ recap: "Did it.", next: "Ship it.", provider: "p", model: "m", reasoning: "medium" }]);
	assert.deepEqual(log.status, [STATUS_TEXT, undefined]);
	assert.equal(log.begun, 1);
	assert.equal(log.ended, 1);
	assert.equal(c.boundary.pending(), false);
});

test("controller: a disabled config never arms a timer; activity while the config is read keeps it unarmed", async () => {
	const { host, state } = fakeHost();
	const t = manualTimers();
	const c = new RecapController(host, t.timers, () => 30_000);
	c.sessionStart(true);
	c.beforeAgentStart("B0");
	state.config = { ...state.config, enabled: false };
	await c.settled();
	assert.equal(c.armed(), false, "disabled");
	state.config = { ...state.config, enabled: true };
	const settling = c.settled();
	c.userActivity(); // typed while the config was read
	await settling;
	assert.equal(c.armed(), false, "activity during the read");
	await c.settled();
	assert.equal(c.armed(), true);
	assert.equal(c.boundary.baseline(), "B0", "the boundary survives the toggle");
});

test("realTimers: a pending recap never holds the process open", () => {
	const h = realTimers.set(() => {}, 60_000) as NodeJS.Timeout;
	try {
		assert.equal(h.hasRef(), false);
	} finally {
		realTimers.clear(h);
	}
});

test("controller: user activity cancels the timer and keeps the boundary", async () => {
	const { log, t, c } = await pendingRecap();
	c.userActivity();
	assert.equal(c.armed(), false);
	assert.equal(c.boundary.baseline(), "B0");
	c.beforeAgentStart("B1");
	await c.settled();
	t.fireAll();
	await settle();
	assert.deepEqual(log.prepares, [{ leafId: "L1", after: "B0", starts: ["B1"] }]);
	assert.equal(log.appended.length, 1);
});

test("controller: activity during a recap aborts it; nothing is written and the run stays pending", async () => {
	let release!: () => void;
	const { log, t, c } = await pendingRecap({
		summarize: (_p, _c, signal) =>
			new Promise((_, reject) => {
				release = () => reject(new RecapAborted());
				signal.addEventListener("abort", () => release());
			}),
	});
	t.fireAll();
	await settle();
	assert.equal(c.inFlight(), 1);
	c.userActivity();
	await settle();
	assert.equal(c.inFlight(), 0);
	assert.equal(log.appended.length, 0);
	assert.equal(log.warnings.length, 0, "an abort is not a failure");
	assert.equal(c.boundary.baseline(), "B0");
	assert.deepEqual(log.status, [STATUS_TEXT, undefined]);
});

test("controller: the fire-time checks are the authority", async () => {
	const cases: [string, (s: ReturnType<typeof fakeHost>["state"]) => void][] = [
		["disabled", (s) => (s.config = { ...s.config, enabled: false })],
		["not idle", (s) => (s.idle = false)],
		["pending messages", (s) => (s.pendingMessages = true)],
		["a child runs", (s) => (s.child = true)],
	];
	for (const [name, spoil] of cases) {
		const { host, log, state } = fakeHost();
		const t = manualTimers();
		const c = new RecapController(host, t.timers, () => 30_000);
		c.sessionStart(true);
		c.beforeAgentStart("B0");
		await c.settled();
		spoil(state);
		t.fireAll();
		await settle();
		assert.equal(log.prepares.length, 0, name);
		assert.equal(c.boundary.pending(), true, name);
	}
});

test("controller: only an active (TUI, main) session recaps", async () => {
	const { host } = fakeHost();
	const t = manualTimers();
	const c = new RecapController(host, t.timers, () => 30_000);
	c.sessionStart(false);
	c.beforeAgentStart("B0");
	await c.settled();
	assert.equal(c.boundary.pending(), false);
	assert.equal(c.armed(), false);
});

test("controller: a busy arbiter slot waits for the next quiet stretch", async () => {
	const { log, state, t, c } = await pendingRecap();
	state.busy = true;
	t.fireAll();
	await settle();
	assert.equal(log.prepares.length, 0);
	assert.equal(c.armed(), true, "re-armed");
	state.busy = false;
	t.fireAll();
	await settle();
	assert.equal(log.appended.length, 1);
});

test("controller: a gone or empty run clears the boundary without a recap; an unreachable engine keeps it", async () => {
	for (const [p, cleared] of [[prepared({ gone: true }), true], [prepared({ empty: true }), true], [undefined, false]] as const) {
		const { host, log } = fakeHost({ prepare: async () => p });
		const t = manualTimers();
		const c = new RecapController(host, t.timers, () => 30_000);
		c.sessionStart(true);
		c.beforeAgentStart("B0");
		await c.settled();
		t.fireAll();
		await settle();
		assert.equal(log.appended.length, 0);
		assert.equal(c.boundary.pending(), !cleared);
	}
});

test("controller: a failed model call writes the local fallback and warns", async () => {
	const { log, t, c } = await pendingRecap({
		summarize: async () => {
			throw new SummaryError("The summary model request failed: 503.");
		},
	});
	t.fireAll();
	await settle();
	assert.deepEqual(log.appended, [{ recap: "1 tool call (`bash`).", next: "Read it.", provider: "p", model: "m", reasoning: "medium", fallback: true }]);
	assert.deepEqual(log.warnings, ["Recap: The summary model request failed: 503. A local recap was written instead."]);
	assert.equal(c.boundary.pending(), false);
});

test("controller: the same failure again writes its fallback without a second warning", async () => {
	const { log, t, c } = await pendingRecap({
		summarize: async () => {
			throw new SummaryError("The summary model p/m is not available; choose one with /recap.");
		},
	});
	t.fireAll();
	await settle();
	c.beforeAgentStart("B1");
	await c.settled();
	t.fireAll();
	await settle();
	assert.equal(log.appended.length, 2);
	assert.equal(log.warnings.length, 1, "told once per session and cause");
	c.sessionStart(true); // a new session tells again
	c.beforeAgentStart("B2");
	await c.settled();
	t.fireAll();
	await settle();
	assert.equal(log.warnings.length, 2);
});

test("controller: a running child defers the recap; the last one settling re-arms it", async () => {
	const { log, state, t, c } = await pendingRecap();
	state.child = true;
	await c.childActivity();
	assert.equal(c.armed(), false);
	state.child = false;
	await c.childActivity();
	assert.equal(c.armed(), true);
	t.fireAll();
	await settle();
	assert.equal(log.appended.length, 1);
});

test("controller: a new session drops the pending run and its timer", async () => {
	const { log, t, c } = await pendingRecap();
	c.sessionStart(true);
	assert.equal(c.armed(), false);
	assert.equal(c.boundary.pending(), false);
	assert.equal(t.pending.size, 0);
	await c.settled();
	assert.equal(c.armed(), false, "no run of the new session yet");
	assert.equal(log.prepares.length, 0);
});

test("controller: a run that starts while a recap is pending or written cancels it (a queued or extension message, not only typing)", async () => {
	const held = await pendingRecap();
	held.c.beforeAgentStart("B1");
	assert.equal(held.c.armed(), false, "the timer is cancelled");
	assert.equal(held.c.boundary.baseline(), "B0", "the first baseline stays");
	const { log, t, c } = await pendingRecap({
		summarize: (_p, _c, signal) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(new RecapAborted()))),
	});
	t.fireAll();
	await settle();
	assert.equal(c.inFlight(), 1);
	c.beforeAgentStart("B1");
	await settle();
	assert.equal(c.inFlight(), 0, "the recap in flight is aborted");
	assert.equal(log.appended.length, 0);
	assert.equal(c.boundary.baseline(), "B0");
});

test("controller: an aborted recap writes nothing, even when the model reports the abort as a failure or answers anyway", async () => {
	const answers: [string, (signal: AbortSignal) => Promise<{ recap: string; next: string }>][] = [
		["a failure", (signal) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(new SummaryError("The summary model request failed: aborted.")))),],
		["an answer", (signal) => new Promise((resolve) => signal.addEventListener("abort", () => resolve({ recap: "Late.", next: "Ignore." })))],
	];
	for (const [name, summarize] of answers) {
		for (const stop of ["activity", "shutdown"] as const) {
			const { log, t, c } = await pendingRecap({ summarize: (_p, _c, signal) => summarize(signal) });
			t.fireAll();
			await settle();
			assert.equal(c.inFlight(), 1);
			if (stop === "activity") c.userActivity();
			else await c.shutdown(5_000);
			await settle();
			assert.deepEqual(log.appended, [], `${name} after ${stop}`);
			assert.deepEqual(log.warnings, [], `${name} after ${stop}`);
			assert.equal(c.boundary.pending(), stop === "activity", `${name} after ${stop}: the run stays pending after activity`);
		}
	}
});

test("controller: shutdown waits for a recap that ends on the abort", async () => {
	const { log, t, c } = await pendingRecap({
		summarize: (_p, _c, signal) =>
			new Promise((_, reject) => signal.addEventListener("abort", () => setTimeout(() => reject(new RecapAborted()), 20))),
	});
	t.fireAll();
	await settle();
	assert.equal(c.inFlight(), 1);
	await c.shutdown(10_000);
	assert.equal(c.inFlight(), 0, "shutdown returned before the recap ended");
	assert.equal(log.ended, 1, "the arbiter slot is released before shutdown returns");
	assert.deepEqual(log.status, [STATUS_TEXT, undefined, undefined]);
});

test("controller: a timer that fires while a recap is written starts no second one", async () => {
	let finish!: () => void;
	const { log, t, c } = await pendingRecap({
		summarize: () => new Promise((resolve) => (finish = () => resolve({ recap: "Did it.", next: "Ship it." }))),
	});
	t.fireAll();
	await settle();
	await c.childActivity(); // a child settled meanwhile: the timer is armed again
	assert.equal(c.armed(), true);
	t.fireAll();
	await settle();
	assert.equal(log.prepares.length, 1);
	assert.equal(c.inFlight(), 1);
	finish();
	await settle();
	assert.equal(log.appended.length, 1, "one card");
	assert.deepEqual(log.status, [STATUS_TEXT, undefined]);
});

test("controller: a child settling while the main agent is busy does not arm the timer", async () => {
	const { state, c } = await pendingRecap();
	state.child = true;
	await c.childActivity();
	state.child = false;
	state.idle = false;
	await c.childActivity();
	assert.equal(c.armed(), false, "not idle");
	state.idle = true;
	state.pendingMessages = true;
	await c.childActivity();
	assert.equal(c.armed(), false, "messages pending");
	state.pendingMessages = false;
	await c.childActivity();
	assert.equal(c.armed(), true);
});

test("controller: a stale context (it throws after a session switch) means not idle", async () => {
	const stale = () => {
		throw new Error("This extension ctx is stale after session replacement or reload.");
	};
	const { log, t, c } = await pendingRecap({ isIdle: stale });
	t.fireAll();
	await settle();
	assert.equal(log.prepares.length, 0);
	assert.equal(c.boundary.pending(), true);
	await c.childActivity();
	assert.equal(c.armed(), false);
});

test("controller: shutdown aborts, waits at most the given time, clears the status", async () => {
	const { host, log } = fakeHost({ summarize: () => new Promise(() => {}) }); // never settles, ignores abort
	const timers: Timers = { set: (fn, ms) => setTimeout(fn, ms), clear: (h) => clearTimeout(h as NodeJS.Timeout) };
	const c = new RecapController(host, timers, () => 30_000);
	c.sessionStart(true);
	c.beforeAgentStart("B0");
	await c.settled();
	void c.fire();
	await settle();
	assert.equal(c.inFlight(), 1);
	await c.shutdown(50); // returns although the recap never ends
	assert.equal(log.status.at(-1), undefined);
	assert.equal(c.boundary.pending(), false);
	assert.equal(c.armed(), false);
});

// A fake model registry and engine for summarizeRun.
function fakeCall(replies: ({ text: string; stopReason?: string; errorMessage?: string } | "hang" | "deaf")[], verdicts: (Verdict | undefined)[]) {
	const calls: any[] = [];
	const answers: any[] = [];
	return {
		calls,
		answers,
		call: {
			find: (p: string, m: string) => (p === "p" && m === "m" ? { id: "m" } : undefined),
			complete: async (_model: unknown, context: any, options: any) => {
				calls.push({ context, options });
				const r = replies[calls.length - 1];
				if (r === "deaf") return new Promise<never>(() => {}); // never answers, ignores the signal
				if (r === "hang") {
					await new Promise((resolve) => options.signal.addEventListener("abort", resolve));
					return { content: [], stopReason: "aborted" };
				}
				return { content: [{ type: "text", text: r.text }], stopReason: r.stopReason ?? "stop", errorMessage: r.errorMessage };
			},
			verdict: async (a: any) => {
				answers.push(a);
				return verdicts[answers.length - 1];
			},
		},
	};
}

const cfg = (reasoning: SummaryConfig["reasoning"]): SummaryConfig => ({ enabled: true, provider: "p", model: "m", reasoning });
const req = { systemPrompt: "sys", userMessage: "<recent_work>x</recent_work>" };
const ok: Verdict = { ok: true, recap: { recap: "R.", next: "N." }, retry: false, aborted: false };

test("summarizeRun: options with reasoning, then a retry without it", async () => {
	const f = fakeCall([{ text: "nope" }, { text: "{}" }], [{ ok: false, recap: { recap: "", next: "" }, retry: true, aborted: false, error: "bad" }, ok]);
	assert.deepEqual(await summarizeRun(f.call, req, cfg("high"), new AbortController().signal), { recap: "R.", next: "N." });
	assert.equal(f.calls.length, 2);
	const [a, b] = f.calls.map((c) => c.options);
	assert.equal(a.reasoning, "high");
	assert.equal(a.maxTokens, 8000);
	assert.equal(a.timeoutMs, 40_000);
	assert.equal(a.maxRetries, 1);
	assert.equal("reasoning" in b, false);
	assert.equal(b.maxTokens, 1000);
	assert.equal(f.calls[0].context.systemPrompt, "sys");
	assert.deepEqual(f.calls[0].context.messages[0].content, [{ type: "text", text: "<recent_work>x</recent_work>" }]);
	assert.deepEqual(
		f.answers.map((x) => x.reasoning),
		[true, false],
	);
});

test("summarizeRun: without reasoning nothing is retried; errors are SummaryErrors", async () => {
	const bad: Verdict = { ok: false, recap: { recap: "", next: "" }, retry: false, aborted: false, error: "The summary model did not return valid recap JSON." };
	let f = fakeCall([{ text: "nope" }], [bad]);
	await assert.rejects(summarizeRun(f.call, req, cfg("off"), new AbortController().signal), (e: Error) => e instanceof SummaryError && e.message === bad.error);
	assert.equal(f.calls.length, 1);
	assert.equal("reasoning" in f.calls[0].options, false);
	// A transport failure is not retried even with reasoning.
	f = fakeCall([{ text: "", stopReason: "error", errorMessage: "503" }], [{ ...bad, error: "The summary model request failed: 503" }]);
	await assert.rejects(summarizeRun(f.call, req, cfg("medium"), new AbortController().signal), /request failed: 503/);
	assert.equal(f.calls.length, 1);
	// A missing model, an unreachable engine.
	await assert.rejects(summarizeRun(f.call, req, { ...cfg("off"), model: "x" }, new AbortController().signal), /p\/x is not available; choose one with \/recap/);
	f = fakeCall([{ text: "{}" }], [undefined]);
	await assert.rejects(summarizeRun(f.call, req, cfg("off"), new AbortController().signal), /engine is unreachable/);
	// A model pi knows but has no credentials for is named, and not called.
	f = fakeCall([{ text: "{}" }], [bad]);
	await assert.rejects(
		summarizeRun({ ...f.call, hasAuth: () => false }, req, cfg("off"), new AbortController().signal),
		(e: Error) => e instanceof SummaryError && /^The summary model p\/m is not available: pi has no credentials for p; choose a model you have with \/recap\.$/.test(e.message),
	);
	assert.equal(f.calls.length, 0);
});

test("sentence: a warning's error reads as a sentence", () => {
	assert.equal(sentence("Provider is not configured: deepseek"), "Provider is not configured: deepseek.");
	assert.equal(sentence("The summary model request failed: 503."), "The summary model request failed: 503.");
	assert.equal(sentence("did it fail? "), "did it fail?");
});

test("summarizeRun: an abort is RecapAborted; a slow attempt times out", async (t) => {
	const keepAlive = setInterval(() => {}, 1000); // AbortSignal.timeout does not hold the loop open
	t.after(() => clearInterval(keepAlive));
	let f = fakeCall(["hang"], []);
	const ac = new AbortController();
	const p = summarizeRun(f.call, req, cfg("off"), ac.signal);
	ac.abort();
	await assert.rejects(p, (e: Error) => e instanceof RecapAborted);
	f = fakeCall(["hang"], []);
	await assert.rejects(summarizeRun({ ...f.call, attemptTimeoutMs: 20 }, req, cfg("off"), new AbortController().signal), /did not answer within 0.02 s/);
	// A provider that ignores the signal: the abort and the timeout still end the recap.
	f = fakeCall(["deaf"], []);
	const ac2 = new AbortController();
	const p2 = summarizeRun(f.call, req, cfg("off"), ac2.signal);
	ac2.abort();
	await assert.rejects(p2, (e: Error) => e instanceof RecapAborted);
	f = fakeCall(["deaf"], []);
	await assert.rejects(summarizeRun({ ...f.call, attemptTimeoutMs: 20 }, req, cfg("off"), new AbortController().signal), /did not answer within 0.02 s/);
	f = fakeCall(["hang"], []);
	await assert.rejects(summarizeRun({ ...f.call, attemptTimeoutMs: 5000, overallTimeoutMs: 20 }, req, cfg("off"), new AbortController().signal), /did not answer within 0.02 s/);
});

test("summarizeRun: an abort reported by the provider, or one during the verdict, is RecapAborted and sends nothing more", async () => {
	let f = fakeCall([{ text: "", stopReason: "aborted" }], [{ ok: false, recap: { recap: "", next: "" }, retry: false, aborted: true, error: "The summary model request was aborted." }]);
	await assert.rejects(summarizeRun(f.call, req, cfg("high"), new AbortController().signal), (e: Error) => e instanceof RecapAborted);
	// The user comes back while the engine judges an answer to be retried.
	const ac = new AbortController();
	f = fakeCall([{ text: "nope" }, { text: "{}" }], []);
	const judge = f.call.verdict;
	f.call.verdict = async (a) => {
		ac.abort();
		await judge(a);
		return { ok: false, recap: { recap: "", next: "" }, retry: true, aborted: false, error: "bad" };
	};
	await assert.rejects(summarizeRun(f.call, req, cfg("high"), ac.signal), (e: Error) => e instanceof RecapAborted);
	assert.equal(f.calls.length, 1, "no retry is sent after the abort");
});

test("/recap toggle: disabling saves, says so, and aborts the recap in flight; the run stays for re-enabling; a failed save changes nothing", async () => {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), "recap-toggle-"));
	try {
		const file = configPath(path.join(dir, "agent"));
		const { log, t, c } = await pendingRecap({
			config: async () => saved(file),
			summarize: (_p, _c, signal) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(new RecapAborted()))),
		});
		const notes: string[] = [];
		const notify = (text: string, level: string) => notes.push(`${level}: ${text}`);
		t.fireAll();
		await until(() => c.inFlight() === 1);

		// A directory in the config's place: the save fails, nothing changes.
		fs.mkdirSync(path.join(file, "x"), { recursive: true });
		await toggleRecaps(file, saved(file), c, notify);
		assert.deepEqual(notes, ["error: Could not save the private summary config."]);
		assert.equal(c.inFlight(), 1, "a failed save aborts nothing");
		fs.rmSync(file, { recursive: true });

		await toggleRecaps(file, saved(file), c, notify);
		assert.equal(notes.at(-1), "info: Recaps disabled.");
		assert.equal(saved(file).enabled, false);
		await until(() => c.inFlight() === 0);
		assert.deepEqual(log.appended, []);
		await c.settled();
		assert.equal(c.armed(), false, "disabled: no timer");

		await toggleRecaps(file, saved(file), c, notify);
		assert.equal(notes.at(-1), "info: Recaps enabled.");
		assert.equal(saved(file).enabled, true);
		await c.settled();
		assert.equal(c.armed(), true);
		assert.equal(c.boundary.baseline(), "B0", "the boundary survives the toggle");
	} finally {
		fs.rmSync(dir, { recursive: true, force: true });
	}
});

test("/recap toggle: a save that cannot finish within its 5 s says the config could not be saved, aborts nothing, and keeps the previous file", async () => {
	const b = blockedSave();
	try {
		const notes: string[] = [];
		let aborted = 0;
		await within(
			toggleRecaps(b.file, saved(b.file), { userActivity: () => aborted++ }, (text, level) => notes.push(`${level}: ${text}`)),
			15_000,
		);
		assert.deepEqual(notes, ["error: Could not save the private summary config."]);
		assert.equal(aborted, 0);
		assert.equal(b.config(), b.before);
		await b.release();
		assert.equal(b.config(), b.before);
	} finally {
		await b.release();
		fs.rmSync(b.dir, { recursive: true, force: true });
	}
});

test("model picker: cheapest output first, unknown cost last, labelled with the cost", () => {
	const ms = [
		{ provider: "b", id: "big", cost: { output: 15 } },
		{ provider: "z", id: "free" },
		{ provider: "a", id: "small", cost: { output: 0.28 } },
		{ provider: "a", id: "zero", cost: { output: 0 } },
	];
	assert.deepEqual(
		cheapestFirst(ms).map((m) => modelLabel(m)),
		["a/small · $0.28/Mtok out", "b/big · $15.00/Mtok out", "a/zero", "z/free"],
	);
});

test("echo (sink.ts): 200 characters, then the length", () => {
	assert.equal(echo("short"), "short");
	assert.equal(echo("é".repeat(250)), "é".repeat(200) + "…(250 chars)");
});

test("isRecapEntryData: a card needs a recap", () => {
	assert.equal(isRecapEntryData({ recap: "R", next: "N", provider: "p", model: "m", reasoning: "off" }), true);
	for (const bad of [undefined, null, {}, { recap: "" , next: "N"}, { recap: 3, next: "N" }, "text"]) assert.equal(isRecapEntryData(bad), false);
});
